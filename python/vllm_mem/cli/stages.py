"""``vllm-mem stages FILE.yaml|EXAMPLE [--gpu H100-80GB] [--json]``: check a vLLM-Omni stage layout.

Exit codes: 0 every GPU fits and every stage starts, 1 a GPU is over-committed, a stage would
fail its start-up check, or a stage whose file names its model (model:) does not fit, 2 bad input
(unreadable file, malformed stage, unknown key, unknown GPU).
``--list-examples`` lists the bundled examples, each usable by name in place of FILE.yaml.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import _validate as V
from . import EXIT_DOES_NOT_FIT, EXIT_OK, options, print_json


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "stages",
        help="check a vLLM-Omni stage config: per-GPU utilization sums, start-up, fixes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    options.add_config(p, "FILE.yaml", "vLLM-Omni stage config (stage_args: or stages:), or a bundled "
                                       "example's name (see --list-examples)", nargs="?")
    p.add_argument("--list-examples", action="store_true", help="list the bundled example configs and exit")
    options.add_gpu(p, "default: measure the visible GPUs now")
    options.add_gib(p, "--free-memory-gib", "free_memory_bytes", "--free-gib", allow_zero=True,
                    help="offline: free GiB on every device before the stages start (default: total - reserve)")
    options.add_gib(p, "--reserve-gib", "reserve_bytes", allow_zero=True, default=0,
                    help="offline: GiB held by other processes on every device (default 0)")
    options.add_text(p, "--cuda-visible-devices", "cuda_visible_devices", metavar="LIST",
                     help="CUDA_VISIBLE_DEVICES of the launching process, e.g. 2,3 (default: unset)")
    options.add_vllm_version(p, usage_context=False)  # for the stages the file names a model for
    options.add_json(p)
    p.set_defaults(func=run)


def example_description(text: str) -> str:
    """The leading comment paragraph of an example file, whole: its ``#`` lines up to the first
    blank comment line or the first line of YAML, joined into one text (never cut mid-sentence)."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        if not body:
            break
        lines.append(body)
    return " ".join(lines).replace("`", "")


def _list_examples(as_json: bool) -> int:
    import textwrap

    from ..stages.config import bundled_stage_examples, example_names

    rows = []
    for path in bundled_stage_examples():
        rows.append({"name": example_names(path)[0], "aliases": example_names(path)[1:], "path": str(path),
                     "summary": example_description(path.read_text(encoding="utf-8"))})
    if as_json:
        print_json(rows)
    else:
        for r in rows:
            also = f" (also {', '.join(r['aliases'])})" if r["aliases"] else ""
            print(f"{r['name']}{also}")
            print(textwrap.fill(r["summary"], width=100, initial_indent="    ", subsequent_indent="    "))
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    if args.list_examples:
        return _list_examples(args.json)
    if args.config is None:
        V.fail("FILE.yaml", "give a stage config file or a bundled example's name (see --list-examples)")
    if args.reserve_bytes and args.gpu is None:
        V.fail("--reserve-gib", "applies offline only; give --gpu too")
    from ..stages import check_stages

    result = check_stages(
        args.config,
        gpus=args.gpu,
        free_memory_bytes=args.free_memory_bytes,
        cuda_visible_devices=args.cuda_visible_devices,
        reserve_bytes=args.reserve_bytes,
        vllm_version=args.vllm_version,
        allow_long_max_model_len=args.allow_long_max_model_len,
    )
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.report, end="")
    return EXIT_OK if result.ok else EXIT_DOES_NOT_FIT
