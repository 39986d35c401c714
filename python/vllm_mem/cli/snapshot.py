"""``vllm-mem snapshot [--device N] [--json]``: a live memory snapshot of one GPU.

The figures come from NVML by the device's PCI bus id (the host's memory on an integrated GPU):
no CUDA context is created, so the snapshot neither costs the ~500 MiB a context takes nor counts
it, works on a GPU too full for a context, and leaves the shell free to fork CUDA workers. A CLI
process has no torch allocator, so there are no torch figures to read; inside a worker use
``vllm_mem.mem_utils.MemorySnapshot``.

Exit 0 with the snapshot; exit 2 with a one-line reason where there is no GPU or driver.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import _limits as L
from .. import _validate as V
from ..units import GiB_bytes
from . import options, print_json

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "snapshot", help="a live memory snapshot of a GPU (vLLM's MemorySnapshot)",
        description="Reads free/total memory of a GPU from NVML (no CUDA context is created) and "
                    "the processes holding it; prints a line per figure or JSON.")
    parser.add_argument("--device", default=0, metavar="INDEX", help="CUDA device index (default 0)",
                        type=options.typed("--device", lambda t, f: V.integer(options.parse_int(t, f), f, low=0,
                                                                             high=L.MAX_DEVICE_ID)))
    options.add_json(parser)
    parser.set_defaults(func=run)


def _gib(nbytes: int) -> str:
    return f"{nbytes / GiB_bytes:.2f} GiB" if nbytes >= 0 else "unknown"


def run(args: argparse.Namespace) -> int:
    from .. import _C
    from .._device import live_memory

    ok, why, count, driver_version = _C.cuda_driver_status()
    if not ok or count == 0:
        reason = why if not ok else "the CUDA driver sees no device (CUDA_VISIBLE_DEVICES?)"
        V.fail("--device", f"no GPU available: {reason}")
    if args.device >= count:
        V.fail("--device", f"no CUDA device {args.device}: {count} visible")
    try:
        mem = live_memory(args.device)
    except (RuntimeError, ValueError) as exc:
        V.fail("--device", f"cannot read cuda:{args.device}: {exc}")
    procs_ok, procs_why, procs = _C.process_memory(args.device)
    used = mem.total_bytes - mem.free_bytes
    if args.json:
        out = {
            "device": f"cuda:{args.device}",
            "pci_bus_id": mem.pci_bus_id,
            "driver_version": driver_version,
            "integrated": mem.integrated,
            "source": mem.source,
            "free_memory": mem.free_bytes,
            "total_memory": mem.total_bytes,
            "reserved_memory": mem.reserved_bytes,
            "cuda_memory": used,
            "processes": ([{"pid": pid, "used_bytes": used_bytes if used_bytes >= 0 else None}
                           for pid, used_bytes in procs] if procs_ok else None),
            "processes_unavailable_reason": None if procs_ok else procs_why,
        }
        print_json(out)
        return 0
    print(f"cuda:{args.device} {mem.pci_bus_id} ({'integrated' if mem.integrated else 'discrete'}, "
          f"driver {driver_version // 1000}.{driver_version % 1000 // 10}; figures from {mem.source})")
    print(f"  free {_gib(mem.free_bytes)} of {_gib(mem.total_bytes)}; in use {_gib(used)}"
          + (f"; driver-reserved {_gib(mem.reserved_bytes)} (not in the total)" if mem.reserved_bytes else ""))
    if procs_ok:
        for pid, used_bytes in procs:
            print(f"  pid {pid}: {_gib(used_bytes)}")
    else:
        print(f"  processes: unavailable ({procs_why})")
    return 0
