"""Plan inputs for one real vLLM start-up row (tests/data/*startups*.jsonl): one definition for
the calibration and held-out comparisons."""

from __future__ import annotations

from typing import Any

from vllm_mem import _C

#: The H100 80GB every row ran on: 79.19 GiB as CUDA reports it, the figure every row prints.
H100_TOTAL_BYTES = 85029158912


def startup_plan_inputs(row: dict[str, Any], *, with_quantization: bool = True) -> Any:
    """The core's PlanInputs for the settings a start-up printed, with the rules of the release
    that printed them. ``with_quantization=False`` leaves the row's method out, for rows whose
    config carries no quantization_config (the method is then the checkpoint's, not an override)."""
    i = _C.PlanInputs()
    i.vllm_version = row["vllm_version"]
    i.total_memory_bytes = H100_TOTAL_BYTES
    i.gpu_name = "H100-80GB"
    i.gpu_memory_utilization = row["gpu_memory_utilization"]
    i.max_model_len = row["max_model_len"]
    i.tensor_parallel_size = row["tensor_parallel_size"]
    i.pipeline_parallel_size = row["pipeline_parallel_size"]
    i.max_num_seqs = row["max_num_seqs"]
    i.max_num_batched_tokens = row["max_num_batched_tokens"]
    i.dtype = row["dtype"]
    i.kv_cache_dtype = row["kv_cache_dtype"]
    if with_quantization:
        i.quantization = row["quantization"] or ""
    if row.get("max_cudagraph_capture_size"):
        i.max_cudagraph_capture_size = row["max_cudagraph_capture_size"]
    return i
