"""The guide's rules of thumb: the formulas as written and how they compare with exact sizing."""

from __future__ import annotations

import pytest
import vllm_mem
from vllm_mem import ModelSpec, approximations


def test_public_names() -> None:
    assert set(approximations.__all__) == {
        "rule_of_thumb_kv_cache_bytes",
        "rule_of_thumb_weight_bytes",
        "rule_of_thumb_activation_bytes",
    }
    for name in approximations.__all__:
        doc = getattr(vllm_mem, name).__doc__
        assert doc is not None and "pproximation" in doc


def test_kv_formula_uses_hidden_size() -> None:
    spec = ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    got = vllm_mem.rule_of_thumb_kv_cache_bytes(spec, batch_size=3, seq_len=1000)
    assert got == 3 * 1000 * spec.hidden_size * spec.num_layers * 2 * 2
    # The same from a config name, and in fp8.
    assert vllm_mem.rule_of_thumb_kv_cache_bytes("meta-llama/Llama-3.1-8B-Instruct", 3, 1000, "fp8") == got // 2


def test_kv_formula_overstates_gqa() -> None:
    """Llama-3.1-8B stores 8 KV heads x 128, not hidden_size 4096: the rule is 4x too high."""
    spec = ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    exact_per_token = 2 * spec.num_layers * spec.num_kv_heads * spec.head_dim * 2
    rule_per_token = vllm_mem.rule_of_thumb_kv_cache_bytes(spec, 1, 1)
    assert rule_per_token == 4 * exact_per_token


def test_weight_rule_vs_exact() -> None:
    spec = ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    rule = vllm_mem.rule_of_thumb_weight_bytes(spec)
    assert rule == spec.num_parameters() * 2
    assert vllm_mem.rule_of_thumb_weight_bytes(spec, "int8") == spec.num_parameters()
    # Close for one GPU (the exact figure adds the rotary cache) ...
    assert spec.weight_bytes() == pytest.approx(rule, rel=0.01)
    # ... but the rule knows nothing about tensor parallelism.
    assert spec.weight_bytes(tensor_parallel_size=4) < rule / 3


def test_activation_range() -> None:
    assert vllm_mem.rule_of_thumb_activation_bytes(1000) == (100, 300)
    with pytest.raises(ValueError, match="weight_bytes"):
        vllm_mem.rule_of_thumb_activation_bytes(-1)
