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
# tests/python/test_hybrid_models.py).
HYBRIDS = ["zamba", "zamba2", "minimax", "minimax_text_01", "mamba", "falcon_mamba", "plamo2", "lfm2"]


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
    spec = vllm_mem.ModelSpec.from_hf_config(_config("zamba2"), allow_unknown=True)
    assert not spec.has_exact_rules and "Mamba" in spec.generic_estimate_reason
    assert "GENERIC ESTIMATE" in repr(spec)
    plan = vllm_mem.plan(spec, gpu="L4", max_model_len=2048)
    assert "GENERIC ESTIMATE" in str(plan) and "Mamba" in str(plan)
    assert "Generic estimate" in plan._repr_html_() and "Generic estimate" in spec._repr_html_()


def test_allow_unknown_must_be_a_real_boolean() -> None:
    with pytest.raises(TypeError, match="allow_unknown"):
        vllm_mem.ModelSpec.from_hf_config(_config("zamba2"), allow_unknown="false")  # type: ignore[arg-type]


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
    path.write_text(json.dumps(_config("zamba2")))
    refused = _cli("plan", str(path), "--gpu", "H100-80GB", "--max-model-len", "4096")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "zamba2" in refused.stderr
    labelled = _cli("plan", str(path), "--gpu", "H100-80GB", "--max-model-len", "4096", "--allow-unknown")
    assert labelled.returncode in (0, 1), labelled.stderr
    assert "GENERIC ESTIMATE" in labelled.stdout
    kv = _cli("kv", str(path), "--available-gib", "10", "--max-model-len", "4096", "--allow-unknown", "--json")
    assert kv.returncode == 0, kv.stderr
    assert "state" in json.loads(kv.stdout)["generic_estimate_reason"]
