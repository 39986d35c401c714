"""The matplotlib plots of vllm_mem.display (the optional ``plot`` extra), drawn with the Agg
backend: what each draws is read back from the returned artists; without matplotlib each says
which extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import display
from vllm_mem.testing import SimulatedDevice

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

GiB = 1 << 30
# The release these figures were written for: 0.21, the last whose V1 model runner serves every dense
# model with its CUDA-graph estimate in the KV budget (0.21; 0.22-0.24 give Model Runner V2 to listed
# architectures, Llama from 0.23); from 0.25 Model Runner V2 serves
# dense models and budgets no graphs (vllm_versions.json "model_runner"), which the newest profile
# would apply.
V1_GRAPHS = "0.21"

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def _keep(fig: Figure, name: str) -> None:
    """With ``VLLM_MEM_SCREENSHOTS=docs/img``, also save the figure there (docs/img/plot_*.png)."""
    out = os.environ.get("VLLM_MEM_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        fig.savefig(Path(out) / f"{name}.png", dpi=80)


def _bars(ax: Axes) -> list[Any]:
    return [p for p in ax.patches if p.get_width() > 0]


def test_plan_plot_draws_the_breakdown() -> None:
    plan = vllm_mem.plan(LLAMA, gpu="L4", vllm_version=V1_GRAPHS, tensor_parallel_size=2, max_model_len=32768)
    fig, ax = plan.plot()
    assert isinstance(fig, Figure) and isinstance(ax, Axes)
    widths = [p.get_width() for p in _bars(ax)]
    expected = [b / GiB for b in (plan.weights_bytes, plan.activation_peak_bytes, plan.non_torch_bytes,
                                  plan.cudagraph_bytes, plan.available_kv_cache_bytes)]
    assert widths[:5] == pytest.approx(expected)
    assert sum(widths) == pytest.approx(plan.total_memory_bytes / GiB)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    total = plan.total_memory_bytes
    assert (f"weights  {vllm_mem.format_gib(plan.weights_bytes)} GiB "
            f"({100 * plan.weights_bytes / total:.1f}%)") in labels
    assert "requested budget" in labels and "device total" in labels
    assert "fits" in ax.get_title(loc="left")
    _keep(fig, "plot_plan")


def test_plan_plot_outlines_the_failing_part_and_uses_given_axes() -> None:
    plan = vllm_mem.plan(LLAMA, gpu="L4", max_model_len=131072)
    fig, mine = plt.subplots()
    got_fig, ax = plan.plot(ax=mine)
    assert ax is mine and got_fig is fig
    red = [p for p in _bars(ax) if matplotlib.colors.to_hex(p.get_edgecolor()) == "#d62728"]
    assert [p.get_width() for p in red] == pytest.approx([plan.available_kv_cache_bytes / GiB])
    assert "does not fit: max_model_len" in ax.get_title(loc="left")


def test_plan_plot_with_pipeline_ranks() -> None:
    plan = vllm_mem.plan("meta-llama/Llama-3.1-70B-Instruct", gpu="H100-80GB", pipeline_parallel_size=2,
                         tensor_parallel_size=2, max_model_len=32768)
    _, ax = display.plot_plan(plan)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["PP rank 0", "PP rank 1"]
    for y, rank in enumerate(plan.ranks):
        on_row = [p for p in _bars(ax) if abs(p.get_y() + p.get_height() / 2 - y) < 1e-9]
        assert on_row[0].get_width() == pytest.approx(rank.weights_bytes / GiB)


def _sweep(as_frame: bool) -> Any:
    return vllm_mem.sweep(LLAMA, gpus=["L4", "A100-40GB"], tensor_parallel_size=[1, 2],
                          kv_cache_dtype=["auto", "fp8"], max_model_len=[8192, 32768, 131072], as_frame=as_frame)


def test_sweep_plot_one_line_per_group() -> None:
    cols = _sweep(as_frame=False)
    fig, ax = display.plot_sweep(cols, x="max_model_len", y="max_concurrency")
    lines = ax.get_lines()
    assert len(lines) == 8  # 2 GPUs x 2 TP x 2 KV dtypes
    labels = {line.get_label() for line in lines}
    assert "L4, TP 1, KV dtype fp8" in labels
    line = next(ln for ln in lines if ln.get_label() == "A100-40GB, TP 2, KV dtype auto")
    # colour by GPU, line style by TP, marker by KV dtype
    same_gpu = [ln for ln in lines if ln.get_label().startswith("A100-40GB")]
    assert len({ln.get_color() for ln in same_gpu}) == 1 and line.get_color() != lines[0].get_color()
    assert {ln.get_linestyle() for ln in same_gpu} == {"-", "--"}
    assert {ln.get_marker() for ln in same_gpu} == {"o", "s"}
    rows = [i for i in range(len(cols["gpu"])) if cols["gpu"][i] == "A100-40GB"
            and cols["tensor_parallel_size"][i] == 2 and cols["kv_cache_dtype"][i] == "auto"]
    assert list(line.get_xdata()) == [8192, 32768, 131072]
    assert list(line.get_ydata()) == pytest.approx([float(cols["max_concurrency"][i]) for i in rows])
    assert ax.get_xscale() == "log"
    # the settings that do not fit are red crosses
    crosses = [c for c in ax.collections if len(c.get_offsets())]
    assert sum(len(c.get_offsets()) for c in crosses) == int((~cols["fits"]).sum()) > 0
    _keep(fig, "plot_sweep")


def test_sweep_plot_from_a_frame_categorical_x_and_chosen_hue() -> None:
    pytest.importorskip("pandas")
    frame = _sweep(as_frame=True)
    _, ax = display.plot_sweep(frame, x="gpu", y="max_model_len_that_fits", hue="kv_cache_dtype")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["L4", "A100-40GB"]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["KV dtype auto", "KV dtype fp8",
                                                                         "does not fit"]
    red = [p for p in ax.patches if matplotlib.colors.to_hex(p.get_edgecolor()) == "#d62728"]
    assert len(red) == int((~frame["fits"]).sum()) > 0  # the settings that do not fit, outlined
    _, ax2 = display.SweepView(frame).plot(x="max_model_len", y="num_tokens", hue=("gpu",), log_x=False)
    assert ax2.get_xscale() == "linear" and len(ax2.get_lines()) == 2


def test_sweep_plot_names_an_unknown_column() -> None:
    with pytest.raises(KeyError, match="'concurrency' is not a column of the sweep"):
        display.plot_sweep(_sweep(as_frame=False), y="concurrency")
    with pytest.raises(KeyError, match="hue 'colour'"):
        display.plot_sweep(_sweep(as_frame=False), hue="colour")


def _profile(sample: bool) -> Any:
    with SimulatedDevice(total_memory=40 * GiB) as dev:
        baseline = vllm_mem.MemorySnapshot()
        dev.torch_alloc(8 * GiB)
        with vllm_mem.memory_profiling(baseline, weights_memory=8 * GiB,
                                       sample_interval_s=0.0005 if sample else None) as result:
            if sample:
                dev.wait_for_reads(5)
                dev.transient_non_torch(GiB, reads=5)
                dev.wait_for_reads(5)
    return result


def test_timeline_plot_driver_beside_allocator() -> None:
    result = _profile(sample=True)
    fig, (driver, allocator) = result.plot_timeline()
    assert isinstance(fig, Figure) and driver is not allocator
    timeline = result.timeline
    by_label = {line.get_label(): line for line in [*driver.get_lines(), *allocator.get_lines()]}
    in_use = by_label["in use (total - free)"]
    assert list(in_use.get_ydata()) == pytest.approx([v / GiB for v in timeline.cuda_memory.tolist()])
    assert list(in_use.get_xdata()) == pytest.approx([t * 1000 for t in timeline.time_s.tolist()])
    assert max(by_label["non-torch (in use - reserved)"].get_ydata()) == pytest.approx(
        timeline.non_torch_memory.max() / GiB)
    assert list(by_label["torch allocated"].get_ydata()) == pytest.approx(
        [v / GiB for v in timeline.torch_allocated.tolist()])
    readings = driver.collections[0].get_offsets()
    assert len(readings) == 2  # vLLM's two readings, before and after the profile run
    assert readings[0][1] == pytest.approx(result.before_profile.cuda_memory / GiB)
    _keep(fig, "plot_timeline")
    fig2, axes = display.plot_timeline(timeline)  # a bare timeline: no readings to mark
    assert len(axes[0].collections) == 0


def test_timeline_plot_without_a_sampler_says_so() -> None:
    with pytest.raises(ValueError, match="sample_interval_s"):
        _profile(sample=False).plot_timeline()
    with pytest.raises(TypeError, match="MemoryProfilingResult or MemoryTimeline"):
        display.plot_timeline(object())  # type: ignore[arg-type]


def test_plots_without_matplotlib_name_the_extra() -> None:
    probe = ("import sys\nsys.modules['matplotlib'] = None\nsys.modules['matplotlib.pyplot'] = None\n"
             "import vllm_mem\n"
             f"plan = vllm_mem.plan({LLAMA!r}, gpu='L4')\n"
             "plan._repr_html_()\n"  # the HTML needs no matplotlib
             "try:\n    plan.plot()\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120)
    assert "pip install 'vllm-mem[plot]'" in out.stdout
