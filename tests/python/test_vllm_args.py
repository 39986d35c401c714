"""A pasted ``vllm serve`` command line plans exactly what the same settings give through the API
(every calibration start-up in tests/data), with vLLM's own flag spellings, refusals and the
flags that do not change memory listed as ignored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import vllm_args
from vllm_mem.cli import main
from vllm_mem.vllm_args import human_readable_int, parse_vllm_args, plan_from_vllm_args

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def row_command(row: dict[str, Any], model: str) -> list[str]:
    """A calibration row's settings as the ``vllm serve`` command line that makes them."""
    cmd = ["vllm", "serve", model, "--max-model-len", str(row["max_model_len"]),
           "--tensor-parallel-size", str(row["tensor_parallel_size"]),
           "--pipeline-parallel-size", str(row["pipeline_parallel_size"]),
           "--gpu-memory-utilization", str(row["gpu_memory_utilization"]),
           "--max-num-seqs", str(row["max_num_seqs"]), "--max-num-batched-tokens", str(row["max_num_batched_tokens"]),
           "--dtype", row["dtype"], "--kv-cache-dtype", row["kv_cache_dtype"]]
    if row["quantization"]:
        cmd += ["--quantization", row["quantization"]]
    if row["block_size"]:
        cmd += ["--block-size", str(row["block_size"])]
    if row["enforce_eager"]:
        cmd += ["--enforce-eager"]
    return cmd


def write_config(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_every_calibration_row_plans_as_the_api(calibration_startups: list[dict[str, Any]],
                                                calibration_model_configs: dict[str, Any], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    for row in calibration_startups:
        config = write_config(tmp_path, calibration_model_configs[row["model_config_ref"]])
        got = plan_from_vllm_args(row_command(row, config), "H100-80GB", vllm_version="0.19")
        want = vllm_mem.plan(vllm_mem.ModelSpec.from_hf_config(config), gpu="H100-80GB", vllm_version="0.19",
                             max_model_len=row["max_model_len"], tensor_parallel_size=row["tensor_parallel_size"],
                             pipeline_parallel_size=row["pipeline_parallel_size"],
                             gpu_memory_utilization=row["gpu_memory_utilization"], max_num_seqs=row["max_num_seqs"],
                             max_num_batched_tokens=row["max_num_batched_tokens"], dtype=row["dtype"],
                             kv_cache_dtype=row["kv_cache_dtype"], quantization=row["quantization"])
        assert got.plan.to_dict() == want.to_dict(), row["case_id"]
        # and the CLI: the same plan as JSON, exit code by the verdict
        rc = main(["plan", "--json", "--gpu", "H100-80GB", "--vllm-version", "0.19", "--", *row_command(row, config)])
        assert rc == (0 if want.fits else 1)
        out = json.loads(capsys.readouterr().out)
        assert out.pop("vllm_command")["plan_keywords"]["max_model_len"] == row["max_model_len"]
        assert out == json.loads(json.dumps(want.to_dict())), row["case_id"]


@pytest.mark.parametrize(("args", "field", "value"), [
    (["--max-model-len", "8192"], "max_model_len", 8192),
    (["--max_model_len", "8192"], "max_model_len", 8192),
    (["--max-model-len=8192"], "max_model_len", 8192),
    (["--max_model_len=32k"], "max_model_len", 32000),
    (["--max-model-len", "32K"], "max_model_len", 32768),
    (["--max-model-len", "25.6k"], "max_model_len", 25600),
    (["--max-model-len", "1M"], "max_model_len", 1 << 20),
    (["--max-model-len", "1m"], "max_model_len", 1_000_000),
    (["--max-model-len", "-1"], "max_model_len", -1),
    (["--max-model-len", "auto"], "max_model_len", -1),
    (["-tp", "2"], "tensor_parallel_size", 2),
    (["--tensor-parallel-size=4"], "tensor_parallel_size", 4),
    (["--tensor_parallel_size", "4"], "tensor_parallel_size", 4),
    (["-pp", "2"], "pipeline_parallel_size", 2),
    (["--pipeline-parallel-size", "2"], "pipeline_parallel_size", 2),
    (["--gpu-memory-utilization", "0.85"], "gpu_memory_utilization", 0.85),
    (["--max-num-seqs", "64"], "max_num_seqs", 64),
    (["--max-num-batched-tokens", "16k"], "max_num_batched_tokens", 16000),
    (["--kv-cache-dtype", "fp8"], "kv_cache_dtype", "fp8"),
    (["--block-size", "32"], "block_size", 32),
    (["--enforce-eager"], "enforce_eager", True),
    (["--no-enforce-eager"], "enforce_eager", False),
    (["--kv-cache-memory-bytes", "20G"], "kv_cache_memory_bytes", 20 << 30),
    (["--kv-cache-memory=20g"], "kv_cache_memory_bytes", 20_000_000_000),
    (["-q", "fp8"], "quantization", "fp8"),
    (["--quantization=fp8"], "quantization", "fp8"),
    (["--dtype", "half"], "dtype", "half"),
    (["--dtype=bfloat16"], "dtype", "bfloat16"),
    (["--dtype", "float"], "dtype", "float"),
    (["--model", LLAMA], "model", LLAMA),
])
def test_vllm_spellings(args: list[str], field: str, value: Any) -> None:
    head = [] if args[0] == "--model" else [LLAMA]
    command = parse_vllm_args(["vllm", "serve", *head, *args])
    assert command.engine_args[field] == value
    assert command.model == LLAMA


def test_compilation_config_changes_capture_sizes() -> None:
    base = plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "8k"], "H100", vllm_version="0.19")
    for flag in (["-O", '{"cudagraph_capture_sizes": [1, 2, 4, 8]}'],
                 ['--compilation-config={"cudagraph_capture_sizes": [1, 2, 4, 8]}'],
                 ["-O.cudagraph_capture_sizes=[1,2,4,8]"],
                 ["--compilation-config.cudagraph_capture_sizes", "[1,2,4,8]"]):
        p = plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "8k", *flag], "H100", vllm_version="0.19")
        assert p.command.plan_keywords["cudagraph_capture_sizes"] == [1, 2, 4, 8], flag
        assert p.cudagraph_bytes < base.cudagraph_bytes, flag
    eager = plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "8k", "-O.cudagraph_mode=NONE"], "H100")
    assert eager.command.plan_keywords["cudagraph_mode"] == "NONE"


def test_speculative_config_json_is_planned() -> None:
    spec = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'
    got = plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "8192", "--speculative-config", spec], "H100",
                              vllm_version="0.19")
    want = vllm_mem.plan(LLAMA, gpu="H100", max_model_len=8192, speculative_config=spec, vllm_version="0.19")
    assert got.plan.to_dict() == want.to_dict()


def test_human_readable_int_matches_vllm() -> None:
    assert human_readable_int("1k", "x") == 1000 and human_readable_int("1K", "x") == 1024
    assert human_readable_int("25.6k", "x") == 25600 and human_readable_int("2G", "x") == 2 << 30
    assert human_readable_int(" 42 ", "x") == 42
    with pytest.raises(ValueError, match="did you mean 2.5k"):
        human_readable_int("2.5K", "--max-model-len")
    for bad in ("", "k", "1.5", "1kb", "1e3", "0x10"):
        with pytest.raises(ValueError):
            human_readable_int(bad, "x")


def test_ignored_flags_are_listed_and_change_nothing() -> None:
    noise = ["--host", "0.0.0.0", "--port=8000", "--served-model-name", "a", "b", "--api-key", "k",
             "--trust-remote-code", "--disable-log-requests", "--uvicorn-log-level", "warning",
             "--no-enable-prefix-caching", "--enable-prefix-caching", "--mamba-cache-mode", "none"]
    quiet = plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "8192"], "H100")
    noisy = plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "8192", *noise], "H100")
    assert noisy.plan.to_dict() == quiet.plan.to_dict()
    assert noisy.command.ignored == ("--host 0.0.0.0", "--port=8000", "--served-model-name a b", "--api-key k",
                                     "--trust-remote-code", "--disable-log-requests", "--uvicorn-log-level warning")
    text = noisy.report()
    assert "ignored (no effect on start-up memory): --host 0.0.0.0, --port=8000" in text
    assert noisy.to_dict()["vllm_command"]["ignored"][0] == "--host 0.0.0.0"
    assert repr(noisy).startswith("<VllmCommandPlan meta-llama/Llama-3.1-8B-Instruct: <StartupPlan")
    assert noisy.fits is noisy.plan.fits  # the plan's attributes read through


def test_bf16_refused_as_vllm_refuses_it() -> None:
    with pytest.raises(ValueError, match=r"--dtype: must be one of auto, half, float16, bfloat16, float, float32; "
                                         r"got 'bf16'"):
        parse_vllm_args(["serve", LLAMA, "--dtype", "bf16"])
    rc, err = _run_cli(["plan", "--gpu", "H100", "--", "vllm", "serve", LLAMA, "--dtype=bf16"])
    assert rc == 2 and err.count("\n") == 1 and "--dtype" in err and "bf16" in err


def test_unknown_flag_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unrecognized arguments: --max-model-lenn"):
        parse_vllm_args(["serve", LLAMA, "--max-model-lenn", "8192"])
    with pytest.raises(ValueError, match="unrecognized arguments: extra"):
        parse_vllm_args(["serve", LLAMA, "extra"])
    rc, err = _run_cli(["plan", "--gpu", "H100", "--json", "--", "vllm", "serve", LLAMA, "--tp", "2"])
    assert rc == 2
    error = json.loads(err)["error"]
    assert error["exit_code"] == 2 and "--tp" in error["message"]


@pytest.mark.parametrize(("args", "flag"), [
    (["--num-gpu-blocks-override", "100"], "--num-gpu-blocks-override"),
    (["-O3"], "-O3"),
    (["-O", '{"full_cuda_graph": true}'], "full_cuda_graph"),
    (["--no-enable-chunked-prefill"], "--enable-chunked-prefill"),
    (["--enable-dbo"], "--enable-dbo"),  # dual-batch overlap: per-microbatch CUDA graphs (PR #23693)
])
def test_memory_flags_not_modelled_are_refused(args: list[str], flag: str) -> None:
    with pytest.raises(vllm_mem.NotModelledError, match="not modelled yet") as info:
        plan_from_vllm_args(["serve", LLAMA, *args], "H100")
    assert flag in str(info.value) and info.value.field is not None and flag in info.value.field
    rc, err = _run_cli(["plan", "--gpu", "H100", "--", "vllm", "serve", LLAMA, *args])
    assert rc == 2 and "not modelled yet" in err and err.count("\n") == 1


def test_multimodal_flags_on_a_text_model_are_refused_as_vllm_does() -> None:
    """vLLM's ModelConfig refuses them on a text model; on a multimodal one they are planned
    (test_mm_settings.py: video, dummy sizes and the processor's bounds)."""
    for args, flag in ((["--limit-mm-per-prompt", '{"video": 1}'], "--limit-mm-per-prompt"),
                       (["--mm-processor-kwargs", '{"max_pixels": 1003520}'], "--mm-processor-kwargs")):
        with pytest.raises(vllm_mem.InvalidArgumentError, match="is only supported for multimodal models") as info:
            plan_from_vllm_args(["serve", LLAMA, *args], "H100")
        assert info.value.field == flag


def test_zero_offload_is_the_default_and_accepted() -> None:
    p = plan_from_vllm_args(["serve", LLAMA, "--cpu-offload-gb", "0", "--max-model-len", "8192"], "H100")
    assert p.plan.to_dict() == vllm_mem.plan(LLAMA, gpu="H100", max_model_len=8192).to_dict()


def test_auto_max_model_len_fits_as_vllm_auto_fit() -> None:
    p = plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "auto"], "L4", vllm_version="0.19")
    full = vllm_mem.plan(LLAMA, gpu="L4", vllm_version="0.19")
    assert not full.fits and full.failure_phase == "max_model_len"
    assert p.fits and p.max_model_len == full.max_model_len_that_fits
    assert p.auto_fit_note.startswith("Auto-fit max_model_len: reduced from 131072 to ")  # vLLM's own line
    with pytest.raises(ValueError, match="--max-model-len"):
        plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "-1"], "L4", vllm_version="0.10")
    # The rule max_model_len_auto: PR #29431 is in vLLM's weekly summary of 2025-12-26, after
    # v0.13.0 (2025-12-19), so 0.13 refuses -1 and 0.14 reads it.
    with pytest.raises(ValueError, match=r"--max-model-len: -1 \(auto\) is vLLM's auto-fit from 0\.14\.0"):
        plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "-1"], "L4", vllm_version="0.13")
    assert plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "-1"], "L4", vllm_version="0.14").fits


def test_errors_of_the_plan_name_the_flag() -> None:
    with pytest.raises(ValueError, match=r"^--max-model-len: must be an integer"):
        plan_from_vllm_args(["serve", LLAMA, "--max-model-len", "0"], "H100")
    with pytest.raises(ValueError, match=r"^--gpu-memory-utilization"):
        plan_from_vllm_args(["serve", LLAMA, "--gpu-memory-utilization", "1.5"], "H100")


def test_command_shapes() -> None:
    assert parse_vllm_args(f"vllm serve {LLAMA} --max-model-len 8k").engine_args["max_model_len"] == 8000
    assert parse_vllm_args(["python", "-m", "vllm.entrypoints.openai.api_server", "--model", LLAMA]).model == LLAMA
    with pytest.raises(ValueError, match="MODEL"):
        parse_vllm_args(["vllm", "serve", "--max-model-len", "8k"])
    with pytest.raises(ValueError, match="differ"):
        parse_vllm_args(["vllm", "serve", LLAMA, "--model", "other/model"])
    with pytest.raises(ValueError, match="expected one argument"):
        parse_vllm_args(["vllm", "serve", LLAMA, "--max-model-len"])
    with pytest.raises(ValueError, match="argv"):
        parse_vllm_args(["x"] * 5000)
    with pytest.raises(TypeError):
        parse_vllm_args([1, 2])  # type: ignore[list-item]


def test_cli_text_report_and_plain_plan_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["plan", "--gpu", "H100", "--vllm-version", "0.19", "--", "vllm", "serve", LLAMA,
               "--max_model_len=8192", "--port", "8000"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("vLLM command: vllm serve meta-llama/Llama-3.1-8B-Instruct")
    assert "ignored (no effect on start-up memory): --port 8000" in out
    assert "max_model_len=8192" in out
    # the plan command without -- is the usual one
    assert main(["plan", LLAMA, "--gpu", "H100", "--max-model-len", "8192", "--json"]) == 0


def _run_cli(argv: list[str]) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "vllm_mem.cli", *argv], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr


def test_multimodal_flags_are_planned() -> None:
    """--limit-mm-per-prompt (vLLM's mapping, as given: the settings row reads it), --mm-processor-kwargs,
    --skip-mm-profiling, --language-model-only and --mm-processor-cache-gb become plan() keywords
    (test_multimodal_profile.py and test_mm_settings.py check their effect)."""
    kw = vllm_args.engine_args_to_plan_keywords({"limit_mm_per_prompt": {"image": 0, "video": 0},
                                                 "skip_mm_profiling": True, "language_model_only": False,
                                                 "mm_processor_cache_gb": 8.0})
    assert kw == {"limit_mm_per_prompt": {"image": 0, "video": 0}, "skip_mm_profiling": True,
                  "language_model_only": False, "mm_processor_cache_gb": 8.0}
    assert vllm_args.engine_args_to_plan_keywords({"limit_mm_per_prompt": {"image": {"count": 3}}}) == {
        "limit_mm_per_prompt": {"image": {"count": 3}}}
    assert vllm_args.engine_args_to_plan_keywords({"mm_processor_kwargs": {"max_pixels": 1003520}}) == {
        "mm_processor_kwargs": {"max_pixels": 1003520}}
    with pytest.raises(ValueError, match="limit-mm-per-prompt.image"):
        vllm_args.engine_args_to_plan_keywords({"limit_mm_per_prompt": {"image": -1}})
    with pytest.raises(ValueError, match="mm-processor-kwargs.max_pixels"):
        vllm_args.engine_args_to_plan_keywords({"mm_processor_kwargs": {"max_pixels": "big"}})


def test_prefix_caching_flags_reach_the_plan_of_a_hybrid(tmp_path: Path) -> None:
    # vLLM 0.28 turns prefix caching on for hybrids unless --no-enable-prefix-caching, with
    # mamba_cache_mode 'align' (vllm#50991): the bare command plans as --mamba-cache-mode align,
    # and each prefix-caching flag plans as the keyword does. On 0.27 --enable-prefix-caching alone
    # leaves the mode to Nemotron-H's class flag (not modelled): refused naming the flag.
    from test_hybrid_models import NEMOTRON_NANO_9B_V2

    config = tmp_path / "config.json"
    config.write_text(json.dumps(NEMOTRON_NANO_9B_V2))
    serve = f"vllm serve {config} --max-model-len 8192"
    bare = plan_from_vllm_args(serve, gpu="H100-80GB", vllm_version="0.28.0").plan
    aligned = plan_from_vllm_args(f"{serve} --mamba-cache-mode align", gpu="H100-80GB", vllm_version="0.28.0").plan
    assert bare.kv_cache.num_tokens == aligned.kv_cache.num_tokens
    with pytest.raises(vllm_mem.InvalidArgumentError, match="enable_prefix_caching"):
        plan_from_vllm_args(f"{serve} --enable-prefix-caching", gpu="H100-80GB", vllm_version="0.27.0")
    for flags, keywords in [("--no-enable-prefix-caching", {"enable_prefix_caching": False}),
                            ("--mamba-cache-mode align", {"mamba_cache_mode": "align"}),
                            ("--enable-prefix-caching --mamba-cache-mode all",
                             {"enable_prefix_caching": True, "mamba_cache_mode": "all"})]:
        planned = plan_from_vllm_args(f"{serve} {flags}", gpu="H100-80GB", vllm_version="0.28.0").plan
        direct = vllm_mem.plan(str(config), gpu="H100-80GB", max_model_len=8192, vllm_version="0.28.0", **keywords)
        assert planned.kv_cache.num_tokens == direct.kv_cache.num_tokens, flags
    assert main(["plan", str(config), "--gpu", "H100-80GB", "--max-model-len", "8192", "--vllm-version", "0.28.0",
                 "--no-enable-prefix-caching"]) == 0


def test_a_bad_mamba_cache_mode_names_the_flag() -> None:
    # The settings table's check, reported under vLLM's flag as every planned flag's error is.
    with pytest.raises(ValueError, match=r"^--mamba-cache-mode: must be one of none, align, all; got 'sometimes'$"):
        plan_from_vllm_args(f"vllm serve {LLAMA} --mamba-cache-mode sometimes", gpu="H100")
