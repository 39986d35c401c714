"""Weights against the 25 real vLLM v0.19.0 start-ups: "Model loading took X GiB".

vLLM prints the torch-allocated delta of loading, per GPU, rounded to 2 decimals; under
pipeline parallelism it prints rank 0's. Every row must be within 1%.
"""

from __future__ import annotations

from typing import Any

import pytest
from vllm_mem import ModelSpec

GIB = 1 << 30
TOLERANCE = 0.01


def _predicted_rank0_gib(row: dict[str, Any], configs: dict[str, dict[str, Any]]) -> float:
    spec = ModelSpec.from_hf_config(configs[row["model_config_ref"]])
    breakdown = spec.weight_breakdown(
        dtype=row["dtype"],
        quantization=row["quantization"],
        tensor_parallel_size=row["tensor_parallel_size"],
        pipeline_parallel_size=row["pipeline_parallel_size"],
    )
    return breakdown["per_pp_rank"][0]["total_bytes"] / GIB


def test_every_row_with_a_loading_figure_is_within_one_percent(
    calibration_startups: list[dict[str, Any]],
    calibration_model_configs: dict[str, dict[str, Any]],
) -> None:
    rows = [r for r in calibration_startups if r["observed"].get("model_loading_took_gib") is not None]
    assert len(rows) == 25
    worst = []
    for row in rows:
        observed = row["observed"]["model_loading_took_gib"]
        predicted = _predicted_rank0_gib(row, calibration_model_configs)
        error = (predicted - observed) / observed
        worst.append((abs(error), row["case_id"], predicted, observed))
        assert abs(error) < TOLERANCE, (row["case_id"], predicted, observed)
    assert max(worst)[0] < TOLERANCE


def test_fp8_row_is_covered(calibration_startups: list[dict[str, Any]],
                            calibration_model_configs: dict[str, dict[str, Any]]) -> None:
    """The --quantization fp8 start-up (8.49 GiB): linear layers at 1 byte, embeddings bf16."""
    rows = [r for r in calibration_startups if r["quantization"] == "fp8"]
    assert rows
    for row in rows:
        predicted = _predicted_rank0_gib(row, calibration_model_configs)
        assert predicted == pytest.approx(row["observed"]["model_loading_took_gib"], rel=TOLERANCE)


def test_pipeline_rows_compare_rank0(calibration_startups: list[dict[str, Any]],
                                     calibration_model_configs: dict[str, dict[str, Any]]) -> None:
    """Under PP the printed figure is rank 0's; the last rank differs (it holds the LM head)."""
    for row in (r for r in calibration_startups if r["pipeline_parallel_size"] > 1):
        spec = ModelSpec.from_hf_config(calibration_model_configs[row["model_config_ref"]])
        ranks = spec.weight_breakdown(
            pipeline_parallel_size=row["pipeline_parallel_size"])["per_pp_rank"]
        assert ranks[0]["embedding_bytes"] > 0 and ranks[-1]["lm_head_bytes"] > 0
        observed = row["observed"]["model_loading_took_gib"]
        assert ranks[0]["total_bytes"] / GIB == pytest.approx(observed, rel=TOLERANCE)
