"""vllm_mem's measurements inside an unmodified vLLM: :func:`patch_vllm` swaps the names of
``vllm.utils.mem_utils`` for vllm_mem's, and gives them back when undone.

vLLM's worker reads memory through ``vllm.utils.mem_utils`` (``MemorySnapshot`` at start-up,
``memory_profiling`` around the profile run). Its modules import those names with
``from vllm.utils.mem_utils import ...``, so each importer holds its own reference; the patch
therefore rebinds the name in ``vllm.utils.mem_utils`` *and* in every loaded ``vllm`` module that
holds the very same object, and records each rebinding so :meth:`VllmPatch.undo` restores exactly
what it changed. Modules imported after the patch read the patched module, so patching before
the worker is built (first thing in the process, or in a vLLM general plugin) covers them all.

A name is swapped only where vllm_mem's accepts every parameter vLLM's does (same names and
kinds, so every call written for vLLM still binds) and, for a dataclass, has every field vLLM's
has. ``format_gib`` and ``format_mib`` are swapped only where vLLM's returns the same type as
ours (vLLM's ``format_gib`` returned a float, later a str); otherwise vLLM's stays and the patch
says why (:attr:`VllmPatch.kept`). The measurement names (``MemorySnapshot``,
``MemoryProfilingResult``, ``memory_profiling``) are all or nothing: if one cannot be swapped,
nothing is, and a ValueError says why. docs/snapshots.md lists the vLLM versions checked.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from . import _validate as V

__all__ = ["VllmPatch", "patch_vllm"]

#: The module vLLM's workers read memory through.
VLLM_MEM_UTILS = "vllm.utils.mem_utils"

#: Swapped together or not at all: a snapshot of one kind handed to the other's profiler fails.
_MEASUREMENT_NAMES = ("MemorySnapshot", "MemoryProfilingResult", "memory_profiling")
#: Swapped each on its own when compatible.
_HELPER_NAMES = ("DeviceMemoryProfiler", "format_gib", "format_mib", "get_cpu_memory",
                 "get_max_shared_memory_bytes", "release_device_memory_under_pressure")
#: Constants: never rebound (the values must simply agree; a disagreement is refused).
_CONSTANT_NAMES = ("KB_bytes", "KiB_bytes", "MB_bytes", "MiB_bytes", "GB_bytes", "GiB_bytes")


def _ours() -> dict[str, Any]:
    from . import mem_utils, units

    return {name: getattr(mem_utils if hasattr(mem_utils, name) else units, name)
            for name in (*_MEASUREMENT_NAMES, *_HELPER_NAMES, *_CONSTANT_NAMES)
            if hasattr(mem_utils, name) or hasattr(units, name)}


def _parameters(obj: Any) -> dict[str, inspect.Parameter] | None:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = dict(inspect.signature(target).parameters)
    except (TypeError, ValueError):  # a builtin without a signature
        return None
    params.pop("self", None)
    return params


def _incompatibility(name: str, theirs: Any, ours: Any) -> str | None:
    """Why ``ours`` cannot stand in for vLLM's ``theirs``, or None when every call written for
    vLLM's binds to ours the same way."""
    if inspect.isclass(theirs) != inspect.isclass(ours) or callable(theirs) != callable(ours):
        return f"vLLM's {name} is a {type(theirs).__name__}, vllm_mem's a {type(ours).__name__}"
    if dataclasses.is_dataclass(theirs):
        missing = [f.name for f in dataclasses.fields(theirs) if f.name not in
                   {g.name for g in dataclasses.fields(ours)}] if dataclasses.is_dataclass(ours) else ["(all)"]
        if missing:
            return f"vLLM's {name} has fields vllm_mem's lacks: {', '.join(missing)}"
    theirs_params, ours_params = _parameters(theirs), _parameters(ours)
    if theirs_params is None or ours_params is None:
        return None if theirs_params is None else f"vllm_mem's {name} has no inspectable signature"
    for pname, p in theirs_params.items():
        mine = ours_params.get(pname)
        if mine is None and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return f"vLLM's {name} takes {pname!r}, vllm_mem's does not"
        if mine is not None and mine.kind != p.kind:
            return f"{name}: parameter {pname!r} is {p.kind.description} in vLLM, {mine.kind.description} here"
    positional = [n for n, p in theirs_params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    ours_positional = [n for n, p in ours_params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if ours_positional[:len(positional)] != positional:
        return f"{name}: positional parameters differ (vLLM {positional}, vllm_mem {ours_positional})"
    extra_required = [n for n, p in ours_params.items() if n not in theirs_params and p.default is p.empty
                      and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if extra_required:
        return f"vllm_mem's {name} requires {', '.join(extra_required)}, which vLLM's callers do not pass"
    return None


def _return_type_differs(name: str, theirs: Callable[[int], Any], ours: Callable[[int], Any]) -> str | None:
    # format_gib(0) is pure arithmetic in every release: safe to call to learn its type.
    try:
        theirs_type, ours_type = type(theirs(0)), type(ours(0))
    except Exception as exc:  # noqa: BLE001 - anything vLLM's raises means: do not swap
        return f"vLLM's {name}(0) raised {type(exc).__name__}"
    if theirs_type is not ours_type:
        return (f"vLLM's {name} returns {theirs_type.__name__}, vllm_mem's {ours_type.__name__}: "
                "vLLM's is kept so arithmetic and text on it are unchanged")
    return None


class VllmPatch:
    """What :func:`patch_vllm` changed, and the way back.

    Attributes
    ----------
    module : types.ModuleType
        The patched ``vllm.utils.mem_utils`` (or the module given).
    swapped : list of str
        The names now vllm_mem's.
    kept : dict of str to str
        Names vLLM's module defines that stayed vLLM's, each with the reason.
    rebound : list of (str, str)
        Every (module, name) rebound, the mem_utils module's own names included.

    Use it as a context manager (undone on exit) or call :meth:`undo`; undoing twice is a no-op.
    """

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.swapped: list[str] = []
        self.kept: dict[str, str] = {}
        self._undo: list[tuple[types.ModuleType, str, Any, Any]] = []  # module, name, original, ours

    @property
    def rebound(self) -> list[tuple[str, str]]:
        return [(m.__name__, name) for m, name, _, _ in self._undo]

    @property
    def active(self) -> bool:
        return bool(self._undo)

    def undo(self) -> None:
        """Restore every rebound name to the object it held before the patch, where it still holds
        what the patch put there (a name something else rebound since is left alone, so patches
        undone in any order never put vllm_mem's names back)."""
        while self._undo:
            module, name, original, ours = self._undo.pop()
            if vars(module).get(name) is ours:
                setattr(module, name, original)

    def __enter__(self) -> VllmPatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()

    def __repr__(self) -> str:
        state = "active" if self.active else "undone"
        return f"<VllmPatch {self.module.__name__} ({state}): swapped {', '.join(self.swapped) or 'nothing'}>"


def _target_module(module: types.ModuleType | None) -> types.ModuleType:
    if module is not None:
        if not isinstance(module, types.ModuleType):
            raise V.bad_type("module", f"a module (normally {VLLM_MEM_UTILS}) or None", module)
        return module
    loaded = sys.modules.get(VLLM_MEM_UTILS)
    if loaded is not None:
        return loaded
    try:
        return importlib.import_module(VLLM_MEM_UTILS)
    except ImportError as exc:
        why = str(exc)
    V.fail("module", f"{VLLM_MEM_UTILS} cannot be imported ({why}); patch_vllm() is for a process where "
                     "vLLM is installed")


def patch_vllm(module: types.ModuleType | None = None) -> VllmPatch:
    """Make an unmodified vLLM measure with vllm_mem: swap ``vllm.utils.mem_utils``'s
    ``MemorySnapshot``, ``MemoryProfilingResult``, ``memory_profiling`` and its helpers for
    vllm_mem's, here and in every loaded ``vllm`` module that imported them.

    Parameters
    ----------
    module
        The module to patch; default ``vllm.utils.mem_utils`` (imported if not yet loaded).

    Returns
    -------
    VllmPatch
        What was swapped and kept; ``undo()`` (or leaving its ``with`` block) restores vLLM's.

    Raises
    ------
    ValueError
        vLLM is not importable, a constant disagrees (``GiB_bytes``), or a measurement name
        cannot stand in for vLLM's (its signature or fields differ: a release this module was
        not checked against). Nothing is changed then.
    """
    target = _target_module(module)
    ours = _ours()
    patch = VllmPatch(target)
    plan: list[str] = []
    for name in _CONSTANT_NAMES:
        if name in vars(target) and vars(target)[name] != ours[name]:
            V.fail("module", f"{target.__name__}.{name} is {vars(target)[name]!r}, not {ours[name]!r}; "
                             "refusing to mix units")
    for name in _MEASUREMENT_NAMES:
        if name not in vars(target):
            V.fail("module", f"{target.__name__} defines no {name}; not a vLLM mem_utils this patch knows")
        why = _incompatibility(name, vars(target)[name], ours[name])
        if why is not None:
            V.fail("module", f"cannot stand in for {target.__name__}: {why}")
        plan.append(name)
    for name in _HELPER_NAMES:
        if name not in vars(target):
            continue  # an older release without it: nothing to swap, nothing added
        theirs = vars(target)[name]
        why = _incompatibility(name, theirs, ours[name])
        if why is None and name in ("format_gib", "format_mib"):
            why = _return_type_differs(name, theirs, ours[name])
        if why is None:
            plan.append(name)
        else:
            patch.kept[name] = why

    # Every loaded vllm module holding vLLM's object under the same name gets ours too
    # (``from vllm.utils.mem_utils import MemorySnapshot`` made its own reference).
    originals = {name: vars(target)[name] for name in plan}
    holders = [target] + [m for key, m in list(sys.modules.items())
                          if isinstance(m, types.ModuleType) and m is not target
                          and (key == "vllm" or key.startswith("vllm."))]
    for holder in holders:
        namespace = vars(holder)  # not getattr: a lazy module's __getattr__ must not run
        for name, original in originals.items():
            if namespace.get(name) is original:
                patch._undo.append((holder, name, original, ours[name]))
                setattr(holder, name, ours[name])
    patch.swapped = plan
    return patch
