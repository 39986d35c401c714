"""``vllm-mem models`` over a Hugging Face cache built in tmp_path (test_hub.add_snapshot lays it
out as huggingface_hub does), and ``vllm-mem plan org/name`` from a warm cache with the network
off. No test reaches the network."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import vllm_mem
from test_hub import COMMIT_A, COMMIT_B, LLAMA, QWEN, add_snapshot, bundled_text
from vllm_mem import cli


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hf-cache"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    add_snapshot(root, "acme/qwen", COMMIT_A, {"config.json": bundled_text(QWEN)})
    add_snapshot(root, "acme/qwen", COMMIT_B, {"config.json": bundled_text(LLAMA)}, refs=("v2",))
    weird = dict(json.loads(bundled_text(LLAMA)), model_type="acme_unknown_arch")
    add_snapshot(root, "acme/weird", COMMIT_A, {"config.json": json.dumps(weird)})
    add_snapshot(root, "acme/broken", COMMIT_A, {"config.json": "{not json"})
    add_snapshot(root, "acme/tokenizer-only", COMMIT_A, {"tokenizer.json": "{}"})
    # A dataset repo with a config.json is not a model.
    data = root / "datasets--acme--data" / "snapshots" / COMMIT_A
    data.mkdir(parents=True)
    (data / "config.json").write_text(bundled_text(QWEN))
    (root / "datasets--acme--data" / "refs").mkdir()
    (root / "datasets--acme--data" / "refs" / "main").write_text(COMMIT_A)
    return root


def test_models_lists_bundled_and_cached_with_reasons(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(["models", "--json"], capsys)
    assert code == 0 and err == ""
    rows = json.loads(out)
    bundled = [r for r in rows if r["source"] == "bundled"]
    cached = [r for r in rows if r["source"] == "cache"]
    assert {r["name"] for r in bundled} == set(vllm_mem.bundled_model_configs())
    assert all(r["path"] is None and r["error"] is None for r in bundled)
    by = {(r["name"], r["revision"]): r for r in cached}
    assert set(by) == {("acme/qwen", COMMIT_A), ("acme/qwen", COMMIT_B), ("acme/weird", COMMIT_A),
                       ("acme/broken", COMMIT_A)}
    qwen = by[("acme/qwen", COMMIT_A)]
    assert qwen["model_type"] == "qwen3" and qwen["exact_rules"] is True and qwen["refs"] == ["main"]
    assert qwen["num_parameters"] == vllm_mem.ModelSpec.from_hf_config(QWEN).num_parameters()
    assert qwen["path"] == str(cache / "models--acme--qwen" / "snapshots" / COMMIT_A / "config.json")
    assert by[("acme/qwen", COMMIT_B)]["model_type"] == "llama" and by[("acme/qwen", COMMIT_B)]["refs"] == ["v2"]
    weird = by[("acme/weird", COMMIT_A)]
    assert weird["model_type"] == "acme_unknown_arch" and weird["exact_rules"] is False
    assert "acme_unknown_arch" in weird["error"] and weird["num_parameters"] is None
    broken = by[("acme/broken", COMMIT_A)]
    assert broken["model_type"] is None and broken["error"]


def test_models_text_says_where_each_comes_from(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = _main(["models"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["name", "type", "exact", "params"]
    llama = next(line for line in lines if line.startswith(LLAMA))
    assert llama.rstrip().endswith("bundled") and " yes " in llama
    qwen = next(line for line in lines if line.startswith("acme/qwen") and "qwen3" in line)
    assert f"cache {cache}" in qwen
    i = next(n for n, line in enumerate(lines) if line.startswith("acme/weird"))
    assert lines[i + 1].strip().startswith("refused:") and "acme_unknown_arch" in lines[i + 1]


def test_models_no_cache_and_a_missing_cache(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = _main(["models", "--json", "--no-cache"], capsys)
    assert code == 0 and {r["source"] for r in json.loads(out)} == {"bundled"}
    code, out, _err = _main(["models", "--json", "--cache-dir", str(tmp_path / "nowhere")], capsys)
    assert code == 0 and len(json.loads(out)) == len(vllm_mem.bundled_model_configs())


def test_plan_from_a_warm_cache_with_the_network_off(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(["plan", "acme/qwen", "--gpu", "H100", "--max-model-len", "8192", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    want = vllm_mem.plan(QWEN, "H100", max_model_len=8192)
    assert d["model"] == "acme/qwen" and d["weights"]["bytes"] == want.weights_bytes
    assert d["weights_source"] == "config"
    code, out, _err = _main(["plan", "acme/qwen", "--gpu", "H100", "--max-model-len", "8192"], capsys)
    assert code == 0 and "acme/qwen" in out


def test_plan_cold_cache_is_one_line(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _main(["plan", "acme/nothing", "--gpu", "H100"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("vllm-mem plan: error: CONFIG: config.json of acme/nothing is not in the local cache")
    code, out, err = _main(["plan", "acme/nothing", "--gpu", "H100", "--json"], capsys)
    e = json.loads(err)["error"]
    assert code == 2 and e["field"] == "CONFIG" and e["type"] == "InvalidArgumentError" and "HF_HUB_OFFLINE" in e["message"]


def test_cli_process_with_the_network_unreachable(cache: Path) -> None:
    # A real process: HF_HUB_OFFLINE unset and no route to the Hub (a proxy that refuses), warm cache.
    env = {"HF_HUB_CACHE": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(cache),
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "HF_HUB_ETAG_TIMEOUT": "2",
           "PYTHONPATH": str(Path(vllm_mem.__file__).parent.parent)}
    r = subprocess.run([sys.executable, "-m", "vllm_mem", "plan", "acme/qwen", "--gpu", "H100", "--max-model-len",
                        "8192", "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["model"] == "acme/qwen"
