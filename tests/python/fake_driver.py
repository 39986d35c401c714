"""The fake CUDA driver and NVML (tests/fake_driver/) for CPU CI: built once per session with the
system C compiler, loaded by a *subprocess* through LD_LIBRARY_PATH, so vllm_mem's own
``dlopen("libcuda.so.1")`` finds it exactly as it finds the real driver and the test process stays
clean. State format and call log: tests/fake_driver/README.md.

Use from a test module::

    from fake_driver import fake_driver, fake_driver_libs  # noqa: F401  (pytest fixtures)

    def test_x(fake_driver):
        fake_driver.state(device_count=2, **{"device.1.free_bytes": 1 << 30})
        out = fake_driver.run("from vllm_mem import _C; print(_C.device_count())")
        assert out.stdout.strip() == "2"
        assert fake_driver.calls("cuInit") == []
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SOURCE_DIR = Path(__file__).resolve().parent.parent / "fake_driver"


def build_fake_driver(out_dir: Path) -> Path:
    """Compiles libcuda.so.1 and libnvidia-ml.so.1 into ``out_dir/lib`` and an empty
    libcuda.so.1 (a driver without its entry points) into ``out_dir/broken``."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang) to build the fake CUDA driver")
    lib = out_dir / "lib"
    broken = out_dir / "broken"
    lib.mkdir(parents=True, exist_ok=True)
    broken.mkdir(parents=True, exist_ok=True)
    (out_dir / "empty.c").write_text("int fake_cuda_without_entry_points;\n")
    builds = [(SOURCE_DIR / "fake_cuda.c", lib / "libcuda.so.1"),
              (SOURCE_DIR / "fake_nvml.c", lib / "libnvidia-ml.so.1"),
              (out_dir / "empty.c", broken / "libcuda.so.1")]
    for source, target in builds:
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(target), str(source)],
                       check=True, capture_output=True, text=True, timeout=120)
    return out_dir


@dataclass(frozen=True)
class Call:
    """One logged driver or NVML call."""

    pid: int
    name: str
    result: int
    detail: str


class FakeDriver:
    """One test's fake driver: a state file, a call log and a way to run code against them."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root = root
        self.state_path = work / "fake_driver_state.ini"
        self.log_path = work / "fake_driver_calls.log"
        self.state_path.write_text("")
        self.log_path.write_text("")

    def state(self, **values: Any) -> None:
        """Writes the state file: ``device_count=2``, ``**{"device.0.free_bytes": 1 << 30}``."""
        lines = [f"{key} = {value}" for key, value in values.items()]
        self.state_path.write_text("\n".join(lines) + "\n")

    def env(self, driver: str = "fake", extra: dict[str, str] | None = None) -> dict[str, str]:
        """The subprocess environment. ``driver``: "fake", "broken" (a libcuda.so.1 without its
        entry points) or "none" (no fake on the library path: the machine's own, if any)."""
        env = dict(os.environ)
        paths = {"fake": [str(self.root / "lib")], "broken": [str(self.root / "broken")], "none": []}[driver]
        old = env.get("LD_LIBRARY_PATH", "")
        env["LD_LIBRARY_PATH"] = os.pathsep.join(paths + ([old] if old else []))
        env["VLLM_MEM_FAKE_DRIVER_STATE"] = str(self.state_path)
        env["VLLM_MEM_FAKE_DRIVER_LOG"] = str(self.log_path)
        env.pop("CUDA_VISIBLE_DEVICES", None)
        env.update(extra or {})
        return env

    def run(self, code: str, *, driver: str = "fake", env: dict[str, str] | None = None,
            args: list[str] | None = None, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Runs ``python -c code`` (or ``python args...``) against the fake; fails the test with
        the subprocess's output when it exits non-zero and ``check``."""
        command = [sys.executable] + (args if args is not None else ["-c", textwrap.dedent(code)])
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=self.env(driver, env))
        if check and proc.returncode != 0:
            pytest.fail(f"subprocess exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}",
                        pytrace=False)
        return proc

    def calls(self, name: str | None = None) -> list[Call]:
        """The logged calls, in order; only those named ``name`` when given."""
        out = []
        for line in self.log_path.read_text().splitlines():
            parts = line.split(" ", 3)
            if len(parts) < 3:
                continue
            call = Call(int(parts[0]), parts[1], int(parts[2]), parts[3] if len(parts) > 3 else "")
            if name is None or call.name == name:
                out.append(call)
        return out

    def clear_log(self) -> None:
        self.log_path.write_text("")


@pytest.fixture(scope="session")
def fake_driver_libs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built fake libraries (skips the test where no C compiler exists)."""
    try:
        return build_fake_driver(tmp_path_factory.mktemp("fake_driver"))
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot build the fake CUDA driver: {exc}")


@pytest.fixture
def fake_driver(fake_driver_libs: Path, tmp_path: Path) -> FakeDriver:
    """A fake driver with one 80 GiB device until the test writes another state."""
    return FakeDriver(fake_driver_libs, tmp_path)
