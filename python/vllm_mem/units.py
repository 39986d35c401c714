"""Byte units and vLLM's formatting of them."""

from __future__ import annotations

from . import _C
from . import _validate as V

__all__ = ["KiB_bytes", "MiB_bytes", "GiB_bytes", "KB_bytes", "MB_bytes", "GB_bytes",
           "format_gib", "format_mib"]

KB_bytes = 1_000
KiB_bytes = 1 << 10
MB_bytes = 1_000_000
MiB_bytes = 1 << 20
GB_bytes = 1_000_000_000
GiB_bytes = 1 << 30


def _bytes(num_bytes: int | float) -> int:
    # Signed (differences of snapshots are negative) and within int64, the core's type. vLLM's
    # format_gib also takes floats; NaN and infinity are refused rather than raising
    # OverflowError from int().
    if isinstance(num_bytes, float):
        return int(V.number(num_bytes, "num_bytes", low=-(2.0 ** 63), high=2.0 ** 63, high_open=True))
    return V.integer(num_bytes, "num_bytes", low=-(1 << 63), high=(1 << 63) - 1)


def format_gib(num_bytes: int | float) -> str:
    """``str(round(num_bytes / 2**30, 2))``: the text vLLM prints, e.g. ``"14.99"``."""
    return _C.format_gib(_bytes(num_bytes))


def format_mib(num_bytes: int | float) -> str:
    """``str(round(num_bytes / 2**20, 2))``."""
    return _C.format_mib(_bytes(num_bytes))
