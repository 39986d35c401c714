"""vLLM's worker start-up memory flow, measured: the functions a worker calls in vLLM's order.

``request_memory`` -> (load weights, ``memory_profiling``) -> ``determine_available_kv_cache_memory``
-> (allocate the KV cache) -> ``measure_cuda_graph_memory`` -> ``suggest_kv_cache_memory_bytes``.

The arithmetic and the message texts are vLLM's, computed in C++
(``csrc/core/plan/startup_budget.cc``); this module reads snapshots and converts. It works on a real
GPU and on :class:`vllm_mem.testing.SimulatedDevice` alike.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from . import _C
from . import _limits as L
from . import _validate as V
from .mem_utils import MemoryProfilingResult, MemorySnapshot
from .units import GiB_bytes, format_gib

__all__ = [
    "AvailableKvCacheMemory",
    "CudaGraphMemory",
    "KvCacheMemorySuggestion",
    "ProcessMemory",
    "determine_available_kv_cache_memory",
    "device_processes",
    "measure_cuda_graph_memory",
    "request_memory",
    "suggest_kv_cache_memory_bytes",
]

logger = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass(frozen=True)
class ProcessMemory:
    """One process holding memory on the device (from NVML); ``used_bytes`` is -1 where NVML
    cannot tell (some containers, MIG)."""

    pid: int
    used_bytes: int


def device_processes(device_index: int = 0) -> list[ProcessMemory] | None:
    """Processes holding memory on the device, largest first, from NVML (loaded at run time);
    ``None`` where NVML is unavailable (no driver, a simulated device, a container without
    access)."""
    device_index = V.integer(device_index, "device_index", low=0, high=L.MAX_DEVICE_ID)
    if _C.active_device_name() != "cuda":
        return None  # a simulated device: the real GPU's processes are not its processes
    try:
        available, _detail, procs = _C.process_memory(device_index)
    except RuntimeError:  # no driver at all
        return None
    if not available:
        return None
    return sorted((ProcessMemory(int(pid), int(used)) for pid, used in procs),
                  key=lambda p: -p.used_bytes)


def _snapshot(value: Any) -> None:
    if not isinstance(value, MemorySnapshot):
        raise V.bad_type("init_snapshot", "a MemorySnapshot", value)
    for name in ("total_memory", "free_memory"):
        V.signed_bytes(getattr(value, name), f"init_snapshot.{name}")


def request_memory(init_snapshot: MemorySnapshot, gpu_memory_utilization: float) -> int:
    """vLLM's ``request_memory``: ``ceil(total * gpu_memory_utilization)`` bytes.

    Parameters
    ----------
    init_snapshot : MemorySnapshot
        The worker's snapshot taken after distributed set-up, before loading the model.
    gpu_memory_utilization : float
        A fraction of the device's **total** memory, in (0, 1].

    Returns
    -------
    int
        The requested budget in bytes.

    Raises
    ------
    ValueError
        vLLM's text, verbatim ("Free memory on device cuda:0 (.../... GiB) on startup is less
        than desired GPU memory utilization ..."), followed, where NVML can tell, by the
        processes holding the device's memory and the largest utilization that would pass now.
    """
    _snapshot(init_snapshot)
    index = getattr(init_snapshot.device_, "index", 0) or 0
    r = _C.check_request_memory(int(init_snapshot.total_memory), int(init_snapshot.free_memory),
                                V.fraction(gpu_memory_utilization, "gpu_memory_utilization"),
                                str(init_snapshot.device_))
    if r.fits:
        return int(r.requested_bytes)
    message = str(r.error_message)
    message += (" The largest gpu_memory_utilization that fits now is "
                f"{r.largest_fitting_utilization_ppm / 1_000_000:.3f}.")
    procs = device_processes(index)
    if procs:
        # NVML answers "not available" (-1) for a process's usage under some containers and MIG.
        held = ", ".join(f"pid {p.pid} ({f'{format_gib(p.used_bytes)} GiB' if p.used_bytes >= 0 else 'unknown'})"
                         for p in procs)
        message += f" Processes holding memory on this device: {held}."
    raise ValueError(message)


@dataclass(frozen=True)
class AvailableKvCacheMemory:
    """``determine_available_memory()``'s result, bytes, with the lines vLLM logs."""

    requested_bytes: int
    non_kv_cache_bytes: int
    cudagraph_applied_bytes: int
    available_kv_cache_bytes: int
    from_kv_cache_memory_bytes: bool
    available_line: str
    cudagraph_line: str
    kv_cache_memory_bytes_line: str


def determine_available_kv_cache_memory(
    init_snapshot: MemorySnapshot,
    requested_memory: int,
    gpu_memory_utilization: float,
    *,
    profile_result: MemoryProfilingResult | None = None,
    weights_memory: int = 0,
    torch_peak_increase: int = 0,
    non_torch_increase: int = 0,
    cudagraph_memory_estimate: int = 0,
    kv_cache_memory_bytes: int | None = None,
    estimate_cudagraphs: bool = True,
    log: bool = True,
) -> AvailableKvCacheMemory:
    """vLLM's ``determine_available_memory`` arithmetic:
    ``requested - (weights + torch peak increase + non-torch increase) - CUDA-graph estimate``,
    or ``kv_cache_memory_bytes`` verbatim when given (profiling skipped). A ``profile_result``
    computed for a release whose ``non_kv_cache_memory`` is ``total_consumed + transient peak
    headroom`` (``formula == "total_consumed"``, vLLM 0.27 on) is subtracted as that release
    does: its ``non_kv_cache_memory``, not the three terms' sum.

    Parameters
    ----------
    init_snapshot : MemorySnapshot
        The worker's init snapshot (total and free memory).
    requested_memory : int
        :func:`request_memory`'s result.
    gpu_memory_utilization : float
        For the CUDA-graph INFO line.
    profile_result : MemoryProfilingResult, optional
        ``memory_profiling``'s result; else pass the three terms.
    weights_memory, torch_peak_increase, non_torch_increase : int
        The profile terms when no ``profile_result`` is given.
    cudagraph_memory_estimate : int
        ``profile_cudagraph_memory()``'s estimate (0 when eager).
    kv_cache_memory_bytes : int, optional
        ``--kv-cache-memory-bytes``.
    estimate_cudagraphs : bool
        ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` (default on from vLLM v0.20.0, whose message says v0.21.0).
    log : bool
        Log vLLM's lines at INFO.
    """
    _snapshot(init_snapshot)
    profile = _C.ProfileMeasurements()
    if profile_result is not None:
        if not isinstance(profile_result, MemoryProfilingResult):
            raise V.bad_type("profile_result", "a MemoryProfilingResult or None", profile_result)
        weights_memory = profile_result.weights_memory
        torch_peak_increase = profile_result.torch_peak_increase
        non_torch_increase = profile_result.non_torch_increase
    profile.weights_bytes = V.signed_bytes(weights_memory, "weights_memory")
    profile.torch_peak_increase_bytes = V.signed_bytes(torch_peak_increase, "torch_peak_increase")
    profile.non_torch_increase_bytes = V.signed_bytes(non_torch_increase, "non_torch_increase")
    profile.cudagraph_estimate_bytes = V.signed_bytes(cudagraph_memory_estimate, "cudagraph_memory_estimate")
    if profile_result is not None and profile_result.formula == "total_consumed":
        # From vLLM 0.27 determine_available_memory subtracts memory_profiling's own figure
        # (total consumed + transient peak headroom), not the three terms' sum.
        profile.non_kv_cache_bytes = V.signed_bytes(profile_result.non_kv_cache_memory, "non_kv_cache_memory")
    options = _C.AvailableKvOptions()
    options.total_memory_bytes = int(init_snapshot.total_memory)
    options.gpu_memory_utilization = V.fraction(gpu_memory_utilization, "gpu_memory_utilization")
    options.kv_cache_memory_bytes = 0 if kv_cache_memory_bytes is None else V.size_bytes(
        kv_cache_memory_bytes, "kv_cache_memory_bytes")
    options.init_free_memory_bytes = int(init_snapshot.free_memory)
    options.estimate_cudagraphs = V.flag(estimate_cudagraphs, "estimate_cudagraphs")
    r = _C.determine_available_kv_cache_memory(V.signed_bytes(requested_memory, "requested_memory"), profile,
                                               options)
    out = AvailableKvCacheMemory(
        int(r.requested_bytes), int(r.non_kv_cache_bytes), int(r.cudagraph_applied_bytes),
        int(r.available_kv_cache_bytes), bool(r.from_kv_cache_memory_bytes), str(r.available_line),
        str(r.cudagraph_line), str(r.kv_cache_memory_bytes_line))
    if log:
        for line in (out.kv_cache_memory_bytes_line, out.available_line, out.cudagraph_line):
            if line:
                logger.info("%s", line)
    return out


@dataclass(frozen=True)
class CudaGraphMemory(Generic[R]):
    """What a CUDA-graph capture cost.

    Attributes
    ----------
    free_delta_bytes : int
        Free device memory before minus after: what vLLM's "Graph capturing finished ...,
        took X GiB" reports (graph pools are allocated through torch and the driver alike).
    reserved_delta_bytes : int
        Growth of torch's reserved memory (the caching allocator's share of the above).
    result : object
        What ``capture_fn`` returned.
    """

    free_delta_bytes: int
    reserved_delta_bytes: int
    result: R

    @property
    def non_torch_delta_bytes(self) -> int:
        """The part outside torch's allocator (graph nodes, driver-side pools)."""
        return self.free_delta_bytes - self.reserved_delta_bytes

    @property
    def graph_capture_line(self) -> str:
        """``"took X GiB"`` as vLLM formats it (``%.2f`` of bytes / 2**30)."""
        return f"took {self.free_delta_bytes / GiB_bytes:.2f} GiB"


def measure_cuda_graph_memory(capture_fn: Callable[[], R], device: Any = None) -> CudaGraphMemory[R]:
    """Run ``capture_fn`` (a CUDA-graph capture) and measure it as vLLM's ``capture_model``
    does: synchronize and empty the cache, read free memory, capture, synchronize, read again.

    Needs a CUDA context: it initialises CUDA and retains ``device``'s primary context (inside a
    worker, the one torch already uses, so nothing is added). ``device`` is checked first: an
    index that is not visible is a ``ValueError`` naming ``device`` and ``capture_fn`` is not run.

    Returns
    -------
    CudaGraphMemory
        The free-memory delta and the allocator-reserved delta.
    """
    if not callable(capture_fn):
        raise V.bad_type("capture_fn", "a callable that captures the CUDA graphs", capture_fn)
    before = MemorySnapshot(device=device, auto_measure=False)
    index = getattr(before.device_, "index", 0) or 0
    _C.synchronize(index)
    _C.empty_cache()
    before.measure()
    result = capture_fn()
    _C.synchronize(index)
    after = MemorySnapshot(device=before.device_)
    return CudaGraphMemory(int(before.free_memory - after.free_memory),
                           int(after.torch_memory - before.torch_memory), result)


@dataclass(frozen=True)
class KvCacheMemorySuggestion:
    """vLLM's two ``--kv-cache-memory`` values and its line, byte for byte."""

    to_requested_limit_bytes: int
    to_gpu_limit_bytes: int
    line: str


def suggest_kv_cache_memory_bytes(
    init_snapshot: MemorySnapshot,
    requested_memory: int,
    gpu_memory_utilization: float,
    *,
    weights_memory: int,
    peak_activation_memory: int,
    non_torch_memory: int,
    cuda_graph_memory: int,
    kv_cache_memory_in_use: int,
    log: bool = True,
) -> KvCacheMemorySuggestion:
    """vLLM's suggestion after graph capture: ``to_requested = requested - non_kv - 150 MiB``
    ("to fit into requested memory") and ``to_gpu = init free - non_kv - 150 MiB`` ("to fully
    utilize gpu memory"), where ``non_kv = weights + peak activation + non-torch + CUDA graph
    (actual)``."""
    _snapshot(init_snapshot)
    s = _C.suggest_kv_cache_memory_bytes(
        int(init_snapshot.free_memory), int(init_snapshot.total_memory),
        V.fraction(gpu_memory_utilization, "gpu_memory_utilization"),
        *(V.signed_bytes(v, name) for name, v in (
            ("requested_memory", requested_memory), ("weights_memory", weights_memory),
            ("peak_activation_memory", peak_activation_memory), ("non_torch_memory", non_torch_memory),
            ("cuda_graph_memory", cuda_graph_memory), ("kv_cache_memory_in_use", kv_cache_memory_in_use))))
    out = KvCacheMemorySuggestion(int(s.to_requested_limit_bytes), int(s.to_gpu_limit_bytes), str(s.line))
    if log:
        logger.info("%s", out.line)
    return out
