"""Measurement: one window of GPU memory (a test's call, or a :class:`GpuMemoryProfiler` the test
drives) and its figures (:class:`GpuMemoryUsage`), read from :func:`vllm_mem.memory_profiling`."""

from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from .helpers import format_bytes, parse_size, signed
from .marks import _limit_failure

if TYPE_CHECKING:
    from ..mem_utils import MemoryProfilingResult

DEFAULT_INTERVAL_S = 0.0005
#: Set in a pytest-xdist worker that --gpu-per-worker gave a GPU of its own ("1") or a shared one ("0").
OWN_GPU_ENV = "VLLM_MEM_OWN_GPU"

NO_DEVICE_REASON = (
    "no NVIDIA GPU visible (no /dev/nvidia* node, or CUDA_VISIBLE_DEVICES hides all) and no simulated device installed"
)


@dataclass(frozen=True)
class GpuMemoryUsage:
    """What a measured window (a test's call, or a :class:`GpuMemoryProfiler`) took, in bytes.

    Increases are counted from the reading at the start of the window, taken after
    ``gc.collect()``, ``empty_cache`` and a reset of torch's peak statistics (as in
    :func:`vllm_mem.memory_profiling`, which does the measuring).

    **Device-wide or this process's own.** The driver reports free memory for the whole GPU, so
    :attr:`DEVICE_WIDE` figures (``peak``, ``non_torch``, ``non_torch_at_end``,
    ``transient_non_torch``, ``held_non_torch``) include whatever other processes on the same GPU
    did meanwhile, e.g. other pytest-xdist workers and their CUDA contexts. The torch figures
    (:attr:`PROCESS_LOCAL`) come from this process's allocator and are its own: use
    ``limit_gpu_memory(..., torch_only=True)`` and ``limit_gpu_leaks(torch=...)`` where a GPU is
    shared.

    Attributes
    ----------
    peak : int
        Highest device memory in use (``total - free``) during the window above its start:
        the sampler's maximum and the two readings (``MemoryProfilingResult.peak_cuda_memory``
        minus the start's ``cuda_memory``), and never less than ``torch_reserved``, which
        torch's allocator counts exactly even between two samples. Device-wide: another
        process's allocations on the same GPU count here (see :attr:`shared_device_note`).
    torch_allocated : int
        Peak of tensor memory above the start (``torch_peak_increase``; the sampled maximum
        when code under test reset torch's peak statistics itself).
    torch_reserved : int
        Peak of torch's caching-allocator segments above the start (allocator's
        ``reserved_bytes.all.peak`` or the sampled maximum, whichever is higher).
    non_torch : int
        Peak of non-torch memory above the start (``non_torch_peak_increase``: samples and the
        two readings). On the real device this is device-wide, not per process.
    non_torch_at_end : int
        Non-torch memory at the end above the start (vLLM's ``non_torch_increase``).
    transient_non_torch : int
        ``non_torch - non_torch_at_end``: non-torch memory taken and given back inside the
        window, which torch's allocator never sees and a before/after reading misses; only
        the sampler saw it.
    held_torch_allocated, held_torch_reserved, held_non_torch : int
        Still held after the window, after ``gc.collect()`` and ``empty_cache``, minus the same
        at its start (the field-wise difference of the two snapshots, computed in C++).
    torch_status : str
        ``"available"`` when torch's allocator figures are real, otherwise why they are 0
        (``"no_torch"``, ``"not_initialized"``, ...); everything then counts as non-torch.
    device : str
        ``"cuda:N"``.
    reader : str
        ``"cuda"`` for the real device, ``"simulated"`` for :class:`vllm_mem.testing.SimulatedDevice`.
    num_samples : int
        Samples the sampler took.
    interval_s : float
        The sampler's interval.
    """

    peak: int
    torch_allocated: int
    torch_reserved: int
    non_torch: int
    non_torch_at_end: int
    transient_non_torch: int
    held_torch_allocated: int
    held_torch_reserved: int
    held_non_torch: int
    torch_status: str
    device: str
    reader: str
    num_samples: int
    interval_s: float

    #: Figures read from the driver's free memory: every process on the GPU counts in them.
    DEVICE_WIDE: ClassVar[tuple[str, ...]] = (
        "peak",
        "non_torch",
        "non_torch_at_end",
        "transient_non_torch",
        "held_non_torch",
    )
    #: Figures of this process's torch allocator only.
    PROCESS_LOCAL: ClassVar[tuple[str, ...]] = (
        "torch_allocated",
        "torch_reserved",
        "held_torch_allocated",
        "held_torch_reserved",
    )

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for reports and pytest-xdist)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuMemoryUsage:
        return cls(**data)

    def split(self) -> str:
        """The peak's split, one line each, as the failure messages show it."""
        lines = [
            f"  torch allocated  {signed(self.torch_allocated):>14}   peak of tensors (torch's allocator)",
            f"  torch reserved   {signed(self.torch_reserved):>14}   peak of the caching allocator's segments",
            f"  non-torch        {signed(self.non_torch):>14}   peak outside torch (sampled every "
            f"{self.interval_s * 1e3:g} ms; {signed(self.non_torch_at_end)} at the end)",
            f"  sampler's transient peak the allocator missed: {format_bytes(self.transient_non_torch)} "
            "of non-torch memory taken and released inside the test "
            f"({self.num_samples} samples)",
        ]
        if self.torch_status != "available":
            lines.append(f"  torch allocator figures unavailable ({self.torch_status}): all memory counts as non-torch")
        return "\n".join(lines)

    @property
    def shared_device_note(self) -> str:
        """Why non-torch figures can include other processes, when that can happen; else ''."""
        if self.reader == "simulated":
            return ""
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        if worker is None or workers <= 1 or os.environ.get(OWN_GPU_ENV) == "1":
            return ""
        return (
            f"  note: pytest-xdist worker {worker} of {workers} may share {self.device} with "
            "other workers; device memory is read device-wide, so their allocations count "
            "as this test's non-torch memory and cannot be attributed per process "
            f"(device-wide: {', '.join(self.DEVICE_WIDE)}; this process's own: "
            f"{', '.join(self.PROCESS_LOCAL)}). --gpu-per-worker gives each worker its own "
            "GPU; limit_gpu_memory(..., torch_only=True) limits torch's own peak"
        )


def device_reason() -> str | None:
    """None when a device can be measured, else the reason to skip. Opens no driver."""
    from .. import _C
    from . import gpu_visible

    if _C.active_device_name() == "simulated" or gpu_visible():
        return None
    return NO_DEVICE_REASON


class GpuMemoryProfiler:
    """Measures one window on one GPU: :meth:`start`, run something, :meth:`stop`.

    The ``gpu_memory`` fixture hands each test one; the limit markers use one per test. It is
    :func:`vllm_mem.memory_profiling` with its peak sampler, plus the figures of
    :class:`GpuMemoryUsage`. Starting it skips the test where there is neither a GPU nor a
    simulated device.

    Parameters
    ----------
    device : int, str or torch.device, optional
        The CUDA device (the current one when ``None``).
    interval_s : float
        The sampler's interval, seconds (at least 1e-5).

    Notes
    -----
    ``start()`` empties torch's cache and resets its peak statistics, as ``memory_profiling``
    does; a window measured around it (a limit marker) still sees the earlier peak through its
    sampler.

    Examples
    --------
    >>> def test_forward(gpu_memory, model, batch):    # doctest: +SKIP
    ...     with gpu_memory:
    ...         model(batch)
    ...     assert gpu_memory.peak < 2 * 2**30, gpu_memory.usage.split()
    """

    def __init__(self, device: Any = None, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.device = device
        self.interval_s = float(interval_s)
        self._cm: contextlib.AbstractContextManager[MemoryProfilingResult] | None = None
        self._result: MemoryProfilingResult | None = None
        self._usage: GpuMemoryUsage | None = None

    @property
    def running(self) -> bool:
        return self._cm is not None

    def start(self) -> GpuMemoryProfiler:
        """Take the start reading and start sampling (skips the test without any device)."""
        if self._cm is not None:
            raise RuntimeError("GpuMemoryProfiler.start(): already running")
        reason = device_reason()
        if reason is not None:
            # Reported at the test's location, as a skip marker is, not at this line.
            raise pytest.skip.Exception(reason, _use_item_location=True)
        from ..mem_utils import MemorySnapshot, memory_profiling

        baseline = MemorySnapshot(device=self.device)
        cm = memory_profiling(baseline, sample_interval_s=self.interval_s)
        result = cm.__enter__()
        self._cm, self._result, self._usage = cm, result, None
        return self

    def stop(self) -> GpuMemoryUsage:
        """Stop sampling, take the end reading and return the window's figures."""
        cm, result = self._cm, self._result
        if cm is None or result is None:
            raise RuntimeError("GpuMemoryProfiler.stop(): not started")
        self._cm = None
        cm.__exit__(None, None, None)
        self._usage = usage_from(result, self.interval_s)
        return self._usage

    def __enter__(self) -> GpuMemoryProfiler:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        if self._cm is not None:
            self.stop()

    @property
    def result(self) -> MemoryProfilingResult:
        """The :class:`~vllm_mem.mem_utils.MemoryProfilingResult` of the last window."""
        if self._result is None or self._usage is None:
            raise RuntimeError("GpuMemoryProfiler: no finished window yet (call start() and stop())")
        return self._result

    @property
    def usage(self) -> GpuMemoryUsage:
        """The :class:`GpuMemoryUsage` of the last window."""
        if self._usage is None:
            raise RuntimeError("GpuMemoryProfiler: no finished window yet (call start() and stop())")
        return self._usage

    @property
    def peak(self) -> int:
        """:attr:`GpuMemoryUsage.peak` of the last window, bytes."""
        return self.usage.peak

    def check_limit(self, limit: object, torch_only: bool = False) -> None:
        """AssertionError with the split message when the last window's peak exceeds ``limit``
        (with ``torch_only``: the peak of torch's tensors, this process's own)."""
        message = _limit_failure(
            self.usage,
            parse_size(limit, "GpuMemoryProfiler.check_limit"),
            f"check_limit({limit!r})",
            torch_only=bool(torch_only),
        )
        if message:
            raise AssertionError(message)


def usage_from(result: MemoryProfilingResult, interval_s: float) -> GpuMemoryUsage:
    """GpuMemoryUsage from a finished memory_profiling window.

    Every figure is one the C++ core computed (profiling figures, snapshot differences, sampler
    columns, allocator counters); here they are only read, related to the start reading, and the
    larger of two lower bounds of one peak is taken.
    """
    from .. import _C

    start, end = result.before_profile, result.after_profile
    held = end - start
    timeline = result.timeline
    index = start._index
    stats = _C.torch_stats(index)
    sampled_allocated = int(timeline.torch_allocated.max()) if timeline is not None and len(timeline) else 0
    sampled_reserved = int(timeline.torch_reserved.max()) if timeline is not None and len(timeline) else 0
    torch_allocated = max(result.torch_peak_increase, sampled_allocated - start.torch_allocated)
    torch_reserved = max(int(stats.reserved_peak_bytes), sampled_reserved) - start.torch_memory
    peak = max(result.peak_cuda_memory - start.cuda_memory, torch_reserved, 0)
    return GpuMemoryUsage(
        peak=peak,
        torch_allocated=max(torch_allocated, 0),
        torch_reserved=max(torch_reserved, 0),
        non_torch=result.non_torch_peak_increase,
        non_torch_at_end=result.non_torch_increase,
        transient_non_torch=max(result.non_torch_peak_increase - result.non_torch_increase, 0),
        held_torch_allocated=held.torch_allocated,
        held_torch_reserved=held.torch_memory,
        held_non_torch=held.non_torch_memory,
        torch_status=start.torch_status,
        device=str(start.device_),
        reader=str(_C.active_device_name()),
        num_samples=len(timeline) if timeline is not None else 0,
        interval_s=interval_s,
    )
