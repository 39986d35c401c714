"""Kimi-Linear (model_type kimi_linear): Kimi Delta Attention (KDA) layers beside MLA layers and a
DeepSeek-style MoE, sized as vLLM v0.19 builds it (vllm/model_executor/models/kimi_linear.py,
vllm/model_executor/layers/kda.py, vllm/model_executor/layers/mamba/mamba_utils.py kda_state_shape /
kda_state_dtype). The parameter count is checked against the checkpoint's published figure, the KV
pages and recurrent state against the arithmetic of vLLM's code, worked out here by hand."""

from __future__ import annotations

import math

import pytest
import vllm_mem

GIB = 1 << 30

# https://huggingface.co/moonshotai/Kimi-Linear-48B-A3B-Instruct/blob/main/config.json: its memory fields
# (a copy of the file with the checkpoint's tensor list: code-index id 62691149540).
KIMI_LINEAR_48B = {
    "architectures": ["KimiLinearForCausalLM"],
    "model_type": "kimi_linear",
    "dtype": "bfloat16",
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 27,
    "vocab_size": 163840,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "head_dim": 72,
    "hidden_act": "silu",
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "mla_use_nope": True,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "moe_intermediate_size": 1024,
    "num_experts": 256,
    "num_experts_per_token": 8,
    "num_shared_experts": 1,
    "num_expert_group": 1,
    "topk_group": 1,
    "use_grouped_topk": True,
    "moe_router_activation_func": "sigmoid",
    "routed_scaling_factor": 2.446,
    "model_max_length": 1048576,
    "num_nextn_predict_layers": 0,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "linear_attn_config": {
        "full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
        "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
        "head_dim": 128,
        "num_heads": 32,
        "short_conv_kernel_size": 4,
    },
}
KDA_LAYERS, MLA_LAYERS = 20, 7
# The checkpoint's model.safetensors.index.json metadata: total_parameters 49,122,681,728 and
# total_size 98,245,528,576 bytes (code-index id 53812905091; the Hub's safetensors total is the same
# count, code-index id 69615480373).
PUBLISHED_PARAMETERS = 49_122_681_728
PUBLISHED_CHECKPOINT_BYTES = 98_245_528_576


def test_parameter_count_equals_the_checkpoint() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(KIMI_LINEAR_48B)
    assert spec.has_exact_rules and spec.model_type in vllm_mem.supported_model_types()
    assert spec.num_parameters() == PUBLISHED_PARAMETERS
    # The checkpoint stores each KDA layer's dt_bias (4096) and A_log (32) in float32, the rest in
    # bf16: 2 bytes per parameter plus 2 more for those, as its total_size says.
    assert 2 * PUBLISHED_PARAMETERS + 2 * KDA_LAYERS * (4096 + 32) == PUBLISHED_CHECKPOINT_BYTES


def test_weight_bytes_as_vllm_allocates_them() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(KIMI_LINEAR_48B)
    # kda.py creates q/k/v_conv1d (32 heads x 128 = 4096 channels x 4 taps each) with
    # params_dtype=torch.float32, dt_bias and A_log in float32: the checkpoint's bytes plus 2 bytes
    # per conv weight (stored bf16). Vocab 163,840 is a multiple of 64 (no padding); no rotary cache
    # (KimiMLAAttention passes rotary_emb=None).
    conv_weights = KDA_LAYERS * 3 * 4096 * 4
    assert spec.weight_bytes() == PUBLISHED_CHECKPOINT_BYTES + 2 * conv_weights
    tp2 = spec.weight_breakdown(tensor_parallel_size=2)["per_pp_rank"][0]
    # Replicated on every rank: the MLA down projection kv_a_proj_with_mqa (2304 x 576) and its norm
    # (512), the KDA f_a / g_a projections (2304 x 128 each) and o_norm (128), the routers (256 x 2304)
    # and their e_score_correction_bias (256), the norms; the rest is halved.
    replicated = (
        MLA_LAYERS * (2304 * 576 + 512)
        + KDA_LAYERS * (2 * 2304 * 128 + 128)
        + 26 * (256 * 2304 + 256)
        + 27 * 2 * 2304
        + 2304
    ) * 2
    assert 2 * tp2["total_bytes"] - replicated == spec.weight_bytes()


def _state_bytes(tp: int) -> int:
    # kda_state_shape: conv (short_conv_kernel_size - 1, (H*D + 2*H*D) / tp) in the model dtype under
    # --mamba-cache-dtype auto; recurrent (H / tp, D, D) always float32 (kda_state_dtype).
    return (4 - 1) * 3 * 32 * 128 // tp * 2 + 32 // tp * 128 * 128 * 4


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_kda_state_mla_page_and_block_size_by_hand(tp: int) -> None:
    cap = vllm_mem.kv_cache_capacity(KIMI_LINEAR_48B, 8 * GIB, max_model_len=65536, tensor_parallel_size=tp,
                                     enable_prefix_caching=False)
    state = _state_bytes(tp)
    assert cap.mamba_state_bytes == state
    # verify_and_update_config, MLA branch: MLAAttentionSpec(block_size=1) is one latent of
    # kv_lora_rank + qk_rope_head_dim = 576 bf16 values on every rank (1,152 B per token), the kernel
    # alignment 64; the attention block is the smallest multiple of 64 whose page holds one state.
    per_token = (512 + 64) * 2
    block = 64 * math.ceil(state / (64 * per_token))
    assert cap.attention_block_size == block
    page = block * per_token
    assert cap.hybrid_log_lines == (
        f"Setting attention block size to {block} tokens to ensure that attention page size is >= mamba page size.",
        f"Padding mamba page size by {100 * (page - state) / state:.2f}% to ensure that mamba page size and "
        "attention page size are exactly equal.",
    )
    mla = [g for g in cap.groups if g.kind == "mla"]
    assert sum(len(g.layer_indices) for g in mla) == MLA_LAYERS
    assert mla[0].page_size_bytes == page
    # The 7 MLA layers are the smaller type: groups of 7, so 20 KDA layers make 3 state groups (one
    # padded), and every block of a layer slot holds one page per group.
    assert [g.kind for g in cap.groups].count("mamba") == 3
    assert cap.num_blocks == 8 * GIB // (page * MLA_LAYERS)


def test_tp1_anchor_figures() -> None:
    # TP 1: state 73,728 + 2,097,152 = 2,170,880 B; 64 * ceil(2,170,880 / 73,728) = 1,920 tokens;
    # page 1,920 * 1,152 = 2,211,840 B, the state padded by 1.89%.
    cap = vllm_mem.kv_cache_capacity(KIMI_LINEAR_48B, 8 * GIB, max_model_len=65536, enable_prefix_caching=False)
    assert (cap.mamba_state_bytes, cap.attention_block_size) == (2_170_880, 1920)
    assert "1.89%" in cap.hybrid_log_lines[1]


def test_recurrent_state_stays_float32() -> None:
    # kda_state_dtype ignores --mamba-ssm-cache-dtype: only the conv states follow --mamba-cache-dtype.
    base = vllm_mem.kv_cache_capacity(KIMI_LINEAR_48B, 8 * GIB, max_model_len=65536, enable_prefix_caching=False)
    ssm16 = vllm_mem.kv_cache_capacity(KIMI_LINEAR_48B, 8 * GIB, max_model_len=65536, mamba_ssm_cache_dtype="bfloat16",
                                       enable_prefix_caching=False)
    conv32 = vllm_mem.kv_cache_capacity(KIMI_LINEAR_48B, 8 * GIB, max_model_len=65536, mamba_cache_dtype="float32",
                                        enable_prefix_caching=False)
    assert ssm16.mamba_state_bytes == base.mamba_state_bytes
    assert conv32.mamba_state_bytes == base.mamba_state_bytes + 3 * 3 * 4096 * 2


def test_context_length_comes_from_model_max_length() -> None:
    # vLLM's _get_and_verify_max_len reads model_max_length, the only length key of this config.
    assert vllm_mem.ModelSpec.from_hf_config(KIMI_LINEAR_48B).max_position_embeddings == 1_048_576


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"q_lora_rank": 1536}, "q_lora_rank"),  # KimiMLAAttention: assert self.q_lora_rank is None
        ({"mla_use_nope": False}, "mla_use_nope"),  # assert self.use_nope is True
        ({"hidden_act": "gelu"}, "hidden_act"),  # KimiMLP / KimiMoE: "Only silu is supported for now."
        ({"linear_attn_config": None}, "linear_attn_config"),
        (
            {"linear_attn_config": {**KIMI_LINEAR_48B["linear_attn_config"], "kda_layers": [0, 1]}},
            "linear_attn_config.kda_layers",
        ),  # 1-based
        (
            {"linear_attn_config": {**KIMI_LINEAR_48B["linear_attn_config"], "num_heads": "32"}},
            "linear_attn_config.num_heads",
        ),
    ],
)
def test_configs_vllm_refuses_are_refused_by_field(change: dict, field: str) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**KIMI_LINEAR_48B, **change})
    assert e.value.field == field


def test_quantized_checkpoints_are_refused() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(KIMI_LINEAR_48B)
    with pytest.raises(NotImplementedError, match="quantized weights of kimi_linear"):
        spec.weight_bytes(quantization="fp8")


def test_plans_end_to_end_on_two_h100() -> None:
    # 98.2 GB of weights: two H100s. TP 2 halves the KDA state (1,085,440 B): 64 * ceil(1,085,440 / 73,728)
    # = 960-token blocks.
    plan = vllm_mem.plan(KIMI_LINEAR_48B, gpu="H100", tensor_parallel_size=2, max_model_len=65536,
                         enable_prefix_caching=False)
    assert plan.fits and plan.kv_cache is not None
    assert plan.kv_cache.attention_block_size == plan.kv_cache.block_size == 960
