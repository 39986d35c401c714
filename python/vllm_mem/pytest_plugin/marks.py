"""The markers, each defined once as a function called with the marker's arguments, as
pytest-memray defines ``limit_memory``: the function's signature is what the marker accepts (and
what ``pytest --markers`` prints), its docstring's first line the marker's help, and what it
returns the check the test's measured window must pass. The plugin's hooks only look the
functions up in :data:`MARKERS` and call them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .helpers import format_bytes, parse_size, signed

if TYPE_CHECKING:
    import pytest

    from .measure import GpuMemoryUsage


@dataclass(frozen=True)
class Limit:
    """What a marker asks of a test, read at setup: the device to measure and the check of the
    measured window (``""`` when it passes, else the failure message)."""

    name: str
    device: Any
    check: Callable[[GpuMemoryUsage], str]


class _Usage(Exception):
    """The marker's arguments do not have the shape it takes."""


def limit_gpu_memory(limit: object, *, torch_only: bool = False, device: Any = None, _marker: str = "") -> Limit:
    """fail the test when its GPU peak exceeds limit ('2 GiB', '512 MiB' or bytes); torch_only:
    the peak of torch's tensors, not the device-wide peak

    ``_marker`` is the marker as written, for messages (the plugin passes it)."""
    if not isinstance(torch_only, bool):
        raise ValueError(f"{_marker}: torch_only must be True or False, got {torch_only!r}")
    size = parse_size(limit, _marker)
    return Limit("limit_gpu_memory", device, lambda usage: _limit_failure(usage, size, _marker, torch_only=torch_only))


def limit_gpu_leaks(
    limit: object = None, *, torch: object = None, non_torch: object = None, device: Any = None, _marker: str = ""
) -> Limit:
    """fail the test when GPU memory still held after it grew by more than limit

    ``limit`` holds for torch and non-torch memory alike unless ``torch=`` / ``non_torch=`` set
    either apart; one of the three is needed."""
    if limit is None and torch is None and non_torch is None:
        raise _Usage
    both = parse_size(limit, _marker) if limit is not None else None
    torch_limit = parse_size(torch, _marker) if torch is not None else both
    non_torch_limit = parse_size(non_torch, _marker) if non_torch is not None else both
    return Limit("limit_gpu_leaks", device, lambda usage: _leak_failure(usage, torch_limit, non_torch_limit, _marker))


@dataclass(frozen=True)
class Marker:
    """One marker: its function and the one-line usage a wrongly shaped marker is answered with."""

    function: Callable[..., Limit]
    usage: str

    @property
    def name(self) -> str:
        return self.function.__name__

    def help(self) -> str:
        """The ``pytest --markers`` line: the function's signature without annotations and
        without the plugin's own ``_marker``, then its docstring's first paragraph."""
        signature = inspect.signature(self.function)
        parameters = [
            p.replace(annotation=p.empty) for p in signature.parameters.values() if not p.name.startswith("_")
        ]
        text = str(signature.replace(parameters=parameters, return_annotation=signature.empty))
        summary = " ".join((self.function.__doc__ or "").split("\n\n")[0].split())
        return f"{self.name}{text}: {summary}"

    def read(self, mark: pytest.Mark) -> Limit:
        """The marker's arguments, read; ValueError naming the marker and value when bad."""
        text = marker_text(mark)
        try:
            # The signature decides the shape, as a call would; the plugin's own _marker is not
            # the marker's to give.
            inspect.signature(self.function).bind(*mark.args, **mark.kwargs)
            if any(key.startswith("_") for key in mark.kwargs):
                raise _Usage
        except (TypeError, _Usage):
            raise ValueError(f"{text}: {self.usage}") from None
        try:
            return self.function(*mark.args, **mark.kwargs, _marker=text)
        except _Usage:
            raise ValueError(f"{text}: {self.usage}") from None


#: Every marker the plugin measures for, in the order their failures are reported.
MARKERS = (
    Marker(
        limit_gpu_memory,
        "takes one size and optionally torch_only= and device=, e.g. @pytest.mark.limit_gpu_memory('2 GiB')",
    ),
    Marker(
        limit_gpu_leaks,
        "takes one size for torch and non-torch memory, and optionally torch= / "
        "non_torch= to set either apart, and device=, e.g. "
        "@pytest.mark.limit_gpu_leaks('16 MiB')",
    ),
)


def marker_text(mark: pytest.Mark) -> str:
    args = [repr(a) for a in mark.args] + [f"{k}={v!r}" for k, v in mark.kwargs.items()]
    return f"@pytest.mark.{mark.name}({', '.join(args)})"


def read_limits(item: pytest.Item) -> list[Limit]:
    """The item's limit markers, read; ValueError naming the marker and value when bad."""
    limits = [marker.read(mark) for marker in MARKERS if (mark := item.get_closest_marker(marker.name)) is not None]
    if any(limit.device != limits[0].device for limit in limits):
        raise ValueError(
            f"{' and '.join(limit.name for limit in limits)} name different devices "
            f"({', '.join(repr(limit.device) for limit in limits)}); a test is measured on one"
        )
    return limits


def _limit_failure(usage: GpuMemoryUsage, limit: int, marker: str, torch_only: bool = False) -> str:
    # torch_only: torch's tensor peak (this process's allocator), not the device-wide peak that
    # other processes on a shared GPU also move.
    value = usage.torch_allocated if torch_only else usage.peak
    if value <= limit:
        return ""
    what = "torch-only peak (tensors)" if torch_only else "peak"
    lines = [
        f"GPU memory limit exceeded on {usage.device}"
        f"{' (simulated)' if usage.reader == 'simulated' else ''}: {what} "
        f"{format_bytes(value)} ({value} bytes) > limit {format_bytes(limit)} "
        f"({limit} bytes) [{marker}]",
        usage.split(),
    ]
    if usage.shared_device_note:
        lines.append(usage.shared_device_note)
    return "\n".join(lines)


def _leak_failure(usage: GpuMemoryUsage, torch_limit: int | None, non_torch_limit: int | None, marker: str) -> str:
    problems = []
    # Tensors still alive (allocated), not the allocator's segments (reserved): one live 1.5 MiB
    # tensor pins a whole 20 MiB segment, which empty_cache cannot release, yet leaks 1.5 MiB.
    if torch_limit is not None and usage.held_torch_allocated > torch_limit:
        problems.append(
            f"  torch      {signed(usage.held_torch_allocated)} of tensors still alive > limit "
            f"{format_bytes(torch_limit)} ({signed(usage.held_torch_reserved)} still reserved "
            "by torch's allocator)"
        )
    if non_torch_limit is not None and usage.held_non_torch > non_torch_limit:
        problems.append(
            f"  non-torch  {signed(usage.held_non_torch)} still held outside torch > limit "
            f"{format_bytes(non_torch_limit)}"
        )
    if not problems:
        return ""
    lines = [
        f"GPU memory leaked on {usage.device}"
        f"{' (simulated)' if usage.reader == 'simulated' else ''}: held after the test "
        f"(after gc.collect() and empty_cache) minus held before it [{marker}]",
        *problems,
    ]
    if usage.torch_status != "available":
        lines.append(f"  torch allocator figures unavailable ({usage.torch_status}): all memory counts as non-torch")
    if usage.shared_device_note:
        lines.append(usage.shared_device_note)
    return "\n".join(lines)
