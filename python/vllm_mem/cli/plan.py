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
    options.add_setting(p, "--gpu-count", "gpu_count", help="GPUs available")
    options.add_fraction(p, "--gpu-memory-utilization", "gpu_memory_utilization", None,
                         "vLLM --gpu-memory-utilization, in (0, 1] (default: the release's, 0.9; 0.92 from 0.21)")
    options.add_engine_settings(p, max_model_len_help="default: the model's limit (vLLM's default)")
    options.add_setting(p, "--max-num-seqs", "max_num_seqs",
                        help="default: vLLM's for the release, GPU and --usage-context")
    options.add_setting(p, "--max-num-batched-tokens", "max_num_batched_tokens",
                        help="default: vLLM's for the release, GPU and --usage-context")
    options.add_vllm_version(p)
    options.add_speculative_config(p)
    options.add_text(p, "--quantization", "quantization", "-q")
    p.add_argument("--enforce-eager", action="store_true")
    # Bounded as tensor_parallel_size is (DCP shards a TP group); plan() checks vLLM's rules.
    p.add_argument("--decode-context-parallel-size", "-dcp", dest="decode_context_parallel_size", default=1,
                   metavar="N", help="vLLM --decode-context-parallel-size: the KV cache sharded along tokens "
                                     "over N of the tensor-parallel ranks (default 1)",
                   type=options.typed("--decode-context-parallel-size", lambda t, f: V.setting(
                       "tensor_parallel_size", options.parse_int(t, f), f)))
    p.add_argument("--enable-prefix-caching", dest="enable_prefix_caching", action="store_true", default=None,
                   help="vLLM --enable-prefix-caching (changes memory on hybrid models only)")
    options._fields(p).update(decode_context_parallel_size="--decode-context-parallel-size",
                                enable_prefix_caching="--enable-prefix-caching")
    options.add_bytes(p, "--kv-cache-memory-bytes", "kv_cache_memory_bytes", "vLLM --kv-cache-memory-bytes")
    p.add_argument("--cudagraph-not-in-budget", action="store_const", const=False, default=None,
                   dest="cudagraph_memory_in_budget",
                   help="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (default: the release's; off before 0.21)")
    p.add_argument("--cudagraph-in-budget", action="store_const", const=True, dest="cudagraph_memory_in_budget",
                   help="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 on a release before 0.21")
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
    p = make_plan(
        spec, gpu=gpu, total_memory_bytes=total,
        free_memory_bytes=args.free_memory_bytes, gpu_count=args.gpu_count,
        gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=args.max_model_len,
        tensor_parallel_size=args.tensor_parallel_size,
        pipeline_parallel_size=args.pipeline_parallel_size, max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens, dtype=args.dtype,
        quantization=args.quantization, kv_cache_dtype=args.kv_cache_dtype,
        block_size=args.block_size, enforce_eager=args.enforce_eager,
        kv_cache_memory_bytes=args.kv_cache_memory_bytes,
        cudagraph_memory_in_budget=args.cudagraph_memory_in_budget, vllm_version=args.vllm_version,
        usage_context=args.usage_context, allow_long_max_model_len=args.allow_long_max_model_len,
        speculative_config=args.speculative_config,
        decode_context_parallel_size=args.decode_context_parallel_size,
        enable_prefix_caching=args.enable_prefix_caching)
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
