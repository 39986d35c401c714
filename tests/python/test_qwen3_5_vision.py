"""Qwen3.5 / Qwen3.6's vision tower (model_type qwen3_5, qwen3_5_moe), counted and profiled as vLLM
builds and runs it.

vllm/model_executor/models/qwen3_5.py: Qwen3_5ForConditionalGeneration and
Qwen3_5MoeForConditionalGeneration build qwen3_vl.py's Qwen3_VisionTransformer from
config.vision_config: the Conv3d patch embedding with bias, the nn.Embedding position table,
LayerNorm blocks with biased qkv / proj / linear_fc1 / linear_fc2, the patch merger (LayerNorm over
the tower width, linear_fc1 / linear_fc2 with biases), and one DeepStack merger per
deepstack_visual_indexes entry: none here (the published files write [], and transformers'
Qwen3_5VisionConfig deletes the field). The tower is built in the model dtype with its linear layers
split over TP (mm_encoder_tp_mode "weights", the default). The language model skips the checkpoint's
MTP layer (load_weights: skip_prefixes ["mtp."]). The processor and dummy inputs are Qwen3-VL's
(Qwen3_5ProcessingInfo subclasses Qwen3VLProcessingInfo; Qwen3VLDummyInputsBuilder), within the
published preprocessor_config.json's size longest_edge 16,777,216: one 4096 x 4096 image, 256^2
patches of 16 x 16, 16,384 tokens.

The published totals are the Hub's safetensors parameter counts (BF16), every tensor of the
checkpoint, the MTP layer included: Qwen/Qwen3.5-0.8B 873,438,784 (code-index ids 62411536946,
71142266638); Qwen/Qwen3.5-27B 27,781,427,952 (id 55778153074; Qwen/Qwen3.6-27B the same, its
model.safetensors.index.json total_size 55,562,855,904 bytes and a census of its tower alone,
460,730,096, in id 68305723776); Qwen/Qwen3.5-35B-A3B and Qwen/Qwen3.6-35B-A3B 35,951,822,704 (ids
55778153074, 71142266638).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

DATA = Path(__file__).resolve().parents[1] / "data"
_CONFIGS = json.loads((DATA / "vllm_release_logs.json").read_text())["configs"]
#: The published config.json files (text_config and vision_config), recorded with their sources in
#: tests/data/vllm_release_logs.json.
QWEN3_5_0_8B = _CONFIGS["Qwen/Qwen3.5-0.8B"]["config"]
QWEN3_5_35B_A3B = _CONFIGS["Qwen/Qwen3.6-35B-A3B"]["config"]  # the Qwen3.5-35B-A3B architecture

QWEN3_5_27B = _CONFIGS["Qwen/Qwen3.6-27B"]["config"]  # the Qwen3.5-27B architecture

BF16 = 2
PATCHES = 256 * 256  # one 4096 x 4096 image, 16 x 16 patches
TOKENS = PATCHES // 4  # merged 2 x 2


def _tower(config: dict[str, Any]) -> int:
    """Qwen3_VisionTransformer's parameters by hand, from vision_config."""
    v = config["vision_config"]
    h, inner, out = v["hidden_size"], v["intermediate_size"], v["out_hidden_size"]
    merged = h * 4
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h)
    patch_embed = h * 3 * 2 * 16 * 16 + h
    merger = 2 * h + (merged * merged + merged) + (merged * out + out)
    return patch_embed + 2304 * h + v["depth"] * block + merger


def _mtp(config: dict[str, Any]) -> int:
    """The checkpoint's MTP layer (mtp.*), which vLLM skips: fc over [embedding; hidden] (2h -> h), the
    two pre-fc RMSNorms, one gated-attention decoder layer (q doubled for the output gate, q/k norms
    of head_dim) with its MLP or MoE block and two norms, and the final norm."""
    t = config["text_config"]
    h, heads, kv, hd = t["hidden_size"], t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]
    attention = h * 2 * heads * hd + 2 * h * kv * hd + heads * hd * h + 2 * hd
    if "num_experts" in t:
        e, i, shared = t["num_experts"], t["moe_intermediate_size"], t["shared_expert_intermediate_size"]
        mlp = e * 3 * h * i + h * e + 3 * h * shared + h  # experts, router, shared expert and its gate
    else:
        mlp = 3 * h * t["intermediate_size"]
    return 2 * h * h + 2 * h + attention + mlp + 2 * h + h


@pytest.mark.parametrize(
    ("config", "published"),
    [
        (QWEN3_5_0_8B, 873_438_784),
        (QWEN3_5_27B, 27_781_427_952),
        (QWEN3_5_35B_A3B, 35_951_822_704),
    ],
    ids=["qwen3.5-0.8b", "qwen3.5-27b", "qwen3.5-35b-a3b"],
)
def test_tower_and_model_match_the_published_totals(config: dict[str, Any], published: int) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules and config["model_type"] in vllm_mem.supported_model_types()
    assert spec.vision_encoder_parameters == _tower(config)
    assert spec.num_parameters() + _mtp(config) == published
    # Tower and profile run both have rules: no caveat left.
    assert spec.caveats == []


def test_the_27b_tower_alone_matches_its_census() -> None:
    # 460,730,096: the vision tensors of Qwen3.6-27B's checkpoint counted alone (code-index id 68305723776).
    assert vllm_mem.ModelSpec.from_hf_config(QWEN3_5_27B).vision_encoder_parameters == 460_730_096


def test_tower_splits_its_linear_layers_over_tp() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(QWEN3_5_27B)
    tp1 = spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"]
    tp2 = spec.weight_breakdown(tensor_parallel_size=2)["per_pp_rank"][0]["vision_encoder_bytes"]
    assert tp1 == BF16 * spec.vision_encoder_parameters
    # Whole on every rank: the Conv3d, the position table, the norms and the row-parallel biases
    # (proj, linear_fc2 of each block; the merger's linear_fc2).
    h = 1152
    replicated = (h * 3 * 2 * 16 * 16 + h) + 2304 * h + 27 * (4 * h + h + h) + 2 * h + 5120
    assert tp2 == BF16 * ((spec.vision_encoder_parameters - replicated) // 2 + replicated)


def test_the_plan_loads_the_tower_unless_serving_text_only() -> None:
    settings = {"gpu": "H100-80GB", "max_model_len": 8192, "vllm_version": "0.28.0"}
    tower_bytes = BF16 * _tower(QWEN3_5_0_8B)
    plan = vllm_mem.plan(QWEN3_5_0_8B, **settings)
    assert plan.vision_encoder_bytes == tower_bytes
    # Every parameter in bf16 (tied embeddings held once) and the rotary cos/sin table: rope_parameters
    # carry mrope_section, so vLLM's get_rope builds an MRotaryEmbedding, whose table holds
    # 4 x max_position_embeddings rows (rotary_embedding/mrope.py cache_max_position_num) of
    # 256 x 0.25 = 64 columns.
    spec = vllm_mem.ModelSpec.from_hf_config(QWEN3_5_0_8B)
    assert plan.weights_bytes == BF16 * spec.num_parameters() + 4 * 262144 * 64 * BF16
    # The table's 4 x rows are not a longer context: vLLM derives max_model_len 262,144 (the v0.28.0
    # start-up of tests/data/vllm_release_logs.json printed "Using max model len 262144").
    derived = vllm_mem.plan(QWEN3_5_0_8B, gpu="H100-80GB", vllm_version="0.28.0")
    assert derived.max_model_len == 262144
    # From 0.16 (rule text_only_skips_vision_tower) vLLM leaves the tower unbuilt when every modality
    # is limited to 0 or under --language-model-only.
    for text_only in ({"language_model_only": True}, {"limit_mm_per_prompt": 0}):
        lm_only = vllm_mem.plan(QWEN3_5_0_8B, **settings, **text_only)
        assert lm_only.vision_encoder_bytes == 0, text_only
        assert lm_only.weights_bytes == plan.weights_bytes - tower_bytes, text_only
        assert lm_only.multimodal_profile["runs"] == 0, text_only


@pytest.mark.parametrize(
    ("config", "h", "inner", "heads", "text_width"),
    [
        (QWEN3_5_0_8B, 768, 3072, 12, 1024),
        (QWEN3_5_35B_A3B, 1152, 4304, 16, 2048),
    ],
    ids=["qwen3.5-0.8b", "qwen3.5-35b-a3b"],
)
def test_profile_run_by_hand(config: dict[str, Any], h: int, inner: int, heads: int, text_width: int) -> None:
    plan = vllm_mem.plan(config, gpu="H100-80GB", max_model_len=8192, max_num_batched_tokens=8192, max_num_seqs=256)
    m = plan.multimodal_profile
    # max(8192 batched tokens, one 16,384-token image): one image item.
    assert m["runs"] == 1 and m["encoder_budget_tokens"] == TOKENS == 16384 and m["items"] == 1
    assert m["pixel_bytes"] == PATCHES * 3 * 2 * 16 * 16 * BF16  # 201,326,592
    # One text-width row a token: the merger's output alone, no DeepStack rows.
    assert m["encoder_output_bytes"] == TOKENS * text_width * BF16
    # The Qwen3-VL block (mm_profile_estimate.cc QwenBlockElementsPerToken): attention with the
    # position embeddings 3 h + 8 h + h = 12 h, or the GELU MLP 3 h + 2 I, whichever is larger; the
    # float32 rotary table (head_dim / 2 a patch); no DeepStack features.
    block = max(12 * h, 3 * h + 2 * inner)
    assert m["encoder_layer_bytes"] == PATCHES * block * BF16 + PATCHES * (h // heads // 2) * 4
    assert m["encoder_phase_bytes"] == m["pixel_bytes"] + m["encoder_layer_bytes"]
    assert m["resident_bytes"] == m["pixel_bytes"] + m["encoder_output_bytes"]
    # The peak: the encoder phase, or the text phases with the pixels and embeddings beside them.
    a = plan._p.ranks[0].activation
    text_phases = max(a.forward_bytes, a.sampler_phase_bytes) + m["resident_bytes"]
    assert plan.activation_peak_bytes - a.pipeline_buffers_bytes == max(m["encoder_phase_bytes"], text_phases)
