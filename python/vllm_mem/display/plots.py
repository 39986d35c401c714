"""Plots with matplotlib, the optional ``plot`` extra (``pip install 'vllm-mem[plot]'``).

matplotlib is imported inside each function, never when ``vllm_mem`` or ``vllm_mem.display``
is imported. Each function draws on the axes it is given (or a new figure) and returns the
matplotlib objects, for further styling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..units import GiB_bytes as GiB
from ._html import COLORS, size_and_share
from .sweep import SHORT_NAMES, columns, varying_axes

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..mem_utils import MemoryProfilingResult
    from ..planner import StartupPlan
    from ..sampler import MemoryTimeline

_EXTRA = "pip install 'vllm-mem[plot]'"


def matplotlib_rc_cycle() -> list[dict[str, Any]]:
    """matplotlib's current colour cycle (its default: Tableau 10)."""
    import matplotlib

    return list(matplotlib.rcParams["axes.prop_cycle"])


def _pyplot() -> ModuleType:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"vllm_mem's plots need matplotlib, the optional 'plot' extra: {_EXTRA} "
                          f"(or pip install matplotlib)") from exc
    return plt


def _figure_and_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    plt = _pyplot()
    if ax is not None:
        fig = ax.get_figure()
        if fig is None:
            raise ValueError("ax: the axes belong to no figure")
        return fig, ax  # type: ignore[return-value]
    fig, new_ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, new_ax


# --- the start-up plan ------------------------------------------------------------------------
def plot_plan(plan: StartupPlan, ax: Axes | None = None) -> tuple[Figure, Axes]:
    """The plan's breakdown as a horizontal stacked bar (one per pipeline rank), in GiB, with
    vLLM's requested budget and the device's total marked; the failing part outlined in red.

    Returns ``(figure, axes)``.
    """
    from .plan import plan_segments

    fig, ax = _figure_and_axes(ax, (9.0, 2.6 if len(plan.ranks) <= 1 else 1.6 + 0.6 * len(plan.ranks)))
    total = plan.total_memory_bytes
    segments, markers = plan_segments(plan)
    rows: list[tuple[str, list[tuple[str, int, str, bool, bool]]]] = []
    if len(plan.ranks) > 1:
        labels = {s.label: (s.color, s.highlight, s.outline) for s in segments}
        for r in plan.ranks:
            kv = max(0, r.available_kv_cache_bytes)
            sizes = [("weights", r.weights_bytes), ("peak activation", r.activation_peak_bytes),
                     ("non-torch", r.non_torch_bytes), ("CUDA graph", r.cudagraph_bytes), ("KV cache", kv)]
            used = sum(max(0, b) for _, b in sizes)
            baseline = max(0, total - plan.free_memory_bytes)
            sizes += [("unused", max(0, total - used - baseline)), ("in use at start-up", baseline)]
            hot = r.pp_rank == plan.tightest_pp_rank
            rows.append((f"PP rank {r.pp_rank}", [(lab, b, labels[lab][0], labels[lab][1] and hot, labels[lab][2])
                                                  for lab, b in sizes]))
    else:
        rows.append(("per GPU", [(s.label, s.num_bytes, s.color, s.highlight, s.outline) for s in segments]))
    seen: set[str] = set()
    for y, (_, parts) in enumerate(rows):
        left = 0.0
        for label, num_bytes, color, hot, outline in parts:
            if num_bytes <= 0:
                continue
            width = num_bytes / GiB
            legend_label = None if label in seen else f"{label}  {size_and_share(num_bytes, total)}"
            seen.add(label)
            ax.barh(y, width, left=left, height=0.6, label=legend_label,
                    color="none" if outline else color, hatch="//" if outline else None,
                    edgecolor="#d62728" if hot else ("0.55" if outline else "white"),
                    linewidth=2.5 if hot else 0.8)
            left += width
    for m in markers:
        ax.axvline(m.num_bytes / GiB, color="0.3", linestyle="--", linewidth=1.2, label=m.label)
    ax.axvline(total / GiB, color="#d62728" if not plan.fits else "0.15", linewidth=1.2, label="device total")
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("GiB")
    name = plan._spec.name or plan._spec.model_type
    gpu = plan._p.inputs.gpu_name or "GPU"
    verdict = "fits" if plan.fits else f"does not fit: {plan.failure_phase}"
    ax.set_title(f"{name} on {gpu}: {verdict}", loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.margins(x=0.01)
    return fig, ax


# --- a sweep ----------------------------------------------------------------------------------
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _group_label(hues: Sequence[str], key: tuple[Any, ...]) -> str:
    """``"L4, TP 2, KV dtype fp8"``: the GPU by its name, other columns by their short name."""
    return ", ".join(str(k) if h == "gpu" else f"{SHORT_NAMES.get(h, h)} {k}" for h, k in zip(hues, key, strict=True))


_LINESTYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_sweep(frame: Any, x: str = "max_model_len", y: str = "max_concurrency",
               hue: str | Sequence[str] | None = None, ax: Axes | None = None,
               log_x: bool | None = None) -> tuple[Figure, Axes]:
    """One line per ``hue`` group of a sweep (``vllm_mem.sweep``'s DataFrame or dict of
    columns): ``y`` against ``x``, with the settings that do not fit drawn as red crosses.

    Parameters
    ----------
    frame
        The sweep result.
    x, y : str
        Column names; ``x`` may be categorical (``"gpu"``), then the groups are bars side by side.
    hue : str or sequence of str, optional
        The columns that make a group (e.g. ``("gpu", "tensor_parallel_size", "kv_cache_dtype")``);
        default: every other axis the sweep varied.
    log_x : bool, optional
        A base-2 x axis; default: when ``x`` is numeric and spans a factor of 8 or more.

    Returns ``(figure, axes)``.
    """
    cols = columns(frame)
    for name in (x, y):
        if name not in cols:
            raise KeyError(f"{name!r} is not a column of the sweep (columns: {', '.join(sorted(cols))})")
    hues = ([hue] if isinstance(hue, str) else list(hue)) if hue is not None else \
        [a for a in varying_axes(cols) if a != x]
    for name in hues:
        if name not in cols:
            raise KeyError(f"hue {name!r} is not a column of the sweep")
    n = len(cols[x])
    fits = [bool(f) for f in cols.get("fits", [True] * n)]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in range(n):
        groups.setdefault(tuple(cols[h][i] for h in hues), []).append(i)
    fig, ax = _figure_and_axes(ax, (8.0, 4.5))
    numeric_x = all(_is_number(v) for v in cols[x])
    if numeric_x:
        # The first hue column picks the colour, the second the line style, the third the marker.
        levels = [list(dict.fromkeys(repr(k[n]) for k in groups)) for n in range(len(hues))]
        palette = [c["color"] for c in matplotlib_rc_cycle()]
        for key, rows in groups.items():
            rows = sorted(rows, key=lambda i: cols[x][i])
            xs = [cols[x][i] for i in rows]
            ys = [cols[y][i] for i in rows]
            style: dict[str, Any] = {"marker": "o", "linestyle": "-"}
            for n, (name, cycle) in enumerate((("color", palette), ("linestyle", _LINESTYLES),
                                               ("marker", _MARKERS))):
                if n < len(hues) and (n < 2 or len(hues) > 2):
                    style[name] = cycle[levels[n].index(repr(key[n])) % len(cycle)]
            if len(hues) > 3:  # more groups than styles can tell apart: let matplotlib cycle colours
                style.pop("color")
            ax.plot(xs, ys, linewidth=1.8, label=_group_label(hues, key) or y, **style)
            bad = [i for i in rows if not fits[i]]
            if bad:
                ax.scatter([cols[x][i] for i in bad], [cols[y][i] for i in bad], marker="x", s=60,
                           color="#d62728", zorder=3, linewidths=2)
        xs_all = [float(v) for v in cols[x]]
        positive = [v for v in xs_all if v > 0]
        wide = bool(positive) and len(positive) == len(xs_all) and max(positive) / min(positive) >= 8
        if log_x if log_x is not None else wide:
            ax.set_xscale("log", base=2)
    else:
        categories = list(dict.fromkeys(str(v) for v in cols[x]))
        width = 0.8 / max(1, len(groups))
        for g, (key, rows) in enumerate(groups.items()):
            label = _group_label(hues, key) or y
            pos = [categories.index(str(cols[x][i])) - 0.4 + width * (g + 0.5) for i in rows]
            ax.bar(pos, [cols[y][i] for i in rows], width=width, label=label,
                   edgecolor=["#d62728" if not fits[i] else "white" for i in rows],
                   linewidth=[2.0 if not fits[i] else 0.5 for i in rows])
        ax.set_xticks(range(len(categories)), categories)
    if any(not f for f in fits):
        ax.scatter([], [], marker="x", color="#d62728", label="does not fit")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    return fig, ax


# --- the sampler's timeline -------------------------------------------------------------------
def plot_timeline(profile: MemoryProfilingResult | MemoryTimeline,
                  axes: Sequence[Axes] | None = None) -> tuple[Figure, tuple[Axes, Axes]]:
    """The sampler's timeline: the driver's view (in use = total - free, and its non-torch part)
    beside the allocator's (torch reserved and allocated), in GiB over milliseconds.

    ``profile`` is a :class:`~vllm_mem.MemoryProfilingResult` with a timeline (``memory_profiling(...,
    sample_interval_s=...)``), or a :class:`~vllm_mem.MemoryTimeline`. With a profiling result,
    vLLM's two readings (before and after the profile run) are marked on the driver's view.

    Returns ``(figure, (driver_axes, allocator_axes))``.
    """
    timeline: Any = getattr(profile, "timeline", profile)
    if timeline is None:
        raise ValueError("this profiling result has no timeline: pass sample_interval_s to memory_profiling()")
    if not hasattr(timeline, "time_s"):
        raise TypeError(f"a MemoryProfilingResult or MemoryTimeline expected, got {type(profile).__name__}")
    plt = _pyplot()
    if axes is not None:
        if len(axes) != 2:
            raise ValueError("axes: two axes expected (driver's view, allocator's view)")
        ax_driver, ax_alloc = axes[0], axes[1]
        fig = ax_driver.get_figure()
    else:
        fig, (ax_driver, ax_alloc) = plt.subplots(1, 2, figsize=(11.0, 4.0), sharex=True, sharey=True,
                                                  layout="constrained")
    t = [v * 1000.0 for v in timeline.time_s.tolist()]

    def gib(name: str) -> list[float]:
        return [v / GiB for v in getattr(timeline, name).tolist()]

    in_use, non_torch = gib("cuda_memory"), gib("non_torch_memory")
    ax_driver.plot(t, in_use, color="#e15759", linewidth=1.8, label="in use (total - free)")
    ax_driver.plot(t, non_torch, color=COLORS["non_torch"], linewidth=1.5, label="non-torch (in use - reserved)")
    if non_torch:
        peak = max(range(len(non_torch)), key=non_torch.__getitem__)
        ax_driver.annotate(f"non-torch peak {non_torch[peak]:.2f} GiB", (t[peak], non_torch[peak]),
                           xytext=(8, 8), textcoords="offset points", fontsize="small")
    before = getattr(profile, "before_profile", None)
    after = getattr(profile, "after_profile", None)
    if before is not None and after is not None and before.total_memory:
        start = float(timeline.start_timestamp)
        xs = [(s.timestamp - start) * 1000.0 for s in (before, after)]
        ax_driver.scatter(xs, [s.cuda_memory / GiB for s in (before, after)], marker="D", s=40, color="0.2",
                          zorder=3, label="vLLM's readings (before, after the run)")
    ax_driver.set_title("driver's view (cudaMemGetInfo)", loc="left")
    ax_alloc.plot(t, gib("torch_reserved"), color=COLORS["weights"], linewidth=1.8, label="torch reserved")
    ax_alloc.plot(t, gib("torch_allocated"), color=COLORS["torch_cache"], linewidth=1.5, linestyle="--",
                  label="torch allocated")
    ax_alloc.set_title("allocator's view (torch caching allocator)", loc="left")
    for ax in (ax_driver, ax_alloc):
        ax.set_xlabel("ms since sampling started")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        # Below the axes: a timeline can fill any corner of them.
        ax.legend(fontsize="small", frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    ax_driver.set_ylabel("GiB")
    if fig is None:
        raise ValueError("axes: the axes belong to no figure")
    return fig, (ax_driver, ax_alloc)  # type: ignore[return-value]
