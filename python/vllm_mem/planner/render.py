"""How a start-up plan is shown, side by side: the text report (:func:`plan_text`), plain data for
``--json`` (:func:`plan_to_dict`) and the notebook HTML (:func:`plan_html`, in
:mod:`vllm_mem.display.plan`), all read from the bound plan.

Kept apart from :class:`~vllm_mem.StartupPlan` (the figures) so that presentation can change
without touching what the plan computes. vLLM's own lines (``available_kv_line``,
``kv_log_lines``, ``failure_message``, ...) are formatted in C++ in the planned release's wording
and only placed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _C
from ..units import GiB_bytes, format_gib_text

if TYPE_CHECKING:
    from .result import PlanSuggestion, StartupPlan


def bytes_entry(num_bytes: int, total: int) -> dict[str, Any]:
    return {
        "bytes": int(num_bytes),
        "gib": round(num_bytes / GiB_bytes, 4),
        "fraction_of_device": round(num_bytes / total, 6) if total else None,
    }


# ---- where the total comes from ----------------------------------------------------------------


def _catalog_figure(inputs: Any) -> tuple[str, Any]:
    """The total's figure name (see :func:`total_memory_figure`) and its catalog entry, if any."""
    if inputs.total_memory_source:
        text = str(inputs.total_memory_source)
        return (
            "estimated" if text.startswith("estimated") else "given" if text.startswith("given") else "runtime"
        ), None
    if not inputs.gpu_name:
        return "given", None
    from ..catalog import gpu_catalog

    entry = next(
        (g for g in gpu_catalog() if g.name == inputs.gpu_name and g.total_memory_bytes == inputs.total_memory_bytes),
        None,
    )
    return (entry.figure_source, entry) if entry is not None else ("runtime", None)


def total_memory_figure(plan: StartupPlan) -> str:
    """Where the plan's per-GPU total comes from, as the text report's total row says it:
    ``"measured"``, ``"reported_mib"``, ``"reported_gib"`` or ``"estimated"`` (the catalog entry of
    ``gpu_name`` holding that total), ``"given"`` (a bare total, no GPU name) or ``"runtime"`` (a
    named GPU whose total is not its catalog figure: measured on the device)."""
    return _catalog_figure(plan._p.inputs)[0]


#: How the report's header qualifies the total, by figure (any other: a runtime figure).
_TOTAL_HEADER = {"estimated": "estimated", "given": "as given"}
#: The budget table's source column for a catalog total the runtime reported.
_CATALOG_ROW = {
    "measured": "cudaMemGetInfo total (catalog: measured)",
    "reported_mib": "cudaMemGetInfo total (catalog: torch's MiB)",
    "reported_gib": "cudaMemGetInfo total (catalog: torch's GiB)",
}


def _total_source(inputs: Any) -> tuple[str, str]:
    """(the header's words, the budget row's source) for the total, said as it is: only a figure
    the runtime reported (or a catalog figure read from such a report) is "as CUDA reports it"; a
    catalog estimate says "estimated" with its bound, a bare total "as given"."""
    figure, entry = _catalog_figure(inputs)
    header = _TOTAL_HEADER.get(figure, "as CUDA reports it")
    if inputs.total_memory_source:
        return header, str(inputs.total_memory_source)
    if figure == "given":
        return header, "given (total_memory_bytes)"
    if figure == "estimated":
        bound = format_gib_text(entry.figure_uncertainty_bytes)
        return header, f"estimated, +-{bound} GiB (catalog; vllm-mem gpus)"
    return header, _CATALOG_ROW.get(figure, "cudaMemGetInfo total")


# ---- the text report ---------------------------------------------------------------------------


def _gib(num_bytes: int) -> str:
    return f"{num_bytes / GiB_bytes:.2f}"


def _row(label: str, num_bytes: int, total: int, source: str) -> str:
    return f"  {label:<30} {_gib(num_bytes):>9} GiB {100.0 * num_bytes / total:5.1f}%  {source}\n"


def _header(plan: StartupPlan) -> str:
    i, spec = plan._p.inputs, plan._spec._spec
    world = i.tensor_parallel_size * i.pipeline_parallel_size
    dtype = f"{i.dtype} ({_C.served_dtype(spec, 'auto')})" if i.dtype == "auto" else i.dtype
    source = i.vllm_version_source or ("asked" if i.vllm_version else "newest known")
    graphs_budget = "in" if i.cudagraph_memory_in_budget else "outside"
    lines = [
        f"vLLM start-up memory plan: {plan._spec.name or spec.model_type} on {world} x {i.gpu_name or 'GPU'} "
        f"({format_gib_text(i.total_memory_bytes)} GiB each, {_total_source(i)[0]})",
        f"settings: gpu_memory_utilization={i.gpu_memory_utilization!r} max_model_len={i.max_model_len}"
        + (" (auto-fitted)" if i.max_model_len_auto else "") + " "
        f"tensor_parallel_size={i.tensor_parallel_size} pipeline_parallel_size={i.pipeline_parallel_size} "
        f"max_num_seqs={i.max_num_seqs} max_num_batched_tokens={i.max_num_batched_tokens}",
        f"          dtype={dtype}"
        + (f" quantization={i.quantization}" if i.quantization else "")
        + f" kv_cache_dtype={i.kv_cache_dtype}"
        + (f" kv_cache_dtype_skip_layers={','.join(i.kv_cache_dtype_skip_layers)}" if i.kv_cache_dtype_skip_layers
           else "")
        + " cudagraphs="
        + ("off (enforce_eager)" if i.enforce_eager else i.cudagraph_mode)
        + (f" kv_cache_memory_bytes={i.kv_cache_memory_bytes}" if i.kv_cache_memory_bytes > 0 else ""),
        f"vLLM {i.resolved_vllm_version} rules ({source}): {i.vllm_version_note}; engine {i.vllm_engine}, "
        f"usage_context {i.usage_context}, model runner {i.model_runner}, CUDA graphs {graphs_budget} the KV budget",
        f"model runner: {i.model_runner_note}",
    ]
    if i.dtype_note:
        lines.append(i.dtype_note)
    if i.sampler_programs_note:
        lines.append(i.sampler_programs_note)
    if i.lora_note:
        lines.append(i.lora_note)
    # A figure without exact rules behind it says so before anyone reads a number.
    if spec.generic_estimate_reason:
        lines.append(f"GENERIC ESTIMATE (allow_unknown): {spec.generic_estimate_reason}")
    lines.extend(f"caveat: {caveat}" for caveat in plan_caveats(plan))
    return "".join(line + "\n" for line in lines)


def plan_caveats(plan: StartupPlan) -> list[str]:
    """What a reader must know before trusting a figure: the model's caveats (a tower whose
    profiling run is not modelled, ...). A profiled dummy video carries none since its one printed
    start-up (vLLM PR #25631: Qwen2.5-VL-3B, 14 frames, A100-40GB) is reproduced within 0.05 GiB
    (tests/python/test_mm_settings.py)."""
    return list(plan._spec.caveats)


def _budget(plan: StartupPlan) -> str:
    i, p = plan._p.inputs, plan._p
    total = i.total_memory_bytes
    free_source = "assumed: total - idle CUDA context/NCCL baseline" if p.free_memory_assumed else "given"
    return (
        "budget (per GPU)                    GiB     device  source\n"
        + _row("total memory", total, total, _total_source(i)[1])
        + _row("free at start-up", i.free_memory_bytes, total, free_source)
        + _row(
            "requested", p.requested_bytes, total, f"ceil(total x {i.gpu_memory_utilization!r}), vLLM request_memory"
        )
    )


def _graph_source(plan: StartupPlan, rank: Any) -> str:
    i = plan._p.inputs
    if i.enforce_eager:
        return "enforce_eager: no graphs"
    g = rank.cudagraph
    parts = ([f"FULL={g.num_full_graphs} (largest={g.largest_full})"] if g.num_full_graphs > 0 else []) + (
        [f"PIECEWISE={g.num_piecewise_graphs} (largest={g.largest_piecewise})"] if g.num_piecewise_graphs > 0 else []
    )
    outside = "" if i.cudagraph_memory_in_budget or rank.cudagraph_bytes <= 0 else " (not in the KV budget)"
    return "estimate: " + ", ".join(parts) + outside


def _breakdown(plan: StartupPlan) -> str:
    i, spec = plan._p.inputs, plan._spec._spec
    total = i.total_memory_bytes
    t = plan._p.ranks[plan._p.tightest_pp_rank]
    out = f"breakdown (tightest GPU: pipeline rank {plan._p.tightest_pp_rank})\n"
    out += _row(
        "weights",
        t.weights_bytes,
        total,
        "checkpoint headers: bytes as stored, split as the config  [Model loading took]"
        if i.checkpoint_weights_bytes > 0
        else "config: parameters x dtype  [Model loading took]",
    )
    if t.vision_encoder_bytes > 0:
        tower = spec.vision.encoder if spec.vision is not None else "vision"
        out += _row(
            "  of which vision encoder",
            t.vision_encoder_bytes,
            total,
            f"config: {tower} tower + projector, every PP rank",
        )
    if t.lora_slots_bytes > 0:
        out += _row(
            "  of which LoRA adapter slots",
            t.lora_slots_bytes,
            total,
            f"--enable-lora: {i.max_loras} slot(s) x rank {i.max_lora_rank} in every wrapped layer",
        )
    if t.draft_weights_bytes > 0:
        out += _row(
            "  of which drafter",
            t.draft_weights_bytes,
            total,
            f"speculative {i.speculative.method}: its own weights, shared embedding/lm_head counted once",
        )
    a = t.activation
    activation = (
        f"estimate: sampler over {min(i.max_num_seqs, i.max_num_batched_tokens)} x {spec.vocab_size} logits"
        + (" and the rejection sampler's dummy logits" if a.rejection_logits_bytes else "")
        if a.sampler_dominates
        else f"estimate: drafter forward of {i.max_num_batched_tokens} tokens beside the target's output"
        if a.drafter_phase_bytes > a.forward_bytes
        else f"estimate: forward of {i.max_num_batched_tokens} tokens"
    )
    mm = t.activation.multimodal
    if mm.runs:
        encoder_peak = mm.encoder_phase_bytes >= t.activation_peak_bytes - t.activation.pipeline_buffers_bytes
        what = f"{mm.items} dummy {mm.modality}s" + (f" of {mm.video_frames} frames" if mm.video_frames else "")
        activation = (f"estimate: encoder run of {what}" if encoder_peak
                      else activation + f" + {what}' pixels and embeddings")
    out += _row("peak activation", t.activation_peak_bytes, total, activation + "  [torch peak memory increase]")
    non_torch = "CUDA runtime + NCCL buffers" if t.non_torch.nccl_bytes > 0 else "CUDA runtime, cuBLAS"
    out += _row("non-torch", t.non_torch_bytes, total, f"estimate: {non_torch}  [non-torch forward increase memory]")
    out += _row("CUDA graph", t.cudagraph_bytes, total, _graph_source(plan, t) + "  [Estimated CUDA graph memory]")
    out += _row(
        "KV cache",
        max(0, t.available_kv_cache_bytes),
        total,
        "kv_cache_memory_bytes  [as specified]"
        if i.kv_cache_memory_bytes > 0
        else "requested - the above  [Available KV cache memory]",
    )
    if t.draft_kv_cache_bytes > 0:
        out += _row(
            "  of which drafter KV",
            t.draft_kv_cache_bytes,
            total,
            "the drafter's attention layers' share of every block (one pool, shared block table)",
        )
    if i.speculative is not None:
        s = i.speculative
        tokens = _C.resolved_num_speculative_tokens(spec, s, i.tensor_parallel_size, i.pipeline_parallel_size)
        out += (
            f"  speculative decoding: {s.method}"
            + (f" ({s.draft_name})" if s.draft_name else "")
            + f", num_speculative_tokens={tokens}; decode graphs are multiples of 1 + K tokens\n"
        )
        if s.no_effect_keys:  # docs/speculative_decoding.md: keys vLLM reads that change no memory sized here
            out += f"  speculative_config keys with no memory effect: {', '.join(s.no_effect_keys)}\n"
    mm_keys = t.activation.multimodal.no_effect_kwargs
    if mm_keys:  # accepted as vLLM forwards them; they change no tensor's size (vision_profile_item.cc)
        out += f"  mm_processor_kwargs keys with no memory effect: {', '.join(mm_keys)}\n"
    if t.available_kv_cache_bytes < 0:
        out += f"  (the KV budget is negative: {_gib(t.available_kv_cache_bytes)} GiB)\n"
    return out


def _ranks(plan: StartupPlan) -> str:
    ranks = plan._p.ranks
    if len(ranks) <= 1:
        return ""
    out = "\nper pipeline rank            layers   weights  activation  non-torch  CUDA graph  KV cache   blocks\n"
    for r in ranks:
        out += (
            f"  rank {r.pp_rank:<3}              {r.first_layer:>4}-{r.end_layer:<4} {_gib(r.weights_bytes):>8} "
            f"{_gib(r.activation_peak_bytes):>10} {_gib(r.non_torch_bytes):>10} {_gib(r.cudagraph_bytes):>11} "
            f"{_gib(r.available_kv_cache_bytes):>9} {r.num_blocks:>8}\n"
        )
    return out + "  (GiB per GPU; vLLM keeps the minimum number of blocks over ranks)\n"


def _kv_capacity(plan: StartupPlan) -> str:
    p = plan._p
    out = "KV capacity\n"
    kv = p.kv_cache
    if kv is not None:
        out += f"  {kv.num_blocks:,} blocks of {kv.block_size} tokens ({kv.kv_cache_dtype})\n"
        # vLLM's own lines, in the wording and rounding of the planned release; a hybrid model's
        # page unification first, as vLLM logs it at config time.
        # --max-model-len auto: vLLM logs its fit between the budget and the capacity lines.
        lines = [*kv.hybrid_log_lines, p.available_kv_line, p.auto_fit_line, *p.kv_log_lines]
        out += "".join(f"  {line}\n" for line in lines if line)
    else:
        out += "  none: the plan does not reach KV-cache allocation\n"
    fits_len = f"{p.max_model_len_that_fits:,}" if p.max_model_len_that_fits > 0 else "none"
    out += f"  largest max_model_len that fits: {fits_len} (model limit {p.model_max_model_len:,})\n"
    suggestion = plan.kv_cache_memory_bytes_suggestion
    if p.fits and p.inputs.kv_cache_memory_bytes == 0 and suggestion is not None:
        out += f"  --kv-cache-memory={suggestion} fits the requested memory (vLLM's suggestion, 150 MiB buffer)\n"
    return out


def _verdict(plan: StartupPlan) -> str:
    if plan.fits:
        return "verdict: FITS\n"
    return (
        f"verdict: DOES NOT FIT at phase '{plan.failure_phase}', short by {_gib(plan.shortfall_bytes)} GiB "
        f"per GPU\n  {plan.failure_message}\n"
    )


def suggestions_text(suggestions: list[PlanSuggestion]) -> str:
    """The ranked levers, numbered, each with its flag, what it frees and why."""
    return "".join(
        f"  {n}. {s.setting}  ({s.direction} {s.lever}; frees {_gib(s.bytes_freed)} GiB per GPU; "
        f"{'fits' if s.fits_after else 'not enough alone'})\n     {s.reason}\n"
        for n, s in enumerate(suggestions, 1)
    )


def plan_text(plan: StartupPlan) -> str:
    """The text report a person reads at a glance (``str(plan)``); the levers are the plan's
    cached :attr:`~vllm_mem.StartupPlan.suggestions`."""
    levers = suggestions_text(plan.suggestions)
    return "\n".join(
        [_header(plan), _budget(plan), _breakdown(plan) + _ranks(plan), _kv_capacity(plan), _verdict(plan)]
    ) + (f"\nwhat to change\n{levers}" if levers else "")


def plan_html(plan: StartupPlan) -> str:
    """The notebook block (``plan._repr_html_()``): :func:`vllm_mem.display.plan_html`."""
    from ..display.plan import plan_html as html  # imported on first display only

    return html(plan)


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
            "total_memory_bytes": i.total_memory_bytes,
            "total_memory_figure": total_memory_figure(plan),
            "free_memory_bytes": i.free_memory_bytes,
            "free_memory_assumed": bool(plan._p.free_memory_assumed),
            "gpu_memory_utilization": i.gpu_memory_utilization,
            "max_model_len": i.max_model_len,
            "tensor_parallel_size": i.tensor_parallel_size,
            "pipeline_parallel_size": i.pipeline_parallel_size,
            "max_num_seqs": i.max_num_seqs,
            "max_num_batched_tokens": i.max_num_batched_tokens,
            "dtype": i.dtype,
            "quantization": i.quantization or None,
            "kv_cache_dtype": i.kv_cache_dtype,
            "kv_cache_dtype_skip_layers": list(i.kv_cache_dtype_skip_layers) or None,
            "block_size": i.block_size or None,
            # Hybrid models: the mode vLLM runs with, the release's prefix-caching default resolved.
            "mamba_cache_mode": i.mamba_cache_mode,
            "enforce_eager": i.enforce_eager,
            "cudagraph_mode": i.cudagraph_mode,
            "kv_cache_memory_bytes": i.kv_cache_memory_bytes or None,
            "cudagraph_memory_in_budget": i.cudagraph_memory_in_budget,
            "checkpoint_weights_bytes": i.checkpoint_weights_bytes or None,
            "usage_context": i.usage_context,
            "vllm_engine": i.vllm_engine,
            "allow_long_max_model_len": i.allow_long_max_model_len,
            # --speculative-config keys vLLM reads that change no memory sized here (the report's line).
            "speculative_config_no_effect_keys": (
                list(i.speculative.no_effect_keys) if i.speculative is not None else None
            ),
        },
        "vllm_version": {
            "planned_with": i.resolved_vllm_version,
            "asked": i.vllm_version or None,
            "source": i.vllm_version_source or "newest known",
            "note": i.vllm_version_note,
            "model_runner": i.model_runner,
            "model_runner_note": i.model_runner_note,
        },
        "dtype_note": i.dtype_note or None,
        "sampler_programs_note": i.sampler_programs_note or None,
        "lora_note": i.lora_note or None,
        # What a reader must know before trusting a figure (a vision encoder's profiling run not
        # modelled, ...): the same lines the text report prints as "caveat:".
        "caveats": plan_caveats(plan),
        "kv_log_lines": list(plan._p.kv_log_lines),
        "available_kv_line": plan.available_kv_line,
        "total_memory": bytes_entry(total, total),
        "free_memory": bytes_entry(i.free_memory_bytes, total),
        "requested": bytes_entry(plan.requested_bytes, total),
        "weights": bytes_entry(plan.weights_bytes, total),
        "draft_weights": bytes_entry(plan.draft_weights_bytes, total),
        "vision_encoder": bytes_entry(plan.vision_encoder_bytes, total),  # part of "weights"
        "lora_slots": bytes_entry(plan.lora_slots_bytes, total),  # part of "weights"
        "multimodal_profile": plan.multimodal_profile,  # part of "activation_peak"
        "draft_kv_cache": bytes_entry(plan.draft_kv_cache_bytes, total),
        # The weights term's source: the checkpoint's safetensors headers (vllm_mem.hub) or the config.
        "weights_source": "checkpoint headers" if i.checkpoint_weights_bytes else "config",
        "activation_peak": bytes_entry(plan.activation_peak_bytes, total),
        "non_torch": bytes_entry(plan.non_torch_bytes, total),
        "cudagraph": bytes_entry(plan.cudagraph_bytes, total),
        "available_kv_cache": bytes_entry(plan.available_kv_cache_bytes, total),
        "tightest_pp_rank": plan.tightest_pp_rank,
        "ranks": [
            {
                "pp_rank": r.pp_rank,
                "layers": [r.first_layer, r.end_layer],
                "weights": bytes_entry(r.weights_bytes, total),
                "activation_peak": bytes_entry(r.activation_peak_bytes, total),
                "non_torch": bytes_entry(r.non_torch_bytes, total),
                "cudagraph": bytes_entry(r.cudagraph_bytes, total),
                "available_kv_cache": bytes_entry(r.available_kv_cache_bytes, total),
                "num_blocks": r.num_blocks,
                "draft_weights_bytes": r.draft_weights_bytes,
                "draft_kv_cache_bytes": r.draft_kv_cache_bytes,
                "vision_encoder_bytes": r.vision_encoder_bytes,
                "lora_slots_bytes": r.lora_slots_bytes,
            }
            for r in plan.ranks
        ],
        "kv_cache": None if kv is None else kv.to_dict(),
        "max_model_len_that_fits": plan.max_model_len_that_fits,
        "auto_fit": _auto_fit_dict(plan),
        "fits": plan.fits,
        "failure_phase": plan.failure_phase,
        "failure_message": plan.failure_message or None,
        "shortfall": bytes_entry(plan.shortfall_bytes, total),
        "kv_cache_memory_bytes_suggestion": plan.kv_cache_memory_bytes_suggestion,
        "suggestions": [s.to_dict() for s in plan.suggestions],
    }


def _auto_fit_dict(plan: StartupPlan) -> dict[str, Any] | None:
    """max_model_len auto: where vLLM's fit started, where it settled, and its line."""
    p = plan._p
    if not p.inputs.max_model_len_auto:
        return None
    return {"from_max_model_len": p.auto_fit_from_max_model_len, "max_model_len": p.inputs.max_model_len,
            "reduced": plan.fits and p.inputs.max_model_len < p.auto_fit_from_max_model_len,
            "line": p.auto_fit_line or None}
