"""The ministral3 family (Ministral 3 3B / 8B / 14B; Devstral-2's text model), added as data
(csrc/core/model/model_families.json "ministral3"). vLLM's registry serves Ministral3ForCausalLM as
MistralForCausalLM (vllm/model_executor/models/registry.py: "Ministral3ForCausalLM": ("mistral",
"MistralForCausalLM")), which is LlamaForCausalLM with MistralAttention: the Llama-4 query scaling
(rope_parameters' llama_4_scaling_beta) multiplies the queries and holds no tensor, and the YaRN
rope_parameters only size the rotary cache. The published checkpoints wrap it in
Mistral3ForConditionalGeneration (text_config.model_type "ministral3") with a Pixtral tower and the
Mistral-3 projector, as Mistral-Small-3.1 does.

The configs below are the memory fields of the published config.json files; the Hub was not
reachable, so beside each is where its values were seen, and a value no source showed is marked
"not confirmed"."""

from __future__ import annotations

from typing import Any

import pytest
import vllm_mem

GIB = 1 << 30

# The text sizes of the three checkpoints: NVIDIA-NeMo/Megatron-Bridge
# src/megatron/bridge/models/ministral3/ministral3_provider.py @ 355cef457010f70533a5c83f1ed97899d0e0af43
# (Ministral3ModelProvider: 32 heads, 8 query groups, kv_channels 128, YaRN factor 16 over 16,384,
# untied unless the 3B's share_embeddings_and_output_weights; 3B 3072 / 9216 / 26 layers, 8B 4096 /
# 14336 / 34, 14B 5120 / 16384 / 40 with rotary base 1e9). The 8B's config.json text_config is quoted
# (model_type mistral3 / ministral3, 4096, 34 layers, 32 / 8 heads, head_dim 128, rope_theta 1e6, yarn
# factor 16 over 16,384) in code-index id 23183103280. vocab_size 131072 and max_position_embeddings
# 262144: transformers Ministral3Config's defaults (configuration_ministral3.py), which are the 8B's.
YARN_ROPE = {
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "factor": 16.0,
    "llama_4_scaling_beta": 0.1,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 16384,
    "rope_theta": 1000000.0,
    "rope_type": "yarn",
    "type": "yarn",
}


def _text(hidden: int, intermediate: int, layers: int, tied: bool) -> dict[str, Any]:
    return {
        "model_type": "ministral3",
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "max_position_embeddings": 262144,
        "num_attention_heads": 32,
        "num_hidden_layers": layers,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05,
        "rope_parameters": YARN_ROPE,
        "sliding_window": None,
        "tie_word_embeddings": tied,
        "vocab_size": 131072,
    }


# The Pixtral tower: pixtral, 24 layers, hidden 1024, image_size 1540, patch 14 quoted for the 3B in
# code-index id 63108248622 ("the 0.4B vision encoder" of every size's model card). Not confirmed:
# intermediate_size 4096 and 16 heads (PixtralVisionConfig's defaults, and Mistral-Small-3.1's tower).
PIXTRAL = {
    "model_type": "pixtral",
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 1024,
    "image_size": 1540,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_channels": 3,
    "num_hidden_layers": 24,
    "patch_size": 14,
    "rope_theta": 10000.0,
}


def _wrapped(text: dict[str, Any]) -> dict[str, Any]:
    return {
        "architectures": ["Mistral3ForConditionalGeneration"],
        "model_type": "mistral3",
        "image_token_index": 10,
        "multimodal_projector_bias": False,
        "projector_hidden_act": "gelu",
        "spatial_merge_size": 2,
        "text_config": text,
        "torch_dtype": "bfloat16",
        "vision_config": PIXTRAL,
        "vision_feature_layer": -1,
    }


MINISTRAL3_8B = _wrapped(_text(4096, 14336, 34, tied=False))
MINISTRAL3_14B = _wrapped(_text(5120, 16384, 40, tied=False) | {"rope_parameters": YARN_ROPE | {"rope_theta": 1e9}})
# A text-only Ministral3ForCausalLM file at the 3B's sizes, tied: the shape of
# huggingface.co/rootlocalghost/ERNIE-Image pe/config.json (commit bbcdc2c0: 3072 / 9216 / 26 layers,
# 32 / 8 heads, head_dim 128, these rope_parameters, tie_word_embeddings true).
MINISTRAL3_3B_TEXT = {"architectures": ["Ministral3ForCausalLM"]} | _text(3072, 9216, 26, tied=True)


def _decoder_layer(hidden: int, intermediate: int) -> int:
    """One Llama decoder layer of vLLM's llama.py: q (32 x 128) / k, v (8 x 128) / o, gate / up /
    down, two RMSNorms."""
    q, kv = 32 * 128, 8 * 128
    return hidden * q + 2 * hidden * kv + q * hidden + 3 * hidden * intermediate + 2 * hidden


def _language_model(hidden: int, intermediate: int, layers: int, tied: bool) -> int:
    embedding = 131072 * hidden
    return layers * _decoder_layer(hidden, intermediate) + embedding * (1 if tied else 2) + hidden


def _vision(text_hidden: int) -> int:
    """Pixtral (vllm pixtral.py PixtralHFVisionModel): the 14 x 14 patch conv, ln_pre, 24 layers of
    q/k/v/o (1024 x 1024), gate / up / down (1024 x 4096) and two RMSNorms; then mistral3.py's
    projector: RMSNorm(1024), the 2 x 2 patch merger (4096 -> 1024), linear_1 (1024 -> text) and
    linear_2 (text -> text), no biases (multimodal_projector_bias false)."""
    layer = 4 * 1024 * 1024 + 3 * 1024 * 4096 + 2 * 1024
    tower = 3 * 14 * 14 * 1024 + 1024 + 24 * layer
    projector = 1024 + 4 * 1024 * 1024 + 1024 * text_hidden + text_hidden * text_hidden
    return tower + projector


def test_the_family_is_supported_and_llama_shaped() -> None:
    assert "ministral3" in vllm_mem.supported_model_types()
    spec = vllm_mem.ModelSpec.from_hf_config(MINISTRAL3_8B)
    assert spec.has_exact_rules and spec.model_type == "ministral3"
    assert spec.vision is not None and spec.vision.encoder == "pixtral"


def test_8b_counts_every_tensor_and_matches_the_published_figure() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(MINISTRAL3_8B)
    language, vision = _language_model(4096, 14336, 34, tied=False), _vision(4096)
    assert (language, vision) == (8_489_553_920, 428_472_320)
    assert spec.vision_encoder_parameters == vision
    assert spec.num_parameters() == language + vision == 8_918_026_240
    # mistralai/Ministral-3-8B-Instruct-2512-BF16: 8,918,000,000 parameters, the Hub's count to 0.1M as a
    # benchmark roster records it (code-index id 71494238893); the model card's "8.4B Language Model,
    # 0.4B Vision Encoder" rounds down. The Mistral-Small-3.1 tower under a 5120-wide projector is the
    # published 24,011,361,280 less its language model (tests/python/test_multimodal_weights.py).
    assert round(spec.num_parameters(), -5) == 8_918_000_000
    assert round(spec.vision_encoder_parameters / 1e9, 1) == 0.4


def test_14b_and_3b_counts_match_their_model_cards() -> None:
    # "13.5B Language Model + 0.4B Vision Encoder" (ministral3_provider.py's Ministral3ModelProvider14B
    # docstring, quoting the model card); the 3B: "3.4B Language Model", tied embeddings counted once.
    spec = vllm_mem.ModelSpec.from_hf_config(MINISTRAL3_14B)
    language = _language_model(5120, 16384, 40, tied=False)
    assert spec.num_parameters() - spec.vision_encoder_parameters == language == 13_506_073_600
    assert spec.vision_encoder_parameters == _vision(5120)
    assert (round(language / 1e9, 1), round(spec.vision_encoder_parameters / 1e9, 1)) == (13.5, 0.4)
    text_3b = vllm_mem.ModelSpec.from_hf_config(MINISTRAL3_3B_TEXT)
    assert text_3b.vision is None and text_3b.tie_word_embeddings
    assert text_3b.num_parameters() == _language_model(3072, 9216, 26, tied=True) == 3_429_006_336
    assert round(text_3b.num_parameters() / 1e9, 1) == 3.4


@pytest.mark.parametrize(
    ("config", "tp", "bytes_per_token"),
    [
        # 34 layers x 8 KV heads x 128 x (K + V) x bf16 = 139,264: the figure by which the v0.21.0 L40S
        # start-up's 27.91 GiB hold 13,447 blocks of 16 (tests/data/vllm_release_logs.json).
        (MINISTRAL3_8B, 1, 34 * 8 * 128 * 2 * 2),
        # 40 layers x 4 KV heads a rank x 128 x 2 x 2 = 81,920 at TP 2 (the v0.12.0 TP 2 start-up).
        (MINISTRAL3_14B, 2, 40 * 4 * 128 * 2 * 2),
        (MINISTRAL3_3B_TEXT, 1, 26 * 8 * 128 * 2 * 2),
    ],
    ids=["8b", "14b-tp2", "3b-text"],
)
def test_kv_bytes_per_token_by_hand(config: dict[str, Any], tp: int, bytes_per_token: int) -> None:
    cap = vllm_mem.kv_cache_capacity(config, 8 * GIB, max_model_len=8192, tensor_parallel_size=tp, dtype="bfloat16")
    assert len(cap.groups) == 1  # every layer full attention: sliding_window null, no layer_types
    (group,) = cap.groups
    assert group.page_size_bytes * len(group.layer_indices) == group.block_size * bytes_per_token


def test_absent_fields_take_ministral3configs_defaults() -> None:
    # Inside the Mistral-3 wrapper a text_config that omits a field gets transformers' Ministral3Config
    # default (csrc/core/model/config_defaults.json): untied, head_dim 128 even where hidden / heads is
    # 160, no sliding window.
    text = {k: v for k, v in MINISTRAL3_14B["text_config"].items() if k not in ("head_dim", "tie_word_embeddings")}
    spec = vllm_mem.ModelSpec.from_hf_config(MINISTRAL3_14B | {"text_config": text})
    assert spec.head_dim == 128 and not spec.tie_word_embeddings
    assert spec.num_parameters() == vllm_mem.ModelSpec.from_hf_config(MINISTRAL3_14B).num_parameters()
