"""``vllm-mem log`` / explain_startup_log on real start-up lines: every calibration row's printed
lines, joined into a log, come back beside the plan's figures within the errors
test_calibration_plan.py states per term; a failed start-up gets the change that fixes it;
truncated and garbage logs are a clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from test_vllm_args import row_command, write_config
from vllm_mem.cli import main
from vllm_mem.startup_log import explain_startup_log, read_startup_log

PREFIX = "(EngineCore_DP0 pid=4242) INFO 04-02 10:11:12 [gpu_worker.py:300] "
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def row_log(row: dict[str, Any]) -> str:
    """The row's printed lines as a log, each with vLLM's logger prefix."""
    return "\n".join(PREFIX + line for line in row["raw_lines"].values()) + "\n"


def non_default_line(row: dict[str, Any], model: str) -> str:
    """The 'non-default args' line vLLM prints for the row's command (its EngineArgs dict)."""
    args: dict[str, Any] = {"model_tag": model, "model": model, "max_model_len": row["max_model_len"],
                            "gpu_memory_utilization": row["gpu_memory_utilization"]}
    if row["tensor_parallel_size"] > 1:
        args["tensor_parallel_size"] = row["tensor_parallel_size"]
    if row["pipeline_parallel_size"] > 1:
        args["pipeline_parallel_size"] = row["pipeline_parallel_size"]
    if row["dtype_cli"]:
        args["dtype"] = row["dtype_cli"]
    if row["kv_cache_dtype"] != "auto":
        args["kv_cache_dtype"] = row["kv_cache_dtype"]
    if row["quantization"]:
        args["quantization"] = row["quantization"]
    args["enable_prefix_caching"] = False
    return "(APIServer pid=1) INFO 04-02 10:10:00 [utils.py:233] non-default args: " + repr(args)


def test_every_calibration_log_within_its_known_error(calibration_startups: list[dict[str, Any]],
                                                      calibration_model_configs: dict[str, Any],
                                                      tmp_path: Path) -> None:
    """Both ways a log can carry its settings: the command given beside it, and the
    non-default args line. The tolerances are test_calibration_plan.py's per term."""
    graph_errors: list[float] = []
    for row in calibration_startups:
        config = write_config(tmp_path, calibration_model_configs[row["model_config_ref"]])
        obs = row["observed"]
        by_command = explain_startup_log(row_log(row), vllm_args=row_command(row, config), vllm_version="0.19")
        by_line = explain_startup_log(non_default_line(row, config) + "\n" + row_log(row), vllm_version="0.19")
        # (the line leaves --dtype auto where the command spells the dtype auto resolves to)
        assert [(t.term, t.planned) for t in by_line.terms] == [(t.term, t.planned) for t in by_command.terms]
        e = by_command
        assert not e.failed and e.plan.fits, row["case_id"]
        # the GPU came from the log's "Free memory on device (78.68/79.19 GiB)": the catalog's H100
        assert e.plan.total_memory_bytes == 85029158912
        t = {c.term: c for c in e.terms}
        assert t["weights"].printed == obs["model_loading_took_gib"]
        assert abs(t["weights"].relative) <= 0.01, row["case_id"]
        assert abs(t["activation_peak"].difference) <= 0.05 + 0.005, row["case_id"]  # + the print's rounding
        assert abs(t["non_torch"].difference) <= 0.02 + 0.005, row["case_id"]
        assert t["available_kv"].printed == obs["available_kv_cache_memory_gib"]
        assert abs(t["available_kv"].relative) <= 0.03, row["case_id"]
        assert abs(t["num_gpu_blocks"].relative) <= 0.03, row["case_id"]
        assert abs(t["kv_tokens"].relative) <= 0.03, row["case_id"]
        assert abs(t["max_concurrency"].relative) <= 0.03, row["case_id"]
        assert t["requested"].difference == pytest.approx(0.0, abs=0.006)
        graph_errors.append(abs(t["cudagraph_estimate"].difference))
        # the explanation's figures are the plan's, not recomputed
        rank = next(r for r in e.plan.ranks if r.weights_bytes / (1 << 30) == t["weights"].planned)
        assert t["available_kv"].planned == rank.available_kv_cache_bytes / (1 << 30)
    graph_errors.sort()
    assert graph_errors[len(graph_errors) // 2] <= 0.1  # the median, as test_calibration_plan states it


def test_cli_log_text_and_json(calibration_startups: list[dict[str, Any]], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    row = next(r for r in calibration_startups if r["pipeline_parallel_size"] == 2)
    path = tmp_path / "vllm.log"
    path.write_text(non_default_line(row, row["model_id"]) + "\n" + row_log(row))
    assert main(["log", str(path), "--vllm-version", "0.19"]) == 0
    out = capsys.readouterr().out
    assert "GPU H100-80GB (79.19 GiB as the log prints it)" in out
    assert "available_kv" in out and "printed" in out and "planned" in out
    assert "pipeline rank" in out  # which rank the per-GPU lines were matched to
    assert main(["log", str(path), "--vllm-version", "0.19", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {t["term"] for t in data["terms"]} >= {"weights", "available_kv", "kv_tokens", "cudagraph_estimate"}
    assert data["failed"] is False and data["plan"]["fits"] is True
    assert data["settings"]["pipeline_parallel_size"] == 2


FAILED_LOG = """\
(APIServer pid=1) INFO 11-25 18:39:00 [api_server.py:1] vLLM API server version 0.19.0
(APIServer pid=1) INFO 11-25 18:39:00 [utils.py:1] non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', \
'model': 'meta-llama/Llama-3.1-8B-Instruct', 'host': '0.0.0.0', 'port': 8000}
(EngineCore_DP0 pid=2) INFO 11-25 18:39:20 [gpu_model_runner.py:1] Model loading took 14.99 GiB memory and 20.1 seconds
(EngineCore_DP0 pid=2) INFO 11-25 18:39:23 [gpu_worker.py:348] Available KV cache memory: 3.62 GiB
(EngineCore_DP0 pid=2) ERROR 11-25 18:39:23 [core.py:842] ValueError: To serve at least one request with the model's \
max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.62 GiB). \
Based on the available memory, the estimated maximum model length is 29648. Try increasing `gpu_memory_utilization` or \
decreasing `max_model_len` when initializing the engine.
"""


def test_failed_start_up_gets_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    e = explain_startup_log(FAILED_LOG, gpu="L4")
    assert e.failed and e.failure_line.startswith("ValueError: To serve at least one request")
    assert e.plan.vllm_version == "0.19.0"  # from the banner
    assert e.settings["max_model_len"] == 131072  # from the refusal's "max seq len (131072)"
    assert e.settings["vllm_version_source"] == "the log's banner"
    # vLLM's own measured estimate first, then the plan's levers that fit alone
    assert e.fixes[0].startswith("--max-model-len 29648")
    assert any(f.startswith("--tensor-parallel-size 2") for f in e.fixes)
    need = e.term("kv_needed_one_request")
    assert need is not None and need.printed == 16.0 and need.planned == pytest.approx(16.0, abs=0.01)
    assert [t.term for t in e.terms].count("available_kv") == 1
    assert "start-up FAILED" in e.report() and "what fixes it:" in e.report()
    assert repr(e).startswith("<StartupLogExplanation failed start-up")
    path = tmp_path / "failed.log"
    path.write_text(FAILED_LOG)
    assert main(["log", str(path), "--gpu", "L4"]) == 1
    assert "--max-model-len 29648" in capsys.readouterr().out


def test_v0_refusal_and_hybrid_lines_are_read() -> None:
    text = ("WARNING [x.py:1] The model's max seq len (32768) is larger than the maximum number of tokens that can "
            "be stored in KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
            "when initializing the engine.\n"
            "INFO [config.py:1] Setting attention block size to 544 tokens to ensure that attention page size is "
            ">= mamba page size.\nINFO [config.py:2] Padding mamba page size by 1.03% to ensure that mamba page "
            "size and attention page size are exactly equal.\n")
    log = read_startup_log(text)
    assert log["failed_max_model_len"] == 32768 and log["v0_max_tokens"] == 20000
    assert log["attention_block_size"] == 544 and log["mamba_padding_percent"] == 1.03


@pytest.mark.parametrize("text", [
    "", "hello world\n", "garbage \u2603 ~~ {'a': 1}\n" * 100,
    # truncated: the banner and the settings line, then nothing
    "INFO vLLM API server version 0.19.0\nINFO non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct'}\n",
])
def test_truncated_and_garbage_logs_are_a_clear_error(text: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="nothing to explain"):
        explain_startup_log(text, gpu="H100")
    path = tmp_path / "x.log"
    path.write_text(text)
    assert main(["log", str(path), "--gpu", "H100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing to explain" in err


def test_bad_logs_and_missing_inputs() -> None:
    lines = "INFO Model loading took 14.99 GiB memory and 20.1 seconds\n"
    with pytest.raises(ValueError, match="give the model"):
        explain_startup_log(lines, gpu="H100")
    with pytest.raises(ValueError, match="give the GPU"):
        explain_startup_log(lines, model=LLAMA)
    with pytest.raises(ValueError, match="non-default args"):
        explain_startup_log("INFO non-default args: {'model': CompilationConfig(level=3)}\n" + lines, gpu="H100")
    with pytest.raises(TypeError):
        explain_startup_log(12, gpu="H100")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL"):
        explain_startup_log("\x00\x01" * 100, gpu="H100")
    e = explain_startup_log(lines, model=LLAMA, gpu="H100")  # settings not printed: vLLM's defaults, said so
    assert any("no 'non-default args' line" in n for n in e.notes)
    assert e.term("weights") is not None and e.term("weights").printed == 14.99


def test_unread_args_keys_are_named(calibration_startups: list[dict[str, Any]]) -> None:
    row = calibration_startups[0]
    line = non_default_line(row, row["model_id"]).replace("'enable_prefix_caching': False",
                                                          "'some_future_flag': 3")
    e = explain_startup_log(line + "\n" + row_log(row), vllm_version="0.19")
    assert any("some_future_flag" in n for n in e.notes)


def test_public_api_names() -> None:
    assert vllm_mem.explain_startup_log is explain_startup_log
    assert callable(vllm_mem.plan_from_vllm_args)
