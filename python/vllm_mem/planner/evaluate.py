"""The plan call: :func:`plan` evaluates vLLM's start-up memory for a model on a GPU."""

from __future__ import annotations

from collections.abc import Sequence

from .. import _C
from .inputs import SpecSource, gpu_total, plan_inputs, spec_of
from .result import StartupPlan


def plan(
    spec: SpecSource,
    gpu: str | None = None,
    *,
    total_memory_bytes: int | None = None,
    free_memory_bytes: int | None = None,
    gpu_count: int | None = None,
    gpu_memory_utilization: float = 0.92,
    max_model_len: int | None = None,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_seqs: int = 256,
    max_num_batched_tokens: int = 8192,
    dtype: str = "auto",
    quantization: str | None = None,
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
    enforce_eager: bool = False,
    cudagraph_mode: str = "FULL_AND_PIECEWISE",
    cudagraph_capture_sizes: Sequence[int] | None = None,
    max_cudagraph_capture_size: int | None = None,
    kv_cache_memory_bytes: int | None = None,
    cudagraph_memory_in_budget: bool = True,
) -> StartupPlan:
    """Plan vLLM's start-up memory on one GPU type, per pipeline rank.

    Parameters
    ----------
    spec : ModelSpec or config source
        A :class:`ModelSpec`, or anything :meth:`ModelSpec.from_hf_config` accepts (a
        ``config.json`` path or folder, a dict, a bundled model name).
    gpu : str, optional
        A catalog name in any common spelling (``"H100-80GB"``, ``"L40S"``, ``"MI300X"``).
    total_memory_bytes : int, optional
        The device's total memory instead of ``gpu``.
    free_memory_bytes : int, optional
        Free memory at start-up; default: total minus the idle CUDA context (and NCCL).
    gpu_count : int, optional
        GPUs available; ``tensor_parallel_size * pipeline_parallel_size`` may not exceed it.
    gpu_memory_utilization, max_model_len, tensor_parallel_size, pipeline_parallel_size,
    max_num_seqs, max_num_batched_tokens, dtype, quantization, kv_cache_dtype, block_size,
    enforce_eager, kv_cache_memory_bytes
        vLLM's engine arguments of the same names (``max_model_len`` defaults to the model's).
    cudagraph_mode, cudagraph_capture_sizes, max_cudagraph_capture_size
        vLLM's compilation config.
    cudagraph_memory_in_budget : bool
        ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` (on by default since vLLM v0.21; v0.19
        logged the estimate without subtracting it).

    Returns
    -------
    StartupPlan

    Raises
    ------
    ValueError
        Naming the field: utilization outside (0, 1], an unknown GPU (with close matches),
        non-positive lengths, a TP larger than ``gpu_count`` or not dividing the heads.
    """
    s = spec_of(spec)
    total, name = gpu_total(gpu, total_memory_bytes)
    inputs = plan_inputs(
        total_memory_bytes=total, gpu_name=name, free_memory_bytes=free_memory_bytes,
        gpu_count=gpu_count, gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens, dtype=dtype, quantization=quantization,
        kv_cache_dtype=kv_cache_dtype, block_size=block_size, enforce_eager=enforce_eager,
        cudagraph_mode=cudagraph_mode, cudagraph_capture_sizes=cudagraph_capture_sizes,
        max_cudagraph_capture_size=max_cudagraph_capture_size,
        kv_cache_memory_bytes=kv_cache_memory_bytes,
        cudagraph_memory_in_budget=cudagraph_memory_in_budget)
    if s.checkpoint_weights is not None:  # weights_source="headers": the checkpoint's own bytes
        inputs.checkpoint_weights_bytes = s._checkpoint_weights_bytes(inputs.dtype, inputs.quantization or None)
    return StartupPlan(_C.evaluate_plan(s._spec, inputs), s)
