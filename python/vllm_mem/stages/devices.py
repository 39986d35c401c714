"""The GPUs a stage check runs on: catalog names or totals offline, or the visible devices now,
and the ``CUDA_VISIBLE_DEVICES`` mapping from logical to physical ids."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, Union

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..errors import InvalidArgumentError

GpuSpec = Union[str, int]
GpusArg = Union[None, GpuSpec, Sequence[GpuSpec], Mapping[int, GpuSpec]]
FreeArg = Union[None, int, Sequence[int], Mapping[int, int]]
VisibleArg = Union[None, str, Sequence[int]]
T = TypeVar("T")


def device_list_text(text: str, field: str) -> str:
    """A ``"0,1"`` device list: bounded length, and no empty entry. ``"0,,1"`` is refused: CUDA
    stops reading ``CUDA_VISIBLE_DEVICES`` at the first entry it cannot parse, so the devices
    after an empty one would silently be invisible."""
    V.text(text, field, max_chars=L.MAX_DEVICES_PER_LIST * 6, what='a device list such as "0,1"')
    if text.strip() and any(not part.strip() for part in text.split(",")):
        raise V.bad_value(field, 'a device list without empty entries, such as "0,1" (CUDA stops reading '
                                 "at an empty entry)", text)
    return text


def visible_list(cuda_visible_devices: VisibleArg, field: str = "cuda_visible_devices") -> list[int]:
    if cuda_visible_devices is None:
        return []
    if isinstance(cuda_visible_devices, str):
        return list(_C.parse_cuda_visible_devices(device_list_text(cuda_visible_devices, field)))
    ids = V.items(cuda_visible_devices, field, max_items=L.MAX_DEVICES_PER_LIST,
                  what='a device list ("0,1" or [0, 1]) or None')
    return [V.integer(x, f"{field}[{i}]", low=0, high=L.MAX_DEVICE_ID) for i, x in enumerate(ids)]


def gpu_info(physical_id: int, gpu: Any, free: int = -1, field: str = "gpus") -> _C.DeviceMemoryInfo:
    checked = V.gpu(gpu, field)
    if isinstance(checked, str):
        return _C.DeviceMemoryInfo(physical_id, checked, 0, free)
    return _C.DeviceMemoryInfo(physical_id, "", checked, free)


def device_id(value: Any, field: str) -> int:
    return V.integer(value, field, low=0, high=L.MAX_DEVICE_ID)


def per_device(value: Any, field: str, check: Callable[[Any, str], T]) -> dict[int, T]:
    """A ``{physical_id: x}`` mapping or a list indexed by physical id, bounded and checked."""
    if isinstance(value, Mapping):
        if len(value) > L.MAX_DEVICES_PER_LIST:
            raise V.bad_value(field, f"at most {L.MAX_DEVICES_PER_LIST} devices", value)
        return {device_id(k, f"{field} key"): check(v, f"{field}[{k}]") for k, v in value.items()}
    listed = V.items(value, field, max_items=L.MAX_DEVICES_PER_LIST, what="a list or a {physical_id: value} mapping")
    return {i: check(v, f"{field}[{i}]") for i, v in enumerate(listed)}


def live_devices(visible: list[int]) -> list[_C.DeviceMemoryInfo]:
    """Per visible device: its total and free memory now, keyed by physical id.

    On the real GPUs the figures come from NVML by PCI bus id (:func:`vllm_mem._device.live_memory`):
    no CUDA context is created or kept (vLLM's workers would count a kept one as another
    process's memory), ``cuInit`` is not called in this process, and a GPU too full for a context
    is still read. On a simulated device its snapshot is read."""
    count = int(_C.device_count())
    if count <= 0:
        raise InvalidArgumentError(
            "gpus: no GPU is visible for a live check; to check offline pass gpus='H100-80GB' "
            "or a total in bytes (CLI: --gpu H100-80GB)", "gpus")
    real = str(_C.active_device_name()) == "cuda"
    out = []
    for index in range(count):
        physical = visible[index] if index < len(visible) else index
        if real:
            from .._device import live_memory

            try:
                mem = live_memory(index)
            except RuntimeError as exc:  # the driver or NVML answered but cannot read the device
                raise InvalidArgumentError(f"gpus: cannot read cuda:{index} for a live check ({exc}); to check "
                                           "offline pass gpus='H100-80GB' or a total in bytes (CLI: --gpu H100-80GB)",
                                           "gpus") from exc
            total, free = mem.total_bytes, mem.free_bytes
        else:
            snap = _C.measure_snapshot(index)
            total, free = int(snap.total_memory), int(snap.free_memory)
        out.append(_C.DeviceMemoryInfo(physical, str(_C.active_device_name()), total, free))
    return out
