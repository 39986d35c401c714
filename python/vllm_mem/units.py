"""Byte units and vLLM's formatting of them."""

from __future__ import annotations

from . import _C

__all__ = ["KiB_bytes", "MiB_bytes", "GiB_bytes", "KB_bytes", "MB_bytes", "GB_bytes",
           "format_gib", "format_mib"]

KB_bytes = 1_000
KiB_bytes = 1 << 10
MB_bytes = 1_000_000
MiB_bytes = 1 << 20
GB_bytes = 1_000_000_000
GiB_bytes = 1 << 30


def format_gib(num_bytes: int) -> str:
    """``str(round(num_bytes / 2**30, 2))``: the text vLLM prints, e.g. ``"14.99"``."""
    return _C.format_gib(int(num_bytes))


def format_mib(num_bytes: int) -> str:
    """``str(round(num_bytes / 2**20, 2))``."""
    return _C.format_mib(int(num_bytes))
