"""The ``vllm-mem`` command line: one sub-command per module of this package.

Exit codes: 0 fits / success, 1 does not fit, 2 bad input, 130 interrupted (Ctrl-C), 141 the
reader of stdout went away (``| head``). Bad input is one line on stderr, never a traceback;
under ``--json`` that line is a JSON object (``docs/errors.md``). Flags are defined once, in
:mod:`vllm_mem.cli.options`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import _limits as L
from .. import _validate as V
from . import options
from .options import FIELDS_KEY

# Sub-command modules; each defines register(subparsers) and sets args.func.
_COMMANDS = ("kv", "plan", "log", "gpus", "models", "stages", "snapshot", "completion")

EXIT_OK = 0
EXIT_DOES_NOT_FIT = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: What a bad input surfaces as, from the API, the core or the OS; each becomes exit 2. A plain
#: TypeError, RecursionError or MemoryError is a bug of ours, not the user's input: it keeps its
#: traceback (input checks raise InvalidArgumentTypeError, a TypeError that is also a ValueError).
_BAD_INPUT = (ValueError, NotImplementedError, OSError, OverflowError)


class UsageError(Exception):
    """A command line argparse refused (unknown flag, missing argument, bad value)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a refused command line raises instead of printing usage and exiting, so
    main() prints it as one line (or JSON) like every other bad input."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def format_help(self) -> str:
        # Descriptions come from docstrings written for Sphinx: a terminal shows ``--json``
        # literally, so the reStructuredText quoting is dropped.
        return super().format_help().replace("``", "").replace(":func:", "").replace(":mod:", "").replace("`", "")


def build_parser() -> argparse.ArgumentParser:
    from .. import _C

    parser = _Parser(prog="vllm-mem", description="GPU-memory sizing and profiling for vLLM serving.",
                     epilog="Exit codes: 0 fits, 1 does not fit, 2 bad input (docs/errors.md).")
    parser.add_argument("--version", action="version", version=f"vllm-mem {_C.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _COMMANDS:
        module = importlib.import_module(f"vllm_mem.cli.{name}")
        module.register(sub)
    return parser


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _flag_message(message: str, fields: dict[str, str], field: str | None = None) -> tuple[str, str | None]:
    """(message, field): an argparse "argument --x: ..." made "--x: ...", and the typed error's
    own ``.field`` (vllm_mem.errors; ``total_memory_bytes``, ``cudagraph_capture_sizes[2]``)
    renamed to the flag that sets it (``--total-memory-gib``): the flags come from the settings
    table (cli/options.py), so the field's head is the keyword, never read from the text."""
    message = _one_line(message)
    if message.startswith("argument ") and ": " in message:  # argparse's own wording
        flag, rest = message[len("argument "):].split(": ", 1)
        flag = flag.split("/")[-1]
        return (rest if rest.startswith(flag + ":") else f"{flag}: {rest}"), flag
    if not field:
        return message, None
    # The field's head (before any .key or [index]) is the API keyword the flag sets.
    cut = min((i for i in (field.find("."), field.find("[")) if i >= 0), default=len(field))
    head, tail = field[:cut], field[cut:]
    flag = fields.get(head)
    if flag is None:
        return message, field
    if message.startswith(field + ":"):
        return flag + tail + message[len(field):], flag + tail
    return message, flag + tail


def _report(command: str | None, exc: BaseException, fields: dict[str, str], as_json: bool) -> int:
    if isinstance(exc, UnicodeError):
        text = "input is not valid UTF-8 text"
    elif isinstance(exc, RecursionError):
        text = "input nested too deeply"
    elif isinstance(exc, MemoryError):
        text = "input too large to hold in memory"
    elif isinstance(exc, OSError) and not isinstance(exc, UsageError):
        text = f"{exc.filename!s}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
    else:
        text = str(exc)
    message, field = _flag_message(text or type(exc).__name__, fields, getattr(exc, "field", None))
    message = options.api_words_to_flags(message, fields)
    message = V.clip(message, L.MAX_MESSAGE_CHARS)
    prog = f"vllm-mem {command}" if command else "vllm-mem"
    if as_json:
        line = json.dumps({"error": {"command": command, "exit_code": EXIT_BAD_INPUT,
                                     "type": "usage" if isinstance(exc, UsageError) else type(exc).__name__,
                                     "field": field, "message": message}})
    else:
        line = f"{prog}: error: {message}"
    print(line, file=sys.stderr)
    return EXIT_BAD_INPUT


def _silence_stdout() -> None:
    # After EPIPE, the interpreter's final flush of stdout would fail again and print
    # "Exception ignored ... BrokenPipeError"; point stdout at /dev/null instead.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in arguments
    command: str | None = next((a for a in arguments if a in _COMMANDS), None)
    fields: dict[str, str] = {}
    try:
        parser = build_parser()
        if command == "plan" and "--" in arguments[arguments.index("plan"):]:
            from .plan_vllm import parse as parse_vllm_command  # plan [FLAGS] -- vllm serve MODEL ...

            args = parse_vllm_command(arguments, _Parser)
        else:
            args = parser.parse_args(arguments)
        command = args.command
        fields = getattr(args, FIELDS_KEY, None) or {}
        return int(args.func(args))
    except UsageError as exc:
        return _report(command, UsageError(str(exc) + options.option_hint(build_parser(), command, str(exc))),
                       fields, as_json)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except _BAD_INPUT as exc:
        return _report(command, exc, fields, as_json)


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))


if __name__ == "__main__":
    sys.exit(main())
