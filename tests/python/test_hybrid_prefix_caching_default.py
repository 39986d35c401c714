"""Prefix caching left unset on a hybrid model: off up to 0.27, on from 0.28 (vllm#50991, rule
hybrid_prefix_caching_default in vllm_versions.json), and vLLM's choice of mamba_cache_mode then
(MambaModelConfig.verify_and_update_config: 'all' when the model class supports Mamba prefix
caching, else 'align'). The two v0.28.0 Qwen3.5-0.8B start-ups of tests/data/vllm_release_logs.json
check the default against real token counts; these tests pin the resolution itself."""

from __future__ import annotations

import pytest
import vllm_mem
from test_hybrid_models import NEMOTRON_NANO_9B_V2
from test_model_families import QWEN3_5_35B_A3B

GIB = 1 << 30
LLAMA = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
         "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 32000,
         "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}


def _tokens(config: dict, release: str, max_model_len: int = 32768, **settings: object) -> int:
    cap = vllm_mem.kv_cache_capacity(config, 20 * GIB, max_model_len=max_model_len, vllm_version=release,
                                     **settings)
    return cap.num_tokens


def test_qwen3_5_gets_align_by_default_from_0_28() -> None:
    # Qwen3.5's vLLM class refuses 'all' ("Qwen3.5 currently does not support 'all' prefix
    # caching"), so with prefix caching on vLLM picks 'align', as both 0.28.0 logs print.
    align = _tokens(QWEN3_5_35B_A3B, "0.28.0", enable_prefix_caching=True, mamba_cache_mode="align")
    off = _tokens(QWEN3_5_35B_A3B, "0.28.0", enable_prefix_caching=False)
    assert align != off  # the mode changes the block ids a request holds, so the default is visible
    assert _tokens(QWEN3_5_35B_A3B, "0.28.0") == align
    assert _tokens(QWEN3_5_35B_A3B, "0.32.0") == _tokens(QWEN3_5_35B_A3B, "0.32.0", mamba_cache_mode="align")
    # Before 0.28 the default is off.
    assert _tokens(QWEN3_5_35B_A3B, "0.27.0") == _tokens(QWEN3_5_35B_A3B, "0.27.0", enable_prefix_caching=False)
    # An explicit request resolves the same way on any release.
    assert _tokens(QWEN3_5_35B_A3B, "0.27.0", enable_prefix_caching=True) == _tokens(
        QWEN3_5_35B_A3B, "0.27.0", enable_prefix_caching=True, mamba_cache_mode="align")


def test_plan_follows_the_default_and_says_which_mode() -> None:
    plan = vllm_mem.plan(QWEN3_5_35B_A3B, gpu="H100-80GB", max_model_len=32768, vllm_version="0.28.0")
    assert plan.to_dict()["inputs"]["mamba_cache_mode"] == "align"
    off = vllm_mem.plan(QWEN3_5_35B_A3B, gpu="H100-80GB", max_model_len=32768, vllm_version="0.27.0")
    assert off.to_dict()["inputs"]["mamba_cache_mode"] == "none"


def test_a_family_whose_class_flag_is_not_read_is_refused_by_default_from_0_28() -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError) as err:
        _tokens(NEMOTRON_NANO_9B_V2, "0.28.0")
    assert err.value.field == "enable_prefix_caching"
    assert "vLLM 0.28.0 turns prefix caching on by default" in str(err.value)
    assert "enable_prefix_caching=False" in str(err.value) and "mamba_cache_mode=" in str(err.value)
    with pytest.raises(vllm_mem.InvalidArgumentError, match="enable_prefix_caching"):
        vllm_mem.plan(NEMOTRON_NANO_9B_V2, gpu="H100-80GB", max_model_len=8192, vllm_version="0.30.0",
                      enforce_eager=True)
    # Either answer the refusal asks for plans; before 0.28 nothing needs answering.
    assert _tokens(NEMOTRON_NANO_9B_V2, "0.28.0", mamba_cache_mode="align") == _tokens(
        NEMOTRON_NANO_9B_V2, "0.28.0", enable_prefix_caching=True, mamba_cache_mode="align")
    assert _tokens(NEMOTRON_NANO_9B_V2, "0.27.0") == _tokens(NEMOTRON_NANO_9B_V2, "0.28.0", enable_prefix_caching=False)
    # An explicit request for prefix caching is refused on every release until the mode is given.
    with pytest.raises(vllm_mem.InvalidArgumentError, match="^enable_prefix_caching: on a hybrid"):
        _tokens(NEMOTRON_NANO_9B_V2, "0.19.0", enable_prefix_caching=True)


def test_attention_only_models_are_unchanged() -> None:
    for release in ("0.27.0", "0.28.0"):
        assert _tokens(LLAMA, release, max_model_len=8192) == _tokens(
            LLAMA, release, max_model_len=8192, enable_prefix_caching=False)
