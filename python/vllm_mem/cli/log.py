"""``vllm-mem log FILE``: a vLLM start-up log explained, each printed figure beside the plan's
(:func:`vllm_mem.explain_startup_log`).

Exit codes: 0 the log's start-up reached the KV cache, 1 the log shows a failed start-up (the
change that fixes it is printed), 2 bad input (a truncated or garbage log, a missing model).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import _validate as V
from . import EXIT_DOES_NOT_FIT, EXIT_OK, options, print_json


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "log",
        help="explain a vLLM start-up log: each printed figure beside the planned one, and what fixes a failure",
        description="Read a vLLM start-up log (FILE, or - for stdin), plan the same start-up (model and settings "
                    "from its 'non-default args' line, the GPU total from its free-memory line) and print each "
                    "figure vLLM printed beside the planned one with the difference; for a failed start-up, the "
                    "change that fixes it. Exit 0 the start-up reached the KV cache, 1 it failed, 2 bad input.",
    )
    p.add_argument("file", metavar="FILE", help="the log file, or - to read standard input")
    p.add_argument("--model", dest="model", default=None, metavar="CONFIG",
                   type=options.typed("--model", lambda t, f: V.text(t, f)),
                   help="the model when the log prints no 'non-default args' line (a bundled name, config.json "
                        "path or Hub id); with one, it replaces the log's model source")
    options.add_gpu(p, "default: the total the log prints ('Free memory on device (free/total GiB)')")
    options.add_gib(p, "--total-memory-gib", "total_memory_bytes", help="total device memory instead of --gpu")
    options.add_text(p, "--vllm-version", "vllm_version", metavar="X.Y[.Z]",
                     help="the vLLM release; default: the log's banner, else the installed vllm, else the newest")
    p.add_argument("--vllm-command", dest="vllm_command", default=None, metavar="'vllm serve MODEL ...'",
                   type=options.typed("--vllm-command", lambda t, f: V.text(t, f)),
                   help="the command that started it, when the log does not print its settings (one quoted string)")
    p.add_argument("--allow-unknown", action="store_true",
                   help="size a model family without exact rules as a generic transformer (labelled)")
    options.add_json(p)
    p.set_defaults(func=run)


_MAX_LOG_BYTES = 64 << 20


def run(args: argparse.Namespace) -> int:
    from ..startup_log import explain_startup_log

    if args.file == "-":
        data = sys.stdin.buffer.read(_MAX_LOG_BYTES + 1)
        if len(data) > _MAX_LOG_BYTES:
            V.fail("FILE", f"standard input holds more than {_MAX_LOG_BYTES} bytes; a start-up log is far smaller")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            V.fail("FILE", f"standard input is not UTF-8 text (offset {exc.start})")
    else:
        text = V.read_text(V.path_of(args.file, "FILE"), "FILE", _MAX_LOG_BYTES)
    gpu, total = (None, args.gpu) if isinstance(args.gpu, int) else (args.gpu, args.total_memory_bytes)
    result = explain_startup_log(text, model=args.model, gpu=gpu, total_memory_bytes=total,
                                 vllm_version=args.vllm_version, vllm_args=args.vllm_command,
                                 allow_unknown=args.allow_unknown)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.report(), end="")
    return EXIT_DOES_NOT_FIT if result.failed else EXIT_OK
