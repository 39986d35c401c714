"""`vllm-mem plan` and `vllm-mem gpus` as a user runs them: exit codes, one-line errors, JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import vllm_mem

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # The package as this test imported it (a dev build's symlink farm or an install).
    env["PYTHONPATH"] = str(Path(vllm_mem.__file__).parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "vllm_mem.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_fits_exit_0_with_report() -> None:
    r = run("plan", LLAMA, "--gpu", "H100-80GB", "--gpu-memory-utilization", "0.92", "--max-model-len", "8192")
    assert r.returncode == 0, r.stderr
    assert "verdict: FITS" in r.stdout
    assert "live snapshot" in r.stdout


def test_does_not_fit_exit_1_names_phase_and_setting() -> None:
    r = run("plan", LLAMA, "--gpu", "L4", "--max-model-len", "32768")
    assert r.returncode == 1, r.stderr
    assert "DOES NOT FIT at phase 'max_model_len'" in r.stdout
    expected = vllm_mem.plan(LLAMA, gpu="L4", max_model_len=32768).suggestions[0].setting
    assert expected in r.stdout


def test_json_parses_and_matches_the_api() -> None:
    r = run("plan", LLAMA, "--gpu", "H100", "--max-model-len", "8192", "-tp", "2", "--kv-cache-dtype", "fp8",
            "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    api = vllm_mem.plan(LLAMA, gpu="H100", max_model_len=8192, tensor_parallel_size=2, kv_cache_dtype="fp8")
    assert d["fits"] is True and d["failure_phase"] is None
    assert d["available_kv_cache"]["bytes"] == api.available_kv_cache_bytes
    assert d["kv_cache"]["num_tokens"] == api.kv_cache.num_tokens
    assert "live_snapshot" in d


@pytest.mark.parametrize("args, field", [
    (["--gpu", "H100-90GB"], "--gpu"),
    (["--gpu", "H100", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    (["--gpu", "H100", "--max-model-len", "-1"], "--max-model-len"),
    (["--gpu", "H100", "-tp", "3"], "--tensor-parallel-size"),
    (["--gpu", "H100", "-tp", "4", "--gpu-count", "2"], "--tensor-parallel-size"),
    ([], "--gpu"),
])
def test_bad_input_exit_2_one_line(args: list[str], field: str) -> None:
    r = run("plan", LLAMA, *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert f"error: {field}:" in lines[0]


def test_config_path_and_missing_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(json.loads(
        (Path(vllm_mem.__file__).parent / "configs" / "microsoft--phi-2.json").read_text())))
    assert run("plan", str(tmp_path), "--gpu", "L4", "--max-model-len", "2048").returncode == 0
    r = run("plan", str(tmp_path / "nope.json"), "--gpu", "L4")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_gpus_lists_the_catalog() -> None:
    r = run("gpus", "--json")
    assert r.returncode == 0
    names = {g["name"] for g in json.loads(r.stdout)}
    assert {"H100-80GB", "A100-80GB", "MI300X", "RTX-4090"} <= names
    text = run("gpus")
    assert text.returncode == 0 and "79.19" in text.stdout
