"""``vllm-mem stages FILE.yaml [--gpu H100-80GB] [--json]``: check a vLLM-Omni stage layout.

Exit codes: 0 every GPU fits and every stage starts, 1 a GPU is over-committed or a stage would
fail its start-up check, 2 bad input (unreadable file, malformed stage, unknown GPU).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import EXIT_DOES_NOT_FIT, EXIT_OK, non_negative_gib_bytes


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "stages",
        help="check a vLLM-Omni stage config: per-GPU utilization sums, start-up, fixes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", metavar="FILE.yaml", help="vLLM-Omni stage config (stage_args: or stages:)")
    p.add_argument(
        "--gpu",
        default=None,
        help="catalog GPU of every device (e.g. H100-80GB), or a total in bytes; "
        "default: measure the visible GPUs now",
    )
    p.add_argument(
        "--free-gib",
        type=non_negative_gib_bytes,
        default=None,
        help="offline: free GiB on every device before the stages start (default: total - reserve)",
    )
    p.add_argument(
        "--reserve-gib",
        type=non_negative_gib_bytes,
        default=0,
        help="offline: GiB held by other processes on every device (default 0)",
    )
    p.add_argument(
        "--cuda-visible-devices",
        default=None,
        metavar="LIST",
        help="CUDA_VISIBLE_DEVICES of the launching process, e.g. 2,3 (default: unset)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _gpu_arg(text: str | None) -> Any | None:
    if text is None:
        return None
    return int(text) if text.isdigit() else text


def run(args: argparse.Namespace) -> int:
    from ..stages import check_stages
    result = check_stages(
        args.config,
        gpus=_gpu_arg(args.gpu),
        free_memory_bytes=args.free_gib,
        cuda_visible_devices=args.cuda_visible_devices,
        reserve_bytes=args.reserve_gib,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.report, end="")
    return EXIT_OK if result.ok else EXIT_DOES_NOT_FIT
