"""``vllm-mem kv``: KV-cache blocks, tokens and concurrency for a model and a memory budget.

Exit codes: 0 fits, 1 not even one ``max_model_len`` request fits (vLLM's message is printed),
2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..kv_cache import allowed_kv_cache_dtypes, kv_cache_capacity, kv_cache_memory_shortfall
from ..model_spec import ModelSpec
from ..units import format_gib
from . import EXIT_DOES_NOT_FIT, EXIT_OK, gib_bytes


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "kv",
        help="KV-cache capacity (blocks, tokens, concurrency) exactly as vLLM sizes it",
        description="KV-cache capacity for CONFIG given the KV-cache memory per GPU, as vLLM v0.19 "
                    "computes it ('GPU KV cache size', 'Maximum concurrency').",
    )
    p.add_argument("config", metavar="CONFIG",
                   help="config.json path, a folder holding one, or a bundled model name")
    p.add_argument("--available-gib", type=gib_bytes, nargs="+", required=True, metavar="GIB",
                   help="KV-cache memory per GPU in GiB (vLLM's 'Available KV cache memory'); one value, "
                        "one per pipeline rank, or one per worker")
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument("--block-size", type=int, default=None)
    p.add_argument("--kv-cache-dtype", default="auto",
                   help="one of: " + ", ".join(allowed_kv_cache_dtypes()))
    p.add_argument("--dtype", default="auto", help="vLLM --dtype: auto, float16, bfloat16, float32")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--max-num-batched-tokens", type=int, default=None)
    p.add_argument("--disable-hybrid-kv-cache-manager", action="store_true")
    p.add_argument("--num-gpu-blocks-override", type=int, default=None)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    spec = ModelSpec.from_hf_config(args.config)
    available = list(args.available_gib)
    kwargs: dict[str, Any] = dict(
        max_model_len=args.max_model_len,
        block_size=args.block_size,
        kv_cache_dtype=args.kv_cache_dtype,
        tensor_parallel_size=args.tensor_parallel_size,
        pipeline_parallel_size=args.pipeline_parallel_size,
        max_num_batched_tokens=args.max_num_batched_tokens,
        dtype=args.dtype,
        disable_hybrid_kv_cache_manager=args.disable_hybrid_kv_cache_manager,
        num_gpu_blocks_override=args.num_gpu_blocks_override,
    )
    # Bad input raises ValueError here (exit 2); a shortfall is a message (exit 1).
    shortfall: str | None = kv_cache_memory_shortfall(spec, available, **kwargs)
    if shortfall is not None:
        if args.json:
            print(json.dumps({"fits": False, "model": spec.name, "error": shortfall}, indent=2))
        else:
            print(shortfall, file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    cap = kv_cache_capacity(spec, available, **kwargs)
    if args.json:
        print(json.dumps({"fits": True, "model": spec.name, **cap.to_dict()}, indent=2))
        return EXIT_OK
    print(f"Model: {spec.name}")
    print(f"Available KV cache memory: {format_gib(cap.available_bytes)} GiB (tightest worker)")
    for line in cap.log_lines:
        print(line)
    print(f"num_gpu_blocks: {cap.num_blocks:,} (block size {cap.block_size}, KV dtype {cap.kv_cache_dtype})")
    print(f"Bytes per block: {cap.bytes_per_block:,} ({format_gib(cap.kv_cache_bytes)} GiB allocated)")
    print(f"Bytes per request: {cap.bytes_per_request:,}")
    if len(cap.num_blocks_per_worker) > 1:
        print("Blocks per worker: " + ", ".join(f"{n:,}" for n in cap.num_blocks_per_worker))
    print(f"KV cache groups: {len(cap.groups)}"
          + (f" ({cap.num_padding_layers} padding layers)" if cap.num_padding_layers else ""))
    for i, g in enumerate(cap.groups):
        window = f", window {g.sliding_window_tokens}" if g.sliding_window_tokens else ""
        print(f"  [{i}] {g.kind}: {len(g.layer_indices)} layers, block {g.block_size} tokens, page "
              f"{g.page_size_bytes:,} B{window}, {g.blocks_per_request} blocks per request")
    return EXIT_OK
