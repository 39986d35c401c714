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

Laid out as pytest-memray is: :mod:`.plugin` (the hooks and fixtures pytest registers from this
package), :mod:`.marks` (each marker one function called with the marker's arguments),
:mod:`.measure` (the measured window and its figures) and :mod:`.helpers` (sizes).

Light at load: the hooks import nothing of the extension's device code until a measured test
runs, and GPU presence is decided from the device nodes, so a run without measured tests never
opens the driver or creates a CUDA context in the pytest process.
"""

from __future__ import annotations

import glob
import os

from .helpers import parse_size
from .marks import _leak_failure as _leak_failure
from .marks import _limit_failure as _limit_failure
from .measure import GpuMemoryProfiler, GpuMemoryUsage

# pytest registers this module (the entry point names the package): its hooks and fixtures are
# the plugin module's, re-exported here.
from .plugin import gpu_memory, simulated_device
from .plugin import pytest_addoption as pytest_addoption
from .plugin import pytest_collection_modifyitems as pytest_collection_modifyitems
from .plugin import pytest_configure as pytest_configure
from .plugin import pytest_load_initial_conftests as pytest_load_initial_conftests
from .plugin import pytest_runtest_call as pytest_runtest_call
from .plugin import pytest_runtest_setup as pytest_runtest_setup

__all__ = ["GpuMemoryProfiler", "GpuMemoryUsage", "gpu_memory", "gpu_visible", "parse_size", "simulated_device"]

# /dev/nvidiaN on discrete GPUs; /dev/nvgpu* and nvhost-ctrl-gpu on Jetson-class integrated ones.
# Kept in the package's namespace, where gpu_visible reads them (and a test can point them elsewhere).
_GPU_NODES = ("/dev/nvidia[0-9]*", "/dev/nvgpu*", "/dev/nvhost-ctrl-gpu")
# WSL2 has no /dev/nvidia* node: the GPU is paravirtualised through /dev/dxg (any vendor's), and
# NVIDIA's driver is the libcuda.so the host mounts under /usr/lib/wsl/lib.
_WSL_NODE = "/dev/dxg"
_WSL_DRIVER = "/usr/lib/wsl/lib/libcuda.so*"


def gpu_visible() -> bool:
    """True when an NVIDIA GPU device node exists and CUDA_VISIBLE_DEVICES does not hide all."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return any(glob.glob(pattern) for pattern in _GPU_NODES) or (
        os.path.exists(_WSL_NODE) and bool(glob.glob(_WSL_DRIVER))
    )
