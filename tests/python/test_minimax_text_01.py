"""MiniMax-Text-01 / MiniMax-M1 (model_types minimax_text_01, minimax_m1): lightning (linear) attention
layers beside full-attention layers and a 32-expert MoE on every layer, sized as vLLM builds them
(vllm/model_executor/models/minimax_text_01.py, vllm/model_executor/layers/mamba/linear_attn.py,
vllm/model_executor/layers/mamba/mamba_utils.py linear_attention_state_shape /
linear_attention_state_dtype). The parameter count is checked against the published total, the KV
pages and the linear-attention state against the arithmetic of vLLM's code, worked out here by hand."""

from __future__ import annotations

import math

import pytest
import vllm_mem

GIB = 1 << 30

# MiniMax-M1's config.json as MiniMaxAI publishes it with the checkpoint (a public copy of the file:
# code-index id 54036155376): its memory fields. attn_type_list: seven lightning layers (0), then one
# softmax-attention layer (1), ten times.
MINIMAX_M1 = {
    "architectures": ["MiniMaxM1ForCausalLM"],
    "model_type": "minimax_m1",
    "attn_type_list": [0, 0, 0, 0, 0, 0, 0, 1] * 10,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 6144,
    "intermediate_size": 9216,
    "layernorm_full_attention_alpha": 3.5565588200778455,
    "layernorm_full_attention_beta": 1.0,
    "layernorm_linear_attention_alpha": 3.5565588200778455,
    "layernorm_linear_attention_beta": 1.0,
    "layernorm_mlp_alpha": 3.5565588200778455,
    "layernorm_mlp_beta": 1.0,
    "max_position_embeddings": 10240000,
    "num_attention_heads": 64,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 80,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "postnorm": True,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000000,
    "rotary_dim": 64,
    "shared_intermediate_size": 0,
    "shared_moe_mode": "sigmoid",
    "sliding_window": None,
    "tie_word_embeddings": False,
    "vocab_size": 200064,
    "torch_dtype": "bfloat16",
}
# MiniMax-Text-01 is the same architecture under MiniMaxText01ForCausalLM (the MiniMax-01 model card:
# 456 B parameters, 45.9 B activated per token; M1 is built on it).
MINIMAX_TEXT_01 = {**MINIMAX_M1, "architectures": ["MiniMaxText01ForCausalLM"], "model_type": "minimax_text_01"}
LINEAR_LAYERS, FULL_LAYERS = 70, 10
PUBLISHED_TOTAL = 456e9
PUBLISHED_ACTIVE = 45.9e9

H, V, HEADS, KV_HEADS, D, INTER, E = 6144, 200064, 64, 8, 128, 9216, 32
LIGHTNING = H * 3 * HEADS * D + H * HEADS * D + HEADS * D * H + HEADS * D  # qkv_proj, output_gate, out_proj, norm
ATTENTION = H * (HEADS + 2 * KV_HEADS) * D + HEADS * D * H  # qkv_proj, o_proj (no biases)
EXPERT = H * 2 * INTER + INTER * H  # w13 + w2
ROUTER = H * E
NORMS = 2 * H


def test_parameter_count_matches_the_published_total() -> None:
    for config in (MINIMAX_M1, MINIMAX_TEXT_01):
        spec = vllm_mem.ModelSpec.from_hf_config(config)
        assert spec.has_exact_rules and spec.model_type in vllm_mem.supported_model_types()
        by_hand = (
            2 * V * H + LINEAR_LAYERS * LIGHTNING + FULL_LAYERS * ATTENTION + 80 * (E * EXPERT + ROUTER + NORMS) + H
        )
        assert spec.num_parameters() == by_hand == 456_089_655_296
        # "456 billion total parameters": within the rounding of the published figure.
        assert abs(by_hand - PUBLISHED_TOTAL) / PUBLISHED_TOTAL < 0.0005
    # 45.9 B activated: every tensor but the two unactivated experts' 30 per layer and the embeddings.
    active = by_hand - 80 * (E - 2) * EXPERT - 2 * V * H
    assert abs(active - PUBLISHED_ACTIVE) / PUBLISHED_ACTIVE < 0.002


def test_weight_bytes_as_vllm_allocates_them() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(MINIMAX_M1)
    parts = spec.weight_breakdown()["per_pp_rank"][0]
    # lm_head.float() and the router's params_dtype=torch.float32: 4 bytes; the float32 rotary table of
    # max_position_embeddings rows x rotary_dim 64 (get_rope(dtype=torch.float32)); the rest bf16.
    # 200,064 is a multiple of 64: no vocab padding.
    assert parts["embedding_bytes"] == V * H * 2
    assert parts["lm_head_bytes"] == V * H * 4
    assert parts["buffer_bytes"] == 10_240_000 * 64 * 4
    assert parts["attention_bytes"] == (LINEAR_LAYERS * LIGHTNING + FULL_LAYERS * ATTENTION) * 2
    assert parts["mlp_bytes"] == 80 * (E * EXPERT * 2 + ROUTER * 4)
    assert parts["norm_bytes"] == (80 * NORMS + H) * 2
    # TP 8: everything split but the routers, the layer norms and the final norm.
    tp8 = spec.weight_breakdown(tensor_parallel_size=8)["per_pp_rank"][0]
    assert tp8["attention_bytes"] * 8 == parts["attention_bytes"]
    assert tp8["mlp_bytes"] == 80 * (E * EXPERT * 2 // 8 + ROUTER * 4)
    assert tp8["lm_head_bytes"] * 8 == parts["lm_head_bytes"]


def test_pipeline_parallelism_is_refused_as_vllm_refuses_it() -> None:
    # MiniMaxText01ForCausalLM implements HasInnerState and IsHybrid, not SupportsPP.
    spec = vllm_mem.ModelSpec.from_hf_config(MINIMAX_M1)
    with pytest.raises(NotImplementedError, match="SupportsPP"):
        spec.weight_bytes(pipeline_parallel_size=2)


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
def test_state_kv_page_and_block_size_by_hand(tp: int) -> None:
    cap = vllm_mem.kv_cache_capacity(
        MINIMAX_M1, 64 * GIB, max_model_len=131072, tensor_parallel_size=tp, enable_prefix_caching=False
    )
    # linear_attention_state_shape: (64 // tp, 128, 128) in the model dtype (mamba_cache_dtype auto).
    state = HEADS // tp * D * D * 2
    assert cap.mamba_state_bytes == state
    # FullAttentionSpec(block_size=1): K and V of the KV heads on this rank (replicated past 8), bf16.
    per_token = 2 * max(KV_HEADS // tp, 1) * D * 2
    block = 16 * math.ceil(state / (16 * per_token))
    assert cap.attention_block_size == block
    page = block * per_token
    assert cap.hybrid_log_lines[0] == (
        f"Setting attention block size to {block} tokens to ensure that attention page size is >= mamba page size."
    )
    assert page == state or f"{100 * (page - state) / state:.2f}%" in cap.hybrid_log_lines[1]
    attention = [g for g in cap.groups if g.kind != "mamba"]
    assert sum(len(g.layer_indices) for g in attention) == FULL_LAYERS
    assert sum(len(g.layer_indices) for g in cap.groups if g.kind == "mamba") == LINEAR_LAYERS
    # Groups of the smaller type's 10 layers: each block of a layer slot holds 10 pages.
    assert cap.num_blocks == 64 * GIB // (page * FULL_LAYERS)


def test_tp8_anchor_figures() -> None:
    # TP 8: 8 heads x 128 x 128 x 2 B = 262,144 B per lightning layer; one KV head: 512 B per token, so
    # 16 * ceil(262,144 / 8,192) = 512-token blocks whose page is exactly one state (no padding).
    cap = vllm_mem.kv_cache_capacity(
        MINIMAX_M1, 64 * GIB, max_model_len=131072, tensor_parallel_size=8, enable_prefix_caching=False
    )
    assert (cap.mamba_state_bytes, cap.attention_block_size) == (262_144, 512)
    assert len(cap.hybrid_log_lines) == 1


def _tp8_state_bytes(**dtypes: str) -> int:
    cap = vllm_mem.kv_cache_capacity(
        MINIMAX_M1, 64 * GIB, max_model_len=131072, tensor_parallel_size=8, enable_prefix_caching=False, **dtypes
    )
    return cap.mamba_state_bytes


def test_state_follows_mamba_cache_dtype_only() -> None:
    # linear_attention_state_dtype reads --mamba-cache-dtype alone; --mamba-ssm-cache-dtype is not read.
    base = _tp8_state_bytes()
    assert _tp8_state_bytes(mamba_ssm_cache_dtype="float32") == base
    assert _tp8_state_bytes(mamba_cache_dtype="float32") == 2 * base


def test_layer_types_spelling_is_read_as_vllm_reads_it() -> None:
    # MiniMaxText01Model: without attn_type_list, layer_types "linear_attention" / "full_attention".
    types = ["linear_attention" if t == 0 else "full_attention" for t in MINIMAX_M1["attn_type_list"]]
    config = {k: v for k, v in MINIMAX_M1.items() if k != "attn_type_list"}
    spec = vllm_mem.ModelSpec.from_hf_config({**config, "layer_types": types})
    assert spec.num_parameters() == vllm_mem.ModelSpec.from_hf_config(MINIMAX_M1).num_parameters()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"attn_type_list": [0, 2] * 40}, "attn_type_list"),  # "Unsupported attention_type"
        ({"attn_type_list": [0, 1]}, "attn_type_list"),  # not one per layer
        ({"shared_intermediate_size": 4096}, "shared_intermediate_size"),  # shared MLP + coefficient
        ({"num_local_experts": [32] * 80}, "num_local_experts"),  # per-layer expert counts
    ],
)
def test_configs_outside_the_rules_are_refused_by_field(change: dict, field: str) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**MINIMAX_M1, **change})
    assert e.value.field == field


def test_quantized_weights_are_refused() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(MINIMAX_M1)
    with pytest.raises(NotImplementedError, match="quantized weights of minimax_m1"):
        spec.weight_bytes(quantization="fp8")


def test_plans_end_to_end_on_eight_h200() -> None:
    plan = vllm_mem.plan(
        MINIMAX_M1, gpu="H200", tensor_parallel_size=8, max_model_len=131072, enable_prefix_caching=False
    )
    assert plan.fits and plan.kv_cache is not None
    assert plan.kv_cache.attention_block_size == 512


@pytest.mark.parametrize("max_model_len", [4096, 131072, 1_000_000])
def test_plan_counts_the_rotary_table_at_the_served_length(max_model_len: int) -> None:
    """MiniMaxText01Model builds its float32 rotary table at min(max_position_embeddings,
    max_model_len) positions (minimax_text_01.py: the model's max_model_len copied onto the config,
    then get_rope(max_position=min(...))), so the plan's weights are the breakdown's, which counts the
    config's 10,240,000 rows, less the rows past the served length, x rotary_dim 64 x 4 bytes."""
    tp = 8
    full = vllm_mem.ModelSpec.from_hf_config(MINIMAX_M1).weight_breakdown(tensor_parallel_size=tp)
    plan = vllm_mem.plan(MINIMAX_M1, gpu="H200", tensor_parallel_size=tp, max_model_len=max_model_len,
                         enable_prefix_caching=False)
    rows_not_built = 10_240_000 - max_model_len
    assert plan.weights_bytes == full["per_pp_rank"][0]["total_bytes"] - rows_not_built * 64 * 4
    assert not any("rotary table" in c for c in vllm_mem.ModelSpec.from_hf_config(MINIMAX_M1).caveats)


def test_the_length_cap_is_minimax_s_alone() -> None:
    """Other families' tables keep the config's rows at any length (get_rope(max_position=
    max_position_embeddings)): Llama-3.1-8B's bf16 table is 131,072 x 128 x 2 bytes at 4,096 tokens too."""
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
             "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
             "num_hidden_layers": 32, "vocab_size": 128256, "max_position_embeddings": 131072,
             "rope_theta": 500000.0, "torch_dtype": "bfloat16",
             "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
    plan = vllm_mem.plan(llama, gpu="H100", max_model_len=4096)
    assert plan.weights_bytes == vllm_mem.ModelSpec.from_hf_config(llama).weight_bytes()
    assert vllm_mem.ModelSpec.from_hf_config(llama).weight_breakdown()["per_pp_rank"][0]["buffer_bytes"] == (
        131072 * 128 * 2)
