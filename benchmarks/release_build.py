"""A released vllm_mem built beside the working tree, for side-by-side benchmarks.

The release's sources come from git (``git archive`` of its commit: no worktree, nothing in the
checkout changes) into ``build/release-<version>/src``; its ``_C`` extension is built there in
Release mode without the C++ tests, and ``build/release-<version>/site/vllm_mem`` holds the
release's Python package beside its ``_C``, so ``PYTHONPATH=build/release-<version>/site``
imports exactly that release.

    python3 benchmarks/release_build.py [--version 0.3.0]      # build when absent, print the site
"""

from __future__ import annotations

import argparse
import glob
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Release -> its commit. No tags were pushed for these releases, so the commits are named here:
#: each is the commit that set the version in pyproject.toml and CMakeLists.txt
#: (``git log -S'version = "0.3.0"' -- pyproject.toml``).
RELEASE_COMMITS = {"0.3.0": "256f5d1195759704ba24f7321bb0cd73155a0260"}


def release_dir(version: str) -> Path:
    return ROOT / "build" / f"release-{version}"


def site_of(version: str) -> Path | None:
    """The release's importable site folder, or None when it has not been built."""
    site = release_dir(version) / "site"
    return site if glob.glob(str(site / "vllm_mem" / "_C*.so")) else None


def why_not_buildable(version: str) -> str | None:
    """One line saying why the release cannot be built here, or None when it can."""
    if version not in RELEASE_COMMITS:
        return f"no commit known for vllm_mem {version} (known: {', '.join(RELEASE_COMMITS)})"
    for tool in ("git", "cmake"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH"
    if not (ROOT / ".git").exists():
        return f"{ROOT} is not a git checkout"
    probe = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", RELEASE_COMMITS[version] + "^{commit}"],
                           capture_output=True)
    if probe.returncode != 0:
        return f"commit {RELEASE_COMMITS[version][:12]} of vllm_mem {version} is not in this clone's history"
    return None


def _extract(version: str, src: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "src.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive),
                        RELEASE_COMMITS[version]], check=True)
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        with tarfile.open(archive) as tar:
            tar.extractall(src, filter="data")


def build(version: str, jobs: int = 2) -> Path:
    """Builds the release when absent (minutes: the whole core in Release mode) and returns its
    site folder."""
    site = site_of(version)
    if site is not None:
        return site
    problem = why_not_buildable(version)
    if problem is not None:
        raise RuntimeError(problem)
    top = release_dir(version)
    src, out = top / "src", top / "build"
    print(f"building vllm_mem {version} ({RELEASE_COMMITS[version][:12]}) into {top} ...", file=sys.stderr)
    _extract(version, src)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(src), "-B", str(out), *generator, "-DCMAKE_BUILD_TYPE=Release",
                    "-DVLLM_MEM_BUILD_CXX_TESTS=OFF", f"-DPython_EXECUTABLE={sys.executable}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(out), "--target", "_C", "-j", str(jobs)], check=True,
                   stdout=subprocess.DEVNULL)
    package = top / "site" / "vllm_mem"
    if package.parent.exists():
        shutil.rmtree(package.parent)
    shutil.copytree(src / "python" / "vllm_mem", package)
    for so in glob.glob(str(out / "_C*.so")):
        shutil.copy2(so, package)
    found = site_of(version)
    if found is None:
        raise RuntimeError(f"the build of vllm_mem {version} left no _C in {out}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.3.0", choices=sorted(RELEASE_COMMITS))
    args = parser.parse_args()
    print(build(args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
