"""``vllm-mem plan``: the start-up memory plan of a model on a GPU, with what to change.

Exit codes: 0 the plan fits, 1 it does not (the failing phase and the levers are printed),
2 bad input (one line).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..model_spec import ModelSpec
from ..planner import plan as make_plan
from ..units import format_gib
from . import EXIT_DOES_NOT_FIT, EXIT_OK, gib_bytes


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "plan",
        help="vLLM's start-up memory plan: budget, breakdown, KV capacity, verdict, what to change",
        description="Plan how vLLM will spend GPU memory at start-up for CONFIG: weights, peak "
                    "activation, non-torch and CUDA-graph memory, the KV cache, and whether one "
                    "max_model_len request fits. Exit 0 fits, 1 does not fit, 2 bad input.",
    )
    p.add_argument("config", metavar="CONFIG",
                   help="config.json path, a folder holding one, or a bundled model name "
                        "(e.g. meta-llama/Llama-3.1-8B-Instruct)")
    p.add_argument("--gpu", default=None, help="catalog GPU name, e.g. H100-80GB, L40S, MI300X "
                                               "(see `vllm-mem gpus`)")
    p.add_argument("--total-memory-gib", type=gib_bytes, default=None, metavar="GIB",
                   help="total device memory instead of --gpu")
    p.add_argument("--free-memory-gib", type=gib_bytes, default=None, metavar="GIB",
                   help="free memory at start-up (default: total minus the idle CUDA context)")
    p.add_argument("--gpu-count", type=int, default=None, help="GPUs available")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.92)
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-num-batched-tokens", type=int, default=8192)
    p.add_argument("--dtype", default="auto")
    p.add_argument("--quantization", "-q", default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--block-size", type=int, default=None)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--kv-cache-memory-bytes", type=int, default=None)
    p.add_argument("--cudagraph-not-in-budget", action="store_true",
                   help="vLLM < 0.21 behaviour (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def _live_snapshot(requested_bytes: int) -> dict[str, Any]:
    """The device as it is now, when a GPU is present (no CUDA context is created to ask)."""
    from .. import _C

    try:
        ok, why, count, _driver = _C.cuda_driver_status()
    except RuntimeError as exc:  # pragma: no cover - depends on the machine
        ok, why, count = False, str(exc), 0
    if not ok or count == 0:
        return {"found": False, "reason": why if not ok else "the CUDA driver sees no device"}
    from ..mem_utils import MemorySnapshot

    snap = MemorySnapshot(device=0)
    return {"found": True, "device": str(snap.device_), "free_memory_bytes": int(snap.free_memory),
            "total_memory_bytes": int(snap.total_memory),
            "request_passes_now": int(snap.free_memory) >= requested_bytes}


def run(args: argparse.Namespace) -> int:
    spec = ModelSpec.from_hf_config(args.config)
    if args.gpu is None and args.total_memory_gib is None:
        raise ValueError("gpu: give --gpu NAME (see `vllm-mem gpus`) or --total-memory-gib")
    p = make_plan(
        spec, gpu=args.gpu, total_memory_bytes=args.total_memory_gib,
        free_memory_bytes=args.free_memory_gib, gpu_count=args.gpu_count,
        gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=args.max_model_len,
        tensor_parallel_size=args.tensor_parallel_size,
        pipeline_parallel_size=args.pipeline_parallel_size, max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens, dtype=args.dtype,
        quantization=args.quantization, kv_cache_dtype=args.kv_cache_dtype,
        block_size=args.block_size, enforce_eager=args.enforce_eager,
        kv_cache_memory_bytes=args.kv_cache_memory_bytes,
        cudagraph_memory_in_budget=not args.cudagraph_not_in_budget)
    live: dict[str, Any] | None = _live_snapshot(p.requested_bytes)
    if args.json:
        out = p.to_dict()
        out["live_snapshot"] = live
        print(json.dumps(out, indent=2))
    else:
        print(p.report(), end="")
        print("\nlive snapshot")
        if live and live.get("found"):
            verdict = "passes" if live["request_passes_now"] else "FAILS"
            print(f"  {live['device']}: {format_gib(live['free_memory_bytes'])} GiB free of "
                  f"{format_gib(live['total_memory_bytes'])} GiB now; vLLM's free-memory check "
                  f"{verdict} for the requested {format_gib(p.requested_bytes)} GiB")
        else:
            print(f"  none: no GPU found ({live.get('reason') if live else 'unknown'})")
    return EXIT_OK if p.fits else EXIT_DOES_NOT_FIT
