"""State-space, hybrid and multimodal families added as data (csrc/core/model/model_families.json
"traits"): each one's parameter count against a published figure and its per-token KV bytes (or
per-request recurrent state) worked out by hand from vLLM's model file, cited per case.
The configs are the published config.json files' memory fields (Hub repo id beside each)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import vllm_mem

GIB = 1 << 30

# https://huggingface.co/state-spaces/mamba-130m-hf/blob/main/config.json. No copy of the file was found;
# its sizes are the ones whose tensor-by-tensor count equals the checkpoint's 129,135,360 parameters
# (code-index ids 66183660417, 49071488734), as do mamba-2.8b-hf's below.
MAMBA_130M = {
    "architectures": ["MambaForCausalLM"], "model_type": "mamba", "conv_kernel": 4, "expand": 2,
    "hidden_size": 768, "intermediate_size": 1536, "layer_norm_epsilon": 1e-05, "num_hidden_layers": 24,
    "state_size": 16, "time_step_rank": 48, "torch_dtype": "float32", "use_bias": False, "use_conv_bias": True,
    "vocab_size": 50280}
# https://huggingface.co/state-spaces/mamba-2.8b-hf/blob/main/config.json
MAMBA_2_8B = {**MAMBA_130M, "hidden_size": 2560, "intermediate_size": 5120, "num_hidden_layers": 64,
              "time_step_rank": 160}
# https://huggingface.co/tiiuae/falcon-mamba-7b/blob/main/config.json. Seen: hidden 4096, 64 layers,
# intermediate 8192, vocab 65024, untied, state 16, conv 4, time_step_rank 256 and expand 16 (added here;
# intermediate_size wins over it, as in transformers) in code-index id 65865534003 (FALCON_MAMBA_7B_HF).
# Not confirmed: mixer_rms_eps, use_bias / use_conv_bias.
FALCON_MAMBA_7B = {
    "architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba", "conv_kernel": 4, "expand": 16,
    "hidden_size": 4096, "intermediate_size": 8192, "layer_norm_epsilon": 1e-05, "mixer_rms_eps": 1e-06,
    "num_hidden_layers": 64, "state_size": 16, "tie_word_embeddings": False, "time_step_rank": 256,
    "torch_dtype": "bfloat16", "use_bias": False, "use_conv_bias": True, "vocab_size": 65024}


# ---------------------------------------------------------------------------------------------
# mamba / falcon_mamba: vllm/model_executor/models/mamba.py (MambaDecoderLayer = MambaMixer + RMSNorm;
# IsAttentionFree), vllm/model_executor/layers/mamba/mamba_mixer.py, mamba_utils.py
# (MambaStateShapeCalculator.mamba1_state_shape: conv (I/tp, conv_kernel - 1), ssm (I/tp, state_size)).

@pytest.mark.parametrize(("config", "published", "unit"), [
    # 129,135,360: state-spaces/mamba-130m-hf at revision 5708daa3, 242 float32 tensors of
    # 516,541,440 bytes / 4 (quoted in public repos, code-index file ids 66183660417, 49071488734).
    (MAMBA_130M, 129_135_360, 1),
    # 2,768,345,600: the mamba-2.8b-hf entry of the same table (code-index file id 49071488734).
    (MAMBA_2_8B, 2_768_345_600, 1),
    # Model card size "7.27B params" (untied lm_head): to its rounding (not confirmed from a source: recalled).
    (FALCON_MAMBA_7B, 727, 1e7),
], ids=["mamba-130m", "mamba-2.8b", "falcon-mamba-7b"])
def test_mamba_parameter_counts_match_the_published_figures(
        config: dict[str, Any], published: int, unit: float) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules and spec.model_type in vllm_mem.supported_model_types()
    assert round(spec.num_parameters() / unit) == published


def _mamba1_parameters(c: dict[str, Any]) -> int:
    """The checkpoint's tensors, by hand (transformers MambaMixer / vLLM MambaMixer)."""
    h, i, n, k, r = c["hidden_size"], c["intermediate_size"], c["state_size"], c["conv_kernel"], c["time_step_rank"]
    layer = (h * 2 * i  # in_proj (x, z)
             + i * k + i  # conv1d weight + bias
             + i * (r + 2 * n)  # x_proj -> dt, B, C
             + r * i + i  # dt_proj weight + bias
             + i * n + i  # A_log, D
             + i * h  # out_proj
             + h)  # the layer's RMSNorm
    embeddings = c["vocab_size"] * h * (1 if c.get("tie_word_embeddings", True) else 2)
    return embeddings + c["num_hidden_layers"] * layer + h  # + norm_f


@pytest.mark.parametrize("config", [MAMBA_130M, MAMBA_2_8B, FALCON_MAMBA_7B], ids=["130m", "2.8b", "falcon-7b"])
def test_mamba_parameters_tensor_by_tensor(config: dict[str, Any]) -> None:
    assert vllm_mem.ModelSpec.from_hf_config(config).num_parameters() == _mamba1_parameters(config)


def test_falcon_mamba_state_per_request_by_hand() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(FALCON_MAMBA_7B)
    assert spec.num_attention_heads == 0 and spec.num_kv_heads == 0  # attention-free: no KV cache
    cap = vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=8192, enable_prefix_caching=False)
    # One layer's state in bf16: conv (8192, 4 - 1) + ssm (8192, 16), 2 bytes each.
    per_layer = (8192 * 3 + 8192 * 16) * 2
    assert cap.mamba_state_bytes == per_layer == 311_296
    assert [g.kind for g in cap.groups] == ["mamba"]
    # One block holds one request's state in every layer (mamba_cache_mode none).
    assert cap.bytes_per_block == 64 * per_layer
    assert cap.num_blocks == 4 * GIB // (64 * per_layer)
    # TP 2 halves d_inner in both tensors.
    cap2 = vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=8192, tensor_parallel_size=2,
                                      enable_prefix_caching=False)
    assert cap2.mamba_state_bytes == per_layer // 2


def test_mamba_defaults_follow_mamba_config() -> None:
    # transformers MambaConfig: intermediate_size = expand * hidden_size, time_step_rank "auto" =
    # ceil(hidden_size / 16), tie_word_embeddings true unless the file says otherwise.
    sparse = {k: v for k, v in MAMBA_130M.items() if k not in ("intermediate_size",)}
    sparse["time_step_rank"] = "auto"
    assert vllm_mem.ModelSpec.from_hf_config(sparse).num_parameters() == _mamba1_parameters(
        {**MAMBA_130M, "time_step_rank": math.ceil(768 / 16)})
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**MAMBA_130M, "time_step_rank": "wide"})
    assert e.value.field == "time_step_rank"


def test_mamba_plans_end_to_end() -> None:
    plan = vllm_mem.plan(FALCON_MAMBA_7B, gpu="H100", max_model_len=8192, enable_prefix_caching=False)
    assert plan.fits and plan.kv_cache is not None
    weights = vllm_mem.ModelSpec.from_hf_config(FALCON_MAMBA_7B).weight_breakdown(tensor_parallel_size=2)
    assert weights["per_pp_rank"][0]["attention_bytes"] > 0


# ---------------------------------------------------------------------------------------------
# qwen3_vl / qwen3_vl_moe: vllm/model_executor/models/qwen3_vl.py (Qwen3_VisionTransformer: Conv3d
# patch embedding with bias, nn.Embedding position table, LayerNorm blocks with biased qkv / proj /
# linear_fc1 / linear_fc2, the patch merger and one DeepStack merger per deepstack_visual_indexes
# entry; the language model is qwen3.py's) and qwen3_vl_moe.py (qwen3_moe.py's decoder).

def _qwen3_vl_config(text: dict[str, Any], out_hidden_size: int) -> dict[str, Any]:
    vision = {"deepstack_visual_indexes": [8, 16, 24], "depth": 27, "hidden_act": "gelu_pytorch_tanh",
              "hidden_size": 1152, "in_channels": 3, "intermediate_size": 4304, "model_type": "qwen3_vl",
              "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": out_hidden_size,
              "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2}
    rope = {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"}
    return {"architectures": [text.pop("architecture")], "model_type": text.pop("wrapper"),
            "text_config": {"attention_bias": False, "dtype": "bfloat16", "head_dim": 128,
                            "max_position_embeddings": 262144, "rope_scaling": rope, "rope_theta": 5000000,
                            "vocab_size": 151936, **text},
            "tie_word_embeddings": False, "vision_config": vision}


# https://huggingface.co/Qwen/Qwen3-VL-8B-Instruct/blob/main/config.json. Seen, every key here: NVIDIA
# TensorRT-LLM's Qwen3-VL-8B test config (code-index id 56172080016; its one edit, 4 layers, "36 layers for
# full model") and code-index id 60468266955.
QWEN3_VL_8B = _qwen3_vl_config({
    "architecture": "Qwen3VLForConditionalGeneration", "wrapper": "qwen3_vl", "model_type": "qwen3_vl_text",
    "hidden_size": 4096, "intermediate_size": 12288, "num_attention_heads": 32, "num_hidden_layers": 36,
    "num_key_value_heads": 8}, 4096)
# https://huggingface.co/Qwen/Qwen3-VL-30B-A3B-Instruct/blob/main/config.json. Seen, every key here:
# code-index id 62478544309 (hf_30b_a3b_json, text and vision blocks).
QWEN3_VL_30B_A3B = _qwen3_vl_config({
    "architecture": "Qwen3VLMoeForConditionalGeneration", "wrapper": "qwen3_vl_moe",
    "model_type": "qwen3_vl_moe_text", "decoder_sparse_step": 1, "hidden_size": 2048, "intermediate_size": 6144,
    "mlp_only_layers": [], "moe_intermediate_size": 768, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4}, 2048)


def _qwen3_vl_tower(out_hidden_size: int) -> int:
    """Qwen3-VL's tower by hand (vllm qwen3_vl.py), depth 27, width 1152, merged width 4 x 1152."""
    h, inner, merged = 1152, 4304, 4 * 1152
    block = (h * 3 * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h) + 4 * h
    merger = (merged * merged + merged) + (merged * out_hidden_size + out_hidden_size)
    return ((h * 3 * 2 * 16 * 16 + h) + 2304 * h + 27 * block
            + (2 * h + merger)  # the patch merger, LayerNorm over h
            + 3 * (2 * merged + merger))  # three DeepStack mergers, LayerNorm over the merged width


@pytest.mark.parametrize(("config", "published", "kv_bytes_per_token"), [
    # 8,767,123,696: the Hub's safetensors metadata {"BF16": 8767123696} of Qwen/Qwen3-VL-8B-Instruct
    # (quoted in a public repo, code-index file id 62872967919), = the model index's total_size
    # 17,534,247,392 bytes / 2 (id 70717024019). KV (qwen3.py): 36 layers x 8 KV heads x 128 x K,V x 2 B.
    (QWEN3_VL_8B, 8_767_123_696, 36 * 8 * 128 * 2 * 2),
    # 31,070,754,032: Qwen/Qwen3-VL-30B-A3B-Instruct's parameter count as listed by a hosting API
    # and a measured census (code-index file ids 66729435508, 61938983991). KV: 48 x 4 x 128 x 2 x 2.
    (QWEN3_VL_30B_A3B, 31_070_754_032, 48 * 4 * 128 * 2 * 2),
], ids=["qwen3-vl-8b", "qwen3-vl-30b-a3b"])
def test_qwen3_vl_counts_and_kv_by_hand(config: dict[str, Any], published: int, kv_bytes_per_token: int) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules and spec.model_type in vllm_mem.supported_model_types()
    assert spec.num_parameters() == published
    assert spec.vision_encoder_parameters == _qwen3_vl_tower(config["vision_config"]["out_hidden_size"])
    assert not any("vision tower has no rules" in c for c in spec.caveats)
    cap = vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=4096)
    assert cap.bytes_per_block == kv_bytes_per_token * cap.block_size


def test_qwen3_vl_tower_splits_its_linear_layers_over_tp() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(QWEN3_VL_8B)
    tp1 = spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"]
    tp2 = spec.weight_breakdown(tensor_parallel_size=2)["per_pp_rank"][0]["vision_encoder_bytes"]
    assert tp1 == 2 * spec.vision_encoder_parameters
    # Replicated on every rank: the Conv3d, the position table, the norms and the row-parallel biases.
    h, merged = 1152, 4 * 1152
    replicated = ((h * 3 * 2 * 16 * 16 + h) + 2304 * h + 27 * (4 * h + h + h) + 2 * h + 4096
                  + 3 * (2 * merged + 4096))
    assert tp2 == 2 * ((spec.vision_encoder_parameters - replicated) // 2 + replicated)


@pytest.mark.parametrize("indexes", [[8, 16, 27], "8,16,24", [8.5]])
def test_qwen3_vl_deepstack_indexes_are_checked(indexes: Any) -> None:
    bad = {**QWEN3_VL_8B, "vision_config": {**QWEN3_VL_8B["vision_config"], "deepstack_visual_indexes": indexes}}
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config(bad)
    assert e.value.field == "vision_config.deepstack_visual_indexes"


# ---------------------------------------------------------------------------------------------
# llava: vllm/model_executor/models/llava.py (init_vision_tower_for_llava: the CLIP tower up to
# vision_feature_layer, require_post_norm False; LlavaMultiModalProjector linear_1 / linear_2 with
# multimodal_projector_bias); the language model is text_config's (llama.py).

# https://huggingface.co/llava-hf/llava-1.5-7b-hf/blob/main/config.json. No copy of the file was
# found; its sizes are fixed by the exact 7,063,427,072-parameter count below (CLIP ViT-L/14-336 and
# Llama-2-7B with vocab 32064).
LLAVA_1_5_7B = {
    "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "ignore_index": -100,
    "image_token_index": 32000, "projector_hidden_act": "gelu",
    "text_config": {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096, "model_type": "llama",
                    "rms_norm_eps": 1e-05, "torch_dtype": "float16", "vocab_size": 32064,
                    "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
                    "num_hidden_layers": 32, "num_key_value_heads": 32},
    "tie_word_embeddings": False, "torch_dtype": "float16",
    "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                      "model_type": "clip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 24,
                      "patch_size": 14, "projection_dim": 768, "vocab_size": 32000},
    "vision_feature_layer": -2, "vision_feature_select_strategy": "default", "vocab_size": 32064}


def test_llava_1_5_count_and_kv_by_hand() -> None:
    # 7,063,427,072: LlavaForConditionalGeneration(LlavaConfig.from_pretrained("llava-hf/llava-1.5-7b-hf"))
    # parameter count, asserted in public code (code-index file ids 4065502446, 53760140093).
    spec = vllm_mem.ModelSpec.from_hf_config(LLAVA_1_5_7B)
    assert spec.has_exact_rules and spec.num_parameters() == 7_063_427_072
    # CLIP ViT-L/14-336 (303,507,456) + projector: linear_1 1024 -> 4096, linear_2 4096 -> 4096, biased.
    assert spec.vision_encoder_parameters == 303_507_456 + (1024 * 4096 + 4096) + (4096 * 4096 + 4096)
    # vLLM builds 23 of the 24 CLIP layers (vision_feature_layer -2) and no post_layernorm.
    loaded = spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"]
    clip_layer = (1024 * 3072 + 3072) + (1024 * 1024 + 1024) + (1024 * 4096 + 4096) + (4096 * 1024 + 1024) + 4096
    assert loaded == 2 * (spec.vision_encoder_parameters - clip_layer - 2 * 1024)
    # KV (llama.py, fp16): 32 layers x 32 KV heads x 128 x K,V x 2 bytes.
    cap = vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=4096)
    assert cap.bytes_per_block == 32 * 32 * 128 * 2 * 2 * cap.block_size


# ---------------------------------------------------------------------------------------------
# internvl_chat: vllm/model_executor/models/internvl.py (language model from llm_config, read as
# text_config; InternVisionModel with num_hidden_layers + select_layer + 1 layers; mlp1 = LayerNorm,
# Linear, GELU, Linear over the 2 x 2 pixel-shuffled width) and intern_vit.py (class token, Conv2d
# patch embedding with bias, position table, qkv (qkv_bias) / proj, q/k RMSNorms when
# qk_normalization, norm1 / norm2, ls1 / ls2, fc1 / fc2).

def _internvl_config(llm: dict[str, Any], vision: dict[str, Any]) -> dict[str, Any]:
    return {"architectures": ["InternVLChatModel"], "model_type": "internvl_chat", "downsample_ratio": 0.5,
            "force_image_size": 448, "ps_version": "v2", "select_layer": -1, "template": "internvl2_5",
            "torch_dtype": "bfloat16",
            "llm_config": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                           "max_position_embeddings": 32768, "rope_theta": 1000000.0, "sliding_window": 32768,
                           "use_sliding_window": False,
                           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151674, **llm},
            "vision_config": {"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b", "image_size": 448,
                              "num_channels": 3, "patch_size": 14, "layer_norm_eps": 1e-06, **vision}}


VIT_300M = {"hidden_size": 1024, "intermediate_size": 4096, "norm_type": "layer_norm", "num_attention_heads": 16,
            "num_hidden_layers": 24, "qk_normalization": False, "qkv_bias": True}
VIT_6B = {"hidden_size": 3200, "intermediate_size": 12800, "norm_type": "rms_norm", "num_attention_heads": 25,
          "num_hidden_layers": 45, "qk_normalization": True, "qkv_bias": False}
# https://huggingface.co/OpenGVLab/InternVL2_5-1B/blob/main/config.json (InternViT-300M-448px-V2_5 + Qwen2.5-0.5B).
# Seen for the same-shape InternVL3-1B (a printed config, code-index id 23730699571): every vision key
# here and the llm sizes, vocab 151674, untied; that file also has a dynamic rope_scaling (factor 2) and
# max_window_layers 70, which InternVL2_5-1B's is not confirmed to share (neither changes memory).
INTERNVL2_5_1B = _internvl_config({"hidden_size": 896, "intermediate_size": 4864, "max_window_layers": 21,
                                   "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2},
                                  VIT_300M)
# https://huggingface.co/OpenGVLab/InternVL2_5-38B/blob/main/config.json (InternViT-6B-448px-V2_5 + Qwen2.5-32B).
# Not confirmed from a copy of the file (recalled): its sizes are InternViT-6B's and Qwen2.5-32B's, and the
# count equals the published 38,388,164,992 below.
INTERNVL2_5_38B = _internvl_config({"hidden_size": 5120, "intermediate_size": 27648, "max_window_layers": 64,
                                    "num_attention_heads": 40, "num_hidden_layers": 64, "num_key_value_heads": 8},
                                   VIT_6B)


def _intern_vit(v: dict[str, Any]) -> int:
    h, inner, grid = v["hidden_size"], v["intermediate_size"], (448 // 14) ** 2
    layer = ((h * 3 * h + (3 * h if v["qkv_bias"] else 0)) + (h * h + h) + (h * inner + inner) + (inner * h + h)
             + (2 * h if v["norm_type"] == "rms_norm" else 4 * h) + 2 * h + (2 * h if v["qk_normalization"] else 0))
    return h + (h * 3 * 14 * 14 + h) + (grid + 1) * h + v["num_hidden_layers"] * layer


@pytest.mark.parametrize(("config", "published", "kv_bytes_per_token"), [
    # 938,193,024 and 38,388,164,992: the Hub's safetensors metadata (BF16) of OpenGVLab/InternVL2_5-1B
    # and -38B, as tabulated in a public repo (code-index file id 12439498600). KV (qwen2.py):
    # 24 layers x 2 KV heads x 64 x K,V x 2 bytes; 64 x 8 x 128 x 2 x 2.
    (INTERNVL2_5_1B, 938_193_024, 24 * 2 * 64 * 2 * 2),
    (INTERNVL2_5_38B, 38_388_164_992, 64 * 8 * 128 * 2 * 2),
], ids=["internvl2.5-1b", "internvl2.5-38b"])
def test_internvl_counts_and_kv_by_hand(config: dict[str, Any], published: int, kv_bytes_per_token: int) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.model_type == "qwen2" and spec.has_exact_rules
    assert spec.num_parameters() == published
    v, llm_hidden = config["vision_config"], config["llm_config"]["hidden_size"]
    shuffled = 4 * v["hidden_size"]
    mlp1 = 2 * shuffled + (shuffled * llm_hidden + llm_hidden) + (llm_hidden * llm_hidden + llm_hidden)
    assert spec.vision_encoder_parameters == _intern_vit(v) + mlp1
    cap = vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=4096)
    assert cap.bytes_per_block == kv_bytes_per_token * cap.block_size


def test_internvl_select_layer_decides_the_layers_vllm_builds() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config({**INTERNVL2_5_1B, "select_layer": -2})
    everything = 2 * spec.vision_encoder_parameters
    h, inner = 1024, 4096
    layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h) + 4 * h + 2 * h
    assert spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"] == everything - 2 * layer
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**INTERNVL2_5_1B, "select_layer": 24})
    assert e.value.field == "select_layer"
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config(
            {**INTERNVL2_5_1B, "vision_config": {**INTERNVL2_5_1B["vision_config"], "norm_type": "batch"}})
    assert e.value.field == "vision_config.norm_type"


# ---------------------------------------------------------------------------------------------
# lfm2: vllm/model_executor/models/lfm2.py (ShortConv layers and GQA layers with q/k RMSNorms by
# layer_types, a SwiGLU feed-forward on every layer of width int(2 * block_ff_dim / 3) rounded up to
# block_multiple_of, two RMSNorms per layer, embedding_norm, lm_head tied) and
# vllm/model_executor/layers/mamba/short_conv.py (in_proj 3 x conv_dim, conv L_cache x conv_dim,
# out_proj; state (conv_L_cache - 1, conv_dim / tp)).

LFM2_LAYERS = ["conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv",
               "full_attention", "conv", "full_attention", "conv", "full_attention", "conv", "full_attention", "conv"]
# https://huggingface.co/LiquidAI/LFM2-1.2B/blob/main/config.json. Seen (code-index id 59124207504, "the
# REAL LiquidAI/LFM2-1.2B/config.json ... every key the mapper reads is verbatim"): every size here, but
# the file lists full_attn_idxs [2, 5, 8, 10, 12, 14] and no layer_types; the layer_types below are what
# transformers' Lfm2Config builds from it (test_lfm2_layer_types_from_full_attn_idxs reads the published
# spelling).
LFM2_1_2B = {
    "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "block_auto_adjust_ff_dim": True, "block_dim": 2048,
    "block_ff_dim": 12288, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256, "conv_L_cache": 3,
    "conv_bias": False, "conv_dim": 2048, "conv_dim_out": 2048, "hidden_size": 2048, "layer_types": LFM2_LAYERS,
    "max_position_embeddings": 128000, "norm_eps": 1e-05, "num_attention_heads": 32, "num_heads": 32,
    "num_hidden_layers": 16, "num_key_value_heads": 8, "rope_theta": 1000000.0, "torch_dtype": "bfloat16",
    "vocab_size": 65536}


def test_lfm2_count_state_and_kv_by_hand() -> None:
    # 1,170,340,608: transformers' Lfm2ForCausalLM parameter count of LiquidAI/LFM2-1.2B and the
    # GGUF parameter_count (code-index file ids 71489933403, 51995289064, 55778153074).
    spec = vllm_mem.ModelSpec.from_hf_config(LFM2_1_2B)
    assert spec.has_exact_rules and spec.num_parameters() == 1_170_340_608
    assert spec.intermediate_size == 8192  # int(2 * 12288 / 3) = 8192, already a multiple of 256
    cap = vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=8192)
    # ShortConv state per layer in bf16: (3 - 1) x 2048 x 2 bytes.
    assert cap.mamba_state_bytes == 2 * 2048 * 2
    full = [g for g in cap.groups if g.kind == "full_attention"]
    assert sum(len(g.layer_indices) for g in full) == 6
    # GQA (lfm2.py): 8 KV heads x head_dim 64 (2048 / 32) x K,V x 2 bytes per token and layer.
    assert full[0].page_size_bytes == full[0].block_size * 8 * 64 * 2 * 2
    # TP 2 halves conv_dim.
    assert vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=8192,
                                      tensor_parallel_size=2).mamba_state_bytes == 2 * 1024 * 2


def test_lfm2_refuses_mamba_cache_mode_all_as_vllm_does() -> None:
    with pytest.raises(NotImplementedError, match="Lfm2 currently does not support 'all' prefix caching"):
        vllm_mem.kv_cache_capacity(LFM2_1_2B, 4 * GIB, max_model_len=8192, mamba_cache_mode="all")


def test_lfm2_layer_types_from_full_attn_idxs() -> None:
    # transformers Lfm2Config builds layer_types from full_attn_idxs when the file has none.
    by_index = {k: v for k, v in LFM2_1_2B.items() if k != "layer_types"}
    by_index["full_attn_idxs"] = [i for i, t in enumerate(LFM2_LAYERS) if t == "full_attention"]
    assert vllm_mem.ModelSpec.from_hf_config(by_index).num_parameters() == 1_170_340_608
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**LFM2_1_2B, "layer_types": ["conv"] * 15 + ["mamba"]})
    assert e.value.field == "layer_types"


# ---------------------------------------------------------------------------------------------
# Families vLLM serves that vllm_mem still refuses by name (NotImplementedError with the reason).

@pytest.mark.parametrize(("model_type", "words"), [
    ("plamo2", "per-request state"),
    ("minimax", "MiniMaxConfig"),
])
def test_unmodelled_families_are_refused_with_the_reason(model_type: str, words: str) -> None:
    config = {"model_type": model_type, "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 8,
              "vocab_size": 1000, "intermediate_size": 128, "torch_dtype": "bfloat16"}
    with pytest.raises(NotImplementedError, match=words) as e:
        vllm_mem.ModelSpec.from_hf_config(config)
    assert f"'{model_type}'" in str(e.value) and model_type not in vllm_mem.supported_model_types()


def test_internvit_attention_is_replicated_when_tp_does_not_divide_its_heads() -> None:
    # vllm intern_vit.py _init_attn: 25 heads at TP 2 -> InternSdpaAttention (plain Linears, whole on
    # every rank); the MLP (InternMLP) is still column / row split.
    spec = vllm_mem.ModelSpec.from_hf_config(INTERNVL2_5_38B)
    tp1 = spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"]
    tp2 = spec.weight_breakdown(tensor_parallel_size=2)["per_pp_rank"][0]["vision_encoder_bytes"]
    h, inner = 3200, 12800
    mlp_split_away = 45 * ((h * inner + inner) // 2 + (inner * h) // 2)  # fc1 (with bias) and fc2's weight halved
    assert tp1 - tp2 == 2 * mlp_split_away
