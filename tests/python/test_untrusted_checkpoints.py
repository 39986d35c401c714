"""Checkpoint headers, the Hugging Face cache, Hugging Face variables and installed-version
metadata as untrusted input (issue 22; issue 18 item 2): one test (or parametrized set) per class
the issue lists, each failing on 0.3.0, plus hypothesis-generated headers.

Every refusal is a ValueError naming the file and the tensor (``checkpoint: 'x.safetensors',
tensor 'w': ...``); nothing hangs (FIFOs are given where files are expected, and the tests that
could block run in a subprocess with a timeout); the CLI exits 2 with one stderr line.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from test_hub import COMMIT_A, LLAMA, add_snapshot, bundled_text, write_safetensors
from vllm_mem import _C, ModelSpec
from vllm_mem import _limits as L
from vllm_mem import hub as H
from vllm_mem._bounded_json import json_depth, load_json

PYTHONPATH = str(Path(vllm_mem.__file__).parent.parent)  # the tree under test (build/dev-*/site)


def raw_file(path: Path, header: Any, data_bytes: int = 0, *, text: bytes | None = None) -> Path:
    """A safetensors file from a header given as a Python value (or raw JSON bytes)."""
    blob = text if text is not None else json.dumps(header).encode()
    path.write_bytes(len(blob).to_bytes(8, "little") + blob + bytes(data_bytes))
    return path


def refused(folder: Path, pattern: str) -> str:
    with pytest.raises(ValueError, match=pattern) as info:
        H.local_checkpoint_weights(folder)
    text = str(info.value)
    assert text.startswith("checkpoint: ") and len(text) <= L.MAX_MESSAGE_CHARS, text
    return text


def run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    full_env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": PYTHONPATH,
                "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": os.environ["HF_HUB_CACHE"], **(env or {})}
    return subprocess.run([sys.executable, "-m", "vllm_mem", *args], capture_output=True, text=True,
                          timeout=timeout, env={k: v for k, v in full_env.items() if v is not None})


def one_error_line(r: subprocess.CompletedProcess, json_mode: bool = False) -> str:
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    if json_mode:
        return json.loads(r.stderr)["error"]["message"]
    return r.stderr


# --- hangs: FIFOs where files are expected ------------------------------------------------------


def test_a_fifo_in_the_index_is_refused_not_opened(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "a.safetensors", {"lm_head.weight": ("BF16", [4, 4])})
    os.mkfifo(tmp_path / "b.safetensors")
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"lm_head.weight": "a.safetensors", "model.norm.weight": "b.safetensors"}}))
    refused(tmp_path, r"^checkpoint: 'b.safetensors': cannot be read: not a regular file$")
    # The index itself a FIFO, and model.safetensors a FIFO.
    (tmp_path / "model.safetensors.index.json").unlink()
    os.mkfifo(tmp_path / "model.safetensors.index.json")
    refused(tmp_path, r"^checkpoint: model.safetensors.index.json: cannot be read: not a regular file$")
    single = tmp_path / "single"
    single.mkdir()
    os.mkfifo(single / "model.safetensors")
    refused(single, r"'model.safetensors': cannot be read: not a regular file")


def test_cli_plan_with_a_fifo_shard_exits_2_at_once(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(bundled_text(LLAMA))
    os.mkfifo(tmp_path / "model-00001-of-00001.safetensors")
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"lm_head.weight": "model-00001-of-00001.safetensors"}}))
    r = run_cli(["plan", str(tmp_path), "--gpu", "H100", "--weights-source", "headers", "--json"], timeout=60)
    assert "not a regular file" in one_error_line(r, json_mode=True)


def test_models_scan_is_not_blocked_by_a_fifo_ref(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    add_snapshot(cache, "acme/good", COMMIT_A, {"config.json": bundled_text(LLAMA)})
    add_snapshot(cache, "acme/fifo", COMMIT_A, {"config.json": bundled_text(LLAMA)}, refs=())
    (cache / "models--acme--fifo" / "refs").mkdir()
    os.mkfifo(cache / "models--acme--fifo" / "refs" / "main")
    os.mkfifo(cache / "models--acme--good" / "snapshots" / COMMIT_A / "tokenizer.json")
    r = run_cli(["models", "--json", "--cache-dir", str(cache)], timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout) if row["source"] == "cache"}
    assert rows["acme/good"]["refs"] == ["main"] and rows["acme/good"]["error"] is None
    assert rows["acme/fifo"]["refs"] == []  # listed by its snapshot; the FIFO ref skipped, never opened
    text = run_cli(["models", "--cache-dir", str(cache)], timeout=60).stdout
    assert "cache warning: models--acme--fifo: refs/main is not a small regular file; skipped" in text


def test_models_scan_is_bounded_in_entries(tmp_path: Path) -> None:
    from vllm_mem.cli.models import cached_models

    cache = tmp_path / "hub"
    for n in range(30):
        add_snapshot(cache, f"acme/m{n:02d}", COMMIT_A, {"config.json": bundled_text(LLAMA)})
    rows, warnings = cached_models(cache)
    assert len(rows) == 30 and warnings == []
    rows, warnings = cached_models(cache, max_entries=40)
    assert len(rows) < 30 and warnings == [f"cache scan of {cache} stopped: more than 40 entries; the models "
                                           "listed so far are shown"]
    rows, warnings = cached_models(cache, max_seconds=0)
    assert rows == [] and "stopped: over 0 s" in warnings[0]


def test_a_cached_config_outside_its_repo_or_a_fifo_is_skipped(tmp_path: Path) -> None:
    from vllm_mem.cli.models import cached_models

    cache = tmp_path / "hub"
    snap = add_snapshot(cache, "acme/out", COMMIT_A, {"config.json": bundled_text(LLAMA)})
    (snap / "config.json").unlink()
    (tmp_path / "elsewhere.json").write_text(bundled_text(LLAMA))
    (snap / "config.json").symlink_to(tmp_path / "elsewhere.json")
    snap = add_snapshot(cache, "acme/fifo", COMMIT_A, {"tokenizer.json": "{}"})
    os.mkfifo(snap / "config.json")
    rows, warnings = cached_models(cache)
    assert rows == []
    assert sorted(warnings) == [f"acme/fifo@{COMMIT_A[:7]}: config.json not a regular file; skipped",
                                f"acme/out@{COMMIT_A[:7]}: config.json points outside its repo's folder; skipped"]


# --- the Hub cache's refs and revisions ----------------------------------------------------------


def test_refs_that_leave_the_repo_folder_or_are_fifos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    add_snapshot(cache, "acme/m", COMMIT_A, {"config.json": bundled_text(LLAMA)})
    ref = cache / "models--acme--m" / "refs" / "main"
    ref.write_text("../../../../etc")  # 0.3.0: huggingface_hub's raw "Invalid pointer path"
    with pytest.raises(ValueError, match=r"^repo_id: the cache's refs/main of acme/m holds '../../../../etc', "
                                         r"not a 40-character commit hash"):
        ModelSpec.from_pretrained("acme/m")
    ref.unlink()
    os.mkfifo(ref)
    with pytest.raises(ValueError, match=r"^repo_id: the cache's refs/main of acme/m cannot be read: not a regular "
                                         r"file$"):
        ModelSpec.from_pretrained("acme/m")
    # The snapshot's config.json a link out of the repo's folder, then a FIFO.
    ref.unlink()
    ref.write_text(COMMIT_A)
    config = cache / "models--acme--m" / "snapshots" / COMMIT_A / "config.json"
    config.unlink()
    (tmp_path / "outside.json").write_text(bundled_text(LLAMA))
    config.symlink_to(tmp_path / "outside.json")
    with pytest.raises(ValueError, match=r"^repo_id: the cache's config.json of acme/m points outside the repo's "
                                         r"folder in the cache"):
        ModelSpec.from_pretrained("acme/m")
    config.unlink()
    os.mkfifo(config)
    with pytest.raises(ValueError, match=r"^repo_id: the cache's config.json of acme/m cannot be read: not a regular "
                                         r"file$"):
        ModelSpec.from_pretrained("acme/m")


@pytest.mark.parametrize("revision", ["../refs/main", "/etc/passwd", "main/../../x", "a//b", "x\n", "v1.lock",
                                      "refs/heads/", ".hidden", "a b", "@{1}"])
def test_revisions_outside_git_ref_rules_are_refused(revision: str) -> None:
    with pytest.raises(ValueError, match=r"^revision: must be a branch, tag or commit hash \(git's ref-name rules"):
        ModelSpec.from_pretrained("acme/m", revision=revision)


@pytest.mark.parametrize("revision", ["main", "v2.0", "refs/pr/1", COMMIT_A, "release-1_2"])
def test_real_revision_names_pass_the_ref_check(revision: str) -> None:
    assert H._is_ref_name(revision)


# --- Hugging Face variables --------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value", "pattern"), [
    ("HF_HUB_ETAG_TIMEOUT", "abc", r"^HF_HUB_ETAG_TIMEOUT: must be a whole number of seconds"),
    ("HF_HUB_ETAG_TIMEOUT", "1e9", r"^HF_HUB_ETAG_TIMEOUT: must be a whole number of seconds"),
    ("HF_HUB_DOWNLOAD_TIMEOUT", "99999", r"^HF_HUB_DOWNLOAD_TIMEOUT: must be at most 3600 seconds"),
    ("HF_HUB_OFFLINE", "maybe", r"^HF_HUB_OFFLINE: must be 1, ON, YES or TRUE \(offline\), or 0"),
    ("HF_HUB_CACHE", "x\x00y", r"^HF_HUB_CACHE: must be a path without NUL"),
    ("HF_ENDPOINT", "ftp://hub", r"^HF_ENDPOINT: must be an http:// or https:// URL"),
])
def test_hugging_face_variables_are_checked_by_name(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                                    pattern: str) -> None:
    if "\x00" in value:  # the environment cannot hold NUL: check the reader directly
        monkeypatch.setattr(os, "environ", {**os.environ, name: value})
    else:
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=pattern):
        ModelSpec.from_pretrained("acme/m")


def test_offline_with_surrounding_spaces_is_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0.3.0 read "1 " as online (huggingface_hub's own reading) and retried for 24 s.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1 ")
    assert H.offline()
    with pytest.raises(ValueError, match=r"not in the local cache .* and HF_HUB_OFFLINE is set"):
        ModelSpec.from_pretrained("acme/not-cached")


def test_cli_names_a_bad_variable_in_one_line() -> None:
    r = run_cli(["plan", "acme/m", "--gpu", "H100", "--json"], env={"HF_HUB_ETAG_TIMEOUT": "abc"})
    assert one_error_line(r, json_mode=True).startswith("HF_HUB_ETAG_TIMEOUT: must be a whole number of seconds")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_hub_fails_at_once_in_one_line(tmp_path: Path) -> None:
    # HF_HUB_OFFLINE unset, a proxy that refuses connections: 0.3.0 retried for ~24 s and printed
    # 11 "Retrying in..." lines before its error (under --json stderr was not one object).
    proxy = f"http://127.0.0.1:{_closed_port()}"
    env = {"HF_HUB_OFFLINE": None, "HF_HUB_CACHE": str(tmp_path / "cold"), "HTTPS_PROXY": proxy,
           "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy}
    started = time.monotonic()
    r = run_cli(["plan", "--json", "acme/not-cached", "--gpu", "H100"], env=env)  # type: ignore[dict-item]
    hub_s = time.monotonic() - started
    message = one_error_line(r, json_mode=True)
    assert message.startswith("CONFIG: config.json of acme/not-cached is not in the local cache") and \
        "the Hub could not be reached" in message
    text = one_error_line(run_cli(["plan", "acme/not-cached", "--gpu", "H100"], env=env))  # type: ignore[arg-type]
    assert "Retrying" not in text and "the Hub could not be reached" in text
    # The same process start for a bundled model: what the Hub attempt adds is the measure
    # (the machine may be loaded); the issue's bound is 2 s in all.
    started = time.monotonic()
    assert run_cli(["plan", LLAMA, "--gpu", "H100", "--json"], env=env).returncode == 0  # type: ignore[arg-type]
    local_s = time.monotonic() - started
    assert hub_s - local_s < 1.5 and hub_s < 10, (hub_s, local_s)


def test_headers_from_an_unreachable_hub_fail_at_once(tmp_path: Path) -> None:
    # A warm cache makes the config readable; the headers then need the Hub, which refuses:
    # one line at once, not huggingface_hub's retries of the index download.
    cache = tmp_path / "hub"
    add_snapshot(cache, "acme/m", COMMIT_A, {"config.json": bundled_text(LLAMA)})
    proxy = f"http://127.0.0.1:{_closed_port()}"
    env = {"HF_HUB_OFFLINE": None, "HF_HUB_CACHE": str(cache), "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy,
           "https_proxy": proxy, "http_proxy": proxy}
    started = time.monotonic()
    args = ["plan", "acme/m", "--gpu", "H100", "--weights-source", "headers", "--json"]
    r = run_cli(args, env=env)  # type: ignore[arg-type]
    elapsed_s = time.monotonic() - started
    message = one_error_line(r, json_mode=True)
    assert message.startswith("--weights-source: 'headers' reads acme/m's safetensors headers from the Hub, which "
                              "could not be reached"), message
    assert elapsed_s < 10, elapsed_s


# --- wrong numbers from headers ----------------------------------------------------------------


def test_data_offsets_beyond_the_file(tmp_path: Path) -> None:
    # 0.3.0: a 136-byte file planned as 2,147,614,720 weight bytes.
    raw_file(tmp_path / "model.safetensors",
             {"model.layers.0.w": {"dtype": "BF16", "shape": [32768, 32768], "data_offsets": [0, 2147483648]}}, 16)
    refused(tmp_path, r"^checkpoint: 'model.safetensors', tensor 'model.layers.0.w': data_offsets end at byte "
                      r"2147483648, beyond the file's 16 data bytes$")
    # Bytes left over after the last tensor: the safetensors library refuses the file too.
    raw_file(tmp_path / "model.safetensors", {"w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, 9)
    refused(tmp_path, r"the tensors end at byte 4 of the file's 9 data bytes")


def test_duplicate_tensor_names_in_one_header(tmp_path: Path) -> None:
    text = (b'{"w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, '
            b'"w": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}}')
    raw_file(tmp_path / "model.safetensors", None, 12, text=text)
    refused(tmp_path, r"^checkpoint: 'model.safetensors' header: key 'w' appears twice in one JSON object$")


def test_overlapping_and_gapped_offsets(tmp_path: Path) -> None:
    raw_file(tmp_path / "model.safetensors", {"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
                                              "b": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}}, 12)
    refused(tmp_path, r"^checkpoint: 'model.safetensors', tensor 'b': data_offsets \[4, 12\] overlap tensor 'a'$")
    raw_file(tmp_path / "model.safetensors", {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                                              "b": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]}}, 12)
    refused(tmp_path, r"tensor 'b': data_offsets \[8, 12\] leave bytes 4..8 unclaimed")
    # Two names on the same bytes (counted twice in 0.3.0).
    raw_file(tmp_path / "model.safetensors", {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                                              "b": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, 4)
    refused(tmp_path, r"tensor 'b': data_offsets \[0, 4\] overlap tensor 'a'")


def test_a_tensor_in_two_shards_is_refused(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "a.safetensors", {"lm_head.weight": ("BF16", [4, 4])})
    write_safetensors(tmp_path / "b.safetensors", {"lm_head.weight": ("BF16", [4, 4])})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"lm_head.weight": "a.safetensors", "x": "b.safetensors"}}))
    refused(tmp_path, r"^checkpoint: 'b.safetensors', tensor 'lm_head.weight': is also in 'a.safetensors': vLLM "
                      r"loads one tensor per name$")


@pytest.mark.parametrize(("dtype", "shape", "stored", "pattern"), [
    ("F4", [10**15, 10**15], 16, r"spans 16 bytes, but F4 x \[1000000000000000, 1000000000000000\] is 5\d+"),
    ("F4", [3], 2, r"F4 x \[3\] is 12 bits, not a whole number of bytes"),
    ("F6_E2M3", [2], 2, r"F6_E2M3 x \[2\] is 12 bits, not a whole number of bytes"),
    ("F6_E3M2", [4], 2, r"spans 2 bytes, but F6_E3M2 x \[4\] is 3"),
])
def test_sub_byte_dtypes_are_checked_against_their_bytes(tmp_path: Path, dtype: str, shape: list[int], stored: int,
                                                         pattern: str) -> None:
    # 0.3.0: 10^30 parameters from 16 bytes of F4.
    raw_file(tmp_path / "model.safetensors", {"w": {"dtype": dtype, "shape": shape, "data_offsets": [0, stored]}},
             stored)
    refused(tmp_path, pattern)


def test_sub_byte_dtypes_that_fill_whole_bytes_are_summed(tmp_path: Path) -> None:
    raw_file(tmp_path / "model.safetensors", {"w": {"dtype": "F4", "shape": [4, 8], "data_offsets": [0, 16]},
                                              "s": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [16, 19]}}, 19)
    w = H.local_checkpoint_weights(tmp_path)
    assert w.by_dtype == {"F4": {"tensors": 1, "parameters": 32, "bytes": 16},
                          "F6_E2M3": {"tensors": 1, "parameters": 4, "bytes": 3}}


@pytest.mark.parametrize("dtype", ["I4", "bf16", "FLOAT16", 7, None, "", ["BF16"], "BF16 "])
def test_dtypes_outside_the_safetensors_table(tmp_path: Path, dtype: Any) -> None:
    raw_file(tmp_path / "model.safetensors", {"w": {"dtype": dtype, "shape": [2], "data_offsets": [0, 4]}}, 4)
    refused(tmp_path, r"^checkpoint: 'model.safetensors', tensor 'w': dtype .* is not a safetensors dtype \(BOOL, F4")


@pytest.mark.parametrize("shape", [[-2, -3], [2.5, 4], ["2", 4], [True, 4], [None], 8, {"0": 2}, [2**64]])
def test_dims_that_are_not_non_negative_integers(tmp_path: Path, shape: Any) -> None:
    # 0.3.0 coerced them with int(): [-2, -3] -> 6 parameters, [2.5, 4] -> 8.
    raw_file(tmp_path / "model.safetensors", {"w": {"dtype": "U8", "shape": shape, "data_offsets": [0, 6]}}, 6)
    refused(tmp_path, r"^checkpoint: 'model.safetensors', tensor 'w': shape .* (holds .*, not a non-negative "
                      r"integer|is not a list of at most 64 dims)$")


@pytest.mark.parametrize("offsets", [[0], [0, 4, 8], [4, 0], [-4, 0], [0.0, 4.0], ["0", "4"], None, [0, True]])
def test_malformed_data_offsets(tmp_path: Path, offsets: Any) -> None:
    raw_file(tmp_path / "model.safetensors", {"w": {"dtype": "U8", "shape": [4], "data_offsets": offsets}}, 4)
    refused(tmp_path, r"tensor 'w': data_offsets .* are not \[begin, end\] with 0 <= begin <= end$")


@pytest.mark.parametrize("entry", [[], 5, "x", None, {"dtype": "U8", "shape": [4]},
                                   {"shape": [4], "data_offsets": [0, 4]}])
def test_malformed_entries_are_named(tmp_path: Path, entry: Any) -> None:
    # 0.3.0: "too many values to unpack", "'int' object is not subscriptable".
    raw_file(tmp_path / "model.safetensors", {"w": entry}, 4)
    refused(tmp_path, r"^checkpoint: 'model.safetensors', tensor 'w': (is \w+, not an object|has no )")


def test_invalid_utf8_in_a_header(tmp_path: Path) -> None:
    # 0.3.0 (huggingface_hub's parser) dropped the byte and read the rest.
    text = b'{"w\xff": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}'
    raw_file(tmp_path / "model.safetensors", None, 4, text=text)
    refused(tmp_path, r"^checkpoint: 'model.safetensors' header: not UTF-8 text \(byte 0xff at offset 3\)$")


@pytest.mark.parametrize("entry", ["/abs/model.safetensors", "../other/model.safetensors", "sub/a.safetensors",
                                   "a.bin", "..\\\\x.safetensors", ".safetensors", 7, None])
def test_index_entries_outside_the_checkpoint_folder(tmp_path: Path, entry: Any) -> None:
    write_safetensors(tmp_path / "a.safetensors", {"lm_head.weight": ("BF16", [4, 4])})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"lm_head.weight": "a.safetensors", "x": entry}}))
    refused(tmp_path, r"weight_map\['x'\] is .*, not a .safetensors file in the checkpoint's own folder$")


@pytest.mark.parametrize("index", [[], {"weight_map": []}, {"weight_map": {}}, {"metadata": {}}])
def test_index_without_a_weight_map(tmp_path: Path, index: Any) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    refused(tmp_path, r"(has no weight_map object|has an empty weight_map)$")


def test_a_checkpoint_of_2_to_the_81_bytes(tmp_path: Path) -> None:
    # 0.3.0: a pybind11 signature dump as the CLI's error line. A u64 offset past 2^64 is not
    # a safetensors offset; within u64 but past the file it is refused by the file size, and a
    # huggingface_hub-parsed header claiming it is refused by the checkpoint bound.
    raw_file(tmp_path / "model.safetensors", {"w": {"dtype": "U8", "shape": [2**81], "data_offsets": [0, 2**81]}})
    refused(tmp_path, r"shape \[\d+\] holds \d+, not a non-negative integer")
    from huggingface_hub.utils import SafetensorsFileMetadata, TensorInfo

    huge = SafetensorsFileMetadata(metadata={}, tensors={
        f"w{i}": TensorInfo(dtype="U8", shape=[2**60], data_offsets=(i * 2**60, (i + 1) * 2**60)) for i in range(3)})
    with pytest.raises(ValueError, match=r"^checkpoint: acme/huge holds 3458764513820540928 bytes .*at most "
                                         r"1125899906842624 \(1 PiB\)"):
        H.sum_safetensors_metadata(huge, "acme/huge")
    (tmp_path / "config.json").write_text(bundled_text(LLAMA))
    r = run_cli(["plan", str(tmp_path), "--gpu", "H100", "--weights-source", "headers"])
    assert "shape [" in one_error_line(r) and "incompatible function arguments" not in r.stderr


# --- wrong exception types / unclear messages ----------------------------------------------------


@pytest.mark.parametrize("header", [[1, 2], 5, "x", None, True])
def test_a_header_that_is_json_but_not_an_object(tmp_path: Path, header: Any) -> None:
    # 0.3.0: AttributeError (CLI: traceback, exit 1 - "does not fit").
    raw_file(tmp_path / "model.safetensors", header)
    refused(tmp_path, r"^checkpoint: 'model.safetensors': the header is JSON \w+, not an object of tensors$")


@pytest.mark.parametrize("meta", [[], {"format": 1}, "pt"])
def test_metadata_that_is_not_a_map_of_strings(tmp_path: Path, meta: Any) -> None:
    raw_file(tmp_path / "model.safetensors", {"__metadata__": meta, "w": {"dtype": "U8", "shape": [1],
                                                                          "data_offsets": [0, 1]}}, 1)
    refused(tmp_path, r"__metadata__ is not an object of strings")


def test_deep_nesting_in_a_header_an_index_and_speculative_json(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    raw_file(tmp_path / "model.safetensors", None, text=deep.encode())
    refused(tmp_path, r"^checkpoint: 'model.safetensors' header: JSON nested 100000 levels deep; at most 256")
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": ' + deep + "}")
    refused(tmp_path, r"model.safetensors.index.json.*: JSON nested 100001 levels deep; at most 256 are read$")
    with pytest.raises(ValueError, match=r"^speculative_config: JSON nested 100000 levels deep; at most 256"):
        vllm_mem.plan(LLAMA, "H100", max_model_len=4096, speculative_config=deep)
    with pytest.raises(ValueError, match=r"^speculative_config: not valid JSON \(Expecting property name enclosed in "
                                         r"double quotes at line 1 column 2\)$"):
        vllm_mem.plan(LLAMA, "H100", max_model_len=4096, speculative_config="{ngram")


def test_header_length_bounded_before_the_read(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes((L.JSON_MAX_BYTES + 1).to_bytes(8, "little") + b"{}")
    refused(tmp_path, r"declares a header of 16777217 bytes; at most 16777216 are read$")
    (tmp_path / "model.safetensors").write_bytes((100).to_bytes(8, "little") + b"{}")
    refused(tmp_path, r"declares a header of 100 bytes, but the file holds 2 after its length$")
    (tmp_path / "model.safetensors").write_bytes(b"\x01\x00")
    refused(tmp_path, r"is 2 bytes, too short for a safetensors file")


def test_bounded_json_reader() -> None:
    assert json_depth('{"a": "[[[{", "b": [[1], {"c": "\\\\"}]}') == 3
    assert json_depth('"\\"[["') == 0
    assert load_json(b'{"a": [1]}', "f") == {"a": [1]}
    for text, pattern in [("NaN", r"not valid JSON \(NaN is not JSON\)"),
                          ('{"a": 1, "a": 2}', r"key 'a' appears twice"),
                          ("[" * 257 + "]" * 257, r"JSON nested 257 levels deep; at most 256 are read$"),
                          ("x" * 17, r"JSON text of 17 bytes")]:
        with pytest.raises(ValueError, match=r"^f: " + pattern):
            load_json(text, "f", unique_keys=True, max_bytes=16 if text.startswith("x") else L.JSON_MAX_BYTES)


# --- installed-version metadata ------------------------------------------------------------------


def test_an_installed_source_build_plans_with_the_newest_profile(tmp_path: Path) -> None:
    # 0.3.0: every plan failed with "--vllm-version: '0.1.dev1+g1234abc' is older than the oldest
    # profile" although no --vllm-version was given.
    dist = tmp_path / "site" / "vllm-0.1.dev1+g1234abc.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.1.dev1+g1234abc\n")
    env = {"PYTHONPATH": f"{PYTHONPATH}{os.pathsep}{tmp_path / 'site'}"}
    r = run_cli(["plan", LLAMA, "--gpu", "H100", "--max-model-len", "8192", "--json"], env=env)
    assert r.returncode == 0, r.stderr
    version = json.loads(r.stdout)["vllm_version"]
    newest = str(_C.lookup_vllm_version("")[0])  # the default release (docs/vllm_versions.md)
    assert version["planned_with"] == newest and version["asked"] is None
    assert version["source"].startswith("newest known: the installed vLLM's metadata (importlib.metadata 'vllm') "
                                        "reads '0.1.dev1+g1234abc', a source build without release tags")


# --- the same weights on every entry point ---------------------------------------------------------


def test_sweep_takes_the_checkpoint_bytes_plan_takes(tmp_path: Path) -> None:
    # 0.3.0: sweep() planned the config's weights (344,704 B vs plan()'s 229,504 B in the issue).
    config = json.loads(bundled_text("Qwen/Qwen3-8B"))
    config["torch_dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(config))
    write_safetensors(tmp_path / "model.safetensors", {"model.layers.0.blob": ("F32", [1 << 26])})
    spec = ModelSpec.from_hf_config(tmp_path, weights_source="headers")
    cols = vllm_mem.sweep(spec, ["H100", "L4"], tensor_parallel_size=[1, 2], dtype=["auto", "float32"],
                          max_model_len=[4096], as_frame=False)
    assert len(cols["fits"]) == 8
    figures = set()
    for i in range(8):
        p = vllm_mem.plan(spec, str(cols["gpu"][i]), tensor_parallel_size=int(cols["tensor_parallel_size"][i]),
                          dtype=str(cols["dtype"][i]), max_model_len=4096)
        assert int(cols["weights_bytes"][i]) == p.weights_bytes
        assert int(cols["available_kv_cache_bytes"][i]) == p.available_kv_cache_bytes
        figures.add(p.weights_bytes)
    # fp32 stored: served as bf16 under auto (half), as fp32 when asked; TP 2 halves each.
    config_only = vllm_mem.plan(ModelSpec.from_hf_config(tmp_path), "H100", max_model_len=4096).weights_bytes
    assert len(figures) == 4 and config_only not in figures


def test_stage_plans_take_the_checkpoint_bytes_plan_takes(tmp_path: Path) -> None:
    # 0.3.0: the stage check planned a headers spec with the config's weights.
    config = json.loads(bundled_text("Qwen/Qwen3-8B"))
    config["torch_dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(config))
    write_safetensors(tmp_path / "model.safetensors", {"model.layers.0.blob": ("F32", [1 << 26])})
    spec = ModelSpec.from_hf_config(tmp_path, weights_source="headers")
    stages = {"stages": [{"stage_id": 0, "devices": "0,1", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9}]}
    (row,) = vllm_mem.check_stages(stages, gpus="H100-80GB", models={0: spec}, max_model_len=4096).plans
    want = vllm_mem.plan(spec, "H100-80GB", tensor_parallel_size=2, max_model_len=4096)
    assert row["weights_bytes"] == want.weights_bytes
    config_only = vllm_mem.plan(ModelSpec.from_hf_config(tmp_path), "H100-80GB", tensor_parallel_size=2,
                                max_model_len=4096).weights_bytes
    assert want.weights_bytes != config_only


# --- hypothesis: generated headers -----------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SETTINGS = settings(max_examples=150, deadline=None, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_DTYPES = sorted(H._DTYPE_BITS)
_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=4),
                  st.lists(st.integers(-3, 3), max_size=3))


@st.composite
def valid_headers(draw: Any) -> tuple[dict[str, Any], int, int, int]:
    """A header whose tensors tile the data section: (header, data bytes, parameters, bytes)."""
    header: dict[str, Any] = {}
    offset = params = 0
    for n in range(draw(st.integers(1, 6))):
        dtype = draw(st.sampled_from(_DTYPES))
        bits = H._DTYPE_BITS[dtype]
        shape = draw(st.lists(st.integers(0, 6), max_size=3))
        count = math.prod(shape)
        if count * bits % 8:
            shape, count = [*shape, 8], count * 8
        size = count * bits // 8
        header[f"model.layers.0.t{n}"] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
        params += count
    items = draw(st.permutations(list(header.items())))  # order in the file is free
    return dict(items), offset, params, offset


@_SETTINGS
@given(valid_headers())
def test_generated_valid_headers_sum_exactly(tmp_path_factory: pytest.TempPathFactory,
                                             case: tuple[dict[str, Any], int, int, int]) -> None:
    header, data_bytes, params, stored = case
    folder = tmp_path_factory.mktemp("ok")
    raw_file(folder / "model.safetensors", header, data_bytes)
    w = H.local_checkpoint_weights(folder)
    assert (w.total_bytes, w.num_parameters, w.num_tensors) == (stored, params, len(header))


@_SETTINGS
@given(valid_headers(), st.sampled_from(["dtype", "shape", "data_offsets", "file"]), _JUNK, st.integers(-3, 3))
def test_generated_bad_headers_are_refused_by_name(tmp_path_factory: pytest.TempPathFactory,
                                                   case: tuple[dict[str, Any], int, int, int], key: str, junk: Any,
                                                   delta: int) -> None:
    """One field of one tensor replaced by junk, or the file's data section resized: either a
    ValueError naming the file (and the tensor), or a sum that still equals the data section."""
    header, data_bytes, _params, _stored = case
    name = sorted(header)[0]
    if key == "file":
        data_bytes = max(0, data_bytes + delta)
    else:
        header[name] = {**header[name], key: junk}
    folder = tmp_path_factory.mktemp("bad")
    raw_file(folder / "model.safetensors", header, data_bytes)
    try:
        w = H.local_checkpoint_weights(folder)
    except ValueError as exc:
        text = str(exc)
        assert text.startswith("checkpoint: ") and len(text) <= L.MAX_MESSAGE_CHARS, text
        assert "model.safetensors" in text or "holds no tensor" in text, text
        return
    assert w.total_bytes + w.skipped_bytes == data_bytes


@_SETTINGS
@given(st.binary(max_size=200))
def test_generated_header_bytes_never_escape(tmp_path_factory: pytest.TempPathFactory, blob: bytes) -> None:
    folder = tmp_path_factory.mktemp("bytes")
    (folder / "model.safetensors").write_bytes(len(blob).to_bytes(8, "little") + blob)
    try:
        H.local_checkpoint_weights(folder)
    except ValueError as exc:
        assert str(exc).startswith("checkpoint: ") and len(str(exc)) <= L.MAX_MESSAGE_CHARS
