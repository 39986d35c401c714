"""JSON text from outside (a config.json, a safetensors index or header, a speculative config),
parsed only after its size and nesting are bounded.

Python's ``json`` module recurses once per nesting level: a few thousand ``[`` raise
``RecursionError`` (no field, no file), and a large enough text takes memory in proportion. So
the text is measured first: at most ``JSON_MAX_BYTES`` (the same cap the C++ core reads config
text with), nested at most ``JSON_MAX_DEPTH`` levels, and only then parsed, strictly: UTF-8
without replacement, no NaN/Infinity, and (where asked) no key given twice in one object, which
``json.loads`` would silently collapse to its last value. Every refusal is a ValueError naming
the field (and the file, when the caller passes it as ``where``).
"""

from __future__ import annotations

import json
from typing import Any

from . import _limits as L
from . import _validate as V

__all__ = ["json_depth", "load_json"]

# Every byte but the four brackets and the quote.
_OTHER_BYTES = bytes(b for b in range(256) if b not in b'[]{}"')
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
#: Brackets and quotes above which the running sum is taken with NumPy (a real config has a few
#: hundred, a safetensors header six per tensor).
_NUMPY_FROM = 1 << 16


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text`` outside string literals (0 for a
    scalar), in C-speed passes: escapes removed, every byte but brackets and quotes deleted
    (``bytes.translate``), then a running sum that counts a bracket only outside a string
    (after an even number of quotes). A 16 MiB header takes well under a second."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if b"\\" in data:
        # Escapes removed first (an escaped backslash, then an escaped quote; runs of backslashes
        # pair up left to right as JSON reads them), so what is left of a string is its two
        # quotes; valid JSON has no backslash outside strings.
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = data.translate(None, _OTHER_BYTES)
    if len(marks) < _NUMPY_FROM:
        depth = deepest = 0
        in_string = False
        for byte in marks:
            if byte == 34:  # '"'
                in_string = not in_string
            elif not in_string:
                depth += _STEP[byte]
                deepest = max(deepest, depth)
        return deepest
    import numpy as np  # only for large texts: 'import vllm_mem' does not load NumPy

    codes = np.frombuffer(marks, dtype=np.uint8)
    quote = codes == 34
    outside = (np.cumsum(quote, dtype=np.int64) & 1) == 0
    steps = np.zeros(256, dtype=np.int8)
    for byte, step in _STEP.items():
        steps[byte] = step
    running = np.cumsum(np.where(outside & ~quote, steps[codes], 0), dtype=np.int64)
    return max(0, int(running.max()))


class _DuplicateKey(Exception):
    pass


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise _DuplicateKey(key)
        doc[key] = value
    return doc


def load_json(data: str | bytes, field: str, *, where: str = "", unique_keys: bool = False,
              max_bytes: int = L.JSON_MAX_BYTES, max_depth: int = L.JSON_MAX_DEPTH) -> Any:
    """The document ``data`` holds; bytes are decoded as strict UTF-8. ``where`` (a file name,
    already shown) prefixes every message after ``field``."""
    at = f"{where}: " if where else ""
    size = len(data)
    if isinstance(data, str) and size * 4 > max_bytes:  # UTF-8 takes at most 4 bytes a character
        size = len(data.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        V.fail(field, f"{at}JSON text of {size} bytes; at most {max_bytes} are read")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            V.fail(field, f"{at}not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})")
    else:
        text = data
    depth = json_depth(text)
    if depth > max_depth:
        V.fail(field, f"{at}JSON nested {depth} levels deep; at most {max_depth} are read")

    try:
        return json.loads(text, object_pairs_hook=_unique if unique_keys else None, parse_constant=_no_constant)
    except _DuplicateKey as exc:
        V.fail(field, f"{at}key {V.show(exc.args[0])} appears twice in one JSON object")
    except json.JSONDecodeError as exc:
        V.fail(field, f"{at}not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    except RecursionError:  # unreachable after the depth bound; kept so none can ever escape
        V.fail(field, f"{at}JSON nested too deeply; at most {max_depth} levels are read")
    except ValueError as exc:  # NaN / Infinity
        V.fail(field, f"{at}not valid JSON ({exc})")
