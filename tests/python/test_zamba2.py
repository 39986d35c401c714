"""Zamba2 (model_type zamba2): Mamba-2 on every layer plus shared transformer blocks run at the hybrid
layers, sized as vLLM builds it (vllm/model_executor/models/zamba2.py; state shapes from
vllm/model_executor/layers/mamba/mamba_utils.py mamba2_state_shape) with transformers' Zamba2Config
deriving attention_hidden_size = 2 * hidden_size, attention_head_dim = 2 * hidden_size / heads and
mamba_headdim = mamba_expand * hidden_size / n_mamba_heads. The parameter count is checked against a
published figure, the KV pages and state against vLLM's arithmetic worked out here by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest
import vllm_mem

GIB = 1 << 30


def _blocks(hybrid: list[int], layers: int) -> list[str]:
    return ["hybrid" if i in hybrid else "mamba" for i in range(layers)]


# Zyphra/Zamba2-1.2B's config.json (transformers' Zamba2Config fields) as a review packet of that repo at
# revision 6b05bf2 lists it (code-index id 63096618373): hidden 2048, 38 layers with the shared block at
# layers 5, 11, ..., 35, 32 heads (MHA), d_ff 8192, vocab 32000, 4096 positions, RoPE, tied embeddings;
# Mamba-2 d_state 128, 1 group, 64 heads of 64, d_conv 4, chunk 256; one shared block, adapter rank 128,
# attention width 4096. use_shared_attention_adapter is true: the model card ("a LoRA projector to each
# shared MLP and attention block"), and the count below holds only with the q/k/v adapters.
ZAMBA2_1_2B: dict[str, Any] = {
    "architectures": ["Zamba2ForCausalLM"],
    "model_type": "zamba2",
    "torch_dtype": "bfloat16",
    "hidden_size": 2048,
    "num_hidden_layers": 38,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "intermediate_size": 8192,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "layers_block_type": _blocks([5, 11, 17, 23, 29, 35], 38),
    "mamba_d_state": 128,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_ngroups": 1,
    "n_mamba_heads": 64,
    "chunk_size": 256,
    "use_conv_bias": True,
    "add_bias_linear": False,
    "hidden_act": "gelu",
    "num_mem_blocks": 1,
    "use_shared_attention_adapter": True,
    "use_shared_mlp_adapter": True,
    "adapter_rank": 128,
    "use_mem_rope": True,
    "rope_theta": 10000,
    "tie_word_embeddings": True,
}
# The parameters of the loaded Zyphra/Zamba2-1.2B-Instruct-v2 checkpoint (the same dimensions), as an
# experiment recorded them (model_freeze.parameters, code-index id 68663342081).
PUBLISHED_1_2B_PARAMETERS = 1_215_064_704

# Zyphra/Zamba2-2.7B-Instruct-v2's config.json (https://huggingface.co/Zyphra/Zamba2-2.7B-Instruct-v2/blob/main/
# config.json): the fields that decide the KV cache and the Mamba state.
ZAMBA2_2_7B_KV: dict[str, Any] = {
    "model_type": "zamba2",
    "torch_dtype": "bfloat16",
    "hidden_size": 2560,
    "num_hidden_layers": 54,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "intermediate_size": 10240,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "layers_block_type": _blocks([6, 12, 18, 24, 30, 36, 42, 47, 51], 54),
    "mamba_d_conv": 4,
    "mamba_d_state": 64,
    "mamba_expand": 2,
    "mamba_headdim": 64,
    "mamba_ngroups": 1,
    "n_mamba_heads": 80,
    "attention_head_dim": 160,
    "attention_hidden_size": 5120,
    "num_mem_blocks": 2,
}


def test_parameter_count_equals_the_published_figure() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(ZAMBA2_1_2B)
    assert spec.has_exact_rules and "zamba2" in vllm_mem.supported_model_types()
    assert spec.num_parameters() == PUBLISHED_1_2B_PARAMETERS


def test_parameters_tensor_by_tensor() -> None:
    h, layers, inner, heads, state, ff, rank = 2048, 38, 4096, 64, 128, 8192, 128
    # MambaMixer2: in_proj (z, x, B, C, dt), conv1d with bias over (x, B, C), A / D / dt_bias, the gated
    # RMSNorm over inner, out_proj; plus the decoder layer's RMSNorm.
    conv_dim = inner + 2 * state
    mamba = h * (2 * inner + 2 * state + heads) + conv_dim * 4 + conv_dim + 3 * heads + inner + inner * h + h
    # The shared block, once: RMSNorm(2h) and RMSNorm(h), qkv over the 2h input, o_proj, gate_up / down.
    block = 2 * h + h + 2 * h * 3 * 2 * h + 2 * h * h + h * 2 * ff + ff * h
    # Per hybrid position: ReplicatedLinear(h, h), the MLP adapter (h -> rank -> 2 ff), q/k/v adapters.
    position = h * h + (h * rank + rank * 2 * ff) + 3 * (2 * h * rank + rank * 2 * h)
    expected = 32000 * h + layers * mamba + block + 6 * position + h  # tied head, final norm
    assert expected == PUBLISHED_1_2B_PARAMETERS


def test_weight_bytes_as_vllm_allocates_them() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(ZAMBA2_1_2B)
    # bf16 parameters, MambaMixer2's A in float32 (64 per layer), and the rotary cos/sin cache of the
    # shared attention (get_rope over 4096 positions x attention_head_dim 128, bf16).
    assert spec.weight_bytes() == 2 * PUBLISHED_1_2B_PARAMETERS + 38 * 64 * 2 + 4096 * 128 * 2
    no_rope = vllm_mem.ModelSpec.from_hf_config({**ZAMBA2_1_2B, "use_mem_rope": False})
    assert spec.weight_bytes() - no_rope.weight_bytes() == 4096 * 128 * 2


def _state_bytes(inner: int, groups: int, heads: int, head_dim: int, state: int, tp: int) -> int:
    # mamba2_state_shape: groups that do not divide TP are extended to it (one group: tp groups).
    groups = groups if groups % tp == 0 else groups + tp - groups
    return (4 - 1) * (inner + 2 * groups * state) // tp * 2 + heads // tp * head_dim * state * 2


@pytest.mark.parametrize(
    ("config", "attention_layers", "state_args"),
    [(ZAMBA2_1_2B, 6, (4096, 1, 64, 64, 128)), (ZAMBA2_2_7B_KV, 9, (5120, 1, 80, 64, 64))],
    ids=["1.2B", "2.7B"],
)
@pytest.mark.parametrize("tp", [1, 2])
def test_state_kv_pages_and_block_size_by_hand(
    config: dict[str, Any], attention_layers: int, state_args: tuple[int, ...], tp: int
) -> None:
    cap = vllm_mem.kv_cache_capacity(config, 8 * GIB, max_model_len=4096, tensor_parallel_size=tp,
                                     enable_prefix_caching=False)
    state = _state_bytes(*state_args, tp)
    assert cap.mamba_state_bytes == state
    # Each hybrid position has its own Attention: num_attention_heads / tp KV heads (no GQA) of
    # attention_head_dim = 2 * hidden / heads, K and V in bf16.
    head_dim = 2 * config["hidden_size"] // config["num_attention_heads"]
    per_token = 2 * (config["num_attention_heads"] // tp) * head_dim * 2
    block = 16 * math.ceil(state / (16 * per_token))
    assert cap.attention_block_size == block
    full = [g for g in cap.groups if g.kind == "full_attention"]
    assert sum(len(g.layer_indices) for g in full) == attention_layers
    assert full[0].page_size_bytes == block * per_token
    # Every layer keeps a Mamba-2 state: groups of the attention layers' count.
    mamba_groups = math.ceil(config["num_hidden_layers"] / attention_layers)
    assert [g.kind for g in cap.groups].count("mamba") == mamba_groups
    assert cap.num_blocks == 8 * GIB // (block * per_token * attention_layers)


def test_one_shared_block_is_held_once_whatever_the_positions() -> None:
    # Two more hybrid positions add two ReplicatedLinears and two adapter sets, not another block.
    more = {**ZAMBA2_1_2B, "layers_block_type": _blocks([1, 3, 5, 11, 17, 23, 29, 35], 38)}
    h, ff, rank = 2048, 8192, 128
    position = h * h + (h * rank + rank * 2 * ff) + 3 * (2 * h * rank + rank * 2 * h)
    assert vllm_mem.ModelSpec.from_hf_config(more).num_parameters() == PUBLISHED_1_2B_PARAMETERS + 2 * position


def test_pipeline_parallelism_is_refused_with_vllms_message() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(ZAMBA2_1_2B)
    with pytest.raises(NotImplementedError, match="Supported models implement the `SupportsPP` interface"):
        spec.weight_bytes(pipeline_parallel_size=2)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"hidden_act": "silu"}, "hidden_act"),  # Zamba2MLP: "Only GELU activation is supported"
        ({"layers_block_type": ["mamba"] * 37}, "layers_block_type"),
        ({"layers_block_type": ["mamba"] * 37 + ["attention"]}, "layers_block_type"),
        ({"n_mamba_heads": 60}, "n_mamba_heads"),  # 4096 / 60: no head dim
    ],
)
def test_configs_vllm_cannot_build_are_refused_by_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**ZAMBA2_1_2B, **change})
    assert e.value.field == field


def test_plans_end_to_end() -> None:
    plan = vllm_mem.plan(ZAMBA2_1_2B, gpu="L4", max_model_len=4096, enable_prefix_caching=False)
    assert plan.fits and plan.kv_cache is not None
    assert plan.kv_cache.attention_block_size == 80  # 16 * ceil(1,074,688 / (16 * 16,384))
