"""Speculative decoding in vllm_mem.plan (docs/speculative_decoding.md). The figures are derived
by hand from vLLM's source (the file is named at each test) or published (DeepSeek-V3's
README_WEIGHTS.md); tests/cpp/plan/test_speculative_decoding.cc covers the core directly."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import _C
from vllm_mem.model_spec import ModelSpec

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
EAGLE3 = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}


def _plan(speculative=None, model=LLAMA, **kw):
    kw.setdefault("max_model_len", 8192)
    kw.setdefault("max_num_seqs", 256)
    kw.setdefault("max_num_batched_tokens", 8192)
    return vllm_mem.plan(model, "H100-80GB", speculative_config=speculative, **kw)


def _rank(p):
    return p._p.ranks[0]  # the core's rank (with the cudagraph estimate)


def test_eagle3_head_weights_and_kv_share() -> None:
    # llama_eagle3.py (bf16): 424,689,664 parameters (qkv over 2H, o, MLP, 4 norms, fc 3H->H,
    # lm_head over draft_vocab_size 32000) + the int64 d2t map of 32000 entries.
    base, p = _plan(), _plan(EAGLE3)
    rb, r = _rank(base), _rank(p)
    assert r.draft_weights_bytes == 424_689_664 * 2 + 32_000 * 8
    assert r.weights_bytes == rb.weights_bytes + r.draft_weights_bytes
    # One more layer of 16 tokens x 8 KV heads x 128 x (K, V) x 2 bytes = 65,536 per block.
    assert rb.kv_bytes_per_block == 32 * 65_536
    assert r.kv_bytes_per_block == 33 * 65_536
    assert r.draft_kv_bytes_per_block == 65_536
    assert r.draft_kv_cache_bytes == r.num_blocks * 65_536
    text = p.report()
    assert "of which drafter " in text and "of which drafter KV" in text


def test_draft_model_pairing_kv_as_vllm_sums_the_pages() -> None:
    # Llama-3.2-1B beside Llama-3.1-8B: nothing shared (draft_model.py); its 16 layers of
    # 16 x 8 x 64 x 2 x 2 = 32,768 bytes add 524,288 per block (UniformTypeKVCacheSpecs).
    p = _plan({"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4})
    r = _rank(p)
    assert r.draft_kv_bytes_per_block == 524_288
    draft = ModelSpec.from_hf_config("meta-llama/Llama-3.2-1B-Instruct")
    assert draft.num_parameters() == 1_235_814_400  # the model card's 1.24B
    assert r.draft_weights_bytes == draft.weight_bytes()


def test_method_inferred_from_the_name_as_vllm() -> None:
    c = vllm_mem.planner.speculative.speculative_config(
        {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 2}, LLAMA)
    assert c.method == "eagle3" and c.draft_vocab_size == 32000


def test_deepseek_v3_mtp_module() -> None:
    # README_WEIGHTS.md: "11.5B unique parameters (excluding the shared 0.9B Embedding and 0.9B
    # output Head)"; by hand 11,610,068,224 with eh_proj and the three norms (the C++ test).
    target = ModelSpec.from_hf_config("deepseek-ai/DeepSeek-V3")
    c = vllm_mem.planner.speculative.speculative_config({"method": "mtp", "num_speculative_tokens": 1},
                                                          "deepseek-ai/DeepSeek-V3")
    assert c.target_num_mtp_layers == 1
    w = _C.draft_weights(target._spec, c, 8, "auto", "")
    assert w.num_parameters == 11_610_068_224
    assert abs(w.num_parameters / 1e9 - 11.5) < 0.15
    assert w.embedding_shared and w.lm_head_shared
    p = vllm_mem.plan("deepseek-ai/DeepSeek-V3", "H200", tensor_parallel_size=8, max_model_len=4096,
                      speculative_config='{"method": "mtp", "num_speculative_tokens": 1}')
    # MLA page (block 64): 64 x (512 + 64) x 2 bytes = 73,728; 61 + 1 layers.
    assert _rank(p).kv_bytes_per_block == 62 * 73_728


def test_ngram_only_changes_the_capture_sizes() -> None:
    base, p = _plan(), _plan({"method": "ngram", "num_speculative_tokens": 3})
    assert _rank(p).weights_bytes == _rank(base).weights_bytes
    assert _rank(p).kv_bytes_per_block == _rank(base).kv_bytes_per_block
    sizes = list(_rank(p).cudagraph.capture_sizes)
    assert sizes[0] == 4 and all(s % 4 == 0 for s in sizes)  # multiples of 1 + K
    # VllmConfig._set_cudagraph_sizes / adjust_cudagraph_sizes_for_spec_decode:
    assert _C.spec_decode_capture_sizes([], 0, 4, 8192, 3) == [3, 6, 9, 18, 24]
    assert "\n  speculative decoding: ngram, num_speculative_tokens=3; decode graphs are multiples of 1 + K " \
           "tokens\n" in p.report()


def test_the_v1_runners_profile_run_adds_the_drafter_and_the_rejection_sampler() -> None:
    """From vLLM's code, no log (docs/speculative_decoding.md, The profile run). On v0.19's V1 runner
    the EAGLE head's dummy forward (gpu_model_runner.py _dummy_run -> drafter.dummy_run) runs beside
    the target's output: one Llama layer's working set, as the target's forward, + 8,192 x 4,096 x
    2 B = 1 GiB, the peak of this 256-sequence, 8,192-token start-up. Every speculative config adds
    _dummy_sampler_run's rejection-sampler logits, randn(256 drafts + 256 requests, 128,256) bf16, to
    the sampler phase. Model Runner V2 (0.28.0 for a dense model with EAGLE) adds neither."""
    eagle = {"model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 2}
    base = _rank(_plan(vllm_version="0.19.0")).activation
    p = _plan(eagle, vllm_version="0.19.0")
    a = _rank(p).activation
    assert a.drafter_phase_bytes == base.forward_bytes + 8192 * 4096 * 2 == p.activation_peak_bytes == 1 << 30
    assert a.rejection_logits_bytes == 2 * 256 * 128256 * 2
    assert a.sampler_phase_bytes == base.sampler_phase_bytes + a.rejection_logits_bytes
    assert "estimate: drafter forward of 8192 tokens beside the target's output" in p.report()
    ngram = _rank(_plan({"method": "ngram", "num_speculative_tokens": 3}, vllm_version="0.19.0")).activation
    assert ngram.drafter_phase_bytes == 0 and ngram.rejection_logits_bytes == a.rejection_logits_bytes
    v2 = _plan(eagle, vllm_version="0.28.0")
    assert v2.to_dict()["vllm_version"]["model_runner"] == "v2"
    assert _rank(v2).activation.drafter_phase_bytes == 0 == _rank(v2).activation.rejection_logits_bytes


@pytest.mark.parametrize(("config", "error", "words"), [
    ({"method": "eagle", "num_speculative_tokens": 3}, ValueError,
     "num_speculative_tokens was provided but without speculative model."),
    ({"method": "ngram"}, ValueError, "num_speculative_tokens must be provided with speculative model"),
    ({"method": "ngram", "num_speculative_tokens": 0}, ValueError, "speculative_config.num_speculative_tokens"),
    ({"method": "ngram", "num_speculative_tokens": "3"}, TypeError, "speculative_config.num_speculative_tokens"),
    ({**EAGLE3, "draft_tensor_parallel_size": 2}, ValueError,
     "speculative_draft_tensor_parallel_size=2 cannot be other value than 1 or target model tensor_parallel_size"),
    ({**EAGLE3, "tensor_parallel_size": 2}, ValueError, "Please pass 'draft_tensor_parallel_size' instead."),
    ({"method": "draft_model", "model": "Qwen/Qwen3-8B", "num_speculative_tokens": 2}, ValueError,
     "Target and draft model should have the same vocabulary size."),
    ({"method": "mtp", "num_speculative_tokens": 1}, ValueError, "'mtp' needs the target's MTP layers"),
    ({"method": "eagle4", "num_speculative_tokens": 1}, ValueError, "speculative_config.method"),
    ({"method": "medusa", "model": "x", "num_speculative_tokens": 1}, NotImplementedError, "not modelled"),
    ({"method": "eagle3", "model": "no/such-model-here", "num_speculative_tokens": 1}, ValueError,
     "speculative_config.model"),
    ({"methd": "ngram"}, ValueError, "speculative_config"),
    # SpeculativeConfig.__post_init__ (n-gram): the window's lower bound above its upper one.
    ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 2}, ValueError,
     "speculative_config.prompt_lookup_min: prompt_lookup_min=5 must be <= prompt_lookup_max=2"),
    ({"method": "ngram", "num_speculative_tokens": False}, TypeError, "speculative_config.num_speculative_tokens"),
    ({"method": "ngram", "num_speculative_tokens": 0.0}, TypeError, "speculative_config.num_speculative_tokens"),
    ([1, 2], TypeError, "speculative_config"),
    ("{not json", ValueError, "speculative_config"),
])
def test_refusals_name_the_field(config, error, words, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(error) as e:
        _plan(config, tensor_parallel_size=4 if isinstance(config, dict) and
              config.get("draft_tensor_parallel_size") == 2 else 1)
    assert words in str(e.value)


def test_pipeline_parallel_is_not_modelled() -> None:
    with pytest.raises(NotImplementedError):
        _plan(EAGLE3, pipeline_parallel_size=2)


def test_cli_flag(capsys) -> None:
    from vllm_mem.cli import main

    rc = main(["plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len", "8192",
               "--speculative-config", json.dumps(EAGLE3), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["ranks"][0]["draft_weights_bytes"] == 424_689_664 * 2 + 32_000 * 8


def test_eagle1_head_shares_embedding_and_lm_head() -> None:
    # llama_eagle.py: one decoder layer without input_layernorm, no final norm, fc 2H -> H; the
    # head ships no lm_head and vLLM shares the target's embedding (llm_base_proposer.py):
    # 41,943,040 (attention) + 176,160,768 (MLP) + 4,096 (post norm) + 33,554,432 (fc).
    p = _plan({"model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 2})  # "eagle-": eagle
    assert p._p.inputs.speculative.method == "eagle"
    assert _rank(p).draft_weights_bytes == 251_662_336 * 2
    assert _rank(p).draft_kv_bytes_per_block == 65_536
    own = _plan({"model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 2,
                 "eagle_embed_tokens_shared": False, "eagle_lm_head_shared": False})
    assert _rank(own).draft_weights_bytes == (251_662_336 + 2 * 128_256 * 4_096) * 2


# --- the keys of vLLM's SpeculativeConfig (csrc/core/plan/speculative_config_keys.json) -------------

#: A value vLLM's SpeculativeConfig takes for each key accepted without a memory effect (types as
#: its fields declare them in vllm/config/speculative.py); a new row of the table needs one here.
_NO_MEMORY_VALUES: dict[str, Any] = {
    "max_model_len": 2048,  # the EAGLE-3 head's max_position_embeddings: within both limits
    "prompt_lookup_max": 4, "prompt_lookup_min": 2, "revision": "main", "code_revision": "main",
    "disable_by_batch_size": 8, "acceptance_method": "typical_acceptance_sampler", "posterior_threshold": 0.09,
    "posterior_alpha": 0.3, "disable_logprobs": False, "disable_mqa_scorer": True,
    "disable_padded_drafter_batch": True, "enforce_eager": True, "parallel_drafting": False,
    "suffix_decoding_max_tree_depth": 24, "suffix_decoding_max_cached_requests": 10000,
    "suffix_decoding_max_spec_factor": 1.0, "suffix_decoding_min_token_prob": 0.1,
    "draft_load_config": {"load_format": "safetensors"}, "moe_backend": "triton",
    "attention_backend": "FLASH_ATTN", "index_share_for_mtp_iteration": False,
    "disable_eagle_block_drop": True, "use_local_argmax_reduction": True, "synthetic_acceptance_rates": [0.8, 0.6, 0.4],
    "synthetic_acceptance_length": 2.5, "enable_adaptive_verification": False, "dspark_draft_topk": 8,
}


def _release_with(row: dict[str, str]) -> str:
    """A release whose SpeculativeConfig has the key: the newest known unless it was removed."""
    if not row["removed"]:
        return ""
    return "0.9.2" if row["removed"] == "0.14.0" else "0.15.0"


_ROWS = {row["key"]: row for row in _C.speculative_config_keys()}


@pytest.mark.parametrize("key", sorted(k for k, row in _ROWS.items() if row["use"] == "no_memory"))
def test_each_key_without_memory_effect_is_accepted_and_listed(key: str) -> None:
    version = _release_with(_ROWS[key])
    plan = _plan({**EAGLE3, key: _NO_MEMORY_VALUES[key]}, vllm_version=version or None)
    base = _plan(EAGLE3, vllm_version=version or None)
    assert _rank(plan).weights_bytes == _rank(base).weights_bytes
    assert _rank(plan).kv_bytes_per_block == _rank(base).kv_bytes_per_block
    assert _rank(plan).cudagraph.capture_sizes == _rank(base).cudagraph.capture_sizes
    assert f"speculative_config keys with no memory effect: {key}\n" in plan.report()
    assert plan.to_dict()["inputs"]["speculative_config_no_effect_keys"] == [key]


def test_every_key_has_a_use_a_source_and_a_row_in_the_docs() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "speculative_decoding.md").read_text(encoding="utf-8")
    for key, row in _ROWS.items():
        assert row["use"] in ("used", "no_memory", "not_modelled", "internal", "refused", "vllm_mem"), key
        assert row["source"], key
        assert f"| `{key}` |" in docs, key
    assert set(_NO_MEMORY_VALUES) == {k for k, row in _ROWS.items() if row["use"] == "no_memory"}


def test_unknown_key_refused_as_vllm_refuses_it() -> None:
    # vLLM >= 0.14 (PR #31541: configs forbid extra fields): pydantic's unexpected keyword.
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        _plan({**EAGLE3, "num_speculative_token": 3})
    assert e.value.field == "speculative_config.num_speculative_token"
    assert "Unexpected keyword argument" in str(e.value) and "'num_speculative_token'" in str(e.value)
    # Before it, pydantic's extra='ignore' dropped the key: planned, and the report says so.
    old = _plan({**EAGLE3, "num_speculative_token": 3}, vllm_version="0.11.0")
    assert "speculative_config keys with no memory effect: num_speculative_token\n" in old.report()
    # A key removed from vLLM (PR #35060) is unknown to the releases after it.
    with pytest.raises(vllm_mem.InvalidArgumentError, match="removed by 0.16.0"):
        _plan({**EAGLE3, "disable_by_batch_size": 8}, vllm_version="0.19.0")


@pytest.mark.parametrize(("key", "value"), [
    ("draft_sample_method", "probabilistic"),  # "additional GPU memory usage" (its docstring)
    ("kv_cache_dtype", "fp8"),
    ("rejection_sample_method", "probabilistic"),
    ("use_heterogeneous_vocab", True),
    ("num_speculative_tokens_per_batch_size", [[1, 8, 3], [9, 256, 1]]),
    ("speculative_token_tree", "[(0,), (1,), (0, 0)]"),
])
def test_values_whose_memory_is_not_modelled_are_refused_by_name(key: str, value: Any) -> None:
    with pytest.raises(vllm_mem.NotModelledError) as e:
        _plan({**EAGLE3, key: value})
    assert f"speculative_config.{key}" in str(e.value)


@pytest.mark.parametrize("key", ["target_model_config", "draft_model_config", "draft_parallel_config"])
def test_fields_vllm_fills_itself_are_refused(key: str) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError, match=f"speculative_config.{key}"):
        _plan({**EAGLE3, key: {}})


def test_quantization_key_sizes_the_draft_weights() -> None:
    # SpeculativeConfig.__post_init__: ModelConfig(model=..., quantization=self.quantization):
    # fp8 quantizes the bf16 Llama-3.2-1B draft's linear layers at load.
    draft = {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}
    p = _plan({**draft, "quantization": "fp8"})
    spec = ModelSpec.from_hf_config("meta-llama/Llama-3.2-1B-Instruct")
    assert _rank(p).draft_weights_bytes == spec.weight_bytes(quantization="fp8")
    # 973,078,528 linear weights (16 layers x 60,817,408) go from 2 bytes to 1, scales aside.
    saved = spec.weight_bytes() - _rank(p).draft_weights_bytes
    assert 973_078_528 - 1024 < saved <= 973_078_528
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        _plan({**draft, "quantization": "gptq"})
    assert e.value.field == "speculative_config.quantization"
    with pytest.raises(TypeError, match="speculative_config.quantization"):
        _plan({**draft, "quantization": 8})


@pytest.mark.parametrize(("draft_len", "target_len", "words"), [
    (4096, 8192, "speculative_max_model_len=4096 cannot be larger than draft_max_model_len=2048"),
    (2048, 1024, "speculative_max_model_len=2048 cannot be larger than target_max_model_len=1024"),
])
def test_draft_max_model_len_refusals(draft_len: int, target_len: int, words: str) -> None:
    # _maybe_override_draft_max_model_len; the EAGLE-3 head's config: max_position_embeddings 2048.
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        _plan({**EAGLE3, "max_model_len": draft_len}, max_model_len=target_len,
              max_num_batched_tokens=max(target_len, 2048))
    assert e.value.field == "speculative_config.max_model_len" and words in str(e.value)
    with pytest.raises(vllm_mem.InvalidArgumentError, match="speculative_config.max_model_len"):
        _plan({**EAGLE3, "max_model_len": 0})  # Field(ge=1)


def test_tensor_parallel_size_null_is_vllm_default() -> None:
    # vLLM refuses tensor_parallel_size only when it is not None (_verify_args).
    assert _rank(_plan({**EAGLE3, "tensor_parallel_size": None})).weights_bytes == _rank(_plan(EAGLE3)).weights_bytes


def test_method_names_follow_the_release() -> None:
    # SpeculativeMethod of 0.10 (the Literal PR #24904 moved) has deepseek_mtp but not "mtp",
    # which the 0.11.0 docs list: a 0.10 plan with "mtp" is refused as pydantic refuses it.
    v3 = "deepseek-ai/DeepSeek-V3"
    kw = {"tensor_parallel_size": 8, "max_model_len": 4096}
    old = vllm_mem.plan(v3, "H200", vllm_version="0.10.0", speculative_config={"method": "deepseek_mtp",
                                                                                "num_speculative_tokens": 1}, **kw)
    assert old._p.inputs.speculative.method == "mtp"
    with pytest.raises(vllm_mem.InvalidArgumentError, match="'mtp' appeared in 0.11.0") as e:
        vllm_mem.plan(v3, "H200", vllm_version="0.10.0", speculative_config={"method": "mtp",
                                                                              "num_speculative_tokens": 1}, **kw)
    assert e.value.field == "speculative_config.method"
    docs = (Path(__file__).resolve().parents[2] / "docs" / "speculative_decoding.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([^`]+)` \| (?:`\w+`|not modelled)", docs, flags=re.M))
    assert {"mtp", "deepseek_mtp", "qwen3_5_mtp", "medusa", "suffix", "dflash"} <= listed
