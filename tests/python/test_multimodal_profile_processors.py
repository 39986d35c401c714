"""vLLM's multimodal profile run for the processors beyond Gemma-3 and Mistral-3
(csrc/core/model/vision_profile_item.cc, csrc/core/plan/mm_profile_estimate.cc), by hand from vLLM's
source; from the code, no log: no public v0.17+ start-up of these families prints its peak with its
settings. docs/planner.md "Multimodal profile run" has the rules.

Qwen-VL:
- The largest image (vllm/model_executor/models/qwen2_vl.py Qwen2VLProcessingInfo, reused by
  qwen2_5_vl.py and qwen3_vl.py): transformers' smart_resize of a 9999999 x 9999999 image within the
  published preprocessor_config.json's max_pixels (12,845,056 for Qwen2-VL / Qwen2.5-VL, size
  longest_edge 16,777,216 for Qwen3-VL), at a factor of patch x merge: a 3584^2 (patch 14) or 4096^2
  (patch 16) image, 256^2 = 65,536 patches, 16,384 tokens.
- The budget (vllm/multimodal/encoder_budget.py): max(max_num_batched_tokens, 16,384) = 16,384
  tokens, one image item.
- Resident beside the text phases: the pixel_values (patches x C x T x p x p in the model dtype) and
  the cached embeddings (16,384 x text width; Qwen3-VL's tower returns its merger output and one
  DeepStack feature per deepstack_visual_indexes entry side by side: 1 + 3 text-width rows).
- The encoder phase: the pixels + the largest block's live set per patch (the docstring of
  QwenBlockElementsPerToken in mm_profile_estimate.cc) + the float32 rotary table (patches x
  head_dim / 2 x 4 B) + Qwen3-VL's DeepStack features (3 x 16,384 x out_hidden_size).

LLaVA:
- LLaVA (vllm/model_executor/models/llava.py LlavaProcessingInfo): the largest image is one
  image_size square; the CLIP tower runs (336 / 14)^2 + 1 = 577 tokens, vision_feature_select_strategy
  "default" keeps 576 features, one placeholder each.
- LLaVA-NeXT (llava_next.py LlavaNextProcessingInfo.get_image_size_with_most_features): the
  image_grid_pinpoints canvas with the most tokens; for the default canvases and CLIP-336 that is
  672 x 672: 2 x 2 tiles + the base image = 5 tiles of 577 tower tokens, 576 base features +
  48 x 48 unpadded features + 48 newlines = 2,928 tokens.
- The encoder layer is the CLIP / SigLIP rule: 2 h + max(2 I, 4 h / tp) elements a token.

InternVL (vllm/model_executor/models/internvl.py: InternVLProcessingInfo.
get_image_size_with_most_features over the target ratios, resolve_internvl_min_max_num,
get_internvl_num_patches): the largest image fills max_dynamic_patch tiles of 448 x 448 plus a
thumbnail tile (use_thumbnail, the image being split): InternVL2.5's published configs say dynamic_image_size true,
max_dynamic_patch 12, use_thumbnail true: 13 tiles, each (448 / 14)^2 = 1,024 patches and the class
token in InternViT, pixel-shuffled by downsample_ratio 0.5 to 256 embeddings: 3,328 tokens an image.
The encoder layer is the default rule, 2 h + max(2 I, 4 h / tp) elements a token.

Llama-4 (vllm/model_executor/models/mllama4.py Mllama4ProcessingInfo, Mllama4MultiModalProcessor;
transformers' Llama4Processor._prompt_split_image and Llama4ImageProcessorFast, max_patches 16 by
default): the largest image is 16 x 336 by 336 (get_image_size_with_most_features), fitted unscaled on
the 16 x 1 canvas: 16 tiles and the global tile, 17 tiles of (336 / 14)^2 = 576 patches and the class
token in the tower; the pixel shuffle (ratio 0.5) leaves 576 / 4 = 144 embeddings a tile, 2,448 an
image; the placeholder is <|image_start|>, 16 rows of 144 <|patch|> and a <|tile_y_separator|>,
<|image|>, 144 <|patch|>, <|image_end|>: 2,467 tokens. The encoder layer per tower token, past the
first layer (Llama4LayerElementsPerToken in mm_profile_estimate.cc): the tower's input and the layer's
(2 h), then attention's normed input, qkv and the rotary's float32 q / k copies, their complex64
products and the bf16 copies back (h + 13 h / tp), or the MLP's attention sum, normed input and
fc1 + GELU outputs (2 h + 2 I / tp).

Kimi-VL (vllm/model_executor/models/kimi_vl.py KimiVLProcessingInfo.get_num_image_tokens,
KimiVLDummyInputsBuilder; moonvit.py; the published preprocessor_config.json's KimiVLImageProcessor,
in_token_limit 4096, pad_input true): the dummy is MaxImageTokenMeta's 1024 x 1024 image;
(1024 // 14)^2 = 5,329 patches pass 4096, so each side is scaled by sqrt(4096 / 5329) = 64 / 73 to
int(897.75) = 897 and padded up to a multiple of 2 x 14: 924, 66 x 66 = 4,356 patches of 3 x 14 x 14
pixels, merged 2 x 2 into 33 x 33 = 1,089 embeddings, one <|media_pad|> each. MoonViT's layer per
patch past the first (the Llama-4 rule at TP 1, the linears replicated as the weights are counted):
the tower's input and the layer's, norm0's output, wqkv's and apply_rope's float32 q / k, complex64
products and the copies back (16 h), or the MLP's 4 h + 2 I; plus the complex64 rotary tables
(Rope2DPosEmb's cached 512 x 512 grid and the batch's rows, head_dim / 2 x 8 B each). Releases before
0.14 (vllm_versions.json moonvit_dense_attention_mask) attend through torch SDPA over a [1, N, N] bool
mask on 3-D q / k / v: the math path's float32 scores, its softmax, _safe_softmax's -inf test and
torch.where (13 x heads x N^2 bytes) beside the float32 q / k / v (16 h a patch), and the mask with
SDPA's additive copy in the model dtype (3 x N^2 bytes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from test_families_hybrid import INTERNVL2_5_1B, LLAVA_1_5_7B, QWEN3_VL_8B


def _profile(config: dict[str, Any], **settings: Any) -> dict[str, int]:
    base = {"gpu": "H100-80GB", "max_model_len": 8192, "max_num_batched_tokens": 8192, "max_num_seqs": 256}
    plan = vllm_mem.plan(config, **{**base, **settings})
    assert plan.multimodal_profile is not None
    return plan.multimodal_profile


def _profile_4k(config: dict[str, Any], **settings: Any) -> dict[str, int]:
    return _profile(config, **{"max_model_len": 4096, **settings})


# ---- Qwen2-VL, Qwen2.5-VL, Qwen3-VL ---------------------------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "data"
MM_CONFIGS = {k: v["config"] for k, v in json.loads((DATA / "multimodal_configs.json").read_text()).items()}
QWEN25_VL_7B = MM_CONFIGS["Qwen/Qwen2.5-VL-7B-Instruct"]
BF16 = 2  # bytes per element of bf16 / fp16 (LLaVA-1.5 is float16)
PATCHES = 256 * 256  # one largest image: 3584 / 14 = 4096 / 16 = 256 patches a side
TOKENS = PATCHES // 4  # merged 2 x 2


def test_qwen25_vl_7b_one_image_by_hand() -> None:
    m = _profile(QWEN25_VL_7B)
    assert m["runs"] == 1 and m["encoder_budget_tokens"] == TOKENS == 16384 and m["items"] == 1
    assert m["pixel_bytes"] == PATCHES * 3 * 2 * 14 * 14 * BF16  # 154,140,672
    assert m["encoder_output_bytes"] == TOKENS * 3584 * BF16  # 117,440,512
    # Qwen2.5-VL's tower, h 1280, I 3420, 16 heads of 80, TP 1: attention 3 h + 8 h = 14,080; RMSNorm's
    # float32 sum 8 h = 10,240; the SiLU MLP 4 h + 4 I = 18,800 elements a patch (the largest); the
    # rotary table 40 x 4 B a patch.
    assert m["encoder_layer_bytes"] == PATCHES * (4 * 1280 + 4 * 3420) * BF16 + PATCHES * 40 * 4
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]  # 2.45 GiB
    assert m["resident_bytes"] == m["pixel_bytes"] + m["encoder_output_bytes"]


def test_qwen25_vl_tensor_parallel_splits_the_mlp() -> None:
    m = _profile(QWEN25_VL_7B, tensor_parallel_size=2)
    # TP 2: I / 2 = 1710; attention 3 h + 4 h = 8,960, norm 10,240, MLP 4 h + 4 x 1710 = 11,960.
    assert m["encoder_layer_bytes"] == PATCHES * (4 * 1280 + 4 * 1710) * BF16 + PATCHES * 40 * 4
    assert m["pixel_bytes"] == PATCHES * 1176 * BF16  # every rank encodes the whole image


def test_qwen3_vl_8b_deepstack_by_hand() -> None:
    m = _profile(QWEN3_VL_8B)
    assert m["encoder_budget_tokens"] == 16384 and m["items"] == 1
    assert m["pixel_bytes"] == PATCHES * 3 * 2 * 16 * 16 * BF16  # 201,326,592
    # The merger row and three DeepStack rows of the text width 4096 per token.
    assert m["encoder_output_bytes"] == TOKENS * (1 + 3) * 4096 * BF16  # 536,870,912
    # h 1152, I 4304, 16 heads of 72: attention with the position embeddings 3 h + 8 h + h = 13,824
    # (the largest; the GELU MLP 3 h + 2 I = 12,064); rotary 36 x 4 B; three DeepStack features of
    # 16,384 x 4096.
    block = PATCHES * 12 * 1152 * BF16
    assert m["encoder_layer_bytes"] == block + PATCHES * 36 * 4 + 3 * TOKENS * 4096 * BF16


def test_peak_is_the_encoder_phase_for_one_large_image() -> None:
    """At these settings the tower's run over 65,536 patches (2.45 GiB) is above the text phases with
    the pixels and embeddings beside them: the plan's peak is the encoder phase."""
    plan = vllm_mem.plan(
        QWEN25_VL_7B, gpu="H100-80GB", max_model_len=8192, max_num_batched_tokens=8192, max_num_seqs=256
    )
    a = plan._p.ranks[0].activation
    assert a.multimodal.encoder_phase_bytes > max(a.forward_bytes, a.sampler_phase_bytes) + a.multimodal.resident_bytes
    assert plan.activation_peak_bytes - a.pipeline_buffers_bytes == a.multimodal.encoder_phase_bytes


@pytest.mark.parametrize("config", [QWEN25_VL_7B, QWEN3_VL_8B], ids=["qwen2.5-vl", "qwen3-vl"])
def test_no_profiling_caveat_and_the_switches_turn_it_off(config: dict[str, Any]) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert not any("profiling" in c for c in spec.caveats)
    for setting in ({"limit_mm_per_prompt": 0}, {"skip_mm_profiling": True}, {"language_model_only": True}):
        assert _profile(config, **setting)["runs"] == 0, setting


def test_a_longer_batch_takes_the_image_whole() -> None:
    """Images only: max_num_batched_tokens 32768 holds two 16,384-token images: the budget is the batch,
    and the decoder side allows max_model_len // 16384 = 2 per prompt. (With video on, vLLM profiles
    the 4-frame video of 32,768 tokens instead: test_mm_settings.py.)"""
    m = _profile(QWEN25_VL_7B, max_model_len=32768, max_num_batched_tokens=32768, limit_mm_per_prompt={"video": 0})
    assert m["encoder_budget_tokens"] == 32768 and m["items"] == 2
    assert m["pixel_bytes"] == 2 * PATCHES * 1176 * BF16


# ---- LLaVA-1.5, LLaVA-NeXT ------------------------------------------------------------------------

CLIP_TOKENS = 24 * 24 + 1  # 336 / 14 = 24 patches a side, plus the class token
CLIP_LAYER = 2 * 1024 + max(2 * 4096, 4 * 1024)  # h 1024, I 4096
# LLaVA-NeXT's wrapper over llava-1.5's sizes (a built config, not a published file): LlavaNextConfig's
# default image_grid_pinpoints and select strategy are filled from config_defaults.json.
LLAVA_NEXT = {**LLAVA_1_5_7B, "architectures": ["LlavaNextForConditionalGeneration"], "model_type": "llava_next"}
LLAVA_NEXT.pop("vision_feature_select_strategy")


def test_llava_1_5_by_hand() -> None:
    assert vllm_mem.ModelSpec.from_hf_config(LLAVA_1_5_7B).caveats == []
    m = _profile_4k(LLAVA_1_5_7B)
    # budget max(8192, 576) = 8192: 8192 // 576 = 14 images (the decoder side allows 256 x 7)
    assert m["encoder_budget_tokens"] == 8192 and m["items"] == 14
    assert m["pixel_bytes"] == 14 * 3 * 336 * 336 * BF16
    assert m["encoder_output_bytes"] == 14 * 576 * 4096 * BF16
    assert m["encoder_layer_bytes"] == 14 * CLIP_TOKENS * CLIP_LAYER * BF16
    full = _profile_4k({**LLAVA_1_5_7B, "vision_feature_select_strategy": "full"})
    assert full["encoder_output_bytes"] == (8192 // 577) * 577 * 4096 * BF16  # the class token kept


def test_llava_next_default_canvases_by_hand() -> None:
    m = _profile_4k(LLAVA_NEXT)
    # 2,928 tokens an image: 8192 // 2928 = 2 images, the decoder side max(1, 4096 // 2928) = 1 x 256
    assert m["encoder_budget_tokens"] == 8192 and m["items"] == 2
    assert m["pixel_bytes"] == 2 * 5 * 3 * 336 * 336 * BF16
    assert m["encoder_output_bytes"] == 2 * 2928 * 4096 * BF16
    assert m["encoder_layer_bytes"] == 2 * 5 * CLIP_TOKENS * CLIP_LAYER * BF16
    # One 1008 x 336 canvas alone: 3 x 1 tiles + base, 576 + 72 x 24 + 72 = 2,376 tokens.
    tall = _profile_4k({**LLAVA_NEXT, "image_grid_pinpoints": [[1008, 336]]})
    assert tall["encoder_output_bytes"] == (8192 // 2376) * 2376 * 4096 * BF16


# ---- InternVL --------------------------------------------------------------------------------------

TILE_TOKENS = 32 * 32 + 1  # InternViT's patches and class token per 448 x 448 tile
VIT_LAYER = 2 * 1024 + max(2 * 4096, 4 * 1024)  # InternViT-300M: h 1024, I 4096
# The tiling fields of OpenGVLab/InternVL2_5-1B's published config.json (dynamic tiling with a thumbnail).
TILED = {
    **INTERNVL2_5_1B,
    "dynamic_image_size": True,
    "max_dynamic_patch": 12,
    "min_dynamic_patch": 1,
    "use_thumbnail": True,
}


def test_internvl2_5_tiled_by_hand() -> None:
    assert vllm_mem.ModelSpec.from_hf_config(TILED).caveats == []
    m = _profile_4k(TILED)
    # 13 x 256 = 3,328 tokens: 8192 // 3328 = 2 images (the decoder side allows 256 x 1)
    assert m["encoder_budget_tokens"] == 8192 and m["items"] == 2
    assert m["pixel_bytes"] == 2 * 13 * 3 * 448 * 448 * BF16
    assert m["encoder_output_bytes"] == 2 * 13 * 256 * 896 * BF16  # Qwen2.5-0.5B's width 896
    assert m["encoder_layer_bytes"] == 2 * 13 * TILE_TOKENS * VIT_LAYER * BF16


def test_class_defaults_give_one_tile() -> None:
    """InternVLChatConfig's defaults (dynamic_image_size False): one 448 tile, 256 tokens, 32 images."""
    m = _profile_4k(INTERNVL2_5_1B)
    assert m["items"] == 8192 // 256
    assert m["pixel_bytes"] == 32 * 3 * 448 * 448 * BF16
    no_thumbnail = _profile_4k({**TILED, "use_thumbnail": False})
    assert no_thumbnail["encoder_output_bytes"] == (8192 // 3072) * 12 * 256 * 896 * BF16


MALFORMED = [
    (LLAVA_NEXT, "image_grid_pinpoints", "672x672"),
    (LLAVA_NEXT, "image_grid_pinpoints", [[672]]),
    (LLAVA_NEXT, "image_grid_pinpoints", [[0, 336]]),
    (LLAVA_NEXT, "vision_feature_select_strategy", "cls"),
    (LLAVA_NEXT, "vision_feature_select_strategy", 1),
    (TILED, "max_dynamic_patch", 0),
    (TILED, "max_dynamic_patch", "12"),
    (TILED, "min_dynamic_patch", 13),
    (TILED, "use_thumbnail", "yes"),
    (TILED, "dynamic_image_size", 1),
]


@pytest.mark.parametrize(("config", "field", "value"), MALFORMED)
def test_malformed_processor_fields_are_refused_by_name(config: dict[str, Any], field: str, value: Any) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**config, field: value})
    assert e.value.field == field


# ---- Llama-4 ---------------------------------------------------------------------------------------

LLAMA4_SCOUT = MM_CONFIGS["meta-llama/Llama-4-Scout-17B-16E-Instruct"]
LLAMA4_TILES = 16 + 1  # max_patches 16 one-wide tiles, and the global tile
LLAMA4_TOWER_TOKENS = LLAMA4_TILES * (24 * 24 + 1)  # 9,809
LLAMA4_EMBEDS = LLAMA4_TILES * 144  # 2,448
LLAMA4_PLACEHOLDER = 1 + 16 * (144 + 1) + 1 + 144 + 1  # 2,467
SCOUT_H, SCOUT_I = 1408, 5632  # vision_config hidden_size, intermediate_size


def test_llama4_scout_by_hand() -> None:
    assert vllm_mem.ModelSpec.from_hf_config(LLAMA4_SCOUT).caveats == []
    m = _profile(LLAMA4_SCOUT)
    # budget max(8192, 2467) = 8192: 8192 // 2467 = 3 images (the decoder side allows 256 x 3)
    assert m["encoder_budget_tokens"] == 8192 and m["items"] == 3
    assert m["pixel_bytes"] == 3 * LLAMA4_TILES * 3 * 336 * 336 * BF16  # 34,546,176
    assert m["encoder_output_bytes"] == 3 * LLAMA4_EMBEDS * 5120 * BF16  # text width 5120: 75,202,560
    # TP 1: attention 3 h + 13 h = 22,528 elements a token, above the MLP's 4 h + 2 I = 16,896.
    layer = max(3 * SCOUT_H + 13 * SCOUT_H, 4 * SCOUT_H + max(2 * SCOUT_I, SCOUT_I + SCOUT_H))
    assert layer == 22528
    assert m["encoder_layer_bytes"] == 3 * LLAMA4_TOWER_TOKENS * layer * BF16  # 1,325,862,912
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]
    assert m["resident_bytes"] == m["pixel_bytes"] + m["encoder_output_bytes"]


def test_llama4_scout_tensor_parallel_and_a_longer_batch() -> None:
    m = _profile(LLAMA4_SCOUT, tensor_parallel_size=4)
    # TP 4: attention 3 h + 13 h / 4 = 4,224 + 4,576 = 8,800; MLP 4 h + max(2 x 1408, 1408 + 1408) = 8,448.
    assert m["encoder_layer_bytes"] == 3 * LLAMA4_TOWER_TOKENS * 8800 * BF16
    assert m["pixel_bytes"] == 3 * LLAMA4_TILES * 3 * 336 * 336 * BF16  # every rank encodes every tile
    # 16,384 batched tokens: 16384 // 2467 = 6 images.
    longer = _profile(LLAMA4_SCOUT, max_model_len=16384, max_num_batched_tokens=16384)
    assert longer["items"] == 6 and longer["encoder_output_bytes"] == 6 * LLAMA4_EMBEDS * 5120 * BF16


def test_llama4_peak_takes_the_larger_phase() -> None:
    plan = vllm_mem.plan(LLAMA4_SCOUT, gpu="H100-80GB", tensor_parallel_size=4, max_model_len=8192)
    a = plan._p.ranks[0].activation
    text_phase = max(a.forward_bytes, a.sampler_phase_bytes) + a.multimodal.resident_bytes
    assert plan.activation_peak_bytes - a.pipeline_buffers_bytes == max(a.multimodal.encoder_phase_bytes, text_phase)
    for setting in ({"limit_mm_per_prompt": 0}, {"skip_mm_profiling": True}):
        assert _profile(LLAMA4_SCOUT, **setting)["runs"] == 0, setting


@pytest.mark.parametrize(
    ("field", "value"), [("pixel_shuffle_ratio", 0.3), ("pixel_shuffle_ratio", "0.5"), ("image_size", 340)]
)
def test_llama4_tower_fields_vllm_cannot_tile_are_refused(field: str, value: Any) -> None:
    config = {**LLAMA4_SCOUT, "vision_config": {**LLAMA4_SCOUT["vision_config"], field: value}}
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config(config)
    assert e.value.field == f"vision_config.{field}"


# ---- Kimi-VL ---------------------------------------------------------------------------------------

KIMI_VL = MM_CONFIGS["moonshotai/Kimi-VL-A3B-Instruct"]
KIMI_PATCHES = 66 * 66  # 4,356: the 1024 x 1024 dummy scaled to 897, padded to 924, over 14
KIMI_TOKENS = 33 * 33  # 1,089 after the 2 x 2 merge
MOONVIT_H, MOONVIT_I, MOONVIT_HEADS = 1152, 4304, 16  # vision_config hidden, intermediate, heads (head_dim 72)
MOONVIT_LAYER = max(16 * MOONVIT_H, 4 * MOONVIT_H + max(2 * MOONVIT_I, MOONVIT_I + MOONVIT_H))  # 18,432


def _moonvit_rope_bytes(patches: int) -> int:
    return (512 * 512 + patches) * (72 // 2) * 8  # complex64 rows of head_dim / 2


def test_kimi_vl_by_hand() -> None:
    assert vllm_mem.ModelSpec.from_hf_config(KIMI_VL).caveats == []
    m = _profile(KIMI_VL)
    # budget max(8192, 1089) = 8192: 8192 // 1089 = 7 images (the decoder side allows 256 x 7)
    assert m["encoder_budget_tokens"] == 8192 and m["items"] == 7
    assert m["pixel_bytes"] == 7 * KIMI_PATCHES * 3 * 14 * 14 * BF16  # 35,858,592
    assert m["encoder_output_bytes"] == 7 * KIMI_TOKENS * 2048 * BF16  # the text width 2048: 31,223,808
    assert MOONVIT_LAYER == 18432
    patches = 7 * KIMI_PATCHES  # 30,492
    assert m["encoder_layer_bytes"] == patches * MOONVIT_LAYER * BF16 + _moonvit_rope_bytes(patches)
    assert m["attention_mask_bytes"] == 0  # MMEncoderAttention: per-image cu_seqlens
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]  # 1.16 GiB
    assert m["resident_bytes"] == m["pixel_bytes"] + m["encoder_output_bytes"]
    # The linears are replicated (as the weights are counted): TP 2 holds the same layer.
    assert _profile(KIMI_VL, tensor_parallel_size=2)["encoder_layer_bytes"] == m["encoder_layer_bytes"]


def test_kimi_vl_sdpa_releases_hold_the_scores() -> None:
    # 2,048 batched tokens: max(2048, 1089) // 1089 = 1 image, N = 4,356 patches.
    m = _profile(KIMI_VL, vllm_version="0.13.0", max_num_batched_tokens=2048, max_model_len=2048)
    n = KIMI_PATCHES
    assert m["items"] == 1
    assert m["attention_mask_bytes"] == n * n * (1 + BF16)
    scores = 13 * MOONVIT_HEADS * n * n  # 3,946,645,248
    assert m["encoder_layer_bytes"] == n * 16 * MOONVIT_H * BF16 + scores + _moonvit_rope_bytes(n)
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["attention_mask_bytes"] + m["encoder_layer_bytes"]
    packed = _profile(KIMI_VL, vllm_version="0.14.0", max_num_batched_tokens=2048, max_model_len=2048)
    assert packed["attention_mask_bytes"] == 0
    assert packed["encoder_layer_bytes"] == n * MOONVIT_LAYER * BF16 + _moonvit_rope_bytes(n)
    # At 8,192 batched tokens the seven images' scores (13 x 16 x 30,492^2 B, 180 GiB) fit no GPU: the
    # profile-run OOM users of those releases report (vllm#17952, MoonshotAI/Kimi-VL#57).
    assert not vllm_mem.plan(KIMI_VL, gpu="H100-80GB", max_model_len=8192, vllm_version="0.13.0").fits


def test_kimi_vl_in_token_limit_as_a_processor_kwarg() -> None:
    # mm_processor_kwargs {"in_token_limit": 16384} (Kimi-VL-A3B-Thinking-2506's 3.2 M pixels, if that
    # is its value): the 1024 image is not scaled, 1036 / 14 = 74 patches a side, 37 x 37 = 1,369 tokens.
    m = _profile(KIMI_VL, mm_processor_kwargs={"in_token_limit": 16384})
    assert m["items"] == 8192 // 1369 == 5
    assert m["encoder_output_bytes"] == 5 * 1369 * 2048 * BF16
    assert m["pixel_bytes"] == 5 * 74 * 74 * 3 * 14 * 14 * BF16
    with pytest.raises(vllm_mem.NotModelledError):
        _profile(KIMI_VL, mm_processor_kwargs={"max_pixels": 1003520})
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        _profile(KIMI_VL, mm_processor_kwargs={"in_token_limit": 0})
    assert e.value.field == "mm_processor_kwargs.in_token_limit"


def test_kimi_vl_peak_takes_the_larger_phase() -> None:
    plan = vllm_mem.plan(KIMI_VL, gpu="H100-80GB", max_model_len=8192)
    a = plan._p.ranks[0].activation
    text_phase = max(a.forward_bytes, a.sampler_phase_bytes) + a.multimodal.resident_bytes
    assert plan.activation_peak_bytes - a.pipeline_buffers_bytes == max(a.multimodal.encoder_phase_bytes, text_phase)
    assert plan.to_dict()["caveats"] == []
