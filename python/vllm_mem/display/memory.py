"""Snapshots, their differences and profiling results as HTML."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._html import (
    COLORS,
    FAIL,
    Segment,
    bar,
    callout,
    code,
    esc,
    facts,
    frame,
    legend,
    muted,
    para,
    signed_size,
    size,
    size_and_share,
    sparkline,
    table,
)

if TYPE_CHECKING:
    from ..mem_utils import MemoryProfilingResult, MemorySnapshot
    from ..sampler import MemoryTimeline

_TORCH_STATUS_WORDS = {
    "no_torch": "torch is not loaded",
    "not_initialized": "torch's CUDA allocator is not initialised",
    "no_cuda_allocator": "torch has no CUDA caching allocator",
    "no_provider": "torch is imported but vllm_mem has no torch provider and torch.cuda could not be read",
}


def _torch_note(snap: MemorySnapshot) -> str:
    status = snap.torch_status
    if status == "available":
        return ""
    words = _TORCH_STATUS_WORDS.get(status, status)
    return callout(f"torch figures are 0: {esc(words)} ({code(status)}); the driver's figures are real.",
                   kind="note")


def is_difference(snap: MemorySnapshot) -> bool:
    """A snapshot made by ``a - b``: no device total (the same device's totals cancel) and a
    timestamp that is a duration, not a date."""
    return snap.total_memory == 0 and snap.timestamp != 0.0


def snapshot_segments(snap: MemorySnapshot) -> list[Segment]:
    cache = max(0, snap.torch_memory - snap.torch_allocated)
    return [
        Segment("torch allocated", snap.torch_allocated, COLORS["torch_allocated"],
                note="tensors alive (allocated_bytes.all.current)"),
        Segment("torch cache", cache, COLORS["torch_cache"], note="reserved, not allocated (freed by empty_cache)"),
        Segment("non-torch", max(0, snap.non_torch_memory), COLORS["non_torch"],
                note="CUDA context, NCCL, workspaces, other processes"),
        Segment("free", max(0, snap.free_memory), COLORS["unused"], note="cudaMemGetInfo free", outline=True),
    ]


def _when(timestamp: float) -> str:
    try:
        return datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{timestamp}"


def snapshot_html(snap: MemorySnapshot) -> str:
    if is_difference(snap):
        return snapshot_difference_html(snap)
    device = esc(str(snap.device_))
    if snap.total_memory == 0:
        return frame(f"MemorySnapshot {muted(device)}", para("Not measured yet (call <code>measure()</code>)."))
    total = snap.total_memory
    segments = snapshot_segments(snap)
    body = [
        para(f"{esc(size_and_share(snap.cuda_memory, total))} in use of {esc(size(total))}"
             + muted(f" · measured {esc(_when(snap.timestamp))}")
             + (muted(" · integrated GPU: free is the host's MemAvailable") if snap.integrated else ""),
             "margin-top:0"),
        bar(segments, total, label="device memory"),
        legend(segments, total),
        facts([("torch peak", esc(size(snap.torch_peak))), ("torch reserved", esc(size(snap.torch_memory)))]),
        _torch_note(snap),
    ]
    return frame(f"MemorySnapshot {muted(device)}", "".join(body))


_DIFF_FIELDS = (("free_memory", "free"), ("cuda_memory", "in use (driver)"), ("torch_memory", "torch reserved"),
                ("torch_allocated", "torch allocated"), ("torch_peak", "torch peak"),
                ("non_torch_memory", "non-torch"))


def _signed_bars(rows: Sequence[tuple[str, int]]) -> str:
    """A row of signed bars centred on zero: growth right, shrinking left; red where less memory is
    left (use grew, or free shrank), green where more is."""
    top = max((abs(v) for _, v in rows), default=0) or 1
    out = []
    for label, value in rows:
        w = 48.0 * abs(value) / top
        x = 50.0 if value >= 0 else 50.0 - w
        costly = value < 0 if label == "free" else value > 0
        color = FAIL if costly else "#2ca02c"
        rect = (f"<rect x='{x:.3f}%' y='2' width='{w:.3f}%' height='10' fill='{color}' fill-opacity='0.75'>"
                f"<title>{esc(label)}: {esc(signed_size(value))}</title></rect>") if value else ""
        out.append("<svg xmlns='http://www.w3.org/2000/svg' width='160' height='14' role='img'"
                   f" aria-label='{esc(label)}' style='display:block'>"
                   "<line x1='50%' x2='50%' y1='0' y2='14' stroke='currentColor' stroke-opacity='0.5'/>"
                   + rect + "</svg>")
    return "".join(out)


def snapshot_difference_html(snap: MemorySnapshot) -> str:
    rows = [(label, int(getattr(snap, name))) for name, label in _DIFF_FIELDS]
    bars = _signed_bars(rows).split("</svg>")
    table_rows = [[esc(label), esc(signed_size(value)), bars[i] + "</svg>"] for i, (label, value) in enumerate(rows)]
    body = [
        para(f"Change over {snap.timestamp:.3f} s " + muted("(later snapshot minus earlier)"),
             "margin-top:0"),
        table(["", "change", muted("&minus; shrank | grew +")], table_rows, numeric=(1,)),
        para(muted("red: less memory left (use grew or free shrank); green: more left")),
    ]
    return frame(f"MemorySnapshot difference {muted(esc(str(snap.device_)))}", "".join(body))


def profiling_segments(result: MemoryProfilingResult) -> list[Segment]:
    """The device at the profile run's peak, in vLLM's terms: what was there before the
    instance, weights, the torch peak increase, non-torch growth, the transient non-torch peak
    the two-point reading misses, and what stayed free."""
    base = result.before_create
    baseline = max(0, base.cuda_memory)
    transient = max(0, result.non_torch_peak_increase - max(0, result.non_torch_increase))
    segments = [
        Segment("in use before the instance", baseline, COLORS["baseline"],
                note="baseline snapshot: CUDA context, other processes"),
        Segment("weights", max(0, result.weights_memory), COLORS["weights"], note="log: weights memory"),
        Segment("peak activation", max(0, result.torch_peak_increase), COLORS["activation"],
                note="log: torch peak memory increase"),
        Segment("non-torch", max(0, result.non_torch_increase), COLORS["non_torch"],
                note="log: non-torch forward increase memory"),
        Segment("transient non-torch", transient, COLORS["transient"],
                note="sampler's peak that vLLM's readings miss"),
    ]
    used = sum(s.num_bytes for s in segments)
    segments.append(Segment("unused", max(0, base.total_memory - used), COLORS["unused"], outline=True))
    return segments


def _columns(timeline: MemoryTimeline) -> dict[str, list[Any]]:
    return {name: list(getattr(timeline, name).tolist()) for name in
            ("time_s", "cuda_memory", "torch_reserved", "torch_allocated", "non_torch_memory")}


def profiling_html(result: MemoryProfilingResult) -> str:
    total = result.before_create.total_memory
    line = repr(result)
    body = [para(code(line), "margin-top:0")]
    if total > 0:
        segments = profiling_segments(result)
        body.append(para("<b>The device at the profile run's peak</b>", "margin-bottom:0"))
        body.append(bar(segments, total, label="device memory during profiling"))
        body.append(legend(segments, total))
    extra = [("non_kv_cache_memory", esc(size_and_share(result.non_kv_cache_memory, total)))]
    if result.timeline is not None or result.non_torch_peak_increase != result.non_torch_increase:
        extra.append(("non-torch peak increase (sampler)", esc(size(result.non_torch_peak_increase))))
        extra.append(("peak in use (sampler)", esc(size_and_share(result.peak_cuda_memory, total))))
    extra += [("transient peak headroom", esc(size(result.transient_peak_headroom))),
              ("total consumed", esc(size(result.total_consumed)))]
    body.append(facts(extra))
    timeline = result.timeline
    if timeline is not None and len(timeline) > 1:
        cols = _columns(timeline)
        series = [("in use (driver: total - free)", "#e15759", cols["cuda_memory"]),
                  ("torch reserved (allocator)", COLORS["weights"], cols["torch_reserved"]),
                  ("torch allocated (allocator)", COLORS["torch_cache"], cols["torch_allocated"]),
                  ("non-torch (driver - allocator)", COLORS["non_torch"], cols["non_torch_memory"])]
        key = " ".join(f"<span style='white-space:nowrap;margin-right:10px'><span style='display:inline-block;"
                       f"width:14px;height:3px;background:{c};vertical-align:3px;margin-right:4px'></span>"
                       f"{esc(n)}</span>" for n, c, _ in series)
        body.append(para(f"<b>Sampler timeline</b> {muted(f'({len(timeline):,} samples)')}", "margin-bottom:0"))
        body.append(sparkline(series, cols["time_s"], label="sampler timeline"))
        body.append(para(key, "margin-top:0"))
    note = _torch_note(result.before_create) if total > 0 else ""
    return frame("Memory profiling", "".join(body) + note)
