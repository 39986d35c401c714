"""One set of KV settings on every entry point (issue 20 item 5): the release's tokens formula on
kv_cache_capacity as on plan(), and decode context parallelism (--decode-context-parallel-size)
with vLLM's printed tokens and vLLM's own refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vllm_mem
from outcome import outcome
from vllm_mem import _C

GiB = 1 << 30
CONFIGS = Path(vllm_mem.__file__).resolve().parent / "configs"


def kimi_k2_config() -> dict:
    """Kimi-K2-Thinking's text model: DeepSeek-V3's architecture with the values of its published
    config.json (huggingface.co/moonshotai/Kimi-K2-Thinking/blob/main/config.json): 61 layers,
    64 heads, 384 routed experts (1 shared), n_group / topk_group 1, vocabulary 163,840,
    MLA kv_lora_rank 512 + qk_rope_head_dim 64, 262,144 positions (yarn x64 over 4,096). Its
    INT4 compressed-tensors experts change no KV byte, so the quantization block is left out."""
    cfg = json.loads((CONFIGS / "deepseek-ai--DeepSeek-V3.json").read_text())
    cfg.pop("quantization_config", None)
    cfg.update({"num_attention_heads": 64, "num_key_value_heads": 64, "n_routed_experts": 384, "n_shared_experts": 1,
                "n_group": 1, "topk_group": 1, "vocab_size": 163840, "num_hidden_layers": 61,
                "first_k_dense_replace": 1, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                "max_position_embeddings": 262144,
                "rope_scaling": {"type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096,
                                 "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}})
    return cfg


# vllm-project/recipes moonshotai/Kimi-K2-Think.md ("DCP Gain Analysis"): two start-ups of a
# November 2025 vLLM (kv_cache_utils.py:1224/1229, the 0.11 line's wording) on 8 x H200, TP 8:
#   "Available KV cache memory: 46.80 GiB" / "GPU KV cache size: 715,072 tokens"
#   "Available KV cache memory: 46.80 GiB" / "Multiplying the GPU KV cache size by the
#   dcp_world_size 8." / "GPU KV cache size: 5,721,088 tokens"
PRINTED_GIB = 46.80
BYTES_PER_BLOCK = 64 * 61 * (512 + 64) * 2  # MLA block of 64 tokens, bf16, 61 layers: 4,497,408


def test_kimi_k2_tp8_tokens_as_printed() -> None:
    cap = vllm_mem.kv_cache_capacity(kimi_k2_config(), int(PRINTED_GIB * GiB), max_model_len=262144,
                                     tensor_parallel_size=8, vllm_version="0.11.0")
    assert cap.bytes_per_block == BYTES_PER_BLOCK
    assert cap.num_blocks == 11173 and cap.num_tokens == 715_072


def test_kimi_k2_dcp8_tokens_as_printed() -> None:
    cfg = kimi_k2_config()
    at_printed = vllm_mem.kv_cache_capacity(cfg, int(PRINTED_GIB * GiB), max_model_len=262144,
                                            tensor_parallel_size=8, vllm_version="0.11.0",
                                            decode_context_parallel_size=8)
    # Same blocks per rank, each holding other tokens: 8 x the TP-only count.
    assert at_printed.num_blocks == 11173 and at_printed.num_tokens == 8 * 715_072 == 5_720_576
    # The DCP start-up printed 11,174 blocks' worth: it had >= 11,174 x 4,497,408 bytes
    # = 46.8030 GiB, which vLLM also prints as "46.80 GiB" (two separate runs, the printed
    # figure rounds [46.795, 46.805) GiB). Not a rule difference: the runs' budgets differ.
    need = 11174 * BYTES_PER_BLOCK
    assert round(need / GiB, 2) == PRINTED_GIB
    printed = vllm_mem.kv_cache_capacity(cfg, need, max_model_len=262144, tensor_parallel_size=8,
                                         vllm_version="0.11.0", decode_context_parallel_size=8)
    assert printed.num_tokens == 5_721_088
    # One request needs cdiv(262144, 8) tokens per rank: concurrency grows 8x too.
    plain = vllm_mem.kv_cache_capacity(cfg, need, max_model_len=262144, tensor_parallel_size=8,
                                       vllm_version="0.11.0")
    assert printed.max_concurrency == pytest.approx(8 * plain.max_concurrency)
    assert printed.bytes_per_request * 8 == plain.bytes_per_request


def test_dcp_tokens_on_concurrency_releases_are_not_multiplied_twice() -> None:
    # From 0.21 the printed count is int(concurrency x max_model_len); the per-request need
    # is already divided by DCP ("DCP/PCP sharding is already accounted for").
    cfg = kimi_k2_config()
    cap = vllm_mem.kv_cache_capacity(cfg, 11174 * BYTES_PER_BLOCK, max_model_len=262144, tensor_parallel_size=8,
                                     vllm_version="0.23.0", decode_context_parallel_size=8)
    assert cap.num_tokens == int(cap.max_concurrency * 262144)
    assert cap.num_tokens == 11174 * 64 * 8


@pytest.mark.parametrize(("tp", "dcp", "message"), [
    (3, 2, "tp_size=3 must be divisible bydcp_size=2."),
    (8, 2, "tensor parallel size 8 must be greater than total num kv heads 8 when enable decode context "
           "parallel for GQA/MQA"),
    (16, 4, "decode context parallel size must less than or equal to (tensor parallel size 16 // total num kv "
            "heads 8) = 2, but got 4"),
])
def test_dcp_refused_with_vllms_messages(tp: int, dcp: int, message: str) -> None:
    with pytest.raises(ValueError, match="decode_context_parallel_size") as e:
        vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 40 * GiB, tensor_parallel_size=tp,
                                   decode_context_parallel_size=dcp)
    assert message in str(e.value)


def test_dcp_gqa_shards_the_duplicated_heads() -> None:
    # Llama-3.1-8B: 8 KV heads; TP 16 duplicates each twice, DCP 2 shards them along tokens.
    plain = vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 10 * GiB, tensor_parallel_size=16,
                                       vllm_version="0.19")
    dcp = vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 10 * GiB, tensor_parallel_size=16,
                                     vllm_version="0.19", decode_context_parallel_size=2)
    assert dcp.num_blocks == plain.num_blocks
    assert dcp.num_tokens == 2 * plain.num_tokens


@pytest.mark.parametrize("bad", [0, -1, 2.0, "2", True])
def test_dcp_type_and_range(bad: object) -> None:
    with pytest.raises((ValueError, TypeError), match="decode_context_parallel_size"):
        vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 40 * GiB, decode_context_parallel_size=bad)


@pytest.mark.parametrize("version", ["0.10.2", "0.13.0", "0.19.0", "0.23.0"])
@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B-Instruct", "google/gemma-3-4b-it"])
def test_kv_cache_capacity_and_plan_agree_on_tokens(version: str, model: str) -> None:
    """The same release and settings give the same tokens on both entry points (before, the
    capacity call used one formula for every release)."""
    p = vllm_mem.plan(model, "H100", max_model_len=8192, vllm_version=version)
    assert p.kv_cache is not None
    cap = vllm_mem.kv_cache_capacity(model, p.available_kv_cache_bytes, max_model_len=8192, vllm_version=version,
                                     max_num_batched_tokens=p.settings["max_num_batched_tokens"])
    assert (cap.num_blocks, cap.num_tokens) == (p.kv_cache.num_blocks, p.kv_cache.num_tokens)


def test_plan_takes_dcp() -> None:
    cfg = kimi_k2_config()  # bf16 here (the INT4 block left out): a large GPU holds its weights
    big = {"total_memory_bytes": 512 * GiB}
    base = vllm_mem.plan(cfg, **big, gpu_count=8, tensor_parallel_size=8, max_model_len=131072,
                         vllm_version="0.11.0", kv_cache_memory_bytes=11174 * BYTES_PER_BLOCK)
    dcp = vllm_mem.plan(cfg, **big, gpu_count=8, tensor_parallel_size=8, max_model_len=131072,
                        vllm_version="0.11.0", kv_cache_memory_bytes=11174 * BYTES_PER_BLOCK,
                        decode_context_parallel_size=8)
    assert base.kv_cache is not None and dcp.kv_cache is not None
    assert dcp.kv_cache.num_tokens == 8 * base.kv_cache.num_tokens
    with pytest.raises(ValueError, match="must be divisible bydcp_size=3"):
        vllm_mem.plan(cfg, **big, gpu_count=8, tensor_parallel_size=8, max_model_len=131072,
                      vllm_version="0.11.0", decode_context_parallel_size=3)


def test_prefix_caching_is_a_no_op_for_attention_models() -> None:
    a = vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 20 * GiB, enable_prefix_caching=True)
    b = vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 20 * GiB, enable_prefix_caching=False)
    assert a.num_tokens == b.num_tokens
    with pytest.raises(TypeError, match="enable_prefix_caching"):
        vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 20 * GiB, enable_prefix_caching="yes")


def test_version_binding_reports_the_profile() -> None:
    o = _C.KvCacheOptions()
    assert _C.apply_vllm_version_kv_rules(o, "0.11.0").startswith("0.1")
    assert o.kv_tokens_from_concurrency is False  # the grouped count of the 0.10-0.19 lines


def test_vllm_serve_dcp_flag_is_mapped() -> None:
    # Before, --decode-context-parallel-size was refused as "not modelled".
    from vllm_mem.vllm_args import engine_args_to_plan_keywords, parse_vllm_args

    for argv in ("vllm serve m -tp 8 -dcp 8", "vllm serve m --tensor-parallel-size 8 --decode-context-parallel-size 8"):
        command = parse_vllm_args(argv)
        assert engine_args_to_plan_keywords(command.engine_args)["decode_context_parallel_size"] == 8


KEYWORD_CASES = [
    {},
    {"tensor_parallel_size": 2},
    {"kv_cache_dtype": "fp8", "block_size": 32, "pipeline_parallel_size": 2},
    {"max_num_batched_tokens": 2048, "vllm_version": "0.11.0"},
    {"tensor_parallel_size": 2, "decode_context_parallel_size": 2, "vllm_version": "0.19.0"},
]
BAD_KEYWORDS = [
    {"tensor_parallel_size": 2.0},
    {"tensor_parallel_size": True},
    {"block_size": 3},
    {"kv_cache_dtype": ""},
    {"vllm_version": ""},
    {"tensor_paralel_size": 2},
    {"enable_prefix_caching": "yes"},
]


@pytest.mark.parametrize("length", [8192, "auto", 131072])
@pytest.mark.parametrize("keywords", KEYWORD_CASES + BAD_KEYWORDS, ids=repr)
def test_keywords_on_a_loaded_model_equal_the_request_object(keywords: dict, length: object) -> None:
    # kv_cache_capacity(ModelSpec, ..., **keywords) converts the keywords in C++ (one crossing);
    # a model named by file and a request object take the Python request path. Same figures,
    # same errors, field included, for every budget (one that fits, one too small).
    spec = vllm_mem.ModelSpec.from_hf_config("google/gemma-3-27b-it")
    path = CONFIGS / "google--gemma-3-27b-it.json"
    for available in (40 * GiB, GiB // 8, [20 * GiB, 19 * GiB]):
        fast = outcome(lambda a=available: vllm_mem.kv_cache_capacity(spec, a, length, **keywords))
        by_path = outcome(lambda a=available: vllm_mem.kv_cache_capacity(path, a, length, **keywords))
        assert fast == by_path, (available, fast, by_path)
        try:
            request = vllm_mem.kv_cache._kv_request(length, None, dict(keywords))
        except Exception as exc:  # noqa: BLE001 - the request's own refusal is the fast path's too
            assert fast == (type(exc), str(exc), getattr(exc, "field", None))
            continue
        by_object = outcome(
            lambda a=available, r=request: vllm_mem.kv_cache_capacity(spec, a, settings=r))
        assert fast == by_object, (available, fast, by_object)
