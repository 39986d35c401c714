"""Gemma-3n's towers in vLLM's start-up profile run, by hand (csrc/core/model/vision_profile_item.cc,
audio_profile_item.cc, csrc/core/plan/gemma3n_tower_profile.cc, mm_profile_estimate.cc).

From the code, no log: no public Gemma-3n start-up found prints its encoder line with its settings
(docs/models.md). The rules, as read in vLLM's gemma3n_mm.py (the same from 0.10.0, the first release
serving Gemma-3n, to the newest read), gpu_model_runner.py profile_run and multimodal/encoder_budget.py:

- Tokens per item: Gemma3nProcessingInfo.get_max_tokens_per_item returns the hard-coded TOKENS_PER_IMAGE
  (256) and TOKENS_PER_AUDIO (188). The budget is max(max_num_batched_tokens, tokens per item), and the
  profiled modality is the one with the most tokens per item among those limit_mm_per_prompt leaves on:
  the image, unless images are limited to 0.
- The dummy image (Gemma3nDummyInputsBuilder): image_processor.size, 768 x 768, which
  SiglipImageProcessorFast keeps; pixel_values in the model dtype (3 x 768 x 768 a image). The tower
  returns 256 embeddings a image, projected to the text width (2,048) and cached.
- The dummy audio: feature_extractor.fft_length = 1,024 samples, padded to a multiple of 128, unfolded
  into (1024 - 513) // 160 + 1 = 4 log-mel frames of 128 bins (transformers Gemma3nAudioFeatureExtractor),
  with a bool mask a frame. The embeddings are padded to audio_soft_tokens_per_image = 188 rows.
- MobileNet-V5 (timm mobilenetv5_300m_enc at 768 x 768): the largest live set is stage 1's first
  UniversalInvertedResidual, whose pw_exp turns the 128-channel 192 x 192 map into 768 channels: while
  rms_norm2d multiplies by its weight, the convolution's output, x * rsqrt and x * weight (3 x 768
  channels) sit beside the block's input and dw_start's output (2 x 128 channels):
  (2 x 128 + 3 x 768) x 192^2 = 94,371,840 elements a image. _walk_mobilenet_v5 below walks every
  edge-residual and inverted-residual block of timm's arch_def and the fusion adapter to check no other
  holds more.
- The USM conformer on 4 frames: the first subsampling block (128 channels x 2 frames x 64 bins, its
  output and contiguous copy in bf16, five float32 copies in Gemma3nAudioCumulativeGroupNorm, the cast
  back: 26 B an element) holds more than the attention block of one frame (90 rows of 1,536 in bf16).
"""

from __future__ import annotations

from typing import Any

import pytest
import vllm_mem
from test_families_gemma3n import E2B_TEXT, _wrapper

BF16 = 2
TEXT_WIDTH = 2048  # E2B's (and E4B's) hidden_size
SETTINGS: dict[str, Any] = {"gpu": "H100-80GB", "max_model_len": 32768, "max_num_batched_tokens": 8192}

# MobileNet-V5's largest block, per image: stage 0 leaves 128 channels at 768 / 4 = 192 a side; stage 1's
# first block 'uir_r1_a3_k5_s2_e6_c256' expands them to make_divisible(128 x 6) = 768.
MOBILENET_BLOCK_ELEMENTS = (2 * 128 + 3 * 768) * 192 * 192


def _make_divisible(v: float, divisor: int = 8) -> int:
    # timm's make_divisible (round_limit 0.9), which UniversalInvertedResidual uses for its mid channels.
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _walk_mobilenet_v5(side: int = 768) -> list[int]:
    """Live elements a image at each ConvNormAct of timm's mobilenetv5_300m_enc arch_def (stage 2's and 3's
    mobile-MQA blocks hold less than their neighbouring inverted residuals at 48 and 24 a side, and are left
    out): the block input, the step's input where the block still holds it, and the convolution's output
    with rms_norm2d's two products; a strided 'same' convolution's padded input beside its output."""
    live: list[int] = []
    s, c = side // 2, 64  # conv_stem: 3 -> 64 at stride 2
    live.append(3 * s * s)
    er = [(2, 4, 128), (1, 4, 128), (1, 4, 128)]
    for stride, e, out in er:  # EdgeResidual: conv_exp (k3) + norm/act, conv_pwl + norm
        mid, s2 = c * e, s // stride
        live.append(c * s * s + 3 * mid * s2 * s2)
        live.append(c * s * s + mid * s2 * s2 + 3 * out * s2 * s2)
        c, s = out, s2
    uir = (
        [(3, 5, 2, 6, 256), (5, 0, 1, 4, 256), (3, 0, 1, 4, 256), (5, 0, 1, 4, 256), (3, 0, 1, 4, 256)]
        + [(5, 5, 2, 6, 640)]
        + [(5, 0, 1, 4, 640)] * 7
        + [(0, 0, 1, 1, 640)]
        + [(0, 0, 1, 2, 640)] * 14
        + [(5, 5, 2, 6, 1280)]
        + [(0, 0, 1, 2, 1280)] * 19
    )
    for start, k_mid, stride, e, out in uir:
        mid = _make_divisible(c * e)
        s_mid = s // stride
        held = c * s * s  # the block's input (its shortcut)
        if start:  # dw_start at stride 1 (the stride goes to dw_mid when there is one)
            live.append(held + 3 * c * s * s)
            held += c * s * s
        live.append(held + 3 * mid * s * s)  # pw_exp
        exp_out = mid * s * s
        if k_mid:  # dw_mid: padded input (+ (k - stride) a side when strided) beside the output
            pad = s + (k_mid - stride if stride > 1 else 0)
            live.append(c * s * s + exp_out + mid * pad * pad + 3 * mid * s_mid * s_mid)
            exp_out = mid * s_mid * s_mid
        live.append(c * s * s + exp_out + 3 * out * s_mid * s_mid)  # pw_proj
        c, s = out, s_mid
    # The fusion adapter at 48 a side: stage 2's output (640), stage 3's (1280) upsampled, their concatenation
    # (1920) and its UIR: pw_exp to 3840 with its norm's products.
    msfa = 640 * 48 * 48 + 1280 * 24 * 24 + 1280 * 48 * 48 + 1920 * 48 * 48 + 3 * 3840 * 48 * 48
    live.append(msfa)
    return live


def test_mobilenet_v5_largest_block_is_the_tables() -> None:
    live = _walk_mobilenet_v5()
    assert max(live) == MOBILENET_BLOCK_ELEMENTS == 94_371_840


def _profile(**settings: Any) -> dict[str, Any]:
    plan = vllm_mem.plan(_wrapper(E2B_TEXT), **{**SETTINGS, **settings})
    assert plan.multimodal_profile is not None
    return plan.multimodal_profile


@pytest.mark.parametrize("limits", [None, {"audio": 0}, {"image": 5, "audio": 3}])
def test_images_are_profiled_while_images_are_on(limits: dict[str, int] | None) -> None:
    m = _profile(**({"limit_mm_per_prompt": limits} if limits else {}))
    assert m["runs"] and m["modality"] == "image"
    # budget max(8192, 256) = 8192: 8192 // 256 = 32 images (the decoder side allows far more)
    assert m["encoder_budget_tokens"] == 8192 and m["items"] == 32
    assert m["pixel_bytes"] == 32 * 3 * 768 * 768 * BF16  # 113,246,208
    assert m["encoder_output_bytes"] == 32 * 256 * TEXT_WIDTH * BF16  # 33,554,432
    assert m["encoder_layer_bytes"] == 32 * MOBILENET_BLOCK_ELEMENTS * BF16  # 6,039,797,760 (5.625 GiB)
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]
    assert m["resident_bytes"] == m["pixel_bytes"] + m["encoder_output_bytes"]


def test_audio_is_profiled_when_images_are_limited_to_0() -> None:
    m = _profile(limit_mm_per_prompt={"image": 0})
    assert m["runs"] and m["modality"] == "audio"
    # budget max(8192, 188) = 8192: 8192 // 188 = 43 audios
    assert m["encoder_budget_tokens"] == 8192 and m["items"] == 43
    assert m["pixel_bytes"] == 43 * (4 * 128 * BF16 + 4)  # input_features_padded + input_features_mask
    assert m["encoder_output_bytes"] == 43 * 188 * TEXT_WIDTH * BF16  # 33,112,064
    # conv_0: 128 channels x 2 frames x ((128 + 2 - 3) // 2 + 1 = 64) bins, 2 + 2 + 5 x 4 + 2 = 26 B each;
    # the attention of one frame: 6 + 12 + 2 x 24 + 24 = 90 rows of 1,536 in bf16 (276,480 B) holds less.
    subsampling = 128 * 2 * 64 * (2 * BF16 + 5 * 4 + BF16)
    assert subsampling > 90 * 1536 * BF16
    assert m["encoder_layer_bytes"] == 43 * subsampling  # 18,317,312
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]


def test_the_peak_takes_the_larger_phase_and_the_switches_turn_it_off() -> None:
    plan = vllm_mem.plan(_wrapper(E2B_TEXT), **SETTINGS)
    a = plan._p.ranks[0].activation
    text_phase = max(a.forward_bytes, a.sampler_phase_bytes) + a.multimodal.resident_bytes
    assert plan.activation_peak_bytes - a.pipeline_buffers_bytes == max(a.multimodal.encoder_phase_bytes, text_phase)
    assert a.multimodal.encoder_phase_bytes > text_phase  # 32 images through MobileNet-V5 set the peak
    assert plan.to_dict()["caveats"] == []
    for off in (
        {"skip_mm_profiling": True},
        {"limit_mm_per_prompt": {"image": 0, "audio": 0}},
        {"language_model_only": True},
    ):
        assert not _profile(**off)["runs"]
    # vLLM's dummy image options do not reach the tensor: the processor resizes every image to 768 x 768.
    small = _profile(limit_mm_per_prompt={"image": {"count": 2, "width": 256, "height": 256}})
    assert small["pixel_bytes"] == 32 * 3 * 768 * 768 * BF16
    with pytest.raises(vllm_mem.NotModelledError, match="audio"):
        _profile(limit_mm_per_prompt={"image": 0, "audio": {"count": 1, "length": 16000}})
