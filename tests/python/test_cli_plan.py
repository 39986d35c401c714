"""`vllm-mem plan` and `vllm-mem gpus` as a user runs them: exit codes, one-line errors, JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import vllm_mem

# The release these figures were written for: 0.21, the last whose V1 model runner serves every dense
# model with its CUDA-graph estimate in the KV budget (0.21; 0.22-0.24 give Model Runner V2 to listed
# architectures, Llama from 0.23); from 0.25 Model Runner V2 serves
# dense models and budgets no graphs (vllm_versions.json "model_runner"), which the newest profile
# would apply.
V1_GRAPHS = "0.21"

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
    r = run("plan", LLAMA, "--gpu", "L4", "--vllm-version", V1_GRAPHS, "--max-model-len", "32768")
    assert r.returncode == 1, r.stderr
    assert "DOES NOT FIT at phase 'max_model_len'" in r.stdout
    expected = vllm_mem.plan(LLAMA, gpu="L4", vllm_version=V1_GRAPHS, max_model_len=32768).suggestions[0].setting
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
    (["--gpu", "H100", "--max-model-len", "-2"], "--max-model-len"),  # -1 is vLLM's auto (from 0.14)
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


def test_plan_takes_vllm_dcp_and_prefix_caching_flags(capsys: pytest.CaptureFixture[str]) -> None:
    # -dcp and --enable-prefix-caching reach plan() as the API's keywords: the same plan, and
    # vLLM's own DCP refusal names the flag.
    from vllm_mem import cli

    argv = ["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-80GB", "-tp", "16", "-dcp", "2",
            "--max-model-len", "8192", "--enable-prefix-caching", "--json"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    api = vllm_mem.plan("meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", tensor_parallel_size=16,
                        decode_context_parallel_size=2, max_model_len=8192, enable_prefix_caching=True)
    assert out["kv_cache"] == api.to_dict()["kv_cache"]
    assert cli.main([*argv[:6], "-dcp", "3", "--json"]) == 2
    error = json.loads(capsys.readouterr().err)["error"]
    assert error["field"] == "--decode-context-parallel-size" and "dcp_size=3" in error["message"]


def test_kv_capacity_follows_the_asked_release(capsys: pytest.CaptureFixture[str]) -> None:
    # --vllm-version decides the capacity's rules, not only the log lines: the CLI's tokens equal
    # kv_cache_capacity(vllm_version=...) for that release.
    from vllm_mem import cli

    for version in ("0.13", "0.23"):
        assert cli.main(["kv", "google/gemma-3-4b-it", "--available-gib", "20", "--max-model-len", "8192",
                         "--vllm-version", version, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        cap = vllm_mem.kv_cache_capacity("google/gemma-3-4b-it", 20 * 2**30, max_model_len=8192,
                                         vllm_version=version)
        assert out["num_tokens"] == cap.num_tokens and out["vllm_version"]["source"] == "asked"
