"""Hybrid state-space / linear-attention models through the Python API: the anchors vLLM users
reported (attention block size and Mamba padding), the log lines, refusals and the families list.
The C++ tests (tests/cpp/kv_cache/test_hybrid_kv_cache.cc) carry the hand arithmetic."""

from __future__ import annotations

import pytest

import vllm_mem
from vllm_mem.kv_cache import KvCacheSettings, kv_cache_capacity
from vllm_mem.model_spec import ModelSpec

GIB = 1 << 30

# The fields of Qwen/Qwen3-Next-80B-A3B-Instruct's config.json that decide its memory
# (https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json).
QWEN3_NEXT = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "torch_dtype": "bfloat16",
    "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
    "head_dim": 256, "intermediate_size": 5120, "vocab_size": 151936, "full_attention_interval": 4,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_value_head_dim": 128, "num_experts": 512,
    "num_experts_per_tok": 10, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "max_position_embeddings": 262144,
    "partial_rotary_factor": 0.25, "tie_word_embeddings": False,
}

# nvidia/NVIDIA-Nemotron-Nano-9B-v2's dimensions and pattern (27 M, 4 *, 25 -).
NEMOTRON_NANO_9B_V2 = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "torch_dtype": "bfloat16",
    "hidden_size": 4480, "num_hidden_layers": 56, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 15680, "vocab_size": 131072, "mamba_num_heads": 128,
    "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "chunk_size": 128,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
}


def test_qwen3_next_tp2_anchor():
    # vLLM issues 25797 / 26871: 544 tokens and 1.49% at TP 2, bf16.
    cap = kv_cache_capacity(ModelSpec.from_hf_config(QWEN3_NEXT), 10 * GIB, max_model_len=32768,
                            tensor_parallel_size=2, enable_prefix_caching=False)
    assert cap.attention_block_size == 544
    assert cap.hybrid_log_lines == (
        "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
        "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
    )
    # 1 attention + 3 GDN groups of 12 layers; 10 GiB / (557,056 B * 12) = 1606 blocks; one request
    # takes 61 + 3 blocks: 25.09x, int(1606 / 64 * 32768) = 822,272 tokens.
    assert [g.kind for g in cap.groups].count("mamba") == 3
    assert cap.num_blocks == 1606
    assert cap.num_tokens == 822_272
    assert cap.log_lines[1] == "Maximum concurrency for 32,768 tokens per request: 25.09x"
    assert cap.to_dict()["hybrid_log_lines"][0].startswith("Setting attention block size to 544")


@pytest.mark.parametrize(("ssm_dtype", "block"), [("auto", 1312), ("bfloat16", 672), ("float16", 672)])
def test_nemotron_nano_9b_v2_anchor(ssm_dtype, block):
    # vLLM issue 24280: 672 tokens with a 16-bit SSM state; float32 (the config's
    # mamba_ssm_cache_dtype, which vLLM now reads) gives 1312.
    cap = kv_cache_capacity(NEMOTRON_NANO_9B_V2, 20 * GIB, max_model_len=8192, mamba_ssm_cache_dtype=ssm_dtype,
                            enable_prefix_caching=False)
    assert cap.attention_block_size == block
    assert cap.num_padding_layers == 1  # 27 Mamba layers in groups of 4


def test_pure_attention_model_has_no_hybrid_figures():
    cap = kv_cache_capacity({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256,
                             "num_attention_heads": 2, "vocab_size": 100}, GIB, max_model_len=1024)
    assert cap.hybrid_log_lines == ()
    assert cap.mamba_state_bytes == 0
    assert cap.attention_block_size == 0


def test_bad_hybrid_settings_are_value_errors():
    with pytest.raises(ValueError, match="mamba_cache_mode"):
        kv_cache_capacity(QWEN3_NEXT, GIB, tensor_parallel_size=2, mamba_cache_mode="sometimes",
                          enable_prefix_caching=False)
    with pytest.raises(ValueError, match="mamba_ssm_cache_dtype"):
        kv_cache_capacity(QWEN3_NEXT, GIB, tensor_parallel_size=2, mamba_ssm_cache_dtype="fp8",
                          enable_prefix_caching=False)
    with pytest.raises(ValueError, match="failed to convert"):
        kv_cache_capacity(QWEN3_NEXT, 10 * GIB, tensor_parallel_size=2, disable_hybrid_kv_cache_manager=True,
                          enable_prefix_caching=False)


def test_qwen3_5_refuses_mamba_cache_mode_all():
    config = {"model_type": "qwen3_5_text", "torch_dtype": "bfloat16", "hidden_size": 1024,
              "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
              "intermediate_size": 3584, "vocab_size": 248320, "full_attention_interval": 4,
              "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
              "linear_num_value_heads": 16, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32"}
    with pytest.raises(NotImplementedError, match="--mamba-cache-mode=align"):
        kv_cache_capacity(config, GIB, mamba_cache_mode="all")
    # text_config.mamba_ssm_dtype float32: SSM (16, 128, 128) * 4 + conv (3, 6144) * 2 bytes.
    cap = kv_cache_capacity(config, GIB, max_model_len=4096)
    assert cap.mamba_state_bytes == 16 * 128 * 128 * 4 + 3 * 6144 * 2


def test_hybrid_families_are_supported_and_the_rest_still_refused():
    supported = vllm_mem.supported_model_types()
    for model_type in ("qwen3_next", "nemotron_h", "granitemoehybrid", "jamba", "falcon_h1", "bamba", "mamba2",
                       "mamba", "falcon_mamba", "zamba2", "kimi_linear", "minimax_text_01", "minimax_m1"):
        assert model_type in supported
    for model_type in ("zamba", "minimax", "plamo2"):
        assert model_type not in supported


def test_plan_of_a_hybrid_model_reports_the_page_unification():
    # The whole start-up plan on a hybrid: the KV section prints vLLM's two config-time lines,
    # and the block size is the unified one (TP 4: 272 tokens), not the attention default 16.
    plan = vllm_mem.plan(QWEN3_NEXT, gpu="H100", tensor_parallel_size=4, max_model_len=32768,
                         enable_prefix_caching=False)
    assert plan.fits and plan.kv_cache is not None
    assert plan.kv_cache.attention_block_size == plan.kv_cache.block_size == 272
    text = str(plan)
    assert "Setting attention block size to 272 tokens" in text
    assert text.index("Setting attention block size") < text.index("Available KV cache memory:")
    assert "Maximum concurrency for 32,768 tokens per request" in text


# ai21labs/Jamba-v0.1's size-deciding fields (51.6 B parameters).
JAMBA = {
    "architectures": ["JambaForCausalLM"], "model_type": "jamba", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 65536, "num_experts": 16, "num_experts_per_tok": 2,
    "expert_layer_period": 2, "expert_layer_offset": 1, "attn_layer_period": 8, "attn_layer_offset": 4,
    "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256, "tie_word_embeddings": False,
}
SMALL_NEMOTRON_H = {
    "model_type": "nemotron_h", "torch_dtype": "bfloat16", "hidden_size": 256, "num_hidden_layers": 4,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 512,
    "vocab_size": 1024, "mamba_num_heads": 8, "mamba_head_dim": 32, "n_groups": 4, "ssm_state_size": 16,
    "hybrid_override_pattern": "M-*-",
}


def test_jamba_as_published():
    spec = ModelSpec.from_hf_config(JAMBA)
    assert abs(spec.num_parameters() / 1e9 - 51.6) < 0.1


# Configs transformers or vLLM refuse (issue 22): each was sized as some other model.
@pytest.mark.parametrize(("config", "field", "words"), [
    # transformers' JambaConfig._check_supported_offset; at the period: 9.29 B, or no attention.
    ({**JAMBA, "expert_layer_offset": 2}, "expert_layer_offset", "must be smaller than expert layer period (2"),
    ({**JAMBA, "attn_layer_offset": 8}, "attn_layer_offset", "must be smaller than attention layer period (8"),
    ({**JAMBA, "attn_layer_offset": -1}, "attn_layer_offset", "not negative"),
    # vLLM's NemotronHMoE reads the expert fields for every E layer.
    ({**SMALL_NEMOTRON_H, "hybrid_override_pattern": "ME*E"}, "n_routed_experts", "MoE layers (E)"),
    # vLLM's SSD kernels: "nheads must be divisible by ngroups".
    ({**SMALL_NEMOTRON_H, "n_groups": 3}, "n_groups", "nheads must be divisible by ngroups"),
    # Mistral3Config.spatial_merge_size: 2.5 was read as the default 2.
    ({"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "spatial_merge_size": 2.5,
      "text_config": {"head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768, "model_type": "mistral",
                      "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
                      "vocab_size": 131072},
      "torch_dtype": "bfloat16", "vision_config": {"head_dim": 64, "hidden_size": 1024, "image_size": 1540,
                                                   "intermediate_size": 4096, "model_type": "pixtral",
                                                   "num_attention_heads": 16, "num_channels": 3,
                                                   "num_hidden_layers": 24, "patch_size": 14}},
     "spatial_merge_size", "must be a positive integer, got 2.5"),
])
def test_inconsistent_hybrid_configs_are_refused_by_field(config, field, words):
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        ModelSpec.from_hf_config(config)
    assert e.value.field == field
    assert words in str(e.value)


def test_mamba2_groups_that_do_not_divide_tp_must_be_one():
    # MambaMixer2's assertion: 4 groups at TP 8 were replicated to 8 as if they were 1.
    with pytest.raises(vllm_mem.InvalidArgumentError, match="num_groups must equal 1") as e:
        kv_cache_capacity(SMALL_NEMOTRON_H, GIB, max_model_len=1024, tensor_parallel_size=8,
                          enable_prefix_caching=False)
    assert e.value.field == "tensor_parallel_size"


@pytest.mark.parametrize("tokens", [False, 0.0, True])
def test_num_speculative_tokens_is_an_int_on_every_path(tokens):
    # False and 0.0 equal 0, so they once took the positional fast path unchecked.
    spec = ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    with pytest.raises(TypeError, match="num_speculative_tokens"):
        kv_cache_capacity(spec, GIB, max_model_len=1024, num_speculative_tokens=tokens)


@pytest.mark.parametrize("how", ["keywords", "request object", "plan"])
def test_prefix_caching_on_a_hybrid_needs_the_mamba_cache_mode(how: str) -> None:
    # Up to 0.27 vLLM picks 'all' or 'align' itself by a flag of the model class: refused by name
    # with mode "none" on every entry point, planned once the mode is given. (From 0.28 it picks
    # 'align' for every class: test_hybrid_prefix_caching_default.py.)
    spec = ModelSpec.from_hf_config(NEMOTRON_NANO_9B_V2)

    def ask(**settings: object) -> object:
        settings["vllm_version"] = "0.27.0"
        if how == "keywords":
            return kv_cache_capacity(spec, 20 * GIB, max_model_len=8192, **settings)
        if how == "request object":
            return kv_cache_capacity(spec, 20 * GIB, settings=KvCacheSettings(max_model_len=8192, **settings))
        return vllm_mem.plan(spec, gpu="H100-80GB", max_model_len=8192, **settings)

    with pytest.raises(vllm_mem.InvalidArgumentError, match="mamba_cache_mode='all' or 'align'") as err:
        ask(enable_prefix_caching=True)
    assert err.value.field == "enable_prefix_caching"
    assert ask(enable_prefix_caching=True, mamba_cache_mode="align") is not None
    assert ask(enable_prefix_caching=False) is not None
