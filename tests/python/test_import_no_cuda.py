"""Importing vllm_mem must not load CUDA: vLLM forks its workers after import, and a CUDA
driver initialised before fork() is unusable in the children."""

from __future__ import annotations

import json
import subprocess
import sys

_CUDA_LIBS = ("libcuda.so", "libcudart", "libnvidia-ml")


def _run(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=120)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


_PROBE = """
import json, sys
{body}
maps = open('/proc/self/maps').read()
libs = sorted({{line.split()[-1] for line in maps.splitlines() if len(line.split()) >= 6}})
print(json.dumps({{"libs": libs, "torch": "torch" in sys.modules}}))
"""


def _cuda_libs(libs: object) -> list[str]:
    assert isinstance(libs, list)
    return [lib for lib in libs if any(name in lib for name in _CUDA_LIBS)]


def test_import_maps_no_cuda_library() -> None:
    result = _run(_PROBE.format(body="import vllm_mem\nimport vllm_mem.mem_utils, "
                                     "vllm_mem.sampler, vllm_mem.testing"))
    assert _cuda_libs(result["libs"]) == []
    libs = result["libs"]
    assert isinstance(libs, list)
    assert any("/_C." in lib for lib in libs)  # the probe really saw the extension


def test_import_does_not_load_the_torch_provider() -> None:
    result = _run(_PROBE.format(body="import vllm_mem"))
    libs = result["libs"]
    assert isinstance(libs, list)
    assert not [lib for lib in libs if "_torch_provider" in lib]


def test_simulated_work_maps_no_cuda_library() -> None:
    body = """
from vllm_mem.mem_utils import MemorySnapshot, memory_profiling
from vllm_mem.testing import SimulatedDevice
with SimulatedDevice() as sim:
    base = MemorySnapshot()
    with memory_profiling(base, sample_interval_s=0.001):
        sim.torch_alloc(1 << 30)
"""
    result = _run(_PROBE.format(body=body))
    assert _cuda_libs(result["libs"]) == []
