"""The plugin's hooks: options, marker registration, the measured call, the summary, fixtures."""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .helpers import format_bytes
from .marks import MARKERS, Limit, read_limits
from .measure import DEFAULT_INTERVAL_S, OWN_GPU_ENV, GpuMemoryProfiler, GpuMemoryUsage

if TYPE_CHECKING:
    from ..testing import SimulatedDevice

_DEFAULT_TOP = 10
# The key under which a measured test's figures travel in its report (and across xdist workers).
_PROPERTY = "gpu_memory"
_LIMITS_KEY = pytest.StashKey[list[Limit]]()
_SUMMARY_PLUGIN = "vllm_mem-gpu-memory-summary"
# /dev/nvidiaN: one per discrete GPU, what --gpu-per-worker hands out without CUDA_VISIBLE_DEVICES.
_DISCRETE_NODES = "/dev/nvidia[0-9]*"


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--gpu-memory takes a number of tests, got {text!r}: write --gpu-memory=N (with '=') "
            "or put --gpu-memory after the paths"
        ) from None
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
        "--gpu-memory",
        action="store",
        nargs="?",
        const=_DEFAULT_TOP,
        default=None,
        type=_count,
        metavar="N",
        help=f"show the N tests with the largest GPU peaks (default {_DEFAULT_TOP}; 0: all). "
        "Measures tests marked gpu, limit_gpu_memory or limit_gpu_leaks, and those using "
        "the gpu_memory fixture; other tests never touch the device.",
    )
    group.addoption(
        "--gpu-memory-interval",
        action="store",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"peak sampler interval for measured tests (default {DEFAULT_INTERVAL_S})",
    )
    group.addoption(
        "--gpu-per-worker",
        action="store_true",
        default=False,
        help="under pytest-xdist, give worker gwN the N-th visible GPU (round robin) through "
        "CUDA_VISIBLE_DEVICES, so each worker's non-torch memory is its own",
    )


def _visible_gpus() -> list[str]:
    """The GPUs a worker may be given: CUDA_VISIBLE_DEVICES's entries, else one per device node."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [entry.strip() for entry in visible.split(",") if entry.strip()]
    return [str(i) for i in range(len(glob.glob(_DISCRETE_NODES)))]


def _assign_worker_gpu(enabled: bool) -> None:
    """--gpu-per-worker in an xdist worker: set CUDA_VISIBLE_DEVICES before CUDA is initialised."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not enabled or worker is None or os.environ.get(OWN_GPU_ENV) is not None:
        return
    match = re.fullmatch(r"gw(\d+)", worker)
    gpus = _visible_gpus()
    if match is None or not gpus:
        return
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus[int(match[1]) % len(gpus)]
    os.environ[OWN_GPU_ENV] = "1" if workers <= len(gpus) else "0"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # Before conftests run, in case one initialises CUDA at import (entry-point and -p loads).
    _assign_worker_gpu(bool(getattr(early_config.known_args_namespace, "gpu_per_worker", False)))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU and its driver; skipped cleanly without one")
    for marker in MARKERS:
        config.addinivalue_line("markers", marker.help())
    config.pluginmanager.register(_Summary(config.getoption("gpu_memory")), _SUMMARY_PLUGIN)
    _assign_worker_gpu(bool(config.getoption("gpu_per_worker")))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from . import gpu_visible

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
        limits = read_limits(item)
    except ValueError as exc:
        message = f"bad GPU memory marker on {item.nodeid}: {exc}"
    else:
        message = ""
    if message:
        pytest.fail(message, pytrace=False)
    if limits:
        item.stash[_LIMITS_KEY] = limits


def _measured(item: pytest.Item, limits: list[Limit] | None) -> bool:
    if limits:
        return True
    if item.config.getoption("gpu_memory") is None:
        return False
    return item.get_closest_marker("gpu") is not None or "gpu_memory" in getattr(item, "fixturenames", ())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    limits = item.stash.get(_LIMITS_KEY, None)
    if not _measured(item, limits):
        return (yield)
    profiler = GpuMemoryProfiler(
        device=limits[0].device if limits else None, interval_s=item.config.getoption("gpu_memory_interval")
    )
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
    message = "\n".join(failure for limit in limits or () if (failure := limit.check(usage)))
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
                "limit_gpu_leaks, and tests using the gpu_memory fixture)"
            )
            return
        shown = records if top == 0 else records[:top]
        for nodeid, usage in shown:
            simulated = " simulated" if usage.reader == "simulated" else ""
            terminalreporter.write_line(
                f"{format_bytes(usage.peak):>12} peak  {nodeid}  (torch allocated "
                f"{format_bytes(usage.torch_allocated)}, reserved "
                f"{format_bytes(usage.torch_reserved)}, non-torch {format_bytes(usage.non_torch)}, "
                f"transient {format_bytes(usage.transient_non_torch)}; {usage.device}{simulated})"
            )
        if len(records) > len(shown):
            terminalreporter.write_line(f"({len(records) - len(shown)} more measured; --gpu-memory=0 shows all)")


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
    from ..testing import SimulatedDevice

    with SimulatedDevice() as device:
        yield device
