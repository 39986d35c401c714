"""The worker flow on the simulated device, with exact numbers."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
import vllm_mem
from vllm_mem import GiB_bytes, MiB_bytes, format_gib
from vllm_mem import worker_flow as wf
from vllm_mem.testing import SimulatedDevice

TOTAL = 85029158912  # H100 80GB HBM3 as CUDA reports it


def test_request_memory_budget_and_message() -> None:
    with SimulatedDevice(total_memory=TOTAL) as sim:
        sim.other_process_alloc(40 * GiB_bytes)
        snap = vllm_mem.MemorySnapshot()
        assert wf.request_memory(snap, 0.45) == math.ceil(TOTAL * 0.45)
        with pytest.raises(ValueError) as err:
            wf.request_memory(snap, 0.5)
        free = TOTAL - 40 * GiB_bytes
        expected = (f"Free memory on device cuda:0 ({format_gib(free)}/{format_gib(TOTAL)} GiB) on startup is "
                    f"less than desired GPU memory utilization (0.5, {format_gib(math.ceil(TOTAL * 0.5))} GiB). "
                    "Decrease GPU memory utilization or reduce GPU memory used by other processes.")
        message = str(err.value)
        assert message.startswith(expected)
        found = re.search(r"largest gpu_memory_utilization that fits now is ([0-9]+\.[0-9]+)", message)
        assert found is not None, message
        largest = float(found.group(1))
        assert math.ceil(TOTAL * largest) <= free < math.ceil(TOTAL * (largest + 0.001))
        assert wf.device_processes() is None  # no NVML figures for a simulated device
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        with SimulatedDevice(total_memory=TOTAL):
            wf.request_memory(vllm_mem.MemorySnapshot(), 1.2)


def test_full_flow_available_kv_memory() -> None:
    weights, peak, non_torch, graphs = 15 * GiB_bytes, 2 * GiB_bytes, 256 * MiB_bytes, 800 * MiB_bytes
    with SimulatedDevice(total_memory=TOTAL) as sim:
        sim.non_torch_alloc(512 * MiB_bytes)  # CUDA context, before the init snapshot
        init = vllm_mem.MemorySnapshot()
        requested = wf.request_memory(init, 0.92)
        sim.torch_alloc(weights)
        with vllm_mem.memory_profiling(init, weights_memory=weights) as result:
            with sim.torch_tensor(peak):
                pass
            sim.non_torch_alloc(non_torch)
        assert result.torch_peak_increase == peak
        assert result.non_torch_increase == non_torch
        out = wf.determine_available_kv_cache_memory(init, requested, 0.92, profile_result=result,
                                                     cudagraph_memory_estimate=graphs, log=False)
        assert out.non_kv_cache_bytes == weights + peak + non_torch
        assert out.available_kv_cache_bytes == requested - weights - peak - non_torch - graphs
        assert out.available_line == f"Available KV cache memory: {format_gib(out.available_kv_cache_bytes)} GiB"
        assert out.cudagraph_line.startswith("CUDA graph memory profiling is enabled (default since v0.21.0).")
        delta = graphs / TOTAL
        assert f"--gpu-memory-utilization={round(0.92 - delta, 4):.4f} without" in out.cudagraph_line

        legacy = wf.determine_available_kv_cache_memory(init, requested, 0.92, profile_result=result,
                                                        cudagraph_memory_estimate=graphs,
                                                        estimate_cudagraphs=False, log=False)
        assert legacy.available_kv_cache_bytes == out.available_kv_cache_bytes + graphs

        fixed = wf.determine_available_kv_cache_memory(init, requested, 0.92, profile_result=result,
                                                       kv_cache_memory_bytes=30 * GiB_bytes, log=False)
        assert fixed.from_kv_cache_memory_bytes and fixed.available_kv_cache_bytes == 30 * GiB_bytes
        assert fixed.kv_cache_memory_bytes_line.startswith(
            f"Initial free memory {format_gib(init.free_memory)} GiB, reserved 30.0 GiB memory for KV Cache")


@pytest.mark.parametrize(("release", "formula"), [("0.26.0", "components"), ("0.27.0", "total_consumed")])
def test_available_kv_memory_subtracts_the_releases_non_kv_figure(release: str, formula: str) -> None:
    # Torch memory taken after the init snapshot that is neither weights nor the profile's peak (a
    # KV-transfer buffer, say): the components' sum misses it, total_consumed (vLLM >= 0.27) sees it
    # in the free-memory drop, and determine_available_memory subtracts whichever its release computes.
    weights, extra, peak, non_torch = 15 * GiB_bytes, 3 * GiB_bytes, 2 * GiB_bytes, 256 * MiB_bytes
    with SimulatedDevice(total_memory=TOTAL) as sim:
        init = vllm_mem.MemorySnapshot()
        requested = wf.request_memory(init, 0.9)
        sim.torch_alloc(weights)
        sim.torch_alloc(extra)
        with vllm_mem.memory_profiling(init, weights_memory=weights, vllm_version=release) as result:
            with sim.torch_tensor(peak):
                pass
            sim.non_torch_alloc(non_torch)
        assert result.formula == formula
        assert result.non_kv_cache_memory_components == weights + peak + non_torch
        assert result.non_kv_cache_memory_total_consumed == weights + extra + peak + non_torch
        out = wf.determine_available_kv_cache_memory(init, requested, 0.9, profile_result=result, log=False)
        assert out.non_kv_cache_bytes == result.non_kv_cache_memory
        assert out.available_kv_cache_bytes == requested - result.non_kv_cache_memory
        # The three terms passed by hand are always summed, as vLLM up to 0.26 recomputes them.
        by_hand = wf.determine_available_kv_cache_memory(init, requested, 0.9, weights_memory=weights,
                                                         torch_peak_increase=peak, non_torch_increase=non_torch,
                                                         log=False)
        assert by_hand.non_kv_cache_bytes == weights + peak + non_torch


def test_measure_cuda_graph_memory() -> None:
    with SimulatedDevice(total_memory=TOTAL) as sim:
        def capture() -> str:
            sim.torch_alloc(600 * MiB_bytes)      # the graph pool, through torch's allocator
            sim.non_torch_alloc(40 * MiB_bytes)   # graph nodes on the driver side
            return "captured"

        calls = sim.empty_cache_calls
        m = wf.measure_cuda_graph_memory(capture)
        assert m.result == "captured"
        assert m.free_delta_bytes == 640 * MiB_bytes
        assert m.reserved_delta_bytes == 600 * MiB_bytes
        assert m.non_torch_delta_bytes == 40 * MiB_bytes
        assert m.graph_capture_line == "took 0.62 GiB"
        assert sim.empty_cache_calls == calls + 1  # emptied before the first reading, as vLLM does


def test_suggestion_line_reproduces_a_real_log(calibration_startups: list[dict[str, Any]]) -> None:
    row = next(r for r in calibration_startups if r["model_id"] == "codellama/CodeLlama-7b-hf")
    raw = row["raw_lines"]["free_mem"]
    to_requested, to_gpu = (int(v) for v in re.findall(r"--kv-cache-memory=(\d+)", raw))
    requested = math.ceil(TOTAL * 0.95)
    buffer = 150 * MiB_bytes
    init_free = to_gpu - to_requested + requested  # exact: to_gpu - to_requested = free - requested
    non_kv = requested - buffer - to_requested
    # Split the non-KV sum into the printed terms (each inside its rounding interval).
    obs = row["observed"]
    weights = round(obs["free_line_weights_gib"] * GiB_bytes)
    peak = round(obs["free_line_peak_activation_gib"] * GiB_bytes)
    non_torch = round(obs["free_line_non_torch_gib"] * GiB_bytes)
    graphs = non_kv - weights - peak - non_torch
    assert abs(graphs / GiB_bytes - obs["free_line_cudagraph_gib"]) <= 0.02
    with SimulatedDevice(total_memory=TOTAL) as sim:
        sim.other_process_alloc(TOTAL - init_free)
        init = vllm_mem.MemorySnapshot()
        assert init.free_memory == init_free
        s = wf.suggest_kv_cache_memory_bytes(
            init, wf.request_memory(init, 0.95), 0.95, weights_memory=weights, peak_activation_memory=peak,
            non_torch_memory=non_torch, cuda_graph_memory=graphs,
            kv_cache_memory_in_use=round(obs["free_line_kv_cache_in_use_gib"] * GiB_bytes), log=False)
    assert (s.to_requested_limit_bytes, s.to_gpu_limit_bytes) == (to_requested, to_gpu)
    if f"{format_gib(graphs)}" == f"{obs['free_line_cudagraph_gib']}":
        assert s.line == raw
    else:  # the printed terms are rounded: only the graph figure's last digit may differ
        assert s.line.split("GiB for CUDAGraph")[1] == raw.split("GiB for CUDAGraph")[1]
