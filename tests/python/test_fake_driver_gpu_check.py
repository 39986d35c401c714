"""scripts/gpu_check.sh itself, end to end on a CPU machine against the fake CUDA driver
(GPU_CHECK_FAKE_DRIVER=1), and the pytest configuration a GPU host's torch needs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("readelf") is None
                    or shutil.which("cc") is None, reason="needs bash, readelf and a C compiler")
def test_gpu_check_runs_end_to_end_against_the_fake_driver(tmp_path: Path) -> None:
    report = tmp_path / "gpu-acceptance.md"
    env = dict(os.environ, GPU_CHECK_FAKE_DRIVER="1", PYTHON=sys.executable, REPORT=str(report))
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-2000:]}"
    text = report.read_text()
    rows = dict(re.findall(r"^\| (\w+) \| ([^|]+) \|", text, flags=re.M))
    assert rows["setup"].startswith("skipped: PYTHON=")
    assert rows["ctest"].startswith("skipped: fake-driver mode")
    assert rows["symbols"].strip() == "passed" and rows["linkage"].strip() == "passed"
    assert rows["pytest"].strip() == "passed"
    assert rows["snapshot"].strip() == "passed"
    # The GPU tests all skip without torch CUDA, and the check that no GPU test may skip fires.
    assert re.match(r"FAILED as expected: fake-driver mode has no torch CUDA: [1-9][0-9]* GPU test\(s\) skipped",
                    rows["gpu_tests"]), rows["gpu_tests"]
    assert "NEEDED" in text and re.search(r"=> libstdc\+\+ linked (dynamically|statically)", text)
    assert "figures from nvml" in text  # the snapshot read NVML, not a context
    assert "fake CUDA driver" in text


def test_pynvml_future_warning_is_not_a_collection_error(tmp_path: Path) -> None:
    # A GPU host's torch imports the deprecated pynvml shim, which warns at import; under the
    # project's filterwarnings = error that made every test importing torch a collection error.
    (tmp_path / "test_pynvml_warning.py").write_text(textwrap.dedent("""
        import warnings
        warnings.warn("The pynvml package is deprecated. Please install nvidia-ml-py instead.", FutureWarning)

        def test_ok():
            pass
    """))
    (tmp_path / "test_other_warning.py").write_text(textwrap.dedent("""
        import warnings
        warnings.warn("something else is deprecated", FutureWarning)

        def test_ok():
            pass
    """))
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"),
            "--rootdir", str(tmp_path)]
    ok = subprocess.run(base + [str(tmp_path / "test_pynvml_warning.py")], capture_output=True, text=True,
                        timeout=120, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    other = subprocess.run(base + [str(tmp_path / "test_other_warning.py")], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path)
    assert other.returncode != 0, "the ignore must stay targeted: other warnings are still errors"
