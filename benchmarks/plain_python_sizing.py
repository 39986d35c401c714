"""The sizing formulas of vllm_mem's C++ core, written in plain Python: the baseline that
benchmarks/bench_sizing.py times vllm_mem against. Never imported by the package.

Written as a good Python engineer would write them for speed, not as a strawman: plain tuples
and dicts, the layers' specs counted once per distinct spec instead of walked layer by layer,
no classes on the hot path, but equally complete where the public API is complete:

- ``kv_cache_capacity``: the same input checks (types, bounds, messages of the form
  ``field: must be ...; got ...``), vLLM's grouping with page unification and padding layers,
  the per-worker admission check with vLLM's message, blocks, tokens, concurrency, the
  per-group figures and the two log lines.
- ``weight_bytes``: the same per-component breakdown per pipeline rank (embedding, LM head,
  attention, MLP, norms, quantization scales, rotary buffers) and the fullest rank.
- ``plan``: the same terms per pipeline rank (weights, activation peak, non-torch, CUDA-graph
  estimate, KV budget, bytes per block and per request, blocks), the tightest rank, the KV
  capacity when it fits, the largest max_model_len that fits, and the failure phase with its
  shortfall. vLLM's message strings (the report's lines) are not rebuilt here: they are text,
  not terms, and the C++ side builds them too, so the comparison favours this baseline.

Scope: what the benchmark's models need (dense, MoE with shared experts, MLA, sliding
window, fp8 block quantization, bf16/fp16/fp32), planned for the newest vLLM release with the
settings the benchmark passes. ``model_from_spec`` builds the model record once per model
(untimed, as vllm_mem's ModelSpec is built once); ``check_against_vllm_mem`` asserts the
figures equal vllm_mem's before anything is timed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

GiB = 1 << 30
MAX_DEVICE_BYTES = 1 << 50
MAX_MODEL_LEN_TOKENS = 1 << 30
MAX_TENSOR_PARALLEL_SIZE = 1 << 12
MAX_PIPELINE_PARALLEL_SIZE = 1 << 10
MAX_WORLD_SIZE = 1 << 14
MAX_NUM_SEQS = 1 << 20
MAX_NAME_CHARS = 256
MAX_CUDAGRAPH_CAPTURE_SIZE = 1 << 16
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
DTYPE_ALIASES = {"float": "float32", "fp32": "float32", "half": "float16", "fp16": "float16", "bf16": "bfloat16",
                 "float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}
KV_DTYPE_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
VOCAB_PADDING = 64
NO_MEMORY = ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
             "the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See "
             "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
# The planner's calibrated constants (csrc/core/include/vllm_mem/plan/*_estimate.h, startup_plan.h).
HIDDEN_TENSORS = 4.5
# The profile run's sampler on the default release (vllm_versions.json, 0.25-0.28): an MoE model
# runs the V1 model runner, 12 B per logit plus the Triton top-k/top-p kernel's float32 row per
# program (132 programs: the H100's SMs, which a plan given only a byte total assumes); a dense
# model runs Model Runner V2, 4 B per logit and no kernel rows; both keep the phase's fixed bytes.
SAMPLER_BYTES_PER_LOGIT = {"v1": 12.0, "v2": 4.0}
SAMPLER_KERNEL_PROGRAMS = {"v1": 132, "v2": 0}
SAMPLER_FIXED_BYTES = 50331648
NON_TORCH_SINGLE, NON_TORCH_MULTI = 263066746, 75161927
TP_NCCL, TP_PEER = 2115271393, 32212254
FIRST_CAPTURE_FIXED, BYTES_PER_GRAPH_NODE, PER_GRAPH_FLOOR = 268435456, 16384.0, 1 << 20
FUSED_MOE_CHUNK_TOKENS = 16384
BASELINE_SINGLE, BASELINE_MULTI = 547608330, 1610612736
PROBE_BYTES = 1 << 50


# --- input checks: the messages of python/vllm_mem/_validate.py ---------------------------------

def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _int(value: Any, field: str, low: int, high: int) -> int:
    if value.__class__ is int and low <= value <= high:
        return value
    allowed = f"an integer in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field}: must be {allowed}; got {_show(value)}")
    raise ValueError(f"{field}: must be {allowed}; got {_show(value)}")


def _opt_int(value: Any, field: str, low: int, high: int) -> int:
    return 0 if value is None else _int(value, field, low, high)


def _flag(value: Any, field: str) -> bool:
    if value is True or value is False:
        return value
    raise TypeError(f"{field}: must be True or False (strings such as 'false' or '0' are not read as booleans); "
                    f"got {_show(value)}")


def _text(value: Any, field: str) -> str:
    if value.__class__ is not str:
        raise TypeError(f"{field}: must be a string; got {_show(value)}")
    if len(value) > MAX_NAME_CHARS or "\x00" in value:
        raise ValueError(f"{field}: must be a string of at most {MAX_NAME_CHARS} characters; got {_show(value)}")
    return value


def _model_dtype(requested: str, checkpoint: str) -> str:
    if requested == "auto":
        return "bfloat16" if checkpoint == "float32" else checkpoint
    name = DTYPE_ALIASES.get(requested.lower())
    if name is None:
        raise ValueError(f"dtype: unknown dtype {requested!r}; allowed: auto, float16 (half), bfloat16, float32 (float)")
    return name


def _kv_dtype(requested: str, model_dtype: str) -> tuple[str, int]:
    if requested == "auto":
        return model_dtype, DTYPE_BYTES[model_dtype]
    if requested in KV_DTYPE_BYTES:
        return requested, KV_DTYPE_BYTES[requested]
    if requested in DTYPE_BYTES:
        return requested, DTYPE_BYTES[requested]
    raise ValueError(f"kv_cache_dtype: unknown KV-cache dtype {requested!r}")


# --- the model record (built once per model, untimed) -------------------------------------------

def model_from_spec(spec: Any, config_path: Path) -> dict[str, Any]:
    """The dimensions vllm_mem's ModelSpec exposes, plus the architecture details it keeps in
    C++ (norms, q/k norms, rotary cache rows, quantization blocks), read from config.json by
    the rules of csrc/core/model/model_spec.cc for the benchmark's families."""
    top = json.loads(config_path.read_text())
    text = top.get("text_config", top)
    mt = spec.model_type
    layers = tuple((layer.attention.name, layer.sliding_window_tokens, layer.moe) for layer in spec.layers)
    mla = spec.mla
    moe = spec.moe
    quant = top.get("quantization_config") or text.get("quantization_config")
    q = None
    if quant:
        block = quant.get("weight_block_size")
        q = {"method": quant["quant_method"], "bits": 8, "block": tuple(block) if block else None,
             "per_tensor": not block}
    scaling = text.get("rope_scaling") or {}
    rope_type = scaling.get("rope_type") or scaling.get("type") or ""
    positions = text.get("max_position_embeddings", 0)
    if rope_type in ("yarn", "deepseek_yarn"):
        positions = int(scaling.get("original_max_position_embeddings", positions) * scaling["factor"])
    elif rope_type in ("linear", "dynamic"):
        positions = int(positions * scaling["factor"])
    # vLLM's derived max_model_len: the scaled length, except Gemma-3 whose config already
    # gives it (csrc/core/plan/vllm_version_profile.cc DerivedMaxModelLen).
    derived = spec.max_position_embeddings if mt.startswith("gemma3") else (positions or spec.max_position_embeddings)
    local_rows = 0
    if mt.startswith("gemma3"):
        same_base = text.get("rope_theta") == text.get("rope_local_base_freq")
        local_rows = 0 if same_base and rope_type in ("", "default") else text.get("max_position_embeddings", 0)
    return {
        "model_type": mt, "dtype": spec.dtype, "num_layers": spec.num_layers, "hidden": spec.hidden_size,
        "heads": spec.num_attention_heads, "kv_heads": spec.num_kv_heads, "head_dim": spec.head_dim,
        "intermediate": spec.intermediate_size, "vocab": spec.vocab_size, "tie": spec.tie_word_embeddings,
        "max_position": spec.max_position_embeddings, "derived_max_model_len": max(derived, 0),
        "mla": None if mla is None else (mla.kv_lora_rank, mla.q_lora_rank, mla.qk_nope_head_dim,
                                         mla.qk_rope_head_dim, mla.v_head_dim),
        "moe": None if moe is None else (moe.num_experts, moe.num_experts_per_token, moe.expert_intermediate_size,
                                         moe.num_shared_experts, moe.shared_expert_intermediate_size,
                                         text.get("topk_method") == "noaux_tc"),
        "layers": layers, "quant": q,
        "qk_norm": mt.startswith("qwen3") or mt.startswith("gemma3"),
        "norms_per_layer": 4 if mt == "gemma2" or mt.startswith("gemma3") else 2,
        "qkv_bias": bool(text.get("attention_bias", False)) or mt.startswith("qwen2"),
        "out_bias": bool(text.get("attention_bias", False)) and not mt.startswith("qwen2"),
        "mlp_bias": bool(text.get("mlp_bias", False)),
        "rope_rows": max(positions, 0) + local_rows,
        "rotary_dim": mla.qk_rope_head_dim if mla is not None
        else int(spec.head_dim * text.get("partial_rotary_factor", 1.0)),
    }


def _pp_range(num_layers: int, rank: int, pp: int) -> tuple[int, int]:
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[pp - i] += 1
    start = sum(parts[:rank])
    return start, start + parts[rank]


def _check_parallel(m: dict[str, Any], tp: int, pp: int) -> int:
    if tp * pp > MAX_WORLD_SIZE:
        raise ValueError(f"tensor_parallel_size: must be at most {MAX_WORLD_SIZE}")
    if pp > m["num_layers"]:
        raise ValueError(f"pipeline_parallel_size: must not exceed num_hidden_layers ({m['num_layers']}), got {pp}")
    if m["heads"] % tp:
        raise ValueError(f"tensor_parallel_size: Total number of attention heads ({m['heads']}) must be divisible "
                         f"by tensor parallel size ({tp}).")
    kv = m["kv_heads"]
    if kv >= tp:
        if kv % tp:
            raise ValueError(f"tensor_parallel_size: the {kv} KV heads are not divisible by tensor_parallel_size {tp}")
        return kv // tp
    if tp % kv:
        raise ValueError(f"tensor_parallel_size: tensor_parallel_size {tp} is not a multiple of the {kv} KV heads")
    return 1


# --- KV cache --------------------------------------------------------------------------------------

def _layer_specs(m: dict[str, Any], block: int, kv_bytes: int, kv_heads: int) -> list[tuple]:
    """(kind, block, page_bytes, window) per layer, vLLM's AttentionSpec page sizes."""
    if m["mla"] is not None:
        page = block * (m["mla"][0] + m["mla"][3]) * kv_bytes
        spec = ("mla", block, page, 0)
        return [spec] * m["num_layers"]
    page = 2 * block * kv_heads * m["head_dim"] * kv_bytes
    full = ("full_attention", block, page, 0)
    return [full if kind != "SLIDING_WINDOW" else ("sliding_window", block, page, window)
            for kind, window, _ in m["layers"]]


#: A sliding-window layer's per-request need: vLLM's uncapped formula (window - 1 + batched
#: tokens, not capped at max_model_len), which every release profiled follows
#: (docs/vllm_versions.md, sliding_window_capped_at_full); the library applies it by release.
CAP_SLIDING_WINDOW_AT_FULL = False


def _max_mem(spec: tuple, max_model_len: int, in_flight: int, cap: bool) -> int:
    kind, block, page, window = spec
    full = -(-max_model_len // block)
    if kind == "sliding_window":
        blocks = -(-min(window - 1 + in_flight, max_model_len) // block) + 1
        if cap:
            blocks = min(blocks, full)
        return blocks * page
    return full * page


def _groups(specs: list[tuple]) -> tuple[list[tuple[tuple, list[int]]], int]:
    """get_kv_cache_groups: [(spec, layer indices)], padding layers."""
    first = specs[0]
    if all(s == first for s in specs):
        return [(first, list(range(len(specs))))], 0
    buckets: dict[tuple, list[int]] = {}
    for i, s in enumerate(specs):
        buckets.setdefault(s, []).append(i)
    # Every spec here is attention with one page size: unification changes nothing.
    if len({s[2] for s in buckets}) != 1:
        raise NotImplementedError("page-size unification is not modelled in the plain-Python baseline")
    sizes = [len(v) for v in buckets.values()]
    group_size = max(sizes) if 2 * max(sizes) < 3 * min(sizes) else min(sizes)
    groups, padding = [], 0
    for spec, idx in buckets.items():
        n = len(idx)
        if n % group_size:
            padding += group_size - n % group_size
        count = -(-n // group_size)
        groups.extend((spec, idx[i::count]) for i in range(count))
    return groups, padding


def _kv_layout(m: dict[str, Any], block_size: int, kv_cache_dtype: str, dtype: str, tp: int, pp: int) -> dict:
    kv_heads = _check_parallel(m, tp, pp)
    model_dtype = _model_dtype(dtype, m["dtype"])
    kv_name, kv_bytes = _kv_dtype(kv_cache_dtype, model_dtype)
    default_block = 64 if m["mla"] is not None else 16
    specs = _layer_specs(m, block_size or default_block, kv_bytes, kv_heads)
    groups, padding = _groups(specs)
    ranks = []
    for r in range(pp):
        first, last = _pp_range(m["num_layers"], r, pp)
        counts: dict[tuple, int] = {}
        for s in specs[first:last]:
            counts[s] = counts.get(s, 0) + 1
        sizes = [sum(first <= i < last for i in idx) for _, idx in groups]
        ranks.append((counts, max(sizes), groups[0][0][2]))
    return {"kv_dtype": kv_name, "groups": groups, "padding": padding, "ranks": ranks}


def _needed(counts: dict[tuple, int], max_model_len: int, in_flight: int, cap: bool) -> int:
    return sum(n * _max_mem(s, max_model_len, in_flight, cap) for s, n in counts.items())


def _largest_fitting(counts: dict[tuple, int], upper: int, available: int, in_flight: int, cap: bool) -> int:
    if _needed(counts, 1, in_flight, cap) > available:
        return 0
    left, right, best = 1, upper, 1
    while left <= right:
        mid = (left + right) // 2
        if _needed(counts, mid, in_flight, cap) <= available:
            best, left = mid, mid + 1
        else:
            right = mid - 1
    return best


def _shortfall(counts: dict, available: int, max_model_len: int, in_flight: int, cap: bool) -> str | None:
    if available <= 0:
        return NO_MEMORY
    needed = _needed(counts, max_model_len, in_flight, cap)
    if needed <= available:
        return None
    est = _largest_fitting(counts, max_model_len, available, in_flight, cap)
    hint = f"Based on the available memory, the estimated maximum model length is {est}. " if est else ""
    return (f"To serve at least one request with the model's max seq len ({max_model_len}), ({needed / GiB:.2f} GiB "
            f"KV cache is needed, which is larger than the available KV cache memory ({available / GiB:.2f} GiB). "
            f"{hint}Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
            "decreasing `max_model_len` when initializing the engine. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")


def _capacity(layout: dict, available: list[int], max_model_len: int, mnbt: int, tp: int, pp: int,
              override: int, mcb: int, cap: bool) -> dict[str, Any]:
    in_flight = mcb * (mnbt or 8192)
    n = len(available)
    if n not in (1, pp, tp * pp):
        raise ValueError(f"available_bytes: must hold 1 value, one per pipeline rank ({pp}) or one per worker "
                         f"({tp * pp}), got {n}")
    ranks = layout["ranks"]
    per_worker, best = [], None
    for w in range(tp * pp):
        r = w // tp
        counts, group_size, page = ranks[r]
        avail = available[0 if n == 1 else (r if n == pp else w)]
        bpb = page * group_size
        planned = override * bpb if override else avail
        msg = _shortfall(counts, planned, max_model_len, in_flight, cap)
        if msg:
            raise ValueError(msg)
        blocks = override or max(avail // bpb, 0)
        per_worker.append(blocks)
        if best is None or blocks < best[0]:
            best = (blocks, bpb, planned, group_size, page)
    blocks, bpb, planned, group_size, page = best
    groups = []
    total_mem = 0
    for spec, idx in layout["groups"]:
        mem = _max_mem(spec, max_model_len, in_flight, cap)
        total_mem += mem
        groups.append({"kind": spec[0], "layer_indices": idx, "block_size": spec[1], "page_size_bytes": spec[2],
                       "sliding_window_tokens": spec[3], "max_memory_per_request_bytes": mem,
                       "blocks_per_request": -(-mem // spec[2]), "uniform_type": False})
    concurrency = blocks / -(-total_mem // layout["groups"][0][0][2])
    tokens = int(concurrency * max_model_len)
    return {
        "num_blocks": blocks, "num_tokens": tokens, "max_concurrency": concurrency,
        "block_size": min(s[1] for s, _ in layout["groups"]), "bytes_per_block": bpb,
        "bytes_per_request": group_size * page * sum(g["blocks_per_request"] for g in groups),
        "kv_cache_bytes": blocks * bpb, "available_bytes": planned, "max_model_len": max_model_len,
        "num_blocks_per_worker": per_worker, "groups": groups, "kv_cache_dtype": layout["kv_dtype"],
        "num_padding_layers": layout["padding"],
        "log_lines": [f"GPU KV cache size: {tokens:,} tokens",
                      f"Maximum concurrency for {max_model_len:,} tokens per request: {concurrency:.2f}x"],
    }


def kv_cache_capacity(m: dict[str, Any], available_bytes: Any, max_model_len: int = 8192, block_size: int | None = None,
                      kv_cache_dtype: str = "auto", tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1,
                      max_num_batched_tokens: int | None = None, dtype: str = "auto",
                      disable_hybrid_kv_cache_manager: bool = False, num_gpu_blocks_override: int | None = None,
                      max_concurrent_batches: int = 1,
                      cap_sliding_window_at_full: bool = CAP_SLIDING_WINDOW_AT_FULL) -> dict[str, Any]:
    if isinstance(available_bytes, (list, tuple)):
        if not available_bytes or len(available_bytes) > MAX_WORLD_SIZE:
            raise ValueError("available_bytes: must be an int or a non-empty list of ints")
        available = [_int(v, f"available_bytes[{i}]", 0, MAX_DEVICE_BYTES) for i, v in enumerate(available_bytes)]
    else:
        available = [_int(available_bytes, "available_bytes", 0, MAX_DEVICE_BYTES)]
    mml = _int(max_model_len, "max_model_len", 1, MAX_MODEL_LEN_TOKENS)
    block = _opt_int(block_size, "block_size", 1, MAX_MODEL_LEN_TOKENS)
    kv_dtype = _text(kv_cache_dtype, "kv_cache_dtype")
    tp = _int(tensor_parallel_size, "tensor_parallel_size", 1, MAX_TENSOR_PARALLEL_SIZE)
    pp = _int(pipeline_parallel_size, "pipeline_parallel_size", 1, MAX_PIPELINE_PARALLEL_SIZE)
    mnbt = _opt_int(max_num_batched_tokens, "max_num_batched_tokens", 1, MAX_MODEL_LEN_TOKENS)
    model_dtype = _text(dtype, "dtype")
    if _flag(disable_hybrid_kv_cache_manager, "disable_hybrid_kv_cache_manager"):
        raise NotImplementedError("disable_hybrid_kv_cache_manager is not modelled in the plain-Python baseline")
    override = _opt_int(num_gpu_blocks_override, "num_gpu_blocks_override", 1, MAX_MODEL_LEN_TOKENS)
    mcb = _int(max_concurrent_batches, "max_concurrent_batches", 1, MAX_PIPELINE_PARALLEL_SIZE)
    cap = _flag(cap_sliding_window_at_full, "cap_sliding_window_at_full")
    if block not in (0, 1, 8, 16, 32, 64, 128, 256):
        raise ValueError(f"block_size: must be one of 1, 8, 16, 32, 64, 128, 256; got {block}")
    layout = _kv_layout(m, block, kv_dtype, model_dtype, tp, pp)
    return _capacity(layout, available, mml, mnbt, tp, pp, override, mcb, cap)


# --- weights ---------------------------------------------------------------------------------------

def _linear_bytes(n_in: int, n_out: int, dt: int, q: dict | None, quantizable: bool = True,
                  bias: bool = False, dequantized_copy: bool = False) -> tuple[int, int]:
    """(weight bytes, scale bytes) of one linear layer on one rank."""
    bias_bytes = n_out * dt if bias else 0
    if q is None or not quantizable:
        return n_in * n_out * dt + bias_bytes, 0
    weight = -(-(n_in * n_out * q["bits"]) // 8) + bias_bytes
    if q["block"]:
        bo, bi = q["block"]
        scales = -(-n_out // bo) * -(-n_in // bi) * 4
    else:
        scales = 4 if q["per_tensor"] else n_out * 4
    if dequantized_copy:
        scales += n_in * n_out * dt
    return weight, scales


def _layer_bytes(m: dict[str, Any], tp: int, dt: int, moe_layer: bool) -> tuple[int, int, int, int]:
    """(attention, mlp, norm, scales) bytes of one decoder layer on one rank."""
    q, h = m["quant"], m["hidden"]
    heads = m["heads"] // tp
    att = sc = 0
    if m["mla"] is not None:
        kv_lora, q_lora, nope, rope, v = m["mla"]
        parts = []
        if q_lora:
            parts += [(h, q_lora, False), (q_lora, heads * (nope + rope), False)]
            att += q_lora * dt
        else:
            parts.append((h, heads * (nope + rope), False))
        parts += [(h, kv_lora + rope, False), (kv_lora, heads * (nope + v), True), (heads * v, h, False)]
        att += kv_lora * dt
        for n_in, n_out, copy in parts:
            w, s = _linear_bytes(n_in, n_out, dt, q, dequantized_copy=copy)
            att += w
            sc += s
    else:
        kv = m["kv_heads"] // tp if m["kv_heads"] >= tp else 1
        for n_in, n_out, bias in ((h, (heads + 2 * kv) * m["head_dim"], m["qkv_bias"]),
                                  (heads * m["head_dim"], h, m["out_bias"])):
            w, s = _linear_bytes(n_in, n_out, dt, q, bias=bias)
            att += w
            sc += s
        if m["qk_norm"]:
            att += 2 * m["head_dim"] * dt
    mlp = 0

    def gated(inter: int, copies: int) -> None:
        nonlocal mlp, sc
        if inter % tp:
            raise ValueError(f"tensor_parallel_size: intermediate ({inter}) must be divisible by tensor_parallel_size")
        per = inter // tp
        for n_in, n_out in ((h, 2 * per), (per, h)):
            w, s = _linear_bytes(n_in, n_out, dt, q, bias=m["mlp_bias"])
            mlp += w * copies
            sc += s * copies

    if moe_layer and m["moe"] is not None:
        experts, _, inter, shared, shared_inter, router_bias = m["moe"]
        gated(inter, experts)
        mlp += h * experts * dt  # the router, never quantized
        if router_bias:
            mlp += experts * 4  # e_score_correction_bias, float32
        if shared:
            gated(shared * inter, 1)
        if shared_inter:
            gated(shared_inter, 1)
            mlp += h * dt  # shared-expert gate
    else:
        gated(m["intermediate"], 1)
    return att, mlp, m["norms_per_layer"] * h * dt, sc


def weight_breakdown(m: dict[str, Any], dtype: str = "auto", quantization: str | None = None,
                     tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1) -> dict[str, Any]:
    model_dtype = _model_dtype(_text(dtype, "dtype"), m["dtype"])
    if quantization is not None and _text(quantization, "quantization") not in ("", "none"):
        if m["quant"] is None or quantization.lower() != m["quant"]["method"]:
            raise NotImplementedError("online quantization is not modelled in the plain-Python baseline")
    tp = _int(tensor_parallel_size, "tensor_parallel_size", 1, MAX_TENSOR_PARALLEL_SIZE)
    pp = _int(pipeline_parallel_size, "pipeline_parallel_size", 1, MAX_PIPELINE_PARALLEL_SIZE)
    _check_parallel(m, tp, pp)
    dt = DTYPE_BYTES[model_dtype]
    padded = -(-m["vocab"] // VOCAB_PADDING) * VOCAB_PADDING
    if padded % tp:
        raise ValueError("tensor_parallel_size: vocab_size padded to a multiple of 64 must be divisible by it")
    embedding = padded // tp * m["hidden"] * dt
    dense = _layer_bytes(m, tp, dt, False)
    moe = _layer_bytes(m, tp, dt, True) if m["moe"] is not None else dense
    rope = m["rope_rows"] * m["rotary_dim"] * dt
    ranks, fullest, fullest_rank = [], 0, 0
    for r in range(pp):
        first, last = _pp_range(m["num_layers"], r, pp)
        n_moe = sum(1 for _, _, is_moe in m["layers"][first:last] if is_moe) if m["moe"] is not None else 0
        n_dense = last - first - n_moe
        rank = {"pp_rank": r, "first_layer": first, "end_layer": last,
                "embedding_bytes": embedding if r == 0 else 0,
                "lm_head_bytes": embedding if r == pp - 1 and (not m["tie"] or r != 0) else 0,
                "attention_bytes": dense[0] * n_dense + moe[0] * n_moe,
                "mlp_bytes": dense[1] * n_dense + moe[1] * n_moe,
                "norm_bytes": dense[2] * n_dense + moe[2] * n_moe + (m["hidden"] * dt if r == pp - 1 else 0),
                "quantization_overhead_bytes": dense[3] * n_dense + moe[3] * n_moe,
                "buffer_bytes": rope if last > first else 0}
        rank["total_bytes"] = total = sum(v for k, v in rank.items() if k.endswith("_bytes"))
        if total > fullest:
            fullest, fullest_rank = total, r
        ranks.append(rank)
    return {"dtype": model_dtype, "quantization": m["quant"]["method"] if m["quant"] else None,
            "fullest_rank_bytes": fullest, "fullest_pp_rank": fullest_rank, "per_pp_rank": ranks}


def weight_bytes(m: dict[str, Any], dtype: str = "auto", quantization: str | None = None,
                 tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1) -> int:
    return weight_breakdown(m, dtype, quantization, tensor_parallel_size, pipeline_parallel_size)["fullest_rank_bytes"]


# --- the plan --------------------------------------------------------------------------------------

def _round(x: float) -> int:
    """C's llround / std::round for the non-negative figures here: halves away from zero
    (Python's round() rounds halves to even)."""
    return math.floor(x + 0.5)


def _forward_terms(m: dict[str, Any], tokens: int, tp: int, dt: int) -> tuple[int, int]:
    """(forward working set, fused-MoE workspace) of one profile batch of ``tokens``."""
    td = tokens * dt
    hidden = _round(HIDDEN_TENSORS * td * m["hidden"])
    dense = moe = workspace = 0
    if any(not is_moe for _, _, is_moe in m["layers"]) and m["intermediate"] > 0:
        dense = td * 3 * -(-m["intermediate"] // tp)
    if m["moe"] is not None and any(is_moe for _, _, is_moe in m["layers"]):
        experts, top_k, inter, shared, shared_inter, _ = m["moe"]
        chunk = min(tokens, FUSED_MOE_CHUNK_TOKENS)
        n = 2 * -(-inter // tp)
        k = m["hidden"]
        workspace = (max(chunk * top_k * max(n // 2, k), tokens * k) + chunk * top_k * max(n, k)) * dt
        copies = tokens * top_k
        routing = tokens * experts * dt + copies * 8 + (copies + experts * 63) * 4
        shared_total = shared_inter + shared * inter
        shared_bytes = td * (3 * -(-shared_total // tp) + k) if shared_total else 0
        moe = workspace + routing + shared_bytes
    heads = -(-m["heads"] // tp)
    if m["mla"] is not None:
        kv_lora, _, nope, rope, v = m["mla"]
        per_token = heads * (nope + rope) + kv_lora + rope + heads * (nope + rope + v) + heads * v
    else:
        kv = m["kv_heads"] // tp if m["kv_heads"] >= tp else 1
        per_token = (heads + 2 * kv) * m["head_dim"] + heads * m["head_dim"]
    return hidden + max(dense, moe, td * per_token + workspace), workspace


def _forward(m: dict[str, Any], tokens: int, tp: int, dt: int) -> int:
    return _forward_terms(m, tokens, tp, dt)[0]


def _activation(m: dict[str, Any], tokens: int, seqs: int, tp: int, pp: int, rank: int, dt: int) -> int:
    forward, workspace = _forward_terms(m, tokens, tp, dt)
    out = tokens * m["hidden"] * dt
    buffers = 2 * out if pp > 1 else 0
    sampler_phase = 0
    if rank == pp - 1:
        runner = "v1" if m["moe"] is not None else "v2"
        rows = min(seqs, tokens)
        logits = rows * m["vocab"]
        kernel = min(SAMPLER_KERNEL_PROGRAMS[runner], rows) * m["vocab"] * 4
        sampler_phase = (out + logits * dt + _round(SAMPLER_BYTES_PER_LOGIT[runner] * logits) + kernel
                         + SAMPLER_FIXED_BYTES + workspace)
    return max(forward, sampler_phase) + buffers


def _graph_nodes(m: dict[str, Any], tp: int, first: int, last: int) -> int:
    """Kernel nodes one captured graph holds on this rank (cudagraph_estimate.cc)."""
    attention = 10 if m["mla"] is not None else 6
    moe_nodes = 9
    if m["moe"] is not None and (m["moe"][3] or m["moe"][4]):
        moe_nodes += 3 + (1 if m["moe"][4] else 0)
    per_layer_extra = 2 if tp > 1 else 0
    n_moe = sum(1 for _, _, is_moe in m["layers"][first:last] if is_moe) if m["moe"] is not None else 0
    return (last - first) * (attention + per_layer_extra) + n_moe * moe_nodes + (last - first - n_moe) * 4


def _cudagraph(m: dict[str, Any], seqs: int, mnbt: int, mode: str, eager: bool, max_capture: int,
               tp: int, pp: int, rank: int, dt: int) -> int:
    if eager or mode == "NONE":
        return 0
    top = max_capture or min(2 * seqs, 512, mnbt)
    sizes = [s for s in (1, 2, 4) if s <= top] + list(range(8, min(top + 1, 256), 8)) + list(range(256, top + 1, 16))
    if not sizes:
        return 0
    decode = [s for s in sizes if s <= seqs]
    n_piece = len(sizes) if mode in ("PIECEWISE", "FULL_AND_PIECEWISE") else 0
    n_full = len(sizes) if mode == "FULL" else (len(decode) if mode in ("FULL_DECODE_ONLY", "FULL_AND_PIECEWISE") else 0)
    largest = max(sizes[-1] if n_piece or mode == "FULL" else 0, decode[-1] if n_full and decode else 0)
    first, last = _pp_range(m["num_layers"], rank, pp)
    per_graph = max(PER_GRAPH_FLOOR, _round(BYTES_PER_GRAPH_NODE * _graph_nodes(m, tp, first, last)))
    further = max(n_full - 1, 0) + max(n_piece - 1, 0)
    return _forward(m, largest, tp, dt) + FIRST_CAPTURE_FIXED + per_graph * further


def plan(m: dict[str, Any], total_memory_bytes: int, gpu_memory_utilization: float = 0.92, max_model_len: int = 8192,
         tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1, max_num_seqs: int = 256,
         max_num_batched_tokens: int = 8192, dtype: str = "auto", kv_cache_dtype: str = "auto",
         block_size: int | None = None, enforce_eager: bool = False, cudagraph_mode: str = "FULL_AND_PIECEWISE",
         max_cudagraph_capture_size: int | None = None, cudagraph_memory_in_budget: bool = True) -> dict[str, Any]:
    total = _int(total_memory_bytes, "total_memory_bytes", 1, MAX_DEVICE_BYTES)
    util = gpu_memory_utilization
    if util.__class__ is not float or not 0.0 < util <= 1.0:
        raise ValueError(f"gpu_memory_utilization: must be a finite number in (0, 1]; got {_show(util)}")
    mml = _int(max_model_len, "max_model_len", 1, MAX_MODEL_LEN_TOKENS)
    tp = _int(tensor_parallel_size, "tensor_parallel_size", 1, MAX_TENSOR_PARALLEL_SIZE)
    pp = _int(pipeline_parallel_size, "pipeline_parallel_size", 1, MAX_PIPELINE_PARALLEL_SIZE)
    seqs = _int(max_num_seqs, "max_num_seqs", 1, MAX_NUM_SEQS)
    mnbt = _int(max_num_batched_tokens, "max_num_batched_tokens", 1, MAX_MODEL_LEN_TOKENS)
    model_dtype = _model_dtype(_text(dtype, "dtype"), m["dtype"])
    kv_dtype = _text(kv_cache_dtype, "kv_cache_dtype")
    block = _opt_int(block_size, "block_size", 1, MAX_MODEL_LEN_TOKENS)
    eager = _flag(enforce_eager, "enforce_eager")
    mode = _text(cudagraph_mode, "cudagraph_mode").upper()
    if mode not in ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"):
        raise ValueError(f"cudagraph_mode: must be one of NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, "
                         f"FULL_AND_PIECEWISE; got {_show(cudagraph_mode)}")
    max_capture = _opt_int(max_cudagraph_capture_size, "max_cudagraph_capture_size", 1, MAX_CUDAGRAPH_CAPTURE_SIZE)
    in_budget = _flag(cudagraph_memory_in_budget, "cudagraph_memory_in_budget")
    dt = DTYPE_BYTES[model_dtype]
    if mml > m["derived_max_model_len"]:
        raise ValueError(f"max_model_len: User-specified max_model_len ({mml}) is greater than the derived "
                         f"max_model_len ({m['derived_max_model_len']})")

    free = max(0, total - (BASELINE_MULTI if tp * pp > 1 else BASELINE_SINGLE))
    requested = math.ceil(total * util)
    weights = weight_breakdown(m, dtype, None, tp, pp)["per_pp_rank"]
    layout = _kv_layout(m, block, kv_dtype, dtype, tp, pp)
    in_flight = mnbt
    non_torch = (NON_TORCH_MULTI if tp * pp > 1 else NON_TORCH_SINGLE) + (TP_NCCL + TP_PEER * (tp - 1) if tp > 1 else 0)
    cap = CAP_SLIDING_WINDOW_AT_FULL
    blocks_per_request = sum(-(-_max_mem(s, mml, in_flight, cap) // s[2]) for s, _ in layout["groups"])
    ranks = []
    for r in range(pp):
        w = weights[r]["total_bytes"]
        act = _activation(m, mnbt, seqs, tp, pp, r, dt)
        graphs = _cudagraph(m, seqs, mnbt, mode, eager, max_capture, tp, pp, r, dt)
        non_kv = w + act + non_torch
        available = requested - non_kv - (graphs if in_budget else 0)
        _, group_size, page = layout["ranks"][r]
        bpb = page * group_size
        ranks.append({"pp_rank": r, "weights_bytes": w, "activation_peak_bytes": act, "non_torch_bytes": non_torch,
                      "cudagraph_bytes": graphs, "non_kv_cache_bytes": non_kv, "available_kv_cache_bytes": available,
                      "kv_bytes_per_block": bpb, "kv_bytes_per_request": bpb * blocks_per_request,
                      "num_blocks": available // bpb if available > 0 else 0})
    tight = min(ranks, key=lambda x: (x["num_blocks"], x["available_kv_cache_bytes"]))
    budgets = [x["available_kv_cache_bytes"] for x in ranks]
    upper = max(m["derived_max_model_len"], mml)
    fits_len = 0
    if all(a > 0 for a in budgets):
        fits_len = upper
        for r in range(pp):
            fits_len = min(fits_len, _largest_fitting(layout["ranks"][r][0], upper, budgets[r], in_flight, cap))
    out = {"requested_bytes": requested, "free_memory_bytes": free, "ranks": ranks,
           "tightest_pp_rank": tight["pp_rank"], "weights_bytes": tight["weights_bytes"],
           "activation_peak_bytes": tight["activation_peak_bytes"], "non_torch_bytes": non_torch,
           "cudagraph_bytes": tight["cudagraph_bytes"], "available_kv_cache_bytes": tight["available_kv_cache_bytes"],
           "max_model_len_that_fits": fits_len, "fits": False, "failure_phase": None, "shortfall_bytes": 0,
           "kv_cache": None}
    worst_weights = max(x["weights_bytes"] for x in ranks)
    worst_profile = max(x["non_kv_cache_bytes"] for x in ranks)
    if free < requested:
        out.update(failure_phase="free_memory", shortfall_bytes=requested - free)
    elif worst_weights > free:
        out.update(failure_phase="weights", shortfall_bytes=worst_weights - free)
    elif worst_profile > free:
        out.update(failure_phase="profile_peak", shortfall_bytes=worst_profile - free)
    else:
        short = any(_shortfall(layout["ranks"][r][0], budgets[r], mml, in_flight, cap) for r in range(pp))
        if not short:
            out.update(fits=True, kv_cache=_capacity(layout, budgets, mml, mnbt, tp, pp, 0, 1, cap))
        elif any(x["num_blocks"] == 0 for x in ranks):
            out.update(failure_phase="no_kv_blocks",
                       shortfall_bytes=max(max(x["kv_bytes_per_block"] - x["available_kv_cache_bytes"] for x in ranks), 0))
        else:
            out.update(failure_phase="max_model_len",
                       shortfall_bytes=max(max(x["kv_bytes_per_request"] - x["available_kv_cache_bytes"] for x in ranks), 0))
    return out
