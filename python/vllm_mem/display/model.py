"""A model spec and a KV-cache capacity as HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._html import (
    COLORS,
    PALETTE,
    Marker,
    Segment,
    bar,
    code,
    esc,
    exactness_callouts,
    facts,
    frame,
    legend,
    muted,
    para,
    size,
    table,
)

if TYPE_CHECKING:
    from ..kv_cache import KvCacheCapacity
    from ..model_spec import ModelSpec

#: Colours of attention kinds in the layer strip.
_KIND_COLORS = {"FULL": "#4e79a7", "SLIDING_WINDOW": "#f28e2b", "MLA": "#b07aa1", "NONE": "#bab0ac"}
_KIND_WORDS = {"FULL": "full attention", "SLIDING_WINDOW": "sliding window", "MLA": "MLA",
               "NONE": "no attention (KV-free)"}


def _count(n: int) -> str:
    for unit, scale in (("T", 10**12), ("B", 10**9), ("M", 10**6)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:,}"


def _layer_strip(spec: ModelSpec) -> str:
    """One small cell per decoder layer, coloured by attention kind (MoE layers taller)."""
    layers = spec.layers
    if not layers:
        return ""
    n = len(layers)
    cells = []
    for i, layer in enumerate(layers):
        kind = layer.attention.name
        word = _KIND_WORDS.get(kind, kind.lower())
        if layer.sliding_window_tokens:
            word += f" ({layer.sliding_window_tokens:,} tokens)"
        tall = 2 if layer.moe else 5
        cells.append(f"<rect x='{100.0 * i / n:.3f}%' y='{tall}' width='{100.0 / n:.3f}%' height='{18 - tall}'"
                     f" fill='{_KIND_COLORS.get(kind, '#bab0ac')}' stroke='rgba(255,255,255,0.6)'"
                     f" stroke-width='0.5'><title>layer {i}: {esc(word)}{', MoE' if layer.moe else ''}"
                     f"</title></rect>")
    kinds = sorted({layer.attention.name for layer in layers})
    key = " ".join(
        f"<span style='white-space:nowrap;margin-right:10px'><span style='display:inline-block;width:10px;"
        f"height:10px;background:{_KIND_COLORS.get(k, '#bab0ac')};margin-right:4px;border-radius:2px'></span>"
        f"{esc(_KIND_WORDS.get(k, k.lower()))} &times;{sum(1 for la in layers if la.attention.name == k)}</span>"
        for k in kinds)
    moe = sum(1 for la in layers if la.moe)
    if moe:
        key += muted(f" taller cells: MoE layers ({moe})")
    return (para(f"<b>Layers</b> {muted(f'({n}, first to last)')}", "margin-bottom:0")
            + "<svg xmlns='http://www.w3.org/2000/svg' width='100%' height='20' role='img' aria-label='layers'"
              " style='display:block;margin:4px 0'>" + "".join(cells) + "</svg>" + para(key, "margin-top:2px"))


def model_spec_html(spec: ModelSpec) -> str:
    name = spec.name or spec.model_type
    rows = [
        ("model_type", esc(spec.model_type)),
        ("architectures", esc(", ".join(spec.architectures) or "-")),
        ("layers", f"{spec.num_layers}"),
        ("hidden size", f"{spec.hidden_size:,}"),
        ("attention heads / KV heads", f"{spec.num_attention_heads} / {spec.num_kv_heads} &times; "
                                       f"head_dim {spec.head_dim}"),
        ("intermediate size", f"{spec.intermediate_size:,}"),
        ("vocabulary", f"{spec.vocab_size:,}"),
        ("max_position_embeddings", f"{spec.max_position_embeddings:,}"),
        ("checkpoint dtype", esc(spec.dtype)),
    ]
    if spec.mla is not None:
        m = spec.mla
        rows.append(("MLA", f"kv_lora_rank {m.kv_lora_rank}, qk_rope_head_dim {m.qk_rope_head_dim}"))
    if spec.moe is not None:
        e = spec.moe
        shared = f", {e.num_shared_experts} shared" if e.num_shared_experts else ""
        rows.append(("MoE", f"{e.num_experts} experts, top-{e.num_experts_per_token}{shared}, "
                            f"expert intermediate {e.expert_intermediate_size:,}"))
    if spec.quantization is not None:
        q = spec.quantization
        rows.append(("quantization", esc(f"{q.method}, {q.weight_bits}-bit"
                                         + (f", group {q.group_size}" if q.group_size > 0 else ""))))
    params = spec.num_parameters()
    breakdown = spec.weight_breakdown()
    rank = breakdown["per_pp_rank"][0] if breakdown["per_pp_rank"] else {}
    total = int(breakdown["fullest_rank_bytes"])
    parts = [("embedding", "embedding_bytes"), ("attention", "attention_bytes"), ("MLP / experts", "mlp_bytes"),
             ("norms", "norm_bytes"), ("LM head", "lm_head_bytes"),
             ("quantization scales", "quantization_overhead_bytes"), ("buffers", "buffer_bytes"),
             ("vision encoder", "vision_encoder_bytes"), ("audio encoder", "audio_encoder_bytes")]
    segments = [Segment(label, int(rank.get(key, 0)), PALETTE[i % len(PALETTE)])
                for i, (label, key) in enumerate(parts) if int(rank.get(key, 0)) > 0]
    body = [
        para(f"<b>{esc(_count(params))} parameters</b>, weights {esc(size(total))} on one GPU "
             + muted(f"(dtype {esc(str(breakdown['dtype']))}, no tensor parallelism)"), "margin-top:0"),
        *exactness_callouts(spec),
        facts(rows),
        para("<b>Where the weights' bytes go</b>", "margin-bottom:0"),
        bar(segments, total, label="weights by component"),
        legend(segments, total, header=("", "bytes (share of weights)", "")),
        _layer_strip(spec),
    ]
    return frame(f"{esc(name)} {muted('ModelSpec')}", "".join(body))


def kv_capacity_html(cap: KvCacheCapacity) -> str:
    available = cap.available_bytes
    leftover = max(0, available - cap.kv_cache_bytes)
    segments = [
        Segment(f"KV cache ({cap.num_blocks:,} blocks)", cap.kv_cache_bytes, COLORS["kv_cache"],
                note=f"{cap.bytes_per_block:,} bytes per block"),
        Segment("left over (less than a block)", leftover, COLORS["unused"], outline=True),
    ]
    markers = [Marker(cap.bytes_per_request, f"one request of {cap.max_model_len:,} tokens")] \
        if 0 < cap.bytes_per_request <= available else []
    verdict = cap.max_concurrency >= 1.0
    body = [
        para(f"<b>{cap.max_concurrency:.2f}&times;</b> concurrency at {cap.max_model_len:,} tokens per request, "
             f"<b>{cap.num_tokens:,}</b> tokens in {cap.num_blocks:,} blocks of {cap.block_size} tokens "
             + muted(f"(kv dtype {esc(cap.kv_cache_dtype)})"), "margin-top:0"),
        para("".join(f"<div>{code(line)}</div>" for line in cap.log_lines)),
        para(f"<b>Where the available bytes go</b> {muted('(tightest worker)')}", "margin-bottom:0"),
        bar(segments, available, markers=markers, label="KV cache budget"),
        legend(segments, available, markers=markers, header=("", "bytes (share of available)", "")),
    ]
    if cap.groups:
        rows = [[esc(g.kind), f"{len(g.layer_indices)}", f"{g.block_size}", f"{g.page_size_bytes:,}",
                 f"{g.sliding_window_tokens:,}" if g.sliding_window_tokens else "&ndash;",
                 f"{g.blocks_per_request:,}"] for g in cap.groups]
        body.append(table(["group", "layers", "block size", "page bytes", "window", "blocks per request"], rows,
                          numeric=(1, 2, 3, 4, 5)))
    if len(set(cap.num_blocks_per_worker)) > 1:
        body.append(para(muted("blocks per worker before the minimum: "
                               + esc(", ".join(f"{b:,}" for b in cap.num_blocks_per_worker)))))
    if cap.num_padding_layers:
        body.append(para(muted(f"{cap.num_padding_layers} padding layers added (hybrid model)")))
    return frame(f"KV cache capacity {muted(esc(size(available)) + ' available')}", "".join(body),
                 verdict=verdict, verdict_text="fits one request" if verdict else "less than one request")
