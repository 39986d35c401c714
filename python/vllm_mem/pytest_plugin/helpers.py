"""Sizes as the markers read them and as the messages print them."""

from __future__ import annotations


def parse_size(value: object, what: str = "size") -> int:
    """Bytes from ``"2 GiB"`` or an ``int``: :func:`vllm_mem.units.parse_size`, the package's one
    size parser (the CLI's ``--gpu 80GiB`` reads sizes the same way). Imported on first use, so
    loading the plugin never loads the extension."""
    from ..units import parse_size as parse

    return parse(value, what)


def format_bytes(num_bytes: int) -> str:
    """vLLM's rounding (format_gib / format_mib, in C++) with the unit that reads best."""
    # Imported on first use: loading the plugin loads no part of the extension.
    from ..units import GiB_bytes, format_gib, format_mib

    if abs(num_bytes) >= GiB_bytes:
        return f"{format_gib(num_bytes)} GiB"
    return f"{format_mib(num_bytes)} MiB"


def signed(num_bytes: int) -> str:
    return ("+" if num_bytes >= 0 else "") + format_bytes(num_bytes)
