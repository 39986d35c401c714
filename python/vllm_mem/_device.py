"""Device arguments as vLLM accepts them (int, ``"cuda:N"``, ``torch.device``), without importing
torch: a ``torch.device`` is recognised by its ``type``/``index`` attributes, and ``device_``
objects are real ``torch.device`` values only when torch is already imported."""

from __future__ import annotations

import sys
from typing import Any, Union

from . import _C

__all__ = ["CudaDevice", "DeviceLike", "device_index", "make_device"]


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
        raise TypeError(f"device must be an int, 'cuda:N' or a torch.device, got {device!r}")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"device: unknown CUDA device index {device} (indices are >= 0)")
        return device
    if isinstance(device, str):
        index = _C.parse_cuda_device(device)
        return int(_C.current_device()) if index is None else int(index)
    dev_type = getattr(device, "type", None)
    if not isinstance(dev_type, str):
        raise TypeError(f"device must be an int, 'cuda:N' or a torch.device, got {device!r}")
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
