"""One version source: pyproject.toml's [project] version reaches _C (through CMake) unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import vllm_mem
from vllm_mem import _C

ROOT = Path(__file__).resolve().parents[2]


def test_extension_version_is_pyproject_version() -> None:
    # The [project] table's version line (tomllib is 3.11+; the package supports 3.10).
    match = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert match is not None
    declared = match.group(1)
    assert _C.__version__ == declared == vllm_mem.__version__


def test_cmake_has_no_version_of_its_own() -> None:
    # The project() call takes the version read from pyproject.toml, never a literal.
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert "project(vllm_mem LANGUAGES CXX VERSION ${VLLM_MEM_PACKAGE_VERSION})" in cmake
