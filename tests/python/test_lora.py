"""--enable-lora as vLLM sizes it (csrc/core/plan/lora_estimate.h, docs/weights.md "LoRA").

vLLM's GPUModelRunner.load_model builds the LoRA manager inside the DeviceMemoryProfiler that
measures "Model loading took", so the adapter slots are a weights term. LoRAModelManager wraps
every linear layer of the language model; each wrapper's create_lora_weights allocates, per
sub-projection, lora_a_stacked (max_loras, 1, rank_a, in) and lora_b_stacked (max_loras, 1, out,
rank) in lora_dtype (vllm/lora/layers/base_linear.py, column_parallel_linear.py,
row_parallel_linear.py); LlamaForCausalLM also lists embed_tokens and lm_head in
embedding_modules (vocal_parallel_embedding.py: lora_a (max_loras, vocab, rank), lora_b
(max_loras, 1, hidden, rank); logits_processor.py: lora_a (max_loras, 1, rank, hidden), lora_b
(max_loras, 1, vocab, rank)). The profile run's LoRA linears shrink into a float32
(slices, tokens, rank) buffer (punica_wrapper/punica_gpu.py add_lora_linear)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import cli
from vllm_mem.errors import InvalidArgumentError, NotModelledError
from vllm_mem.vllm_args import plan_from_vllm_args

ROOT = Path(__file__).resolve().parents[2]
GiB = 1 << 30
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
# Llama-3.1-8B's config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, head_dim 128,
# intermediate 14336, vocab 128256, bf16.
H, LAYERS, HEADS, KV_HEADS, HEAD_DIM, INTER, VOCAB = 4096, 32, 32, 8, 128, 14336, 128256
BF16 = 2
COMMON: dict[str, Any] = dict(max_model_len=8192, max_num_batched_tokens=8192, max_num_seqs=256, vllm_version="0.19")


def _layer_elems(rank: int, tp: int) -> int:
    """One decoder layer's lora_a + lora_b elements for one slot on one TP rank."""
    q, kv, inter = HEADS // tp * HEAD_DIM, KV_HEADS // tp * HEAD_DIM, INTER // tp
    qkv = 3 * rank * H + (q + 2 * kv) * rank  # MergedQKVParallelLinearWithLoRA: 3 slices
    o = rank * q + H * rank  # RowParallelLinearWithLoRA: input split
    gate_up = 2 * rank * H + 2 * inter * rank  # MergedColumnParallelLinearWithLoRA: 2 slices
    down = rank * inter + H * rank
    return qkv + o + gate_up + down


def _punica_bytes(tokens: int, seqs: int, loras: int) -> int:
    """The Punica wrapper's index tensors, in 512-byte allocator blocks (lora_estimate.cc)."""

    def blocks(n: int) -> int:
        return math.ceil(n / 512) * 512

    meta = [2 * blocks(4 * rows) + 2 * blocks(4 * (loras + 1)) + blocks(4 * (loras + 2)) for rows in (tokens, seqs)]
    return blocks(8 * tokens) + 2 * blocks(8 * seqs) + blocks(16 * tokens) + sum(meta)


def _slots(rank: int, tp: int, loras: int = 1) -> int:
    table = (VOCAB + H) * rank  # embed_tokens' and lm_head's slots, each
    mapping = VOCAB * 8 if tp > 1 else 0  # LogitsProcessorWithLoRA's sharded_to_full_mapping
    return (LAYERS * _layer_elems(rank, tp) + 2 * table) * loras * BF16 + mapping + _punica_bytes(8192, 256, loras)


@pytest.mark.parametrize("tp", [1, 2])
def test_llama_slots_by_hand(tp: int) -> None:
    base = vllm_mem.plan(LLAMA, "H100", tensor_parallel_size=tp, **COMMON)
    lora = vllm_mem.plan(LLAMA, "H100", tensor_parallel_size=tp, enable_lora=True, **COMMON)
    assert lora.lora_slots_bytes == _slots(16, tp)
    assert lora.weights_bytes - base.weights_bytes == lora.lora_slots_bytes
    assert base.lora_slots_bytes == 0
    # TP 1: 32 x 1,310,720 elements of bf16 = 80 MiB in the decoder layers alone.
    assert LAYERS * _layer_elems(16, 1) * BF16 == 80 << 20
    d = lora.to_dict()
    assert d["lora_slots"]["bytes"] == lora.lora_slots_bytes
    assert d["ranks"][0]["lora_slots_bytes"] == lora.lora_slots_bytes
    assert "of which LoRA adapter slots" in str(lora)


def test_more_loras_and_a_higher_rank_scale_the_slots() -> None:
    lora = vllm_mem.plan(LLAMA, "H100", enable_lora=True, max_loras=4, max_lora_rank=64, **COMMON)
    assert lora.lora_slots_bytes == _slots(64, 1, loras=4)


def test_the_profile_run_adds_the_float32_shrink_buffer() -> None:
    """The MLP sets Llama's forward peak: gate_up_proj's 2-slice buffer (2, 8192, 16) float32."""
    base = vllm_mem.plan(LLAMA, "H100", **COMMON)
    lora = vllm_mem.plan(LLAMA, "H100", enable_lora=True, **COMMON)
    rank = lora._p.ranks[0]
    assert rank.activation.lora_bytes == 2 * 8192 * 16 * 4
    assert rank.activation.forward_bytes - base._p.ranks[0].activation.forward_bytes == 2 * 8192 * 16 * 4


def test_pipeline_ranks_hold_the_embedding_and_lm_head_slots_at_their_ends() -> None:
    lora = vllm_mem.plan(LLAMA, "H100", enable_lora=True, pipeline_parallel_size=2, **COMMON)
    first, last = (r.lora_slots_bytes for r in lora.ranks)
    table = (VOCAB + H) * 16 * BF16
    assert first == last == 16 * _layer_elems(16, 1) * BF16 + table + _punica_bytes(8192, 256, 1)


def test_the_command_line_and_the_cli_plan_it() -> None:
    api = vllm_mem.plan(LLAMA, "H100", enable_lora=True, max_loras=4, max_lora_rank=64, **COMMON)
    served = plan_from_vllm_args(
        [
            "vllm",
            "serve",
            LLAMA,
            "--max-model-len",
            "8192",
            "--max-num-batched-tokens",
            "8192",
            "--max-num-seqs",
            "256",
            "--enable-lora",
            "--max-loras",
            "4",
            "--max-lora-rank",
            "64",
            "--max-cpu-loras",
            "8",
            "--lora-modules",
            "sql=/adapters/sql",
        ],
        "H100",
        vllm_version="0.19",
    )
    assert served.plan.to_dict()["lora_slots"] == api.to_dict()["lora_slots"]
    assert served.plan.weights_bytes == api.weights_bytes
    assert "--lora-modules" in " ".join(served.command.ignored)
    assert (
        cli.main(
            [
                "plan",
                LLAMA,
                "--gpu",
                "H100",
                "--max-model-len",
                "8192",
                "--vllm-version",
                "0.19",
                "--enable-lora",
                "--max-loras",
                "4",
                "--max-lora-rank",
                "64",
            ]
        )
        == 0
    )


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"max_lora_rank": 24}, "max_lora_rank", "1, 8, 16, 32, 64, 128, 256, 320, 512"),
        ({"max_loras": 0}, "max_loras", ""),
        ({"lora_dtype": "float32"}, "lora_dtype", "auto, float16, bfloat16"),
        ({"max_loras": 4, "max_cpu_loras": 2}, "max_cpu_loras", "max_cpu_loras (2) must be >= max_loras (4)"),
    ],
)
def test_bad_lora_settings_name_the_field(kw: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        vllm_mem.plan(LLAMA, "H100", enable_lora=True, **COMMON, **kw)
    assert info.value.field == field
    assert words in str(info.value)


def test_what_is_not_modelled_is_refused_by_name() -> None:
    # MoE experts (vLLM's FusedMoE LoRA wrappers): Mixtral has no lora_layout and MoE layers.
    with pytest.raises(NotModelledError, match="enable_lora"):
        vllm_mem.plan("mistralai/Mixtral-8x7B-Instruct-v0.1", "H100", enable_lora=True, **COMMON)
    # A release whose slots carry lora_extra_vocab_size rows (vllm_versions.json lora_extra_vocab).
    with pytest.raises(NotModelledError, match="lora_extra_vocab"):
        vllm_mem.plan(LLAMA, "H100", enable_lora=True, **{**COMMON, "vllm_version": "0.11"})
    # Without --enable-lora the LoRA rows change nothing.
    assert vllm_mem.plan(LLAMA, "H100", max_lora_rank=64, **COMMON).lora_slots_bytes == 0


def _release_log(log_id: str) -> dict[str, Any]:
    doc = json.loads((ROOT / "tests" / "data" / "vllm_release_logs.json").read_text())
    return next(log for log in doc["logs"] if log["id"] == log_id)


def test_the_ministral_lora_start_up_against_its_sibling() -> None:
    """The workshop's two v0.21.0 start-ups on one L40S (tests/data/vllm_release_logs.json): without
    LoRA at 8K 27.91 GiB / 215,152 tokens, with one rank-16 adapter at 2K 27.82 GiB / 214,512 tokens.
    139,264 bytes a token in 16-token blocks pins each pool to its printed block count: 13,447
    blocks in [27.905, 27.915) GiB is [27.9054, 27.9075), 13,407 in [27.815, 27.825) is [27.8221,
    27.8242), so LoRA took 0.0812-0.0854 GiB. The plan's difference (0.0833 GiB) is the decoder
    layers' slots (Mistral3ForConditionalGeneration lists no embedding_modules) and the Punica
    tensors: the encoder phase of the multimodal profile run sets both start-ups' peak, so the
    1 MiB shrink buffer moves nothing."""
    sibling = _release_log("eks-workshop-ministral-3-8b-l40s-v0.21.0")
    lora_log = _release_log("eks-workshop-ministral-3-8b-lora-l40s-v0.21.0")
    doc = json.loads((ROOT / "tests" / "data" / "vllm_release_logs.json").read_text())
    config = doc["configs"][sibling["model"]]["config"]
    common = dict(
        gpu_memory_utilization=0.9,
        block_size=16,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        enforce_eager=True,
        vllm_version="0.21.0",
    )
    base = vllm_mem.plan(config, "L40S", max_model_len=sibling["max_model_len"], **common)
    lora = vllm_mem.plan(
        config, "L40S", max_model_len=lora_log["max_model_len"], enable_lora=True, max_lora_rank=16, **common
    )
    diff_gib = (base.available_kv_cache_bytes - lora.available_kv_cache_bytes) / GiB
    assert 0.0812 <= diff_gib <= 0.0854, diff_gib
    assert base.available_kv_cache_bytes - lora.available_kv_cache_bytes == lora.lora_slots_bytes
    layer = (
        3 * 16 * 4096
        + (4096 + 2 * 1024) * 16
        + 16 * 4096
        + 4096 * 16
        + 2 * 16 * 4096
        + 2 * 14336 * 16
        + 16 * 14336
        + 4096 * 16
    )
    assert lora.lora_slots_bytes == 34 * layer * BF16 + _punica_bytes(8192, 256, 1)


def test_the_sweep_plans_lora_as_plan_does() -> None:
    lora = vllm_mem.plan(LLAMA, "H100", enable_lora=True, max_loras=2, max_lora_rank=32, **COMMON)
    rows = vllm_mem.sweep(LLAMA, "H100", enable_lora=True, max_loras=2, max_lora_rank=32, as_frame=False, **COMMON)
    assert int(rows["weights_bytes"][0]) == lora.weights_bytes
    assert int(rows["available_kv_cache_bytes"][0]) == lora.available_kv_cache_bytes
