"""vLLM's start-up flow on a real (tiny, random-weight) model.

On the CPU: the model's real parameter count equals the sizing core's count for its config.
On a GPU (``@pytest.mark.gpu``, in a spawned interpreter for a fresh CUDA context): load it,
profile a forward of max_num_batched_tokens tokens, capture a CUDA graph, and run vLLM's
worker arithmetic on what was measured."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import vllm_mem
from vllm_mem.pytest_plugin import gpu_visible

torch = pytest.importorskip("torch")

from tiny_llama import TINY_LLAMA_CONFIG, TinyLlama  # noqa: E402


def test_parameter_count_matches_a_real_torch_module() -> None:
    with torch.device("meta"):
        model = TinyLlama(TINY_LLAMA_CONFIG)
    real = sum(p.numel() for p in model.parameters())
    assert vllm_mem.ModelSpec.from_hf_config(TINY_LLAMA_CONFIG).num_parameters() == real


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_visible(), reason="no NVIDIA GPU visible")
def test_worker_flow_on_a_real_model() -> None:
    body = textwrap.dedent(
        """
        import math

        import torch
        import vllm_mem
        from vllm_mem import DeviceMemoryProfiler, MemorySnapshot, memory_profiling
        from vllm_mem.worker_flow import (determine_available_kv_cache_memory, measure_cuda_graph_memory,
                                          request_memory, suggest_kv_cache_memory_bytes)
        from tiny_llama import TINY_LLAMA_CONFIG as cfg, TinyLlama

        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")  # the context, as vLLM's worker has it before the snapshot
        utilization = 0.5
        init = MemorySnapshot(device=0)
        requested = request_memory(init, utilization)
        assert requested == math.ceil(init.total_memory * utilization)

        with DeviceMemoryProfiler(0) as loading:
            model = TinyLlama(cfg).to(device="cuda", dtype=torch.bfloat16)
        spec = vllm_mem.ModelSpec.from_hf_config(cfg)
        weights = int(loading.consumed_memory)
        assert abs(weights - 2 * spec.num_parameters()) <= 0.005 * weights, (weights, spec.num_parameters())

        tokens = torch.randint(0, cfg["vocab_size"], (2048,), device="cuda")
        with memory_profiling(init, weights_memory=weights) as result:
            with torch.inference_mode():
                logits = model(tokens)
                del logits
        # The logits alone are 2048 x vocab bf16 values; the peak holds at least them.
        assert result.torch_peak_increase >= 2048 * cfg["vocab_size"] * 2, result
        # The release's formula (the newest profile's by default: total consumed plus the transient
        # peak headroom from 0.27; the components before), each identity exact.
        components = result.weights_memory + result.torch_peak_increase + result.non_torch_increase
        consumed = result.total_consumed + result.transient_peak_headroom
        assert result.non_kv_cache_memory == (components if result.formula == "components" else consumed), result
        assert {result.non_kv_cache_memory_components, result.non_kv_cache_memory_total_consumed} == {
            components, consumed}, result

        static = torch.randint(0, cfg["vocab_size"], (8,), device="cuda")

        def capture():
            graph = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.inference_mode():
                model(static)  # warm-up outside the graph, as vLLM does
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(graph), torch.inference_mode():
                out = model(static)
            return graph, out

        graphs = measure_cuda_graph_memory(capture, device=0)
        assert graphs.free_delta_bytes >= graphs.reserved_delta_bytes >= 0, graphs

        avail = determine_available_kv_cache_memory(
            init, requested, utilization, profile_result=result,
            cudagraph_memory_estimate=graphs.free_delta_bytes, log=False)
        # determine_available_kv_cache_memory subtracts the non-KV figure of the release the result
        # follows: the three terms up to 0.26, total consumed + transient peak headroom from 0.27.
        assert avail.available_kv_cache_bytes == (
            requested - result.non_kv_cache_memory - graphs.free_delta_bytes), avail
        cap = vllm_mem.kv_cache_capacity(spec, avail.available_kv_cache_bytes, max_model_len=4096)
        assert cap.num_blocks > 0 and cap.max_concurrency > 1

        s = suggest_kv_cache_memory_bytes(
            init, requested, utilization, weights_memory=weights,
            peak_activation_memory=result.torch_peak_increase,
            non_torch_memory=result.non_torch_increase, cuda_graph_memory=graphs.free_delta_bytes,
            kv_cache_memory_in_use=avail.available_kv_cache_bytes, log=False)
        non_kv = weights + result.torch_peak_increase + result.non_torch_increase + graphs.free_delta_bytes
        assert s.to_requested_limit_bytes == requested - non_kv - 150 * (1 << 20)
        assert s.to_gpu_limit_bytes == init.free_memory - non_kv - 150 * (1 << 20)
        assert s.line.startswith("Free memory on device (")
        print("weights", weights, "peak", result.torch_peak_increase, "non-torch", result.non_torch_increase,
              "graphs", graphs.free_delta_bytes, "available", avail.available_kv_cache_bytes)
        """
    )
    proc = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parent)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
