"""``max_model_len="auto"`` (or -1): vLLM's ``--max-model-len auto`` (PR #29431, from 0.14) on every
entry point, through the one settings row: plan(), the KV functions, the sweep, the CLI and a
pasted ``vllm serve`` command line."""

from __future__ import annotations

import json

import pytest
import vllm_mem
from vllm_mem import cli
from vllm_mem.vllm_args import plan_from_vllm_args

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
# Llama-3.1-8B's config.json: 32 layers x 8 KV heads x head_dim 128 x (K, V) x 2 bytes (bfloat16)
# = 131,072 B per token, a 16-token block 2 MiB; max_position_embeddings 131,072 (llama3 rope
# scaling is not multiplied in by vLLM's _get_and_verify_max_len): the derived maximum.
PAGE_BYTES = 16 * 32 * 8 * 128 * 2 * 2
DERIVED = 131072
GIB = 1 << 30


def test_plan_auto_fits_the_longest_length_and_says_so() -> None:
    full = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.3, vllm_version="0.21")
    assert not full.fits and full.failure_phase == "max_model_len"
    for asked in ("auto", "AUTO", -1):
        p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.3, vllm_version="0.21",
                          max_model_len=asked)
        assert p.fits
        # vLLM's binary search over lengths for one full-attention group: whole 16-token blocks.
        fitted = min(DERIVED, p.available_kv_cache_bytes // PAGE_BYTES * 16)
        assert p.max_model_len == fitted < DERIVED
        assert p.auto_fit_line == (f"Auto-fit max_model_len: reduced from 131072 to {fitted} to fit in available "
                                   f"GPU memory ({vllm_mem.format_gib(p.available_kv_cache_bytes)} GiB available "
                                   "for KV cache)")
        # The scheduler sizes were resolved at the derived length and kept.
        assert p.to_dict()["inputs"]["max_num_batched_tokens"] == full.to_dict()["inputs"]["max_num_batched_tokens"]
    d = p.to_dict()
    assert d["inputs"]["max_model_len"] == fitted
    assert d["auto_fit"] == {"from_max_model_len": DERIVED, "max_model_len": fitted, "reduced": True,
                             "line": p.auto_fit_line}
    assert p.auto_fit_line in p.report() and "(auto-fitted)" in p.report()
    assert full.to_dict()["auto_fit"] is None and full.auto_fit_line == ""


def test_plan_auto_keeps_the_full_length_when_it_fits() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len="auto", vllm_version="0.21")
    assert p.fits and p.max_model_len == DERIVED
    assert p.auto_fit_line == "Auto-fit max_model_len: full model context length 131072 fits in available GPU memory"


def test_nothing_fits_is_vllms_value_error() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.2, max_model_len="auto", vllm_version="0.21")
    assert not p.fits
    assert p.failure_message.startswith("Cannot auto-fit max_model_len: not enough GPU memory available")
    assert p.auto_fit_line == "" and p.to_dict()["auto_fit"]["reduced"] is False


def test_refused_before_0_14_with_what_vllm_did() -> None:
    # The rule max_model_len_auto: PR #29431 merged after v0.13.0 (docs/vllm_versions.md).
    with pytest.raises(ValueError, match=r"^max_model_len: -1 \(auto\) is vLLM's auto-fit from 0\.14\.0") as e:
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len="auto", vllm_version="0.13")
    assert e.value.field == "max_model_len"
    assert "invalid human_readable_int value: 'auto'" in str(e.value)
    with pytest.raises(ValueError, match="max_model_len"):
        vllm_mem.kv_cache_capacity(LLAMA, 10 * GIB, max_model_len=-1, vllm_version="0.13")
    with pytest.raises(ValueError, match=r"or auto \(-1\)"):
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=-2)
    with pytest.raises(TypeError, match="max_model_len"):
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len="longest")


def test_kv_functions_fit_their_budget() -> None:
    cap = vllm_mem.kv_cache_capacity(LLAMA, 100 * PAGE_BYTES + 5, max_model_len="auto")
    assert cap.max_model_len == 1600 and cap.num_blocks == 100  # 100 whole blocks of 16 tokens
    assert vllm_mem.auto_fit_max_model_len(LLAMA, 100 * PAGE_BYTES + 5, max_model_len="auto") == 1600
    assert vllm_mem.estimate_max_model_len(LLAMA, 100 * GIB, max_model_len="auto") == DERIVED
    with pytest.raises(ValueError, match="Cannot auto-fit max_model_len"):
        vllm_mem.kv_cache_capacity(LLAMA, PAGE_BYTES - 1, max_model_len="auto")


def test_sweep_rows_each_fit_their_budget() -> None:
    cols = vllm_mem.sweep(LLAMA, "H100-80GB", gpu_memory_utilization=[0.3, 0.92], max_model_len="auto",
                          vllm_version="0.21", as_frame=False)
    for i, util in enumerate((0.3, 0.92)):
        p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=util, max_model_len="auto",
                          vllm_version="0.21")
        assert int(cols["max_model_len"][i]) == p.max_model_len
        assert int(cols["num_tokens"][i]) == p.kv_cache.num_tokens
    assert int(cols["max_model_len"][1]) == DERIVED > int(cols["max_model_len"][0])


def test_cli_plan_json_says_auto_fitted(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len", "auto", "--gpu-memory-utilization", "0.3",
                     "--vllm-version", "0.21", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.3, max_model_len="auto", vllm_version="0.21")
    assert out["auto_fit"] == p.to_dict()["auto_fit"] and out["auto_fit"]["reduced"] is True


def test_vllm_command_line_goes_through_the_same_plan() -> None:
    cmd = plan_from_vllm_args(["vllm", "serve", LLAMA, "--max-model-len", "auto", "--gpu-memory-utilization", "0.3"],
                              "H100-80GB", vllm_version="0.21")
    same = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.3, max_model_len="auto",
                         vllm_version="0.21", usage_context="server")
    assert cmd.plan.to_dict() == same.to_dict()
    assert cmd.auto_fit_note == same.auto_fit_line


def test_stages_plan_auto() -> None:
    config = {"stages": [{"stage_id": 0, "devices": "0", "gpu_memory_utilization": 0.3}]}
    check = vllm_mem.check_stages(config, gpus="H100-80GB", models={0: LLAMA}, max_model_len="auto")
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.3, max_model_len="auto")
    assert check.plans[0]["max_model_len"] == p.max_model_len < DERIVED
