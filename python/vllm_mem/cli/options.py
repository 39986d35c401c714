"""Every flag of ``vllm-mem``, defined once: the same spelling, parsing, bounds and message for
the same thing in every sub-command.

Values are checked while the command line is parsed, through :mod:`vllm_mem._validate`, with
the flag as the user typed it as the field (``--max-model-len: must be an integer in [1,
1073741824]; got 'abc'``). Each sub-command also gets a map from the Python API's keyword names
to its flags (``total_memory_bytes`` -> ``--total-memory-gib``), so an error the API raises
names the flag too.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from .. import _limits as L
from .. import _validate as V
from .. import units
from ..units import GiB_bytes

#: API keyword -> flag, for the errors the API raises; extended per parser by add_* below.
FIELDS_KEY = "_cli_fields"

_INT = re.compile(r"[+-]?\d{1,20}")


def _fields(parser: argparse.ArgumentParser) -> dict[str, str]:
    fields: dict[str, str] = parser.get_default(FIELDS_KEY) or {}
    if not fields:
        parser.set_defaults(**{FIELDS_KEY: fields})
    return fields


def _arg_text(text: str, flag: str) -> str:
    # A command-line value is at most a few hundred characters in any honest use.
    return V.text(text, flag, max_chars=L.MAX_PATH_BYTES, what="a value")


def parse_int(text: str, flag: str) -> int:
    if not _INT.fullmatch(_arg_text(text, flag).strip()):
        raise V.bad_value(flag, "an integer of at most 20 digits", text)
    return int(text)


def gib_to_bytes(text: str, flag: str, *, allow_zero: bool) -> int:
    """A number of GiB (2**30 bytes, as vLLM prints) as whole bytes, at most a device's 1 PiB;
    NaN, infinity and values whose bytes overflow are refused rather than raising."""
    allowed = f"a number of GiB {'>= 0' if allow_zero else '> 0'} and at most {L.MAX_DEVICE_BYTES // GiB_bytes}"
    try:
        value = float(_arg_text(text, flag))
    except ValueError:
        raise V.bad_value(flag, allowed, text) from None
    too_big = math.isfinite(value) and value * GiB_bytes > L.MAX_DEVICE_BYTES
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero) or too_big:
        raise V.bad_value(flag, allowed, text)
    return int(round(value * GiB_bytes))


def _gpu_sold_as(number: Any, unit: str, text: str, flag: str) -> str:
    """``80GB``: the catalog GPU sold as 80 GB when exactly one is (its name, so the plan uses its
    CUDA-visible total and says where that figure comes from); otherwise refused with both
    readings. Never 80 x 10**9 bytes silently: no GPU shows CUDA its marketed decimal size."""
    from ..catalog import gpu_catalog

    sold = [g for g in gpu_catalog() if unit.upper() == "GB" and g.nominal_memory_gb == number]
    if len(sold) == 1:
        return sold[0].name
    as_gib = round(float(number) * 10**9 / GiB_bytes, 2)
    decimal = f"{number} x 10**9 bytes is {as_gib} GiB" if unit.upper() == "GB" \
        else f"{number} {unit} is {number} x 10**{len(str(units.DECIMAL_UNITS[unit.lower()])) - 1} bytes"
    if sold:
        classes = ", ".join(f"{g.name} {round(g.total_memory_gib, 2)} GiB"
                            f"{' (estimated)' if g.figure_source == 'estimated' else ''}" for g in sold)
        V.fail(flag, f"{V.show(text)} is ambiguous: {decimal}, while the GPUs sold as {number} GB show CUDA "
                     f"{classes}; give one of those names, or an exact size such as {number}GiB")
    binary = unit[0].upper() + "iB"  # the other reading: 80 MB as 80 MiB
    V.fail(flag, f"{V.show(text)} is ambiguous: {decimal}, or {number} {binary}; no catalog GPU is sold as "
                 f"{number} {unit.upper()} (see vllm-mem gpus); give an exact size such as {number}{binary}")


def gpu_value(text: str, flag: str = "--gpu") -> str | int:
    """``--gpu``: a catalog name (``H100-80GB``), a size with a binary unit (``80GiB``,
    ``85899345920B``), or ``80GB``: the catalog GPU sold as 80 GB when exactly one is, else
    refused with both readings. A bare number is refused: bytes or GiB would both be plausible.
    Sizes are read by :func:`vllm_mem.units.parse_size`, as everywhere in vllm_mem."""
    text = _arg_text(text, flag)
    parts = units.size_parts(text)
    if parts is not None and parts[1].lower() in units.DECIMAL_UNITS:
        return _gpu_sold_as(parts[0], parts[1], text, flag)
    if parts is not None:
        num_bytes = units.parse_size(text, flag)
        if num_bytes < 1 or num_bytes > L.MAX_DEVICE_BYTES:
            raise V.bad_value(flag, f"a size between 1B and {L.MAX_DEVICE_BYTES // GiB_bytes}GiB", text)
        return num_bytes
    if re.fullmatch(r"\s*[0-9.eE+-]+\s*", text):
        raise V.bad_value(flag, "a catalog GPU name or a size with a binary unit (80GiB, 85899345920B)", text)
    return V.text(text.strip(), flag, max_chars=L.MAX_GPU_NAME_CHARS, what="a catalog GPU name")


_KEYWORD_VALUE = re.compile(r"\b([a-z_][a-z0-9_]*)=(True|False|'[^']*'|\"[^\"]*\"|[0-9.]+)")
_KEYWORD_AFTER_VERB = re.compile(r"\b(pass|use|give|set) ([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")


def api_words_to_flags(message: str, fields: dict[str, str]) -> str:
    """An API message as the command line says it (docs/errors.md): ``allow_unknown=True`` ->
    ``--allow-unknown``, ``weights_source='config'`` -> ``--weights-source config``, ``pass
    total_memory_bytes`` -> ``give --total-memory-gib``. Keywords without a flag here are left."""

    def keyword(m: re.Match[str]) -> str:
        flag = fields.get(m.group(1))
        if flag is None:
            return m.group(0)
        value = m.group(2)
        if value == "False":  # an optional switch's off form (--no-enable-prefix-caching)
            return "--no-" + flag[2:]
        return flag if value == "True" else f"{flag} {value.strip(chr(39) + chr(34))}"

    def after_verb(m: re.Match[str]) -> str:
        flag = fields.get(m.group(2))
        return m.group(0) if flag is None else f"give {flag}"

    message = _KEYWORD_AFTER_VERB.sub(after_verb, _KEYWORD_VALUE.sub(keyword, message))
    message = message.replace("vllm_mem.supported_model_types()", "vllm-mem models")
    return re.sub(r"(--[a-z][a-z0-9-]*) \(\1\)", r"\1", message)  # "--x (--x)" where both were named


def option_hint(parser: argparse.ArgumentParser, command: str | None, message: str) -> str:
    """``; did you mean --tensor-parallel-size / -tp?`` for an unrecognized ``--tp``: the closest
    options of the sub-command, each with every spelling it has; "" when nothing is close."""
    m = re.search(r"unrecognized arguments: (.*)", message)
    if m is None or command is None:
        return ""
    import difflib

    sub = next((a.choices.get(command) for a in parser._actions  # noqa: SLF001 - argparse has no public API
                if isinstance(a, argparse._SubParsersAction)), None)  # noqa: SLF001
    if sub is None:
        return ""
    spellings = {o: a for a in sub._actions for o in a.option_strings}  # noqa: SLF001
    hints = []
    for token in m.group(1).split():
        name = token.split("=", 1)[0]
        if not name.startswith("-") or name in spellings:
            continue
        # vLLM's own spellings first: --max_model_len is --max-model-len.
        close = [name.replace("_", "-")] if name.replace("_", "-") in spellings else \
            difflib.get_close_matches(name, list(spellings), n=1, cutoff=0.6)
        for match in close:
            hints.append(" / ".join(spellings[match].option_strings))
    return f"; did you mean {' or '.join(dict.fromkeys(hints))}?" if hints else ""


def typed(flag: str, convert: Any) -> Any:
    def parse(text: str) -> Any:
        try:
            return convert(text, flag)
        except (ValueError, TypeError) as exc:
            # argparse prefixes "argument FLAG: "; main() strips it, keeping one line.
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = flag  # argparse names a failing type by its __name__
    return parse


def add_setting(parser: argparse.ArgumentParser, flag: str, name: str, *aliases: str, default: Any = None,
                help: str | None = None) -> None:
    """An integer engine setting, checked by its row of the settings table (``--max-model-len``)."""
    parser.add_argument(flag, *aliases, dest=name, default=default, metavar="N", help=help,
                        type=typed(flag, lambda t, f: V.setting(name, parse_int(t, f), f)))
    _fields(parser)[name] = flag


def add_fraction(parser: argparse.ArgumentParser, flag: str, name: str, default: float | None, help: str) -> None:
    parser.add_argument(flag, dest=name, default=default, metavar="FRACTION", help=help,
                        type=typed(flag, lambda t, f: V.fraction(_float(t, f), f)))
    _fields(parser)[name] = flag


def _float(text: str, flag: str) -> float:
    try:
        return float(_arg_text(text, flag))
    except ValueError:
        raise V.bad_value(flag, "a number", text) from None


def add_gib(parser: argparse.ArgumentParser, flag: str, name: str, *aliases: str, allow_zero: bool = False,
            default: Any = None, nargs: str | None = None, required: bool = False, help: str) -> None:
    """A size in GiB on the command line, in bytes for the API keyword ``name``."""
    parser.add_argument(flag, *aliases, dest=name, default=default, nargs=nargs, required=required,
                        metavar="GIB", help=help,
                        type=typed(flag, lambda t, f: gib_to_bytes(t, f, allow_zero=allow_zero)))
    _fields(parser)[name] = flag


def add_bytes(parser: argparse.ArgumentParser, flag: str, name: str, help: str) -> None:
    parser.add_argument(flag, dest=name, default=None, metavar="BYTES", help=help,
                        type=typed(flag, lambda t, f: V.size_bytes(parse_int(t, f), f, low=1)))
    _fields(parser)[name] = flag


def add_text(parser: argparse.ArgumentParser, flag: str, name: str, *aliases: str, default: Any = None,
             help: str | None = None, metavar: str | None = None) -> None:
    parser.add_argument(flag, *aliases, dest=name, default=default, help=help, metavar=metavar,
                        type=typed(flag, lambda t, f: V.text(t, f)))
    _fields(parser)[name] = flag


def add_gpu(parser: argparse.ArgumentParser, help_default: str, *api_names: str) -> None:
    """``--gpu NAME|SIZE``, the same in every sub-command."""
    parser.add_argument("--gpu", default=None, metavar="NAME|SIZE", type=typed("--gpu", gpu_value),
                        help="a catalog GPU (H100-80GB, L40S, MI300X; see vllm-mem gpus) or a device size "
                             "with a binary unit (80GiB); 40GB names the one GPU sold as 40 GB, an ambiguous "
                             f"one (80GB) is refused; {help_default}")
    for name in ("gpu", "gpus", *api_names):
        _fields(parser)[name] = "--gpu"
    # "pass total_memory_bytes" (a GPU not in the catalog): here a size; --total-memory-gib
    # replaces this where a command has it.
    _fields(parser).setdefault("total_memory_bytes", "--gpu with its size (80GiB)")


def add_config(parser: argparse.ArgumentParser, metavar: str, help: str, nargs: str | None = None) -> None:
    if metavar == "CONFIG":  # a model: after paths and bundled names, a Hub id (docs/models.md)
        help += "; else a Hugging Face Hub id org/name, read from the local cache or the Hub (HF_HUB_OFFLINE=1: " \
                "cache only; HF_TOKEN for gated repos)"
    parser.add_argument("config", metavar=metavar, help=help, nargs=nargs)
    _fields(parser)["config"] = metavar
    parser.add_argument("--allow-unknown", action="store_true",
                        help="size a model family without exact rules (Zamba, MiniMax, plamo2, an unknown "
                             "model_type; vllm-mem models says which) as a generic transformer; the report "
                             "labels it GENERIC ESTIMATE")
    _fields(parser)["allow_unknown"] = "--allow-unknown"


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON on stdout (errors: one JSON object on stderr)")


# ---- the serving flags, generated from the core's settings table (plan/plan_request.h) -------

#: vLLM's short spellings of table flags (vllm/engine/arg_utils.py).
_SHORT_FLAGS: dict[str, tuple[str, ...]] = {
    "tensor_parallel_size": ("-tp",), "pipeline_parallel_size": ("-pp",),
    "decode_context_parallel_size": ("-dcp",), "quantization": ("-q",),
}
#: Where an argparse destination holds table settings, so table_settings() can collect them.
TABLE_KEY = "_vllm_mem_table_settings"


def setting_rows() -> dict[str, dict[str, Any]]:
    """The settings table's rows by name (``_C.plan_settings()``), read once."""
    global _ROWS
    if _ROWS is None:
        from .. import _C

        _ROWS = {row["name"]: row for row in _C.plan_settings()}
    return _ROWS


_ROWS: dict[str, dict[str, Any]] | None = None


def setting_flag(name: str) -> str:
    """The command-line spelling of a table setting: vLLM's flag, else the name in kebab case."""
    return setting_rows()[name]["flag"] or "--" + name.replace("_", "-")


def _setting_help(row: dict[str, Any], extra: str | None) -> str:
    text = row["help"]
    if row["choices"]:
        text += f" ({row['choices']})"
    default = row["unset"] or row["default"]
    text += f"; default: {default}" if default not in ("", None) else ""
    return f"{text}; {extra}" if extra else text


class _TextListAction(argparse.Action):
    """A text-list row's values as vLLM's nargs="+" reads them (commas also split, as the int
    lists' values do), checked by the row: a bad item exits as a bad --flag value does."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        flag = option_string or self.option_strings[0]
        items = [x.strip() for value in values for x in str(value).split(",") if x.strip()]
        try:
            setattr(namespace, self.dest, V.setting(self.dest, items, flag))
        except (ValueError, TypeError) as exc:
            parser.error(f"argument {flag}: {exc}")


def add_table_setting(parser: argparse.ArgumentParser, name: str, help: str | None = None) -> None:
    """One row of the settings table as a flag: vLLM's spelling, its type, its bounds (the row's
    check, through :func:`vllm_mem._validate.setting`) and its help. Unset flags are left out
    of :func:`table_settings`, so the API's default (the release's) applies."""
    row = setting_rows()[name]
    flag = setting_flag(name)
    kind = row["kind"]
    common: dict[str, Any] = {"dest": name, "default": None, "help": _setting_help(row, help)}
    if kind == "optional bool":  # vLLM's --x / --no-x (argparse.BooleanOptionalAction); unset: the release's
        parser.add_argument(flag, *_SHORT_FLAGS.get(name, ()), action=argparse.BooleanOptionalAction, **common)
    elif kind == "bool":
        parser.add_argument(flag, *_SHORT_FLAGS.get(name, ()), action="store_true", **common)
    elif kind == "text list":  # vLLM's nargs="+" (--kv-cache-dtype-skip-layers sliding_window 0)
        parser.add_argument(flag, nargs="+", metavar="NAME", action=_TextListAction, **common)
    else:
        read: dict[str, Any] = {
            # A row with an auto word (--max-model-len auto) hands the word to the row's check.
            "int": lambda t, f: V.setting(name, t if _is_auto_word(row, t) else parse_int(t, f), f),
            "float": lambda t, f: V.setting(name, _float(t, f), f),
            "int list": lambda t, f: V.setting(name, [parse_int(x, f) for x in t.split(",") if x.strip()], f),
            # vLLM's JSON (--limit-mm-per-prompt '{"image": 2, "video": 0}'); the row types each key.
            "mapping": lambda t, f: V.setting(name, _json_value(t, f), f),
        }
        convert = read.get(kind, lambda t, f: V.setting(name, t, f))
        metavar = {"int": "N", "float": "X", "int list": "N[,N...]", "text list": "NAME", "mapping": "JSON"}.get(
            kind, "NAME")
        parser.add_argument(flag, *_SHORT_FLAGS.get(name, ()), metavar=metavar, type=typed(flag, convert), **common)
    _fields(parser)[name] = flag
    parser.set_defaults(**{TABLE_KEY: [*(parser.get_default(TABLE_KEY) or []), name]})


def _json_value(text: str, flag: str) -> Any:
    """A mapping flag's JSON text as vLLM's parser reads it (json.loads), bounded like every JSON
    text from outside (_bounded_json); malformed text names the flag."""
    from .._bounded_json import load_json

    return load_json(text, flag)


def _is_auto_word(row: dict[str, Any], text: str) -> bool:
    return bool(row["auto_text"]) and text.strip().lower() == row["auto_text"]


def registered(parser: argparse.ArgumentParser) -> dict[str, str]:
    """API keyword -> flag of what ``parser`` already has."""
    return _fields(parser)


def table_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The table settings given on the command line, as the API's keywords."""
    names = getattr(args, TABLE_KEY, None) or []
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def add_engine_settings(parser: argparse.ArgumentParser, *, max_model_len_help: str) -> None:
    """The vLLM engine arguments several commands share, spelled as vLLM spells them."""
    add_table_setting(parser, "max_model_len", help=max_model_len_help)
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "block_size", "dtype", "kv_cache_dtype"):
        add_table_setting(parser, name)


def add_speculative_config(parser: argparse.ArgumentParser) -> None:
    """vLLM's --speculative-config JSON (checked by planner/speculative.py)."""
    parser.add_argument("--speculative-config", dest="speculative_config", default=None, metavar="JSON",
                        type=typed("--speculative-config", lambda t, f: V.text(t, f)),
                        help='vLLM --speculative-config, e.g. \'{"method": "eagle3", "model": '
                             '"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}\' (methods: ngram, '
                             'draft_model, eagle, eagle3, mtp; docs/speculative_decoding.md)')
    _fields(parser)["speculative_config"] = "--speculative-config"


def add_vllm_version(parser: argparse.ArgumentParser, *, usage_context: bool = True) -> None:
    """Which vLLM release to plan for, and the settings whose defaults depend on it."""
    add_table_setting(parser, "vllm_version", help="see docs/vllm_versions.md")
    if usage_context:
        add_table_setting(parser, "usage_context")
    parser.add_argument("--allow-long-max-model-len", dest="allow_long_max_model_len", action="store_true",
                        default=None, help="as VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (also read from the environment): "
                                           "accept a --max-model-len above the model's derived maximum")
    _fields(parser).update(allow_long_max_model_len="--allow-long-max-model-len")


def add_weights_source(parser: argparse.ArgumentParser) -> None:
    """``--weights-source config|headers``: where the weights term comes from (docs/models.md)."""
    parser.add_argument("--weights-source", dest="weights_source", default="config",
                        type=typed("--weights-source", lambda t, f: V.text(t, f, allowed=("config", "headers"))),
                        help="config: parameters counted from config.json (default, offline); headers: summed "
                             "from the checkpoint's safetensors headers (a local checkpoint folder, or a Hub id "
                             "read over the network without downloading weights)")
    _fields(parser)["weights_source"] = "--weights-source"
