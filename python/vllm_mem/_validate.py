"""One vocabulary of input errors for every entry point: the Python API, the CLI, the stage-file
reader and the config.json reader.

Every check raises :class:`~vllm_mem.errors.InvalidArgumentTypeError`, a ``TypeError`` (the wrong
kind of value: a string where a count goes, ``None`` where a name is required) or
:class:`~vllm_mem.errors.InvalidArgumentError`, a ``ValueError`` (the right kind, not allowed: out
of range, NaN, an unknown name, an unreadable file), each carrying ``.field``, with one message
shape::

    field: must be <what is allowed>; got <the value, at most 80 characters>

at most 300 characters in all. The checks run before anything crosses into ``_C``, so
pybind11's "incompatible function arguments" never reaches a user, and before any work whose
cost grows with the value (bounds from :mod:`vllm_mem._limits`). ``docs/errors.md`` lists them.
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import os
import stat
from collections.abc import Iterable, Mapping, Sized
from pathlib import Path
from typing import Any, NoReturn

from . import _limits as L
from .errors import InvalidArgumentError, InvalidArgumentTypeError, NotModelledError

_MISSING: Any = object()

#: What a bool field says about strings, because "false" and "0" are truthy in Python.
_BOOL_ALLOWED = "True or False (strings such as 'false' or '0' are not read as booleans)"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked with ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show(value: Any) -> str:
    """The value as a message quotes it: at most 80 characters, in time independent of its size
    (a 200 MB string, an int of a million digits, a list of a million items)."""
    limit = L.MAX_ECHOED_CHARS
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        # str() of an int is quadratic in its digits (and refused above 4300 digits).
        return str(value) if value.bit_length() <= 200 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, str):
        if len(value) > limit:
            # repr() can be 4x longer than the text (escapes): cut the quoted form too.
            return clip(repr(value[: limit - 26]), limit - 26) + f" ({len(value)} characters)"
        return clip(repr(value), limit)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"{type(value).__name__} of {len(value)} bytes"
    if isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > 8:
        return f"a {type(value).__name__} of {len(value)} items"
    try:
        text = repr(value)
    except Exception:  # a repr that raises must not hide the real error
        text = f"a {type(value).__name__}"
    return clip(text, limit)


def message(field: str, allowed: str, value: Any = _MISSING) -> str:
    """``field: must be allowed; got value``, at most 300 characters."""
    head = clip(str(field), L.MAX_ECHOED_CHARS)
    tail = "" if value is _MISSING else f"; got {show(value)}"
    room = L.MAX_MESSAGE_CHARS - len(head) - len(tail) - len(": must be ")
    return f"{head}: must be {clip(allowed, max(room, 20))}{tail}"[: L.MAX_MESSAGE_CHARS]


def bad_value(field: str, allowed: str, value: Any = _MISSING) -> InvalidArgumentError:
    return InvalidArgumentError(message(field, allowed, value), str(field))


def bad_type(field: str, allowed: str, value: Any = _MISSING) -> InvalidArgumentTypeError:
    return InvalidArgumentTypeError(message(field, allowed, value), str(field))


def fail(field: str, text: str) -> NoReturn:
    """A ValueError whose text is not of the ``must be`` shape (``field: text``), clipped."""
    raise InvalidArgumentError(clip(f"{clip(field, L.MAX_ECHOED_CHARS)}: {text}", L.MAX_MESSAGE_CHARS), str(field))


def renamed(exc: BaseException, names: Mapping[str, str], prefix: str = "") -> Exception | None:
    """``exc``, a typed error (vllm_mem.errors) whose field is ``prefix`` + a keyword of ``names``
    (``kv_cache_dtype``, ``speculative_config.method``, ``cudagraph_capture_sizes[2]``), naming
    ``names[keyword]`` in its place (``--kv-cache-dtype``, ``stages[0] (stage 0)
    engine_args.kv_cache_dtype``) with the rest of its text kept; None when it names none of them.
    So an error raised for a keyword names where the user wrote it."""
    if not isinstance(exc, (InvalidArgumentError, NotModelledError)) or not (exc.field or "").startswith(prefix):
        return None
    field = exc.field or ""
    inner = field[len(prefix):]
    head = inner.split(".", 1)[0].split("[", 1)[0]
    if head not in names:
        return None
    text = str(exc)
    rest = text[len(field) + 1:].lstrip() if text.startswith(field + ":") else text
    new_field = names[head] + inner[len(head):]
    return type(exc)(clip(f"{clip(new_field, L.MAX_ECHOED_CHARS)}: {rest}", L.MAX_MESSAGE_CHARS), new_field)


# --- scalars -----------------------------------------------------------------------------------


def _range_text(kind: str, low: float | None, high: float | None, low_open: bool = False,
                high_open: bool = False) -> str:
    if low is not None and high is not None:
        return f"{kind} in {'(' if low_open else '['}{_num(low)}, {_num(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{kind} {'>' if low_open else '>='} {_num(low)}"
    if high is not None:
        return f"{kind} {'<' if high_open else '<='} {_num(high)}"
    return kind


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def integer(value: Any, field: str, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (Python or NumPy, never a bool, float or string) in ``[low, high]``."""
    allowed = _range_text("an integer", low, high)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise bad_type(field, allowed, value)
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise bad_value(field, allowed, value)
    return v


def optional_integer(value: Any, field: str, *, low: int | None = None, high: int | None = None) -> int | None:
    return None if value is None else integer(value, field, low=low, high=high)


def count(value: Any, field: str, high: int) -> int:
    """A positive count with its documented upper bound."""
    return integer(value, field, low=1, high=high)


def size_bytes(value: Any, field: str, *, low: int = 0, high: int = L.MAX_DEVICE_BYTES) -> int:
    """A number of bytes of one device (at most 1 PiB, limits.h's kMaxDeviceBytes)."""
    return integer(value, field, low=low, high=high)


def signed_bytes(value: Any, field: str) -> int:
    """A measured byte figure or difference: any int64 (the core's type; pybind11 refuses more)."""
    return integer(value, field, low=-(1 << 63), high=(1 << 63) - 1)


def number(value: Any, field: str, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number (never a bool or string, never NaN or infinite) in the range."""
    allowed = _range_text("a finite number", low, high, low_open, high_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise bad_type(field, allowed, value)
    try:
        v = float(value)
    except (OverflowError, ValueError):  # an int or Fraction beyond a double
        raise bad_value(field, allowed, value) from None
    if not math.isfinite(v):
        raise bad_value(field, allowed, value)
    if low is not None and (v < low or (low_open and v == low)):
        raise bad_value(field, allowed, value)
    if high is not None and (v > high or (high_open and v == high)):
        raise bad_value(field, allowed, value)
    return v


def fraction(value: Any, field: str) -> float:
    """A fraction of a device in (0, 1], as ``gpu_memory_utilization``."""
    return number(value, field, low=0.0, high=1.0, low_open=True)


def flag(value: Any, field: str) -> bool:
    """A boolean: True, False or a NumPy bool; 0/1 and strings are refused."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_" and type(value).__module__ == "numpy":
        return bool(value)
    raise bad_type(field, _BOOL_ALLOWED, value)


def text(value: Any, field: str, *, allowed: Iterable[str] | None = None,
         max_chars: int = L.MAX_NAME_CHARS, what: str = "a string") -> str:
    """A string of at most ``max_chars`` characters (``None`` refused), one of ``allowed`` when
    given."""
    choices = None if allowed is None else list(allowed)
    described = what if choices is None else "one of " + ", ".join(choices)
    if not isinstance(value, str):
        raise bad_type(field, described, value)
    if len(value) > max_chars:
        raise bad_value(field, f"{what} of at most {max_chars} characters", value)
    if "\x00" in value:
        raise bad_value(field, f"{what} without NUL characters", value)
    if choices is not None and value not in choices:
        raise bad_value(field, described, value)
    return value


def dtype(value: Any, field: str = "dtype") -> str:
    """vLLM's ``--dtype`` (or a rule of thumb's dtype name); the core checks the name itself."""
    return text(value, field, what="a dtype name: auto, float16, bfloat16, float32")


def kv_cache_dtype(value: Any, field: str = "kv_cache_dtype") -> str:
    """vLLM's ``--kv-cache-dtype``; the core checks the name against the same list."""
    from . import _C  # the list is the core's

    return text(value, field, what="one of " + str(_C.allowed_kv_cache_dtypes()))


def optional_text(value: Any, field: str, *, max_chars: int = L.MAX_NAME_CHARS,
                  what: str = "a string or None") -> str | None:
    return None if value is None else text(value, field, max_chars=max_chars, what=what)


def items(value: Any, field: str, *, max_items: int = L.MAX_LIST_ITEMS, what: str = "a list") -> list[Any]:
    """The items of a list-like argument (not a string or mapping), at most ``max_items``,
    counted before they are copied."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise bad_type(field, what, value)
    if isinstance(value, Sized):
        if len(value) > max_items:
            raise bad_value(field, f"{what} of at most {max_items} items", value)
        return list(value)
    out = list(itertools.islice(value, max_items + 1))  # a generator: never drained past the bound
    if len(out) > max_items:
        raise bad_value(field, f"{what} of at most {max_items} items", f"more than {max_items} items")
    return out


#: Integer arguments that are not serving settings (rule-of-thumb sizes), with their bounds.
#: Every serving setting is a row of the core's settings table (``_C.plan_settings()``,
#: ``plan/plan_request.h``): :func:`setting` checks it there, so a setting has one set of bounds.
_OTHER_INTEGERS: dict[str, tuple[int, int]] = {
    "batch_size": (1, L.MAX_NUM_SEQS),
    "seq_len": (1, L.MAX_MODEL_LEN_TOKENS),
}


def setting(name: str, value: Any, field: str | None = None) -> Any:
    """A value of the settings row ``name``, checked and converted by the core's table (its
    bounds, choices and type); ``field`` names it in messages when the caller knows it by
    another name (``--max-model-len``, ``stages[0] max_model_len``). ``None`` is refused here:
    :func:`optional_setting` takes it."""
    if value is None:
        raise bad_type(field or name, "a value (not None)", value)
    other = _OTHER_INTEGERS.get(name)
    if other is not None:
        return integer(value, field or name, low=other[0], high=other[1])
    from . import _C

    return _C.validate_setting(name, value, field or "")


def optional_setting(name: str, value: Any, field: str | None = None) -> Any:
    return None if value is None else setting(name, value, field)


def gpu(value: Any, field: str) -> str | int:
    """A GPU: a catalog name (at most 256 characters) or a total in bytes (1 B to 1 PiB)."""
    if isinstance(value, str):
        return text(value, field, max_chars=L.MAX_GPU_NAME_CHARS, what="a catalog GPU name")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise bad_type(field, "a catalog GPU name (see `vllm-mem gpus`) or a total in bytes", value)
    return size_bytes(value, field, low=1)


# --- files -----------------------------------------------------------------------------------


def path_of(value: Any, field: str) -> Path:
    """A path argument checked the way the OS would refuse it, as ValueError naming ``field``:
    NUL characters, longer than PATH_MAX (4096 bytes) or a component longer than NAME_MAX
    ("File name too long")."""
    return Path(path_name(value, field))


def path_name(value: Any, field: str) -> str:
    """:func:`path_of`'s checks, the path kept as a ``str`` (a hot path skips building a Path)."""
    if not isinstance(value, (str, os.PathLike)):
        raise bad_type(field, "a path (str or os.PathLike)", value)
    raw = os.fspath(value)
    name = raw if isinstance(raw, str) else os.fsdecode(raw)
    if "\x00" in name:
        raise bad_value(field, "a path without NUL characters", name)
    encoded = os.fsencode(name)
    if len(encoded) > L.MAX_PATH_BYTES:
        raise bad_value(field, f"a path of at most {L.MAX_PATH_BYTES} bytes (File name too long)", name)
    # No name can be longer than NAME_MAX when the whole path is not.
    if len(encoded) > L.MAX_PATH_COMPONENT_BYTES and any(
            len(part) > L.MAX_PATH_COMPONENT_BYTES for part in encoded.split(b"/")):
        raise bad_value(field, f"a path whose every name has at most {L.MAX_PATH_COMPONENT_BYTES} bytes "
                               "(File name too long)", name)
    return name


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a file (``None``: it can be tried), without reading it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except PermissionError:
        return "permission denied"
    except OSError as exc:  # ENAMETOOLONG, ELOOP, ENOTDIR, EIO ...
        return exc.strerror or type(exc).__name__
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if not stat.S_ISREG(st.st_mode):
        # A FIFO or a device could block or never end.
        return "not a regular file"
    return None


def read_text(path: str | Path, field: str, max_bytes: int, *, checked: bool = False) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes``, the size checked before reading;
    every failure a ValueError naming ``field`` and the path. ``checked``: the caller has just
    found ``file_problem(path)`` None, so the check is not repeated (the fstat below still is).

    A FIFO or device is refused before it is opened (opening one can block or act). The open
    file's own kind and size are read again (``fstat``), so a file swapped after the check is
    still refused, and the read asks for the file's size, never ``max_bytes``: Python allocates
    the buffer a read asks for, and a 16 MiB buffer for a 1 KiB config cost 70 us a load."""
    problem = None if checked else file_problem(path)
    if problem is not None:
        fail(field, f"cannot read {show(str(path))}: {problem}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        fail(field, f"cannot read {show(str(path))}: {exc.strerror or type(exc).__name__}")
    try:
        data = _read_regular(fd, path, field, max_bytes)
    finally:
        os.close(fd)
    # A UTF-8 byte-order mark is dropped as "utf-8-sig" drops it; that codec is written in
    # Python and cost ~1 us a read, the plain "utf-8" decode is C. Offsets count from the file's
    # first byte, the mark included.
    skip = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[skip:].decode("utf-8") if skip else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start + skip
        fail(field, f"{show(str(path))} is not UTF-8 text (byte 0x{data[at]:02x} at offset {at})")


def _read_regular(fd: int, path: str | Path, field: str, max_bytes: int) -> bytes:
    """At most ``max_bytes`` of the open regular file ``fd`` (one more refuses it)."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            fail(field, f"cannot read {show(str(path))}: "
                        f"{'is a directory' if stat.S_ISDIR(st.st_mode) else 'not a regular file'}")
        if st.st_size > max_bytes:
            fail(field, f"{show(str(path))} is {st.st_size} bytes; at most {max_bytes} are read")
        # Files under /proc report size 0, a file can grow after fstat and a read can return
        # less than asked: unless the first read returned exactly the size fstat gave (the end),
        # read on until the end or one byte past the bound, whichever comes first.
        chunks = [os.read(fd, st.st_size + 1)]
        total = len(chunks[0])
        while chunks[-1] and total <= max_bytes and (total != st.st_size or not total):
            chunks.append(os.read(fd, min(max(st.st_size, 1 << 16), max_bytes + 1 - total)))
            total += len(chunks[-1])
    except OSError as exc:
        fail(field, f"cannot read {show(str(path))}: {exc.strerror or type(exc).__name__}")
    if total > max_bytes:
        fail(field, f"{show(str(path))} holds more than {max_bytes} bytes; at most {max_bytes} are read")
    return b"".join(chunks)


# --- plain data (dicts from users, documents from YAML) ----------------------------------------


def _path(ref: Any, field: str) -> str:
    """``stages[1].devices`` from a chain of (parent, key, in_mapping) links; ``field`` at the
    root. Built only for a message, so walking a large document allocates no path strings."""
    parts: list[str] = []
    while ref is not None:
        ref, key, in_mapping = ref
        parts.append(f".{key}" if in_mapping else f"[{key}]")
    text = "".join(reversed(parts)).removeprefix(".")
    return text or field


def _typed(kind: type[Exception], text: str) -> Exception:
    """``kind(text)`` as the typed error of that kind, its field the message's path."""
    field = text.split(":", 1)[0]
    if issubclass(kind, TypeError):
        return InvalidArgumentTypeError(text, field)
    if issubclass(kind, ValueError):
        return InvalidArgumentError(text, field)
    return kind(text)


def _scalar_chars(value: Any, ref: Any, field: str, content_error: type[Exception]) -> int:
    """Characters a scalar adds (0 but for strings), refusing what JSON cannot hold exactly."""
    if value is None or isinstance(value, bool):
        return 0
    if isinstance(value, str):
        return len(value)
    if isinstance(value, int):
        if value.bit_length() > 63:
            raise bad_value(_path(ref, field), "an integer that fits in 64 bits", value)
        return 0
    if isinstance(value, float):
        if not math.isfinite(value):
            raise bad_value(_path(ref, field), "a finite number", value)
        return 0
    allowed = "plain data (mappings, lists, strings, numbers, booleans, null)"
    raise _typed(content_error, message(_path(ref, field), allowed, value))


def plain_json(document: Any, field: str, *, max_depth: int, max_nodes: int, max_chars: int,
               content_error: type[Exception] = TypeError) -> str:
    """JSON text of a dict-and-list document, walked iteratively first: nesting, node count
    and characters bounded, NaN/inf refused, integers within 64 bits, only JSON's kinds.
    ``content_error`` is the type for a value of the wrong kind (TypeError for a Python dict,
    ValueError for a file's content). Messages name the path (``stages[1].devices``).

    Scalars are checked in place and only containers are stacked, so a flat list of a million
    numbers costs one pass at C-loop speed, not a million stack entries and path strings."""
    stack: list[tuple[Any, Any, int]] = [(document, None, 1)]
    nodes = 1
    chars = 0
    while stack:
        value, ref, depth = stack.pop()
        if depth > max_depth:
            fail(_path(ref, field), f"nested deeper than {max_depth} levels")
        in_mapping = isinstance(value, Mapping)
        if not in_mapping and not isinstance(value, (list, tuple)):
            chars += _scalar_chars(value, ref, field, content_error)
            continue
        # Counted before the children are looked at: a list of ten million items is refused at once.
        nodes += len(value)
        if nodes > max_nodes:
            fail(field, f"holds more than {max_nodes} values; at most {max_nodes} are read")
        for key, child in (value.items() if in_mapping else enumerate(value)):
            if in_mapping:
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise _typed(content_error, message(_path(ref, field), "a mapping with string keys", key))
                chars += len(str(key))
            kind = type(child)
            if kind is str:
                chars += len(child)
            elif kind is int:
                if child.bit_length() > 63:
                    raise bad_value(_path((ref, key, in_mapping), field), "an integer that fits in 64 bits", child)
            elif kind is float:
                if not math.isfinite(child):
                    raise bad_value(_path((ref, key, in_mapping), field), "a finite number", child)
            elif child is not None and kind is not bool:
                stack.append((child, (ref, key, in_mapping), depth + 1))
        if chars > max_chars:
            fail(field, f"holds more than {max_chars} characters of text; at most {max_chars} are read")
    return json.dumps(document, allow_nan=False)
