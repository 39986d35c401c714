"""``vllm-mem kv``: KV-cache blocks, tokens and concurrency for a model and a memory budget.

Exit codes: 0 fits, 1 not even one ``max_model_len`` request fits (vLLM's message is printed),
2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..kv_cache import KvCacheSettings, kv_cache_capacity, kv_cache_memory_shortfall
from ..model_spec import ModelSpec
from ..planner.versions import allow_long_from_env, choose_vllm_version
from ..units import format_gib
from . import EXIT_DOES_NOT_FIT, EXIT_OK, options, print_json


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "kv",
        help="KV-cache capacity (blocks, tokens, concurrency) exactly as vLLM sizes it",
        description="KV-cache capacity for CONFIG given the KV-cache memory per GPU, as the chosen vLLM "
                    "release computes and prints it ('GPU KV cache size', 'Maximum concurrency'). Exit 0 "
                    "fits, 1 not even "
                    "one max_model_len request fits, 2 bad input.",
    )
    options.add_config(p, "CONFIG", "config.json path, a folder holding one, or a bundled model name "
                                    "(see `vllm-mem models`)")
    options.add_gib(p, "--available-gib", "available_bytes", nargs="+", required=True,
                    help="KV-cache memory per GPU in GiB (vLLM's 'Available KV cache memory'); one value, "
                         "one per pipeline rank, or one per worker")
    options.add_engine_settings(p, max_model_len_help="default: the model's limit (vLLM's default)")
    options.add_vllm_version(p, usage_context=False)
    # Every other KV setting of the table with a vLLM flag, in the table's order.
    for row in options.setting_rows().values():
        if row["kv"] and row["flag"] and row["name"] not in options.registered(p):
            options.add_table_setting(p, row["name"])
    options.add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    spec = ModelSpec.from_hf_config(args.config, allow_unknown=args.allow_unknown)
    available = list(args.available_bytes)
    if len(available) > L.MAX_WORLD_SIZE:
        raise V.bad_value("--available-gib", f"at most {L.MAX_WORLD_SIZE} values (one per worker)", available)
    version, source = choose_vllm_version(args.vllm_version)
    profile = _C.vllm_profile_settings(version)
    # vLLM's default max_model_len is the model's derived limit (rope scaling included); say so,
    # since it decides the answer. Above it vLLM refuses unless VLLM_ALLOW_LONG_MAX_MODEL_LEN.
    defaulted = args.max_model_len is None
    max_model_len = _C.derived_max_model_len(spec._spec) if defaulted else args.max_model_len
    allow_long = allow_long_from_env() if args.allow_long_max_model_len is None else True
    refusal = _C.long_max_model_len_error(version, spec._spec, max_model_len, allow_long)
    if refusal:
        V.fail("--max-model-len", refusal)
    note = (f"max_model_len: not given; using the model's limit {max_model_len:,} (vLLM's default), "
            "pass --max-model-len to choose") if defaulted else None
    given = options.table_settings(args)
    given["max_model_len"] = max_model_len
    given.pop("vllm_version", None)
    # One request object for both calls: the release's rules apply to the check and the capacity alike.
    settings = KvCacheSettings(vllm_version=version, **given)
    shortfall: str | None = kv_cache_memory_shortfall(spec, available, settings=settings)
    if shortfall is not None:
        if args.json:
            print_json({"fits": False, "model": spec.name, "max_model_len_defaulted": defaulted,
                        "error": shortfall})
        else:
            if note:
                print(note, file=sys.stderr)
            print(shortfall, file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    # The release that --vllm-version (or the installed vLLM) names decides the capacity's rules
    # too, not only the log lines printed below.
    cap = kv_cache_capacity(spec, available, settings=settings)
    log_lines = list(_C.kv_log_lines_for(version, "", cap.num_blocks, cap.num_tokens, cap.max_concurrency,
                                         cap.block_size, cap.bytes_per_block, cap.max_model_len, len(cap.groups)))
    version_line = f"vLLM {profile['version']} rules ({f'asked {version}' if source == 'asked' else source})"
    if args.json:
        print_json({"fits": True, "model": spec.name, "max_model_len_defaulted": defaulted,
                    "vllm_version": {"planned_with": profile["version"], "asked": args.vllm_version,
                                     "source": source},
                    "vllm_log_lines": log_lines,
                    "generic_estimate_reason": spec.generic_estimate_reason, "caveats": spec.caveats,
                    **cap.to_dict()})
        return EXIT_OK
    print(f"Model: {spec.name}")
    if not spec.has_exact_rules:
        print(f"GENERIC ESTIMATE (--allow-unknown): {spec.generic_estimate_reason}")
    for caveat in spec.caveats:
        print(f"caveat: {caveat}")
    if note:
        print(note)
    print(version_line)
    print(f"Available KV cache memory: {format_gib(cap.available_bytes)} GiB (tightest worker)")
    for line in log_lines:
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
