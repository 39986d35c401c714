"""vLLM's multimodal settings as vLLM spells them: --limit-mm-per-prompt (a mapping of modality to a
count, or from 0.11 to its dummy options) and --mm-processor-kwargs (the processor's overrides), rows
of the settings table (csrc/core/include/vllm_mem/plan/plan_request.h) read by
csrc/core/plan/mm_settings.cc; what they do to the profile run in csrc/core/plan/mm_profile_estimate.cc.

Sources of the hand figures:
- vllm/model_executor/models/qwen2_vl.py (revision 002d181, the Qwen2VLProcessingInfo that
  qwen2_5_vl.py reuses): _get_vision_info smart_resizes within the image processor's min/max pixels at
  a factor of patch x merge (28), pads frames to the temporal patch (grid_t = (f + f % 2) // 2), and
  counts num_patches // merge^2 tokens; get_num_frames_with_most_features(seq_len, {"video": 1}) is the
  most frames whose tokens fit seq_len, at most _MAX_FRAMES_PER_VIDEO = 14;
- vllm/multimodal/encoder_budget.py MultiModalBudget: every modality left on is asked with one item,
  the modality with the most tokens per item is profiled, budget = max(max_num_batched_tokens, its
  tokens), items = max(1, min(budget // tokens, max_num_seqs x max(1, min(limit, max_model_len //
  tokens))));
- transformers image_processing_qwen2_vl.py smart_resize (Python's round, floor / ceil by beta);
- Qwen/Qwen2.5-VL-7B-Instruct config.json (tests/data/multimodal_configs.json) and
  preprocessor_config.json (min_pixels 3136, max_pixels 12845056; model_families.json
  vision_processors); the Qwen2.5-VL tower's block at TP 1: the SiLU MLP's 4 h + 4 I elements a patch
  (h 1280, I 3420; test_multimodal_profile_processors.py) and the float32 rotary table, 40 x 4 B a patch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import vllm_args
from vllm_mem.cli import main
from vllm_mem.planner.evaluate import PlanRequest

DATA = Path(__file__).resolve().parents[1] / "data"
QWEN25_VL_7B = json.loads((DATA / "multimodal_configs.json").read_text())["Qwen/Qwen2.5-VL-7B-Instruct"]["config"]
GEMMA3_4B = json.loads((DATA / "multimodal_configs.json").read_text())["google/gemma-3-4b-it"]["config"]
BF16 = 2
PATCH_PIXELS = 3 * 2 * 14 * 14  # C x T x p x p = 1,176
TEXT_HIDDEN = 3584
LAYER_PER_PATCH = (4 * 1280 + 4 * 3420) * BF16 + 40 * 4  # the block's MLP set + the rotary table
BASE = {
    "gpu": "H100-80GB",
    "max_model_len": 8192,
    "max_num_batched_tokens": 8192,
    "max_num_seqs": 256,
    "vllm_version": "0.19.0",
}
# From 0.13.0 (vllm_versions.json qwen_vl_image_factor_pair; qwen2_vl.py get_image_size_with_most_features)
# the largest image under max_pixels 1,003,520 at factor 28 is 1,003,520 // 28^2 = 1,280 merged patches split
# into the closest factor pair: isqrt(1280) = 35, and 35, 34, 33 do not divide it, 32 does: 32 x 40, a 896 x
# 1120 image (exactly 1,003,520 pixels, which smart_resize keeps): 64 x 80 = 5,120 patches, 1,280 tokens.
SMALL = {"max_pixels": 1003520}
SMALL_PATCHES, SMALL_TOKENS = 64 * 80, 32 * 40


def _profile(config: dict[str, Any] = QWEN25_VL_7B, **settings: Any) -> dict[str, Any]:
    plan = vllm_mem.plan(config, **{**BASE, **settings})
    assert plan.multimodal_profile is not None
    return plan.multimodal_profile


def _expect(m: dict[str, Any], *, items: int, patches: int, tokens: int) -> None:
    """The run's bytes for `items` dummy items of `patches` patches and `tokens` tokens each."""
    assert m["items"] == items
    assert m["pixel_bytes"] == items * patches * PATCH_PIXELS * BF16
    assert m["encoder_output_bytes"] == items * tokens * TEXT_HIDDEN * BF16
    assert m["encoder_layer_bytes"] == items * patches * LAYER_PER_PATCH
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]


# ---- --mm-processor-kwargs ---------------------------------------------------------------------------


def test_max_pixels_1003520_shrinks_the_image_by_hand() -> None:
    """Images only: budget max(8192, 1280) = 8192 holds 8192 // 1280 = 6 images (the decoder side allows
    256 x min(999, 8192 // 1280) = 1,536), 6 x 5,120 patches."""
    m = _profile(limit_mm_per_prompt={"video": 0}, mm_processor_kwargs=SMALL)
    assert m["modality"] == "image" and m["encoder_budget_tokens"] == 8192
    _expect(m, items=6, patches=SMALL_PATCHES, tokens=SMALL_TOKENS)
    published = _profile(limit_mm_per_prompt={"video": 0})
    _expect(published, items=1, patches=256 * 256, tokens=16384)
    # The run the user lowered max_pixels for is smaller than the published bound's.
    assert m["encoder_phase_bytes"] < published["encoder_phase_bytes"]


def test_largest_image_square_before_0_13_factor_pair_after() -> None:
    """0.12.0's qwen2_vl.py asks smart_resize for a 9999999 x 9999999 image: beta = 9999999 /
    sqrt(1003520), 9999999 / beta / 28 = 35.78 -> 35 x 28 = 980 a side, 70^2 = 4,900 patches, 1,225 tokens
    (8192 // 1225 = 6 images); 0.13.0's factor pair keeps all 1,280 merged patches (SMALL_TOKENS). At the
    published 12,845,056 (16,384 = 128^2 merged patches) both give the 3584^2 image."""
    m = _profile(vllm_version="0.12.0", limit_mm_per_prompt={"video": 0}, mm_processor_kwargs=SMALL)
    assert m["items"] == 6 and m["pixel_bytes"] == 6 * 70 * 70 * PATCH_PIXELS * BF16
    assert m["encoder_output_bytes"] == 6 * 35 * 35 * TEXT_HIDDEN * BF16
    m = _profile(vllm_version="0.13.0", limit_mm_per_prompt={"video": 0}, mm_processor_kwargs=SMALL)
    assert m["items"] == 6 and m["pixel_bytes"] == 6 * SMALL_PATCHES * PATCH_PIXELS * BF16
    assert m["encoder_output_bytes"] == 6 * SMALL_TOKENS * TEXT_HIDDEN * BF16
    for version in ("0.12.0", "0.13.0"):
        published = _profile(vllm_version=version, limit_mm_per_prompt={"video": 0})
        assert published["pixel_bytes"] == 256 * 256 * PATCH_PIXELS * BF16


def test_size_spelling_is_the_same_bound() -> None:
    """transformers' Qwen2VLImageProcessor: size {"shortest_edge", "longest_edge"} is min / max_pixels,
    and max_pixels / min_pixels override it."""
    by_size = _profile(
        limit_mm_per_prompt={"video": 0}, mm_processor_kwargs={"size": {"longest_edge": 1003520, "shortest_edge": 3136}}
    )
    by_pixels = _profile(limit_mm_per_prompt={"video": 0}, mm_processor_kwargs=SMALL)
    assert by_size == by_pixels
    overridden = _profile(
        limit_mm_per_prompt={"video": 0},
        mm_processor_kwargs={"size": {"longest_edge": 12845056, "shortest_edge": 3136}, **SMALL},
    )
    assert overridden == by_pixels
    with pytest.raises(vllm_mem.InvalidArgumentError, match="shortest_edge") as e:
        _profile(mm_processor_kwargs={"size": {"longest_edge": 1003520}})
    assert e.value.field == "mm_processor_kwargs.size"


def test_keys_with_no_memory_effect_are_listed_and_others_refused_by_name() -> None:
    plan = vllm_mem.plan(
        QWEN25_VL_7B,
        **BASE,
        limit_mm_per_prompt={"video": 0},
        mm_processor_kwargs={"do_normalize": False, "use_fast": True, **SMALL},
    )
    assert plan.multimodal_profile["no_effect_kwargs"] == ["do_normalize", "use_fast"]
    assert "mm_processor_kwargs keys with no memory effect: do_normalize, use_fast" in str(plan)
    with pytest.raises(vllm_mem.NotModelledError, match=r"mm_processor_kwargs\.fps"):
        _profile(mm_processor_kwargs={"fps": 2})
    # Gemma-3's processor takes no pixel bound: max_pixels there is not a rule this planner has.
    with pytest.raises(vllm_mem.NotModelledError, match=r"mm_processor_kwargs\.max_pixels"):
        _profile(GEMMA3_4B, mm_processor_kwargs=SMALL)


# ---- --limit-mm-per-prompt ---------------------------------------------------------------------------


def test_image_zero_profiles_the_video_not_text_only() -> None:
    """vLLM's {"image": 0} leaves video on (999): at max_model_len 8192 the video's frames stop at 1
    (2 frames are 16,384 tokens > 8192), one temporal patch: the image's 65,536 patches and 16,384
    tokens. The int form 0 is every modality off: no encoder run."""
    m = _profile(limit_mm_per_prompt={"image": 0})
    assert m["runs"] == 1 and m["modality"] == "video" and m["video_frames"] == 1
    _expect(m, items=1, patches=256 * 256, tokens=16384)
    assert _profile(limit_mm_per_prompt=0)["runs"] == 0
    assert _profile(limit_mm_per_prompt={"image": 0, "video": 0})["runs"] == 0


def test_video_outgrows_the_image_when_its_frames_fit() -> None:
    """max_pixels 1,003,520, video on: frames whose tokens fit 8192 are 12 (ceil(12 / 2) x 1,280 = 7,680;
    13 frames are 7 x 1,280 = 8,960), more than the image's 1,280 tokens, so the video is profiled:
    budget max(8192, 7680) = 8192, one item of 6 x 5,120 patches."""
    m = _profile(mm_processor_kwargs=SMALL)
    assert m["modality"] == "video" and m["video_frames"] == 12 and m["encoder_budget_tokens"] == 8192
    _expect(m, items=1, patches=6 * SMALL_PATCHES, tokens=6 * SMALL_TOKENS)


def test_default_long_context_profiles_a_fourteen_frame_video() -> None:
    """At the model's 128,000 tokens: 14 frames fit (7 x 16,384 = 114,688; 15 frames are 8 x 16,384 =
    131,072), the cap's 14 too; budget 114,688 tokens, one video item of 7 x 65,536 patches."""
    m = _profile(max_model_len=128000)
    assert m["modality"] == "video" and m["video_frames"] == 14 and m["encoder_budget_tokens"] == 114688
    _expect(m, items=1, patches=7 * 65536, tokens=114688)


def test_frames_the_release_cap_decides_are_refused_by_name() -> None:
    """max_pixels 1,003,520 at 32,768 tokens: 52 frames fit, past _MAX_FRAMES_PER_VIDEO, whose value
    other revisions of qwen2_vl.py set otherwise."""
    with pytest.raises(vllm_mem.NotModelledError, match=r"limit_mm_per_prompt\.video"):
        _profile(max_model_len=32768, max_num_batched_tokens=32768, mm_processor_kwargs=SMALL)
    _profile(
        max_model_len=32768, max_num_batched_tokens=32768, mm_processor_kwargs=SMALL, limit_mm_per_prompt={"video": 0}
    )


def test_dummy_size_shrinks_the_item_not_the_budget() -> None:
    """{"image": {"count": 1, "width": 512, "height": 512}}: the budget and the item count are the largest
    image's (16,384 tokens: one item), the encoder runs vLLM's 512 x 512 dummy, which smart_resize makes
    504 x 504 (round(512 / 28) = 18): 36^2 = 1,296 patches, 324 tokens."""
    m = _profile(limit_mm_per_prompt={"image": {"count": 1, "width": 512, "height": 512}, "video": 0})
    assert m["encoder_budget_tokens"] == 16384
    _expect(m, items=1, patches=36 * 36, tokens=324)
    for before in ("0.10.2", "0.11.0"):  # v0.11.0's wheel still has limit_per_prompt: dict[str, int]
        with pytest.raises(vllm_mem.InvalidArgumentError) as e:
            _profile(vllm_version=before, limit_mm_per_prompt={"image": {"count": 1, "width": 512}, "video": 0})
        assert e.value.field == "limit_mm_per_prompt.image", before
    first = _profile(
        vllm_version="0.11.1", limit_mm_per_prompt={"image": {"count": 1, "width": 512, "height": 512}, "video": 0}
    )
    assert first["items"] == 1 and first["pixel_bytes"] == 36 * 36 * PATCH_PIXELS * BF16  # 0.11.1 takes the options
    with pytest.raises(vllm_mem.NotModelledError, match=r"limit_mm_per_prompt\.image"):
        _profile(GEMMA3_4B, limit_mm_per_prompt={"image": {"count": 1, "width": 512, "height": 512}})


def test_int_form_is_images_with_every_other_modality_off() -> None:
    assert _profile(limit_mm_per_prompt=3) == _profile(limit_mm_per_prompt={"image": 3, "video": 0})
    request = PlanRequest(limit_mm_per_prompt=3)
    assert request.limit_mm_per_prompt == 3
    request = request.replace(limit_mm_per_prompt='{"image": 2, "video": 0}')  # vLLM's JSON text
    assert request.limit_mm_per_prompt == {"image": 2, "video": 0}
    assert PlanRequest().limit_mm_per_prompt is None


def test_unknown_modalities_and_wrong_types_name_the_field() -> None:
    for bad, field in (
        ({"audio": 1}, "limit_mm_per_prompt.audio"),
        ({"image": "2"}, "limit_mm_per_prompt.image"),
        ({"image": -1}, "limit_mm_per_prompt.image"),
        ({"image": {"depth": 3}}, "limit_mm_per_prompt.image.depth"),
    ):
        with pytest.raises(vllm_mem.InvalidArgumentError) as e:
            _profile(limit_mm_per_prompt=bad)
        assert e.value.field == field, bad
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:  # Gemma-3's processor takes images only
        _profile(GEMMA3_4B, limit_mm_per_prompt={"video": 0})
    assert e.value.field == "limit_mm_per_prompt.video"
    for bad in ([1], True, 2.5):
        with pytest.raises(TypeError) as t:
            _profile(limit_mm_per_prompt=bad)
        assert t.value.field == "limit_mm_per_prompt"
    with pytest.raises(TypeError) as t:
        _profile(mm_processor_kwargs=5)
    assert t.value.field == "mm_processor_kwargs"
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        _profile(mm_processor_kwargs={"max_pixels": "big"})
    assert e.value.field == "mm_processor_kwargs.max_pixels"


# Qwen3-VL's dummy video from 0.16.0 (vllm qwen3_vl.py Qwen3VLProcessingInfo.get_max_video_tokens and
# Qwen3VLDummyInputsBuilder.get_dummy_mm_data after PR #34330; transformers video_processing_qwen3_vl.py
# smart_resize; the checkpoints' video_preprocessor_config.json size {shortest_edge 4096, longest_edge
# 25,165,824}): two frames of the size with most features under longest_edge // temporal_patch_size =
# 12,582,912 pixels = 12,288 merged 32 x 32 patches, the closest factor pair 96 x 128 (3072 x 4096), which
# 2 frames fit (2 x 3072 x 4096 = 25,165,824): grid 1 x 192 x 256 = 49,152 patches of C x T x p^2 = 1,536
# pixels, 12,288 tokens whatever max_model_len. Qwen3-VL-8B's tower at 0.19.0 (h 1152): 12 h bf16 a patch,
# the float32 rotary table (36 x 4 B), three DeepStack features of 4096 a token; each token's cached row is
# the merger's and the three DeepStack rows (4 x 4096).
Q3_PATCH_PIXELS = 3 * 2 * 16 * 16
Q3_LAYER_PER_PATCH = 12 * 1152 * BF16 + 36 * 4
Q3_TEXT_ROW = 4 * 4096 * BF16


def _expect_qwen3(m: dict[str, Any], *, items: int, patches: int, tokens: int) -> None:
    assert m["items"] == items
    assert m["pixel_bytes"] == items * patches * Q3_PATCH_PIXELS * BF16
    assert m["encoder_output_bytes"] == items * tokens * Q3_TEXT_ROW
    deepstack = 3 * items * (patches // 4) * 4096 * BF16
    assert m["encoder_layer_bytes"] == items * patches * Q3_LAYER_PER_PATCH + deepstack
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]


def test_qwen3_vl_video_images_off_at_32768_by_hand() -> None:
    """{"image": 0} at max_model_len 32,768 and 32,768 batched tokens: the 2-frame video's 12,288 tokens
    (not more frames: the frames do not follow max_model_len), budget max(32768, 12288) = 32,768 holds
    32768 // 12288 = 2 items (decoder side 256 x min(999, 32768 // 12288 = 2)): 2 x 49,152 patches."""
    from test_families_hybrid import QWEN3_VL_8B

    m = _profile(QWEN3_VL_8B, max_model_len=32768, max_num_batched_tokens=32768, limit_mm_per_prompt={"image": 0})
    assert m["modality"] == "video" and m["video_frames"] == 2 and m["encoder_budget_tokens"] == 32768
    _expect_qwen3(m, items=2, patches=49152, tokens=12288)


def test_qwen3_vl_video_dummy_size_shrinks_the_item_not_the_budget() -> None:
    """{"video": {"count": 1, "num_frames": 8, "width": 1000, "height": 700}}, images off, at 8192 tokens:
    the budget is the largest video's (max(8192, 12288) = 12,288: one item); the encoder runs vLLM's
    min(4096, 1000) x min(3072, 700) dummy, which the video processor resizes to round(1000 / 32) = 31 x 32
    = 992 by round(700 / 32) = 22 x 32 = 704: 62 x 44 = 2,728 patches, 682 tokens; num_frames 8 is above
    the 2 frames and ignored (vLLM warns), so 2 frames."""
    from test_families_hybrid import QWEN3_VL_8B

    options = {"count": 1, "num_frames": 8, "width": 1000, "height": 700}
    m = _profile(QWEN3_VL_8B, limit_mm_per_prompt={"image": 0, "video": options})
    assert m["modality"] == "video" and m["video_frames"] == 2 and m["encoder_budget_tokens"] == 12288
    _expect_qwen3(m, items=1, patches=62 * 44, tokens=682)


def test_qwen3_vl_pr_34330_long_video_budget() -> None:
    """PR #34330's test start-up (Qwen3-VL-4B, whose tower's patch 16 and merge 2 are the 8B's):
    --mm-processor-kwargs '{"size": {"longest_edge": 234881024, "shortest_edge": 4096}}'
    --limit-mm-per-prompt.image 0 printed "Encoder cache will be initialized with a budget of 114688
    tokens, and profiled with 1 video items": 234,881,024 // 2 = 114,688 merged patches, the closest
    pair 256 x 448 (8192 x 14336), 2 frames of which fit the bound: 114,688 tokens, 458,752 patches."""
    from test_families_hybrid import QWEN3_VL_8B

    size = {"size": {"longest_edge": 234881024, "shortest_edge": 4096}}
    m = _profile(QWEN3_VL_8B, mm_processor_kwargs=size, limit_mm_per_prompt={"image": 0})
    assert m["modality"] == "video" and m["encoder_budget_tokens"] == 114688
    _expect_qwen3(m, items=1, patches=512 * 896, tokens=114688)


def test_qwen3_vl_max_pixels_bounds_the_video_and_the_image_wins() -> None:
    """{"max_pixels": 1003520}: the image holds about 980 merged patches (961 or 980 tokens by how the
    largest image is found); the video keeps its 3072 x 4096 target (get_max_video_tokens reads size
    only) and the 2 frames are bounded: beta = sqrt(2 x 3072 x 4096 / 1003520), floor(3072 / beta / 32) =
    19 and floor(4096 / beta / 32) = 25 merged patches a side: 38 x 50 = 1,900 patches, 475 tokens, so the
    image is profiled; with images off the video: budget 8192 holds 8192 // 475 = 17 items."""
    from test_families_hybrid import QWEN3_VL_8B

    assert _profile(QWEN3_VL_8B, mm_processor_kwargs=SMALL)["modality"] == "image"
    m = _profile(QWEN3_VL_8B, mm_processor_kwargs=SMALL, limit_mm_per_prompt={"image": 0})
    assert m["modality"] == "video" and m["video_frames"] == 2
    _expect_qwen3(m, items=17, patches=38 * 50, tokens=475)


def test_qwen3_vl_max_pixels_bounds_the_video_target_from_0_32() -> None:
    """vllm 0.32.0 folds max_pixels into the video size the 2-frame target reads (qwen2_vl.py
    _get_vision_size; vllm_versions.json qwen3_vl_dummy_video video_bound_2_frames_pixels): {"max_pixels":
    1003520} bounds the target at 1003520 // 2 = 501,760 pixels, 490 merged patches, the closest pair
    14 x 35 (448 x 1120), which the 2-frame smart_resize keeps (2 x 448 x 1120 = 1,003,520, not above the
    bound): 28 x 70 = 1,960 patches, 490 tokens, 8192 // 490 = 16 items with images off. 0.31.0 keeps the
    3072 x 4096 target (the size dict alone): 475 tokens, 17 items. The image's 980 tokens win either way."""
    from test_families_hybrid import QWEN3_VL_8B

    # enforce_eager: Model Runner V2's graph memory (0.29.0 on) is not modelled, and the profile run precedes it
    images_off = {"mm_processor_kwargs": SMALL, "limit_mm_per_prompt": {"image": 0}, "enforce_eager": True}
    m = _profile(QWEN3_VL_8B, vllm_version="0.32.0", **images_off)
    assert m["modality"] == "video" and m["video_frames"] == 2 and m["encoder_budget_tokens"] == 8192
    _expect_qwen3_item(m, items=16, patches=28 * 70, tokens=490)
    m = _profile(QWEN3_VL_8B, vllm_version="0.31.0", **images_off)
    _expect_qwen3_item(m, items=17, patches=38 * 50, tokens=475)
    both_on = {"mm_processor_kwargs": SMALL, "enforce_eager": True}
    assert _profile(QWEN3_VL_8B, vllm_version="0.32.0", **both_on)["modality"] == "image"


@pytest.mark.parametrize("key", ["cap_pixels_per_frame", "videos_kwargs"])
def test_qwen3_vl_video_frame_cap_and_scoped_kwargs_are_refused_by_name(key: str) -> None:
    """vllm 0.29.0 on: cap_pixels_per_frame in --mm-processor-kwargs spreads the dummy video over more
    than 2 frames, and a nested videos_kwargs overlays the video's bounds (qwen3_vl.py get_dummy_mm_data,
    get_merged_mm_kwargs(modality="video")): neither is modelled, so the plan names the key."""
    from test_families_hybrid import QWEN3_VL_8B

    value: Any = True if key == "cap_pixels_per_frame" else {"max_pixels": 1003520}
    with pytest.raises(vllm_mem.NotModelledError, match=rf"mm_processor_kwargs\.{key}"):
        _profile(QWEN3_VL_8B, vllm_version="0.29.0", enforce_eager=True, mm_processor_kwargs={key: value})


def _expect_qwen3_item(m: dict[str, Any], *, items: int, patches: int, tokens: int) -> None:
    """The item's own bytes (pixels and cached rows), which no tower rule of the release changes."""
    assert m["items"] == items
    assert m["pixel_bytes"] == items * patches * Q3_PATCH_PIXELS * BF16
    assert m["encoder_output_bytes"] == items * tokens * Q3_TEXT_ROW


# Qwen3-VL's dummy video before 0.15.0 (vllm 0.11.0 to 0.14.0 qwen3_vl.py, vllm_versions.json
# qwen3_vl_dummy_video): the image's 4096 x 4096 target video-smart_resized at N frames, N the most frames
# from 2 whose tokens fit max_model_len, at most 24,576 (_MAX_FRAMES_PER_VIDEO). beta = sqrt(n x 4096^2 /
# 25,165,824): 2 frames keep floor(4096 / 1.1547 / 32) = 110 merged patches a side (220^2 = 48,400 patches,
# 12,100 tokens); 3 frames 90 a side over grid_t 2 (16,200 tokens, the most any n reaches), so from
# max_model_len 16,200 every n fits and the cap's 24,576 frames of 32 x 32 are taken (12,288 x 2 x 2 =
# 49,152 patches, 12,288 tokens). 0.11.0 to 0.12.0 budget int(tokens x 12.5).
def test_qwen3_vl_video_0_12_outweighs_the_image_by_its_timestamp_factor() -> None:
    """0.12.0 at the published bounds, both modalities on, max_model_len 8192: the video's budget item is
    int(12,100 x 12.5) = 151,250 tokens against the image's 16,384, so the video is profiled (the shortcut
    this replaces kept the image): budget max(8192, 151,250) = 151,250, one 2-frame item of 48,400 patches
    and 12,100 embeddings. 0.13.0 drops the factor: 12,100 < 16,384 and the image is profiled."""
    from test_families_hybrid import QWEN3_VL_8B

    m = _profile(QWEN3_VL_8B, vllm_version="0.12.0")
    assert m["modality"] == "video" and m["video_frames"] == 2 and m["encoder_budget_tokens"] == 151250
    _expect_qwen3_item(m, items=1, patches=48400, tokens=12100)
    assert _profile(QWEN3_VL_8B, vllm_version="0.13.0")["modality"] == "image"
    m = _profile(QWEN3_VL_8B, vllm_version="0.13.0", limit_mm_per_prompt={"image": 0})
    assert m["modality"] == "video" and m["video_frames"] == 2 and m["encoder_budget_tokens"] == 12100
    _expect_qwen3_item(m, items=1, patches=48400, tokens=12100)


def test_qwen3_vl_video_0_11_pr_30475_budget() -> None:
    """PR #30475's December 2025 print (Qwen3-VL-235B, images off): 153,600 video tokens. 0.11.0 at
    max_model_len 32,768 (>= 16,200): 24,576 frames of 32 x 32, int(12,288 x 12.5) = 153,600 tokens, budget
    max(8192, 153,600) = 153,600, one item of 49,152 patches. 0.11.0 takes no dummy options (its
    limit_per_prompt is dict[str, int]); 0.11.1's builder does: 4 frames, floor(4096 / sqrt(4 / 1.5) / 32)
    = 78 merged patches a side, 2 x 156^2 = 48,672 patches, 12,168 embeddings, the budget's item
    unchanged."""
    from test_families_hybrid import QWEN3_VL_8B

    for version in ("0.11.0", "0.12.0"):
        m = _profile(QWEN3_VL_8B, vllm_version=version, max_model_len=32768, limit_mm_per_prompt={"image": 0})
        assert m["modality"] == "video" and m["video_frames"] == 24576 and m["encoder_budget_tokens"] == 153600
        _expect_qwen3_item(m, items=1, patches=49152, tokens=12288)
    four = {"image": 0, "video": {"count": 1, "num_frames": 4}}
    with pytest.raises(vllm_mem.InvalidArgumentError, match="integer count"):  # 0.11.0: dict[str, int]
        _profile(QWEN3_VL_8B, vllm_version="0.11.0", max_model_len=32768, limit_mm_per_prompt=four)
    m = _profile(QWEN3_VL_8B, vllm_version="0.11.1", max_model_len=32768, limit_mm_per_prompt=four)
    assert m["video_frames"] == 4 and m["encoder_budget_tokens"] == 153600
    _expect_qwen3_item(m, items=1, patches=2 * 156 * 156, tokens=12168)


def test_qwen3_vl_video_with_processor_bounds_before_0_17_is_refused() -> None:
    """Before 0.17.0 the budget's video reads the checkpoint's processor sizes (the processor instance
    drops call-time keys) while the processor call takes --mm-processor-kwargs': not modelled, refused by
    name while the video may be profiled; with videos off, or from 0.17.0, the same settings plan. 0.15.0
    at the published bounds: the 2-frame video's 12,288 tokens against the image's 16,384."""
    from test_families_hybrid import QWEN3_VL_8B

    assert _profile(QWEN3_VL_8B, vllm_version="0.15.0")["modality"] == "image"
    m = _profile(QWEN3_VL_8B, vllm_version="0.15.0", limit_mm_per_prompt={"image": 0})
    assert m["video_frames"] == 2 and m["encoder_budget_tokens"] == 12288
    for version in ("0.11.0", "0.13.0", "0.16.0"):
        with pytest.raises(vllm_mem.NotModelledError, match=r"limit_mm_per_prompt\.video.*0\.17\.0"):
            _profile(QWEN3_VL_8B, vllm_version=version, mm_processor_kwargs=SMALL)
    videos_off = {"limit_mm_per_prompt": {"video": 0}, "mm_processor_kwargs": SMALL}
    assert _profile(QWEN3_VL_8B, vllm_version="0.16.0", **videos_off)["modality"] == "image"
    assert _profile(QWEN3_VL_8B, vllm_version="0.17.0", mm_processor_kwargs=SMALL)["modality"] == "image"


def test_token_tie_goes_to_video_from_0_17() -> None:
    """Qwen2.5-VL-7B at max_model_len 8192: the video's frames stop at 1 (2 frames would be 16,384 > 8192
    tokens), one temporal patch, 16,384 tokens: a tie with the image. 0.16.0's max(key=tokens) keeps the
    first (image), 0.17.0's max(key=(tokens, name)) the video (vllm multimodal/encoder_budget.py
    get_modality_with_max_tokens). The video's dummy options then apply: 1000 x 700 resized to 1008 x 700
    (round(1000 / 28) = 36, round(700 / 28) = 25 merged patches), 72 x 50 = 3,600 patches, 900 tokens."""
    small_video = {"video": {"count": 1, "width": 1000, "height": 700}}
    m = _profile(vllm_version="0.16.0", limit_mm_per_prompt=small_video)
    assert m["modality"] == "image"
    _expect(m, items=1, patches=256 * 256, tokens=16384)
    m = _profile(vllm_version="0.17.0", limit_mm_per_prompt=small_video)
    assert m["modality"] == "video" and m["video_frames"] == 1 and m["encoder_budget_tokens"] == 16384
    _expect(m, items=1, patches=72 * 50, tokens=900)


# ---- every entry point ---------------------------------------------------------------------------------


def test_sweep_takes_the_mappings_fixed_for_every_row() -> None:
    settings = {"limit_mm_per_prompt": {"video": 0}, "mm_processor_kwargs": SMALL}
    rows = vllm_mem.sweep(
        QWEN25_VL_7B,
        gpus=["H100-80GB"],
        max_model_len=[8192, 16384],
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        vllm_version="0.19.0",
        as_frame=False,
        **settings,
    )
    for n, length in enumerate((8192, 16384)):
        p = vllm_mem.plan(QWEN25_VL_7B, **{**BASE, "max_model_len": length}, **settings)
        assert rows["activation_peak_bytes"][n] == p.activation_peak_bytes


# vLLM's spelling of BASE's engine settings, and of the images-only, max_pixels 1,003,520 settings.
ENGINE_FLAGS = "--max-model-len 8192 --max-num-batched-tokens 8192 --max-num-seqs 256".split()
MM_FLAGS = ["--limit-mm-per-prompt", '{"video": 0}', "--mm-processor-kwargs", '{"max_pixels": 1003520}']
MM_SETTINGS = {"limit_mm_per_prompt": {"video": 0}, "mm_processor_kwargs": SMALL}


def test_vllm_command_line_round_trip() -> None:
    argv = ["vllm", "serve", "Qwen/Qwen2.5-VL-7B-Instruct", *ENGINE_FLAGS, *MM_FLAGS]
    got = vllm_args.plan_from_vllm_args(argv, "H100-80GB", vllm_version="0.19.0", model=QWEN25_VL_7B)
    assert got.plan.multimodal_profile == _profile(**MM_SETTINGS)
    bad = [*argv[:-1], '{"max_pixels": 0}']
    with pytest.raises(ValueError, match=r"--mm-processor-kwargs\.max_pixels"):
        vllm_args.plan_from_vllm_args(bad, "H100-80GB", vllm_version="0.19.0", model=QWEN25_VL_7B)


def test_cli_reads_the_json_as_vllm_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(QWEN25_VL_7B))
    argv = ["plan", str(config), "--gpu", "H100-80GB", "--vllm-version", "0.19.0", "--json", *ENGINE_FLAGS, *MM_FLAGS]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["multimodal_profile"] == _profile(**MM_SETTINGS)
    assert main([*argv[:-1], '{"max_pixels": ']) == 2  # malformed JSON: the flag named, exit 2
    assert "--mm-processor-kwargs" in capsys.readouterr().err


# Qwen/Qwen2.5-VL-3B-Instruct config.json (the Hugging Face checkpoint's file, as published).
QWEN25_VL_3B: dict[str, Any] = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "vision_start_token_id": 151652,
    "vision_end_token_id": 151653,
    "vision_token_id": 151654,
    "image_token_id": 151655,
    "video_token_id": 151656,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 11008,
    "max_position_embeddings": 128000,
    "max_window_layers": 70,
    "model_type": "qwen2_5_vl",
    "num_attention_heads": 16,
    "num_hidden_layers": 36,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.41.2",
    "use_cache": True,
    "use_sliding_window": False,
    "vision_config": {
        "depth": 32,
        "hidden_act": "silu",
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_chans": 3,
        "out_hidden_size": 2048,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "spatial_patch_size": 14,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "tokens_per_second": 2,
        "temporal_patch_size": 2,
    },
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vocab_size": 151936,
}


def test_pr_25631_default_start_up_profiles_the_video() -> None:
    """vllm-project/vllm PR #25631 ("[Multi Modal] Configurable MM Profiling", tested on an A100-40GB on
    main of 2025-09-25): `vllm serve Qwen/Qwen2.5-VL-3B-Instruct` printed "Available KV cache memory:
    5.26 GiB", and with --limit-mm-per-prompt '{"image": 1, "video": 0}' 25.05 GiB: the default run
    encodes a video (here 14 frames, 114,688 tokens, 458,752 patches) that costs 19.79 GiB more than the
    image. With the 0.11.0 rules (vllm_versions.json qwen25_vision_qkv_copies and
    qwen25_vision_fp32_rotary: the tower's attention copies q, k, v and rotates them through float32,
    20 h + head_dim a patch, test below) the plan gives 5.22 and 25.01 GiB, the video's cost 19.79 (without
    those copies: 11.26 and 25.95, the cost 14.69). Every figure within the prints' 0.05 GiB."""
    gib = float(1 << 30)
    default = vllm_mem.plan(QWEN25_VL_3B, "A100-40GB", vllm_version="0.11.0")
    images = vllm_mem.plan(
        QWEN25_VL_3B, "A100-40GB", vllm_version="0.11.0", limit_mm_per_prompt={"image": 1, "video": 0}
    )
    m = default.multimodal_profile
    assert m["modality"] == "video" and m["video_frames"] == 14 and m["encoder_budget_tokens"] == 114688
    assert images.multimodal_profile["modality"] == "image"
    printed_default, printed_images = 5.26, 25.05
    planned_default = default.available_kv_cache_bytes / gib
    planned_images = images.available_kv_cache_bytes / gib
    assert abs(planned_default - printed_default) <= 0.05
    assert abs(planned_images - printed_images) <= 0.05
    assert abs((planned_images - planned_default) - (printed_images - printed_default)) <= 0.05


# Qwen2_5_VisionAttention as vLLM main of September 2025 ran it (qwen2_5_vl.py: q, k, v each
# rearranged and .contiguous(), torch.cat([q, k]), then qwen2_vl.py apply_rotary_pos_emb_vision:
# t.float(), cos / sin of the float32 frequencies, the rotary kernel's torch.empty_like output,
# .type_as(t)). At the copy back, per patch of Qwen2.5-VL-7B's tower (h 1280, 16 heads of 80, I 3420):
# bf16, the block input and norm1's output (2 h), qkv (3 h), the q, k, v copies (3 h), the concatenation
# (2 h), the copy back (2 h); float32, the q / k copy (2 h), the kernel's output (2 h), cos and sin (80).
ROTARY_0_11_0 = (2 + 3 + 3 + 2 + 2) * 1280 * BF16 + ((2 + 2) * 1280 + 80) * 4
# TP 2: the per-rank terms halve ((3 + 3 + 2 + 2) h / 2, (2 + 2) h / 2 in float32); split_qkv's
# all-gather (every rank's qkv, 3 h, and their concatenation, 3 h, beside the local 3 h / 2 and the two
# inputs: 9.5 h) and the MLP at 4 h + 4 x 1,710 stay below it.
ROTARY_0_11_0_TP2 = (2 * 1280 + 5 * 1280) * BF16 + (2 * 1280 + 80) * 4
# After v0.11.0 (qwen2_5_vl.py at fb33ec8): q, k, v are views, the float32 rotary stays (qkv 3 h,
# the concatenation and the copy back 4 h beside the two inputs; 4 h + 80 float32).
ROTARY_0_11_1 = (2 + 3 + 2 + 2) * 1280 * BF16 + ((2 + 2) * 1280 + 80) * 4
TABLE = 40 * 4  # the float32 rotary table every block reads


def test_the_towers_attention_copies_by_release() -> None:
    """The 14-frame video at 128,000 tokens (7 x 65,536 patches) on each release's Qwen2.5-VL
    attention: 0.11.0 copies q, k, v and rotates through float32 (51,520 B a patch, above the SiLU
    MLP's 37,600), 0.11.1 rotates through float32 on views (43,840 B), 0.12.0 on (its wheel's
    apply_rotary_pos_emb_vision has no t.float()) is the MLP's set (LAYER_PER_PATCH, the rule the
    other tests pin at 0.19.0)."""
    patches = 7 * 65536
    by_release = [
        ("0.11.0", ROTARY_0_11_0),
        ("0.11.1", ROTARY_0_11_1),
        ("0.12.0", LAYER_PER_PATCH - TABLE),
        ("0.13.0", LAYER_PER_PATCH - TABLE),
    ]
    for version, per_patch in by_release:
        m = _profile(vllm_version=version, max_model_len=128000)
        assert m["modality"] == "video" and m["video_frames"] == 14
        assert m["encoder_layer_bytes"] == patches * (per_patch + TABLE), version
    m = _profile(vllm_version="0.11.0", max_model_len=128000, tensor_parallel_size=2)
    assert m["encoder_layer_bytes"] == patches * (ROTARY_0_11_0_TP2 + TABLE)


def test_qwen3_vl_blocks_reuse_the_attention_and_its_copies() -> None:
    """qwen3_vl.py Qwen3_VisionBlock builds its attention from Qwen2_5_VisionAttention, so on 0.11.0
    Qwen3-VL-8B's image (65,536 patches of h 1152, 16 heads of 72) holds the same copies, beside the
    interpolated position embeddings its forward keeps (h): 12 h bf16 + (4 h + 72) float32 + h bf16 =
    48,672 B a patch, above 0.19.0's 12 h = 27,648; the rotary table (36 x 4 B) and the three DeepStack
    features (16,384 x 4096 each) as on 0.19.0."""
    from test_families_hybrid import QWEN3_VL_8B

    patches, tokens = 256 * 256, 128 * 128
    per_patch = 12 * 1152 * BF16 + (4 * 1152 + 72) * 4 + 1152 * BF16
    rest = patches * 36 * 4 + 3 * tokens * 4096 * BF16
    m = _profile(QWEN3_VL_8B, vllm_version="0.11.0", limit_mm_per_prompt={"video": 0})
    assert m["modality"] == "image" and m["encoder_layer_bytes"] == patches * per_patch + rest
    m = _profile(QWEN3_VL_8B, limit_mm_per_prompt={"video": 0})
    assert m["encoder_layer_bytes"] == patches * 12 * 1152 * BF16 + rest


def test_a_profiled_dummy_video_carries_no_caveat_once_the_print_is_reproduced() -> None:
    """The dummy video's plan was flagged (a caveat on every plan that encodes one) while the one
    printed start-up that profiled it, PR #25631's (above), cost a quarter more than the plan; with the
    tower's attention copies modelled it is within the print's 0.05 GiB, so neither plan carries a video
    caveat; the plan still records the 14 frames it profiles."""
    default = vllm_mem.plan(QWEN25_VL_3B, "A100-40GB", vllm_version="0.11.0")
    images = vllm_mem.plan(
        QWEN25_VL_3B, "A100-40GB", vllm_version="0.11.0", limit_mm_per_prompt={"image": 1, "video": 0}
    )
    for plan in (default, images):
        assert not any("dummy video" in c for c in plan.to_dict()["caveats"])
        assert "caveat: the profile run encodes" not in str(plan)
    assert default.to_dict()["multimodal_profile"]["video_frames"] == 14
