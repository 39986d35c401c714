"""Shared fixtures: the calibration data set and bundled configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture(scope="session")
def calibration_startups() -> list[dict[str, Any]]:
    """The 25 real vLLM v0.19.0 start-ups (tests/data/README.md)."""
    path = DATA_DIR / "vllm_startup_logs.calibration.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def calibration_model_configs() -> dict[str, dict[str, Any]]:
    """config.json fields of the calibration models, keyed by Hugging Face id."""
    return json.loads((DATA_DIR / "model_configs.calibration.json").read_text())
