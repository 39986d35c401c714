"""``vllm-mem snapshot [--device N] [--json]``: a live memory snapshot of one GPU.

Exit 0 with the snapshot; exit 2 with a one-line reason where there is no GPU or driver.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import _limits as L
from .. import _validate as V
from . import options, print_json

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "snapshot", help="a live memory snapshot of a GPU (vLLM's MemorySnapshot)",
        description="Reads free/total memory through the CUDA driver and, when torch is "
                    "imported, its allocator; prints vLLM's MemorySnapshot line or JSON.")
    parser.add_argument("--device", default=0, metavar="INDEX", help="CUDA device index (default 0)",
                        type=options.typed("--device", lambda t, f: V.integer(options.parse_int(t, f), f, low=0,
                                                                             high=L.MAX_DEVICE_ID)))
    options.add_json(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .. import _C
    from ..mem_utils import MemorySnapshot

    ok, why, count, driver_version = _C.cuda_driver_status()
    if not ok or count == 0:
        reason = why if not ok else "the CUDA driver sees no device (CUDA_VISIBLE_DEVICES?)"
        V.fail("--device", f"no GPU available: {reason}")
    snap = MemorySnapshot(device=args.device)
    procs_ok, procs_why, procs = _C.process_memory(args.device)
    if args.json:
        out = {
            "device": str(snap.device_),
            "driver_version": driver_version,
            "integrated": snap.integrated,
            "torch_peak": snap.torch_peak,
            "free_memory": snap.free_memory,
            "cuda_free_memory": snap.cuda_free_memory,
            "total_memory": snap.total_memory,
            "cuda_memory": snap.cuda_memory,
            "torch_memory": snap.torch_memory,
            "torch_allocated": snap.torch_allocated,
            "non_torch_memory": snap.non_torch_memory,
            "torch_status": snap.torch_status,
            "timestamp": snap.timestamp,
            "processes": ([{"pid": pid, "used_bytes": used} for pid, used in procs]
                          if procs_ok else None),
            "processes_unavailable_reason": None if procs_ok else procs_why,
        }
        print_json(out)
        return 0
    print(f"{snap.device_} ({'integrated' if snap.integrated else 'discrete'}, "
          f"driver {driver_version // 1000}.{driver_version % 1000 // 10})")
    print(repr(snap))
    if snap.torch_status != "available":
        print(f"torch figures: {snap.torch_status} (this process has no torch allocator)")
    if procs_ok:
        for pid, used in procs:
            print(f"  pid {pid}: {used / (1 << 30):.2f} GiB" if used >= 0 else f"  pid {pid}: n/a")
    return 0
