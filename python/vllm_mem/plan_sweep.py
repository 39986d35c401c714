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

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Union

from . import _C
from . import _limits as L
from . import _validate as V
from .catalog import lookup_gpu
from .planner.inputs import SpecSource, plan_inputs, spec_of
from .planner.speculative import speculative_config as speculative
from .units import GiB_bytes

if TYPE_CHECKING:
    from typing import Unpack

    from ._settings import PlanSettingsArgs

__all__ = ["sweep"]

T = TypeVar("T")
OneOrMany = Union[T, Sequence[T]]



def _axis(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    # An array (NumPy's, or anything iterable that is not a string) is an axis of values.
    if isinstance(value, (list, tuple)) or (hasattr(value, "__array__") and hasattr(value, "__iter__")):
        values = V.items(value, field, max_items=L.MAX_SWEEP_ROWS)
        if not values:
            # An empty axis would sweep nothing; leaving it out (None) means "the default", so an
            # empty one is a mistake, never the default silently (dtype=[] planned "auto" before).
            raise V.bad_value(field, "at least one value (leave the keyword out for the default)", value)
        return values
    return [value]


def _run_with_checkpoint(s: Any, axes: Any) -> dict[str, Any]:
    """The sweep of a spec read with ``weights_source="headers"``: every row takes the
    checkpoint's bytes as plan() does. Those depend on the row's dtype and quantization (floats
    cast to the served dtype unless quantized), so each (dtype, quantization) pair with its own
    figure is a sweep of its own, and the rows are put back in the core's order (TP, PP, dtype,
    quantization outermost, csrc/core/plan/plan_sweep.cc)."""
    import numpy as np

    dtypes = list(axes.dtype) or [axes.base.dtype]
    quants = list(axes.quantization) or [axes.base.quantization]
    figures = {}
    for d in dtypes:
        for q in quants:
            try:
                figures[(d, q)] = s._checkpoint_weights_bytes(d, q or None)
            except (ValueError, NotImplementedError):
                figures[(d, q)] = 0  # the core refuses the pair: those rows are "invalid"
    if len(set(figures.values())) == 1:
        axes.base.checkpoint_weights_bytes = next(iter(figures.values()))
        return dict(_C.run_sweep(s._spec, axes))
    parts = []
    for d in dtypes:
        for q in quants:
            axes.dtype, axes.quantization = [d], [q]
            axes.base.checkpoint_weights_bytes = figures[(d, q)]
            parts.append(dict(_C.run_sweep(s._spec, axes)))
    axes.dtype, axes.quantization = dtypes, quants
    outer = max(1, len(axes.tensor_parallel_size)) * max(1, len(axes.pipeline_parallel_size))
    raw = dict(parts[0])
    for key, first in parts[0].items():
        if isinstance(first, np.ndarray):
            raw[key] = np.stack([p[key].reshape(outer, -1) for p in parts], axis=1).reshape(-1)
    pair = np.repeat(np.arange(len(parts)), len(parts[0]["fits"]) // outer)
    pair = np.tile(pair, outer)
    raw["dtype_index"] = (pair // len(quants)).astype(parts[0]["dtype_index"].dtype)
    raw["quantization_index"] = (pair % len(quants)).astype(parts[0]["quantization_index"].dtype)
    raw["dtype_values"], raw["quantization_values"] = dtypes, quants
    raw["num_rows"] = sum(int(p["num_rows"]) for p in parts)
    return raw


def sweep(
    spec: SpecSource,
    gpus: OneOrMany[str | int] = "H100-80GB",
    *,
    gpu_memory_utilization: OneOrMany[float] | None = None,
    max_model_len: OneOrMany[int | str] | None = None,
    tensor_parallel_size: OneOrMany[int] = 1,
    pipeline_parallel_size: OneOrMany[int] = 1,
    max_num_seqs: OneOrMany[int] | None = None,
    max_num_batched_tokens: OneOrMany[int] | None = None,
    dtype: OneOrMany[str] = "auto",
    quantization: OneOrMany[str | None] | None = None,
    kv_cache_dtype: OneOrMany[str] = "auto",
    block_size: OneOrMany[int] | None = None,
    enforce_eager: OneOrMany[bool] = False,
    free_memory_bytes: int | None = None,
    gpu_count: int | None = None,
    cudagraph_mode: str = "FULL_AND_PIECEWISE",
    kv_cache_memory_bytes: int | None = None,
    cudagraph_memory_in_budget: bool | None = None,
    vllm_version: str | None = None,
    usage_context: str = "server",
    as_frame: bool | None = None,
    speculative_config: Mapping[str, Any] | str | None = None,
    **settings: Unpack[PlanSettingsArgs],
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
    free_memory_bytes, gpu_count, cudagraph_mode, kv_cache_memory_bytes, cudagraph_memory_in_budget,
    vllm_version, usage_context, speculative_config, **settings
        Fixed for every row, as for :func:`vllm_mem.plan`: any other setting of the table
        (docs/settings.md: ``enable_prefix_caching``, ``mamba_cache_mode``,
        ``decode_context_parallel_size``, ``kv_cache_dtype_skip_layers``, ``cpu_offload_gb``,
        ``limit_mm_per_prompt``, ...) is checked by its row and applies to every row. Settings
        left ``None`` take the vLLM release's defaults (``max_model_len``: the model's derived
        maximum; the scheduler sizes per GPU swept, as vLLM picks them by GPU).
    as_frame : bool, optional
        Return a pandas DataFrame (default: when pandas is importable) or a dict of NumPy arrays.

    Returns
    -------
    dict of numpy.ndarray or pandas.DataFrame
        One row per combination: the inputs (``gpu``, ``gpu_memory_utilization``, ...) and the
        results (``*_bytes`` with ``*_gib`` beside, ``fits``, ``failure_phase`` as text,
        ``num_tokens``, ``max_concurrency``, ``max_model_len_that_fits``). Rows whose
        combination is invalid input (e.g. a TP that does not divide the heads) have
        ``failure_phase == "invalid"`` and ``invalid_reason``, the error :func:`vllm_mem.plan`
        raises for them ("field: message"; ``None`` on every other row).
    """
    s = spec_of(spec)
    given = {"gpus": gpus, "gpu_memory_utilization": gpu_memory_utilization, "max_model_len": max_model_len,
             "tensor_parallel_size": tensor_parallel_size, "pipeline_parallel_size": pipeline_parallel_size,
             "max_num_seqs": max_num_seqs, "max_num_batched_tokens": max_num_batched_tokens, "dtype": dtype,
             "quantization": quantization, "kv_cache_dtype": kv_cache_dtype, "block_size": block_size,
             "enforce_eager": enforce_eager}
    values = {name: _axis(value, name) for name, value in given.items()}
    # The cross product is bounded before any value is converted or any row evaluated.
    rows = math.prod(max(1, len(v)) for v in values.values())
    if rows > L.MAX_SWEEP_ROWS:
        V.fail("sweep", f"the axes' cross product has {rows} rows; at most {L.MAX_SWEEP_ROWS} are evaluated")
    if not values["gpus"]:
        raise V.bad_value("gpus", "at least one GPU name or total in bytes", gpus)
    axes = _C.SweepAxes()
    totals: list[int] = []
    names: list[str] = []
    for n, g in enumerate(values["gpus"]):
        checked = V.gpu(g, f"gpus[{n}]")
        if isinstance(checked, str):
            info = lookup_gpu(checked)
            totals.append(info.total_memory_bytes)
            names.append(info.name)
        else:
            totals.append(checked)
            names.append(f"{checked / GiB_bytes:.2f} GiB")
    axes.total_memory_bytes = totals
    axes.gpu_names = names
    # The fixed settings: one request object, each keyword checked by its row of the table.
    if "total_memory_bytes" in settings or "gpu" in settings:
        V.fail("gpus", "a sweep's devices are its gpus axis (catalog names or totals in bytes)")
    axes.base = plan_inputs(
        total_memory_bytes=min(totals), free_memory_bytes=free_memory_bytes, gpu_count=gpu_count,
        cudagraph_mode=cudagraph_mode, kv_cache_memory_bytes=kv_cache_memory_bytes,
        cudagraph_memory_in_budget=cudagraph_memory_in_budget, vllm_version=vllm_version, usage_context=usage_context,
        **settings)
    if speculative_config is not None:
        axes.base.speculative = speculative(speculative_config, s, axes.base.vllm_version)
    if gpu_memory_utilization is None:
        values["gpu_memory_utilization"] = [_C.vllm_profile_settings(axes.base.vllm_version)["gpu_memory_utilization"]]
    # max_num_seqs / max_num_batched_tokens left None stay unset: the core takes vLLM's default
    # for each GPU swept (csrc/core/plan/plan_sweep.cc), and the columns show what it took.
    # Each axis value is checked by the same row of the settings table as plan()'s keyword.
    for name in ("gpu_memory_utilization", "max_model_len", "tensor_parallel_size", "pipeline_parallel_size",
                 "max_num_seqs", "max_num_batched_tokens", "block_size", "dtype", "kv_cache_dtype"):
        setattr(axes, name, [V.setting(name, v) for v in values[name]])
    axes.quantization = [V.optional_setting("quantization", v) or "" for v in values["quantization"]]
    axes.enforce_eager = [int(V.setting("enforce_eager", v)) for v in values["enforce_eager"]]
    axes.base.total_memory_bytes = totals[0]
    import numpy as np  # only when a sweep is run: 'import vllm_mem' does not load numpy

    raw = _run_with_checkpoint(s, axes) if s.checkpoint_weights is not None else _C.run_sweep(s._spec, axes)

    # failure_phase as text, one table look-up for all rows: code 0 fits (None), -1 is "invalid".
    # The only negative code is -1 (invalid), which indexes the last name: no converted copy.
    phase_names = np.array([None] + [p or "" for p in _C.failure_phase_names()[1:]] + ["invalid"], dtype=object)
    codes = raw["failure_phase"]
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
        # 0/1 bytes read as NumPy's bool (one byte, 0 or 1): no copy.
        "enforce_eager": raw["enforce_eager"].view(bool),
        "fits": raw["fits"].view(bool),
        "failure_phase": phase_names[codes],
        # Why an "invalid" row is refused: the error plan() raises for it ("field: message"). With no
        # invalid row, NumPy's None-filled object array (a tenth of the cost of indexing one).
        "invalid_reason": (np.array([None, *raw["invalid_reasons"]], dtype=object)[raw["invalid_reason_index"] + 1]
                           if raw["invalid_reasons"] else np.empty(len(codes), dtype=object)),
    }
    for key in ("requested_bytes", "weights_bytes", "activation_peak_bytes", "non_torch_bytes",
                "cudagraph_bytes", "available_kv_cache_bytes"):
        stem = key[: -len("_bytes")]
        # The GiB and fraction-of-total figures come from the core beside the bytes (no array
        # allocated, and page-faulted in, here for them).
        cols[key], cols[stem + "_gib"], cols[stem + "_fraction"] = raw[key], raw[stem + "_gib"], raw[stem + "_fraction"]
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

