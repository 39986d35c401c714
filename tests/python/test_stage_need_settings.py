"""assign_utilizations sizes a model stage with every setting plan() takes (issue 20, item 5).

A StageNeed's ``plan_options`` are plan()'s keywords; the need is planned from the same settings
object plan() evaluates, so each expected figure below comes from plan() itself on the same model,
settings and GPU:

- fixed bytes: what plan() leaves outside the KV budget when it is granted the whole device
  (``gpu_memory_utilization=1.0``, all of it free): ``requested_bytes`` less the tightest rank's
  ``available_kv_cache_bytes`` (weights, activation peak, non-torch and applied CUDA-graph memory);
- KV bytes: the least ``kv_cache_memory_bytes`` at which plan() reports the stage's concurrency
  (``kv_cache.max_concurrency``), one byte less falling short.
"""

from __future__ import annotations

from typing import Any

import pytest
import vllm_mem
from test_hybrid_models import NEMOTRON_NANO_9B_V2
from vllm_mem import StageNeed, assign_utilizations

GPU = "H100-80GB"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
# The bundled EAGLE-3 drafter for Llama-3.1-8B (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config.json).
EAGLE3 = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}


def _row(model: Any, options: dict[str, Any], *, concurrency: float, max_model_len: int, tp: int = 1) -> Any:
    need = StageNeed(
        0,
        model=model,
        max_model_len=max_model_len,
        concurrency=concurrency,
        tensor_parallel_size=tp,
        plan_options=options,
    )
    a = assign_utilizations([need], GPU, num_gpus=tp)
    assert a.feasible, a.message
    return a.stages[0]


def _planned_fixed_bytes(model: Any, settings: dict[str, Any]) -> int:
    """What plan() keeps outside the KV budget when granted the whole device, on its tightest rank."""
    total = vllm_mem.lookup_gpu(GPU).total_memory_bytes
    whole = vllm_mem.plan(model, GPU, gpu_memory_utilization=1.0, free_memory_bytes=total, **settings)
    return whole.requested_bytes - min(r.available_kv_cache_bytes for r in whole.ranks)


def _serves(model: Any, settings: dict[str, Any], kv_bytes: int, concurrency: float) -> bool:
    """Whether plan() given ``kv_bytes`` per worker (--kv-cache-memory-bytes) serves ``concurrency``."""
    p = vllm_mem.plan(model, GPU, kv_cache_memory_bytes=kv_bytes, **settings)
    return p.kv_cache is not None and p.kv_cache.max_concurrency >= concurrency


def _assert_as_planned(
    model: Any, options: dict[str, Any], *, concurrency: float, max_model_len: int, tp: int = 1
) -> Any:
    row = _row(model, options, concurrency=concurrency, max_model_len=max_model_len, tp=tp)
    common = dict(options, max_model_len=max_model_len, tensor_parallel_size=tp)
    assert row.requested_bytes - row.kv_bytes == _planned_fixed_bytes(model, common)
    assert _serves(model, common, row.kv_bytes_needed, concurrency)
    assert not _serves(model, common, row.kv_bytes_needed - 1, concurrency)
    return row


def test_vllm_version_takes_the_releases_defaults() -> None:
    # v0.10's scheduler defaults on an H100 (vllm_versions.md) differ from v0.19's: the profile
    # run, hence the fixed bytes, differ with them.
    rows = {
        v: _assert_as_planned(LLAMA, {"vllm_version": v}, concurrency=8, max_model_len=8192)
        for v in ("0.10.0", "0.19.0")
    }
    old, new = (rows[v].requested_bytes - rows[v].kv_bytes for v in ("0.10.0", "0.19.0"))
    assert old != new


def test_fp8_kv_cache_halves_the_kv_need() -> None:
    auto = _assert_as_planned(LLAMA, {}, concurrency=16, max_model_len=8192)
    fp8 = _assert_as_planned(LLAMA, {"kv_cache_dtype": "fp8"}, concurrency=16, max_model_len=8192)
    # One byte per element instead of bfloat16's two; whole blocks either way.
    assert fp8.kv_bytes_needed == pytest.approx(auto.kv_bytes_needed / 2, rel=0.01)


def test_prefix_caching_on_a_hybrid_is_vllms_automatic_align_mode() -> None:
    # From 0.28 vLLM turns prefix caching on for hybrids and picks mamba_cache_mode 'align'
    # (test_hybrid_prefix_caching_default.py): a request then holds other state blocks.
    on = _assert_as_planned(
        NEMOTRON_NANO_9B_V2,
        {"vllm_version": "0.28.0", "enable_prefix_caching": True},
        concurrency=4,
        max_model_len=8192,
    )
    off = _assert_as_planned(
        NEMOTRON_NANO_9B_V2,
        {"vllm_version": "0.28.0", "enable_prefix_caching": False},
        concurrency=4,
        max_model_len=8192,
    )
    assert on.kv_bytes_needed != off.kv_bytes_needed


def test_decode_context_parallelism_shards_the_kv_need() -> None:
    # Llama-3.1-8B at TP 16 duplicates its 8 KV heads; DCP 2 shards them along tokens
    # (test_kv_settings_everywhere.py): each worker holds half of every request.
    plain = _assert_as_planned(LLAMA, {"vllm_version": "0.19"}, concurrency=32, max_model_len=8192, tp=16)
    dcp = _assert_as_planned(
        LLAMA, {"vllm_version": "0.19", "decode_context_parallel_size": 2}, concurrency=32, max_model_len=8192, tp=16
    )
    assert dcp.kv_bytes_needed == pytest.approx(plain.kv_bytes_needed / 2, rel=0.01)


def test_speculative_drafter_joins_the_fixed_and_kv_need() -> None:
    plain = _assert_as_planned(LLAMA, {}, concurrency=8, max_model_len=8192)
    eagle = _assert_as_planned(LLAMA, {"speculative_config": EAGLE3}, concurrency=8, max_model_len=8192)
    # The drafter's weights and its KV layer (plan()'s draft terms) are in the need.
    assert eagle.requested_bytes - eagle.kv_bytes > plain.requested_bytes - plain.kv_bytes
    assert eagle.kv_bytes_needed > plain.kv_bytes_needed


def test_stage_need_and_plan_refuse_alike() -> None:
    def need(**options: Any) -> list[StageNeed]:
        return [StageNeed(0, model=LLAMA, max_model_len=8192, plan_options=options)]

    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        assign_utilizations(need(kv_cache_dtyp="fp8"), GPU)
    assert e.value.field == "stages[0].plan_options.kv_cache_dtyp"
    assert "kv_cache_dtype" in str(e.value) and "docs/settings.md" in str(e.value)
    with pytest.raises(TypeError) as t:
        assign_utilizations(need(max_num_seqs="8"), GPU)
    assert t.value.field == "stages[0].plan_options.max_num_seqs"
    with pytest.raises(ValueError) as v:
        assign_utilizations(need(kv_cache_dtype="fp9"), GPU)
    assert v.value.field == "stages[0].plan_options.kv_cache_dtype"
    with pytest.raises(ValueError) as s:
        assign_utilizations(need(speculative_config={"method": "eagle3", "num_speculative_tokens": 0}), GPU)
    assert s.value.field.startswith("stages[0].plan_options.speculative_config")
    with pytest.raises(ValueError, match="stages\\[0\\].plan_options.vllm_version"):
        assign_utilizations(need(vllm_version="banana"), GPU)


@pytest.mark.parametrize(
    ("key", "where"),
    [
        ("max_model_len", "the StageNeed's max_model_len"),
        ("tensor_parallel_size", "the StageNeed's tensor_parallel_size"),
        ("pipeline_parallel_size", "the StageNeed's pipeline_parallel_size"),
        ("gpu", "assign_utilizations(gpus=...)"),
        ("total_memory_bytes", "assign_utilizations(gpus=...)"),
        ("gpu_count", "num_gpus"),
        ("gpu_memory_utilization", "searches"),
        ("free_memory_bytes", "searches"),
        ("kv_cache_memory_bytes", "kv_bytes_needed"),
        ("num_gpu_blocks_override", "kv_bytes_needed"),
    ],
)
def test_settings_the_stage_fixes_are_refused_with_where_to_give_them(key: str, where: str) -> None:
    need = StageNeed(0, model=LLAMA, max_model_len=8192, plan_options={key: 1})
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        assign_utilizations([need], GPU)
    assert e.value.field == f"stages[0].plan_options.{key}"
    assert "fixed by the stage" in str(e.value) and where in str(e.value)


def test_plan_errors_name_the_need_field() -> None:
    # Llama-3.1-8B's 32 query heads: TP 3 does not divide them, as plan() refuses.
    with pytest.raises(ValueError) as e:
        assign_utilizations([StageNeed(0, model=LLAMA, max_model_len=8192, tensor_parallel_size=3)], GPU, num_gpus=3)
    assert e.value.field.startswith("stages[0].tensor_parallel_size")
