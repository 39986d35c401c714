"""Stage checks (several engines on shared GPUs) and per-worker rank plans as HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._html import (
    COLORS,
    FAIL,
    PALETTE,
    Segment,
    bar,
    callout,
    details,
    esc,
    frame,
    legend,
    muted,
    para,
    pill,
    size,
    size_and_share,
    swatch,
    table,
)

if TYPE_CHECKING:
    from ..stages import RankPlans, StageCheck, StageDeviceRow


def _stage_color(stage_id: int) -> str:
    return PALETTE[stage_id % len(PALETTE)]


def failing_stage_ids(check: StageCheck, row: StageDeviceRow) -> set[int]:
    """The stages that actually fail on this GPU: those whose start-up check fails here; on an
    over-committed GPU where none does (free memory given above the requests), the last resident
    stage in start order, the one whose request takes the sum over 1.0."""
    failing = {s.stage_id for s in check.startup if s.fails and s.physical_id == row.physical_id}
    if not failing and row.over_committed and row.stages:
        failing = {int(row.stages[-1]["stage_id"])}
    return failing


def device_segments(row: StageDeviceRow, failing: set[int] | None = None) -> list[Segment]:
    """One GPU: each resident stage's requested bytes (the failing stages marked), what is left,
    and what others hold. Each stage is labelled with this physical GPU and its local index."""
    failing = set() if failing is None else failing
    segments = [Segment(f"stage {s['stage_id']} ({s['utilization']})", int(s["requested_bytes"]),
                        _stage_color(int(s["stage_id"])), int(s["stage_id"]) in failing,
                        f"GPU {row.physical_id}, {s['local_device']} inside the stage")
                for s in row.stages]
    held = max(0, row.total_bytes - row.free_bytes) if row.free_bytes >= 0 else 0
    left = max(0, row.total_bytes - row.requested_bytes - held)
    segments.append(Segment("unused", left, COLORS["unused"], note="headroom " + row.headroom, outline=True))
    if held:
        segments.append(Segment("in use before any stage", held, COLORS["baseline"],
                                not row.admission_ok, f"free: {row.free_source}"))
    return segments


def stage_check_html(check: StageCheck) -> str:
    body: list[str] = []
    if not check.ok:
        items = "".join(f"<li>{esc(p)}</li>" for p in check.problems)
        body.append(callout(f"<b style='color:{FAIL}'>Does not fit</b><ul style='margin:4px 0;padding-left:20px'>"
                            f"{items}</ul>", kind="fail"))
        if check.suggestions:
            body.append(callout(f"<b>Change this:</b> {esc(check.suggestions[0])}", kind="change"))
        if len(check.suggestions) > 1:
            more = len(check.suggestions) - 1
            body.append(details(f"{more} other suggestion{'s' if more > 1 else ''}", "<ul>" + "".join(
                f"<li>{esc(s)}</li>" for s in check.suggestions[1:]) + "</ul>"))
    for row in check.devices:
        status = pill("over-committed", False) if row.over_committed else (
            pill("start-up check fails", False) if not row.admission_ok else "")
        body.append(para(f"<b>GPU {row.physical_id}</b> {esc(row.name)} ({esc(size(row.total_bytes))}) &middot; "
                         f"utilization sum <b>{esc(row.utilization)}</b> "
                         + muted(f"= {esc(row.utilization_expression)}") + f" {status}", "margin:10px 0 0"))
        segments = device_segments(row, failing_stage_ids(check, row))
        body.append(bar(segments, row.total_bytes, label=f"GPU {row.physical_id}"))
        body.append(legend(segments, row.total_bytes, header=("", "bytes (share of GPU)", "")))
        if row.reason:
            body.append(para(muted(esc(row.reason))))
    if check.startup:
        # The physical GPU first: several stages each see their own device as cuda:0.
        rows = [[f"{s.stage_id}", f"GPU {s.physical_id} " + muted(f"({esc(s.device)} in the stage)"),
                 esc(size(s.free_bytes)), esc(size(s.requested_bytes)),
                 f"<b style='color:{FAIL}'>fails</b>" if s.fails else "ok", esc(s.message)] for s in check.startup]
        styles = [f"box-shadow:inset 3px 0 0 {FAIL}" if s.fails else "" for s in check.startup]
        body.append(para("<b>Start-up, stage by stage</b>", "margin:10px 0 0"))
        body.append(table(["stage", "GPU", "free", "requested", "", ""], rows, numeric=(2, 3),
                          row_styles=styles))
    if check.plans:
        rows = []
        for p in check.plans:
            fits = "fits" if p["fits"] else f"<b style='color:{FAIL}'>{esc(p['failure_phase'])}</b>"
            rows.append([f"{p['stage_id']}", esc(p["model"]), fits, esc(size(p["weights_bytes"])),
                         esc(size_and_share(max(0, p["available_kv_cache_bytes"]), p["total_bytes"])),
                         f"{p['max_concurrency']:.2f}&times;", f"{p['max_model_len']:,}"])
        body.append(para("<b>Start-up plans of the stages with a model</b>", "margin:10px 0 0"))
        body.append(table(["stage", "model", "", "weights", "KV cache", "concurrency", "max_model_len"], rows,
                          numeric=(3, 4, 5, 6)))
    notes = [*check.notes, *check.oom_advice]
    if notes:
        body.append(details(f"{len(notes)} note{'s' if len(notes) > 1 else ''}",
                            "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"))
    title = f"Stage check {muted(f'{len(check.devices)} GPUs · {esc(check.format)} schema')}"
    return frame(title, "".join(body), verdict=check.ok, verdict_text="OK" if check.ok else "does not fit")


def rank_plans_html(plans: RankPlans) -> str:
    body: list[str] = []
    if plans.fits:
        body.append(para(f"Engine KV cache: <b>{plans.num_blocks:,}</b> blocks (minimum over workers), "
                         f"{plans.num_tokens:,} tokens, <b>{plans.max_concurrency:.2f}&times;</b> concurrency. "
                         + muted(f"Tightest: rank {plans.tightest_rank}, {esc(plans.tightest_reason)}"),
                         "margin-top:0"))
    else:
        body.append(callout(f"<b style='color:{FAIL}'>Does not fit</b>: {esc(plans.failure_message)}",
                            kind="fail"))
    keys = [("weights", COLORS["weights"]), ("activation + non-torch + graphs", COLORS["activation"]),
            ("KV cache", COLORS["kv_cache"]), ("unused (outside the budget)", COLORS["unused"])]
    rows = []
    styles = []
    for w in plans.workers:
        tight = w.rank == plans.tightest_rank
        segments = [Segment("weights", w.weights_bytes, COLORS["weights"], w.fails_startup),
                    Segment("activation + non-torch + graphs", w.overhead_bytes, COLORS["activation"]),
                    Segment("KV cache", max(0, w.available_kv_bytes), COLORS["kv_cache"]),
                    Segment("unused", max(0, w.total_bytes - w.budget_bytes), COLORS["unused"], outline=True)]
        held = (", embedding" if w.holds_embedding else "") + (", LM head" if w.holds_lm_head else "")
        mini = bar(segments, w.total_bytes, height=16, label=f"rank {w.rank}", margin=2)
        rows.append([("&#9656; " if tight else "") + f"{w.rank}", f"{w.tp_rank} / {w.pp_rank}",
                     f"{w.layers[0]}&ndash;{w.layers[1] - 1}{muted(held)}", f"<div style='width:220px'>{mini}</div>",
                     esc(size(w.weights_bytes)), esc(size(w.available_kv_bytes)), f"{w.num_blocks:,}"
                     + (muted(f" (+{w.extra_blocks:,} unused)") if w.extra_blocks else "")])
        styles.append(f"box-shadow:inset 3px 0 0 {FAIL}" if w.fails_startup else
                      "font-weight:600" if tight else "")
    body.append(table(["rank", "tp / pp", "layers", "bytes", "weights", "KV cache", "blocks"], rows,
                      numeric=(4, 5, 6), row_styles=styles))
    body.append(para(" ".join(f"<span style='white-space:nowrap;margin-right:10px'>"
                              f"{swatch(c, outline=(c == COLORS['unused']))}{esc(k)}</span>" for k, c in keys)
                     + muted(" &#9656; tightest rank")))
    tp = max((w.tp_rank for w in plans.workers), default=0) + 1
    pp = max((w.pp_rank for w in plans.workers), default=0) + 1
    return frame(f"Rank plans {muted(f'{len(plans.workers)} workers, TP {tp} &times; PP {pp}')}", "".join(body),
                 verdict=plans.fits)
