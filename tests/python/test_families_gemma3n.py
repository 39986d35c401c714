"""Gemma-3n (model_type gemma3n / gemma3n_text) sized as vLLM builds it.

Weights follow vllm/model_executor/models/gemma3n.py module by module (Gemma3nAltUp, Gemma3nLaurelBlock,
Gemma3nMLP, Gemma3nAttention, Gemma3nDecoderLayer, Gemma3nSelfDecoder, Gemma3nTextModel, Gemma3nForCausalLM)
and gemma3n_mm.py (Gemma3nForConditionalGeneration's per_layer_embeddings buffer, its two
Gemma3nMultimodalEmbedders, the vision tower timm builds and transformers' Gemma3nAudioEncoder). The KV cache follows
Gemma3nAttention's kv_sharing_target_layer_name and gpu_model_runner.py get_kv_cache_spec, which gives a
layer with a sharing target no KV cache spec. Each figure below is worked out here by hand from those
modules, and checked against a published figure where one exists.
"""

from __future__ import annotations

from typing import Any

import pytest
import vllm_mem

GIB = 1 << 30


def _layer_types(layers: int) -> list[str]:
    # transformers Gemma3nTextConfig: every 5th layer is full attention, the others slide.
    return ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(layers)]


# google/gemma-3n-E2B-it's language model (text_config): hidden 2048, 30 layers, MLP 8192 on every layer,
# 8 heads of 256 over 2 KV heads, sliding window 512, vocab 262400, per-layer embeddings 256 wide over
# 262144 rows, LAuReL rank 64, 4 AltUp streams, the last 10 layers sharing KV, 32768 positions, as a
# conversion of the E2B checkpoint writes them down (get_model_config_e2b, code-index id 11451679499).
# The rope bases (1e6 global, 1e4 local) are the same file's rotary_base per layer kind.
E2B_TEXT: dict[str, Any] = {
    "model_type": "gemma3n_text",
    "torch_dtype": "bfloat16",
    "hidden_size": 2048,
    "num_hidden_layers": 30,
    "intermediate_size": [8192] * 30,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "vocab_size": 262400,
    "vocab_size_per_layer_input": 262144,
    "hidden_size_per_layer_input": 256,
    "laurel_rank": 64,
    "altup_num_inputs": 4,
    "altup_active_idx": 0,
    "altup_coef_clip": 120.0,
    "altup_correct_scale": True,
    "num_kv_shared_layers": 10,
    "sliding_window": 512,
    "layer_types": _layer_types(30),
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0,
    "hidden_activation": "gelu_pytorch_tanh",
    "final_logit_softcapping": 30.0,
    "activation_sparsity_pattern": [0.95] * 10 + [0.0] * 20,
}
# google/gemma-3n-E4B-it's language model: 35 layers, MLP 16384, the last 15 layers sharing KV, the rest as
# E2B (get_model_config_e4b, the same file).
E4B_TEXT: dict[str, Any] = {
    **E2B_TEXT,
    "num_hidden_layers": 35,
    "intermediate_size": [16384] * 35,
    "num_kv_shared_layers": 15,
    "layer_types": _layer_types(35),
    "activation_sparsity_pattern": [0.95] * 10 + [0.0] * 25,
}
# Published language-model sizes (the checkpoints' model.safetensors.index.json could not be read here; these
# count the text decoder alone, without the vision and audio towers): E2B "text parameters 4.46b" in a
# text-only export of google/gemma-3n-E2B-it (maceip/gemma3n-executorch e2b/README_HF.md, "included:
# language_model, lm_head"); E4B "6.9B" on LM Studio's page of its text-only GGUF
# (https://lmstudio.ai/models/google/gemma-3n-e4b, "GGUFs are currently text-only"). Rounded as published.
PUBLISHED_E2B_TEXT = (4.46e9, 0.005e9)
PUBLISHED_E4B_TEXT = (6.9e9, 0.05e9)


def _hand_parameters(c: dict[str, Any]) -> int:
    """The language model's parameters, module by module as vLLM's gemma3n.py builds them."""
    h, layers, p, n = c["hidden_size"], c["num_hidden_layers"], c["hidden_size_per_layer_input"], c["altup_num_inputs"]
    heads, kv, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    widths = c["intermediate_size"] if isinstance(c["intermediate_size"], list) else [c["intermediate_size"]] * layers
    attention = h * (heads + 2 * kv) * d + heads * d * h + 2 * d  # qkv_proj, o_proj, q_norm + k_norm (v_norm: none)
    altup = n * n + n * n * n + h * n + h + h  # correction / prediction coefs, router, router_norm, output scale
    laurel = h * c["laurel_rank"] * 2 + h  # linear_left, linear_right, post_laurel_norm
    per_layer = 2 * h * p  # per_layer_input_gate, per_layer_projection
    norms = 5 * h  # input, post_attention, pre_feedforward, post_feedforward, post_per_layer_input
    decoder = sum(attention + 3 * h * w + altup + laurel + per_layer + norms for w in widths)  # gate_up + down
    embed = c["vocab_size"] * h  # embed_tokens, also the LM head (compute_logits reads embed_tokens)
    per_layer_embed = c["vocab_size_per_layer_input"] * layers * p + h * layers * p + p  # table, projection, norm
    altup_projections = 2 * (n - 1) * h * h  # altup_projections + altup_unembed_projections
    return decoder + embed + per_layer_embed + altup_projections + h  # + the final norm


@pytest.mark.parametrize(
    ("config", "published"), [(E2B_TEXT, PUBLISHED_E2B_TEXT), (E4B_TEXT, PUBLISHED_E4B_TEXT)], ids=["E2B", "E4B"]
)
def test_language_model_counts_by_hand_and_published(config: dict[str, Any], published: tuple[float, float]) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules and spec.caveats == []
    assert spec.num_parameters() == _hand_parameters(config)
    figure, rounding = published
    assert abs(spec.num_parameters() - figure) <= rounding


def test_e2b_tensor_parallel_bytes_by_hand() -> None:
    # TP 2: qkv / o / MLP / LAuReL / the column-parallel projections split; AltUp, the per-layer gate and
    # projection and the norms replicated; both vocab-parallel tables split by rows; correct_output_scale
    # float32. Everything else bf16.
    spec = vllm_mem.ModelSpec.from_hf_config(E2B_TEXT)
    one = spec.weight_breakdown(dtype="bfloat16")["per_pp_rank"][0]
    two = spec.weight_breakdown(dtype="bfloat16", tensor_parallel_size=2)["per_pp_rank"][0]
    h, layers, p = 2048, 30, 256
    split_per_layer = (2048 * 12 * 256 + 8 * 256 * 2048 + 3 * 2048 * 8192 + 2 * 2048 * 64) * 2  # bytes, TP 1
    split_model = (262400 * h + 262144 * layers * p + h * layers * p + 6 * h * h) * 2
    assert one["total_bytes"] - two["total_bytes"] == (layers * split_per_layer + split_model) // 2
    # The float32 AltUp scale: 4 bytes per element where the other norms take 2.
    # Per layer: five norms, AltUp's router_norm, LAuReL's norm; beside them per_layer_projection_norm, norm.
    assert one["norm_bytes"] == (layers * (5 * h + h + h) + p + h) * 2 + layers * h * 4


def test_kv_sharing_matches_vllms_runner_test() -> None:
    # vLLM tests/v1/worker/test_gpu_model_runner.py test_init_kv_cache_with_kv_sharing_valid: two layers of
    # 8 KV heads x 64 in 16-bit, layer 1 reading layer 0's cache: 20 GiB holds 655360 blocks of 32 KiB
    # (327680 without sharing), and the longest length that fits 5 GiB is 2 x 1310720. Here as a two-layer
    # Gemma-3n whose last layer is KV-shared (full attention: target layer 2 - 1 - 1 = 0).
    tiny = {
        **E2B_TEXT,
        "torch_dtype": "float16",
        "hidden_size": 512,
        "num_hidden_layers": 2,
        "intermediate_size": [1024, 1024],
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 1024,
        "vocab_size_per_layer_input": 1024,
        "layer_types": ["full_attention", "full_attention"],
        "num_kv_shared_layers": 1,
        "activation_sparsity_pattern": [0.0, 0.0],
        "max_position_embeddings": 4_000_000,  # the runner test sets max_model_len 3,000,000
    }
    shared = vllm_mem.kv_cache_capacity(tiny, 20 * GIB, max_model_len=4096)
    assert shared.num_blocks == 655360
    assert [list(g.layer_indices) for g in shared.groups] == [[0]]
    assert vllm_mem.kv_cache_capacity({**tiny, "num_kv_shared_layers": 0}, 20 * GIB, max_model_len=4096).num_blocks == (
        327680
    )
    assert vllm_mem.estimate_max_model_len(tiny, 5 * GIB, max_model_len=3_000_000) == 2 * 1310720


def test_e2b_kv_cache_by_hand() -> None:
    # Layers 20-29 share (first shared layer 30 - 10 = 20; sliding ones read layer 18, full ones layer 19):
    # the KV cache holds layers 0-19, 16 sliding (window 512) and 4 full, each 2 KV heads x 256 x K,V x 2 bytes
    # per token: 20 x 2048 = 40,960 bytes per token instead of 30 x 2048.
    spec = vllm_mem.ModelSpec.from_hf_config(E2B_TEXT)
    assert [layer.kv_shared for layer in spec.layers] == [False] * 20 + [True] * 10
    assert "24/30 sliding-window layers, 10 KV-shared layers" in repr(spec)
    cap = vllm_mem.kv_cache_capacity(spec, 8 * GIB, max_model_len=32768)
    held = sorted(i for g in cap.groups for i in g.layer_indices)
    assert held == list(range(20))
    full = [i for g in cap.groups if g.kind == "full_attention" for i in g.layer_indices]
    assert sorted(full) == [4, 9, 14, 19]
    page = cap.groups[0].block_size * 2 * 2 * 256 * 2
    assert all(g.page_size_bytes == page for g in cap.groups)
    # vLLM's grouping (kv_cache_utils): 4 full and 16 sliding layers -> group_size 4, five groups of four;
    # a block holds one page of each of the group_size tensors, and every group takes its own blocks.
    assert len(cap.groups) == 5 and all(len(g.layer_indices) == 4 for g in cap.groups)
    assert cap.bytes_per_block == 4 * page
    assert cap.num_blocks == 8 * GIB // (4 * page)
    assert len(cap.groups) * cap.bytes_per_block // cap.block_size == 40_960


def test_kv_sharing_needs_a_target_before_the_shared_layers() -> None:
    # Gemma3nAttention shares only when first_kv_shared_layer_idx - offset >= 0 (offset 2 sliding, 1 full).
    # Five layers (4 sliding, 1 full) with 4 shared: first = 1; sliding layers 1-3 would read layer -1, so
    # they keep their own cache; the full layer 4 reads layer 0.
    five = {
        **E2B_TEXT,
        "num_hidden_layers": 5,
        "intermediate_size": [8192] * 5,
        "layer_types": _layer_types(5),
        "num_kv_shared_layers": 4,
        "activation_sparsity_pattern": [0.0] * 5,
    }
    spec = vllm_mem.ModelSpec.from_hf_config(five)
    assert [layer.kv_shared for layer in spec.layers] == [False, False, False, False, True]
    # Every layer shared: no layer has a target, so none shares.
    every = vllm_mem.ModelSpec.from_hf_config({**five, "num_kv_shared_layers": 5})
    assert not any(layer.kv_shared for layer in every.layers)


def test_matformer_per_layer_widths() -> None:
    # A MatFormer sub-model of E4B (pranjal-pravesh/gemma-3n-E3B's card: "FFN hidden dimensions:
    # [2_048 * 4] x 15, [2_048 * 8] x 10, [2_048 * 4] x 5, [2_048 * 8] x 5"): vLLM builds each layer's
    # Gemma3nMLP with intermediate_size[layer].
    widths = [8192] * 15 + [16384] * 10 + [8192] * 5 + [16384] * 5
    e3b = {**E4B_TEXT, "intermediate_size": widths}
    spec = vllm_mem.ModelSpec.from_hf_config(e3b)
    assert spec.num_parameters() == _hand_parameters(e3b)
    assert spec.intermediate_size == 16384  # the widest sizes the activations
    uniform = vllm_mem.ModelSpec.from_hf_config(E4B_TEXT)
    narrower = sum(1 for w in widths if w == 8192)
    mlp_bytes = uniform.weight_breakdown(dtype="bfloat16")["per_pp_rank"][0]["mlp_bytes"]
    e3b_bytes = spec.weight_breakdown(dtype="bfloat16")["per_pp_rank"][0]["mlp_bytes"]
    assert mlp_bytes - e3b_bytes == narrower * 3 * 2048 * (16384 - 8192) * 2


def _wrapper(text: dict[str, Any]) -> dict[str, Any]:
    # Gemma3nForConditionalGeneration's config.json shape: the language model under text_config, the
    # MobileNet-V5 tower named by vision_config.architecture (transformers Gemma3nVisionConfig), the USM
    # conformer's sizes under audio_config (Gemma3nAudioConfig); absent fields take those classes' defaults.
    return {
        "architectures": ["Gemma3nForConditionalGeneration"],
        "model_type": "gemma3n",
        "text_config": text,
        "vision_config": {"model_type": "gemma3n_vision", "architecture": "mobilenetv5_300m_enc"},
        "audio_config": {"model_type": "gemma3n_audio"},
    }


# timm 1.0.31's mobilenetv5_300m_enc (timm/models/mobilenetv5.py _gen_mobilenet_v5, MobileNetV5Encoder): the
# parameters of the module timm.create_model builds, stem 1,856 + stages 1,492,608 + 2,439,168 + 63,407,744 +
# 211,540,480 + multi-scale fusion adapter 15,245,056 (model_families.json timm_vision_towers). Whole on every
# tensor-parallel rank: vLLM builds it with AutoModel.from_config, a plain torch module.
MOBILENET_V5_300M = 1_856 + 1_492_608 + 2_439_168 + 63_407_744 + 211_540_480 + 15_245_056
# The checkpoints' parameter counts as the Hugging Face API reports them from the safetensors headers
# (?expand[]=safetensors, all BF16): google/gemma-3n-E2B-it 5,439,438,272 and google/gemma-3n-E4B-it
# 7,849,978,192; a derivative's card states the same E2B figure ("5,439,438,272 parameters (safetensors
# metadata)", 10,879,085,840 bytes of BF16 safetensors files). Model cards round them: "raw parameter count
# ... 8B" (E4B), "5B and 8B" (Hugging Face's Gemma 3n blog).
PUBLISHED_E2B_CHECKPOINT = 5_439_438_272
PUBLISHED_E4B_CHECKPOINT = 7_849_978_192


def _embedder(width: int, text_width: int = 2048, vocab: int = 128) -> int:
    # vLLM gemma3n_mm.py Gemma3nMultimodalEmbedder: embedding (vocab x width), hard_embedding_norm and
    # soft_embedding_norm (width), embedding_projection (width -> text width, no bias);
    # embedding_post_projection_norm has no weight (has_weight=False).
    return vocab * width + 2 * width + width * text_width


def _audio_tower(h: int = 1536, layers: int = 12, heads: int = 8, kernel: int = 5) -> int:
    # transformers modeling_gemma3n.py Gemma3nAudioEncoder with Gemma3nAudioConfig's defaults (128 mel bins,
    # sscp channels (128, 32), kernels 3 x 3, strides 2 x 2):
    # subsample_conv_projection: conv_0 (128 x 1 x 3 x 3, no bias) + its cumulative group norm (128), conv_1
    # (32 x 128 x 3 x 3) + norm (32); frequency bins (128 + 2 - 3) // 2 + 1 = 64, then (64 + 2 - 3) // 2 + 1 = 32,
    # so input_proj_linear (32 x 32 -> h).
    sscp = 128 * 9 + 128 + 32 * 128 * 9 + 32 + 32 * 32 * h
    ffw = 2 * 4 * h * h + 2 * h  # ffw_layer_1 / ffw_layer_2 (h <-> 4h), pre / post layer norms
    attention = 5 * h * h + h // heads + 2 * h  # q, k, v, post, relative pos_proj; per_dim_scale; two norms
    light_conv = 2 * h * h + h * kernel + h * h + 2 * h  # linear_start, depthwise conv1d, linear_end; two norms
    return sscp + layers * (2 * ffw + attention + light_conv + h)  # + the block's norm


AUDIO_TOWER_AND_EMBEDDER = _audio_tower() + _embedder(1536)
VISION_TOWER_AND_EMBEDDER = MOBILENET_V5_300M + _embedder(2048)


@pytest.mark.parametrize(
    ("text", "published"),
    [(E2B_TEXT, PUBLISHED_E2B_CHECKPOINT), (E4B_TEXT, PUBLISHED_E4B_CHECKPOINT)],
    ids=["E2B", "E4B"],
)
def test_towers_counted_to_the_checkpoints_parameter_counts(text: dict[str, Any], published: int) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(_wrapper(text))
    assert spec.has_exact_rules
    # Language model (unchanged) + MobileNet-V5 and its embedder + the USM conformer and its embedder.
    assert spec.num_parameters() == _hand_parameters(text) + VISION_TOWER_AND_EMBEDDER + AUDIO_TOWER_AND_EMBEDDER
    assert spec.num_parameters() == published
    breakdown = spec.weight_breakdown(dtype="bfloat16")
    assert breakdown["vision_encoder_parameters"] == VISION_TOWER_AND_EMBEDDER
    assert breakdown["audio_encoder_parameters"] == AUDIO_TOWER_AND_EMBEDDER
    rank = breakdown["per_pp_rank"][0]
    assert rank["vision_encoder_bytes"] == VISION_TOWER_AND_EMBEDDER * 2
    assert rank["audio_encoder_bytes"] == AUDIO_TOWER_AND_EMBEDDER * 2
    # The towers' profile run is modelled too (tests/python/test_gemma3n_profile.py): no caveat left.
    assert spec.caveats == []


def test_tensor_parallel_splits_only_the_embedders() -> None:
    # TP 2: both towers whole on each rank; each embedder's 128 rows (VocabParallelEmbedding, padded to 64s:
    # 128) and its projection (RowParallelLinear: the input width) split, its norms whole.
    spec = vllm_mem.ModelSpec.from_hf_config(_wrapper(E2B_TEXT))
    rank = spec.weight_breakdown(dtype="bfloat16", tensor_parallel_size=2)["per_pp_rank"][0]
    assert rank["vision_encoder_bytes"] == (MOBILENET_V5_300M + (128 * 2048 + 2048 * 2048) // 2 + 2 * 2048) * 2
    assert rank["audio_encoder_bytes"] == (_audio_tower() + (128 * 1536 + 1536 * 2048) // 2 + 2 * 1536) * 2


def test_multimodal_wrapper_counts_the_towers_and_the_per_layer_embedding_buffer() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(_wrapper(E2B_TEXT))
    p = vllm_mem.plan(spec, "H100-80GB", max_model_len=32768, max_num_batched_tokens=8192)
    weights = spec.weight_breakdown()["per_pp_rank"][0]["total_bytes"]
    # gemma3n_mm.py: per_layer_embeddings = torch.zeros(max_num_batched_tokens, layers, 256) in bf16.
    assert p.weights_bytes - weights == 8192 * 30 * 256 * 2
    # The towers add their parameters in bf16 to what the language model alone holds (no audio_config: the
    # towers are not counted, below).
    language_model = dict(_wrapper(E2B_TEXT))
    del language_model["audio_config"]
    alone = vllm_mem.ModelSpec.from_hf_config(language_model).weight_breakdown()["per_pp_rank"][0]["total_bytes"]
    assert weights - alone == (VISION_TOWER_AND_EMBEDDER + AUDIO_TOWER_AND_EMBEDDER) * 2
    # Gemma3nForCausalLM (text only) allocates no such buffer, and has no towers.
    text = vllm_mem.ModelSpec.from_hf_config({**E2B_TEXT, "architectures": ["Gemma3nForCausalLM"]})
    p_text = vllm_mem.plan(text, "H100-80GB", max_model_len=32768, max_num_batched_tokens=8192)
    assert p_text.weights_bytes == text.weight_breakdown()["per_pp_rank"][0]["total_bytes"]


def test_a_limited_modality_drops_its_tower_where_the_release_skips_it() -> None:
    # vLLM 0.15+ builds each tower inside _mark_tower_model(vllm_config, modality) (gemma3n_mm.py: vision tower
    # and embed_vision under "image", audio tower and embed_audio under "audio"): a modality limited to 0
    # leaves its tower unbuilt. Before (0.14) both are built whatever the limits.
    spec = vllm_mem.ModelSpec.from_hf_config(_wrapper(E2B_TEXT))
    settings: dict[str, Any] = {"max_model_len": 32768, "max_num_batched_tokens": 8192, "vllm_version": "0.19.0"}
    full = vllm_mem.plan(spec, "H100-80GB", **settings).weights_bytes
    no_image = vllm_mem.plan(spec, "H100-80GB", limit_mm_per_prompt={"image": 0}, **settings).weights_bytes
    no_audio = vllm_mem.plan(spec, "H100-80GB", limit_mm_per_prompt={"audio": 0}, **settings).weights_bytes
    text_only = vllm_mem.plan(spec, "H100-80GB", language_model_only=True, **settings).weights_bytes
    assert full - no_image == VISION_TOWER_AND_EMBEDDER * 2
    assert full - no_audio == AUDIO_TOWER_AND_EMBEDDER * 2
    assert full - text_only == (VISION_TOWER_AND_EMBEDDER + AUDIO_TOWER_AND_EMBEDDER) * 2
    both_off = {"image": 0, "audio": 0}
    assert vllm_mem.plan(spec, "H100-80GB", limit_mm_per_prompt=both_off, **settings).weights_bytes == text_only
    older = {**settings, "vllm_version": "0.14.0"}
    assert vllm_mem.plan(spec, "H100-80GB", limit_mm_per_prompt=both_off, **older).weights_bytes == (
        vllm_mem.plan(spec, "H100-80GB", **older).weights_bytes
    )


def test_a_checkpoint_without_both_towers_keeps_the_caveat() -> None:
    # Only a config with both sub-configs is counted: without audio_config the family's caveat names what is
    # left out, and only the language model is sized.
    config = _wrapper(E2B_TEXT)
    del config["audio_config"]
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.num_parameters() == _hand_parameters(E2B_TEXT)
    assert len(spec.caveats) == 1 and "MobileNet-V5" in spec.caveats[0] and "not counted" in spec.caveats[0]
    # Still a multimodal model to vLLM: --limit-mm-per-prompt is taken, not refused as on a text model.
    vllm_mem.plan(spec, "H100-80GB", max_model_len=32768, limit_mm_per_prompt={"image": 0})


def test_an_unknown_timm_architecture_is_refused_by_name() -> None:
    config = _wrapper(E2B_TEXT)
    config["vision_config"] = {**config["vision_config"], "architecture": "mobilenetv5_base"}
    with pytest.raises(vllm_mem.NotModelledError, match="mobilenetv5_base"):
        vllm_mem.ModelSpec.from_hf_config(config)
    # timm.create_model keyword arguments would change the blocks counted for the defaults.
    config["vision_config"] = {"architecture": "mobilenetv5_300m_enc", "model_args": {"drop_rate": 0.1}}
    with pytest.raises(vllm_mem.NotModelledError, match="model_args"):
        vllm_mem.ModelSpec.from_hf_config(config)


@pytest.mark.parametrize(
    ("sub", "field", "value"),
    [
        ("vision_config", "architecture", 3),
        ("vision_config", "hidden_size", 1024),  # the tower's output is 2048 wide
        ("vision_config", "vocab_size", "128"),
        ("audio_config", "hidden_size", "1536"),
        ("audio_config", "conf_num_hidden_layers", 0),
        ("audio_config", "conf_num_attention_heads", 7),  # does not divide 1536
        ("audio_config", "conf_conv_kernel_size", -5),
        ("audio_config", "input_feat_size", 1.5),
        ("audio_config", "vocab_size", None),
        ("audio_config", "sscp_conv_channel_size", [128]),
        ("audio_config", "sscp_conv_channel_size", [128, "32"]),
        ("audio_config", "sscp_conv_kernel_size", [[3, 3], [3]]),
        ("audio_config", "sscp_conv_stride_size", "2"),
        ("audio_config", "conf_attention_chunk_size", 0),
        ("audio_config", "conf_attention_context_left", "13"),
        ("audio_config", "conf_attention_context_right", -1),
    ],
)
def test_malformed_tower_fields_are_value_errors_naming_the_field(sub: str, field: str, value: Any) -> None:
    config = _wrapper(E2B_TEXT)
    config[sub] = {**config[sub], field: value}
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config(config)
    assert e.value.field == f"{sub}.{field}"


def test_pipeline_parallelism_is_refused_as_vllm_refuses_it() -> None:
    # Neither Gemma3nForCausalLM nor Gemma3nForConditionalGeneration implements SupportsPP.
    spec = vllm_mem.ModelSpec.from_hf_config(E2B_TEXT)
    with pytest.raises(NotImplementedError, match="SupportsPP"):
        spec.weight_breakdown(pipeline_parallel_size=2)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_kv_shared_layers", "10"),
        ("num_kv_shared_layers", -1),
        ("num_kv_shared_layers", 31),
        ("hidden_size_per_layer_input", "256"),
        ("hidden_size_per_layer_input", 0),
        ("vocab_size_per_layer_input", -5),
        ("altup_num_inputs", 0),
        ("laurel_rank", "64"),
        ("intermediate_size", [8192] * 29),
        ("intermediate_size", [8192] * 29 + ["8192"]),
        ("intermediate_size", [8192] * 29 + [0]),
    ],
)
def test_malformed_gemma3n_fields_are_value_errors_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**E2B_TEXT, field: value})
    assert e.value.field == field


def test_absent_fields_take_transformers_class_defaults() -> None:
    # A published file omits every field equal to Gemma3nTextConfig's default, and those defaults are
    # E4B's (35 layers, MLP 16384 as one int, 15 KV-shared layers, layer_types every 5th full, ...): a file
    # with only model_type and dtype is E4B's language model, not a model without KV sharing.
    bare = vllm_mem.ModelSpec.from_hf_config({"model_type": "gemma3n_text", "torch_dtype": "bfloat16"})
    assert bare.num_parameters() == _hand_parameters(E4B_TEXT)
    assert [layer.kv_shared for layer in bare.layers] == [False] * 20 + [True] * 15
    # The same inside the wrapper (Gemma3nConfig builds text_config with Gemma3nTextConfig), beside the towers
    # Gemma3nVisionConfig's and Gemma3nAudioConfig's defaults describe.
    wrapped = vllm_mem.ModelSpec.from_hf_config(_wrapper({"torch_dtype": "bfloat16"}))
    assert wrapped.num_parameters() == _hand_parameters(E4B_TEXT) + VISION_TOWER_AND_EMBEDDER + AUDIO_TOWER_AND_EMBEDDER


def test_other_activations_are_refused_with_vllms_message() -> None:
    # Gemma3nMLP raises this ValueError for any hidden_activation but gelu_pytorch_tanh.
    with pytest.raises(ValueError, match="Gemma3 uses `gelu_pytorch_tanh` as the hidden activation") as e:
        vllm_mem.ModelSpec.from_hf_config({**E2B_TEXT, "hidden_activation": "gelu"})
    assert e.value.field == "hidden_activation"  # type: ignore[attr-defined]
    # Gemma3nDecoderLayer reads hidden_activation only: a hidden_act beside it changes nothing.
    assert vllm_mem.ModelSpec.from_hf_config({**E2B_TEXT, "hidden_act": "silu"}).num_parameters() == (
        _hand_parameters(E2B_TEXT)
    )
