"""The plan's keywords, checked and converted to the core's ``PlanInputs``."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Union

from .. import _C
from ..catalog import lookup_gpu
from ..model_spec import ConfigSource, ModelSpec

SpecSource = Union[ModelSpec, ConfigSource]

GiB = 1 << 30


def spec_of(spec: SpecSource) -> ModelSpec:
    return spec if isinstance(spec, ModelSpec) else ModelSpec.from_hf_config(spec)


def as_int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{field}: must be an integer, got {value!r}")
    return int(value)


def as_float(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{field}: must be a number in (0, 1], got {value!r}")
    return float(value)


def gpu_total(gpu: str | None, total_memory_bytes: int | None) -> tuple[int, str]:
    if total_memory_bytes is not None:
        total = as_int(total_memory_bytes, "total_memory_bytes")
        if total <= 0:
            raise ValueError(f"total_memory_bytes: must be positive, got {total}")
        return total, gpu or ""
    if gpu is None:
        raise ValueError("gpu: give a GPU name (see `vllm-mem gpus`) or total_memory_bytes")
    info = lookup_gpu(gpu)
    return info.total_memory_bytes, info.name


def plan_inputs(
    *,
    total_memory_bytes: int,
    gpu_name: str = "",
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
) -> Any:
    """Checked conversion of the plan keywords to the core's PlanInputs. The defaults mirror
    :func:`plan`'s, so the fixed part of a sweep (its ``base``) plans the same as ``plan()``."""
    i = _C.PlanInputs()
    i.total_memory_bytes = total_memory_bytes
    i.gpu_name = gpu_name
    i.free_memory_bytes = -1 if free_memory_bytes is None else as_int(free_memory_bytes, "free_memory_bytes")
    i.gpu_count = 0 if gpu_count is None else as_int(gpu_count, "gpu_count")
    i.gpu_memory_utilization = as_float(gpu_memory_utilization, "gpu_memory_utilization")
    if max_model_len is not None:
        i.max_model_len = as_int(max_model_len, "max_model_len")
        if i.max_model_len <= 0:
            raise ValueError(f"max_model_len: must be a positive integer, got {i.max_model_len}")
    i.tensor_parallel_size = as_int(tensor_parallel_size, "tensor_parallel_size")
    i.pipeline_parallel_size = as_int(pipeline_parallel_size, "pipeline_parallel_size")
    i.max_num_seqs = as_int(max_num_seqs, "max_num_seqs")
    i.max_num_batched_tokens = as_int(max_num_batched_tokens, "max_num_batched_tokens")
    i.dtype = str(dtype)
    i.quantization = "" if quantization is None else str(quantization)
    i.kv_cache_dtype = str(kv_cache_dtype)
    i.block_size = 0 if block_size is None else as_int(block_size, "block_size")
    if block_size is not None and i.block_size <= 0:
        raise ValueError(f"block_size: must be a positive integer, got {i.block_size}")
    i.enforce_eager = bool(enforce_eager)
    i.cudagraph_mode = str(cudagraph_mode)
    if cudagraph_capture_sizes is not None:
        i.cudagraph_capture_sizes = [as_int(s, "cudagraph_capture_sizes") for s in cudagraph_capture_sizes]
    if max_cudagraph_capture_size is not None:
        i.max_cudagraph_capture_size = as_int(max_cudagraph_capture_size, "max_cudagraph_capture_size")
    if kv_cache_memory_bytes is not None:
        i.kv_cache_memory_bytes = as_int(kv_cache_memory_bytes, "kv_cache_memory_bytes")
    i.cudagraph_memory_in_budget = bool(cudagraph_memory_in_budget)
    return i

