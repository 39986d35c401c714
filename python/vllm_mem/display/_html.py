"""Building blocks of the notebook HTML: the frame, tables, call-outs and the SVG bar.

Everything is inline (``style`` attributes, no ``<style>`` element, no script), so a block
survives notebook sanitizers and reads the same wherever it is pasted. Text takes the page's
colour (``color: inherit``, SVG ``currentColor``), backgrounds are transparent or translucent,
and the segment colours are mid-tone (Tableau 10), so a block reads in light and dark themes.
Every string that can come from a user (model, GPU and stage names, messages quoting them)
goes through :func:`esc`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..units import GiB_bytes as GiB
from ..units import format_gib_text, format_mib

#: Segment colours, by the terms of vLLM's start-up log.
COLORS = {
    "weights": "#4e79a7",
    "activation": "#f28e2b",
    "non_torch": "#b07aa1",
    "cudagraph": "#76b7b2",
    "kv_cache": "#59a14f",
    "baseline": "#9c755f",
    "torch_allocated": "#4e79a7",
    "torch_cache": "#a0cbe8",
    "transient": "#ff9da7",
    "unused": "rgba(128,128,128,0.18)",
}
#: Extra colours for per-stage segments.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7")
FAIL = "#d62728"
GOOD = "#2ca02c"

# No quotes inside: every style attribute is single-quoted (unquoted multi-word family names are valid CSS).
FONT = ("font-family:system-ui,-apple-system,Segoe UI,Roboto,Helvetica Neue,Arial,DejaVu Sans,sans-serif;"
        "font-size:13px;line-height:1.45;color:inherit")
MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,DejaVu Sans Mono,monospace;font-size:12px"
NUM = "text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap"
MUTED = "opacity:0.75"
CELL = "padding:2px 8px;border:none;vertical-align:top;background:transparent;color:inherit"
HEAD_CELL = CELL + ";font-weight:600;border-bottom:1px solid rgba(128,128,128,0.45);text-align:left"


def esc(value: object) -> str:
    """HTML-escaped ``str(value)`` (quotes too: values also land in attributes)."""
    return html.escape(str(value), quote=True)


def size(num_bytes: int | float) -> str:
    """vLLM's ``format_gib`` with the unit; MiB below a tenth of a GiB, where GiB would read 0.0."""
    if abs(num_bytes) < GiB / 10:
        return f"{format_mib(int(num_bytes))} MiB"
    return f"{format_gib_text(int(num_bytes))} GiB"


def signed_size(num_bytes: int) -> str:
    return ("+" if num_bytes > 0 else "") + size(num_bytes)


def percent(num_bytes: int | float, total: int | float) -> str:
    return f"{100.0 * num_bytes / total:.1f}%" if total else "n/a"


def size_and_share(num_bytes: int | float, total: int | float) -> str:
    """``"12.34 GiB (15.6%)"``: absolute bytes beside the fraction of ``total``."""
    return f"{size(num_bytes)} ({percent(num_bytes, total)})" if total else size(num_bytes)


def frame(title: str, body: str, *, verdict: bool | None = None, verdict_text: str = "") -> str:
    """The outer block: a title line (already HTML) with an optional verdict badge, then ``body``."""
    border = "rgba(128,128,128,0.45)" if verdict is None else (GOOD if verdict else FAIL)
    badge = "" if verdict is None else pill(verdict_text or ("fits" if verdict else "does not fit"), verdict)
    return (f"<div class='vllm-mem' style='{FONT};border:1px solid rgba(128,128,128,0.45);"
            f"border-left:4px solid {border};border-radius:6px;padding:10px 14px;margin:4px 0;"
            f"max-width:780px;box-sizing:border-box;overflow-x:auto'>"
            f"<div style='display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 10px;margin-bottom:6px'>"
            f"<span style='font-weight:600;font-size:14px'>{title}</span>{badge}</div>{body}</div>")


def pill(text: str, good: bool) -> str:
    color = GOOD if good else FAIL
    return (f"<span style='display:inline-block;padding:0 8px;border-radius:9px;font-size:12px;"
            f"font-weight:600;color:#fff;background:{color};white-space:nowrap'>{esc(text)}</span>")


def muted(text_html: str) -> str:
    return f"<span style='{MUTED}'>{text_html}</span>"


def code(text: str) -> str:
    return (f"<code style='{MONO};padding:1px 5px;border-radius:3px;background:rgba(128,128,128,0.16);"
            f"color:inherit;white-space:pre-wrap;word-break:break-word'>{esc(text)}</code>")


def para(content_html: str, style: str = "") -> str:
    return f"<div style='margin:6px 0;{style}'>{content_html}</div>"


def callout(content_html: str, *, kind: str) -> str:
    """A boxed note: ``fail`` (red), ``change`` (the setting to change) or ``note`` (neutral)."""
    color = {"fail": FAIL, "change": "#4e79a7", "note": "rgba(128,128,128,0.6)", "ok": GOOD}[kind]
    tint = {"fail": "rgba(214,39,40,0.10)", "change": "rgba(78,121,167,0.12)",
            "note": "rgba(128,128,128,0.08)", "ok": "rgba(44,160,44,0.10)"}[kind]
    return (f"<div style='margin:8px 0;padding:6px 10px;border-left:3px solid {color};background:{tint};"
            f"border-radius:3px'>{content_html}</div>")


def table(header: Sequence[str] | None, rows: Iterable[Sequence[str]], *,
          numeric: Sequence[int] = (), row_styles: Sequence[str] | None = None, nowrap: Sequence[int] = (),
          compact: bool = False) -> str:
    """A plain table; cells are HTML (escape before), columns in ``numeric`` right-aligned and
    unbroken, columns in ``nowrap`` unbroken; ``compact`` narrows the cell padding."""
    pad = ";padding:2px 4px" if compact else ""
    # A bare <table> (its spacing is the browser's or the notebook's): what older callers look for.
    out = ["<div class='vllm-mem-scroll' style='margin:4px 0;overflow-x:auto'><table>"]
    if header is not None:
        out.append("<thead><tr>" + "".join(
            f"<th style='{HEAD_CELL}{pad};white-space:nowrap{';text-align:right' if i in numeric else ''}'>{h}</th>"
            for i, h in enumerate(header)) + "</tr></thead>")
    out.append("<tbody>")
    for n, row in enumerate(rows):
        extra = row_styles[n] if row_styles is not None and n < len(row_styles) else ""
        out.append(f"<tr style='background:transparent;{extra}'>" + "".join(
            f"<td style='{CELL}{pad}{';' + NUM if i in numeric else ''}"
            f"{';white-space:nowrap' if i in nowrap else ''}'>{cell}</td>" for i, cell in enumerate(row))
            + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def facts(pairs: Iterable[tuple[str, str]]) -> str:
    """A two-column table of label -> value (values are HTML)."""
    return table(None, [(muted(esc(label)), value) for label, value in pairs])


def swatch(color: str, *, outline: bool = False) -> str:
    border = "1px dashed rgba(128,128,128,0.9)" if outline else "1px solid rgba(128,128,128,0.35)"
    return (f"<span style='display:inline-block;width:11px;height:11px;border-radius:2px;background:{color};"
            f"border:{border};vertical-align:-1px;margin-right:6px'></span>")


@dataclass(frozen=True)
class Segment:
    """One part of a bar: its label, bytes and colour; ``highlight`` marks the failing phase."""

    label: str
    num_bytes: int
    color: str
    highlight: bool = False
    note: str = ""
    outline: bool = False


@dataclass(frozen=True)
class Marker:
    """A vertical line across the bar at ``num_bytes`` (e.g. vLLM's requested budget); ``excess``
    bytes drawn red after it are what the segments ask beyond that limit."""

    num_bytes: int
    label: str
    color: str = "currentColor"
    note: str = ""
    excess: int = 0


def bar(segments: Sequence[Segment], total: int, *, markers: Sequence[Marker] = (), height: int = 24,
        label: str = "memory", margin: int = 6) -> str:
    """An inline SVG stacked bar of ``segments`` (left to right) over ``total`` bytes.

    When the segments add up to more than ``total`` the bar is scaled to their sum, a line marks
    the device's end, and the part beyond it is red: memory the GPU does not have.
    """
    used = sum(max(0, s.num_bytes) for s in segments)
    scale = max(total, used, 1)

    def x(num_bytes: int) -> float:
        return 100.0 * num_bytes / scale

    parts: list[str] = []
    at = 0
    for s in segments:
        if s.num_bytes <= 0:
            continue
        title = f"{s.label}: {size_and_share(s.num_bytes, total)}"
        stroke = (f" stroke='{FAIL}' stroke-width='3'" if s.highlight else
                  " stroke='rgba(128,128,128,0.9)' stroke-width='1' stroke-dasharray='3 2'" if s.outline else
                  " stroke='rgba(255,255,255,0.55)' stroke-width='1'")
        parts.append(f"<rect x='{x(at):.3f}%' y='3' width='{x(s.num_bytes):.3f}%' height='{height - 6}'"
                     f" fill='{s.color}'{stroke}><title>{esc(title)}</title></rect>")
        at += s.num_bytes
    if used > total:
        parts.append(f"<rect x='{x(total):.3f}%' y='1' width='{x(used - total):.3f}%' height='{height - 2}'"
                     f" fill='{FAIL}' fill-opacity='0.35' stroke='{FAIL}' stroke-width='1.5'>"
                     f"<title>{esc('beyond the device: ' + size(used - total))}</title></rect>")
        markers = [*markers, Marker(total, "device total", FAIL)]
    for m in markers:
        if m.excess > 0 and 0 <= m.num_bytes < scale:
            width = min(m.excess, scale - m.num_bytes)
            tip = esc(f"over the {m.label}: {size(m.excess)}")
            parts.append(f"<rect x='{x(m.num_bytes):.3f}%' y='0' width='{x(width):.3f}%' height='{height}'"
                         f" fill='none' stroke='{FAIL}' stroke-width='2' stroke-dasharray='5 3'><title>{tip}</title>"
                         "</rect>")
        if 0 <= m.num_bytes <= scale:
            parts.append(f"<line x1='{x(m.num_bytes):.3f}%' x2='{x(m.num_bytes):.3f}%' y1='0' y2='{height}'"
                         f" stroke='{m.color}' stroke-width='2' stroke-dasharray='4 2'>"
                         f"<title>{esc(m.label + ': ' + size(m.num_bytes))}</title></line>")
    outline = (f"<rect x='0' y='3' width='{x(total):.3f}%' height='{height - 6}' fill='none'"
               f" stroke='rgba(128,128,128,0.7)' stroke-width='1'/>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='100%' height='{height}' role='img'"
            f" aria-label='{esc(label)}' style='display:block;margin:{margin}px 0;overflow:visible'>"
            + outline + "".join(parts) + "</svg>")


def legend(segments: Sequence[Segment], total: int, *, markers: Sequence[Marker] = (),
           header: Sequence[str] = ("", "bytes (share of device)", "")) -> str:
    """The bar's key: swatch and label, ``"12.34 GiB (15.6%)"``, and a note; the failing
    segment's row is red and bold."""
    rows: list[list[str]] = []
    styles: list[str] = []
    for s in segments:
        if s.outline and s.num_bytes <= 0:
            continue
        mark = f" <b style='color:{FAIL}'>&#9664; fails here</b>" if s.highlight else ""
        rows.append([swatch(s.color, outline=s.outline) + esc(s.label) + mark, size_and_share(s.num_bytes, total),
                     muted(esc(s.note))])
        styles.append(f"font-weight:600;box-shadow:inset 3px 0 0 {FAIL}" if s.highlight else "")
    beyond = sum(max(0, s.num_bytes) for s in segments) - total
    if beyond > 0:
        rows.append([swatch("rgba(214,39,40,0.35)") + f"<b style='color:{FAIL}'>beyond the device</b>",
                     f"<b style='color:{FAIL}'>{esc(size_and_share(beyond, total))}</b>",
                     muted("more than the GPU has")])
        styles.append("")
    for m in markers:
        rows.append([f"<span style='display:inline-block;width:11px;margin-right:6px;text-align:center;"
                     f"font-weight:700'>&#8942;</span>{esc(m.label)}", size_and_share(m.num_bytes, total),
                     muted(esc(m.note)) + (f" <b style='color:{FAIL};white-space:nowrap'>exceeded by "
                                           f"{esc(size(m.excess))}</b>" if m.excess > 0 else "")])
        styles.append("")
    return table(list(header), rows, numeric=(1,), row_styles=styles, nowrap=(0,))


def exactness_callouts(spec: Any, caveats: Sequence[str] | None = None) -> list[str]:
    """What a reader must know before trusting a number: a generic estimate (a model family
    read with allow_unknown) and the caveats of a supported family (a vision tower not counted),
    or ``caveats`` where the caller has more (a plan's own)."""
    out = []
    if spec.generic_estimate_reason:
        out.append(callout(f"<b style='color:{FAIL}'>Generic estimate</b> (allow_unknown): "
                           f"{esc(spec.generic_estimate_reason)}", kind="fail"))
    for caveat in spec.caveats if caveats is None else caveats:
        out.append(callout(f"<b>Caveat:</b> {esc(caveat)}", kind="change"))
    return out


def details(summary: str, body_html: str) -> str:
    return (f"<details style='margin:6px 0'><summary style='cursor:pointer'>{esc(summary)}</summary>"
            f"{body_html}</details>")


def sparkline(series: Sequence[tuple[str, str, Sequence[float]]], times: Sequence[float], *,
              width: int = 640, height: int = 120, label: str = "timeline") -> str:
    """An inline SVG line chart: ``series`` of (label, colour, values) over ``times`` (seconds).

    Long series are reduced to at most ``width`` points per line, keeping each bucket's maximum,
    so a short transient peak still shows."""
    n = len(times)
    if n == 0:
        return ""
    buckets = max(1, min(n, width))
    step = n / buckets
    idx = [(int(b * step), max(int(b * step) + 1, int((b + 1) * step))) for b in range(buckets)]
    t0, t1 = float(times[0]), float(times[-1])
    top = max((max(values) for _, _, values in series if len(values)), default=0.0)
    top = top if top > 0 else 1.0
    pad_l, pad_b = 4, 16

    def px(t: float) -> float:
        return pad_l + (width - pad_l - 4) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)

    def py(v: float) -> float:
        return 4 + (height - pad_b - 8) * (1.0 - v / top)

    lines = []
    for name, color, values in series:
        pts = []
        for lo, hi in idx:
            chunk = values[lo:hi]
            if len(chunk):
                pts.append(f"{px(float(times[lo])):.1f},{py(float(max(chunk))):.1f}")
        lines.append(f"<polyline fill='none' stroke='{color}' stroke-width='1.6' points='{' '.join(pts)}'>"
                     f"<title>{esc(name)}</title></polyline>")
    axis = (f"<line x1='{pad_l}' x2='{width - 4}' y1='{height - pad_b}' y2='{height - pad_b}'"
            f" stroke='currentColor' stroke-opacity='0.4'/>"
            f"<text x='{pad_l}' y='{height - 3}' font-size='10' fill='currentColor' fill-opacity='0.75'>0 ms</text>"
            f"<text x='{width - 4}' y='{height - 3}' font-size='10' text-anchor='end' fill='currentColor'"
            f" fill-opacity='0.75'>{(t1 - t0) * 1000:.1f} ms</text>"
            f"<text x='{pad_l + 2}' y='12' font-size='10' fill='currentColor' fill-opacity='0.75'>"
            f"{esc(size(top))}</text>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' width='100%'"
            f" style='display:block;max-width:{width}px;margin:6px 0' role='img' aria-label='{esc(label)}'>"
            + axis + "".join(lines) + "</svg>")
