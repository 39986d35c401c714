"""``vllm-mem gpus``: the GPU catalog (total memory as CUDA / ROCm report it)."""

from __future__ import annotations

import argparse
from typing import Any

from ..catalog import gpu_catalog
from . import options, print_json


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser("gpus", help="list the GPU catalog",
                              description="GPUs the planner knows, with total memory as the runtime "
                                          "reports it and where each figure comes from.")
    options.add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    gpus = gpu_catalog()
    if args.json:
        print_json([g.to_dict() for g in gpus])
        return 0
    print(f"{'name':<16} {'vendor':<7} {'memory':<7} {'nominal':>8} {'total (GiB)':>12}  "
          f"{'figure':<13} device name")
    for g in gpus:
        print(f"{g.name:<16} {g.vendor:<7} {g.memory_type:<7} {g.nominal_memory_gb:>6}GB "
              f"{g.total_memory_gib:>12.2f}  {g.figure_source:<13} {g.device_name}")
    print("\nfigure: measured = byte-exact from a start-up log; reported_mib / reported_gib = as "
          "torch printed it; estimated = derived (docs/planner.md)")
    return 0
