"""--kv-cache-dtype-skip-layers (vLLM PR #33695, first release 0.19.0, rule kv_cache_dtype_skip_layers).

vLLM's Attention.__init__ (vllm/model_executor/layers/attention/attention.py) sets a layer's
kv_cache_dtype to "auto" (the model dtype) when the list holds "sliding_window" and the layer has
a sliding window, or holds str(layer index). Each figure below is derived by hand from vLLM's
formulas:

- page of one attention layer (vllm/v1/kv_cache_interface.py AttentionSpec.real_page_size_bytes):
  2 * block_size * num_kv_heads * head_size * dtype_size;
- grouping (vllm/v1/core/kv_cache_utils.py get_kv_cache_groups): all full-attention layers of one
  block size are one UniformTypeKVCacheSpecs group whose block costs the sum of the layers' pages;
  layers of different types are unified by unify_kv_cache_spec_page_size (a smaller page's block
  size is multiplied by max_page / page) and grouped per spec, group size = layers per type;
- blocks = available // (page * group_size) (get_kv_cache_config_from_groups), or
  available // sum(pages) for the UniformType group;
- per request (get_max_concurrency_for_kv_cache_config): sum over groups of
  max_memory_usage_bytes / page; full attention cdiv(L, B) blocks; sliding window
  cdiv(min(W - 1 + T, L), B) + 1 blocks (SlidingWindowSpec.max_memory_usage_bytes, T = 8192);
- printed tokens from 0.21 (PR #40694): int(num_blocks / blocks_per_request * L).

Model shapes from the bundled configs (python/vllm_mem/configs, each the model card's config.json):
gpt-oss-20b 24 layers alternating sliding (even) / full (odd), 8 KV heads of 64, window 128,
bfloat16; Llama-3.1-8B 32 full layers, 8 KV heads of 128, bfloat16.
"""

from __future__ import annotations

import json

import pytest
import vllm_mem
from vllm_mem.cli import main
from vllm_mem.vllm_args import plan_from_vllm_args

GPT_OSS = "openai/gpt-oss-20b"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
RELEASE = "0.22"  # tokens printed as int(concurrency x max_model_len) (rule kv_log_format 0.21.0)
GiB = 1 << 30


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_gpt_oss_sliding_window_layers_stay_bfloat16() -> None:
    available, length = 40 * GiB, 32768
    fp8_page, bf16_page = 2 * 16 * 8 * 64 * 1, 2 * 16 * 8 * 64 * 2  # 16,384 and 32,768 B at 16 tokens
    sliding_blocks = _cdiv(min(128 - 1 + 8192, length), 16) + 1  # 521
    # fp8 everywhere: one page size, 2 groups of 12 layers.
    blocks = available // (fp8_page * 12)
    per_request = _cdiv(length, 16) + sliding_blocks  # 2,048 + 521
    plain = vllm_mem.kv_cache_capacity(GPT_OSS, available, length, kv_cache_dtype="fp8", vllm_version=RELEASE)
    assert (plain.num_blocks, plain.num_tokens) == (blocks, int(blocks / per_request * length))
    # Sliding layers in bfloat16 (page 32,768): the fp8 full layers' block size doubles to 32 so
    # their page matches; groups of 12 layers of a 32,768 B page.
    blocks = available // (bf16_page * 12)
    per_request = _cdiv(length, 32) + sliding_blocks  # 1,024 + 521
    skip = vllm_mem.kv_cache_capacity(GPT_OSS, available, length, kv_cache_dtype="fp8", vllm_version=RELEASE,
                                      kv_cache_dtype_skip_layers=["sliding_window"])
    assert (skip.num_blocks, skip.num_tokens) == (blocks, int(blocks / per_request * length))
    assert skip.num_tokens < plain.num_tokens
    by_kind = {g.kind: g for g in skip.groups}
    assert by_kind["full_attention"].block_size == 32 and by_kind["sliding_window"].block_size == 16
    assert {g.page_size_bytes for g in skip.groups} == {bf16_page}


def test_llama_skipped_layer_indices_form_one_uniform_group() -> None:
    available, length = 20 * GiB, 8192
    fp8_page, bf16_page = 2 * 16 * 8 * 128 * 1, 2 * 16 * 8 * 128 * 2
    plain = vllm_mem.kv_cache_capacity(LLAMA, available, length, kv_cache_dtype="fp8", vllm_version=RELEASE)
    blocks = available // (32 * fp8_page)  # 20,480
    assert (plain.num_blocks, plain.num_tokens) == (blocks, int(blocks / _cdiv(length, 16) * length))
    skip = vllm_mem.kv_cache_capacity(LLAMA, available, length, kv_cache_dtype="fp8", vllm_version=RELEASE,
                                      kv_cache_dtype_skip_layers=["0", "31"])
    blocks = available // (30 * fp8_page + 2 * bf16_page)  # 19,275
    assert (skip.num_blocks, skip.num_tokens) == (blocks, int(blocks / _cdiv(length, 16) * length))
    assert skip.num_tokens == 308_400 and len(skip.groups) == 1 and skip.groups[0].uniform_type


def test_skip_without_a_quantized_kv_cache_changes_nothing() -> None:
    plain = vllm_mem.kv_cache_capacity(LLAMA, 20 * GiB, 8192, vllm_version=RELEASE)
    skip = vllm_mem.kv_cache_capacity(LLAMA, 20 * GiB, 8192, vllm_version=RELEASE,
                                      kv_cache_dtype_skip_layers=["0", "sliding_window"])
    assert (skip.num_blocks, skip.num_tokens) == (plain.num_blocks, plain.num_tokens)


def test_the_plan_sizes_the_kv_phase_with_it() -> None:
    plain = vllm_mem.plan(LLAMA, gpu="H100", max_model_len=8192, kv_cache_dtype="fp8", vllm_version=RELEASE)
    skip = vllm_mem.plan(LLAMA, gpu="H100", max_model_len=8192, kv_cache_dtype="fp8", vllm_version=RELEASE,
                         kv_cache_dtype_skip_layers=["0", "31"])
    # The same KV budget (nothing else of the start-up changes), 17/16 the bytes per block:
    # (30 x 1 + 2 x 2) / 32 of the fp8 pages.
    assert skip.available_kv_cache_bytes == plain.available_kv_cache_bytes
    assert skip.kv_cache is not None and plain.kv_cache is not None
    assert skip.kv_cache.bytes_per_block * 16 == plain.kv_cache.bytes_per_block * 17
    blocks = skip.available_kv_cache_bytes // skip.kv_cache.bytes_per_block
    assert skip.kv_cache.num_blocks == blocks and skip.kv_cache.num_tokens == int(blocks / 512 * 8192)
    assert skip.to_dict()["inputs"]["kv_cache_dtype_skip_layers"] == ["0", "31"]
    assert plain.to_dict()["inputs"]["kv_cache_dtype_skip_layers"] is None
    assert "kv_cache_dtype_skip_layers=0,31" in str(skip)


@pytest.mark.parametrize(("items", "field", "words"), [
    (["32"], "kv_cache_dtype_skip_layers[0]", "past the model's 32 layers"),
    (["0", "07"], "kv_cache_dtype_skip_layers[1]", "plain integer"),
    (["full_attention"], "kv_cache_dtype_skip_layers[0]", "'sliding_window' or a decoder-layer index"),
    (["-1"], "kv_cache_dtype_skip_layers[0]", "plain integer"),
    (["0,1"], "kv_cache_dtype_skip_layers[0]", "plain integer"),
])
def test_bad_items_name_the_field(items: list[str], field: str, words: str) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError, match=words) as info:
        vllm_mem.kv_cache_capacity(LLAMA, 20 * GiB, 8192, kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=items)
    assert info.value.field == field


@pytest.mark.parametrize("value", ["sliding_window", 3, [0], [None], {"0": 1}])
def test_wrong_types_are_type_errors_naming_the_field(value: object) -> None:
    with pytest.raises(TypeError, match="kv_cache_dtype_skip_layers") as info:
        vllm_mem.kv_cache_capacity(LLAMA, 20 * GiB, 8192, kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=value)
    assert isinstance(info.value, vllm_mem.InvalidArgumentError)
    assert info.value.field.startswith("kv_cache_dtype_skip_layers")


def test_releases_before_the_flag_refuse_it_as_their_parser_does() -> None:
    # PR #33695 merged 2026-03-27, after v0.18.0: rule kv_cache_dtype_skip_layers (0.19.0).
    with pytest.raises(vllm_mem.InvalidArgumentError, match="unrecognized arguments: --kv-cache-dtype-skip-layers") \
            as info:
        vllm_mem.plan(LLAMA, gpu="H100", kv_cache_dtype="fp8", vllm_version="0.18",
                      kv_cache_dtype_skip_layers=["0"])
    assert info.value.field == "kv_cache_dtype_skip_layers" and "accepted from vLLM 0.19.0" in str(info.value)
    with pytest.raises(vllm_mem.InvalidArgumentError, match="unrecognized arguments"):
        vllm_mem.kv_cache_capacity(LLAMA, 20 * GiB, 8192, vllm_version="0.18", kv_cache_dtype_skip_layers=["0"])
    assert vllm_mem.kv_cache_capacity(LLAMA, 20 * GiB, 8192, vllm_version="0.19",
                                      kv_cache_dtype_skip_layers=["0"]).num_blocks > 0
    # An empty list is no flag at all: every release takes it.
    assert vllm_mem.plan(LLAMA, gpu="H100", vllm_version="0.18", kv_cache_dtype_skip_layers=[]).fits


def test_what_no_rule_covers_is_refused_by_name() -> None:
    # An explicit --block-size where the skipped pages are unified by scaling block sizes.
    with pytest.raises(vllm_mem.NotModelledError, match="block_size=16"):
        vllm_mem.kv_cache_capacity(GPT_OSS, 40 * GiB, 32768, kv_cache_dtype="fp8", block_size=16,
                                   kv_cache_dtype_skip_layers=["sliding_window"])
    # The UniformType group scales no block size: an explicit block size is planned.
    assert vllm_mem.kv_cache_capacity(LLAMA, 20 * GiB, 8192, kv_cache_dtype="fp8", block_size=32,
                                      kv_cache_dtype_skip_layers=["0"]).num_blocks > 0
    with pytest.raises(vllm_mem.NotModelledError, match="MLA"):
        vllm_mem.kv_cache_capacity("deepseek-ai/DeepSeek-V3", 60 * GiB, 8192, kv_cache_dtype="fp8",
                                   tensor_parallel_size=8, kv_cache_dtype_skip_layers=["0"])


def test_the_command_lines_take_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    expected = vllm_mem.plan(GPT_OSS, gpu="H100", max_model_len=32768, kv_cache_dtype="fp8", vllm_version=RELEASE,
                             kv_cache_dtype_skip_layers=["sliding_window", "1"])
    # vLLM's own command line: nargs="+" values.
    pasted = plan_from_vllm_args(["vllm", "serve", GPT_OSS, "--max-model-len", "32768", "--kv-cache-dtype", "fp8",
                                  "--kv-cache-dtype-skip-layers", "sliding_window", "1"], "H100",
                                 vllm_version=RELEASE)
    assert pasted.plan.to_dict() == expected.to_dict()
    # vllm-mem plan: the same spelling (commas also split).
    for values in (["sliding_window", "1"], ["sliding_window,1"]):
        code = main(["plan", GPT_OSS, "--gpu", "H100", "--max-model-len", "32768", "--kv-cache-dtype", "fp8",
                     "--vllm-version", RELEASE, "--json", "--kv-cache-dtype-skip-layers", *values])
        out = capsys.readouterr().out
        assert expected.kv_cache is not None
        assert code in (0, 1) and json.loads(out)["kv_cache"]["num_tokens"] == expected.kv_cache.num_tokens
    code = main(["plan", GPT_OSS, "--gpu", "H100", "--kv-cache-dtype", "fp8", "--json",
                 "--kv-cache-dtype-skip-layers", "24"])
    err = capsys.readouterr().err
    assert code == 2 and "--kv-cache-dtype-skip-layers[0]" in err and "past the model's 24 layers" in err
