"""Symbol hygiene of every shared object we ship.

A Python extension runs inside someone else's process. If it exports C++ runtime symbols (as it
does when libstdc++ is linked in statically, the default of some GPU hosts' g++), the dynamic
loader binds numpy's or torch's calls to our copy of libstdc++ or ours to theirs, and iostream
state is corrupted: the process segfaults at the first formatted number. So each object may
export only its entry points, whatever compiler built it; the build's version scripts
(csrc/bindings/module.map, csrc/torch/torch_provider.map) and --exclude-libs,ALL make it so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

elftools = pytest.importorskip("elftools", reason="pyelftools reads the ELF dynamic symbol table")
import vllm_mem._C  # noqa: E402
from elftools.elf.elffile import ELFFile  # noqa: E402

PACKAGE_DIR = Path(vllm_mem._C.__file__).resolve().parent
# What each shared object may export, by file-name prefix.
ALLOWED_EXPORTS = {
    "_C": re.compile(r"PyInit__C"),
    "_torch_provider": re.compile(r"vllm_mem_torch_[a-z_]+"),
}
CXX_RUNTIME = re.compile(r"^(_ZNSt|_ZSt|_ZNKSt|__cxa|_ZN9__gnu_cxx|_ZNK9__gnu_cxx|_ZTVN10__cxxabiv|_Unwind)")


def _shipped_objects() -> list[Path]:
    objects = sorted({p.resolve() for p in PACKAGE_DIR.glob("*.so")})
    assert objects, f"no shared object next to {vllm_mem._C.__file__}"
    return objects


def _exported(path: Path) -> list[str]:
    """Names the object defines and exports (global or weak, defined, not hidden)."""
    with path.open("rb") as stream:
        dynsym = ELFFile(stream).get_section_by_name(".dynsym")
        assert dynsym is not None, f"{path} has no dynamic symbol table"
        names = []
        for symbol in dynsym.iter_symbols():
            if not symbol.name or symbol["st_shndx"] == "SHN_UNDEF":
                continue
            if symbol["st_info"]["bind"] not in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE"):
                continue
            if symbol["st_other"]["visibility"] in ("STV_HIDDEN", "STV_INTERNAL"):
                continue
            names.append(symbol.name)
        return names


def _kind(path: Path) -> str:
    return path.name.split(".")[0]


@pytest.mark.parametrize("path", _shipped_objects(), ids=lambda p: p.name)
def test_exports_no_cxx_runtime_symbol(path: Path) -> None:
    leaked = [name for name in _exported(path) if CXX_RUNTIME.match(name)]
    assert leaked == [], f"{path.name} exports {len(leaked)} C++ runtime symbols, e.g. {leaked[:5]}"


@pytest.mark.parametrize("path", _shipped_objects(), ids=lambda p: p.name)
def test_exports_only_its_entry_points(path: Path) -> None:
    allowed = ALLOWED_EXPORTS.get(_kind(path))
    assert allowed is not None, f"unexpected shared object {path.name}: add its export rule here"
    extra = [name for name in _exported(path) if not allowed.fullmatch(name)]
    assert extra == [], f"{path.name} exports more than its entry points: {extra[:10]}"


def test_the_extension_exports_its_init() -> None:
    # The check above must not pass vacuously on an unreadable table.
    c_objects = [p for p in _shipped_objects() if _kind(p) == "_C"]
    assert len(c_objects) == 1
    assert "PyInit__C" in _exported(c_objects[0])
