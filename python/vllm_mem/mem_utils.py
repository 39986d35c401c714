"""A drop-in for ``vllm.utils.mem_utils``, measured in C++.

Same names, fields, defaults, semantics and ``repr`` text as vLLM; the arithmetic lives in the C++
core (``csrc/core/memory/memory_snapshot.cc``, ``memory_profiling.cc``) and this module is glue. Beyond
vLLM: ``MemorySnapshot.torch_allocated`` (later vLLM), ``MemoryProfilingResult.total_consumed``
and ``transient_peak_headroom`` (later vLLM), and, from the peak sampler,
``non_torch_peak_increase``, ``peak_cuda_memory`` and ``timeline``.

Nothing here imports torch or touches CUDA at import time. With a simulated device installed
(:class:`vllm_mem.testing.SimulatedDevice`) everything reads the simulation instead.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
from collections.abc import Generator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from . import _C
from . import _limits as L
from . import _validate as V
from ._device import DeviceLike, device_index, make_device
from .sampler import MemorySampler, MemoryTimeline
from .units import format_gib

__all__ = [
    "MemorySnapshot",
    "MemoryProfilingResult",
    "memory_profiling",
    "DeviceMemoryProfiler",
    "format_gib",
    "get_cpu_memory",
    "get_max_shared_memory_bytes",
    "release_device_memory_under_pressure",
    "torch_memory_stats",
]

logger = logging.getLogger(__name__)

# vLLM's constants (vllm/utils/mem_utils.py, #45179); the decision itself is made in C++.
_UMA_PRESSURE_THRESHOLD = 0.8
_UMA_MIN_RELEASE_BYTES = 512 * (1 << 20)

# The fields a measurement fills, in the order of _C.measure_snapshot_fields.
_RECORD_FIELDS = ("torch_peak", "free_memory", "total_memory", "cuda_memory", "torch_memory",
                  "non_torch_memory", "timestamp", "torch_allocated", "integrated",
                  "cuda_free_memory", "torch_status")


def _device_index(device: DeviceLike, field: str = "device") -> int:
    """The device's index, bounded before it reaches the core (an int of 2**63 would otherwise
    get pybind11's "incompatible function arguments")."""
    return V.integer(device_index(device), field, low=0, high=L.MAX_DEVICE_ID)


@dataclass
class MemorySnapshot:
    """Memory snapshot (vLLM's), all sizes in bytes.

    Parameters
    ----------
    torch_peak : int
        ``allocated_bytes.all.peak`` of torch's caching allocator.
    free_memory, total_memory : int
        ``cudaMemGetInfo``; on integrated (UMA) GPUs ``free_memory`` is the host's
        ``MemAvailable`` and the CUDA figure is kept in ``cuda_free_memory``.
    cuda_memory : int
        ``total_memory - free_memory``: in use on the device, every process.
    torch_memory : int
        ``reserved_bytes.all.current``.
    non_torch_memory : int
        ``cuda_memory - torch_memory``.
    timestamp : float
        ``time.time()`` of the reading.
    device : int, str or torch.device, optional
        The CUDA device; the current one when ``None``.
    auto_measure : bool
        Measure on construction.
    torch_allocated : int
        ``allocated_bytes.all.current`` (later vLLM).

    Notes
    -----
    ``torch_status`` says whether the torch figures are real (``"available"``) or why they are 0
    (``"no_torch"``, ``"not_initialized"``, ``"no_cuda_allocator"``, ...).
    """

    torch_peak: int = 0
    free_memory: int = 0
    total_memory: int = 0
    cuda_memory: int = 0
    torch_memory: int = 0
    non_torch_memory: int = 0
    timestamp: float = 0.0

    device: DeviceLike = None
    auto_measure: bool = True
    torch_allocated: int = 0
    integrated: bool = field(default=False, init=False)
    cuda_free_memory: int = field(default=0, init=False)
    torch_status: str = field(default="no_torch", init=False)

    def __post_init__(self) -> None:
        self._index = _device_index(self.device)
        self.device_ = make_device(self._index)
        if self.auto_measure:
            self.measure()

    def measure(self) -> None:
        """Read the device now (releases the GIL while the driver is queried)."""
        (self.torch_peak, self.free_memory, self.total_memory, self.cuda_memory,
         self.torch_memory, self.non_torch_memory, self.timestamp, self.torch_allocated,
         self.integrated, self.cuda_free_memory,
         self.torch_status) = _C.measure_snapshot_fields(self._index)

    def _record(self) -> Any:
        rec = _C.SnapshotRecord()
        rec.device = self._index
        for name in _RECORD_FIELDS:
            setattr(rec, name, getattr(self, name))
        return rec

    @classmethod
    def _from_record(cls, rec: Any, device: Any) -> MemorySnapshot:
        out = cls(device=device, auto_measure=False)
        for name in _RECORD_FIELDS:
            setattr(out, name, getattr(rec, name))
        return out

    def __sub__(self, other: MemorySnapshot) -> MemorySnapshot:
        if not isinstance(other, MemorySnapshot):
            # Python then raises "unsupported operand type(s)" (TypeError), not AttributeError.
            return NotImplemented
        if self.device_ != other.device_:
            raise ValueError(
                "The two snapshots should be from the same device! "
                f"Found: {self.device_} vs. {other.device_}"
            )
        diff = _C.subtract_snapshots(self._record(), other._record())
        return MemorySnapshot._from_record(diff, self.device_)

    def __repr__(self) -> str:
        return (
            f"torch_peak={format_gib(self.torch_peak)}GiB, "
            f"free_memory={format_gib(self.free_memory)}GiB, "
            f"total_memory={format_gib(self.total_memory)}GiB, "
            f"cuda_memory={format_gib(self.cuda_memory)}GiB, "
            f"torch_memory={format_gib(self.torch_memory)}GiB, "
            f"non_torch_memory={format_gib(self.non_torch_memory)}GiB, "
            f"timestamp={self.timestamp}, "
            f"auto_measure={self.auto_measure}"
        )

    def _repr_html_(self) -> str:
        from .display import snapshot_html  # imported on first display only; a difference shows as one

        return snapshot_html(self)


_FIGURE_FIELDS = ("non_kv_cache_memory", "torch_peak_increase", "non_torch_increase",
                  "weights_memory", "profile_time", "total_consumed", "transient_peak_headroom",
                  "non_torch_peak_increase", "peak_cuda_memory")


@dataclass
class MemoryProfilingResult:
    """Memory profiling result (vLLM's). All numbers are in bytes.

    Beyond vLLM: ``total_consumed`` (``before_create.free_memory - after_profile.free_memory``),
    ``transient_peak_headroom`` (``after_profile.torch_peak - after_profile.torch_allocated``),
    and from the sampler ``non_torch_peak_increase`` (highest non-torch memory seen during
    profiling minus the init snapshot's), ``peak_cuda_memory`` and ``timeline``. Without a
    sampler the peaks are taken over the two measured instants only.
    """

    non_kv_cache_memory: int = 0
    torch_peak_increase: int = 0
    non_torch_increase: int = 0
    weights_memory: int = 0
    before_create: MemorySnapshot = field(default_factory=MemorySnapshot)
    profile_time: float = 0.0
    total_consumed: int = 0
    transient_peak_headroom: int = 0
    non_torch_peak_increase: int = 0
    peak_cuda_memory: int = 0
    timeline: MemoryTimeline | None = None

    def __post_init__(self) -> None:
        device = self.before_create.device_
        self.before_profile = MemorySnapshot(device=device, auto_measure=False)
        self.after_profile = MemorySnapshot(device=device, auto_measure=False)

    def _apply(self, figures: Any) -> None:
        for name in _FIGURE_FIELDS:
            setattr(self, name, getattr(figures, name))

    def __repr__(self) -> str:
        figures = _C.ProfilingFigures()
        for name in _FIGURE_FIELDS:
            setattr(figures, name, getattr(self, name))
        return str(_C.memory_profiling_repr(figures))

    def _repr_html_(self) -> str:
        from .display import profiling_html  # imported on first display only

        return profiling_html(self)

    def plot_timeline(self, axes: Any = None) -> Any:
        """The sampler's timeline, the driver's view beside the allocator's (needs matplotlib, the
        ``plot`` extra); returns ``(figure, (driver_axes, allocator_axes))``. See
        :func:`vllm_mem.display.plot_timeline`."""
        from .display import plot_timeline

        return plot_timeline(self, axes)


@contextlib.contextmanager
def memory_profiling(
    baseline_snapshot: MemorySnapshot,
    weights_memory: int = 0,
    sample_interval_s: float | None = None,
) -> Generator[MemoryProfilingResult, None, None]:
    """Memory profiling context manager (vLLM's, plus an optional peak sampler).

    Parameters
    ----------
    baseline_snapshot : MemorySnapshot
        The snapshot taken before the current vLLM instance was created.
    weights_memory : int
        Memory used by PyTorch for the model weights.
    sample_interval_s : float, optional
        When given, a C++ thread samples the device every ``sample_interval_s`` seconds while
        the block runs, so that memory allocated and freed inside the block (which vLLM's two
        readings miss) shows up in ``non_torch_peak_increase``, ``peak_cuda_memory`` and
        ``timeline``. ``0.0005`` is a good value.

    Yields
    ------
    MemoryProfilingResult
        Filled in when the block exits normally.

    Notes
    -----
    Same steps as vLLM: ``gc.collect()``, empty the cache, reset the peak, measure; run the
    block; ``gc.collect()``, empty the cache, measure; then ``torch_peak_increase`` from the
    profile, ``non_torch_increase`` from the baseline, and
    ``non_kv_cache_memory = non_torch_increase + torch_peak_increase + weights_memory``.
    The sampler always stops, also when the block raises.
    """
    if not isinstance(baseline_snapshot, MemorySnapshot):
        raise V.bad_type("baseline_snapshot", "a MemorySnapshot", baseline_snapshot)
    weights_memory = V.signed_bytes(weights_memory, "weights_memory")
    device = baseline_snapshot._index
    sampler = (MemorySampler(device=device, interval_s=sample_interval_s)
               if sample_interval_s is not None else None)
    gc.collect()
    _C.empty_cache()
    _C.reset_peak_memory_stats(device)

    result = MemoryProfilingResult(
        before_create=baseline_snapshot,
        # the part of memory used for holding the model weights
        weights_memory=weights_memory,
    )
    result.before_profile.measure()

    if sampler is None:
        yield result
    else:
        with sampler:
            yield result

    gc.collect()
    _C.empty_cache()
    result.after_profile.measure()

    figures = _C.compute_memory_profiling(
        result.before_create._record(), result.before_profile._record(),
        result.after_profile._record(), int(weights_memory),
        sampler.peaks() if sampler is not None else None)
    result._apply(figures)
    if sampler is not None:
        result.timeline = sampler.timeline


class DeviceMemoryProfiler:
    """Torch memory consumed inside a ``with`` block (vLLM's ``DeviceMemoryProfiler``).

    ``consumed_memory`` is the change of torch's allocated bytes; non-torch allocations and the
    allocator's cache are not counted, as in vLLM.
    """

    def __init__(self, device: DeviceLike = None) -> None:
        self.device = device

    def current_memory_usage(self) -> float:
        """Torch bytes allocated now (empty cache, reset peak, read the peak)."""
        gc.collect()
        return int(_C.current_torch_memory_usage(_device_index(self.device)))

    def __enter__(self) -> DeviceMemoryProfiler:
        self.initial_memory = self.current_memory_usage()
        return self

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc_val: BaseException | None, exc_tb: TracebackType | None) -> None:
        self.final_memory = self.current_memory_usage()
        self.consumed_memory = self.final_memory - self.initial_memory
        gc.collect()


def get_cpu_memory() -> int:
    """Returns the total CPU memory of the node in bytes (``MemTotal``)."""
    return int(_C.host_memory()[0])


@functools.cache
def get_max_shared_memory_bytes(gpu: int = 0) -> int:
    """Returns the maximum (opt-in) shared memory per thread block in bytes."""
    max_shared_mem = int(_C.max_shared_memory_per_block(_device_index(gpu, "gpu")))
    # value 0 will cause MAX_SEQ_LEN become negative and test_attention.py
    # will fail
    assert max_shared_mem > 0, "max_shared_mem cannot be zero"
    return max_shared_mem


def release_device_memory_under_pressure(device: DeviceLike) -> bool:
    """On integrated (UMA) GPUs, release caching-allocator memory back to the OS when system
    memory pressure is high.

    Returns
    -------
    bool
        True if memory was released (at least 512 MiB cached and host RAM more than 80% used).
    """
    if getattr(device, "type", "cuda") != "cuda" or (
            isinstance(device, str) and not device.startswith("cuda")):
        return False
    released = int(_C.release_device_memory_under_pressure(_device_index(device)))
    if released == 0:
        return False
    logger.debug("Released %sGiB of cached device memory under memory pressure",
                 format_gib(released))
    return True


def torch_memory_stats(device: DeviceLike = None) -> dict[str, int]:
    """Torch's aggregate allocator statistics by ``torch.cuda.memory_stats()`` key, read in C++;
    empty when unavailable (torch not imported or CUDA not initialised), as torch returns."""
    return dict(_C.torch_memory_stats(_device_index(device)))
