"""Quantized checkpoints' weights, hybrids included: NVFP4 (compressed-tensors, ModelOpt), AWQ,
GPTQ and FP8 with the checkpoint's list of modules left unquantized.

The published figure: RedHatAI/Qwen3.6-35B-A3B-NVFP4 on vLLM v0.20.0 printed "Model loading took
21.86 GiB" (tests/data/vllm_release_logs.json, wsl-qwen3.6-35b-a3b-nvfp4-v0.20.0, read_file id
51830815744; 'Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM', "Using 'VLLM_CUTLASS' NvFp4
MoE backend"). The checkpoint is llm-compressor's NVFP4 recipe for Qwen3.6-35B-A3B
(vllm-project/llm-compressor examples/quantization_w4a4_fp4/qwen3_6_example.py, commit
009e5b918decb261203e2a8506a5dba34b233969, saving to "Qwen3.6-35B-A3B-NVFP4"): targets "Linear",
scheme NVFP4, ignore lm_head, the vision tower, the routers (mlp.gate), embed_tokens, the
shared-expert gates and every gated-DeltaNet linear (linear_attn).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

ROOT = Path(__file__).resolve().parents[2]
GiB = float(1 << 30)
BF16 = 2

#: llm-compressor's recipe (above), as compressed-tensors writes it into config.json: the NVFP4
#: preset (compressed_tensors/quantization/quant_scheme.py NVFP4: 4-bit "float" weights,
#: strategy tensor_group, group_size 16, symmetric; format nvfp4-pack-quantized).
QWEN36_IGNORE = [
    "re:.*lm_head",
    "re:visual.*",
    "re:model.visual.*",
    "re:.*mlp.gate$",
    "re:.*embed_tokens$",
    "re:.*shared_expert_gate$",
    "re:.*linear_attn.*",
]
NVFP4_GROUP = {
    "targets": ["Linear"],
    "weights": {
        "num_bits": 4,
        "type": "float",
        "strategy": "tensor_group",
        "group_size": 16,
        "symmetric": True,
        "dynamic": False,
    },
}


@cache
def _qwen36_text() -> dict[str, Any]:
    doc = json.loads((ROOT / "tests" / "data" / "vllm_release_logs.json").read_text())
    return doc["configs"]["Qwen/Qwen3.6-35B-A3B"]["config"]


def _qwen36(quantization_config: dict[str, Any]) -> dict[str, Any]:
    return {**_qwen36_text(), "quantization_config": quantization_config}


def _ct(ignore: list[str], groups: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "quant_method": "compressed-tensors",
        "format": "nvfp4-pack-quantized",
        "config_groups": groups or {"group_0": NVFP4_GROUP},
        "ignore": ignore,
    }


def _nvfp4_bytes(n_in: int, n_out: int) -> int:
    """One NVFP4 linear after process_weights_after_loading: two e2m1 values a byte, one fp8 scale
    per 16 inputs in the swizzled layout (rows to 128, scale columns to 4: nvfp4_utils.py
    swizzle_blockscale); float32 global scales not counted."""
    return n_out * n_in // 2 + -(-n_out // 128) * 128 * (-(-(n_in // 16) // 4) * 4)


def _qwen36_language_model_bytes() -> int:
    """Qwen3.6-35B-A3B at TP 1 as vLLM 0.20 builds it (qwen3_5.py, qwen3_next.py,
    gdn_linear_attn.py) with the recipe's NVFP4: every number from the config."""
    h, vocab, layers, experts, moe_i = 2048, 248320, 40, 256, 512
    embed = vocab * h * BF16  # embed_tokens and lm_head (ignored), vocab already a multiple of 64
    # Gated attention (10 layers): q_proj doubled for the output gate, 2 KV heads of 256, o_proj.
    attention = _nvfp4_bytes(h, 16 * 256 * 2 + 2 * 2 * 256) + _nvfp4_bytes(16 * 256, h) + 2 * 256 * BF16
    # Gated DeltaNet (30 layers, bf16: ignored): in_proj_qkvz, in_proj_ba, conv1d, dt_bias + A_log,
    # the gated norm over one value head, out_proj.
    key, value = 16 * 128, 32 * 128
    gdn = (h * (2 * key + 2 * value) + h * 2 * 32 + (2 * key + value) * 4 + 2 * 32 + 128 + value * h) * BF16
    # Every layer: 256 NVFP4 experts (w13 and w2), the bf16 router, the NVFP4 shared expert and its
    # bf16 gate, two norms.
    moe = (
        experts * (_nvfp4_bytes(h, 2 * moe_i) + _nvfp4_bytes(moe_i, h))
        + h * experts * BF16
        + _nvfp4_bytes(h, 2 * 512)
        + _nvfp4_bytes(512, h)
        + h * BF16
        + 2 * h * BF16
    )
    # The cos/sin cache: max_position_embeddings x (256 x partial_rotary_factor 0.25), times 4 rows
    # for multimodal rope (rope_parameters.mrope_section: vLLM's MRotaryEmbedding,
    # rotary_embedding/mrope.py, cache_max_position_num = max_position_embeddings * 4).
    rope = 4 * 262144 * 64 * BF16
    return 2 * embed + 10 * attention + 30 * gdn + layers * moe + h * BF16 + rope


def _qwen36_vision_tower_bytes() -> int:
    """vLLM's Qwen3_VisionTransformer (qwen3_vl.py, built by Qwen3_5MoeForConditionalGeneration
    with the tower ignored: bf16) with the published vision_config the recorded config carries
    (depth 27, hidden 1152, intermediate 4304, patch 16, temporal 2, merge 2, 2304 positions,
    out_hidden_size 2048, deepstack_visual_indexes []: no DeepStack mergers)."""
    d, inter, depth, merged = 1152, 4304, 27, 1152 * 4
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * inter + inter) + (inter * d + d)
    patch = 3 * 2 * 16 * 16 * d + d
    merger = 2 * d + (merged * merged + merged) + (merged * 2048 + 2048)
    return (depth * block + patch + 2304 * d + merger) * BF16


def _qwen36_model_bytes() -> int:
    """What vLLM loads: the language model and the bf16 vision tower (the recipe ignores it)."""
    return _qwen36_language_model_bytes() + _qwen36_vision_tower_bytes()


def test_qwen36_nvfp4_language_model_bytes_by_hand() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(_qwen36(_ct(QWEN36_IGNORE)))
    assert spec.quantization is not None and spec.quantization.nvfp4
    assert spec.quantization.unquantized_modules == QWEN36_IGNORE
    assert spec.weight_bytes() == _qwen36_model_bytes()
    assert spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"] == _qwen36_vision_tower_bytes()


def test_qwen36_nvfp4_against_the_printed_model_loading() -> None:
    # Printed 21.86 GiB (+-0.005); the language model (with its 4 x 262,144-row multimodal rope
    # table, 21.027 GiB) plus the bf16 tower (0.832 GiB): 21.859 GiB, within the print's rounding.
    # With a one-x rope table and the tower added by hand it was 21.765 GiB, -0.43%.
    planned = _qwen36_model_bytes() / GiB
    assert abs(planned - 21.86) <= 0.005
    spec = vllm_mem.ModelSpec.from_hf_config(_qwen36(_ct(QWEN36_IGNORE)))
    assert abs(spec.weight_bytes() / GiB - 21.86) <= 0.005


def test_explicit_per_layer_ignore_lists_read_as_the_regexes() -> None:
    # compressed-tensors may list every ignored module by its full name (HF names under the
    # wrapper: model.language_model.layers.N...); the count must not change.
    text = _qwen36_text()["text_config"]
    names = ["lm_head"]
    for i, kind in enumerate(text["layer_types"]):
        layer = f"model.language_model.layers.{i}"
        names += [f"{layer}.mlp.gate", f"{layer}.mlp.shared_expert_gate"]
        if kind == "linear_attention":
            names += [
                f"{layer}.linear_attn.{p}" for p in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj")
            ]
    spec = vllm_mem.ModelSpec.from_hf_config(_qwen36(_ct(names)))
    assert spec.weight_bytes() == _qwen36_model_bytes()


def test_a_hybrid_ignore_list_covering_some_layers_is_counted_layer_by_layer() -> None:
    # Hybrids are counted layer by layer: naming only layers 0 and 1's gated-DeltaNet linears
    # leaves the other 28 linear-attention layers' in_proj_qkvz, in_proj_ba and out_proj in NVFP4.
    names = [
        f"model.language_model.layers.{i}.linear_attn.{p}"
        for i in (0, 1)
        for p in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj")
    ]
    names += ["re:.*mlp.gate$", "re:.*shared_expert_gate$"]
    h, key, value = 2048, 16 * 128, 32 * 128
    gdn_bf16 = (h * (2 * key + 2 * value) + h * 64 + value * h) * BF16
    gdn_nvfp4 = _nvfp4_bytes(h, 2 * key + 2 * value) + _nvfp4_bytes(h, 64) + _nvfp4_bytes(value, h)
    spec = vllm_mem.ModelSpec.from_hf_config(_qwen36(_ct(names)))
    assert spec.weight_bytes() == _qwen36_model_bytes() - 28 * (gdn_bf16 - gdn_nvfp4)


def test_a_dense_ignore_list_covering_some_layers_only_is_refused_by_name() -> None:
    # A dense model is counted per layer kind: a list naming one layer's down_proj is refused.
    fp8 = {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
            }
        },
        "ignore": ["lm_head", "model.layers.0.mlp.down_proj"],
    }
    qwen3_8b = json.loads((ROOT / "python" / "vllm_mem" / "configs" / "Qwen--Qwen3-8B.json").read_text())
    spec = vllm_mem.ModelSpec.from_hf_config({**qwen3_8b, "quantization_config": fp8})
    with pytest.raises(vllm_mem.NotModelledError, match="per-layer quantization exclusions"):
        spec.weight_bytes()


def test_modelopt_nvfp4_with_exclude_modules_matches_the_compressed_tensors_count() -> None:
    # ModelOpt's hf_quant_config layout (vLLM ModelOptNvFp4Config: quant_algo NVFP4, group_size 16,
    # exclude_modules as fnmatch wildcards), nested under "quantization".
    modelopt = {
        "quant_method": "modelopt",
        "quantization": {
            "quant_algo": "NVFP4",
            "group_size": 16,
            "exclude_modules": ["lm_head", "*visual*", "*mlp.gate", "*shared_expert_gate", "*linear_attn*"],
        },
    }
    spec = vllm_mem.ModelSpec.from_hf_config(_qwen36(modelopt))
    assert spec.quantization.nvfp4 and spec.weight_bytes() == _qwen36_model_bytes()
    # vLLM's --quantization modelopt_fp4 names the same checkpoint method.
    assert spec.weight_bytes(quantization="modelopt_fp4") == spec.weight_bytes()


@pytest.mark.parametrize(
    ("quantization_config", "match"),
    [
        ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}, "MIXED_PRECISION"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:.*linear_attn.*": {}}}, "dynamic"),
        (
            _ct(
                [],
                {
                    "group_0": NVFP4_GROUP,
                    "group_1": {
                        "targets": ["re:.*self_attn.*"],
                        "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
                    },
                },
            ),
            "different weight schemes",
        ),
        (
            _ct(
                [], {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 32}}}
            ),
            "MXFP4",
        ),
    ],
)
def test_schemes_without_rules_are_refused_by_name(quantization_config: dict[str, Any], match: str) -> None:
    with pytest.raises(vllm_mem.NotModelledError, match=match):
        vllm_mem.ModelSpec.from_hf_config(_qwen36(quantization_config)).weight_bytes()


@pytest.mark.parametrize(("key", "value"), [("ignore", "lm_head"), ("ignore", [1]), ("ignore", ["re:("])])
def test_a_malformed_ignore_list_names_the_field(key: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"quantization_config.{key}"):
        vllm_mem.ModelSpec.from_hf_config(_qwen36({**_ct([]), key: value})).weight_bytes()


def test_awq_on_a_hybrid_keeps_modules_to_not_convert_in_bf16() -> None:
    # AutoAWQ (4 bits, group 128, zero points): awq.py is_layer_skipped_awq skips a layer whose
    # name contains an entry. Skipping linear_attn, the router and the shared-expert gate leaves
    # attention, experts and the shared expert quantized: bf16 scales per (group, out) and packed
    # 4-bit zero points beside the packed weights.
    awq = {
        "quant_method": "awq",
        "bits": 4,
        "group_size": 128,
        "zero_point": True,
        "version": "gemm",
        "modules_to_not_convert": ["linear_attn", "mlp.gate", "shared_expert_gate", "visual"],
    }
    nvfp4 = vllm_mem.ModelSpec.from_hf_config(_qwen36(_ct(QWEN36_IGNORE))).weight_bytes()

    def awq_bytes(n_in: int, n_out: int) -> int:
        groups = n_in // 128
        return n_in * n_out // 2 + groups * n_out * BF16 + groups * n_out // 2

    h, experts = 2048, 256
    per_layer_nvfp4 = (
        experts * (_nvfp4_bytes(h, 1024) + _nvfp4_bytes(512, h)) + _nvfp4_bytes(h, 1024) + _nvfp4_bytes(512, h)
    )
    per_layer_awq = experts * (awq_bytes(h, 1024) + awq_bytes(512, h)) + awq_bytes(h, 1024) + awq_bytes(512, h)
    attention_nvfp4 = _nvfp4_bytes(h, 9216) + _nvfp4_bytes(4096, h)
    attention_awq = awq_bytes(h, 9216) + awq_bytes(4096, h)
    expected = nvfp4 + 40 * (per_layer_awq - per_layer_nvfp4) + 10 * (attention_awq - attention_nvfp4)
    assert vllm_mem.ModelSpec.from_hf_config(_qwen36(awq)).weight_bytes() == expected


def test_short_conv_linears_stay_unquantized() -> None:
    # vLLM's ShortConv (LFM2) builds conv, in_proj and out_proj without a quant_config, so an fp8
    # checkpoint quantizes only LFM2's attention and MLP: the conv layers' bytes do not move.
    doc = json.loads((ROOT / "tests" / "data" / "vllm_release_logs.json").read_text())
    lfm2 = doc["configs"]["LiquidAI/LFM2.5-1.2B-Instruct"]["config"]
    plain = vllm_mem.ModelSpec.from_hf_config(lfm2).weight_breakdown()["per_pp_rank"][0]
    fp8 = vllm_mem.ModelSpec.from_hf_config(lfm2).weight_breakdown(quantization="fp8")["per_pp_rank"][0]
    conv_layers = lfm2["layer_types"].count("conv")
    h, dim = 2048, 2048
    conv_bf16 = conv_layers * (h * 3 * dim + dim * 3 + dim * h) * BF16
    attention_layers = 16 - conv_layers
    qkv = h * (32 + 2 * 8) * 64
    o = 32 * 64 * h
    attention_bf16 = attention_layers * ((qkv + o) * BF16 + 2 * 64 * BF16)
    attention_fp8 = attention_layers * (qkv + o + 2 * 64 * BF16)
    assert plain["attention_bytes"] == conv_bf16 + attention_bf16
    assert fp8["attention_bytes"] == conv_bf16 + attention_fp8


def test_quantized_mamba1_mixers_are_refused_by_name() -> None:
    # Which of MambaMixer's linears (Jamba) take the quant_config is not checked: refused, not
    # counted as if the mixer stayed in bf16.
    from test_hybrid_models import JAMBA

    with pytest.raises(vllm_mem.NotModelledError, match="Mamba-1"):
        vllm_mem.ModelSpec.from_hf_config(JAMBA).weight_bytes(quantization="fp8")
