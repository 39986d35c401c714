"""The start-up plan as HTML: where the tightest GPU's bytes go, the verdict, and the one
setting to change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._html import (
    COLORS,
    FAIL,
    Marker,
    Segment,
    bar,
    callout,
    code,
    details,
    esc,
    exactness_callouts,
    facts,
    frame,
    legend,
    muted,
    para,
    size,
    size_and_share,
    table,
)

if TYPE_CHECKING:
    from ..planner import PlanSuggestion, StartupPlan

#: A person's words for each failure phase (vLLM's start-up order).
PHASE_LABELS = {
    "free_memory": "the free-memory check at start-up",
    "weights": "loading the weights",
    "profile_peak": "the profile run (peak activation, non-torch, CUDA graphs)",
    "no_kv_blocks": "allocating the KV cache (no block fits)",
    "max_model_len": "the max_model_len check (one request's KV cache does not fit)",
}

#: Which segments of the bar a failure phase points at.
_PHASE_SEGMENTS = {
    "free_memory": {"baseline"},
    "weights": {"weights"},
    "profile_peak": {"activation", "non_torch", "cudagraph"},
    "no_kv_blocks": {"kv_cache"},
    "max_model_len": {"kv_cache"},
}


def plan_segments(plan: StartupPlan) -> tuple[list[Segment], list[Marker]]:
    """The bar of the tightest GPU in vLLM's terms, and the requested-budget marker."""
    inputs = plan._p.inputs
    total = plan.total_memory_bytes
    hot = _PHASE_SEGMENTS.get(plan.failure_phase or "", set())
    in_budget = bool(inputs.cudagraph_memory_in_budget)
    kv = max(0, plan.available_kv_cache_bytes)
    baseline = max(0, total - plan.free_memory_bytes)
    cudagraph = Segment("CUDA graph", plan.cudagraph_bytes, COLORS["cudagraph"], "cudagraph" in hot,
                        "log: CUDA graph memory (estimated)" + ("" if in_budget else ", outside the budget (v0.19)"))
    segments = [
        Segment("weights", plan.weights_bytes, COLORS["weights"], "weights" in hot, "log: Model loading took"),
        Segment("peak activation", plan.activation_peak_bytes, COLORS["activation"], "activation" in hot,
                "log: torch peak memory increase"),
        Segment("non-torch", plan.non_torch_bytes, COLORS["non_torch"], "non_torch" in hot,
                "log: non-torch forward increase memory"),
        *([cudagraph] if in_budget else []),
        Segment("KV cache", kv, COLORS["kv_cache"], "kv_cache" in hot, "log: Available KV cache memory"),
        *([] if in_budget else [cudagraph]),
    ]
    used = sum(max(0, s.num_bytes) for s in segments)
    segments.append(Segment("unused", max(0, total - used - baseline), COLORS["unused"], False,
                            "outside the budget, or left over", outline=True))
    segments.append(Segment("in use at start-up", baseline, COLORS["baseline"], "baseline" in hot,
                            "CUDA context, other processes"))
    # What the weights and the profile run take beyond vLLM's budget (no KV cache is left then);
    # with --kv-cache-memory-bytes the budget is not what limits the KV cache.
    before_kv = sum(s.num_bytes for s in segments[:4 if in_budget else 3])
    excess = 0 if inputs.kv_cache_memory_bytes else max(0, before_kv - plan.requested_bytes)
    markers = [Marker(plan.requested_bytes, "requested budget",
                      note=f"gpu_memory_utilization {float(inputs.gpu_memory_utilization):g} × total",
                      excess=excess)]
    return segments, markers


def one_change(suggestions: list[PlanSuggestion]) -> PlanSuggestion | None:
    """The lever to show first: the highest-ranked one that fits alone, else the first."""
    return next((s for s in suggestions if s.fits_after), suggestions[0] if suggestions else None)


def _suggestion_line(s: PlanSuggestion) -> str:
    verdict = ("<b>fits</b> with this change alone" if s.fits_after else "not enough alone")
    return f"{code(s.setting)} {muted('— ' + esc(s.reason))} ({verdict}; frees {esc(size(s.bytes_freed))})"


def plan_html(plan: StartupPlan) -> str:
    inputs = plan._p.inputs
    total = plan.total_memory_bytes
    name = plan._spec.name or plan._spec.model_type
    gpu = inputs.gpu_name or "GPU"
    tp, pp = int(inputs.tensor_parallel_size), int(inputs.pipeline_parallel_size)
    gpus = f"{tp * pp}&times; " if tp * pp > 1 else ""
    # The total says how it is known where it is not a runtime figure (a catalog estimate, a given size).
    from ..planner.render import plan_caveats, total_memory_figure

    figure = total_memory_figure(plan)
    known = {"estimated": ", estimated", "given": ", as given"}.get(figure, "")
    title = f"{esc(name)} on {gpus}{esc(gpu)} ({esc(size(total))} each{known})" if gpus else \
        f"{esc(name)} on {esc(gpu)} ({esc(size(total))}{known})"
    settings = [f"max_model_len {plan.max_model_len:,}",
                f"gpu_memory_utilization {float(inputs.gpu_memory_utilization):g}"]
    if tp > 1:
        settings.append(f"tensor_parallel_size {tp}")
    if pp > 1:
        settings.append(f"pipeline_parallel_size {pp}")
    settings.append(f"kv_cache_dtype {inputs.kv_cache_dtype}")
    if inputs.quantization:
        settings.append(f"quantization {inputs.quantization}")
    if inputs.enforce_eager:
        settings.append("enforce_eager")
    body = [para(muted(esc(" · ".join(settings))), "margin-top:0")]
    body.extend(exactness_callouts(plan._spec, plan_caveats(plan)))

    if not plan.fits:
        phase = plan.failure_phase or ""
        message = plan.failure_message or ""
        body.append(callout(
            f"<b style='color:{FAIL}'>Fails at {esc(PHASE_LABELS.get(phase, phase))}</b>"
            f" {code(phase)}, short by <b>{esc(size(plan.shortfall_bytes))}</b> per GPU."
            + (f"<div style='margin-top:4px'>{muted(esc(message))}</div>" if message else ""), kind="fail"))
        suggestions = plan.suggestions
        best = one_change(suggestions)
        if best is not None:
            body.append(callout("<b>Change this:</b> " + _suggestion_line(best), kind="change"))
        others = [s for s in suggestions if s is not best]
        if others:
            body.append(details(f"{len(others)} other setting{'s' if len(others) > 1 else ''} that help",
                                "<ol style='margin:4px 0;padding-left:22px'>" + "".join(
                                    f"<li>{_suggestion_line(s)}</li>" for s in others) + "</ol>"))

    segments, markers = plan_segments(plan)
    where = "per GPU" if pp == 1 else f"per GPU, tightest pipeline rank ({plan.tightest_pp_rank})"
    body.append(para(f"<b>Where the GPU's bytes go</b> {muted(esc(where))}", "margin-bottom:0"))
    body.append(bar(segments, total, markers=markers, label=f"memory of one {gpu}"))
    body.append(legend(segments, total, markers=markers))

    kv = plan.kv_cache
    if kv is not None:
        lines = [plan.auto_fit_line, *(plan.kv_log_lines or kv.log_lines)]  # auto: vLLM's fit line first
        body.append(para("".join(f"<div>{code(line)}</div>" for line in lines if line)))
    asked = "auto-fitted" if plan.auto_fit_line else "asked"
    body.append(para(f"Largest max_model_len that fits: <b>{plan.max_model_len_that_fits:,}</b>"
                     + muted(f" ({asked}: {plan.max_model_len:,})")))

    ranks = plan.ranks
    if len(ranks) > 1:
        rows = [[("&#9656; " if r.pp_rank == plan.tightest_pp_rank else "") + f"{r.pp_rank}",
                 f"{r.first_layer}&ndash;{r.end_layer - 1}", esc(size(r.weights_bytes)),
                 esc(size(r.activation_peak_bytes + r.non_torch_bytes + r.cudagraph_bytes)),
                 esc(size(r.available_kv_cache_bytes)), f"{r.num_blocks:,}"] for r in ranks]
        body.append(details(f"{len(ranks)} pipeline ranks", table(
            ["rank", "layers", "weights", "activation + non-torch + graphs", "KV cache", "blocks"], rows,
            numeric=(2, 3, 4, 5))))
    # A multimodal model's tower + projector is inside "weights" (vLLM loads it with the model):
    # shown beside it so a reader sees what the image path costs.
    vision = [("vision encoder (in weights)", esc(size_and_share(plan.vision_encoder_bytes, total))
               + muted(" tower + projector"))] if plan.vision_encoder_bytes else []
    body.append(facts([*vision, ("free at start-up", esc(size(plan.free_memory_bytes))
                        + (muted(" (assumed)") if plan._p.free_memory_assumed else "")),
                       ("vLLM version", esc(f"{plan.vllm_version} ({plan.vllm_version_source})")),
                       *([("dtype", esc(plan.dtype_note))] if plan.dtype_note else []),
                       *([("--kv-cache-memory-bytes", code(str(plan.kv_cache_memory_bytes_suggestion)))]
                         if plan.kv_cache_memory_bytes_suggestion else [])]))
    return frame(title, "".join(body), verdict=plan.fits)
