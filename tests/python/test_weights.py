"""Weights API from Python: counts, breakdowns, and errors that name the field."""

from __future__ import annotations

from typing import Any

import pytest
import vllm_mem
from vllm_mem import ModelSpec

TINY: dict[str, Any] = {
    "model_type": "llama",
    "num_hidden_layers": 4,
    "hidden_size": 64,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 32,
}


# Published parameter counts of the real checkpoints (model cards / safetensors metadata).
@pytest.mark.parametrize(
    "model, published",
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248),
        ("meta-llama/Llama-3.1-70B-Instruct", 70_553_706_496),
        ("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512),
        ("microsoft/phi-2", 2_779_683_840),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46_702_792_704),
    ],
)
def test_published_parameter_counts(model: str, published: int) -> None:
    assert ModelSpec.from_hf_config(model).num_parameters() == published


def test_breakdown_is_consistent_with_weight_bytes() -> None:
    spec = ModelSpec.from_hf_config(TINY)
    for tp, pp in [(1, 1), (2, 1), (1, 2), (2, 2), (4, 4)]:
        b = spec.weight_breakdown(tensor_parallel_size=tp, pipeline_parallel_size=pp)
        ranks = b["per_pp_rank"]
        assert len(ranks) == pp
        parts = ("embedding_bytes", "lm_head_bytes", "attention_bytes", "mlp_bytes", "norm_bytes",
                 "quantization_overhead_bytes", "buffer_bytes")
        for r in ranks:
            assert r["total_bytes"] == sum(r[p] for p in parts)
        assert b["fullest_rank_bytes"] == max(r["total_bytes"] for r in ranks)
        assert spec.weight_bytes(tensor_parallel_size=tp, pipeline_parallel_size=pp) == b["fullest_rank_bytes"]
        assert ranks[0]["first_layer"] == 0 and ranks[-1]["end_layer"] == TINY["num_hidden_layers"]
        assert b["num_parameters"] == spec.num_parameters()


def test_pipeline_ranks_hold_the_ends() -> None:
    b = ModelSpec.from_hf_config(TINY).weight_breakdown(pipeline_parallel_size=2)
    first, last = b["per_pp_rank"]
    assert first["embedding_bytes"] > 0 and first["lm_head_bytes"] == 0
    assert last["embedding_bytes"] == 0 and last["lm_head_bytes"] > 0


def test_quantization_option_and_checkpoint() -> None:
    llama = ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    bf16 = llama.weight_breakdown()
    fp8 = llama.weight_breakdown(quantization="fp8")
    assert fp8["quantization"] == "fp8" and bf16["quantization"] is None
    assert fp8["per_pp_rank"][0]["mlp_bytes"] * 2 == bf16["per_pp_rank"][0]["mlp_bytes"]
    # A checkpoint quantized offline with the same scheme takes the same room.
    ct = ModelSpec.from_hf_config("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8")
    assert ct.quantization is not None and ct.quantization.method == "compressed-tensors"
    assert abs(ct.weight_bytes() - fp8["fullest_rank_bytes"]) < 1e-3 * fp8["fullest_rank_bytes"]
    awq = ModelSpec.from_hf_config("Qwen/Qwen2.5-7B-Instruct-AWQ")
    assert awq.weight_bytes(quantization="awq_marlin") == awq.weight_bytes()
    assert awq.weight_bytes() < ModelSpec.from_hf_config("Qwen/Qwen2.5-7B-Instruct").weight_bytes() / 2


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"tensor_parallel_size": 3}, "tensor_parallel_size"),
        ({"tensor_parallel_size": 0}, "tensor_parallel_size"),
        ({"pipeline_parallel_size": 5}, "pipeline_parallel_size"),
        ({"dtype": "float7"}, "dtype"),
        ({"quantization": "zip"}, "quantization"),
        ({"quantization": "gptq"}, "quantization"),  # needs a GPTQ checkpoint
    ],
)
def test_errors_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        ModelSpec.from_hf_config(TINY).weight_bytes(**kwargs)


def test_unknown_checkpoint_quantization_names_the_field() -> None:
    bad = dict(TINY, quantization_config={"quant_method": "teleport"})
    with pytest.raises(ValueError, match=r"^quantization_config\.quant_method:.*allowed"):
        ModelSpec.from_hf_config(bad)


def test_bundled_configs_all_size() -> None:
    for name in vllm_mem.bundled_model_configs():
        spec = ModelSpec.from_hf_config(name)
        assert spec.weight_bytes() > spec.num_parameters() // 2


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-30B-A3B", "google/gemma-3-27b-it",
                                  "deepseek-ai/DeepSeek-V3"])
def test_weight_bytes_default_call_equals_the_breakdown(name: str) -> None:
    # weight_bytes(tensor_parallel_size=N) with the other arguments at their defaults skips the
    # Python argument checks and reads the model's remembered breakdown; weight_breakdown computes
    # afresh through the checks. Same bytes, first call and again; bad values keep the checks.
    spec = vllm_mem.ModelSpec.from_hf_config(name)
    for tp in (1, 2, 8):
        for _ in range(2):
            assert spec.weight_bytes(tensor_parallel_size=tp) == \
                spec.weight_breakdown(tensor_parallel_size=tp)["fullest_rank_bytes"]
    with pytest.raises(vllm_mem.InvalidArgumentError, match="tensor_parallel_size"):
        spec.weight_bytes(tensor_parallel_size=0)
    with pytest.raises(TypeError, match="tensor_parallel_size"):
        spec.weight_bytes(tensor_parallel_size=True)
