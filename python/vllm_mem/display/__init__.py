"""How results look in a notebook: styled HTML for every result type, and matplotlib plots.

Each result type's ``_repr_html_`` delegates here, so Jupyter shows a self-contained block
(inline CSS, no JavaScript, readable in light and dark themes) with an inline SVG bar of where
the GPU's bytes go in the terms of vLLM's log (weights, peak activation, non-torch, CUDA graph,
KV cache, unused), sizes as vLLM's ``format_gib`` prints them beside their share of the device,
the failing phase highlighted and the one setting to change.

The plots need matplotlib, the optional ``plot`` extra (``pip install 'vllm-mem[plot]'``);
matplotlib, NumPy and pandas are never imported by importing this package.

Examples
--------
>>> import vllm_mem
>>> from vllm_mem import display
>>> plan = vllm_mem.plan("meta-llama/Llama-3.1-8B-Instruct", gpu="L4", max_model_len=32768)
>>> html = plan._repr_html_()                      # what Jupyter shows
>>> fig, ax = plan.plot()                          # doctest: +SKIP
>>> display.SweepView(vllm_mem.sweep(...))         # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from .memory import profiling_html, snapshot_difference_html, snapshot_html
from .model import kv_capacity_html, model_spec_html
from .plan import plan_html
from .plots import plot_plan, plot_sweep, plot_timeline
from .stages import rank_plans_html, stage_check_html
from .sweep import SweepView, sweep_html

__all__ = [
    "SweepView",
    "kv_capacity_html",
    "model_spec_html",
    "plan_html",
    "plot_plan",
    "plot_sweep",
    "plot_timeline",
    "profiling_html",
    "rank_plans_html",
    "snapshot_difference_html",
    "snapshot_html",
    "stage_check_html",
    "sweep_html",
    "to_html",
]


def to_html(obj: Any) -> str:
    """The HTML block of any vllm_mem result (a sweep's DataFrame or dict of columns included).

    Every result type has its own ``_repr_html_`` (what Jupyter calls), so this dispatches through
    it: a new result type needs no branch here. A sweep's plain table (a dict of columns or a
    pandas DataFrame, whose own ``_repr_html_`` is pandas' table) gets the sweep view."""
    render = getattr(type(obj), "_repr_html_", None)
    if callable(render) and type(obj).__module__.split(".")[0] == "vllm_mem":
        return str(render(obj))
    if isinstance(obj, dict) or hasattr(obj, "columns"):
        return sweep_html(obj)
    raise TypeError(f"no HTML view for {type(obj).__name__}")
