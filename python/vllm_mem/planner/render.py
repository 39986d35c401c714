"""How a start-up plan is shown: the text report and plain data for ``--json`` (notebook HTML is
:mod:`vllm_mem.display`).

Kept apart from :class:`~vllm_mem.StartupPlan` (the figures) so that presentation can change
without touching what the plan computes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _C
from ..units import GiB_bytes as GiB

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


def total_memory_figure(plan: StartupPlan) -> str:
    """Where the plan's per-GPU total comes from, as the text report's total row says it:
    ``"measured"``, ``"reported_mib"``, ``"reported_gib"`` or ``"estimated"`` (the catalog entry of
    ``gpu_name`` holding that total), ``"given"`` (a bare total, no GPU name) or ``"runtime"`` (a
    named GPU whose total is not its catalog figure: measured on the device)."""
    i = plan._p.inputs
    if i.total_memory_source:
        text = str(i.total_memory_source)
        return "estimated" if text.startswith("estimated") else "given" if text.startswith("given") else "runtime"
    if not i.gpu_name:
        return "given"
    from ..catalog import gpu_catalog

    entry = next((g for g in gpu_catalog() if g.name == i.gpu_name and g.total_memory_bytes == i.total_memory_bytes),
                 None)
    return entry.figure_source if entry is not None else "runtime"


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
            "total_memory_bytes": i.total_memory_bytes, "total_memory_figure": total_memory_figure(plan),
            "free_memory_bytes": i.free_memory_bytes,
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
            "checkpoint_weights_bytes": i.checkpoint_weights_bytes or None,
            "usage_context": i.usage_context, "vllm_engine": i.vllm_engine,
            "allow_long_max_model_len": i.allow_long_max_model_len,
        },
        "vllm_version": {"planned_with": i.resolved_vllm_version, "asked": i.vllm_version or None,
                         "source": i.vllm_version_source or "newest known", "note": i.vllm_version_note},
        "dtype_note": i.dtype_note or None,
        # What a reader must know before trusting a figure (a vision encoder's profiling run not
        # modelled, ...): the same lines the text report prints as "caveat:".
        "caveats": list(plan._spec.caveats),
        "kv_log_lines": list(plan._p.kv_log_lines),
        "available_kv_line": plan.available_kv_line,
        "total_memory": bytes_entry(total, total),
        "free_memory": bytes_entry(i.free_memory_bytes, total),
        "requested": bytes_entry(plan.requested_bytes, total),
        "weights": bytes_entry(plan.weights_bytes, total),
        "draft_weights": bytes_entry(plan.draft_weights_bytes, total),
        "vision_encoder": bytes_entry(plan.vision_encoder_bytes, total),  # part of "weights"
        "draft_kv_cache": bytes_entry(plan.draft_kv_cache_bytes, total),
        # The weights term's source: the checkpoint's safetensors headers (vllm_mem.hub) or the config.
        "weights_source": "checkpoint headers" if i.checkpoint_weights_bytes else "config",
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
            "draft_weights_bytes": r.draft_weights_bytes,
            "draft_kv_cache_bytes": r.draft_kv_cache_bytes,
            "vision_encoder_bytes": r.vision_encoder_bytes,
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
