"""How a start-up plan is shown: the text report, plain data for ``--json``, and notebook HTML.

Kept apart from :class:`~vllm_mem.StartupPlan` (the figures) so that presentation can change
without touching what the plan computes.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from .. import _C
from .inputs import GiB

if TYPE_CHECKING:
    from .result import StartupPlan


def bytes_entry(num_bytes: int, total: int) -> dict[str, Any]:
    return {"bytes": int(num_bytes), "gib": round(num_bytes / GiB, 4),
            "fraction_of_device": round(num_bytes / total, 6) if total else None}


def report_text(plan: StartupPlan) -> str:
    """The text report a person reads at a glance."""
    native = _C.suggest_plan_changes(plan._spec._spec, plan._p)
    return str(_C.format_plan_report(plan._spec._spec, plan._p, plan._spec.name,
                                     _C.format_suggestions(native)))


def plan_to_dict(plan: StartupPlan) -> dict[str, Any]:
    """Everything as plain JSON-able values; every byte figure also in GiB and as a
    fraction of the device."""
    total = plan.total_memory_bytes
    i = plan._p.inputs
    kv = plan.kv_cache
    return {
        "model": plan._spec.name or plan._spec.model_type,
        "gpu": i.gpu_name or None,
        "inputs": {
            "total_memory_bytes": i.total_memory_bytes, "free_memory_bytes": i.free_memory_bytes,
            "free_memory_assumed": bool(plan._p.free_memory_assumed),
            "gpu_memory_utilization": i.gpu_memory_utilization, "max_model_len": i.max_model_len,
            "tensor_parallel_size": i.tensor_parallel_size,
            "pipeline_parallel_size": i.pipeline_parallel_size, "max_num_seqs": i.max_num_seqs,
            "max_num_batched_tokens": i.max_num_batched_tokens, "dtype": i.dtype,
            "quantization": i.quantization or None, "kv_cache_dtype": i.kv_cache_dtype,
            "block_size": i.block_size or None, "enforce_eager": i.enforce_eager,
            "cudagraph_mode": i.cudagraph_mode,
            "kv_cache_memory_bytes": i.kv_cache_memory_bytes or None,
            "cudagraph_memory_in_budget": i.cudagraph_memory_in_budget,
        },
        "total_memory": bytes_entry(total, total),
        "free_memory": bytes_entry(i.free_memory_bytes, total),
        "requested": bytes_entry(plan.requested_bytes, total),
        "weights": bytes_entry(plan.weights_bytes, total),
        "activation_peak": bytes_entry(plan.activation_peak_bytes, total),
        "non_torch": bytes_entry(plan.non_torch_bytes, total),
        "cudagraph": bytes_entry(plan.cudagraph_bytes, total),
        "available_kv_cache": bytes_entry(plan.available_kv_cache_bytes, total),
        "tightest_pp_rank": plan.tightest_pp_rank,
        "ranks": [{
            "pp_rank": r.pp_rank, "layers": [r.first_layer, r.end_layer],
            "weights": bytes_entry(r.weights_bytes, total),
            "activation_peak": bytes_entry(r.activation_peak_bytes, total),
            "non_torch": bytes_entry(r.non_torch_bytes, total),
            "cudagraph": bytes_entry(r.cudagraph_bytes, total),
            "available_kv_cache": bytes_entry(r.available_kv_cache_bytes, total),
            "num_blocks": r.num_blocks,
        } for r in plan.ranks],
        "kv_cache": None if kv is None else kv.to_dict(),
        "max_model_len_that_fits": plan.max_model_len_that_fits,
        "fits": plan.fits,
        "failure_phase": plan.failure_phase,
        "failure_message": plan.failure_message or None,
        "shortfall": bytes_entry(plan.shortfall_bytes, total),
        "kv_cache_memory_bytes_suggestion": plan.kv_cache_memory_bytes_suggestion,
        "suggestions": [s.to_dict() for s in plan.suggestions],
    }



def plan_html(plan: StartupPlan) -> str:
    total = plan.total_memory_bytes
    rows = [("requested", plan.requested_bytes), ("weights", plan.weights_bytes),
            ("peak activation", plan.activation_peak_bytes), ("non-torch", plan.non_torch_bytes),
            ("CUDA graph", plan.cudagraph_bytes),
            ("KV cache", max(0, plan.available_kv_cache_bytes))]
    body = "".join(
        f"<tr><td>{html.escape(label)}</td><td style='text-align:right'>{b / GiB:.2f} GiB</td>"
        f"<td style='text-align:right'>{100 * b / total:.1f}%</td></tr>" for label, b in rows)
    verdict = ("<b style='color:green'>fits</b>" if plan.fits else
               f"<b style='color:#b00'>does not fit</b> at <code>{plan.failure_phase}</code>, "
               f"short by {plan.shortfall_bytes / GiB:.2f} GiB")
    kv = plan.kv_cache
    cap = ("" if kv is None else
           f"<p>{kv.num_tokens:,} tokens; maximum concurrency {kv.max_concurrency:.2f}x "
           f"at {plan.max_model_len:,} tokens</p>")
    tips = "".join(f"<li><code>{html.escape(s.setting)}</code> — {html.escape(s.reason)}"
                   f" ({'fits' if s.fits_after else 'not enough alone'})</li>"
                   for s in plan.suggestions)
    return (f"<div><p>{html.escape(plan._spec.name or plan._spec.model_type)} on "
            f"{html.escape(plan._p.inputs.gpu_name or 'GPU')} ({total / GiB:.2f} GiB): {verdict}</p>"
            f"<table><tr><th></th><th>GiB</th><th>device</th></tr>{body}</table>{cap}"
            f"<p>largest max_model_len that fits: {plan.max_model_len_that_fits:,}</p>"
            + (f"<ol>{tips}</ol>" if tips else "") + "</div>")


