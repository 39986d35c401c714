"""KV-cache sizing against 25 real vLLM v0.19.0 start-ups (tests/data/README.md).

vLLM prints "Available KV cache memory: X GiB" rounded to 2 decimals, so the real byte count lies
in [X - 0.005, X + 0.005] GiB. For each start-up we feed that interval to ``kv_cache_capacity``:

* single-stage rows (TP 1/2/4, PP 1): some byte count in the interval must give exactly the
  printed ``num_gpu_blocks``, and at that count our two log lines must equal vLLM's printed
  "GPU KV cache size: N tokens" and "Maximum concurrency for L tokens per request: C.CCx"
  character for character;
* pipeline-parallel rows: the printed memory is rank 0's while the blocks are the minimum over
  ranks (the last stage, which holds the LM head and sampler, has less room), so the printed
  memory cannot reproduce the blocks. We check what can be checked: the printed tokens and
  concurrency follow from the printed blocks, and rank 0's memory holds at least that many blocks.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

GIB = 1 << 30
_ROWS_PATH = Path(__file__).resolve().parent.parent / "data" / "vllm_startup_logs.calibration.jsonl"
_ROWS = [json.loads(line) for line in _ROWS_PATH.read_text().splitlines() if line.strip()]
_IDS = [r["case_id"].split("--", 1)[0].replace("llmdplanner-v0190-", "") + "-" + r["case_id"].rsplit("--", 2)[-2]
        + "-" + str(r["max_model_len"]) + ("-" + r["dtype"]) + ("-kv-" + r["kv_cache_dtype"]) for r in _ROWS]
_SINGLE_STAGE = [i for i, r in enumerate(_ROWS) if r["pipeline_parallel_size"] == 1]
_PIPELINE = [i for i, r in enumerate(_ROWS) if r["pipeline_parallel_size"] > 1]


def _settings(row: dict[str, Any]) -> dict[str, Any]:
    """The start-up's KV-relevant settings as kv_cache_capacity keywords. ``dtype`` is the run's
    model dtype (a float32 run stores float32 KV under kv_cache_dtype auto)."""
    return dict(
        max_model_len=row["max_model_len"],
        block_size=row["block_size"],
        kv_cache_dtype=row["kv_cache_dtype"],
        dtype=row["dtype"],
        tensor_parallel_size=row["tensor_parallel_size"],
        pipeline_parallel_size=row["pipeline_parallel_size"],
        max_num_batched_tokens=row["max_num_batched_tokens"],
    )


def _interval_bytes(row: dict[str, Any]) -> tuple[int, int]:
    printed = row["observed"]["available_kv_cache_memory_gib"]
    return math.ceil((printed - 0.005) * GIB), math.floor((printed + 0.005) * GIB)


def _spec(row: dict[str, Any], configs: dict[str, dict[str, Any]]) -> vllm_mem.ModelSpec:
    return vllm_mem.ModelSpec.from_hf_config(configs[row["model_config_ref"]])


def test_the_data_set_is_complete(calibration_startups: list[dict[str, Any]]) -> None:
    assert len(calibration_startups) == len(_ROWS) == 25
    assert all(r["status"] == "ok" and r["vllm_version"] == "0.19.0" for r in _ROWS)


@pytest.mark.parametrize("index", _SINGLE_STAGE, ids=[_IDS[i] for i in _SINGLE_STAGE])
def test_printed_memory_reproduces_blocks_tokens_and_concurrency(
    index: int, calibration_model_configs: dict[str, dict[str, Any]]
) -> None:
    row = _ROWS[index]
    observed = row["observed"]
    spec = _spec(row, calibration_model_configs)
    settings = _settings(row)
    lo, hi = _interval_bytes(row)

    at_lo = vllm_mem.kv_cache_capacity(spec, lo, **settings)
    at_hi = vllm_mem.kv_cache_capacity(spec, hi, **settings)
    assert at_lo.num_blocks <= observed["num_gpu_blocks"] <= at_hi.num_blocks

    # The smallest byte count in the interval that gives the printed blocks...
    exact_bytes = max(lo, observed["num_gpu_blocks"] * at_lo.bytes_per_block)
    assert lo <= exact_bytes <= hi
    cap = vllm_mem.kv_cache_capacity(spec, exact_bytes, **settings)
    assert cap.num_blocks == observed["num_gpu_blocks"]
    # ...gives vLLM's printed token count and concurrency, and its two log lines verbatim.
    assert cap.num_tokens == observed["gpu_kv_cache_size_tokens"]
    assert f"{cap.max_concurrency:.2f}" == f"{observed['maximum_concurrency_x']:.2f}"
    assert cap.log_lines == (row["raw_lines"]["kv_tokens"], row["raw_lines"]["max_conc"])
    assert cap.kv_cache_dtype == (row["dtype"] if row["kv_cache_dtype"] == "auto" else row["kv_cache_dtype"])

    # The interval's centre lands inside the interval's block range.
    centre = vllm_mem.kv_cache_capacity(spec, round(observed["available_kv_cache_memory_gib"] * GIB), **settings)
    assert at_lo.num_blocks <= centre.num_blocks <= at_hi.num_blocks


@pytest.mark.parametrize("index", _PIPELINE, ids=[_IDS[i] for i in _PIPELINE])
def test_pipeline_rows_tokens_follow_from_blocks_and_rank0_has_room(
    index: int, calibration_model_configs: dict[str, dict[str, Any]]
) -> None:
    row = _ROWS[index]
    observed = row["observed"]
    spec = _spec(row, calibration_model_configs)
    settings = _settings(row)
    lo, hi = _interval_bytes(row)
    pp = row["pipeline_parallel_size"]

    # Tokens and concurrency from the printed engine-wide blocks.
    pinned = vllm_mem.kv_cache_capacity(spec, hi, num_gpu_blocks_override=observed["num_gpu_blocks"], **settings)
    assert pinned.num_tokens == observed["gpu_kv_cache_size_tokens"]
    assert pinned.log_lines == (row["raw_lines"]["kv_tokens"], row["raw_lines"]["max_conc"])

    # Rank 0's printed memory holds at least the printed blocks: the min came from a later rank.
    per_rank = vllm_mem.kv_cache_capacity(spec, [lo] * pp, **settings)
    assert per_rank.num_blocks_per_worker[0] >= observed["num_gpu_blocks"]

    # A per-rank plan reproduces the printed blocks when the last rank has the smaller budget.
    last_rank_bytes = observed["num_gpu_blocks"] * per_rank.bytes_per_block
    plan = vllm_mem.kv_cache_capacity(spec, [lo] * (pp - 1) + [last_rank_bytes], **settings)
    assert plan.num_blocks == observed["num_gpu_blocks"]
    assert plan.num_tokens == observed["gpu_kv_cache_size_tokens"]
