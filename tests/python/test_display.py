"""The notebook HTML of every result type (vllm_mem.display): what each block says, that user
strings are escaped, that it stays self-contained (no script, no external resource), that the
SVG bar's widths are the bytes' shares, and that importing it loads no heavy module.

``samples()`` builds one object of each result type; test_display_browser.py renders the same
objects in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from typing import Any

import pytest
import vllm_mem
from vllm_mem import display
from vllm_mem.testing import SimulatedDevice

GiB = 1 << 30
# The release these figures were written for: 0.21, the last whose V1 model runner serves every dense
# model with its CUDA-graph estimate in the KV budget (0.21; 0.22-0.24 give Model Runner V2 to listed
# architectures, Llama from 0.23); from 0.25 Model Runner V2 serves
# dense models and budgets no graphs (vllm_versions.json "model_runner"), which the newest profile
# would apply.
V1_GRAPHS = "0.21"

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _snapshots() -> tuple[Any, Any]:
    with SimulatedDevice(total_memory=80 * GiB) as dev:
        dev.other_process_alloc(2 * GiB)
        dev.non_torch_alloc(GiB // 2)
        before = vllm_mem.MemorySnapshot()
        before.timestamp -= 1.25  # a second and a bit earlier
        dev.torch_alloc(20 * GiB)
        dev.torch_free(4 * GiB)
        dev.non_torch_alloc(GiB)
        after = vllm_mem.MemorySnapshot()
    return before, after


def _profiling() -> Any:
    with SimulatedDevice(total_memory=80 * GiB) as dev:
        dev.other_process_alloc(GiB)
        baseline = vllm_mem.MemorySnapshot()
        dev.torch_alloc(15 * GiB)  # the weights
        with vllm_mem.memory_profiling(baseline, weights_memory=15 * GiB, sample_interval_s=0.0005) as result:
            dev.wait_for_reads(20)
            with dev.torch_tensor(3 * GiB):  # the forward pass's activations
                dev.wait_for_reads(20)
            dev.wait_for_reads(20)
            dev.transient_non_torch(2 * GiB, reads=20)  # a workspace vLLM's two readings miss
            dev.non_torch_alloc(GiB // 4)  # NCCL / cuBLAS state that stays
            dev.wait_for_reads(20)
    return result


def samples() -> dict[str, Any]:
    """One object of each result type, named as its screenshot in docs/img/."""
    llama = vllm_mem.ModelSpec.from_hf_config(LLAMA)
    before, after = _snapshots()
    return {
        "model_spec": vllm_mem.ModelSpec.from_hf_config("google/gemma-3-27b-it"),
        "kv_capacity": vllm_mem.kv_cache_capacity(llama, available_bytes=58 * GiB, max_model_len=8192),
        "snapshot": after,
        "snapshot_difference": after - before,
        "profiling": _profiling(),
        "plan": vllm_mem.plan(llama, gpu="L4", max_model_len=131072),
        "plan_two_gpus": vllm_mem.plan(llama, gpu="L4", tensor_parallel_size=2, max_model_len=32768,
                                       vllm_version=V1_GRAPHS),
        "stage_check": vllm_mem.check_stages("qwen3_omni_moe.overcommitted", gpus="H100-80GB"),
        "rank_plans": vllm_mem.plan_ranks("meta-llama/Llama-3.1-70B-Instruct", gpus="H100-80GB",
                                          tensor_parallel_size=2, pipeline_parallel_size=2,
                                          max_model_len=32768, overhead_bytes=3 * GiB),
        "sweep": display.SweepView(vllm_mem.sweep(
            LLAMA, gpus=["L4", "A100-40GB"], tensor_parallel_size=[1, 2], kv_cache_dtype=["auto", "fp8"],
            max_model_len=[8192, 131072], as_frame=False)),
    }


@pytest.fixture(scope="module")
def objects() -> dict[str, Any]:
    return samples()


def _text(block: str) -> str:
    """The block's visible text (tags dropped, entities decoded, spaces collapsed)."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", block)))


def _bar_widths(block: str) -> list[float]:
    """The first SVG bar's segment widths (percent), in order."""
    svg = block[block.index("<svg"):block.index("</svg>")]
    return [float(w) for w in re.findall(r"<rect x='[\d.]+%' y='3' width='([\d.]+)%'", svg)]


# --- every type -------------------------------------------------------------------------------
def test_every_result_type_renders_through_repr_html(objects: dict[str, Any]) -> None:
    for name, obj in objects.items():
        block = obj._repr_html_()
        assert block == display.to_html(obj), name
        assert block.startswith("<div class='vllm-mem'") and block.endswith("</div>"), name
        assert "<svg" in block, name
        # self-contained: no script, no event handler, no external resource, no <style> to leak
        lowered = block.lower()
        for forbidden in ("<script", "javascript:", " onload=", " onclick=", "<style", "<link", "http://", "https://",
                          "url("):
            if forbidden in ("http://", "https://"):
                lowered = lowered.replace("http://www.w3.org/2000/svg", "")
                lowered = lowered.replace("https://docs.vllm.ai", "")  # quoted in vLLM's own message
            assert forbidden not in lowered, (name, forbidden)
        # every element the block opens, it closes (a cut-off block would swallow the notebook's next output)
        for tag in ("div", "table", "svg", "details", "span", "code"):
            assert block.count(f"<{tag}") == block.count(f"</{tag}>"), (name, tag)


def test_plain_repr_stays_one_short_line(objects: dict[str, Any]) -> None:
    for name, obj in objects.items():
        if name in ("snapshot", "snapshot_difference", "profiling"):
            continue  # vLLM's own repr text, kept as vLLM prints it
        text = repr(obj)
        assert "\n" not in text and len(text) <= 200, (name, text)


# --- what each block says ----------------------------------------------------------------------
def test_failing_plan_names_phase_and_one_setting(objects: dict[str, Any]) -> None:
    plan = objects["plan"]
    assert not plan.fits and plan.failure_phase == "max_model_len"
    block = plan._repr_html_()
    text = _text(block)
    assert "does not fit" in text and "Fails at the max_model_len check" in text
    best = next(s for s in plan.suggestions if s.fits_after)
    assert f"Change this: {best.setting}" in text
    # the KV-cache row is the failing one, marked in the legend and outlined in the bar
    assert re.search(r"KV cache <b[^>]*>&#9664; fails here</b></td>", block)
    assert "stroke='#d62728' stroke-width='3'" in block
    # absolute bytes beside the share of the device, as vLLM's format_gib prints them
    total = plan.total_memory_bytes
    share = f"{vllm_mem.format_gib(plan.weights_bytes)} GiB ({100 * plan.weights_bytes / total:.1f}%)"
    assert share in text


def test_fitting_plan_on_two_gpus(objects: dict[str, Any]) -> None:
    plan = objects["plan_two_gpus"]
    assert plan.fits
    text = _text(plan._repr_html_())
    assert "on 2× L4" in text and "fits" in text and "Change this" not in text
    assert "fails here" not in text
    kv = plan.kv_cache
    assert kv is not None and all(line in text for line in kv.log_lines)


def test_plan_bar_widths_are_the_shares_of_the_device(objects: dict[str, Any]) -> None:
    plan = objects["plan_two_gpus"]
    widths = _bar_widths(plan._repr_html_())
    total = plan.total_memory_bytes
    expected = [b / total * 100 for b in (plan.weights_bytes, plan.activation_peak_bytes, plan.non_torch_bytes,
                                          plan.cudagraph_bytes, plan.available_kv_cache_bytes)]
    assert widths[:5] == pytest.approx(expected, abs=1e-3)
    assert sum(widths) == pytest.approx(100.0, abs=1e-2)  # unused and held-at-start-up complete the device


def test_plan_that_fails_loading_weights_scales_past_the_device() -> None:
    plan = vllm_mem.plan("meta-llama/Llama-3.1-70B-Instruct", gpu="L4", max_model_len=8192)
    assert plan.failure_phase == "weights"
    block = plan._repr_html_()
    assert "beyond the device" in block and "device total" in block
    assert re.search(r"weights <b[^>]*>&#9664; fails here</b></td>", block)
    assert sum(_bar_widths(block)) == pytest.approx(100.0, abs=1e-2)  # scaled to the bytes asked for


def test_plan_over_its_budget_marks_the_excess() -> None:
    plan = vllm_mem.plan(LLAMA, gpu="L4", vllm_version=V1_GRAPHS, gpu_memory_utilization=0.45, max_model_len=8192)
    assert plan.failure_phase == "no_kv_blocks"
    block = plan._repr_html_()
    text = _text(block)
    excess = plan.weights_bytes + plan.activation_peak_bytes + plan.non_torch_bytes + plan.cudagraph_bytes \
        - plan.requested_bytes
    assert f"exceeded by {vllm_mem.format_gib(excess)} GiB" in text
    assert "fill='none' stroke='#d62728' stroke-width='2' stroke-dasharray='5 3'" in block
    assert "Change this: --gpu-memory-utilization" in text
    assert "exceeded by" not in _text(vllm_mem.plan(LLAMA, gpu="L4", vllm_version=V1_GRAPHS,
                                                    max_model_len=8192)._repr_html_())


def test_model_spec_block(objects: dict[str, Any]) -> None:
    spec = objects["model_spec"]
    block = spec._repr_html_()
    text = _text(block)
    assert spec.name in text and "sliding window" in text and "full attention" in text
    assert block.count("<title>layer ") == spec.num_layers
    weights = spec.weight_bytes()
    assert f"weights {vllm_mem.format_gib(weights)} GiB" in text


def test_kv_capacity_block(objects: dict[str, Any]) -> None:
    cap = objects["kv_capacity"]
    text = _text(cap._repr_html_())
    assert f"{cap.num_tokens:,}" in text and f"{cap.max_concurrency:.2f}×" in text
    assert all(line in text for line in cap.log_lines)


def test_snapshot_and_difference(objects: dict[str, Any]) -> None:
    snap, diff = objects["snapshot"], objects["snapshot_difference"]
    text = _text(snap._repr_html_())
    assert "MemorySnapshot" in text and "difference" not in text
    assert f"torch allocated {vllm_mem.format_gib(16 * GiB)} GiB" in text
    dtext = _text(diff._repr_html_())
    assert "MemorySnapshot difference" in dtext and "Change over 1.2" in dtext
    assert "non-torch +1.0 GiB" in dtext and "free -21.0 GiB" in dtext
    unmeasured = vllm_mem.MemorySnapshot(auto_measure=False)
    assert "Not measured yet" in _text(unmeasured._repr_html_())


def test_profiling_block_shows_the_transient_peak(objects: dict[str, Any]) -> None:
    result = objects["profiling"]
    assert result.non_torch_peak_increase >= 2 * GiB > result.non_torch_increase
    block = result._repr_html_()
    text = _text(block)
    assert repr(result) in text  # vLLM's own line
    assert "transient non-torch" in text and "Sampler timeline" in text
    assert "<polyline" in block


def test_stage_check_block(objects: dict[str, Any]) -> None:
    check = objects["stage_check"]
    assert not check.ok
    text = _text(check._repr_html_())
    assert "over-committed" in text and "1.1" in text and f"Change this: {check.suggestions[0]}" in text
    assert all(p in text for p in check.problems)


def test_rank_plans_block(objects: dict[str, Any]) -> None:
    plans = objects["rank_plans"]
    block = plans._repr_html_()
    text = _text(block)
    assert f"{plans.num_blocks:,} blocks" in text and "TP 2 × PP 2" in text
    assert block.count("<svg") == len(plans.workers)


def test_sweep_block_from_dict_and_frame(objects: dict[str, Any]) -> None:
    view = objects["sweep"]
    cols = view.data
    n = len(cols["fits"])
    text = _text(view._repr_html_())
    assert f"{int(sum(cols['fits']))} of {n} settings fit" in text
    for axis in ("TP", "KV dtype", "max_model_len"):
        assert axis in text
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(cols)
    assert display.sweep_html(frame) == display.sweep_html(cols)
    assert repr(display.SweepView(frame)) == f"<SweepView {n} rows>"
    long = {k: list(v) * 30 for k, v in cols.items()}
    assert f"{len(long['fits']) - display.sweep.MAX_ROWS:,} more rows" in _text(display.sweep_html(long))


def test_sweep_rejects_what_is_not_a_sweep() -> None:
    with pytest.raises(TypeError, match="sweep result"):
        display.sweep_html([1, 2, 3])
    with pytest.raises(ValueError, match="different lengths"):
        display.sweep_html({"fits": [True], "gpu": ["L4", "T4"]})
    with pytest.raises(TypeError, match="no HTML view for int"):
        display.to_html(3)


# --- user strings are escaped -------------------------------------------------------------------
EVIL = "<img src=x onerror=alert(1)>&\"'"


def test_model_and_gpu_names_are_escaped() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(LLAMA)
    spec.name = EVIL
    plan = vllm_mem.plan(spec, total_memory_bytes=24 * GiB, gpu=EVIL, max_model_len=131072)
    for block in (plan._repr_html_(), spec._repr_html_()):
        assert "<img" not in block and "onerror=alert(1)>" not in block
        assert html.escape(EVIL, quote=True) in block


def test_stage_plans_model_names_are_escaped() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(LLAMA)
    spec.name = EVIL
    check = vllm_mem.check_stages("qwen3_omni_moe.overcommitted", gpus="H100-80GB", models={1: spec},
                                  max_model_len=8192)
    assert any(p["model"] == EVIL for p in check.plans)
    block = check._repr_html_()
    assert "<img" not in block and html.escape(EVIL, quote=True) in block


# --- import cost ---------------------------------------------------------------------------------
def test_display_imports_no_heavy_module() -> None:
    probe = ("import json, sys\nimport vllm_mem.display\n"
             "print(json.dumps(sorted(m for m in ('numpy', 'pandas', 'matplotlib') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_repr_html_of_a_plan_loads_no_heavy_module() -> None:
    probe = ("import json, sys\nimport vllm_mem\n"
             f"vllm_mem.plan({LLAMA!r}, gpu='L4')._repr_html_()\n"
             "vllm_mem.ModelSpec.from_hf_config('google/gemma-2-9b-it')._repr_html_()\n"
             "print(json.dumps(sorted(m for m in ('numpy', 'pandas', 'matplotlib') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
