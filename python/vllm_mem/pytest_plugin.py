"""pytest plugin (entry point ``pytest11``): GPU-memory limits, leak checks and a per-test report.

The GPU counterpart of pytest-memray, on vllm_mem's snapshots, ``memory_profiling`` and peak
sampler (docs/pytest_plugin.md):

* ``@pytest.mark.limit_gpu_memory("2 GiB")``: the test fails when its GPU peak exceeds the limit;
  the message splits the peak into torch allocated / torch reserved / non-torch, and names the
  transient non-torch memory only the sampler saw.
* ``@pytest.mark.limit_gpu_leaks("16 MiB")``: the test fails when the memory still held after it
  (after ``gc.collect()`` and ``empty_cache``) grew by more than the limit, torch and non-torch
  separately.
* ``--gpu-memory[=N]``: a terminal summary of the N tests with the largest GPU peaks.
* ``gpu_memory``: a fixture handing the test its own :class:`GpuMemoryProfiler`.
* ``--gpu-per-worker``: under pytest-xdist, one GPU per worker through ``CUDA_VISIBLE_DEVICES``.
* ``gpu``: a marker for tests that need a GPU, skipped cleanly without one.

Light at load: the hooks import nothing of the extension's device code until a measured test
runs, and GPU presence is decided from the device nodes, so a run without measured tests never
opens the driver or creates a CUDA context in the pytest process.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

if TYPE_CHECKING:
    from .mem_utils import MemoryProfilingResult
    from .testing import SimulatedDevice

__all__ = ["GpuMemoryProfiler", "GpuMemoryUsage", "gpu_memory", "gpu_visible", "parse_size",
           "simulated_device"]

# /dev/nvidiaN on discrete GPUs; /dev/nvgpu* and nvhost-ctrl-gpu on Jetson-class integrated ones.
_GPU_NODES = ("/dev/nvidia[0-9]*", "/dev/nvgpu*", "/dev/nvhost-ctrl-gpu")
_DISCRETE_NODES = "/dev/nvidia[0-9]*"
# WSL2 has no /dev/nvidia* node: the GPU is paravirtualised through /dev/dxg (any vendor's), and
# NVIDIA's driver is the libcuda.so the host mounts under /usr/lib/wsl/lib.
_WSL_NODE = "/dev/dxg"
_WSL_DRIVER = "/usr/lib/wsl/lib/libcuda.so*"

_DEFAULT_INTERVAL_S = 0.0005
_DEFAULT_TOP = 10
# The key under which a measured test's figures travel in its report (and across xdist workers).
_PROPERTY = "gpu_memory"

_NO_DEVICE_REASON = ("no NVIDIA GPU visible (no /dev/nvidia* node, or CUDA_VISIBLE_DEVICES hides "
                     "all) and no simulated device installed")


def gpu_visible() -> bool:
    """True when an NVIDIA GPU device node exists and CUDA_VISIBLE_DEVICES does not hide all."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return (any(glob.glob(pattern) for pattern in _GPU_NODES)
            or (os.path.exists(_WSL_NODE) and bool(glob.glob(_WSL_DRIVER))))


# ---------------------------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------------------------

def parse_size(value: object, what: str = "size") -> int:
    """Bytes from ``"2 GiB"`` or an ``int``: :func:`vllm_mem.units.parse_size`, the package's one
    size parser (the CLI's ``--gpu 80GiB`` reads sizes the same way). Imported on first use, so
    loading the plugin never loads the extension."""
    from .units import parse_size as parse

    return parse(value, what)


def _format_bytes(num_bytes: int) -> str:
    """vLLM's rounding (format_gib / format_mib, in C++) with the unit that reads best."""
    from .units import format_gib, format_mib

    if abs(num_bytes) >= 1 << 30:
        return f"{format_gib(num_bytes)} GiB"
    return f"{format_mib(num_bytes)} MiB"


def _signed(num_bytes: int) -> str:
    return ("+" if num_bytes >= 0 else "") + _format_bytes(num_bytes)


# ---------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------


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
    DEVICE_WIDE: ClassVar[tuple[str, ...]] = ("peak", "non_torch", "non_torch_at_end",
                                              "transient_non_torch", "held_non_torch")
    #: Figures of this process's torch allocator only.
    PROCESS_LOCAL: ClassVar[tuple[str, ...]] = ("torch_allocated", "torch_reserved",
                                                "held_torch_allocated", "held_torch_reserved")

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for reports and pytest-xdist)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuMemoryUsage:
        return cls(**data)

    def split(self) -> str:
        """The peak's split, one line each, as the failure messages show it."""
        lines = [
            f"  torch allocated  {_signed(self.torch_allocated):>14}   peak of tensors (torch's allocator)",
            f"  torch reserved   {_signed(self.torch_reserved):>14}   peak of the caching allocator's segments",
            f"  non-torch        {_signed(self.non_torch):>14}   peak outside torch (sampled every "
            f"{self.interval_s * 1e3:g} ms; {_signed(self.non_torch_at_end)} at the end)",
            f"  sampler's transient peak the allocator missed: {_format_bytes(self.transient_non_torch)} "
            "of non-torch memory taken and released inside the test "
            f"({self.num_samples} samples)",
        ]
        if self.torch_status != "available":
            lines.append(f"  torch allocator figures unavailable ({self.torch_status}): all memory "
                         "counts as non-torch")
        return "\n".join(lines)

    @property
    def shared_device_note(self) -> str:
        """Why non-torch figures can include other processes, when that can happen; else ''."""
        if self.reader == "simulated":
            return ""
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        if worker is None or workers <= 1 or os.environ.get(_OWN_GPU_ENV) == "1":
            return ""
        return (f"  note: pytest-xdist worker {worker} of {workers} may share {self.device} with "
                "other workers; device memory is read device-wide, so their allocations count "
                "as this test's non-torch memory and cannot be attributed per process "
                f"(device-wide: {', '.join(self.DEVICE_WIDE)}; this process's own: "
                f"{', '.join(self.PROCESS_LOCAL)}). --gpu-per-worker gives each worker its own "
                "GPU; limit_gpu_memory(..., torch_only=True) limits torch's own peak")


def _device_reason() -> str | None:
    """None when a device can be measured, else the reason to skip. Opens no driver."""
    from . import _C

    if _C.active_device_name() == "simulated" or gpu_visible():
        return None
    return _NO_DEVICE_REASON


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

    def __init__(self, device: Any = None, interval_s: float = _DEFAULT_INTERVAL_S) -> None:
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
        reason = _device_reason()
        if reason is not None:
            # Reported at the test's location, as a skip marker is, not at this line.
            raise pytest.skip.Exception(reason, _use_item_location=True)
        from .mem_utils import MemorySnapshot, memory_profiling

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
        self._usage = _usage_from(result, self.interval_s)
        return self._usage

    def __enter__(self) -> GpuMemoryProfiler:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc_val: BaseException | None, exc_tb: TracebackType | None) -> None:
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
        message = _limit_failure(self.usage, parse_size(limit, "GpuMemoryProfiler.check_limit"),
                                 f"check_limit({limit!r})", torch_only=bool(torch_only))
        if message:
            raise AssertionError(message)


def _usage_from(result: MemoryProfilingResult, interval_s: float) -> GpuMemoryUsage:
    """GpuMemoryUsage from a finished memory_profiling window.

    Every figure is one the C++ core computed (profiling figures, snapshot differences, sampler
    columns, allocator counters); here they are only read, related to the start reading, and the
    larger of two lower bounds of one peak is taken.
    """
    from . import _C

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


def _limit_failure(usage: GpuMemoryUsage, limit: int, marker: str, torch_only: bool = False) -> str:
    # torch_only: torch's tensor peak (this process's allocator), not the device-wide peak that
    # other processes on a shared GPU also move.
    value = usage.torch_allocated if torch_only else usage.peak
    if value <= limit:
        return ""
    what = "torch-only peak (tensors)" if torch_only else "peak"
    lines = [f"GPU memory limit exceeded on {usage.device}"
             f"{' (simulated)' if usage.reader == 'simulated' else ''}: {what} "
             f"{_format_bytes(value)} ({value} bytes) > limit {_format_bytes(limit)} "
             f"({limit} bytes) [{marker}]",
             usage.split()]
    if usage.shared_device_note:
        lines.append(usage.shared_device_note)
    return "\n".join(lines)


def _leak_failure(usage: GpuMemoryUsage, torch_limit: int | None, non_torch_limit: int | None,
                  marker: str) -> str:
    problems = []
    # Tensors still alive (allocated), not the allocator's segments (reserved): one live 1.5 MiB
    # tensor pins a whole 20 MiB segment, which empty_cache cannot release, yet leaks 1.5 MiB.
    if torch_limit is not None and usage.held_torch_allocated > torch_limit:
        problems.append(
            f"  torch      {_signed(usage.held_torch_allocated)} of tensors still alive > limit "
            f"{_format_bytes(torch_limit)} ({_signed(usage.held_torch_reserved)} still reserved "
            "by torch's allocator)")
    if non_torch_limit is not None and usage.held_non_torch > non_torch_limit:
        problems.append(
            f"  non-torch  {_signed(usage.held_non_torch)} still held outside torch > limit "
            f"{_format_bytes(non_torch_limit)}")
    if not problems:
        return ""
    lines = [f"GPU memory leaked on {usage.device}"
             f"{' (simulated)' if usage.reader == 'simulated' else ''}: held after the test "
             f"(after gc.collect() and empty_cache) minus held before it [{marker}]", *problems]
    if usage.torch_status != "available":
        lines.append(f"  torch allocator figures unavailable ({usage.torch_status}): all memory "
                     "counts as non-torch")
    if usage.shared_device_note:
        lines.append(usage.shared_device_note)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Markers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Limits:
    """What a test asked for, parsed at setup."""

    memory: int | None = None
    memory_torch_only: bool = False
    memory_marker: str = ""
    leaks_torch: int | None = None
    leaks_non_torch: int | None = None
    leaks_marker: str = ""
    device: Any = None


_LIMITS_KEY = pytest.StashKey[_Limits]()
_SUMMARY_PLUGIN = "vllm_mem-gpu-memory-summary"
_OWN_GPU_ENV = "VLLM_MEM_OWN_GPU"


def _marker_text(mark: pytest.Mark) -> str:
    args = [repr(a) for a in mark.args] + [f"{k}={v!r}" for k, v in mark.kwargs.items()]
    return f"@pytest.mark.{mark.name}({', '.join(args)})"


def _parse_limits(item: pytest.Item) -> _Limits | None:
    """The item's limit markers, parsed; ValueError naming the marker and value when bad."""
    memory_mark = item.get_closest_marker("limit_gpu_memory")
    leaks_mark = item.get_closest_marker("limit_gpu_leaks")
    if memory_mark is None and leaks_mark is None:
        return None
    devices = []
    memory = leaks_torch = leaks_non_torch = None
    torch_only = False
    if memory_mark is not None:
        text = _marker_text(memory_mark)
        unknown = set(memory_mark.kwargs) - {"device", "torch_only"}
        if len(memory_mark.args) != 1 or unknown:
            raise ValueError(f"{text}: takes one size and optionally torch_only= and device=, e.g. "
                             "@pytest.mark.limit_gpu_memory('2 GiB')")
        torch_only = memory_mark.kwargs.get("torch_only", False)
        if not isinstance(torch_only, bool):
            raise ValueError(f"{text}: torch_only must be True or False, got {torch_only!r}")
        memory = parse_size(memory_mark.args[0], text)
        devices.append(memory_mark.kwargs.get("device"))
    if leaks_mark is not None:
        text = _marker_text(leaks_mark)
        unknown = set(leaks_mark.kwargs) - {"torch", "non_torch", "device"}
        if len(leaks_mark.args) > 1 or unknown or not (
                leaks_mark.args or {"torch", "non_torch"} & set(leaks_mark.kwargs)):
            raise ValueError(f"{text}: takes one size for torch and non-torch memory, and "
                             "optionally torch= / non_torch= to set either apart, and device=, "
                             "e.g. @pytest.mark.limit_gpu_leaks('16 MiB')")
        both = parse_size(leaks_mark.args[0], text) if leaks_mark.args else None
        leaks_torch = (parse_size(leaks_mark.kwargs["torch"], text)
                       if "torch" in leaks_mark.kwargs else both)
        leaks_non_torch = (parse_size(leaks_mark.kwargs["non_torch"], text)
                           if "non_torch" in leaks_mark.kwargs else both)
        devices.append(leaks_mark.kwargs.get("device"))
    if len(devices) == 2 and devices[0] != devices[1]:
        raise ValueError(f"limit_gpu_memory and limit_gpu_leaks name different devices "
                         f"({devices[0]!r}, {devices[1]!r}); a test is measured on one")
    return _Limits(memory=memory, memory_torch_only=torch_only,
                   memory_marker=_marker_text(memory_mark) if memory_mark else "",
                   leaks_torch=leaks_torch, leaks_non_torch=leaks_non_torch,
                   leaks_marker=_marker_text(leaks_mark) if leaks_mark else "",
                   device=devices[0])


# ---------------------------------------------------------------------------------------------
# Hooks
# ---------------------------------------------------------------------------------------------


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--gpu-memory takes a number of tests, got {text!r}: write --gpu-memory=N (with '=') "
            "or put --gpu-memory after the paths") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--gpu-memory=N needs N >= 0 (0: all), got {value}")
    return value


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--gpu-memory-interval: {text!r} is not seconds") from None
    if not 1e-5 <= value <= 60:
        raise argparse.ArgumentTypeError(f"--gpu-memory-interval: {value} s is outside [1e-5, 60]")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vllm_mem", "GPU memory (vllm_mem)")
    group.addoption(
        "--gpu-memory", action="store", nargs="?", const=_DEFAULT_TOP, default=None, type=_count,
        metavar="N",
        help=f"show the N tests with the largest GPU peaks (default {_DEFAULT_TOP}; 0: all). "
             "Measures tests marked gpu, limit_gpu_memory or limit_gpu_leaks, and those using "
             "the gpu_memory fixture; other tests never touch the device.")
    group.addoption(
        "--gpu-memory-interval", action="store", type=_interval, default=_DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"peak sampler interval for measured tests (default {_DEFAULT_INTERVAL_S})")
    group.addoption(
        "--gpu-per-worker", action="store_true", default=False,
        help="under pytest-xdist, give worker gwN the N-th visible GPU (round robin) through "
             "CUDA_VISIBLE_DEVICES, so each worker's non-torch memory is its own")


def _visible_gpus() -> list[str]:
    """The GPUs a worker may be given: CUDA_VISIBLE_DEVICES's entries, else one per device node."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [entry.strip() for entry in visible.split(",") if entry.strip()]
    return [str(i) for i in range(len(glob.glob(_DISCRETE_NODES)))]


def _assign_worker_gpu(enabled: bool) -> None:
    """--gpu-per-worker in an xdist worker: set CUDA_VISIBLE_DEVICES before CUDA is initialised."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not enabled or worker is None or os.environ.get(_OWN_GPU_ENV) is not None:
        return
    match = re.fullmatch(r"gw(\d+)", worker)
    gpus = _visible_gpus()
    if match is None or not gpus:
        return
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus[int(match[1]) % len(gpus)]
    os.environ[_OWN_GPU_ENV] = "1" if workers <= len(gpus) else "0"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    # Before conftests run, in case one initialises CUDA at import (entry-point and -p loads).
    _assign_worker_gpu(bool(getattr(early_config.known_args_namespace, "gpu_per_worker", False)))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gpu: needs an NVIDIA GPU and its driver; skipped cleanly without one")
    config.addinivalue_line(
        "markers", "limit_gpu_memory(limit, *, torch_only=False, device=None): fail the test "
                   "when its GPU peak exceeds limit ('2 GiB', '512 MiB' or bytes); torch_only: "
                   "the peak of torch's tensors, not the device-wide peak")
    config.addinivalue_line(
        "markers", "limit_gpu_leaks(limit, *, torch=None, non_torch=None, device=None): fail "
                   "the test when GPU memory still held after it grew by more than limit")
    config.pluginmanager.register(_Summary(config.getoption("gpu_memory")), _SUMMARY_PLUGIN)
    _assign_worker_gpu(bool(config.getoption("gpu_per_worker")))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_visible():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU visible (no /dev/nvidia* node)")
    for item in items:
        # The marker, not a keyword: "gpu" in item.keywords also matches a folder or module
        # named gpu, which would skip every test in it.
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Bad marker arguments fail the test at setup, before any fixture or device is touched.
    try:
        limits = _parse_limits(item)
    except ValueError as exc:
        message = f"bad GPU memory marker on {item.nodeid}: {exc}"
    else:
        message = ""
    if message:
        pytest.fail(message, pytrace=False)
    if limits is not None:
        item.stash[_LIMITS_KEY] = limits


def _measured(item: pytest.Item, limits: _Limits | None) -> bool:
    if limits is not None:
        return True
    if item.config.getoption("gpu_memory") is None:
        return False
    return (item.get_closest_marker("gpu") is not None
            or "gpu_memory" in getattr(item, "fixturenames", ()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    limits = item.stash.get(_LIMITS_KEY, None)
    if not _measured(item, limits):
        return (yield)
    profiler = GpuMemoryProfiler(device=limits.device if limits else None,
                                 interval_s=item.config.getoption("gpu_memory_interval"))
    profiler.start()  # skips here without a device
    try:
        outcome = yield
    except BaseException:
        # The test's own failure wins; its figures still go to the summary when readable.
        with contextlib.suppress(Exception):
            item.user_properties.append((_PROPERTY, profiler.stop().to_dict()))
        raise
    usage = profiler.stop()
    item.user_properties.append((_PROPERTY, usage.to_dict()))
    if limits is not None:
        failures = []
        if limits.memory is not None:
            failures.append(_limit_failure(usage, limits.memory, limits.memory_marker,
                                           torch_only=limits.memory_torch_only))
        if limits.leaks_torch is not None or limits.leaks_non_torch is not None:
            failures.append(_leak_failure(usage, limits.leaks_torch, limits.leaks_non_torch,
                                          limits.leaks_marker))
        message = "\n".join(f for f in failures if f)
        if message:
            pytest.fail(message, pytrace=False)
    return outcome


class _Summary:
    """The figures of this session's measured tests, in the process that prints the summary.

    Under pytest-xdist that is the controller: each worker's call report carries its figures in
    ``user_properties``, which xdist sends along.
    """

    def __init__(self, top: int | None) -> None:
        self.top = top
        self.records: list[tuple[str, GpuMemoryUsage]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == _PROPERTY and isinstance(value, dict):
                self.records.append((report.nodeid, GpuMemoryUsage.from_dict(value)))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        top = self.top
        if top is None:
            return
        records = sorted(self.records, key=lambda r: (-r[1].peak, r[0]))
        title = "GPU memory peaks" if top == 0 else f"largest {top} GPU memory peaks"
        terminalreporter.write_sep("=", title)
        if not records:
            terminalreporter.write_line(
                "no test measured GPU memory (measured: tests marked gpu, limit_gpu_memory or "
                "limit_gpu_leaks, and tests using the gpu_memory fixture)")
            return
        shown = records if top == 0 else records[:top]
        for nodeid, usage in shown:
            simulated = " simulated" if usage.reader == "simulated" else ""
            terminalreporter.write_line(
                f"{_format_bytes(usage.peak):>12} peak  {nodeid}  (torch allocated "
                f"{_format_bytes(usage.torch_allocated)}, reserved "
                f"{_format_bytes(usage.torch_reserved)}, non-torch {_format_bytes(usage.non_torch)}, "
                f"transient {_format_bytes(usage.transient_non_torch)}; {usage.device}{simulated})")
        if len(records) > len(shown):
            terminalreporter.write_line(
                f"({len(records) - len(shown)} more measured; --gpu-memory=0 shows all)")


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def gpu_memory(request: pytest.FixtureRequest) -> Iterator[GpuMemoryProfiler]:
    """A :class:`GpuMemoryProfiler` of the current device for this test (stopped at teardown)."""
    profiler = GpuMemoryProfiler(interval_s=request.config.getoption("gpu_memory_interval"))
    yield profiler
    if profiler.running:
        profiler.stop()


@pytest.fixture
def simulated_device() -> Iterator[SimulatedDevice]:
    """An 80 GiB simulated device, active for the test."""
    from .testing import SimulatedDevice

    with SimulatedDevice() as device:
        yield device

