"""A sweep (``vllm_mem.sweep``'s DataFrame or dict of NumPy columns) as HTML."""

from __future__ import annotations

from typing import Any

from ._html import COLORS, FAIL, Segment, bar, esc, frame, muted, para, size, swatch, table

#: The axes a sweep can vary, in the order they are shown.
AXES = ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "kv_cache_dtype", "dtype", "quantization",
        "max_model_len", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "enforce_eager")
SHORT_NAMES = {"tensor_parallel_size": "TP", "pipeline_parallel_size": "PP", "kv_cache_dtype": "KV dtype",
          "gpu_memory_utilization": "utilization", "max_num_seqs": "max_num_seqs",
          "max_num_batched_tokens": "batched tokens", "enforce_eager": "eager"}
_PARTS = (("weights_bytes", "weights", "weights"), ("activation_peak_bytes", "activation", "peak activation"),
          ("non_torch_bytes", "non_torch", "non-torch"), ("cudagraph_bytes", "cudagraph", "CUDA graph"),
          ("available_kv_cache_bytes", "kv_cache", "KV cache"))
MAX_ROWS = 40


def columns(frame_or_dict: Any) -> dict[str, list[Any]]:
    """The sweep's columns as plain lists, from a pandas DataFrame or a dict of arrays/lists."""
    if hasattr(frame_or_dict, "columns") and hasattr(frame_or_dict, "__getitem__") and \
            not isinstance(frame_or_dict, dict):
        keys = [str(c) for c in frame_or_dict.columns]
    elif isinstance(frame_or_dict, dict):
        keys = [str(k) for k in frame_or_dict]
    else:
        raise TypeError(f"a sweep result (pandas DataFrame or dict of columns) expected, got "
                        f"{type(frame_or_dict).__name__}")
    out: dict[str, list[Any]] = {}
    for key in keys:
        col = frame_or_dict[key]
        values = col.tolist() if hasattr(col, "tolist") else list(col)
        out[key] = values
    lengths = {len(v) for v in out.values()}
    if len(lengths) > 1:
        raise ValueError(f"sweep columns of different lengths: {sorted(lengths)}")
    return out


def varying_axes(cols: dict[str, list[Any]]) -> list[str]:
    """The input columns that take more than one value (the sweep's axes)."""
    return [a for a in AXES if a in cols and len({repr(v) for v in cols[a]}) > 1]


def _cell(value: Any) -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}"
    return esc(value)


def sweep_html(frame_or_dict: Any, *, max_rows: int = MAX_ROWS) -> str:
    cols = columns(frame_or_dict)
    n = len(next(iter(cols.values()), []))
    axes = varying_axes(cols)
    fits = cols.get("fits", [])
    num_fit = sum(1 for f in fits if f)
    shown = min(n, max_rows)
    header = [esc(SHORT_NAMES.get(a, a)) for a in axes] + ["", "bytes", "concurrency", "fits up to"]
    rows = []
    styles = []
    has_bars = all(key in cols for key, _, _ in _PARTS) and "total_memory_bytes" in cols
    for i in range(shown):
        ok = bool(fits[i]) if fits else True
        phase = cols.get("failure_phase", [None] * n)[i]
        verdict = "fits" if ok else f"<b style='color:{FAIL}'>{esc(phase or 'does not fit')}</b>"
        cell = ""
        if has_bars:
            segments = [Segment(label, max(0, int(cols[key][i])), COLORS[color]) for key, color, label in _PARTS]
            mini = bar(segments, int(cols["total_memory_bytes"][i]), height=14, label=f"row {i}", margin=1)
            cell = f"<div style='width:110px'>{mini}</div>"
        rows.append([_cell(cols[a][i]) for a in axes] + [
            verdict, cell,
            f"{float(cols['max_concurrency'][i]):.2f}&times;" if "max_concurrency" in cols else "&ndash;",
            _cell(cols.get("max_model_len_that_fits", [None] * n)[i])])
        styles.append("" if ok else f"box-shadow:inset 3px 0 0 {FAIL}")
    numeric = [len(axes) + 2, len(axes) + 3] + [
        j for j, a in enumerate(axes) if a not in ("gpu", "kv_cache_dtype", "dtype", "quantization")]
    fixed = [f"{SHORT_NAMES.get(a, a)} {_cell(cols[a][0])}" for a in AXES
             if a in cols and a not in axes and n and cols[a][0] is not None]
    body = [
        para(f"<b>{num_fit}</b> of {n} settings fit" + (muted(" · fixed: " + ", ".join(fixed)) if fixed else ""),
             "margin-top:0"),
        table(header, rows, numeric=numeric, row_styles=styles, nowrap=range(len(header)), compact=True),
    ]
    if has_bars:
        body.append(para(" ".join(f"<span style='white-space:nowrap;margin-right:10px'>{swatch(COLORS[c])}"
                                  f"{esc(label)}</span>" for _, c, label in _PARTS)
                         + muted(" · each bar is one GPU of the row; concurrency at the row's max_model_len; "
                                 "fits up to: the largest max_model_len that fits")))
    if n > shown:
        body.append(para(muted(f"&hellip; {n - shown:,} more rows (showing the first {shown})")))
    total = cols.get("total_memory_bytes", [])
    what = f" on {esc(size(min(total)))}&ndash;{esc(size(max(total)))} GPUs" if total and min(total) != max(total) \
        else ""
    return frame(f"Sweep {muted(f'{n:,} settings{what}')}", "".join(body))


class SweepView:
    """A sweep result to look at: HTML in a notebook, :meth:`plot` for a chart.

    ``vllm_mem.sweep`` keeps returning its DataFrame (or dict of columns); wrap it to display it:
    ``SweepView(vllm_mem.sweep(...))``.
    """

    def __init__(self, frame_or_dict: Any) -> None:
        self.data = frame_or_dict
        self._n = len(next(iter(columns(frame_or_dict).values()), []))

    def __repr__(self) -> str:
        return f"<SweepView {self._n} rows>"

    def _repr_html_(self) -> str:
        return sweep_html(self.data)

    def plot(self, x: str = "max_model_len", y: str = "max_concurrency", hue: str | tuple[str, ...] | None = None,
             **kwargs: Any) -> Any:
        """See :func:`vllm_mem.display.plot_sweep`."""
        from .plots import plot_sweep

        return plot_sweep(self.data, x=x, y=y, hue=hue, **kwargs)
