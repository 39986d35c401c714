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
import sys
import warnings
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

#: Where a snapshot's torch figures came from: vllm_mem's reader (the torch provider, or the
#: simulated device), or torch.cuda's own statistics when torch is imported but the provider is
#: missing (a plain ``pip install`` builds none) or refused (torch upgraded after the build).
TORCH_SOURCES = ("provider", "torch.cuda")

# The C++ reader's status for "torch is imported, its figures exist, but vllm_mem cannot read
# them": the one status the torch.cuda fallback replaces.
_NO_PROVIDER = "no_provider"
# Reads of torch.cuda around one device read before settling for the pair that errs low (as
# csrc/core/memory/memory_snapshot.cc does for the provider's figures).
_CONSISTENT_READ_ATTEMPTS = 4
_fallback_warned = False
# The last measurement found no provider: the next goes to torch.cuda directly, so its first
# device read is already bracketed (a provider does not come back within a process; a test's
# simulated device can change, and the bracketing read then hands back the reader's figures).
_provider_missing = False


class TorchFallbackWarning(RuntimeWarning):
    """vllm_mem reads torch's allocator figures through ``torch.cuda`` (slower, Python-only)
    because its torch provider is missing or refused; emitted once per process."""


def _torch_cuda() -> Any | None:
    """``torch.cuda`` when torch is already imported (never imports it), else ``None``."""
    torch = sys.modules.get("torch")
    return getattr(torch, "cuda", None) if torch is not None else None


def _fallback_cuda(index: int) -> Any | None:
    """``torch.cuda`` when the C++ reader cannot read torch's figures for ``index`` but torch is
    imported; warns once per process. ``None`` when the reader has the figures (or torch is not
    imported, so there are none)."""
    if str(_C.torch_stats(index).status) != _NO_PROVIDER:
        return None
    cuda = _torch_cuda()
    if cuda is None:
        return None
    _warn_fallback()
    return cuda


def _warn_fallback() -> None:
    global _fallback_warned
    if _fallback_warned:
        return
    _fallback_warned = True
    _path, _loaded, refusal = _C.torch_provider_info()
    why = str(refusal) or "vllm_mem was built without its torch provider"
    warnings.warn(
        f"vllm_mem reads torch's allocator figures through torch.cuda.memory_stats: {why}. "
        "Snapshots and memory_profiling stay correct (torch_source='torch.cuda'); the peak sampler "
        "cannot run. Rebuild to restore the provider: pip install --no-build-isolation "
        "--force-reinstall vllm_mem", TorchFallbackWarning, stacklevel=4)


def _torch_cuda_figures(cuda: Any, index: int) -> tuple[str, int, int, int]:
    """``(status, allocated, allocated peak, reserved)`` from torch.cuda's own statistics."""
    try:
        if not cuda.is_initialized():
            return ("not_initialized", 0, 0, 0)
        stats = cuda.memory_stats(index)
    except Exception:  # torch raised (a driver error): the figures are unknown, say so
        return ("error", 0, 0, 0)
    keys = ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current")
    if not stats or any(k not in stats for k in keys):
        # Initialised but without statistics: a pluggable allocator (torch returns {}).
        return ("no_stats", 0, 0, 0)
    return ("available", int(stats[keys[0]]), int(stats[keys[1]]), int(stats[keys[2]]))


def _measure_with_torch_cuda(index: int, cuda: Any) -> tuple[tuple[Any, ...], str]:
    """``(fields, source)`` of a snapshot with torch's figures from torch.cuda: the device read
    (C++) bracketed by two torch reads that must agree on reserved bytes, so a segment torch maps
    in between is not counted as non-torch memory; after four tries the pair that errs low is
    kept. The reader's own fields when it turns out to have torch's figures after all."""
    before = _torch_cuda_figures(cuda, index)
    for attempt in range(1, _CONSISTENT_READ_ATTEMPTS + 1):
        fields = _C.measure_snapshot_fields(index)
        if fields[10] != _NO_PROVIDER:
            return fields, "provider"
        after = _torch_cuda_figures(cuda, index)
        if after[3] == before[3] or attempt == _CONSISTENT_READ_ATTEMPTS:
            break
        before = after
    chosen = after if after[3] >= before[3] else before
    status, allocated, peak, reserved = chosen
    (_, free, total, cuda_memory, _, _, timestamp, _, integrated, cuda_free, _) = fields
    return (peak, free, total, cuda_memory, reserved, cuda_memory - reserved, timestamp, allocated,
            integrated, cuda_free, status), "torch.cuda"


def _empty_cache(index: int) -> None:
    """torch's empty_cache through vllm_mem's reader, or through torch.cuda when that reader
    cannot reach torch: never silently nothing while torch holds a cache."""
    _C.empty_cache()
    cuda = _fallback_cuda(index)
    if cuda is not None and cuda.is_initialized():
        cuda.empty_cache()


def _reset_peak(index: int) -> None:
    _C.reset_peak_memory_stats(index)
    cuda = _fallback_cuda(index)
    if cuda is not None and cuda.is_initialized():
        cuda.reset_peak_memory_stats(index)


@functools.lru_cache(maxsize=64)
def _non_kv_formula(vllm_version: str) -> tuple[str, str]:
    """``(profile version, formula)`` of memory_profiling's non_kv_cache_memory for a release
    (rule "non_kv_cache_memory" of csrc/core/plan/vllm_versions.json)."""
    profile_version = str(_C.lookup_vllm_version(vllm_version)[0])
    for profile in _C.vllm_version_profiles():
        if profile["version"] == profile_version:
            for rule in profile["rules"]:
                if rule["rule"] == "non_kv_cache_memory":
                    return profile_version, str(rule["value"])
    raise RuntimeError(f"vLLM profile {profile_version} has no non_kv_cache_memory rule")


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
    (``"no_torch"``: torch is not imported; ``"not_initialized"``, ``"no_cuda_allocator"``, ...;
    ``"no_provider"``: torch is imported but its figures could not be read at all).
    ``torch_source`` says who read them: ``"provider"`` (vllm_mem's C++ reader) or
    ``"torch.cuda"`` (torch's own statistics, used with a warning when vllm_mem's torch provider
    is missing or refused); the repr names the source when it is not the provider.
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
    torch_source: str = field(default="provider", init=False)

    def __post_init__(self) -> None:
        self._index = _device_index(self.device)
        self.device_ = make_device(self._index)
        if self.auto_measure:
            self.measure()

    def measure(self) -> None:
        """Read the device now (releases the GIL while the driver is queried)."""
        global _provider_missing
        cuda = _torch_cuda() if _provider_missing else None
        if cuda is not None:
            fields, source = _measure_with_torch_cuda(self._index, cuda)
        else:
            fields, source = _C.measure_snapshot_fields(self._index), "provider"
        if fields[10] == _NO_PROVIDER:
            cuda = _fallback_cuda(self._index)  # warns once
            if cuda is not None:
                fields, source = _measure_with_torch_cuda(self._index, cuda)
        _provider_missing = fields[10] == _NO_PROVIDER or source == "torch.cuda"
        (self.torch_peak, self.free_memory, self.total_memory, self.cuda_memory,
         self.torch_memory, self.non_torch_memory, self.timestamp, self.torch_allocated,
         self.integrated, self.cuda_free_memory, self.torch_status) = fields
        self.torch_source = source

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
        out = MemorySnapshot._from_record(diff, self.device_)
        # As with the status, a difference is only as good as its less direct operand.
        out.torch_source = self.torch_source if self.torch_source != "provider" else other.torch_source
        return out

    def __repr__(self) -> str:
        # vLLM's text; a source other than vllm_mem's own reader is named after it, so a snapshot
        # never looks like the provider's when it is not.
        source = "" if self.torch_source == "provider" else f", torch_source={self.torch_source}"
        return self._vllm_repr() + source

    def _vllm_repr(self) -> str:
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
                  "non_torch_peak_increase", "peak_cuda_memory", "non_kv_cache_memory_components",
                  "non_kv_cache_memory_total_consumed", "formula")


@dataclass
class MemoryProfilingResult:
    """Memory profiling result (vLLM's). All numbers are in bytes.

    Beyond vLLM: ``total_consumed`` (``before_create.free_memory - after_profile.free_memory``),
    ``transient_peak_headroom`` (``after_profile.torch_peak - after_profile.torch_allocated``),
    and from the sampler ``non_torch_peak_increase`` (highest non-torch memory seen during
    profiling minus the init snapshot's), ``peak_cuda_memory`` and ``timeline``. Without a
    sampler the peaks are taken over the two measured instants only.

    ``non_kv_cache_memory`` follows the vLLM release in ``vllm_version`` (docs/vllm_versions.md,
    rule ``non_kv_cache_memory``): ``formula == "components"`` (older releases:
    ``non_torch_increase + torch_peak_increase + weights_memory``) or ``"total_consumed"``
    (later releases: ``total_consumed + transient_peak_headroom``), and the repr is that
    release's line. Both values are kept: ``non_kv_cache_memory_components`` and
    ``non_kv_cache_memory_total_consumed``. ``torch_source`` is ``"torch.cuda"`` when torch's
    figures came from torch's own statistics (the repr then says so).
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
    non_kv_cache_memory_components: int = 0
    non_kv_cache_memory_total_consumed: int = 0
    formula: str = "components"
    vllm_version: str = ""
    torch_source: str = "provider"

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
        line = str(_C.memory_profiling_repr(figures))
        if self.torch_source != "provider":
            line += f" (torch figures from {self.torch_source}: vllm_mem's torch provider is missing or refused)"
        return line

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
    vllm_version: str | None = None,
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
        ``timeline``. ``0.0005`` is a good value. Refused (RuntimeError) when torch is imported
        but vllm_mem has no torch provider: the thread cannot read torch's figures.
    vllm_version : str, optional
        The vLLM release whose ``non_kv_cache_memory`` formula and line to follow; by default the
        installed vllm's, else the newest release vllm_mem knows (as :func:`vllm_mem.plan`).

    Yields
    ------
    MemoryProfilingResult
        Filled in when the block exits normally.

    Notes
    -----
    Same steps as vLLM: ``gc.collect()``, empty the cache, reset the peak, measure; run the
    block; ``gc.collect()``, empty the cache, measure; then ``torch_peak_increase`` from the
    profile, ``non_torch_increase`` from the baseline, and
    ``non_kv_cache_memory`` by the release's formula. The sampler always stops, also when the
    block raises. With torch imported and vllm_mem's torch provider missing or refused, torch's
    figures, ``empty_cache`` and the peak reset go through ``torch.cuda`` (a
    :class:`TorchFallbackWarning`, once); when torch's figures cannot be read at all the
    measurement is refused (RuntimeError) rather than counting torch's memory as non-torch.
    """
    if not isinstance(baseline_snapshot, MemorySnapshot):
        raise V.bad_type("baseline_snapshot", "a MemorySnapshot", baseline_snapshot)
    weights_memory = V.signed_bytes(weights_memory, "weights_memory")
    from .planner.versions import choose_vllm_version  # the planner only when profiling

    profile_version, formula = _non_kv_formula(choose_vllm_version(vllm_version)[0])
    device = baseline_snapshot._index
    sampler = (MemorySampler(device=device, interval_s=sample_interval_s)
               if sample_interval_s is not None else None)
    gc.collect()
    _empty_cache(device)
    _reset_peak(device)

    result = MemoryProfilingResult(
        before_create=baseline_snapshot,
        # the part of memory used for holding the model weights
        weights_memory=weights_memory,
    )
    result.vllm_version = profile_version
    result.before_profile.measure()
    _require_torch_figures(result.before_profile)

    if sampler is None:
        yield result
    else:
        with sampler:
            yield result

    gc.collect()
    _empty_cache(device)
    result.after_profile.measure()
    _require_torch_figures(result.after_profile)

    figures = _C.compute_memory_profiling(
        result.before_create._record(), result.before_profile._record(),
        result.after_profile._record(), int(weights_memory),
        sampler.peaks() if sampler is not None else None, formula)
    result._apply(figures)
    sources = {s.torch_source for s in (result.before_create, result.before_profile, result.after_profile)}
    result.torch_source = "torch.cuda" if "torch.cuda" in sources else "provider"
    if sampler is not None:
        result.timeline = sampler.timeline


def _require_torch_figures(snapshot: MemorySnapshot) -> None:
    """Refuse a profile whose torch figures exist but could not be read: they would read as 0 and
    torch's memory as non-torch (the weights counted twice)."""
    if snapshot.torch_status == _NO_PROVIDER:
        raise RuntimeError(
            "memory_profiling: torch's allocator figures cannot be read (vllm_mem has no torch "
            "provider and torch.cuda is not importable here); refusing to count torch's memory as "
            "non-torch. Rebuild vllm_mem against this torch: pip install --no-build-isolation "
            "--force-reinstall vllm_mem")


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
        index = _device_index(self.device)
        cuda = _fallback_cuda(index)
        if cuda is None:
            return int(_C.current_torch_memory_usage(index))
        _empty_cache(index)
        _reset_peak(index)
        return _torch_cuda_figures(cuda, index)[2]

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
    """Torch's aggregate allocator statistics by ``torch.cuda.memory_stats()`` key, read in C++
    (or by torch.cuda when vllm_mem has no torch provider); empty when unavailable (torch not
    imported or CUDA not initialised), as torch returns."""
    index = _device_index(device)
    cuda = _fallback_cuda(index)
    if cuda is not None:
        if not cuda.is_initialized():
            return {}
        return {str(k): int(v) for k, v in sorted(cuda.memory_stats(index).items())}
    return dict(_C.torch_memory_stats(index))
