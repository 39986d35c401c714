"""vllm_mem's drop-in for vllm.utils.mem_utils, on the simulated device.

vLLM's own tests (tests/utils_/test_mem_utils.py) are ported with vLLM's exact asserts; the rest
covers what vLLM misses (a transient non-torch spike) and bad input.
"""

from __future__ import annotations

import sys
import types
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import vllm_mem
from vllm_mem import _C
from vllm_mem.mem_utils import (
    DeviceMemoryProfiler,
    MemoryProfilingResult,
    MemorySnapshot,
    format_gib,
    get_cpu_memory,
    get_max_shared_memory_bytes,
    memory_profiling,
    release_device_memory_under_pressure,
    torch_memory_stats,
)
from vllm_mem.sampler import MemorySampler, MemoryTimeline
from vllm_mem.testing import SimulatedDevice

MiB = 1 << 20
GiB = 1 << 30


@pytest.fixture
def sim() -> Iterator[SimulatedDevice]:
    with SimulatedDevice(total_memory=80 * GiB, num_devices=2) as device:
        yield device


class _Monitor:
    """vLLM's ``monitor``: the measured value at the start and the end of a block."""

    def __init__(self) -> None:
        self.values: list[int] = []

    def __enter__(self) -> _Monitor:
        self.values.append(MemorySnapshot().non_torch_memory)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.values.append(MemorySnapshot().non_torch_memory)


# ---- vLLM's test_memory_profiling, on the simulated device ---------------------------------

def test_memory_profiling(sim: SimulatedDevice) -> None:
    # 512 MiB allocation outside of this instance
    sim.other_process_alloc(512 * MiB)
    baseline_snapshot = MemorySnapshot()

    # load weights: randn(128, 1024, 1024, fp32)
    weights_memory = 128 * 1024 * 1024 * 4  # 512 MiB
    sim.torch_alloc(weights_memory)

    with memory_profiling(baseline_snapshot=baseline_snapshot,
                          weights_memory=weights_memory) as result, _Monitor() as monitored:
        # make a memory spike, 1 GiB
        sim.torch_alloc(256 * 1024 * 1024 * 4)
        sim.torch_free(256 * 1024 * 1024 * 4)
        # Add some extra non-torch memory 256 MiB (simulate NCCL)
        sim.non_torch_alloc(256 * MiB)

    # this is an analytic value, it is exact: only 256 MiB non-torch memory increase
    measured_diff = monitored.values[-1] - monitored.values[0]
    assert measured_diff == 256 * 1024 * 1024
    non_torch_ratio = result.non_torch_increase / (256 * 1024 * 1024)
    assert abs(non_torch_ratio - 1) <= 0.05
    assert result.torch_peak_increase == 1024 * 1024 * 1024
    # On the simulated device there is no CUDA runtime noise: the accounting is exact.
    assert result.non_torch_increase == 256 * MiB
    assert result.weights_memory == 512 * MiB
    assert result.non_kv_cache_memory == 256 * MiB + GiB + 512 * MiB
    assert result.total_consumed == 512 * MiB + 256 * MiB
    assert result.transient_peak_headroom == GiB  # peak 1.5 GiB, 0.5 GiB still allocated
    assert result.profile_time >= 0.0
    assert result.timeline is None
    # The profiler emptied the cache and reset the peak, as vLLM does.
    assert sim.reset_peak_calls == 1
    assert sim.empty_cache_calls == 2
    assert sim.state(0).torch_reserved_bytes == 512 * MiB


def test_memory_snapshot_uses_host_available_on_integrated_gpu() -> None:
    # vLLM: cuda free 40 GiB, total 120 GiB, psutil available 100 GiB, integrated.
    with SimulatedDevice(total_memory=120 * GiB, integrated=True,
                         host_total_memory=128 * GiB, host_available_memory=120 * GiB) as s:
        s.other_process_alloc(80 * GiB)
        s.set_host_memory(total=128 * GiB, available=100 * GiB)
        snapshot = MemorySnapshot()
    assert snapshot.free_memory == 100 * GiB
    assert snapshot.total_memory == 120 * GiB
    assert snapshot.cuda_free_memory == 40 * GiB  # the raw CUDA figure is kept
    assert snapshot.integrated is True
    assert snapshot.cuda_memory == 20 * GiB


def test_memory_snapshot_uses_cuda_on_discrete_gpu() -> None:
    with SimulatedDevice(total_memory=80 * GiB, host_total_memory=256 * GiB,
                         host_available_memory=3 * GiB) as s:
        s.other_process_alloc(10 * GiB)
        snapshot = MemorySnapshot()
    assert snapshot.free_memory == 70 * GiB
    assert snapshot.total_memory == 80 * GiB
    assert snapshot.integrated is False


def test_integrated_device_allocations_reduce_host_available() -> None:
    with SimulatedDevice(total_memory=64 * GiB, integrated=True, host_total_memory=64 * GiB,
                         host_available_memory=60 * GiB) as s:
        before = MemorySnapshot()
        s.non_torch_alloc(4 * GiB)
        after = MemorySnapshot()
    assert (after - before).non_torch_memory == 4 * GiB
    assert after.free_memory == 56 * GiB


# ---- what vLLM misses: a transient non-torch spike -------------------------------------------

def test_transient_non_torch_spike_is_missed_by_vllm_and_caught_by_sampler(
        sim: SimulatedDevice) -> None:
    sim.other_process_alloc(512 * MiB)
    baseline = MemorySnapshot()
    sim.torch_alloc(512 * MiB)
    with memory_profiling(baseline, weights_memory=512 * MiB,
                          sample_interval_s=1e-4) as result:
        # A 2 GiB workspace (cuBLAS, NCCL, attention backend) allocated and freed in the block.
        with sim.non_torch_buffer(2 * GiB):
            sim.wait_for_reads(3)  # the sampler thread has read the device while it was up
        sim.non_torch_alloc(256 * MiB)
    # vLLM's two readings see only the 256 MiB left at the end.
    assert result.non_torch_increase == 256 * MiB
    assert result.non_kv_cache_memory == 256 * MiB + 512 * MiB
    # The sampler saw the workspace.
    assert result.non_torch_peak_increase == 2 * GiB
    assert result.peak_cuda_memory == 512 * MiB + 512 * MiB + 2 * GiB
    timeline = result.timeline
    assert isinstance(timeline, MemoryTimeline)
    assert len(timeline) >= 3
    assert timeline.time_s.dtype == np.float64
    assert timeline.non_torch_memory.dtype == np.int64
    assert int(timeline.non_torch_memory.max()) == baseline.non_torch_memory + 2 * GiB
    np.testing.assert_array_equal(timeline.cuda_memory, 80 * GiB - timeline.free_memory)
    np.testing.assert_array_equal(timeline.non_torch_memory,
                                  timeline.cuda_memory - timeline.torch_reserved)
    assert int(timeline.non_torch_memory[-1]) == baseline.non_torch_memory + 256 * MiB


def test_standalone_sampler_catches_spike(sim: SimulatedDevice) -> None:
    base = MemorySnapshot()
    with MemorySampler(device="cuda:0", interval_s=1e-4) as sampler:
        sim.wait_for_reads(1)
        with sim.non_torch_buffer(3 * GiB):
            sim.wait_for_reads(2)
    assert not sampler.running
    assert sampler.error == ""
    assert sampler.peak_non_torch_memory - base.non_torch_memory == 3 * GiB
    assert sampler.num_samples == len(sampler.timeline)
    assert sampler.dropped_samples == 0


def test_without_sampler_peaks_come_from_the_two_readings(sim: SimulatedDevice) -> None:
    baseline = MemorySnapshot()
    with memory_profiling(baseline) as result:
        with sim.non_torch_buffer(2 * GiB):
            pass
    assert result.non_torch_peak_increase == 0
    assert result.peak_cuda_memory == 0


# ---- repr text -------------------------------------------------------------------------------

def test_snapshot_repr_is_vllm_text(sim: SimulatedDevice) -> None:
    s = MemorySnapshot(torch_peak=GiB, free_memory=70 * GiB, total_memory=80 * GiB,
                       cuda_memory=10 * GiB, torch_memory=3 * GiB // 2,
                       non_torch_memory=17 * GiB // 2, timestamp=1.5, auto_measure=False)
    assert repr(s) == (
        "torch_peak=1.0GiB, free_memory=70.0GiB, total_memory=80.0GiB, cuda_memory=10.0GiB, "
        "torch_memory=1.5GiB, non_torch_memory=8.5GiB, timestamp=1.5, auto_measure=False")


def test_profiling_result_repr_is_vllm_text(sim: SimulatedDevice) -> None:
    base = MemorySnapshot(auto_measure=False)
    r = MemoryProfilingResult(non_kv_cache_memory=3 * GiB // 2, torch_peak_increase=GiB,
                              non_torch_increase=GiB // 4, weights_memory=GiB // 2,
                              before_create=base, profile_time=2.345)
    assert repr(r) == (
        "Memory profiling takes 2.35 seconds. Total non KV cache memory: 1.5GiB; torch peak "
        "memory increase: 1.0GiB; non-torch forward increase memory: 0.25GiB; weights memory: "
        "0.5GiB.")
    assert r.before_profile.device_ == base.device_
    assert r.after_profile.auto_measure is False


def test_format_gib_is_reexported() -> None:
    assert format_gib(15 * GiB) == 15.0
    assert format_gib(int(14.9889 * GiB)) == 14.99


@pytest.mark.parametrize("num_bytes", [0, 1, 15 * GiB, int(14.9889 * GiB), -3 * GiB // 7, (1 << 50) - 1,
                                       123456789012, 2.5 * GiB])
def test_format_gib_is_vllms_float_and_text_is_its_str(num_bytes: int | float) -> None:
    # vLLM's format_gib returns round(b / GiB_bytes, 2), a float: a worker doing arithmetic on
    # it gets the same number from vllm_mem (a str here broke `format_gib(a) + format_gib(b)`).
    value = format_gib(num_bytes)
    assert type(value) is float and value == round(num_bytes / (1 << 30), 2)
    # The text formatter (the C++ core) prints exactly what vLLM's f-strings print.
    assert vllm_mem.format_gib_text(num_bytes) == f"{value}" == str(round(num_bytes / (1 << 30), 2))


# ---- snapshot arithmetic and devices ---------------------------------------------------------

def test_subtract_same_device(sim: SimulatedDevice) -> None:
    a = MemorySnapshot(device=1)
    sim.torch_alloc(GiB, device=1)
    sim.non_torch_alloc(GiB // 2, device=1)
    b = MemorySnapshot(device="cuda:1")
    d = b - a
    assert d.torch_peak == GiB
    assert d.torch_memory == GiB
    assert d.torch_allocated == GiB
    assert d.cuda_memory == 3 * GiB // 2
    assert d.non_torch_memory == GiB // 2
    assert d.free_memory == -(3 * GiB // 2)
    assert d.total_memory == 0
    assert d.auto_measure is False
    assert d.device_ == b.device_
    assert d.torch_status == "available"


def test_subtract_different_devices_raises_vllm_message(sim: SimulatedDevice) -> None:
    a = MemorySnapshot(device=0)
    b = MemorySnapshot(device="cuda:1")
    with pytest.raises(ValueError) as info:
        _ = a - b
    assert str(info.value) == (
        "The two snapshots should be from the same device! Found: cuda:0 vs. cuda:1")


def test_device_forms(sim: SimulatedDevice) -> None:
    fake_torch_device = types.SimpleNamespace(type="cuda", index=1)
    assert MemorySnapshot(device=fake_torch_device).device_ == MemorySnapshot(device=1).device_
    sim.set_current_device(1)
    assert MemorySnapshot().device_.index == 1
    assert MemorySnapshot(device="cuda").device_.index == 1
    assert str(MemorySnapshot(device=0).device_) == "cuda:0"


def test_torch_device_argument(sim: SimulatedDevice) -> None:
    torch = pytest.importorskip("torch")
    snap = MemorySnapshot(device=torch.device("cuda", 1))
    assert snap.device_ == torch.device("cuda:1")
    with pytest.raises(ValueError, match="expected a CUDA device"):
        MemorySnapshot(device=torch.device("cpu"))


@pytest.mark.parametrize("device", [2, -1, 99])
def test_unknown_device_index(sim: SimulatedDevice, device: int) -> None:
    with pytest.raises(ValueError, match="unknown CUDA device index"):
        MemorySnapshot(device=device)


@pytest.mark.parametrize("device", ["cpu", "xpu:0", "cuda:x", "cuda:", "cuda:-1", "mps"])
def test_non_cuda_device_string(sim: SimulatedDevice, device: str) -> None:
    with pytest.raises(ValueError, match="expected a CUDA device"):
        MemorySnapshot(device=device)


@pytest.mark.parametrize("device", [1.5, True, object()])
def test_device_of_wrong_type(sim: SimulatedDevice, device: Any) -> None:
    with pytest.raises(TypeError):
        MemorySnapshot(device=device)


# ---- sampler bad input and shutdown ----------------------------------------------------------

@pytest.mark.parametrize("interval", [0.0, -1.0, 1e-9, float("nan"), float("inf"), 1e6])
def test_bad_sample_interval(sim: SimulatedDevice, interval: float) -> None:
    baseline = MemorySnapshot()
    with pytest.raises(ValueError, match="sample_interval_s"):
        with memory_profiling(baseline, sample_interval_s=interval):
            pass
    with pytest.raises(ValueError, match="sample_interval_s"):
        MemorySampler(interval_s=interval)


def test_sampler_stops_when_block_raises(sim: SimulatedDevice) -> None:
    sampler = MemorySampler(interval_s=1e-4)
    with pytest.raises(KeyError):
        with sampler:
            sim.wait_for_reads(2)
            raise KeyError("boom")
    assert not sampler.running
    assert sampler.num_samples >= 2


def test_memory_profiling_stops_sampler_when_block_raises(sim: SimulatedDevice) -> None:
    baseline = MemorySnapshot()
    with pytest.raises(RuntimeError, match="profile run failed"):
        with memory_profiling(baseline, sample_interval_s=1e-4):
            sim.wait_for_reads(2)
            raise RuntimeError("profile run failed")
    # Had the sampler survived, reads would keep coming; a new sampler must start cleanly and
    # the simulated device must be removable (no thread holds it busy).
    with MemorySampler(interval_s=1e-4):
        sim.wait_for_reads(1)


def test_sampler_unknown_device(sim: SimulatedDevice) -> None:
    with pytest.raises(ValueError, match="unknown CUDA device index"):
        with MemorySampler(device=5, interval_s=1e-3):
            pass


def test_use_after_driver_is_gone(sim: SimulatedDevice) -> None:
    baseline = MemorySnapshot()
    sim.fail("CUDA driver shut down")
    with pytest.raises(RuntimeError, match="CUDA driver shut down"):
        MemorySnapshot()
    with pytest.raises(RuntimeError, match="CUDA driver shut down"):
        with memory_profiling(baseline):
            pass
    sim.heal()
    # A driver lost while sampling stops the sampler and is reported at exit.
    with pytest.raises(RuntimeError, match="memory sampler stopped early: gone"):
        with MemorySampler(interval_s=1e-4) as sampler:
            sim.wait_for_reads(1)
            sim.fail("gone")
            while sampler.running:
                pass
    assert "gone" in sampler.error


# ---- torch availability ----------------------------------------------------------------------

def test_torch_not_initialised_is_flagged() -> None:
    with SimulatedDevice(torch_initialized=False) as s:
        s.non_torch_alloc(GiB)
        snap = MemorySnapshot()
        assert torch_memory_stats() == {}
    assert snap.torch_status == "not_initialized"
    assert snap.torch_peak == 0 and snap.torch_memory == 0
    assert snap.non_torch_memory == GiB
    assert (snap - snap).torch_status == "not_initialized"  # a difference keeps the flag


def test_torch_memory_stats_keys(sim: SimulatedDevice) -> None:
    sim.torch_alloc(GiB)
    stats = torch_memory_stats(0)
    assert stats["allocated_bytes.all.current"] == GiB
    assert stats["reserved_bytes.all.peak"] == GiB
    assert list(stats) == sorted(stats)


# ---- the other helpers -----------------------------------------------------------------------

def test_device_memory_profiler(sim: SimulatedDevice) -> None:
    sim.torch_alloc(GiB)
    with DeviceMemoryProfiler() as profiler:
        sim.torch_alloc(3 * GiB // 2)
        sim.non_torch_alloc(GiB)  # not torch: not counted, as in vLLM
    assert profiler.consumed_memory == 3 * GiB // 2
    assert profiler.initial_memory == GiB


def test_get_cpu_memory_and_shared_memory() -> None:
    with SimulatedDevice(host_total_memory=512 * GiB, host_available_memory=1 * GiB,
                         max_shared_memory_bytes=101376):
        assert get_cpu_memory() == 512 * GiB
        assert get_max_shared_memory_bytes() == 101376
        assert get_max_shared_memory_bytes(0) == 101376
    with SimulatedDevice(max_shared_memory_bytes=0):
        with pytest.raises(AssertionError, match="max_shared_mem cannot be zero"):
            get_max_shared_memory_bytes()


def test_release_under_pressure() -> None:
    with SimulatedDevice(total_memory=64 * GiB, integrated=True, host_total_memory=64 * GiB,
                         host_available_memory=60 * GiB) as s:
        s.torch_alloc(2 * GiB)
        s.torch_free(GiB)  # 1 GiB cached, unused
        s.set_host_memory(total=64 * GiB, available=20 * GiB)  # 69% used: no pressure
        assert release_device_memory_under_pressure("cuda:0") is False
        s.set_host_memory(total=64 * GiB, available=8 * GiB)  # 87.5% used
        assert release_device_memory_under_pressure("cpu") is False
        assert release_device_memory_under_pressure(types.SimpleNamespace(type="cpu",
                                                                          index=None)) is False
        assert release_device_memory_under_pressure(0) is True
        assert s.state().torch_reserved_bytes == GiB
        assert release_device_memory_under_pressure(0) is False  # nothing left to release
    with SimulatedDevice() as s:  # discrete: never
        s.torch_alloc(2 * GiB)
        s.torch_free(2 * GiB)
        s.set_host_memory(total=64 * GiB, available=GiB)
        assert release_device_memory_under_pressure(0) is False


def test_simulated_device_rejects_impossible_frees(sim: SimulatedDevice) -> None:
    with pytest.raises(ValueError):
        sim.torch_free(1)
    with pytest.raises(ValueError):
        sim.non_torch_free(1)
    with pytest.raises(RuntimeError, match="out of memory"):
        sim.torch_alloc(81 * GiB)


def test_nested_simulated_devices_restore() -> None:
    with SimulatedDevice(total_memory=10 * GiB):
        with SimulatedDevice(total_memory=20 * GiB):
            assert MemorySnapshot().total_memory == 20 * GiB
        assert MemorySnapshot().total_memory == 10 * GiB


def test_no_gpu_gives_a_clear_error() -> None:
    ok, why, count, _ = _C.cuda_driver_status()
    if ok and count > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError):
        MemorySnapshot()


def _no_gpu() -> bool:
    ok, _, count, _ = _C.cuda_driver_status()
    return not (ok and count > 0)


@pytest.mark.skipif(not _no_gpu(), reason="a GPU is present")
def test_cli_snapshot_without_gpu_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from vllm_mem.cli import main

    assert main(["snapshot"]) == 2
    err = capsys.readouterr().err
    assert "no GPU available" in err


def test_torch_provider_statuses_in_a_fresh_process() -> None:
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    path, _, _ = _C.torch_provider_info()
    if not os.path.exists(path):
        pytest.skip("vllm_mem was built without the torch provider")
    code = (
        "from vllm_mem import _C\n"
        "before = _C.torch_stats(0)\n"
        "import torch\n"
        "after = _C.torch_stats(0)\n"
        "print(before.status, after.status, torch.version.cuda is None, _C.torch_provider_info()[1])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         timeout=120).stdout.split()
    assert out[0] == "no_torch"  # torch not imported: the provider is not even loaded
    if out[2] == "True":  # a CPU-only torch: no CUDA allocator, said so rather than zeros
        assert out[1] == "no_cuda_allocator"
        assert out[3] == "True"
    else:  # a CUDA torch that has not initialised CUDA yet
        assert out[1] == "not_initialized"


# ---- issue 19: a torch segment mapped between the torch read and the device read ------------

def test_snapshot_survives_a_segment_mapped_between_its_reads(sim: SimulatedDevice) -> None:
    sim.torch_alloc(4 * GiB)
    sim.non_torch_alloc(GiB)
    sim.torch_alloc_between_reads(2 * GiB)  # lands after the torch read, before the device read
    snap = MemorySnapshot()
    assert sim.state(0).torch_reserved_bytes == 6 * GiB  # the injection happened
    assert snap.torch_memory == 6 * GiB
    assert snap.non_torch_memory == GiB  # was 3 GiB: the new segment counted as non-torch


def test_sampler_sees_no_spike_from_a_segment_mapped_between_reads(sim: SimulatedDevice) -> None:
    sim.non_torch_alloc(GiB)
    baseline = MemorySnapshot()
    with memory_profiling(baseline, sample_interval_s=1e-4) as result:
        sim.wait_for_reads(1)
        sim.torch_alloc_between_reads(8 * GiB)  # one whole segment, mid-sample
        sim.wait_for_reads(3)
        sim.torch_free(8 * GiB)
    assert result.timeline is not None
    assert int(result.timeline.torch_reserved.max()) == 8 * GiB  # the sampler saw the segment
    assert int(result.timeline.non_torch_memory.max()) == GiB
    assert result.non_torch_peak_increase == 0  # was 8 GiB: a false transient spike


# ---- issue 19: torch figures without the torch provider ---------------------------------------

class _TorchCudaStandIn:
    """``torch.cuda`` for a process whose vllm_mem has no torch provider: torch's own statistics
    are the simulated device's allocator figures, its empty_cache / reset_peak act on them."""

    def __init__(self, sim: SimulatedDevice) -> None:
        self.sim = sim
        self.initialized = True
        self.calls: list[str] = []

    def is_initialized(self) -> bool:
        return self.initialized

    def memory_stats(self, device: int | None = None) -> dict[str, int]:
        st = self.sim.state(device or 0)
        return {"allocated_bytes.all.current": st.torch_allocated_bytes,
                "allocated_bytes.all.peak": st.torch_allocated_peak_bytes,
                "reserved_bytes.all.current": st.torch_reserved_bytes,
                "reserved_bytes.all.peak": st.torch_reserved_peak_bytes}

    def empty_cache(self) -> None:
        self.calls.append("empty_cache")
        self.sim.torch_empty_cache()

    def reset_peak_memory_stats(self, device: int | None = None) -> None:
        self.calls.append("reset_peak_memory_stats")
        self.sim.torch_reset_peak(device or 0)


@pytest.fixture
def no_provider(sim: SimulatedDevice, monkeypatch: pytest.MonkeyPatch) -> _TorchCudaStandIn:
    """Torch imported (a stand-in), vllm_mem's provider missing: the reader says no_provider."""
    from vllm_mem import mem_utils

    cuda = _TorchCudaStandIn(sim)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(mem_utils, "_fallback_warned", False)
    monkeypatch.setattr(mem_utils, "_provider_missing", False)
    sim.set_torch_status("no_provider")
    return cuda


def _weights_and_activation(sim: SimulatedDevice, **kwargs: Any) -> MemoryProfilingResult:
    """10 GiB of weights, then a 2 GiB activation peak in the profile: 12 GiB non-KV."""
    baseline = MemorySnapshot()
    sim.torch_alloc(10 * GiB)
    with memory_profiling(baseline, weights_memory=10 * GiB, **kwargs) as result:
        sim.transient_torch(2 * GiB)
    return result


@pytest.mark.parametrize("vllm_version", ["0.19", "0.28"])
def test_profiling_without_provider_reads_torch_cuda(sim: SimulatedDevice, no_provider: _TorchCudaStandIn,
                                                     vllm_version: str) -> None:
    """Regression (issue 19): torch's figures read 0, empty_cache did nothing and the weights
    were counted twice: 22 GiB of non-KV memory instead of 12 (components), or the activation
    peak was lost (total_consumed). Now torch.cuda's statistics are used, once with a warning."""
    from vllm_mem.mem_utils import TorchFallbackWarning

    with pytest.warns(TorchFallbackWarning, match="torch.cuda.memory_stats"):
        result = _weights_and_activation(sim, vllm_version=vllm_version)
    assert result.non_kv_cache_memory == 12 * GiB
    assert result.torch_peak_increase == 2 * GiB and result.transient_peak_headroom == 2 * GiB
    assert result.torch_source == "torch.cuda"
    assert repr(result).endswith("(torch figures from torch.cuda: vllm_mem's torch provider is "
                                 "missing or refused)")
    assert result.after_profile.torch_status == "available"
    assert result.after_profile.torch_source == "torch.cuda"
    assert repr(result.after_profile).endswith(", torch_source=torch.cuda")
    # empty_cache and the peak reset reached torch: the 2 GiB segment was released.
    assert sim.state(0).torch_reserved_bytes == 10 * GiB
    assert no_provider.calls == ["empty_cache", "reset_peak_memory_stats", "empty_cache"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: no second warning
        assert MemorySnapshot().torch_memory == 10 * GiB


def test_without_provider_the_other_helpers_read_torch_cuda(sim: SimulatedDevice,
                                                           no_provider: _TorchCudaStandIn) -> None:
    from vllm_mem.mem_utils import TorchFallbackWarning

    sim.torch_alloc(GiB)
    with pytest.warns(TorchFallbackWarning):
        assert torch_memory_stats(0)["allocated_bytes.all.current"] == GiB
    with DeviceMemoryProfiler() as profiler:
        sim.torch_alloc(3 * GiB // 2)
    assert profiler.consumed_memory == 3 * GiB // 2
    # A segment mapped between the reads is not non-torch memory on this path either (the first
    # snapshot finds the provider missing; the next brackets its device read with torch.cuda's).
    MemorySnapshot()
    sim.torch_alloc_between_reads(2 * GiB)
    snap = MemorySnapshot()
    assert snap.non_torch_memory == 0 and snap.torch_memory == 9 * GiB // 2
    # torch imported but CUDA not initialised: its figures are truly 0, and said so.
    no_provider.initialized = False
    assert MemorySnapshot().torch_status == "not_initialized"
    assert torch_memory_stats(0) == {}


def test_without_provider_the_sampler_is_refused(sim: SimulatedDevice,
                                                 no_provider: _TorchCudaStandIn) -> None:
    with pytest.raises(RuntimeError, match="memory sampler: torch is imported but vllm_mem cannot"):
        MemorySampler(interval_s=1e-4).start()


def test_without_provider_or_torch_cuda_profiling_is_refused(sim: SimulatedDevice,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    sim.set_torch_status("no_provider")
    snap = MemorySnapshot()
    assert snap.torch_status == "no_provider"  # not "no_torch": the figures are unknown, not 0
    assert snap.torch_source == "provider"
    with pytest.raises(RuntimeError, match="torch's allocator figures cannot be read"):
        _weights_and_activation(sim)


# ---- issue 19: non_kv_cache_memory by vLLM release --------------------------------------------

def _vllm_scenario(sim: SimulatedDevice, vllm_version: str | None) -> MemoryProfilingResult:
    """vLLM's test_memory_profiling with weights_memory=0 (see test_memory_profiling above)."""
    sim.other_process_alloc(512 * MiB)
    baseline = MemorySnapshot()
    sim.torch_alloc(512 * MiB)
    with memory_profiling(baseline, weights_memory=0, vllm_version=vllm_version) as result:
        sim.transient_torch(GiB)
        sim.non_torch_alloc(256 * MiB)
    return result


@pytest.mark.parametrize(("vllm_version", "formula", "non_kv_mib", "third"), [
    ("0.19.1", "components", 1280, "non-torch forward increase memory: 0.25GiB"),
    ("0.26.0", "components", 1280, "non-torch forward increase memory: 0.25GiB"),
    ("0.27.0", "total_consumed", 1792, "total consumed (from mem_get_info): 0.75GiB"),
    ("0.28", "total_consumed", 1792, "total consumed (from mem_get_info): 0.75GiB"),
])
def test_non_kv_cache_memory_follows_the_vllm_release(sim: SimulatedDevice, vllm_version: str,
                                                      formula: str, non_kv_mib: int, third: str) -> None:
    result = _vllm_scenario(sim, vllm_version)
    assert result.formula == formula
    assert result.non_kv_cache_memory == non_kv_mib * MiB
    assert result.non_kv_cache_memory_components == 1280 * MiB  # both kept, whichever applies
    assert result.non_kv_cache_memory_total_consumed == 1792 * MiB
    assert repr(result).endswith(
        f"seconds. Total non KV cache memory: {non_kv_mib / 1024:g}GiB; torch peak memory increase: "
        f"1.0GiB; {third}; weights memory: 0.0GiB.")


def test_non_kv_formula_defaults_to_the_installed_then_the_newest_vllm(
        sim: SimulatedDevice, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_mem.planner import versions

    monkeypatch.setattr(versions, "installed_vllm_version", lambda: "0.19.0")
    result = _vllm_scenario(sim, None)
    assert (result.vllm_version, result.formula) == ("0.19.0", "components")
    sim.non_torch_free(256 * MiB)
    sim.torch_free(512 * MiB)
    sim.other_process_free(512 * MiB)
    monkeypatch.setattr(versions, "installed_vllm_version", lambda: None)
    newest = str(_C.lookup_vllm_version("")[0])  # the default release (docs/vllm_versions.md)
    result = _vllm_scenario(sim, None)
    assert (result.vllm_version, result.formula) == (newest, "total_consumed")
    with pytest.raises(ValueError, match="vllm_version"):
        _vllm_scenario(sim, "zero")


_NO_PROVIDER_PROBE = """
import json, sys, warnings
from vllm_mem import _C
before = _C.torch_stats(0)
import torch
after = _C.torch_stats(0)
from vllm_mem import mem_utils
# torch.cuda's own figures, as a CUDA torch would give them once CUDA is initialised.
GiB = 1 << 30
torch.cuda.is_initialized = lambda: True
torch.cuda.memory_stats = lambda device=None: {"allocated_bytes.all.current": 3 * GiB,
    "allocated_bytes.all.peak": 5 * GiB, "reserved_bytes.all.current": 4 * GiB}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    stats = mem_utils.torch_memory_stats(0)
print(json.dumps({"before": before.status, "after": after.status, "detail": after.detail,
                  "stats": stats, "warned": [str(w.message) for w in caught]}))
"""


def test_torch_status_without_provider_in_a_fresh_process(tmp_path: Any) -> None:
    """Regression (issue 19): with torch imported and no provider (a plain pip install builds
    none; VLLM_MEM_TORCH_PROVIDER pointing nowhere stands for it), the real reader said
    "no_torch" and every torch figure read 0; now it says "no_provider" and torch.cuda is read."""
    import json
    import os
    import subprocess

    pytest.importorskip("torch")
    env = dict(os.environ, VLLM_MEM_TORCH_PROVIDER=str(tmp_path / "missing" / "_torch_provider.so"))
    out = subprocess.run([sys.executable, "-c", _NO_PROVIDER_PROBE], check=True, capture_output=True,
                         text=True, timeout=120, env=env).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["before"] == "no_torch"       # torch not imported: nothing of torch's exists
    assert result["after"] == "no_provider"     # torch imported: its figures exist, unreadable in C++
    assert "built without the torch provider" in result["detail"]
    assert result["stats"]["reserved_bytes.all.current"] == 4 * GiB
    (warned,) = result["warned"]
    assert "torch.cuda.memory_stats" in warned and "built without the torch provider" in warned


# ---- the real-device path, on the fake CUDA driver (tests/fake_driver) -----------------------

_FAKE_DRIVER_FALLBACK = """
import json, os, warnings
import torch
GiB = 1 << 30
log = os.environ["VLLM_MEM_FAKE_DRIVER_LOG"]

def device_reads():
    with open(log) as f:
        return sum(1 for line in f if " cuMemGetInfo" in line)

# torch.cuda as a CUDA torch gives it; torch maps a 1 GiB segment just before the driver's
# second free-memory read (the fake's free drops by 1 GiB from that read on).
torch.cuda.is_initialized = lambda: True
torch.cuda.empty_cache = lambda: None
def memory_stats(device=None):
    reserved = GiB if device_reads() >= 2 else 0
    return {"allocated_bytes.all.current": reserved, "allocated_bytes.all.peak": reserved,
            "reserved_bytes.all.current": reserved}
torch.cuda.memory_stats = memory_stats

from vllm_mem.mem_utils import MemorySnapshot
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    first = MemorySnapshot(device=0)    # finds the provider missing (first device read)
    snap = MemorySnapshot(device=0)     # torch.cuda around its device read
print(json.dumps({"status": snap.torch_status, "source": snap.torch_source,
                  "torch_memory": snap.torch_memory, "non_torch_memory": snap.non_torch_memory,
                  "free_memory": snap.free_memory, "first_non_torch": first.non_torch_memory}))
"""


def test_real_device_without_provider_brackets_torch_cuda_reads(tmp_path: Any) -> None:
    """The real reader (the fake CUDA driver) with torch imported and no provider: torch.cuda's
    figures, read around the driver's read, so the segment mapped just before it is torch's."""
    import json

    pytest.importorskip("torch")
    from fake_driver import FakeDriver, build_fake_driver

    try:
        libs = build_fake_driver(tmp_path / "libs")
    except Exception as exc:  # no C compiler
        pytest.skip(f"cannot build the fake CUDA driver: {exc}")
    work = tmp_path / "work"
    work.mkdir()
    fd = FakeDriver(libs, work)
    fd.state(**{"device.0.total_bytes": 80 * GiB, "device.0.free_bytes": 40 * GiB,
                "device.0.free_drop_after_calls": 1, "device.0.free_drop_bytes": GiB})
    out = fd.run(_FAKE_DRIVER_FALLBACK,
                 env={"VLLM_MEM_TORCH_PROVIDER": str(tmp_path / "missing" / "_torch_provider.so")})
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["status"], result["source"]) == ("available", "torch.cuda")
    assert result["free_memory"] == 39 * GiB
    assert result["torch_memory"] == GiB
    assert result["non_torch_memory"] == 40 * GiB  # read torch-then-device: 41 GiB
    assert result["first_non_torch"] == 40 * GiB
