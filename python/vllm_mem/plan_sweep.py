"""Start-up plans over a cross product of settings, evaluated in C++ into columns.

Examples
--------
>>> import vllm_mem
>>> cols = vllm_mem.sweep("meta-llama/Llama-3.1-8B-Instruct", gpus=["H100-80GB", "L4"],
...                       gpu_memory_utilization=[0.8, 0.9], max_model_len=[8192, 32768])
>>> len(cols["fits"])
8
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, Union

from . import _C
from .catalog import lookup_gpu
from .planner.inputs import SpecSource, as_float, as_int, plan_inputs, spec_of

__all__ = ["sweep"]

T = TypeVar("T")
OneOrMany = Union[T, Sequence[T]]

_GiB = 1 << 30


def _axis(value: Any) -> list[Any]:
    if value is None:
        return []
    # An array (NumPy's, or anything iterable that is not a string) is an axis of values.
    if isinstance(value, (list, tuple)) or (hasattr(value, "__array__") and hasattr(value, "__iter__")):
        return list(value)
    return [value]


def sweep(
    spec: SpecSource,
    gpus: OneOrMany[str | int] = "H100-80GB",
    *,
    gpu_memory_utilization: OneOrMany[float] = 0.92,
    max_model_len: OneOrMany[int] | None = None,
    tensor_parallel_size: OneOrMany[int] = 1,
    pipeline_parallel_size: OneOrMany[int] = 1,
    max_num_seqs: OneOrMany[int] = 256,
    max_num_batched_tokens: OneOrMany[int] = 8192,
    dtype: OneOrMany[str] = "auto",
    quantization: OneOrMany[str | None] | None = None,
    kv_cache_dtype: OneOrMany[str] = "auto",
    block_size: OneOrMany[int] | None = None,
    enforce_eager: OneOrMany[bool] = False,
    free_memory_bytes: int | None = None,
    gpu_count: int | None = None,
    cudagraph_mode: str = "FULL_AND_PIECEWISE",
    kv_cache_memory_bytes: int | None = None,
    cudagraph_memory_in_budget: bool = True,
    as_frame: bool | None = None,
) -> Any:
    """Evaluate :func:`vllm_mem.plan` over the cross product of every list-valued keyword.

    Parameters
    ----------
    spec : ModelSpec or config source
        As for :func:`vllm_mem.plan`.
    gpus : str, int or list of them
        Catalog names and/or totals in bytes.
    gpu_memory_utilization, max_model_len, tensor_parallel_size, pipeline_parallel_size,
    max_num_seqs, max_num_batched_tokens, dtype, quantization, kv_cache_dtype, block_size,
    enforce_eager : value or list of values
        Each list is an axis of the cross product.
    free_memory_bytes, gpu_count, cudagraph_mode, kv_cache_memory_bytes, cudagraph_memory_in_budget
        Fixed for every row, as for :func:`vllm_mem.plan`.
    as_frame : bool, optional
        Return a pandas DataFrame (default: when pandas is importable) or a dict of NumPy arrays.

    Returns
    -------
    dict of numpy.ndarray or pandas.DataFrame
        One row per combination: the inputs (``gpu``, ``gpu_memory_utilization``, ...) and the
        results (``*_bytes`` with ``*_gib`` beside, ``fits``, ``failure_phase`` as text,
        ``num_tokens``, ``max_concurrency``, ``max_model_len_that_fits``). Rows whose
        combination is invalid input (e.g. a TP that does not divide the heads) have
        ``failure_phase == "invalid"``.
    """
    s = spec_of(spec)
    axes = _C.SweepAxes()
    totals: list[int] = []
    names: list[str] = []
    for g in _axis(gpus):
        if isinstance(g, str):
            info = lookup_gpu(g)
            totals.append(info.total_memory_bytes)
            names.append(info.name)
        else:
            totals.append(as_int(g, "gpus"))
            names.append(f"{as_int(g, 'gpus') / _GiB:.2f} GiB")
    if not totals:
        raise ValueError("gpus: give at least one GPU name or total in bytes")
    axes.total_memory_bytes = totals
    axes.gpu_names = names
    axes.gpu_memory_utilization = [as_float(u, "gpu_memory_utilization") for u in _axis(gpu_memory_utilization)]
    axes.max_model_len = [as_int(v, "max_model_len") for v in _axis(max_model_len)]
    axes.tensor_parallel_size = [as_int(v, "tensor_parallel_size") for v in _axis(tensor_parallel_size)]
    axes.pipeline_parallel_size = [as_int(v, "pipeline_parallel_size") for v in _axis(pipeline_parallel_size)]
    axes.max_num_seqs = [as_int(v, "max_num_seqs") for v in _axis(max_num_seqs)]
    axes.max_num_batched_tokens = [as_int(v, "max_num_batched_tokens") for v in _axis(max_num_batched_tokens)]
    axes.dtype = [str(v) for v in _axis(dtype)]
    axes.quantization = ["" if v is None else str(v) for v in _axis(quantization)]
    axes.kv_cache_dtype = [str(v) for v in _axis(kv_cache_dtype)]
    axes.block_size = [as_int(v, "block_size") for v in _axis(block_size)]
    axes.enforce_eager = [1 if bool(v) else 0 for v in _axis(enforce_eager)]
    for name in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "max_num_seqs",
                 "max_num_batched_tokens", "block_size"):
        bad = [v for v in getattr(axes, name) if v <= 0]
        if bad:
            raise ValueError(f"{name}: must be positive integers, got {bad[0]}")
    axes.base = plan_inputs(
        total_memory_bytes=totals[0], free_memory_bytes=free_memory_bytes, gpu_count=gpu_count,
        cudagraph_mode=cudagraph_mode, kv_cache_memory_bytes=kv_cache_memory_bytes,
        cudagraph_memory_in_budget=cudagraph_memory_in_budget)
    raw = _C.run_sweep(s._spec, axes)
    import numpy as np  # only when a sweep is run: 'import vllm_mem' does not load numpy

    phase_names = np.array([p or "" for p in _C.failure_phase_names()] + ["invalid"], dtype=object)
    codes = raw["failure_phase"].astype(np.int64)
    cols: dict[str, Any] = {
        "gpu": np.array(raw["gpu_names"], dtype=object)[raw["gpu_index"]],
        "total_memory_bytes": raw["total_memory_bytes"],
        "gpu_memory_utilization": raw["gpu_memory_utilization"],
        "max_model_len": raw["max_model_len"],
        "tensor_parallel_size": raw["tensor_parallel_size"],
        "pipeline_parallel_size": raw["pipeline_parallel_size"],
        "max_num_seqs": raw["max_num_seqs"],
        "max_num_batched_tokens": raw["max_num_batched_tokens"],
        "dtype": np.array(raw["dtype_values"], dtype=object)[raw["dtype_index"]],
        "quantization": np.array([q or None for q in raw["quantization_values"]], dtype=object)[
            raw["quantization_index"]],
        "kv_cache_dtype": np.array(raw["kv_cache_dtype_values"], dtype=object)[raw["kv_cache_dtype_index"]],
        "enforce_eager": raw["enforce_eager"].astype(bool),
        "fits": raw["fits"].astype(bool),
        "failure_phase": np.array(
            [None if c == 0 else phase_names[c if c > 0 else -1] for c in codes.tolist()], dtype=object),
    }
    total = raw["total_memory_bytes"].astype(np.float64)
    for key in ("requested_bytes", "weights_bytes", "activation_peak_bytes", "non_torch_bytes",
                "cudagraph_bytes", "available_kv_cache_bytes"):
        cols[key] = raw[key]
        stem = key[: -len("_bytes")]
        cols[stem + "_gib"] = raw[key] / float(_GiB)
        cols[stem + "_fraction"] = raw[key] / total
    for key in ("num_blocks", "num_tokens", "max_concurrency", "max_model_len_that_fits"):
        cols[key] = raw[key]

    if as_frame is None or as_frame:
        try:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            if as_frame:
                raise
            return cols
        return pd.DataFrame(cols)
    return cols

