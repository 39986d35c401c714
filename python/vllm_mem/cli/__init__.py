"""The ``vllm-mem`` command line: one sub-command per module of this package.

Exit codes: 0 fits / success, 1 does not fit, 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Sub-command modules; each defines register(subparsers) and sets args.func.
_COMMANDS = ("kv", "plan", "gpus", "stages", "snapshot")

EXIT_OK = 0
EXIT_DOES_NOT_FIT = 1
EXIT_BAD_INPUT = 2

_GiB_BYTES = 1 << 30


def gib_bytes(text: str) -> int:
    """argparse type: a positive amount of GiB (2**30 bytes, as vLLM prints), as whole bytes."""
    return _gib_to_bytes(text, allow_zero=False)


def non_negative_gib_bytes(text: str) -> int:
    """argparse type: zero or more GiB, as whole bytes."""
    return _gib_to_bytes(text, allow_zero=True)


def _gib_to_bytes(text: str, allow_zero: bool) -> int:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GiB, got {text!r}") from None
    if not (value >= 0 if allow_zero else value > 0) or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be {'>= 0' if allow_zero else '> 0'} GiB, got {text}")
    return int(round(value * _GiB_BYTES))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vllm-mem",
        description="GPU-memory sizing and profiling for vLLM serving.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _COMMANDS:
        module = importlib.import_module(f"vllm_mem.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, TypeError, NotImplementedError, FileNotFoundError) as exc:
        # Bad input: one line, exit 2, no traceback.
        print(f"vllm-mem {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
