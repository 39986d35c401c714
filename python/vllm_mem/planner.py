"""The offline start-up plan: how vLLM will spend GPU memory, and what to change if it does not fit.

Every number comes from the C++ core (``csrc/core/plan/startup_plan.cc`` and the estimators it
uses); this module converts arguments and presents results.

Examples
--------
>>> import vllm_mem
>>> p = vllm_mem.plan("meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", max_model_len=8192)
>>> p.fits, p.failure_phase
(True, None)
"""

from __future__ import annotations

import html
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from . import _C
from .catalog import lookup_gpu
from .kv_cache import KvCacheCapacity
from .model_spec import ConfigSource, ModelSpec

__all__ = ["FAILURE_PHASES", "PlanSuggestion", "RankPlan", "StartupPlan", "plan"]

SpecSource = Union[ModelSpec, ConfigSource]

#: Where a plan can fail, in vLLM's start-up order.
FAILURE_PHASES = ("free_memory", "weights", "profile_peak", "no_kv_blocks", "max_model_len")

_GiB = 1 << 30


def _spec_of(spec: SpecSource) -> ModelSpec:
    return spec if isinstance(spec, ModelSpec) else ModelSpec.from_hf_config(spec)


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{field}: must be an integer, got {value!r}")
    return int(value)


def _float(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{field}: must be a number in (0, 1], got {value!r}")
    return float(value)


def _gpu_total(gpu: str | None, total_memory_bytes: int | None) -> tuple[int, str]:
    if total_memory_bytes is not None:
        total = _int(total_memory_bytes, "total_memory_bytes")
        if total <= 0:
            raise ValueError(f"total_memory_bytes: must be positive, got {total}")
        return total, gpu or ""
    if gpu is None:
        raise ValueError("gpu: give a GPU name (see `vllm-mem gpus`) or total_memory_bytes")
    info = lookup_gpu(gpu)
    return info.total_memory_bytes, info.name


def _plan_inputs(
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
    i.free_memory_bytes = -1 if free_memory_bytes is None else _int(free_memory_bytes, "free_memory_bytes")
    i.gpu_count = 0 if gpu_count is None else _int(gpu_count, "gpu_count")
    i.gpu_memory_utilization = _float(gpu_memory_utilization, "gpu_memory_utilization")
    if max_model_len is not None:
        i.max_model_len = _int(max_model_len, "max_model_len")
        if i.max_model_len <= 0:
            raise ValueError(f"max_model_len: must be a positive integer, got {i.max_model_len}")
    i.tensor_parallel_size = _int(tensor_parallel_size, "tensor_parallel_size")
    i.pipeline_parallel_size = _int(pipeline_parallel_size, "pipeline_parallel_size")
    i.max_num_seqs = _int(max_num_seqs, "max_num_seqs")
    i.max_num_batched_tokens = _int(max_num_batched_tokens, "max_num_batched_tokens")
    i.dtype = str(dtype)
    i.quantization = "" if quantization is None else str(quantization)
    i.kv_cache_dtype = str(kv_cache_dtype)
    i.block_size = 0 if block_size is None else _int(block_size, "block_size")
    if block_size is not None and i.block_size <= 0:
        raise ValueError(f"block_size: must be a positive integer, got {i.block_size}")
    i.enforce_eager = bool(enforce_eager)
    i.cudagraph_mode = str(cudagraph_mode)
    if cudagraph_capture_sizes is not None:
        i.cudagraph_capture_sizes = [_int(s, "cudagraph_capture_sizes") for s in cudagraph_capture_sizes]
    if max_cudagraph_capture_size is not None:
        i.max_cudagraph_capture_size = _int(max_cudagraph_capture_size, "max_cudagraph_capture_size")
    if kv_cache_memory_bytes is not None:
        i.kv_cache_memory_bytes = _int(kv_cache_memory_bytes, "kv_cache_memory_bytes")
    i.cudagraph_memory_in_budget = bool(cudagraph_memory_in_budget)
    return i


def _bytes_entry(num_bytes: int, total: int) -> dict[str, Any]:
    return {"bytes": int(num_bytes), "gib": round(num_bytes / _GiB, 4),
            "fraction_of_device": round(num_bytes / total, 6) if total else None}


@dataclass(frozen=True)
class PlanSuggestion:
    """One lever: the setting to use, in one direction, with the bytes it frees.

    Attributes
    ----------
    lever : str
        The plan keyword (``"gpu_memory_utilization"``, ``"max_model_len"``, ...).
    direction : str
        ``"increase"``, ``"decrease"`` or ``"set"``.
    value : str
        The new value.
    setting : str
        The vLLM command-line flag, e.g. ``"--max-model-len 54272"``.
    bytes_freed : int
        How much the failing phase's shortfall shrinks, per GPU.
    fits_after : bool
        Whether this change alone makes the plan fit.
    reason : str
        One line of explanation.
    """

    lever: str
    direction: str
    value: str
    setting: str
    bytes_freed: int
    fits_after: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"lever": self.lever, "direction": self.direction, "value": self.value,
                "setting": self.setting, "bytes_freed": self.bytes_freed,
                "gib_freed": round(self.bytes_freed / _GiB, 4), "fits_after": self.fits_after,
                "reason": self.reason}


@dataclass(frozen=True)
class RankPlan:
    """One pipeline rank's figures (every tensor-parallel GPU of the rank alike), bytes."""

    pp_rank: int
    first_layer: int
    end_layer: int
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    available_kv_cache_bytes: int
    kv_bytes_per_block: int
    kv_bytes_per_request: int
    num_blocks: int


class StartupPlan:
    """The evaluated plan (see :func:`plan`). ``str(plan)`` is the report."""

    def __init__(self, native: Any, spec: ModelSpec) -> None:
        self._p = native
        self._spec = spec
        self._suggestions: list[PlanSuggestion] | None = None

    # --- the breakdown (the tightest GPU), bytes ---------------------------------------------
    @property
    def total_memory_bytes(self) -> int:
        return int(self._p.inputs.total_memory_bytes)

    @property
    def free_memory_bytes(self) -> int:
        """Free memory at start-up: given, or total minus the idle baseline (see report)."""
        return int(self._p.inputs.free_memory_bytes)

    @property
    def requested_bytes(self) -> int:
        """``ceil(total * gpu_memory_utilization)``, vLLM's budget."""
        return int(self._p.requested_bytes)

    @property
    def weights_bytes(self) -> int:
        return int(self._p.weights_bytes)

    @property
    def activation_peak_bytes(self) -> int:
        """vLLM's "torch peak memory increase" of the profile run (estimated)."""
        return int(self._p.activation_peak_bytes)

    @property
    def non_torch_bytes(self) -> int:
        """vLLM's "non-torch forward increase memory" (estimated)."""
        return int(self._p.non_torch_bytes)

    @property
    def cudagraph_bytes(self) -> int:
        """The CUDA-graph pool estimate (0 with ``enforce_eager``)."""
        return int(self._p.cudagraph_bytes)

    @property
    def available_kv_cache_bytes(self) -> int:
        """vLLM's "Available KV cache memory" on the tightest GPU (negative when short)."""
        return int(self._p.available_kv_cache_bytes)

    @property
    def kv_cache(self) -> KvCacheCapacity | None:
        """Blocks, tokens and concurrency when the plan fits, else ``None``."""
        kv = self._p.kv_cache
        return None if kv is None else KvCacheCapacity._from_native(kv)

    @property
    def max_model_len(self) -> int:
        return int(self._p.inputs.max_model_len)

    @property
    def max_model_len_that_fits(self) -> int:
        """The largest ``max_model_len`` one request fits in (0: none), up to the model's limit."""
        return int(self._p.max_model_len_that_fits)

    @property
    def ranks(self) -> list[RankPlan]:
        return [RankPlan(r.pp_rank, r.first_layer, r.end_layer, r.weights_bytes,
                         r.activation_peak_bytes, r.non_torch_bytes, r.cudagraph_bytes,
                         r.available_kv_cache_bytes, r.kv_bytes_per_block, r.kv_bytes_per_request,
                         r.num_blocks) for r in self._p.ranks]

    @property
    def tightest_pp_rank(self) -> int:
        return int(self._p.tightest_pp_rank)

    # --- the verdict --------------------------------------------------------------------------
    @property
    def fits(self) -> bool:
        return bool(self._p.fits)

    @property
    def failure_phase(self) -> str | None:
        """``None`` when the plan fits, else one of :data:`FAILURE_PHASES`."""
        return self._p.failure_phase or None

    @property
    def failure_message(self) -> str:
        """vLLM's own message for the failure where it has one."""
        return str(self._p.failure_message)

    @property
    def shortfall_bytes(self) -> int:
        return int(self._p.shortfall_bytes)

    @property
    def suggestions(self) -> list[PlanSuggestion]:
        """Ranked levers (empty when the plan fits)."""
        if self._suggestions is None:
            self._suggestions = [
                PlanSuggestion(s.lever, s.direction, s.value, s.setting, int(s.bytes_freed),
                               bool(s.fits_after), s.reason)
                for s in _C.suggest_plan_changes(self._spec._spec, self._p)
            ]
        return list(self._suggestions)

    @property
    def kv_cache_memory_bytes_suggestion(self) -> int:
        """The ``--kv-cache-memory-bytes`` value vLLM would suggest "to fit into requested
        memory" (150 MiB buffer), from the estimates."""
        return int(self._p.kv_cache_memory_suggestion.to_requested_limit_bytes)

    @property
    def kv_cache_memory_suggestion_line(self) -> str:
        """vLLM's suggestion line as it would print with these estimates."""
        return str(self._p.kv_cache_memory_suggestion.line)

    # --- presentation -------------------------------------------------------------------------
    def report(self) -> str:
        """The text report a person reads at a glance."""
        native = _C.suggest_plan_changes(self._spec._spec, self._p)
        return str(_C.format_plan_report(self._spec._spec, self._p, self._spec.name,
                                         _C.format_suggestions(native)))

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        verdict = "fits" if self.fits else f"does not fit ({self.failure_phase})"
        return (f"<StartupPlan {self._spec.name or self._spec.model_type}: {verdict}, "
                f"KV {self.available_kv_cache_bytes / _GiB:.2f} GiB of "
                f"{self.total_memory_bytes / _GiB:.2f} GiB>")

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-able values; every byte figure also in GiB and as a
        fraction of the device."""
        total = self.total_memory_bytes
        i = self._p.inputs
        kv = self.kv_cache
        return {
            "model": self._spec.name or self._spec.model_type,
            "gpu": i.gpu_name or None,
            "inputs": {
                "total_memory_bytes": i.total_memory_bytes, "free_memory_bytes": i.free_memory_bytes,
                "free_memory_assumed": bool(self._p.free_memory_assumed),
                "gpu_memory_utilization": i.gpu_memory_utilization, "max_model_len": i.max_model_len,
                "tensor_parallel_size": i.tensor_parallel_size,
                "pipeline_parallel_size": i.pipeline_parallel_size, "max_num_seqs": i.max_num_seqs,
                "max_num_batched_tokens": i.max_num_batched_tokens, "dtype": i.dtype,
                "quantization": i.quantization or None, "kv_cache_dtype": i.kv_cache_dtype,
                "block_size": i.block_size or None, "enforce_eager": i.enforce_eager,
                "cudagraph_mode": i.cudagraph_mode,
                "kv_cache_memory_bytes": i.kv_cache_memory_bytes or None,
                "cudagraph_memory_in_budget": i.cudagraph_memory_in_budget,
            },
            "total_memory": _bytes_entry(total, total),
            "free_memory": _bytes_entry(i.free_memory_bytes, total),
            "requested": _bytes_entry(self.requested_bytes, total),
            "weights": _bytes_entry(self.weights_bytes, total),
            "activation_peak": _bytes_entry(self.activation_peak_bytes, total),
            "non_torch": _bytes_entry(self.non_torch_bytes, total),
            "cudagraph": _bytes_entry(self.cudagraph_bytes, total),
            "available_kv_cache": _bytes_entry(self.available_kv_cache_bytes, total),
            "tightest_pp_rank": self.tightest_pp_rank,
            "ranks": [{
                "pp_rank": r.pp_rank, "layers": [r.first_layer, r.end_layer],
                "weights": _bytes_entry(r.weights_bytes, total),
                "activation_peak": _bytes_entry(r.activation_peak_bytes, total),
                "non_torch": _bytes_entry(r.non_torch_bytes, total),
                "cudagraph": _bytes_entry(r.cudagraph_bytes, total),
                "available_kv_cache": _bytes_entry(r.available_kv_cache_bytes, total),
                "num_blocks": r.num_blocks,
            } for r in self.ranks],
            "kv_cache": None if kv is None else kv.to_dict(),
            "max_model_len_that_fits": self.max_model_len_that_fits,
            "fits": self.fits,
            "failure_phase": self.failure_phase,
            "failure_message": self.failure_message or None,
            "shortfall": _bytes_entry(self.shortfall_bytes, total),
            "kv_cache_memory_bytes_suggestion": self.kv_cache_memory_bytes_suggestion,
            "suggestions": [s.to_dict() for s in self.suggestions],
        }

    def _repr_html_(self) -> str:
        total = self.total_memory_bytes
        rows = [("requested", self.requested_bytes), ("weights", self.weights_bytes),
                ("peak activation", self.activation_peak_bytes), ("non-torch", self.non_torch_bytes),
                ("CUDA graph", self.cudagraph_bytes),
                ("KV cache", max(0, self.available_kv_cache_bytes))]
        body = "".join(
            f"<tr><td>{html.escape(label)}</td><td style='text-align:right'>{b / _GiB:.2f} GiB</td>"
            f"<td style='text-align:right'>{100 * b / total:.1f}%</td></tr>" for label, b in rows)
        verdict = ("<b style='color:green'>fits</b>" if self.fits else
                   f"<b style='color:#b00'>does not fit</b> at <code>{self.failure_phase}</code>, "
                   f"short by {self.shortfall_bytes / _GiB:.2f} GiB")
        kv = self.kv_cache
        cap = ("" if kv is None else
               f"<p>{kv.num_tokens:,} tokens; maximum concurrency {kv.max_concurrency:.2f}x "
               f"at {self.max_model_len:,} tokens</p>")
        tips = "".join(f"<li><code>{html.escape(s.setting)}</code> — {html.escape(s.reason)}"
                       f" ({'fits' if s.fits_after else 'not enough alone'})</li>"
                       for s in self.suggestions)
        return (f"<div><p>{html.escape(self._spec.name or self._spec.model_type)} on "
                f"{html.escape(self._p.inputs.gpu_name or 'GPU')} ({total / _GiB:.2f} GiB): {verdict}</p>"
                f"<table><tr><th></th><th>GiB</th><th>device</th></tr>{body}</table>{cap}"
                f"<p>largest max_model_len that fits: {self.max_model_len_that_fits:,}</p>"
                + (f"<ol>{tips}</ol>" if tips else "") + "</div>")


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
    s = _spec_of(spec)
    total, name = _gpu_total(gpu, total_memory_bytes)
    inputs = _plan_inputs(
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
    return StartupPlan(_C.evaluate_plan(s._spec, inputs), s)
