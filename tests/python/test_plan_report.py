"""The plan's text report (``str(plan)``, vllm_mem/planner/render.py), built in Python beside the
dict and the HTML from the bound plan: every figure it prints is the plan's own, vLLM's lines are
placed as the core formats them, and the levers are the plan's cached suggestions."""

from __future__ import annotations

import pytest
import vllm_mem
from vllm_mem import _C
from vllm_mem.units import GiB_bytes

# The release these figures were written for: 0.21, the last whose V1 model runner serves every dense
# model with its CUDA-graph estimate in the KV budget (0.21; 0.22-0.24 give Model Runner V2 to listed
# architectures, Llama from 0.23); from 0.25 Model Runner V2 serves
# dense models and budgets no graphs (vllm_versions.json "model_runner"), which the newest profile
# would apply.
V1_GRAPHS = "0.21"

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _row(report: str, label: str) -> list[str]:
    """The budget/breakdown row of ``label``: [GiB, "GiB", percent, source...]."""
    for line in report.splitlines():
        if line.startswith(f"  {label}  "):
            return line[2 + 30 :].split()
    raise AssertionError(f"no {label!r} row in\n{report}")


def test_fitting_plan_reads_fits_and_places_vllms_kv_lines() -> None:
    p = vllm_mem.plan(LLAMA, "H100-80GB", max_model_len=8192)
    text = str(p)
    assert p.fits and "\nverdict: FITS\n" in text
    # vLLM's own lines, as the core words them for the planned release, each on its own line.
    assert any(line.startswith("GPU KV cache size: ") for line in p.kv_log_lines)
    for line in [p.available_kv_line, *p.kv_log_lines]:
        assert f"\n  {line}\n" in text
    assert "what to change" not in text


def test_rows_are_the_plans_figures_in_gib_and_share_of_the_device() -> None:
    p = vllm_mem.plan(LLAMA, "L4", vllm_version=V1_GRAPHS, max_model_len=32768)
    text, total = str(p), p.total_memory_bytes
    for label, num_bytes in [
        ("total memory", total),
        ("requested", p.requested_bytes),
        ("weights", p.weights_bytes),
        ("peak activation", p.activation_peak_bytes),
        ("non-torch", p.non_torch_bytes),
        ("CUDA graph", p.cudagraph_bytes),
        ("KV cache", max(0, p.available_kv_cache_bytes)),
    ]:
        gib, unit, share = _row(text, label)[:3]
        assert (gib, unit, share) == (f"{num_bytes / GiB_bytes:.2f}", "GiB", f"{100 * num_bytes / total:.1f}%")
    # The requested row names vLLM's formula with the utilization as Python prints it.
    assert "ceil(total x 0.92), vLLM request_memory" in text
    # L4's total is torch's GiB figure in the catalog (gpu_catalog.json).
    assert "cudaMemGetInfo total (catalog: torch's GiB)" in text
    assert f"DOES NOT FIT at phase '{p.failure_phase}', short by {p.shortfall_bytes / GiB_bytes:.2f} GiB" in text
    assert f"\n  {p.failure_message}\n" in text


def test_report_uses_the_cached_suggestions(monkeypatch: pytest.MonkeyPatch) -> None:
    # str(plan) re-planned every lever a second time; the plan keeps its suggestions once.
    calls = []
    real = _C.suggest_plan_changes

    def counted(*args: object) -> object:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(_C, "suggest_plan_changes", counted)
    p = vllm_mem.plan(LLAMA, "L4", vllm_version=V1_GRAPHS, max_model_len=32768)
    suggestions = p.suggestions
    text = str(p) + str(p)
    assert len(calls) == 1 and suggestions
    for n, s in enumerate(suggestions, 1):
        verdict = "fits" if s.fits_after else "not enough alone"
        assert (
            f"\n  {n}. {s.setting}  ({s.direction} {s.lever}; frees {s.bytes_freed / GiB_bytes:.2f} GiB per GPU; "
            f"{verdict})\n     {s.reason}\n"
        ) in text


def test_auto_dtype_names_the_dtype_vllm_serves() -> None:
    # vLLM's --dtype auto serves a float32 checkpoint as bfloat16 (config.py _resolve_auto_dtype).
    config = {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 1000,
        "max_position_embeddings": 2048,
    }
    fp32 = vllm_mem.plan({**config, "torch_dtype": "float32"}, "H100-80GB")
    fp16 = vllm_mem.plan({**config, "torch_dtype": "float16"}, "H100-80GB")
    assert "dtype=auto (bfloat16) " in str(fp32)
    assert "dtype=auto (float16) " in str(fp16)
    assert "dtype=float16 " in str(vllm_mem.plan({**config, "torch_dtype": "float32"}, "H100-80GB", dtype="float16"))


def test_pipeline_ranks_table_lists_every_rank() -> None:
    p = vllm_mem.plan(LLAMA, "H100-80GB", pipeline_parallel_size=2, max_model_len=8192)
    text = str(p)
    assert "\nper pipeline rank " in text
    for r in p.ranks:
        row = next(line for line in text.splitlines() if line.startswith(f"  rank {r.pp_rank:<3}"))
        assert row.split()[2:] == [
            f"{r.first_layer}-{r.end_layer}",
            f"{r.weights_bytes / GiB_bytes:.2f}",
            f"{r.activation_peak_bytes / GiB_bytes:.2f}",
            f"{r.non_torch_bytes / GiB_bytes:.2f}",
            f"{r.cudagraph_bytes / GiB_bytes:.2f}",
            f"{r.available_kv_cache_bytes / GiB_bytes:.2f}",
            str(r.num_blocks),
        ]
