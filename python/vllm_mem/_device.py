"""Device arguments as vLLM accepts them (int, ``"cuda:N"``, ``torch.device``), without importing
torch: a ``torch.device`` is recognised by its ``type``/``index`` attributes, and ``device_``
objects are real ``torch.device`` values only when torch is already imported."""

from __future__ import annotations

import sys
from typing import Any, Union

from . import _C
from .errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["CudaDevice", "DeviceLike", "LiveMemory", "device_index", "live_memory", "make_device"]


class CudaDevice:
    """A stand-in for ``torch.device("cuda", index)`` when torch is not imported.

    It prints as ``cuda:N`` and compares equal to a ``torch.device`` of the same type and index.
    """

    __slots__ = ("index",)
    type = "cuda"

    def __init__(self, index: int) -> None:
        self.index = index

    def __str__(self) -> str:
        return f"cuda:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='cuda', index={self.index})"

    def __eq__(self, other: object) -> bool:
        return (getattr(other, "type", None) == "cuda"
                and getattr(other, "index", None) == self.index)

    def __hash__(self) -> int:
        return hash(("cuda", self.index))


DeviceLike = Union[int, str, CudaDevice, Any, None]


def device_index(device: DeviceLike) -> int:
    """The CUDA ordinal of ``device``; ``None`` or a bare ``"cuda"`` mean the current device.

    Raises
    ------
    ValueError
        For a device that is not CUDA (``"cpu"``, ``torch.device("cpu")``, ``"cuda:x"``).
    TypeError
        For anything that is not a device.
    """
    if device is None:
        return int(_C.current_device())
    if isinstance(device, bool):
        raise InvalidArgumentTypeError(f"device: must be an int, 'cuda:N' or a torch.device; got {device!r}", "device")
    if isinstance(device, int):
        if device < 0:
            raise InvalidArgumentError(f"device: unknown CUDA device index {device} (indices are >= 0)", "device")
        return device
    if isinstance(device, str):
        index = _C.parse_cuda_device(device)
        return int(_C.current_device()) if index is None else int(index)
    dev_type = getattr(device, "type", None)
    if not isinstance(dev_type, str):
        raise InvalidArgumentTypeError(f"device: must be an int, 'cuda:N' or a torch.device; got {device!r}", "device")
    index = getattr(device, "index", None)
    if dev_type != "cuda":
        _C.parse_cuda_device(str(device))  # raises ValueError with the common message
    return int(_C.current_device()) if index is None else int(index)


_DEVICES: dict[tuple[int, bool], Any] = {}


def make_device(index: int) -> Any:
    """``torch.device("cuda", index)`` when torch is imported, else a :class:`CudaDevice`.

    Both are immutable, so one object per index is shared (building a torch.device costs about a
    microsecond, a third of a snapshot).
    """
    torch = sys.modules.get("torch")
    with_torch = torch is not None and hasattr(torch, "device")
    key = (index, with_torch)
    device = _DEVICES.get(key)
    if device is None:
        device = torch.device("cuda", index) if with_torch else CudaDevice(index)  # type: ignore[union-attr]
        _DEVICES[key] = device
    return device


class LiveMemory:
    """A visible GPU's memory read without a CUDA context (see :func:`live_memory`)."""

    __slots__ = ("free_bytes", "integrated", "pci_bus_id", "reserved_bytes", "source", "total_bytes")

    def __init__(self, free_bytes: int, total_bytes: int, reserved_bytes: int, integrated: bool,
                 pci_bus_id: str, source: str) -> None:
        self.free_bytes = free_bytes
        self.total_bytes = total_bytes
        self.reserved_bytes = reserved_bytes
        self.integrated = integrated
        self.pci_bus_id = pci_bus_id
        self.source = source

    def __repr__(self) -> str:
        return (f"LiveMemory(free_bytes={self.free_bytes}, total_bytes={self.total_bytes}, "
                f"reserved_bytes={self.reserved_bytes}, integrated={self.integrated}, "
                f"pci_bus_id={self.pci_bus_id!r}, source={self.source!r})")


def live_memory(index: int) -> LiveMemory:
    """Free and total memory of visible CUDA device ``index`` as the tools read it: from NVML by
    the device's PCI bus id, never through a CUDA context and without ``cuInit`` in this process,
    so the caller can still fork CUDA workers afterwards and a nearly full GPU is read, not
    failed on. ``total_bytes`` is NVML's total less the driver's reserve (what ``cuMemGetInfo``
    calls total, within a few MiB); on an integrated GPU (unified memory, where NVML has no
    memory figures) both come from the host's ``/proc/meminfo``, as vLLM reads free memory there.

    Raises
    ------
    RuntimeError
        No usable driver, or NVML cannot read the device (the reason is in the message).
    ValueError
        ``index`` is not a visible device.
    """
    ok, detail, free, total, reserved, bus = _C.nvml_memory(index)
    if _C.is_integrated(index):
        host_total, available = _C.host_memory()
        return LiveMemory(int(available), int(host_total), 0, True, str(bus), "host /proc/meminfo (integrated GPU)")
    if not ok:
        raise RuntimeError(f"NVML cannot read the memory of cuda:{index} ({bus}): {detail}")
    return LiveMemory(int(free), int(total) - int(reserved), int(reserved), False, str(bus), "nvml")
