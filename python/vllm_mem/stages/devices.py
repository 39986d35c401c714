"""The GPUs a stage check runs on: catalog names or totals offline, or the visible devices now,
and the ``CUDA_VISIBLE_DEVICES`` mapping from logical to physical ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Union

from .. import _C

GpuSpec = Union[str, int]
GpusArg = Union[None, GpuSpec, Sequence[GpuSpec], Mapping[int, GpuSpec]]
FreeArg = Union[None, int, Sequence[int], Mapping[int, int]]
VisibleArg = Union[None, str, Sequence[int]]


def visible_list(cuda_visible_devices: VisibleArg) -> list[int]:
    if cuda_visible_devices is None:
        return []
    if isinstance(cuda_visible_devices, str):
        return list(_C.parse_cuda_visible_devices(cuda_visible_devices))
    return [int(x) for x in cuda_visible_devices]


def gpu_info(physical_id: int, gpu: GpuSpec, free: int = -1) -> _C.DeviceMemoryInfo:
    if isinstance(gpu, bool) or not isinstance(gpu, (str, int)):
        raise TypeError(f"gpus: a GPU is a catalog name or a total in bytes, got {gpu!r}")
    if isinstance(gpu, str):
        return _C.DeviceMemoryInfo(physical_id, gpu, 0, free)
    return _C.DeviceMemoryInfo(physical_id, "", int(gpu), free)


def live_devices(visible: list[int]) -> list[_C.DeviceMemoryInfo]:
    """Per visible device: a fresh snapshot's total and free, keyed by physical id."""
    count = int(_C.device_count())
    if count <= 0:
        raise ValueError(
            "gpus: no GPU is visible for a live check; to check offline pass gpus='H100-80GB' "
            "or a total in bytes (CLI: --gpu H100-80GB)"
        )
    out = []
    for index in range(count):
        snap = _C.measure_snapshot(index)
        physical = visible[index] if index < len(visible) else index
        out.append(
            _C.DeviceMemoryInfo(
                physical, str(_C.active_device_name()), int(snap.total_memory), int(snap.free_memory)
            )
        )
    return out


