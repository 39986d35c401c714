"""``vllm-mem plan``: the start-up memory plan of a model on a GPU, with what to change.

Exit codes: 0 the plan fits, 1 it does not (the failing phase and the levers are printed),
2 bad input (one line).
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import _validate as V
from ..model_spec import ModelSpec
from ..planner import plan as make_plan
from ..units import format_gib
from . import EXIT_DOES_NOT_FIT, EXIT_OK, options, print_json


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "plan",
        help="vLLM's start-up memory plan: budget, breakdown, KV capacity, verdict, what to change",
        description="Plan how vLLM will spend GPU memory at start-up for CONFIG: weights, peak "
                    "activation, non-torch and CUDA-graph memory, the KV cache, and whether one "
                    "max_model_len request fits. Exit 0 fits, 1 does not fit, 2 bad input.",
        epilog="Paste a vLLM command instead of CONFIG and the flags: vllm-mem plan --gpu H100 -- vllm serve MODEL "
               "[vLLM flags] reads them as vLLM does (docs/vllm_command_line.md).",
    )
    options.add_config(p, "CONFIG", "config.json path, a folder holding one, or a bundled model name "
                                    "(e.g. meta-llama/Llama-3.1-8B-Instruct; see `vllm-mem models`)")
    options.add_weights_source(p)
    options.add_gpu(p, "required unless --total-memory-gib is given")
    options.add_gib(p, "--total-memory-gib", "total_memory_bytes", help="total device memory instead of --gpu")
    options.add_gib(p, "--free-memory-gib", "free_memory_bytes", "--free-gib", allow_zero=True,
                    help="free memory at start-up (default: total minus the idle CUDA context)")
    options.add_engine_settings(p, max_model_len_help="default: the model's limit (vLLM's default)")
    options.add_vllm_version(p)
    options.add_speculative_config(p)
    # Every other serving setting of the table with a vLLM flag, in the table's order.
    for row in options.setting_rows().values():
        if row["flag"] and row["name"] not in options.registered(p):
            options.add_table_setting(p, row["name"])
    options.add_table_setting(p, "gpu_count")
    p.add_argument("--cudagraph-not-in-budget", action="store_const", const=False, default=None,
                   dest="cudagraph_memory_in_budget",
                   help="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (default: the release's; off before 0.20)")
    p.add_argument("--cudagraph-in-budget", action="store_const", const=True, dest="cudagraph_memory_in_budget",
                   help="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 on a release before 0.20")
    options.add_json(p)
    p.set_defaults(func=run)


def _live_snapshot(requested_bytes: int) -> dict[str, Any]:
    """Device 0 as it is now, when a GPU is present: read from NVML (by PCI bus id), so no CUDA
    context is created, nothing is counted that this process would add, ``cuInit`` is not
    called here (the shell can still fork CUDA workers) and a nearly full GPU is read, not
    failed on."""
    from .. import _C
    from .._device import live_memory

    try:
        ok, why, count, _driver = _C.cuda_driver_status()
    except RuntimeError as exc:  # pragma: no cover - depends on the machine
        ok, why, count = False, str(exc), 0
    if not ok or count == 0:
        return {"found": False, "reason": why if not ok else "the CUDA driver sees no device"}
    try:
        mem = live_memory(0)
    except (RuntimeError, ValueError) as exc:
        return {"found": False, "reason": str(exc)}
    return {"found": True, "device": "cuda:0", "free_memory_bytes": mem.free_bytes,
            "total_memory_bytes": mem.total_bytes, "source": mem.source,
            "request_passes_now": mem.free_bytes >= requested_bytes}


def run(args: argparse.Namespace) -> int:
    spec = ModelSpec.from_hf_config(args.config, allow_unknown=args.allow_unknown, weights_source=args.weights_source)
    if args.gpu is None and args.total_memory_bytes is None:
        V.fail("--gpu", "give --gpu NAME|SIZE (see `vllm-mem gpus`) or --total-memory-gib")
    if isinstance(args.gpu, int) and args.total_memory_bytes is not None:
        V.fail("--gpu", "a size and --total-memory-gib both give the total; give one")
    gpu, total = (None, args.gpu) if isinstance(args.gpu, int) else (args.gpu, args.total_memory_bytes)
    settings = options.table_settings(args)
    for name in ("total_memory_bytes", "free_memory_bytes", "cudagraph_memory_in_budget"):  # the CLI's own spellings
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if total is not None:
        settings["total_memory_bytes"] = total
    p = make_plan(spec, gpu=gpu, allow_long_max_model_len=args.allow_long_max_model_len,
                  speculative_config=args.speculative_config, **settings)
    live: dict[str, Any] | None = _live_snapshot(p.requested_bytes)
    if args.json:
        out = p.to_dict()
        out["live_snapshot"] = live
        print_json(out)
    else:
        print(p.report(), end="")
        print("\nlive snapshot")
        if live and live.get("found"):
            verdict = "passes" if live["request_passes_now"] else "FAILS"
            print(f"  {live['device']}: {format_gib(live['free_memory_bytes'])} GiB free of "
                  f"{format_gib(live['total_memory_bytes'])} GiB now ({live['source']}); vLLM's free-memory "
                  f"check {verdict} for the requested {format_gib(p.requested_bytes)} GiB")
        else:
            print(f"  none: no GPU found ({live.get('reason') if live else 'unknown'})")
    return EXIT_OK if p.fits else EXIT_DOES_NOT_FIT
