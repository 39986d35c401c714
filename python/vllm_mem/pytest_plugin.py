"""pytest plugin (entry point ``pytest11``): the ``gpu`` marker and a ``simulated_device`` fixture.

Kept light: it imports nothing of vllm_mem at start-up and detects a GPU from the device nodes,
so it never loads the driver or creates a CUDA context in the pytest process (GPU tests spawn
their own processes).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import SimulatedDevice

__all__ = ["gpu_visible", "simulated_device"]

# /dev/nvidiaN on discrete GPUs; /dev/nvgpu* and nvhost-ctrl-gpu on Jetson-class integrated ones.
_GPU_NODES = ("/dev/nvidia[0-9]*", "/dev/nvgpu*", "/dev/nvhost-ctrl-gpu")


def gpu_visible() -> bool:
    """True when an NVIDIA GPU device node exists and CUDA_VISIBLE_DEVICES does not hide all."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return any(glob.glob(pattern) for pattern in _GPU_NODES)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gpu: needs an NVIDIA GPU and its driver; skipped cleanly without one")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_visible():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU visible (no /dev/nvidia* node)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def simulated_device() -> Iterator[SimulatedDevice]:
    """An 80 GiB simulated device, active for the test."""
    from .testing import SimulatedDevice

    with SimulatedDevice() as device:
        yield device
