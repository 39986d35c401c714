"""The real-device code paths (csrc/device/cuda_driver.cc, nvml.cc, the device bindings, the CLI's
live figures, check_stages) against the fake CUDA driver and NVML of tests/fake_driver/, each in a
subprocess that loads the fake through the same ``dlopen("libcuda.so.1")`` as the real driver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_driver import FakeDriver

GiB = 1 << 30
MiB = 1 << 20

# The state of a typical two-GPU host: device 1 has a process holding 10 GiB.
TWO_GPUS = {
    "device_count": 2,
    "device.0.total_bytes": 80 * GiB,
    "device.0.free_bytes": 79 * GiB,
    "device.0.reserved_bytes": 512 * MiB,
    "device.1.total_bytes": 80 * GiB,
    "device.1.free_bytes": 70 * GiB,
    "device.1.reserved_bytes": 512 * MiB,
    "device.1.processes": f"4242:{10 * GiB},4343:-1",
}


def _pid_calls(fd: FakeDriver, name: str, pid: int) -> int:
    return sum(1 for c in fd.calls(name) if c.pid == pid)


def _json_tail(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


# --- the fake itself --------------------------------------------------------------------------


def test_fake_loads_through_the_same_dlopen_as_the_real_driver(fake_driver: FakeDriver) -> None:
    fake_driver.state(**TWO_GPUS, driver_version=12040)
    out = fake_driver.run("""
        import json
        from vllm_mem import _C
        print(json.dumps(list(_C.cuda_driver_status())))
    """)
    assert _json_tail(out.stdout) == [True, "", 2, 12040]
    assert fake_driver.calls("cuDriverGetVersion"), "vllm_mem did not reach the fake"


def test_fake_free_memory_drops_after_n_reads(fake_driver: FakeDriver) -> None:
    # The sampler-race injection: the third and later cuMemGetInfo calls see 1 GiB less.
    fake_driver.state(**{"device.0.free_bytes": 40 * GiB, "device.0.free_drop_after_calls": 2,
                         "device.0.free_drop_bytes": GiB})
    out = fake_driver.run("""
        import json
        from vllm_mem import _C
        print(json.dumps([_C.mem_get_info(0)[0] for _ in range(4)]))
    """)
    assert _json_tail(out.stdout) == [40 * GiB, 40 * GiB, 39 * GiB, 39 * GiB]


# --- no driver, no device, driver errors --------------------------------------------------------


def test_driver_without_entry_points_is_reported_not_crashed(fake_driver: FakeDriver) -> None:
    out = fake_driver.run("""
        import json
        from vllm_mem import _C
        from vllm_mem.mem_utils import MemorySnapshot
        errors = {}
        for name, call in [("synchronize", lambda: _C.synchronize(0)),
                           ("is_integrated", lambda: _C.is_integrated(0)),
                           ("max_shared", lambda: _C.max_shared_memory_per_block(0)),
                           ("process_memory", lambda: _C.process_memory(0)),
                           ("snapshot", lambda: MemorySnapshot(device=0))]:
            try:
                call()
                errors[name] = None
            except RuntimeError as exc:
                errors[name] = str(exc)
        print(json.dumps({"status": list(_C.cuda_driver_status()), "count": _C.device_count(),
                          "errors": errors}))
    """, driver="broken")
    data = _json_tail(out.stdout)
    ok, why, count, _ = data["status"]
    assert not ok and "lacks cuInit" in why and count == 0
    assert data["count"] == 0
    for name, error in data["errors"].items():
        assert error is not None and "libcuda.so.1" in error, (name, error)


def test_zero_devices_synchronize_is_a_value_error_naming_device(fake_driver: FakeDriver) -> None:
    # The segfault of issue 19: with no device, synchronize(0) read a context table that was never
    # allocated (rc 139). Now: ValueError naming `device`, and no context reaches the driver.
    fake_driver.state(device_count=0)
    out = fake_driver.run("""
        from vllm_mem import _C
        try:
            _C.synchronize(0)
        except ValueError as exc:
            print("ValueError:", exc)
        print("status", _C.cuda_driver_status())
    """)
    assert "ValueError: device: unknown CUDA device index 0 (0 visible" in out.stdout
    assert "status (True, '', 0, 12080)" in out.stdout
    assert not fake_driver.calls("cuCtxPushCurrent_v2")
    assert not fake_driver.calls("cuCtxSynchronize")


@pytest.mark.parametrize("device", [-1, 1, 3, 2**31 - 1])
def test_out_of_range_devices_never_reach_the_driver(fake_driver: FakeDriver, device: int) -> None:
    fake_driver.state(device_count=1)
    out = fake_driver.run(f"""
        import json
        from vllm_mem import _C
        from vllm_mem.worker_flow import measure_cuda_graph_memory
        from vllm_mem.mem_utils import MemorySnapshot
        results = {{}}
        calls = []
        for name, call in [("synchronize", lambda: _C.synchronize({device})),
                           ("mem_get_info", lambda: _C.mem_get_info({device})),
                           ("is_integrated", lambda: _C.is_integrated({device})),
                           ("max_shared", lambda: _C.max_shared_memory_per_block({device})),
                           ("process_memory", lambda: _C.process_memory({device})),
                           ("nvml_memory", lambda: _C.nvml_memory({device})),
                           ("torch_stats", lambda: _C.torch_stats({device})),
                           ("reset_peak", lambda: _C.reset_peak_memory_stats({device})),
                           ("graph", lambda: measure_cuda_graph_memory(lambda: calls.append(1),
                                                                       device={device}))]:
            try:
                call()
                results[name] = "no error"
            except ValueError as exc:
                results[name] = str(exc)
        print(json.dumps({{"results": results, "capture_ran": bool(calls)}}))
    """)
    data = _json_tail(out.stdout)
    for name, text in data["results"].items():
        if name == "graph" and (device < 0 or device > 4096):
            assert text.startswith("device: "), (name, text)  # refused by the Python argument check
            continue
        assert text.startswith("device: unknown CUDA device index"), (name, text)
    assert not data["capture_ran"]
    garbage = [c for c in fake_driver.calls() if c.detail == "garbage"]
    assert not garbage, garbage
    assert not fake_driver.calls("cuCtxPushCurrent_v2")


@pytest.mark.parametrize("code,name", [(802, "CUDA_ERROR_SYSTEM_NOT_READY"), (100, None)])
def test_cuinit_errors(fake_driver: FakeDriver, code: int, name: str | None) -> None:
    fake_driver.state(**{"error.cuInit": code})
    out = fake_driver.run("""
        import json
        from vllm_mem import _C
        from vllm_mem.mem_utils import MemorySnapshot
        try:
            MemorySnapshot(device=0)
            error = None
        except ValueError as exc:
            error = f"ValueError: {exc}"
        except RuntimeError as exc:
            error = f"RuntimeError: {exc}"
        print(json.dumps({"status": list(_C.cuda_driver_status()), "error": error}))
    """)
    data = _json_tail(out.stdout)
    ok, why, count, _ = data["status"]
    if name is None:  # CUDA_ERROR_NO_DEVICE: a driver with no device, not a failure
        assert ok and count == 0
        assert data["error"].startswith("ValueError: device: unknown CUDA device index 0 (0 visible")
    else:
        assert not ok and f"{name} ({code})" in why
        assert data["error"] == f"RuntimeError: cuInit failed: {name} ({code})"


def test_cli_without_a_ready_driver_exits_2_with_one_line(fake_driver: FakeDriver) -> None:
    fake_driver.state(**{"error.cuInit": 802})
    out = fake_driver.run("", args=["-m", "vllm_mem", "snapshot"], check=False)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "CUDA_ERROR_SYSTEM_NOT_READY" in lines[0], out.stderr
    assert "Traceback" not in out.stderr


# --- contexts ----------------------------------------------------------------------------------


def test_context_push_pop_balance(fake_driver: FakeDriver) -> None:
    fake_driver.state(device_count=2)
    out = fake_driver.run("""
        import ctypes
        from vllm_mem import _C
        from vllm_mem.mem_utils import MemorySnapshot
        cuda = ctypes.CDLL("libcuda.so.1")
        for device in (0, 1, 0):
            MemorySnapshot(device=device)
            _C.synchronize(device)
        try:
            _C.synchronize(5)
        except ValueError:
            pass
        print("depth", cuda.fake_cuda_context_depth())
        # With the primary context current (a worker's case) nothing is pushed at all.
        ctx = ctypes.c_void_p()
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
        assert cuda.cuCtxPushCurrent_v2(ctx) == 0
        before = cuda.fake_cuda_context_depth()
        MemorySnapshot(device=0)
        _C.synchronize(0)
        print("depth-with-current", before, cuda.fake_cuda_context_depth())
    """)
    assert "depth 0" in out.stdout
    assert "depth-with-current 1 1" in out.stdout
    pushes = [c for c in fake_driver.calls("cuCtxPushCurrent_v2") if c.result == 0]
    pops = [c for c in fake_driver.calls("cuCtxPopCurrent_v2") if c.result == 0]
    assert len(pushes) - 1 == len(pops) > 0  # the test's own push stays
    created = [c for c in fake_driver.calls("cuDevicePrimaryCtxRetain") if c.detail == "created"]
    assert len(created) == 2  # one primary context per device, retained once


# --- tool queries: no cuInit, no context, fork still works -------------------------------------

_QUERIES = """
import io, json, os, contextlib
from vllm_mem import _C
from vllm_mem.cli import main
from vllm_mem.mem_utils import get_max_shared_memory_bytes
from vllm_mem.stages import check_stages
from vllm_mem.worker_flow import device_processes
results = {
    "status": list(_C.cuda_driver_status()),
    "count": _C.device_count(),
    "integrated": [_C.is_integrated(i) for i in range(2)],
    "max_shared": get_max_shared_memory_bytes(1),
    "processes": [list(p) for p in _C.process_memory(1)[2]],
    "device_processes": [[p.pid, p.used_bytes] for p in device_processes(1)],
    "nvml": list(_C.nvml_memory(1)),
}
for argv in (["snapshot", "--json", "--device", "1"],
             ["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-80GB", "--json"]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    results[argv[0]] = [rc, json.loads(buf.getvalue())]
"""


def test_public_queries_call_no_cuinit_and_create_no_context(fake_driver: FakeDriver) -> None:
    fake_driver.state(**TWO_GPUS, **{"device.1.integrated": 0, "device.1.max_shared_memory_optin": 101376})
    out = fake_driver.run(_QUERIES + """
print(json.dumps({"pid": os.getpid(), **results}))
""")
    data = _json_tail(out.stdout)
    pid = data["pid"]
    assert data["status"] == [True, "", 2, 12080] and data["count"] == 2
    assert data["integrated"] == [False, False] and data["max_shared"] == 101376
    assert sorted(map(tuple, data["processes"])) == [(4242, 10 * GiB), (4343, -1)]
    assert data["device_processes"][0] == [4242, 10 * GiB]
    ok, _, free, total, reserved, bus = data["nvml"]
    assert ok and (free, total, reserved) == (70 * GiB, 80 * GiB + 512 * MiB, 512 * MiB)
    rc, snap = data["snapshot"]
    assert rc == 0 and snap["free_memory"] == 70 * GiB and snap["total_memory"] == 80 * GiB
    assert snap["source"] == "nvml" and snap["pci_bus_id"] == bus
    assert snap["processes"] == [{"pid": 4242, "used_bytes": 10 * GiB}, {"pid": 4343, "used_bytes": None}]
    rc, plan = data["plan"]
    live = plan["live_snapshot"]
    assert live["found"] and live["free_memory_bytes"] == 79 * GiB and live["total_memory_bytes"] == 80 * GiB
    # The point: none of it initialised CUDA in the process or created a context anywhere.
    assert _pid_calls(fake_driver, "cuInit", pid) == 0
    assert not fake_driver.calls("cuDevicePrimaryCtxRetain")
    assert not fake_driver.calls("cuMemGetInfo_v2")
    probes = {c.pid for c in fake_driver.calls("cuInit")}
    assert len(probes) == 1 and pid not in probes  # one forked probe, cached after


def test_fork_after_the_queries_can_initialise_cuda(fake_driver: FakeDriver) -> None:
    fake_driver.state(**TWO_GPUS)
    out = fake_driver.run(_QUERIES + """
from vllm_mem.stages import check_stages
import os
pid = os.fork()
if pid == 0:
    from vllm_mem.mem_utils import MemorySnapshot
    try:
        snap = MemorySnapshot(device=1)
        os._exit(0 if snap.free_memory == 70 * 2**30 else 3)
    except BaseException as exc:
        print("child failed:", exc, flush=True)
        os._exit(4)
_, status = os.waitpid(pid, 0)
print(json.dumps({"child": pid, "rc": os.waitstatus_to_exitcode(status)}))
""")
    data = _json_tail(out.stdout)
    assert data["rc"] == 0, out.stdout
    child_init = [c for c in fake_driver.calls("cuInit") if c.pid == data["child"]]
    assert child_init and child_init[0].result == 0


def test_queries_after_init_here_read_directly_once(fake_driver: FakeDriver) -> None:
    # Inside a worker (CUDA initialised here) the facts are read in process, once: no probe
    # child, and is_integrated() on every snapshot costs no driver calls.
    fake_driver.state(device_count=2, **{"device.1.integrated": 1})
    out = fake_driver.run("""
        import json, os
        from vllm_mem import _C
        from vllm_mem.mem_utils import MemorySnapshot
        MemorySnapshot(device=0)
        with open(os.environ["VLLM_MEM_FAKE_DRIVER_LOG"]) as f:
            before = len(f.readlines())
        answers = [_C.is_integrated(1) for _ in range(5)] + [_C.device_count()]
        with open(os.environ["VLLM_MEM_FAKE_DRIVER_LOG"]) as f:
            lines = f.readlines()[before:]
        print(json.dumps({"pid": os.getpid(), "answers": answers,
                          "attribute_calls": sum(" cuDeviceGetAttribute " in l for l in lines)}))
    """)
    data = _json_tail(out.stdout)
    assert data["answers"] == [True] * 5 + [2]
    assert {c.pid for c in fake_driver.calls("cuInit")} == {data["pid"]}
    assert data["attribute_calls"] <= 4  # one read of both devices' two attributes, then cached


def test_check_stages_live_reads_nvml_without_a_context(fake_driver: FakeDriver) -> None:
    fake_driver.state(**TWO_GPUS)
    out = fake_driver.run("""
        import json, os
        from pathlib import Path
        import vllm_mem
        from vllm_mem.stages import check_stages
        config = Path(vllm_mem.__file__).resolve().parent / "examples" / "stages" / "qwen3_omni_moe.stage_args.yaml"
        result = check_stages(config)
        print(json.dumps({"pid": os.getpid(), "devices": [[result.device(i).total_bytes, result.device(i).free_bytes,
                                                            result.device(i).free_source] for i in (0, 1)]}))
    """)
    data = _json_tail(out.stdout)
    assert data["devices"] == [[80 * GiB, 79 * GiB, "live"], [80 * GiB, 70 * GiB, "live"]]
    assert _pid_calls(fake_driver, "cuInit", data["pid"]) == 0
    assert not fake_driver.calls("cuDevicePrimaryCtxRetain")


def test_live_stage_check_without_nvml_memory_exits_2_with_one_line(fake_driver: FakeDriver) -> None:
    fake_driver.state(**TWO_GPUS, **{"nvml.error.nvmlDeviceGetMemoryInfo_v2": 999,
                                     "nvml.error.nvmlDeviceGetMemoryInfo": 999})
    out = fake_driver.run("", args=["-m", "vllm_mem", "stages", "qwen3_omni_moe.stage_args"], check=False)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot read cuda:0 for a live check" in lines[0], out.stderr
    assert "nvmlDeviceGetMemoryInfo failed with 999" in lines[0]
    assert not fake_driver.calls("cuDevicePrimaryCtxRetain")


def test_cuda_visible_devices_maps_by_pci_bus_id(fake_driver: FakeDriver) -> None:
    # NVML numbers devices physically and ignores CUDA_VISIBLE_DEVICES; CUDA device 0 here is
    # physical device 1, found by its PCI bus id.
    fake_driver.state(**TWO_GPUS, **{"device.1.pci_bus_id": "00000000:C1:00.0"})
    out = fake_driver.run("""
        import json
        from vllm_mem import _C
        print(json.dumps({"count": _C.device_count(), "nvml": list(_C.nvml_memory(0)),
                          "procs": [list(p) for p in _C.process_memory(0)[2]]}))
    """, env={"CUDA_VISIBLE_DEVICES": "1"})
    data = _json_tail(out.stdout)
    assert data["count"] == 1
    assert data["nvml"][2] == 70 * GiB and data["nvml"][5] == "0000:C1:00.0"
    assert [4242, 10 * GiB] in data["procs"]


def test_nearly_full_gpu_is_read_not_failed(fake_driver: FakeDriver) -> None:
    fake_driver.state(**{"device.0.free_bytes": 0, "error.cuDevicePrimaryCtxRetain": 2})
    out = fake_driver.run("", args=["-m", "vllm_mem", "plan", "meta-llama/Llama-3.1-8B-Instruct",
                                    "--gpu", "H100-80GB"], check=False)
    assert out.returncode in (0, 1), out.stderr
    assert "Traceback" not in out.stderr
    assert "0.0 GiB free of 80.0 GiB now (nvml)" in out.stdout
    assert "check FAILS" in out.stdout
    snap = fake_driver.run("", args=["-m", "vllm_mem", "snapshot"])
    assert "free 0.00 GiB of 80.00 GiB" in snap.stdout


def test_integrated_gpu_reads_host_memory(fake_driver: FakeDriver) -> None:
    fake_driver.state(**{"device.0.integrated": 1, "nvml.error.nvmlDeviceGetMemoryInfo": 3,
                         "nvml.error.nvmlDeviceGetMemoryInfo_v2": 3})
    out = fake_driver.run("", args=["-m", "vllm_mem", "snapshot", "--json"])
    data = json.loads(out.stdout)
    assert data["integrated"] is True and data["source"].startswith("host")
    assert data["pci_bus_id"] == "0000:10:00.0"
    assert data["total_memory"] > 0


# --- fork: a child of an initialised parent never calls the driver ------------------------------


def test_forked_child_after_init_calls_no_driver(fake_driver: FakeDriver) -> None:
    fake_driver.state(device_count=1)
    out = fake_driver.run("""
        import json, os
        from vllm_mem import _C
        from vllm_mem.mem_utils import MemorySnapshot
        MemorySnapshot(device=0)          # cuInit and the primary context in the parent
        pid = os.fork()
        if pid == 0:
            errors = []
            for call in (lambda: MemorySnapshot(), lambda: _C.synchronize(0),
                         lambda: _C.cuda_driver_status(), lambda: _C.current_device()):
                try:
                    r = call()
                    errors.append(repr(r) if isinstance(r, tuple) else None)
                except RuntimeError as exc:
                    errors.append(str(exc))
            print(json.dumps(errors), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        print(json.dumps({"child": pid}))
    """)
    lines = out.stdout.strip().splitlines()
    errors, child = json.loads(lines[-2]), json.loads(lines[-1])["child"]
    assert "before fork" in errors[0] and "before fork" in errors[1], errors
    assert "before fork" in errors[2], errors
    assert [c for c in fake_driver.calls() if c.pid == child] == []


# --- smaller findings -----------------------------------------------------------------------------


def test_unknown_nvml_usage_prints_unknown_not_minus_zero(fake_driver: FakeDriver) -> None:
    fake_driver.state(**{"device.0.free_bytes": 10 * GiB, "device.0.processes": f"4242:{60 * GiB},4343:-1"})
    out = fake_driver.run("""
        from vllm_mem.mem_utils import MemorySnapshot
        from vllm_mem.worker_flow import request_memory
        try:
            request_memory(MemorySnapshot(device=0), 0.9)
        except ValueError as exc:
            print(exc)
    """)
    assert "pid 4242 (60.0 GiB), pid 4343 (unknown)" in out.stdout
    assert "-0.0" not in out.stdout
    snap = fake_driver.run("", args=["-m", "vllm_mem", "snapshot"])
    assert "pid 4343: unknown" in snap.stdout and "-0.0" not in snap.stdout


def test_wsl2_counts_as_a_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from vllm_mem import pytest_plugin as plugin

    node = tmp_path / "dxg"
    node.write_text("")
    wsl_lib = tmp_path / "wsl-lib"
    wsl_lib.mkdir()
    (wsl_lib / "libcuda.so.1").write_text("")
    monkeypatch.setattr(plugin, "_GPU_NODES", ())
    monkeypatch.setattr(plugin, "_WSL_NODE", str(node))
    monkeypatch.setattr(plugin, "_WSL_DRIVER", str(wsl_lib / "libcuda.so*"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert plugin.gpu_visible()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not plugin.gpu_visible()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    (wsl_lib / "libcuda.so.1").unlink()  # /dev/dxg alone: another vendor's GPU under WSL2
    assert not plugin.gpu_visible()


# --- the same promise on a real GPU (gpu_check.sh runs these) -----------------------------------


@pytest.mark.gpu
def test_fork_after_the_queries_on_a_real_gpu(fake_driver: FakeDriver) -> None:
    # The real driver, not the fake: after every public query a forked child still initialises
    # CUDA and measures, which it cannot once the parent has called cuInit.
    out = fake_driver.run("""
        import ctypes, json, os
        from vllm_mem import _C
        from vllm_mem.mem_utils import get_max_shared_memory_bytes
        from vllm_mem.worker_flow import device_processes
        status = _C.cuda_driver_status()
        assert status[0] and status[2] > 0, status
        facts = [_C.device_count(), _C.is_integrated(0), get_max_shared_memory_bytes(0),
                 _C.nvml_memory(0)[0], device_processes(0) is not None]
        count = ctypes.c_int()
        cuda = ctypes.CDLL("libcuda.so.1")
        # 3 = CUDA_ERROR_NOT_INITIALIZED: nobody in this process has called cuInit.
        assert cuda.cuDeviceGetCount(ctypes.byref(count)) == 3
        pid = os.fork()
        if pid == 0:
            from vllm_mem.mem_utils import MemorySnapshot
            try:
                os._exit(0 if MemorySnapshot(device=0).total_memory > 0 else 3)
            except BaseException:
                os._exit(4)
        _, status_code = os.waitpid(pid, 0)
        print(json.dumps({"facts": [str(f) for f in facts], "child": os.waitstatus_to_exitcode(status_code)}))
    """, driver="none")
    assert _json_tail(out.stdout)["child"] == 0, out.stdout
