"""The plan's keywords, checked and converted to the core's ``PlanInputs``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..catalog import lookup_gpu
from ..model_spec import ConfigSource, ModelSpec
from .versions import allow_long_from_env, choose_vllm_version
from .versions import usage_context as versions_usage_context

SpecSource = Union[ModelSpec, ConfigSource]



def spec_of(spec: SpecSource) -> ModelSpec:
    return spec if isinstance(spec, ModelSpec) else ModelSpec.from_hf_config(spec)


def gpu_total(gpu: Any, total_memory_bytes: Any) -> tuple[int, str]:
    if total_memory_bytes is not None:
        total = V.size_bytes(total_memory_bytes, "total_memory_bytes", low=1)
        return total, V.optional_text(gpu, "gpu", max_chars=L.MAX_GPU_NAME_CHARS) or ""
    if gpu is None:
        raise V.bad_type("gpu", "a catalog GPU name (see `vllm-mem gpus`), or give total_memory_bytes", gpu)
    info = lookup_gpu(gpu)
    return info.total_memory_bytes, info.name


def plan_inputs(
    *,
    total_memory_bytes: int,
    gpu_name: str = "",
    free_memory_bytes: int | None = None,
    gpu_count: int | None = None,
    gpu_memory_utilization: float | None = None,
    max_model_len: int | None = None,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    dtype: str = "auto",
    quantization: str | None = None,
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
    enforce_eager: bool = False,
    cudagraph_mode: str = "FULL_AND_PIECEWISE",
    cudagraph_capture_sizes: Sequence[int] | None = None,
    max_cudagraph_capture_size: int | None = None,
    kv_cache_memory_bytes: int | None = None,
    cudagraph_memory_in_budget: bool | None = None,
    vllm_version: str | None = None,
    usage_context: str = "server",
    allow_long_max_model_len: bool | None = None,
    decode_context_parallel_size: int = 1,
) -> Any:
    """Checked conversion of the plan keywords to the core's PlanInputs. The defaults mirror
    :func:`plan`'s, so the fixed part of a sweep (its ``base``) plans the same as ``plan()``.
    ``None`` leaves a setting to the vLLM release (:mod:`.versions`): the core fills it."""
    i = _C.PlanInputs()
    i.total_memory_bytes = V.size_bytes(total_memory_bytes, "total_memory_bytes", low=1)
    i.gpu_name = gpu_name
    if free_memory_bytes is not None:
        i.free_memory_bytes = V.size_bytes(free_memory_bytes, "free_memory_bytes")
        if i.free_memory_bytes > i.total_memory_bytes:
            raise V.bad_value("free_memory_bytes", f"at most the GPU's total memory, {i.total_memory_bytes} bytes",
                              free_memory_bytes)
    else:
        i.free_memory_bytes = -1  # the core's "not given": total minus the idle baseline
    i.gpu_count = V.optional_setting("gpu_count", gpu_count) or 0
    if gpu_memory_utilization is not None:
        i.gpu_memory_utilization = V.fraction(gpu_memory_utilization, "gpu_memory_utilization")
    i.max_model_len = V.optional_setting("max_model_len", max_model_len) or 0
    i.tensor_parallel_size = V.setting("tensor_parallel_size", tensor_parallel_size)
    i.pipeline_parallel_size = V.setting("pipeline_parallel_size", pipeline_parallel_size)
    # --decode-context-parallel-size: bounded like TP, which it must divide (the core's check).
    i.decode_context_parallel_size = V.setting("tensor_parallel_size", decode_context_parallel_size,
                                               "decode_context_parallel_size")
    i.max_num_seqs = V.optional_setting("max_num_seqs", max_num_seqs) or 0  # 0: the release's default
    i.max_num_batched_tokens = V.optional_setting("max_num_batched_tokens", max_num_batched_tokens) or 0
    i.dtype = V.dtype(dtype)
    i.quantization = V.optional_text(quantization, "quantization") or ""
    i.kv_cache_dtype = V.kv_cache_dtype(kv_cache_dtype)
    i.block_size = V.optional_setting("block_size", block_size) or 0
    i.enforce_eager = V.flag(enforce_eager, "enforce_eager")
    i.cudagraph_mode = V.text(cudagraph_mode, "cudagraph_mode")
    if cudagraph_capture_sizes is not None:
        sizes = V.items(cudagraph_capture_sizes, "cudagraph_capture_sizes", max_items=L.MAX_CUDAGRAPH_CAPTURE_SIZES)
        i.cudagraph_capture_sizes = [V.setting("cudagraph_capture_sizes", s, f"cudagraph_capture_sizes[{n}]")
                                     for n, s in enumerate(sizes)]
    if max_cudagraph_capture_size is not None:
        i.max_cudagraph_capture_size = V.setting("max_cudagraph_capture_size", max_cudagraph_capture_size)
    if kv_cache_memory_bytes is not None:
        i.kv_cache_memory_bytes = V.size_bytes(kv_cache_memory_bytes, "kv_cache_memory_bytes", low=1)
    if cudagraph_memory_in_budget is not None:
        i.cudagraph_memory_in_budget = V.flag(cudagraph_memory_in_budget, "cudagraph_memory_in_budget")
    i.vllm_version, i.vllm_version_source = choose_vllm_version(vllm_version)
    i.usage_context = versions_usage_context(usage_context)
    i.allow_long_max_model_len = (allow_long_from_env() if allow_long_max_model_len is None
                                  else V.flag(allow_long_max_model_len, "allow_long_max_model_len"))
    return i
