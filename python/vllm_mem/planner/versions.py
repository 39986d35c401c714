"""Which vLLM release a plan is for: the asked version, else the installed one, else the newest
profile (the rules live in ``csrc/core/plan/vllm_versions.json``; docs/vllm_versions.md).

vLLM itself is never imported: its version comes from the installed distribution's metadata,
so planning stays cheap and creates no CUDA context.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from .. import _C
from .. import _validate as V

#: Where the planned version came from, as reports say it ("newest known" may be followed by
#: ": <why the installed version was not used>").
VERSION_SOURCES = ("asked", "installed", "newest known")

USAGE_CONTEXTS = ("server", "offline")


@functools.lru_cache(maxsize=1)
def installed_vllm_version() -> str | None:
    """The installed vllm distribution's version (``importlib.metadata``; read once per process,
    as a process does not change its vllm), or ``None``."""
    from importlib import metadata

    try:
        return metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return None
    except Exception:  # a broken installation's metadata: plan for the newest instead
        return None


def choose_vllm_version(vllm_version: Any) -> tuple[str, str]:
    """``(version, source)``: the asked version, else the installed one, else ``""`` (the core
    uses the newest profile). The format is checked by the core (``vllm_version``)."""
    if vllm_version is not None:
        text = V.text(vllm_version, "vllm_version", max_chars=64, what="a vLLM version such as '0.19' or '0.10.2'")
        if not text:  # the core reads "" as "the newest": an empty answer is not a version
            raise V.bad_value("vllm_version", "a vLLM release as MAJOR.MINOR or MAJOR.MINOR.PATCH", text)
        return text, "asked"
    installed = installed_vllm_version()
    if installed:
        return _installed_choice(installed)
    return "", "newest known"


@functools.lru_cache(maxsize=4)
def _installed_choice(installed: str) -> tuple[str, str]:
    """The installed version when a profile resolves it; else the newest profile, with a source
    that says why. A source build without release tags reports ``0.1.dev1+g<hash>``
    (setuptools-scm's fallback), which would read as older than every profile: every plan
    would then fail blaming a ``--vllm-version`` the user never passed."""
    try:
        _C.lookup_vllm_version(installed)
    except ValueError:
        build = "a source build without release tags" if (".dev" in installed or "+g" in installed) \
            else "not a release any profile covers"
        return "", (f"newest known: the installed vLLM's metadata (importlib.metadata 'vllm') reads "
                    f"{V.clip(installed, 40)!r}, {build}; pass vllm_version (--vllm-version) to choose")
    return installed, "installed"


def refuse_empty_version(given: dict[str, Any]) -> None:
    """An explicit ``vllm_version=""`` is not a release: the request object reads "" as unset
    (the installed, else the newest), so an empty answer is refused here, before it is built."""
    if given.get("vllm_version") == "":
        raise V.bad_value("vllm_version", "a vLLM release as MAJOR.MINOR or MAJOR.MINOR.PATCH", "")


_ALLOW_LONG = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def allow_long_from_env() -> bool:
    """vLLM's ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` as vllm/envs.py reads it ("1" or "true").

    Read on every plan, since a process may set it at any time (vLLM reads os.environ when
    asked), but cheaply: ``os.environ.get`` encodes the name and decodes the value on each call
    (about 1 us on the loaded development container, a twentieth of a plan). CPython's
    ``os.environ`` keeps its values in the dict ``_data`` (``os._Environ``; every change made
    through ``os.environ`` writes it), so the raw value is one dict look-up, and the answer is
    remembered for that raw value. Where ``os.environ`` has no such dict, the plain read."""
    global _allow_long_memo
    environ = os.environ
    data = getattr(environ, "_data", None)
    if data.__class__ is not dict:
        return _allow_long_value(environ.get(_ALLOW_LONG, "0"))
    raw = data.get(_ALLOW_LONG_KEY)
    memo = _allow_long_memo
    if raw is memo[0] or raw == memo[0]:
        return memo[1]
    value = _allow_long_value("0" if raw is None else environ.decodevalue(raw))
    _allow_long_memo = (raw, value)
    return value


def _allow_long_value(text: str) -> bool:
    return text.strip().lower() in ("1", "true")


#: The name as ``os.environ`` keys its dict (bytes on POSIX), and the last raw value read with
#: its answer (``None``: the variable is unset, so "0").
_ALLOW_LONG_KEY: Any = os.environ.encodekey(_ALLOW_LONG) if hasattr(os.environ, "encodekey") else _ALLOW_LONG
_allow_long_memo: tuple[Any, bool] = (None, False)


def usage_context(value: Any) -> str:
    return V.text(value, "usage_context", allowed=USAGE_CONTEXTS)


def vllm_versions() -> list[dict[str, Any]]:
    """Every vLLM release profile, oldest first: ``version``, ``date``, ``note`` and ``rules``
    (each with ``rule``, ``value``, ``since``, ``release`` ("tagged" or "inferred") and
    ``source``).

    Examples
    --------
    >>> import vllm_mem
    >>> [p["version"] for p in vllm_mem.vllm_versions()][:3]
    ['0.7.0', '0.8.0', '0.8.4']
    """
    return list(_C.vllm_version_profiles())


def resolve_vllm_version(vllm_version: str) -> tuple[str, str, bool, str]:
    """``(profile version, asked version, newer than known, note)`` for ``vllm_version``
    (``""``: the newest profile). ValueError naming ``vllm_version`` for an unknown format."""
    return tuple(_C.lookup_vllm_version(vllm_version))  # type: ignore[return-value]
