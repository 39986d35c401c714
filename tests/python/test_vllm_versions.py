"""Planning for a chosen vLLM release: the profiles (csrc/core/plan/vllm_versions.json), how the
version is chosen (asked > installed > newest known), and the defaults and wording each release
applies. The expected figures cite the vLLM source of the rule (docs/vllm_versions.md)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import vllm_mem
from vllm_mem import _C, cli
from vllm_mem.planner import versions

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
H100 = 85029158912


@pytest.fixture(autouse=True)
def _no_installed_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own vllm (if any) must not decide these tests' versions."""
    monkeypatch.setattr(versions, "installed_vllm_version", lambda: None)
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)


def test_every_release_line_from_0_7_to_the_newest_has_a_sourced_profile() -> None:
    profiles = vllm_mem.vllm_versions()
    lines = {".".join(p["version"].split(".")[:2]) for p in profiles}
    assert {f"0.{m}" for m in range(7, 29)} <= lines
    for p in profiles:
        names = {r["rule"] for r in p["rules"]}
        assert {"gpu_memory_utilization", "cudagraph_memory_in_budget", "batch_defaults", "sampler_bytes_per_logit",
                "kv_log_format", "hybrid_kv_cache_manager", "default_block_size", "engine"} <= names
        for r in p["rules"]:
            assert r["source"] and r["release"] in ("tagged", "inferred"), (p["version"], r)


@pytest.mark.parametrize(("asked", "planned"), [("0.19", "0.19.0"), ("0.19.1", "0.19.0"), ("v0.10.2", "0.10.0"),
                                                ("0.8.3", "0.8.0"), ("0.21.0rc2", "0.21.0"),
                                                ("0.20.1.dev12+g3e372c5", "0.20.0")])
def test_a_version_resolves_to_the_newest_profile_not_after_it(asked: str, planned: str) -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version=asked)
    assert (p.vllm_version, p.vllm_version_source) == (planned, "asked")


@pytest.mark.parametrize("bad", ["latest", "0", "19", "0.x", "0.19.1.2.3", "", "0.19 beta"])
def test_unknown_version_forms_are_refused_with_the_allowed_form(bad: str) -> None:
    with pytest.raises(ValueError, match=r"^vllm_version.*MAJOR\.MINOR"):
        vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=bad)


def test_a_version_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="^vllm_version"):
        vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=0.19)  # type: ignore[arg-type]


def test_a_newer_version_than_known_takes_the_newest_rules_and_says_so() -> None:
    # vllm_versions.json's "not_modelled" list is empty since 0.29-0.32 have profiles: a later
    # release plans with the newest profile's rules, a note says so, and what those rules refuse
    # (Model Runner V2's measured CUDA-graph memory) is refused for it too.
    newest = vllm_mem.vllm_versions()[-1]["version"]
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.99", enforce_eager=True)
    assert p.vllm_version == newest and "newer than the newest known" in p.vllm_version_note
    with pytest.raises(vllm_mem.NotModelledError, match="enforce_eager"):
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.99")


def _default_release() -> str:
    """The release a plan takes when none is asked or installed (the newest whose CUDA-graph
    start-ups are planned; docs/vllm_versions.md)."""
    return str(_C.lookup_vllm_version("")[0])


def test_default_version_is_the_installed_one_else_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192)
    assert (p.vllm_version, p.vllm_version_source) == (_default_release(), "newest known")
    assert _default_release() == "0.28.0"  # 0.29-0.32 measure Model Runner V2's graphs
    monkeypatch.setattr(versions, "installed_vllm_version", lambda: "0.10.1.1")
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192)
    assert (p.vllm_version, p.vllm_version_source) == ("0.10.0", "installed")
    assert "vLLM 0.10.0 rules (installed)" in p.report()
    # 0.10 ran the V1 model runner for every model (Model Runner V2 was opt-in until PR #44443).
    assert p.to_dict()["vllm_version"] == {"planned_with": "0.10.0", "asked": "0.10.1.1", "source": "installed",
                                          "note": p.vllm_version_note, "model_runner": "v1",
                                          "model_runner_note": "vLLM 0.10.0 runs the V1 model runner "
                                                               "(Model Runner V2 is opt-in)"}


def test_installed_version_is_read_from_metadata_without_importing_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata
    import sys

    monkeypatch.undo()  # the real function
    versions.installed_vllm_version.cache_clear()
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "0.9.2" if name == "vllm" else (_ for _ in ()).throw(KeyError(name)))
    try:
        assert versions.installed_vllm_version() == "0.9.2"
        assert "vllm" not in sys.modules
    finally:
        versions.installed_vllm_version.cache_clear()


def test_graph_budget_and_utilization_change_at_0_20() -> None:
    """PR #38284: gpu_memory_utilization 0.9 -> 0.92 and the CUDA-graph estimate subtracted from
    the KV budget (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default '1'). Its text says 'default
    since v0.21.0', but the v0.20.0 image already prints the estimate subtracted
    (tests/data/vllm_release_logs.json, wsl-qwen3.6-35b-a3b-nvfp4-v0.20.0): 0.19 -> 0.20."""
    v20 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19")
    v21 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.20")
    assert v20.settings["gpu_memory_utilization"] == 0.9 and v21.settings["gpu_memory_utilization"] == 0.92
    assert v20.requested_bytes == math.ceil(H100 * 0.9) and v21.requested_bytes == math.ceil(H100 * 0.92)
    assert v20.available_kv_cache_bytes == (v20.requested_bytes - v20.weights_bytes - v20.activation_peak_bytes
                                            - v20.non_torch_bytes)
    assert v21.available_kv_cache_bytes == (v21.requested_bytes - v21.weights_bytes - v21.activation_peak_bytes
                                            - v21.non_torch_bytes - v21.cudagraph_bytes)
    assert v21.cudagraph_bytes > 0
    # Set by hand, either way, on any release.
    forced = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19",
                           cudagraph_memory_in_budget=True)
    assert forced.available_kv_cache_bytes == v20.available_kv_cache_bytes - v20.cudagraph_bytes


def test_model_runner_v2_budgets_no_graph_memory_for_dense_models_on_0_25_to_0_28() -> None:
    # PR #44443 (after v0.24.0): Model Runner V2 serves dense models; its profile_cudagraph_memory()
    # returns 0 (PR #36520) until PR #53306 (v0.29.0), so the KV cache takes the whole budget
    # (issue #49224). MoE models keep the V1 runner and its estimate (_is_default_v2_model_runner_model).
    v24 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.22")  # Qwen3 only listed
    v28 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.28")
    assert v24.to_dict()["vllm_version"]["model_runner"] == "v1"
    assert v28.to_dict()["vllm_version"]["model_runner"] == "v2"
    assert "Model Runner V2" in v28.to_dict()["vllm_version"]["model_runner_note"]
    assert v28.settings["cudagraph_memory_in_budget"] is False and v24.settings["cudagraph_memory_in_budget"] is True
    assert v28.available_kv_cache_bytes == (v28.requested_bytes - v28.weights_bytes - v28.activation_peak_bytes
                                            - v28.non_torch_bytes)
    assert v24.available_kv_cache_bytes == (v24.requested_bytes - v24.weights_bytes - v24.activation_peak_bytes
                                            - v24.non_torch_bytes - v24.cudagraph_bytes)
    assert "model runner v2" in str(v28)
    moe = vllm_mem.plan("Qwen/Qwen3-30B-A3B", gpu="H100-80GB", max_model_len=8192, vllm_version="0.28")
    assert moe.to_dict()["vllm_version"]["model_runner"] == "v1" and moe.settings["cudagraph_memory_in_budget"]
    # VLLM_USE_V2_MODEL_RUNNER=0 on a dense model: ask for the V1 runner's budget by hand.
    forced = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.28",
                           cudagraph_memory_in_budget=True)
    assert forced.available_kv_cache_bytes == v28.available_kv_cache_bytes - v28.cudagraph_bytes
    assert _C.vllm_profile_settings("0.21")["v2_runner_serves"] == "none"
    assert _C.vllm_profile_settings("0.24")["v2_runner_serves"] == "listed"
    # 0.23-0.24 list LlamaForCausalLM (DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES): V2, no graph memory.
    v23 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.23")
    assert v23.to_dict()["vllm_version"]["model_runner"] == "v2" and v23.settings["cudagraph_memory_in_budget"] is False
    assert _C.vllm_profile_settings("0.25")["v2_runner_serves"] == "dense"
    assert _C.vllm_profile_settings("0.28")["v2_runner_cudagraph_profiling"] is False
    assert _C.vllm_profile_settings("0.29")["v2_runner_serves"] == "all"
    assert _C.vllm_profile_settings("0.29")["v2_runner_cudagraph_profiling"] is True


@pytest.mark.parametrize(("version", "gpu", "usage", "seqs", "tokens"), [
    ("0.19", "H100-80GB", "server", 1024, 8192),     # get_batch_defaults: >= 70 GiB, not an A100
    ("0.19", "H100-80GB", "offline", 1024, 16384),   # the LLM class
    ("0.19", "A100-80GB", "server", 256, 2048),      # PR #17885: A100 excluded
    ("0.19", "A100-80GB", "offline", 256, 8192),
    ("0.19", "L40S", "server", 256, 2048),
    ("0.8.5", "A100-80GB", "server", 1024, 8192),    # PR #17073: by memory, A100 included
    ("0.8.0", "L40S", "server", 1024, 2048),         # PR #12369: 1024 sequences everywhere
    ("0.8.4", "L40S", "server", 256, 2048),          # PR #16158: back to 256 off H100/H200
    ("0.28", "B200-180GB", "server", 1024, 16384),   # PR #51726: >= 160 GiB tier
    ("0.7", "H100-80GB", "server", 256, 8192),       # V0: max(max_model_len, 2048)
])
def test_scheduler_defaults_by_release_gpu_and_usage(version: str, gpu: str, usage: str, seqs: int,
                                                      tokens: int) -> None:
    p = vllm_mem.plan(LLAMA, gpu=gpu, max_model_len=8192, vllm_version=version, usage_context=usage)
    assert (p.settings["max_num_seqs"], p.settings["max_num_batched_tokens"]) == (seqs, tokens)


def test_given_scheduler_settings_are_kept() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19", max_num_seqs=64)
    assert (p.settings["max_num_seqs"], p.settings["max_num_batched_tokens"]) == (64, 8192)


def test_usage_context_is_checked() -> None:
    with pytest.raises(ValueError, match="^usage_context"):
        vllm_mem.plan(LLAMA, gpu="H100-80GB", usage_context="batch")


def test_the_sampler_peak_shrinks_with_the_triton_top_k_top_p_of_0_17() -> None:
    """PR #33538 (v0.17.0 release note): the Triton top-k/top-p replaced the PyTorch sort, whose
    transient took 36.4 bytes per logit (from start-up logs: tests/data/vllm_release_logs.json)
    against the Triton path's 12 per logit (three float32 copies), its 132 float32 vocabulary rows
    of per-program buffer and 48 MiB of fixed bytes (vllm_versions.json)."""
    before = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.16")
    after = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.17")
    rows, vocab = 1024, 128256
    triton = 12 * rows * vocab + 132 * vocab * 4 + (48 << 20)
    assert before.ranks[0].activation_peak_bytes - after.ranks[0].activation_peak_bytes == \
        pytest.approx(36.4 * rows * vocab - triton, abs=16)


def test_kv_log_lines_in_each_releases_wording() -> None:
    v19 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19")
    v21 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.21")
    v09 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.9")
    assert v19.kv_cache is not None and v21.kv_cache is not None and v09.kv_cache is not None
    # 0.10-0.19: two lines, tokens = blocks // groups x block size (issue #40691 on v0.19.0).
    assert v19.kv_log_lines == [f"GPU KV cache size: {v19.kv_cache.num_blocks * 16:,} tokens",
                                f"Maximum concurrency for 8,192 tokens per request: "
                                f"{v19.kv_cache.num_blocks / 512:.2f}x"]
    # 0.21-0.27: tokens = int(concurrency x max_model_len), still on two lines (the v0.22-v0.27 logs
    # of tests/data/vllm_release_logs.json); 0.28: the same figures on one line (its v0.28.0 logs).
    assert v21.kv_log_lines == [f"GPU KV cache size: {v21.kv_cache.num_tokens:,} tokens",
                                f"Maximum concurrency for 8,192 tokens per request: {v21.kv_cache.max_concurrency:.2f}x"]
    v28 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.28")
    assert v28.kv_cache is not None
    concurrency = f"Maximum concurrency for 8,192 tokens per request: {v28.kv_cache.max_concurrency:.2f}x"
    assert v28.kv_log_lines == [f"GPU KV cache size: {v28.kv_cache.num_tokens:,} tokens, {concurrency}"]
    v29 = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, vllm_version="0.29", enforce_eager=True)
    assert v29.kv_cache is not None  # 0.29+ keep the one line (v0.29.0 and v0.31.0 logs)
    assert v29.kv_log_lines == [f"GPU KV cache size: {v29.kv_cache.num_tokens:,} tokens, Maximum concurrency for "
                                f"8,192 tokens per request: {v29.kv_cache.max_concurrency:.2f}x"]
    # 0.8-0.9 (PR #13596): tokens = blocks x block size, concurrency = tokens / max_model_len.
    assert v09.kv_log_lines[0] == f"GPU KV cache size: {v09.kv_cache.num_blocks * 16:,} tokens"
    assert "GPU KV cache size" in v19.report() and v19.kv_log_lines[1] in v19.report()


def test_v019_grouped_token_count_for_a_hybrid_model_differs_from_the_later_one() -> None:
    """Gemma-2 (sliding window every other layer) has two KV groups: 0.19 printed
    num_blocks // 2 x 16 tokens, later releases int(concurrency x max_model_len)."""
    spec = "google/gemma-2-9b-it"
    if spec not in vllm_mem.bundled_model_configs():
        pytest.skip("no bundled Gemma-2 config")
    p = vllm_mem.plan(spec, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19")
    assert p.kv_cache is not None and len(p.kv_cache.groups) == 2
    assert p.kv_log_lines[0] == f"GPU KV cache size: {p.kv_cache.num_blocks // 2 * 16:,} tokens"


def test_v0_engine_budget_and_words() -> None:
    """vllm/worker/worker.py (V0): total x utilization with no free-memory check, graphs captured
    after the KV cache, '# GPU blocks' lines."""
    p = vllm_mem.plan(LLAMA, gpu="A100-80GB", max_model_len=8192, vllm_version="0.7")
    assert p.settings["vllm_engine"] == "v0" and not p.settings["hybrid_kv_cache_manager"]
    assert p.requested_bytes == math.floor(p.total_memory_bytes * 0.9)
    assert p.kv_log_lines[0].startswith("# GPU blocks: ")
    assert "for 8192 tokens per request" in p.kv_log_lines[1]
    # A free-memory shortfall is no failure for V0 (it had no such check).
    short = vllm_mem.plan(LLAMA, gpu="A100-80GB", max_model_len=8192, vllm_version="0.7",
                          free_memory_bytes=50 << 30)
    assert short.failure_phase != "free_memory"


def test_dtype_auto_serves_bfloat16_as_float16_below_compute_capability_8() -> None:
    p = vllm_mem.plan(LLAMA, gpu="T4", max_model_len=2048, tensor_parallel_size=4, gpu_count=4)
    assert p.settings["dtype"] == "float16"
    assert "compute capability 7.5" in p.dtype_note and p.dtype_note in p.report()
    assert p.to_dict()["dtype_note"] == p.dtype_note
    a10 = vllm_mem.plan(LLAMA, gpu="A10", max_model_len=2048)
    assert a10.settings["dtype"] == "auto" and a10.dtype_note == ""
    assert vllm_mem.lookup_gpu("V100-32GB").supports_bfloat16 is False


def test_cli_plan_and_kv_take_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len", "8192", "--vllm-version", "0.19",
                     "--usage-context", "offline", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["vllm_version"]["planned_with"] == "0.19.0" and out["vllm_version"]["source"] == "asked"
    assert out["inputs"]["max_num_batched_tokens"] == 16384 and out["inputs"]["usage_context"] == "offline"
    assert out["inputs"]["gpu_memory_utilization"] == 0.9
    assert cli.main(["plan", LLAMA, "--gpu", "H100-80GB", "--vllm-version", "banana"]) == 2
    assert "--vllm-version" in capsys.readouterr().err
    assert cli.main(["kv", LLAMA, "--available-gib", "20", "--max-model-len", "8192", "--vllm-version", "0.21"]) == 0
    text = capsys.readouterr().out
    assert "vLLM 0.21.0 rules (asked" in text and "Maximum concurrency for 8,192 tokens per request:" in text
    assert ", Maximum concurrency" not in text  # two lines on 0.20+ releases too (tests/data/vllm_release_logs.json)
    assert cli.main(["kv", LLAMA, "--available-gib", "20", "--max-model-len", "8192", "--vllm-version", "0.19"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("GPU KV cache size: ") and line.endswith(" tokens") for line in lines)


def test_sweep_takes_the_releases_defaults() -> None:
    cols: Any = vllm_mem.sweep(LLAMA, gpus=["H100-80GB"], vllm_version="0.19", as_frame=False)
    assert list(cols["gpu_memory_utilization"]) == [0.9]
    assert list(cols["max_num_seqs"]) == [1024] and list(cols["max_num_batched_tokens"]) == [8192]
    assert list(cols["max_model_len"]) == [131072]  # the model's derived maximum
    # vLLM picks them per GPU: each row gets its GPU's, and equals plan() on that GPU.
    mixed: Any = vllm_mem.sweep(LLAMA, gpus=["H100-80GB", "L40S"], max_model_len=8192, vllm_version="0.19",
                                as_frame=False)
    assert list(mixed["max_num_seqs"]) == [1024, 256] and list(mixed["max_num_batched_tokens"]) == [8192, 2048]
    l40s = vllm_mem.plan(LLAMA, gpu="L40S", max_model_len=8192, vllm_version="0.19")
    assert mixed["available_kv_cache_bytes"][1] == l40s.available_kv_cache_bytes


def test_a_v0_sweep_row_is_the_v0_plan() -> None:
    cols: Any = vllm_mem.sweep(LLAMA, gpus=["A100-80GB"], max_model_len=8192, vllm_version="0.7",
                               free_memory_bytes=50 << 30, as_frame=False)
    p = vllm_mem.plan(LLAMA, gpu="A100-80GB", max_model_len=8192, vllm_version="0.7", free_memory_bytes=50 << 30)
    assert cols["requested_bytes"][0] == p.requested_bytes == math.floor(p.total_memory_bytes * 0.9)
    assert cols["available_kv_cache_bytes"][0] == p.available_kv_cache_bytes and bool(cols["fits"][0]) == p.fits


def test_bindings_agree_with_the_plan() -> None:
    assert _C.resolve_batch_defaults("0.19", "", "server", H100, "H100-80GB", 8192) == (1024, 8192)
    assert _C.vllm_profile_settings("0.19")["cudagraph_memory_in_budget"] is False
    assert _C.vllm_profile_settings("0.20")["cudagraph_memory_in_budget"] is True


def test_allow_long_follows_the_environment_as_vllm_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # vllm/envs.py: os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0").strip().lower() in ("1", "true").
    # The answer is remembered per raw value, so every change made through os.environ is seen.
    assert versions.allow_long_from_env() is False  # unset (the autouse fixture)
    for raw, expected in (("1", True), (" TRUE ", True), ("0", False), ("true", True), ("yes", False)):
        monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raw)
        assert versions.allow_long_from_env() is expected, raw
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    assert versions.allow_long_from_env() is False
    # An os.environ without CPython's _data dict (another implementation, or a test's plain dict): read plainly.
    monkeypatch.setattr(versions.os, "environ", {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert versions.allow_long_from_env() is True
