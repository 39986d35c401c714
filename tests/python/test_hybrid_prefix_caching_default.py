"""Prefix caching left unset on a hybrid model: off up to 0.27, on from 0.28 (vllm#50991, rule
hybrid_prefix_caching_default in vllm_versions.json), and vLLM's choice of mamba_cache_mode then
(MambaModelConfig.verify_and_update_config in vllm/model_executor/models/config.py). Up to 0.27
vLLM picked by the model class ('all' when it implements SupportsMambaPrefixCaching, else
'align'); vllm#50991 ('enable prefix cache for hybrid model by default and change the default mode
to `align`') made it 'align' for every class, with or without speculative decoding (rule
mamba_cache_mode_align_by_default). Attention-free Mamba models keep prefix caching off by default
on every release (ModelConfig.is_prefix_caching_supported is False for attn_type
'attention_free'; vLLM's tests/test_config.py pins it for state-spaces/mamba-130m-hf). The two
v0.28.0 Qwen3.5-0.8B start-ups of tests/data/vllm_release_logs.json check the default against
real token counts; these tests pin the resolution itself, family by family."""

from __future__ import annotations

import pytest
import vllm_mem
from test_families_hybrid import FALCON_MAMBA_7B, LFM2_1_2B, MAMBA_130M
from test_hybrid_models import JAMBA, NEMOTRON_NANO_9B_V2, QWEN3_NEXT
from test_kimi_linear import KIMI_LINEAR_48B
from test_model_families import QWEN3_5_35B_A3B
from test_zamba2 import ZAMBA2_1_2B

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


# Small configs of the families no other test file holds whole; the mode does not depend on the
# sizes. Field names are the ones vllm_mem's readers take (csrc/core/model/hybrid_config.cc).
MAMBA2_SMALL = {"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "torch_dtype": "bfloat16",
                "hidden_size": 512, "num_hidden_layers": 4, "vocab_size": 32000, "num_heads": 16, "head_dim": 64,
                "n_groups": 1, "state_size": 128, "conv_kernel": 4, "chunk_size": 256}
_MAMBA2_PREFIXED = {"torch_dtype": "bfloat16", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                    "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 32000, "mamba_n_heads": 16,
                    "mamba_d_head": 64, "mamba_n_groups": 1, "mamba_d_state": 128, "mamba_d_conv": 4,
                    "mamba_expand": 2, "mamba_chunk_size": 256, "max_position_embeddings": 65536}
BAMBA_SMALL = {**_MAMBA2_PREFIXED, "architectures": ["BambaForCausalLM"], "model_type": "bamba",
               "attn_layer_indices": [2]}
GRANITE_4_H_SMALL = {**_MAMBA2_PREFIXED, "architectures": ["GraniteMoeHybridForCausalLM"],
                     "model_type": "granitemoehybrid", "position_embedding_type": "nope",
                     "layer_types": ["mamba", "mamba", "attention", "mamba"]}
FALCON_H1_SMALL = {**_MAMBA2_PREFIXED, "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1",
                   "head_dim": 64}

# Every hybrid family vllm_mem supports (attention beside recurrent state).
HYBRIDS = {"nemotron_h": NEMOTRON_NANO_9B_V2, "qwen3_next": QWEN3_NEXT, "qwen3_5_moe": QWEN3_5_35B_A3B,
           "jamba": JAMBA, "bamba": BAMBA_SMALL, "granitemoehybrid": GRANITE_4_H_SMALL, "falcon_h1": FALCON_H1_SMALL,
           "zamba2": ZAMBA2_1_2B, "kimi_linear": KIMI_LINEAR_48B, "lfm2": LFM2_1_2B}
ATTENTION_FREE = {"mamba": MAMBA_130M, "falcon_mamba": FALCON_MAMBA_7B, "mamba2": MAMBA2_SMALL}


def _mode(config: dict, release: str, **settings: object) -> str:
    plan = vllm_mem.plan(config, gpu="H200", max_model_len=4096, vllm_version=release, enforce_eager=True,
                         **settings)
    return plan.to_dict()["inputs"]["mamba_cache_mode"]


@pytest.mark.parametrize("release", ["0.28.0", "0.32.0"])
@pytest.mark.parametrize("family", sorted(HYBRIDS))
def test_every_hybrid_family_gets_align_by_default_from_0_28(family: str, release: str) -> None:
    # vllm#50991: with prefix caching on and no --mamba-cache-mode, MambaModelConfig sets 'align'
    # without reading the class flag, so Nemotron-H (whose NemotronHForCausalLM implements
    # SupportsMambaPrefixCaching and got 'all' before, vllm#39809) gets 'align' like Qwen3.5.
    config = HYBRIDS[family]
    assert _mode(config, release) == "align"
    assert _mode(config, release, enable_prefix_caching=True) == "align"
    assert _mode(config, release, enable_prefix_caching=False) == "none"
    assert _tokens(config, release, max_model_len=4096) == _tokens(
        config, release, max_model_len=4096, enable_prefix_caching=True, mamba_cache_mode="align")


def test_speculative_decoding_changes_nothing_from_0_28() -> None:
    # Before vllm#50991, a class with the flag and a speculative config got 'align' ("Mamba cache
    # mode is set to 'align' for %s by default when prefix caching and speculative decoding are
    # enabled", PR #40454); from it the speculative config is not read: 'align' either way.
    for release in ("0.28.0", "0.32.0"):
        assert _tokens(NEMOTRON_NANO_9B_V2, release, num_speculative_tokens=2) == _tokens(
            NEMOTRON_NANO_9B_V2, release, num_speculative_tokens=2, mamba_cache_mode="align")


@pytest.mark.parametrize("family", sorted(ATTENTION_FREE))
def test_attention_free_models_keep_prefix_caching_off_by_default(family: str) -> None:
    # ModelConfig.is_prefix_caching_supported is False for attention-free models, and vllm#50991
    # turned the default on for hybrids only: mode 'none' unless prefix caching is asked for (then
    # a refusal by name: tests/cpp/plan/test_mamba_cache_mode_resolution.cc).
    config = ATTENTION_FREE[family]
    for release in ("0.27.0", "0.28.0", "0.32.0"):
        assert _mode(config, release) == "none"
        assert _tokens(config, release, max_model_len=4096) == _tokens(
            config, release, max_model_len=4096, enable_prefix_caching=False)
        for asked in ({"enable_prefix_caching": True}, {"mamba_cache_mode": "align"}):
            with pytest.raises(vllm_mem.NotModelledError, match="attention-free Mamba model"):
                _tokens(config, release, max_model_len=4096, **asked)
            with pytest.raises(vllm_mem.NotModelledError, match="attention-free Mamba model"):
                vllm_mem.plan(config, gpu="H100-80GB", max_model_len=4096, vllm_version=release, enforce_eager=True,
                              **asked)


def test_before_0_28_the_class_flag_decides_and_is_refused_by_name() -> None:
    # Up to 0.27 prefix caching is off unless asked for; asked, vLLM picks by the class flag,
    # which vllm_mem does not hold per family and release: refused until the mode is given.
    assert _tokens(NEMOTRON_NANO_9B_V2, "0.27.0") == _tokens(NEMOTRON_NANO_9B_V2, "0.28.0", enable_prefix_caching=False)
    with pytest.raises(vllm_mem.InvalidArgumentError, match="^enable_prefix_caching: on a hybrid") as err:
        _tokens(NEMOTRON_NANO_9B_V2, "0.27.0", enable_prefix_caching=True)
    assert "mamba_cache_mode='all' or 'align'" in str(err.value)
    assert _tokens(NEMOTRON_NANO_9B_V2, "0.19.0", enable_prefix_caching=True, mamba_cache_mode="align") > 0


def test_attention_only_models_are_unchanged() -> None:
    for release in ("0.27.0", "0.28.0"):
        assert _tokens(LLAMA, release, max_model_len=8192) == _tokens(
            LLAMA, release, max_model_len=8192, enable_prefix_caching=False)
