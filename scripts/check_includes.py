#!/usr/bin/env python3
"""Checks the include rules of the C++ tree; exits 1 listing every broken rule.

    python3 scripts/check_includes.py [ROOT]

The core is cut into areas, lowest first. An area may include its own headers and those of the
areas it builds on, never one above it, so the sizing rules never depend on planning or stage
logic and each area can be read (and reused) without the ones above:

    base      units, errors, checked arithmetic, JSON
    model     config.json -> ModelSpec, dtypes, TP/PP splits, weights        (base)
    kv_cache  KV specs, groups, capacity                                     (base, model)
    memory    snapshots, profiling, sampler, device interface, budgets       (base)
    plan      estimates, start-up budget and plan, suggestions, sweep        (base, model, kv_cache, memory)
    stages    stage configs, checks, assignment, rank layouts                (all of the above)

Public headers live in csrc/core/include/vllm_mem/<area>/ and may include only public headers;
internal headers live beside the sources in csrc/core/<area>/. Outside the core: csrc/bindings
and csrc/torch include public headers only (no formula may hide there; the provider talks to
_C through a C ABI), and csrc/device, part of our library, may use the core's internal headers.
A core file may include no Python, pybind11, torch or CUDA header.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

AREAS = ("base", "model", "kv_cache", "memory", "plan", "stages")
ALLOWED: dict[str, set[str]] = {
    "base": {"base"},
    "model": {"base", "model"},
    "kv_cache": {"base", "model", "kv_cache"},
    "memory": {"base", "memory"},
    "plan": {"base", "model", "kv_cache", "memory", "plan"},
    "stages": set(AREAS),
}
FORBIDDEN_IN_CORE = re.compile(r"^(Python\.h|pybind11/|torch/|c10/|ATen/|cuda|nvml)")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def classify(header: str) -> tuple[str, str] | None:
    """('public'|'internal', area) of a project header name, or None for any other header."""
    m = re.match(r"vllm_mem/([a-z_]+)/[a-z_0-9]+\.h$", header)
    if m:
        return "public", m.group(1)
    m = re.match(r"core/([a-z_]+)/[a-z_0-9]+\.h$", header)
    if m:
        return "internal", m.group(1)
    return None


def check(root: Path) -> list[str]:
    errors: list[str] = []
    core = root / "csrc" / "core"
    public_root = core / "include" / "vllm_mem"

    def area_of(path: Path) -> tuple[str, bool] | None:
        """(area, is_public_header) of a core file."""
        if path.is_relative_to(public_root):
            return path.relative_to(public_root).parts[0], True
        if path.is_relative_to(core):
            return path.relative_to(core).parts[0], False
        return None

    for path in sorted((root / "csrc").rglob("*")):
        if path.suffix not in (".h", ".cc", ".cpp", ".hpp"):
            continue
        rel = path.relative_to(root)
        text = path.read_text(encoding="utf-8")
        placed = area_of(path)
        if placed is not None and placed[0] not in AREAS:
            errors.append(f"{rel}: '{placed[0]}' is not an area of the core ({', '.join(AREAS)})")
            continue
        for header in INCLUDE.findall(text):
            kind = classify(header)
            if placed is not None:
                area, is_public = placed
                if FORBIDDEN_IN_CORE.match(header):
                    errors.append(f"{rel}: includes <{header}>; the core is pure C++ (no Python, torch or CUDA)")
                if kind is None:
                    continue
                if kind[1] not in ALLOWED[area]:
                    errors.append(f"{rel}: area '{area}' may not include '{header}' (area '{kind[1]}'); "
                                  f"'{area}' builds on {', '.join(sorted(ALLOWED[area]))}")
                if is_public and kind[0] == "internal":
                    errors.append(f"{rel}: a public header may not include the internal header '{header}'")
            elif rel.parts[:2] == ("csrc", "bindings") and kind is not None and kind[0] == "internal":
                errors.append(f"{rel}: the bindings include public headers only, not '{header}'")
            elif rel.parts[:2] == ("csrc", "torch") and kind is not None and kind[0] == "internal":
                errors.append(f"{rel}: the torch provider may include public headers only, not '{header}'")
            if kind is not None:
                target = (public_root / header.split("/", 1)[1]) if kind[0] == "public" else (root / "csrc" / header)
                if not target.is_file():
                    errors.append(f"{rel}: includes '{header}', which does not exist")
    return errors


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    errors = check(root)
    for error in errors:
        print(error)
    if errors:
        print(f"{len(errors)} include rule(s) broken (see scripts/check_includes.py for the rules)")
        return 1
    print("include rules hold")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
