"""vllm_mem.patch_vllm() against a stand-in ``vllm.utils.mem_utils`` with vLLM's signatures.

The stand-ins copy the signatures and dataclass fields of vLLM's module (the float-returning
``format_gib`` of a6d5c390 and the str-returning one of later main) with bodies that cannot
run without torch: a call that reached them would fail, so every figure below is vllm_mem's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import types
from collections.abc import Generator, Iterator
from typing import Any

import pytest
import vllm_mem
from vllm_mem import mem_utils, units
from vllm_mem.testing import SimulatedDevice

GiB = 1 << 30
MiB = 1 << 20


def _stand_in(format_returns: str = "float", *, extra_param: bool = False) -> types.ModuleType:
    """A ``vllm.utils.mem_utils`` with vLLM's names, signatures and fields, and bodies that fail."""
    m = types.ModuleType("vllm.utils.mem_utils")

    def unreachable(*_: Any, **__: Any) -> Any:
        raise AssertionError("vLLM's stand-in ran: the patch did not take")

    if format_returns == "float":
        def format_gib(b: int) -> float:
            return round(b / GiB, 2)
    else:
        def format_gib(b: int) -> float:  # type: ignore[misc]
            return str(round(b / GiB, 2))  # type: ignore[return-value]

    @dataclasses.dataclass
    class MemorySnapshot:
        torch_peak: int = 0
        free_memory: int = 0
        total_memory: int = 0
        cuda_memory: int = 0
        torch_memory: int = 0
        non_torch_memory: int = 0
        timestamp: float = 0.0
        device: Any = None
        auto_measure: bool = True

        def __post_init__(self) -> None:
            if self.auto_measure:
                unreachable()

    @dataclasses.dataclass
    class MemoryProfilingResult:
        non_kv_cache_memory: int = 0
        torch_peak_increase: int = 0
        non_torch_increase: int = 0
        weights_memory: int = 0
        before_create: MemorySnapshot = dataclasses.field(default_factory=MemorySnapshot)
        profile_time: float = 0.0

    if extra_param:
        @contextlib.contextmanager
        def memory_profiling(baseline_snapshot: MemorySnapshot, weights_memory: int = 0, *,
                             future_knob: bool = False) -> Generator[MemoryProfilingResult, None, None]:
            unreachable()
            yield MemoryProfilingResult()
    else:
        @contextlib.contextmanager
        def memory_profiling(baseline_snapshot: MemorySnapshot,  # type: ignore[misc]
                             weights_memory: int = 0) -> Generator[MemoryProfilingResult, None, None]:
            unreachable()
            yield MemoryProfilingResult()

    class DeviceMemoryProfiler:
        def __init__(self, device: Any = None) -> None:
            unreachable()

    def get_cpu_memory() -> int:
        return unreachable()

    def get_max_shared_memory_bytes(gpu: int = 0) -> int:
        return unreachable()

    for name, value in dict(locals()).items():
        if not name.startswith("_") and name not in ("m", "format_returns", "extra_param", "unreachable"):
            setattr(m, name, value)
    m.GiB_bytes = GiB
    return m


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.SimpleNamespace]:
    """vllm, vllm.utils, vllm.utils.mem_utils and a worker that imported names from it, in
    sys.modules (removed again afterwards)."""
    mem = _stand_in()
    worker = types.ModuleType("vllm.v1.worker.gpu_worker")
    # The worker's own `from vllm.utils.mem_utils import MemorySnapshot, memory_profiling`.
    worker.MemorySnapshot = mem.MemorySnapshot
    worker.memory_profiling = mem.memory_profiling
    worker.format_gib = mem.format_gib
    for name, module in (("vllm", types.ModuleType("vllm")), ("vllm.utils", types.ModuleType("vllm.utils")),
                         ("vllm.utils.mem_utils", mem), ("vllm.v1.worker.gpu_worker", worker)):
        monkeypatch.setitem(sys.modules, name, module)
    yield types.SimpleNamespace(mem=mem, worker=worker, originals=dict(vars(mem)))


def _worker_profile(worker: types.ModuleType, sim: SimulatedDevice) -> Any:
    """What vLLM's worker does, through the names it imported: baseline, weights, profile."""
    baseline = worker.MemorySnapshot(device=0)
    sim.torch_alloc(512 * MiB)  # weights
    with worker.memory_profiling(baseline, weights_memory=512 * MiB) as result:
        sim.torch_alloc(GiB)
        sim.torch_free(GiB)
        sim.non_torch_alloc(256 * MiB)
    return result


def test_patch_swaps_module_and_importers_and_undo_restores(fake_vllm: types.SimpleNamespace) -> None:
    mem, worker, originals = fake_vllm.mem, fake_vllm.worker, fake_vllm.originals
    with SimulatedDevice(total_memory=80 * GiB) as sim:
        patch = vllm_mem.patch_vllm()
        try:
            assert patch.module is mem and patch.active
            assert mem.MemorySnapshot is mem_utils.MemorySnapshot
            assert worker.MemorySnapshot is mem_utils.MemorySnapshot  # the importer's copy too
            assert worker.memory_profiling is mem_utils.memory_profiling
            assert set(patch.swapped) >= {"MemorySnapshot", "MemoryProfilingResult", "memory_profiling",
                                          "format_gib", "DeviceMemoryProfiler", "get_cpu_memory",
                                          "get_max_shared_memory_bytes"}
            assert ("vllm.v1.worker.gpu_worker", "MemorySnapshot") in patch.rebound
            # Names vLLM's module lacks are not added; constants are never rebound.
            assert "release_device_memory_under_pressure" not in vars(mem)
            assert mem.GiB_bytes is originals["GiB_bytes"]
            result = _worker_profile(worker, sim)
            assert isinstance(result, mem_utils.MemoryProfilingResult)
            assert result.torch_peak_increase == GiB
            assert result.non_torch_increase == 256 * MiB
            assert result.non_kv_cache_memory == 512 * MiB + GiB + 256 * MiB
            assert mem.format_gib(3 * GiB // 2) == 1.5  # vLLM's float, from vllm_mem
        finally:
            patch.undo()
    assert not patch.active
    for name, original in originals.items():
        assert vars(mem)[name] is original, name
    assert worker.MemorySnapshot is originals["MemorySnapshot"]
    assert worker.memory_profiling is originals["memory_profiling"]
    patch.undo()  # a second undo changes nothing


def test_patch_as_context_manager(fake_vllm: types.SimpleNamespace) -> None:
    with vllm_mem.patch_vllm() as patch:
        assert fake_vllm.mem.memory_profiling is mem_utils.memory_profiling
        assert "patched" not in repr(patch) and "active" in repr(patch)
    assert fake_vllm.mem.memory_profiling is fake_vllm.originals["memory_profiling"]
    assert "undone" in repr(patch)


def test_str_format_gib_release_keeps_vllms_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    # Later vLLM main returns a str from format_gib: ours (a float) would change its type there.
    mem = _stand_in("str")
    monkeypatch.setitem(sys.modules, "vllm.utils.mem_utils", mem)
    original = mem.format_gib
    with vllm_mem.patch_vllm() as patch:
        assert mem.format_gib is original
        assert "returns str" in patch.kept["format_gib"]
        assert mem.MemorySnapshot is mem_utils.MemorySnapshot


def test_incompatible_measurement_signature_is_refused_and_nothing_changes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mem = _stand_in(extra_param=True)  # a release whose memory_profiling takes a new keyword
    monkeypatch.setitem(sys.modules, "vllm.utils.mem_utils", mem)
    before = dict(vars(mem))
    with pytest.raises(ValueError, match="^module: .*memory_profiling takes 'future_knob'"):
        vllm_mem.patch_vllm()
    assert dict(vars(mem)) == before


def test_disagreeing_constant_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    mem = _stand_in()
    mem.GiB_bytes = 10**9
    monkeypatch.setitem(sys.modules, "vllm.utils.mem_utils", mem)
    with pytest.raises(ValueError, match="GiB_bytes is 1000000000"):
        vllm_mem.patch_vllm()
    assert mem.MemorySnapshot is not mem_utils.MemorySnapshot


def test_without_vllm_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("vllm", "vllm.utils", "vllm.utils.mem_utils"):
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: ImportError on import
    with pytest.raises(ValueError, match=r"^module: vllm\.utils\.mem_utils cannot be imported"):
        vllm_mem.patch_vllm()
    with pytest.raises(TypeError, match="^module: "):
        vllm_mem.patch_vllm("vllm.utils.mem_utils")  # type: ignore[arg-type]


def test_our_names_stand_in_for_vllms_signatures() -> None:
    # The check the patch makes, on the real pair: vllm_mem's accept every vLLM parameter.
    from vllm_mem.vllm_patch import _incompatibility

    mem = _stand_in()
    for name in ("MemorySnapshot", "MemoryProfilingResult", "memory_profiling", "DeviceMemoryProfiler",
                 "format_gib", "get_cpu_memory", "get_max_shared_memory_bytes"):
        ours = getattr(mem_utils, name, None) or getattr(units, name)
        assert _incompatibility(name, getattr(mem, name), ours) is None, name


def test_patching_twice_is_harmless_and_the_first_undo_restores_vllm(fake_vllm: types.SimpleNamespace) -> None:
    # vLLM may load a general plugin more than once per process.
    first = vllm_mem.patch_vllm()
    second = vllm_mem.patch_vllm()
    assert fake_vllm.worker.MemorySnapshot is mem_utils.MemorySnapshot
    second.undo()
    assert fake_vllm.worker.MemorySnapshot is mem_utils.MemorySnapshot  # still the first patch's
    first.undo()
    assert fake_vllm.worker.MemorySnapshot is fake_vllm.originals["MemorySnapshot"]
    assert fake_vllm.mem.memory_profiling is fake_vllm.originals["memory_profiling"]


def test_undo_in_either_order_ends_with_vllms_names(fake_vllm: types.SimpleNamespace) -> None:
    first = vllm_mem.patch_vllm()
    second = vllm_mem.patch_vllm()
    first.undo()
    second.undo()  # finds vLLM's names back in place: leaves them
    assert fake_vllm.worker.MemorySnapshot is fake_vllm.originals["MemorySnapshot"]
    assert fake_vllm.mem.format_gib is fake_vllm.originals["format_gib"]
