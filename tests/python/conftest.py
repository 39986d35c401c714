"""Shared fixtures: the calibration data set and bundled configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The fake CUDA driver's fixtures (tests/fake_driver), for every test module here.
from fake_driver import fake_driver, fake_driver_libs  # noqa: F401

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture(autouse=True)
def _hugging_face_hub_offline(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reaches the Hugging Face Hub (CI has no network) or reads the developer's cache:
    a name of the org/name shape resolves against an empty cache, offline (vllm_mem.hub reads
    these at each call). tests/python/test_hub.py builds its own caches and overrides them."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.getbasetemp() / "empty-hf-hub-cache"))


@pytest.fixture(scope="session")
def calibration_startups() -> list[dict[str, Any]]:
    """The 25 real vLLM v0.19.0 start-ups (tests/data/README.md)."""
    path = DATA_DIR / "vllm_startup_logs.calibration.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def calibration_model_configs() -> dict[str, dict[str, Any]]:
    """config.json fields of the calibration models, keyed by Hugging Face id."""
    return json.loads((DATA_DIR / "model_configs.calibration.json").read_text())
