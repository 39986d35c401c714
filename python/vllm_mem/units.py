"""Byte units and vLLM's formatting of them."""

from __future__ import annotations

import re
from decimal import Decimal

from . import _C
from . import _validate as V

__all__ = ["KiB_bytes", "MiB_bytes", "GiB_bytes", "KB_bytes", "MB_bytes", "GB_bytes",
           "format_gib", "format_gib_text", "format_mib", "parse_size"]

KB_bytes = 1_000
KiB_bytes = 1 << 10
MB_bytes = 1_000_000
MiB_bytes = 1 << 20
GB_bytes = 1_000_000_000
GiB_bytes = 1 << 30


def _bytes(num_bytes: int | float, field: str = "num_bytes") -> int:
    # Signed (differences of snapshots are negative) and within int64, the core's type. vLLM's
    # format_gib also takes floats; NaN and infinity are refused rather than raising
    # OverflowError from int().
    if isinstance(num_bytes, float):
        return int(V.number(num_bytes, field, low=-(2.0 ** 63), high=2.0 ** 63, high_open=True))
    return V.integer(num_bytes, field, low=-(1 << 63), high=(1 << 63) - 1)


def format_gib(b: int | float) -> float:
    """vLLM's ``format_gib``: ``round(b / GiB_bytes, 2)``, a ``float`` (``14.99``), so
    arithmetic on it in a vLLM worker is unchanged when vllm_mem stands in. An f-string or
    ``str()`` of it is the text vLLM prints (``"14.99"``, ``"15.0"``); for text, use
    :func:`format_gib_text`. The parameter is named ``b`` as in vLLM. NaN, infinity and values
    beyond int64 are refused (ValueError naming ``b``)."""
    if isinstance(b, float):
        value: int | float = V.number(b, "b", low=-(2.0 ** 63), high=2.0 ** 63, high_open=True)
    else:
        value = _bytes(b, "b")
    return round(value / GiB_bytes, 2)


def format_gib_text(num_bytes: int | float) -> str:
    """The text vLLM prints for a size in GiB, ``str(round(num_bytes / 2**30, 2))``
    (``"14.99"``), computed in C++; what vllm_mem's own reports print."""
    return _C.format_gib(_bytes(num_bytes))


def format_mib(b: int | float) -> str:
    """``str(round(b / 2**20, 2))``, as later vLLM's ``format_mib`` (a str there; the parameter is
    named ``b`` as in vLLM)."""
    return _C.format_mib(_bytes(b, "b"))


# ---- sizes written by people ----------------------------------------------------------------

#: The units a size may carry, spelled exactly so: binary, as vLLM prints memory.
BINARY_UNITS = {"B": 1, "KiB": KiB_bytes, "MiB": MiB_bytes, "GiB": GiB_bytes, "TiB": 1 << 40, "PiB": 1 << 50}
#: Decimal units: "GB" is 10**9 bytes to a disk vendor, 2**30 to pytest-memray and many tools,
#: and names a GPU's marketed size (an "80 GB" GPU shows CUDA 79.2 GiB), so it is never read
#: silently as one of them.
DECIMAL_UNITS = {"kb": KB_bytes, "mb": MB_bytes, "gb": GB_bytes, "tb": 10**12, "pb": 10**15}
_MAX_SIZE_CHARS = 64
_SIZE_RE = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[A-Za-z]+)")


def size_parts(text: str) -> tuple[Decimal, str] | None:
    """``("80", "GiB")`` of ``" 80 GiB "`` as (number, unit as written), or None when the text is
    not a plain non-negative number followed by a unit (no sign, exponent or text around it)."""
    if len(text) > _MAX_SIZE_CHARS:  # bounds the Decimal arithmetic on a pasted blob
        return None
    match = _SIZE_RE.fullmatch(text.strip())
    return None if match is None else (Decimal(match["number"]), match["unit"])


def _decimal_readings(number: Decimal, unit: str) -> str:
    binary = unit[0].upper() + "iB"
    as_decimal = number * DECIMAL_UNITS[unit.lower()]
    return (f"{number} x 10**{len(str(DECIMAL_UNITS[unit.lower()])) - 1} bytes = "
            f"{round(float(as_decimal) / BINARY_UNITS[binary], 2)} {binary}, or {number} {binary} = "
            f"{int(number * BINARY_UNITS[binary])} bytes")


def parse_size(value: object, what: str = "size") -> int:
    """Bytes from ``"2 GiB"``, ``"512MiB"``, ``"1.5 GiB"``, ``"0 B"`` or a plain ``int``: the one
    size parser of vllm_mem (the pytest plugin's limits, the CLI's ``--gpu 80GiB``).

    Units are binary, as vLLM prints memory, spelled exactly: ``B``, ``KiB``, ``MiB``, ``GiB``,
    ``TiB``, ``PiB``. A decimal unit (``GB``, ``MB``) is refused with both of its readings, a
    bare or misspelled one (``G``, ``gib``) with the binary spelling to use. A fraction of a
    byte is dropped.

    Raises
    ------
    ValueError
        ``what: ...`` naming the value, for anything else (negative, no unit, unknown unit,
        text around the size, ``bool``, ``float``).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            V.fail(what, f"{value!r} is negative; a size is >= 0 bytes")
        return value
    if not isinstance(value, str):
        V.fail(what, f"{V.show(value)} is not a size; give a string such as '2 GiB' or an int number of bytes")
    parts = size_parts(value)
    if parts is None:
        V.fail(what, f"{V.show(value)} is not a size; write a number and a binary unit, e.g. '2 GiB', "
                     "'512MiB', '1.5 GiB' (units: B, KiB, MiB, GiB, TiB)")
    number, unit = parts
    multiplier = BINARY_UNITS.get(unit)
    if multiplier is None:
        folded = {u.lower(): u for u in BINARY_UNITS}
        hint = folded.get(unit.lower()) or folded.get(unit.lower().rstrip("b") + "ib")
        if hint is None and unit.lower() in ("k", "m", "g", "t", "p"):
            hint = unit.upper() + "iB"
        readings = f", read two ways ({_decimal_readings(number, unit)})" if unit.lower() in DECIMAL_UNITS else ""
        advice = f"; did you mean {hint!r} (2**{BINARY_UNITS[hint].bit_length() - 1} bytes)?" if hint else ""
        V.fail(what, f"{V.show(value)} has unit {unit!r}{readings}; use a binary unit, spelled B, KiB, MiB, GiB "
                     f"or TiB, as vLLM prints memory{advice}")
    return int(number * multiplier)
