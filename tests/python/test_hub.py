"""Models named by Hub id (vllm_mem.hub, ModelSpec.from_pretrained) without any network.

Each test builds, inside tmp_path, a cache laid out exactly as huggingface_hub lays it out
(models--org--name/{blobs/<git blob sha1>, refs/<branch>, snapshots/<commit>/<file> -> blob}),
points HF_HUB_CACHE at it and runs the real loading code with HF_HUB_OFFLINE=1. Hub failures
(gated repo, missing repo or revision) are huggingface_hub's own exception classes raised from
a monkeypatched hf_hub_download. Safetensors headers are real header bytes (8-byte length + JSON,
https://huggingface.co/docs/safetensors/index#format) parsed by huggingface_hub.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
import vllm_mem
from huggingface_hub import errors as E
from vllm_mem import ModelSpec
from vllm_mem import hub as H

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen3-8B"
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


def bundled_text(name: str) -> str:
    return (Path(vllm_mem.__file__).parent / "configs" / (name.replace("/", "--") + ".json")).read_text()


def add_snapshot(cache: Path, repo_id: str, commit: str, files: dict[str, str], refs: tuple[str, ...] = ("main",),
                 missing: tuple[str, ...] = ()) -> Path:
    """One revision of a model repo, as hf_hub_download leaves it: content in blobs/ named by its
    git blob sha1 (the ETag of a non-LFS file), a relative symlink per file in the snapshot,
    refs/<name> holding the commit, and .no_exist/<commit>/<file> for files known missing."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        data = text.encode()
        etag = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        (repo / "blobs" / etag).write_bytes(data)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(repo / "blobs" / etag, link.parent))
    for ref in refs:
        (repo / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    for name in missing:
        (repo / ".no_exist" / commit).mkdir(parents=True, exist_ok=True)
        (repo / ".no_exist" / commit / name).touch()
    return snap


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hf-cache"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


@pytest.fixture()
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test (the Hub client must read the cache)."""
    import socket

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# --- names and the cache ----------------------------------------------------------------------


def test_hub_id_shape() -> None:
    assert H.is_hub_id("Qwen/Qwen3-Next-80B-A3B-Instruct") and H.is_hub_id("org/name.v1_2")
    for name in ("llama", "a/b/c", "/abs/path", "org/", "org/na me", "a--b/c", "org/x..y", "dir/config.json",
                 "dir/stages.yaml"):
        assert not H.is_hub_id(name), name


def test_cache_dir_follows_the_environment_at_each_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert H.hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "c"))
    assert H.hub_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("HF_HOME")
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert H.hub_cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"


def test_warm_cache_offline(cache: Path, no_network: None) -> None:
    add_snapshot(cache, "acme/llama-8b", COMMIT_A, {"config.json": bundled_text(LLAMA)},
                 missing=("model.safetensors.index.json",))
    spec = ModelSpec.from_pretrained("acme/llama-8b")
    bundled = ModelSpec.from_hf_config(LLAMA)
    assert spec.name == "acme/llama-8b"
    assert spec.num_parameters() == bundled.num_parameters() == 8030261248  # Llama-3.1-8B's published count
    assert spec.weight_bytes() == bundled.weight_bytes()
    assert spec.checkpoint_weight_bytes is None and spec.weights_source == "config"
    hub = H.fetch_config("acme/llama-8b")
    assert hub.commit_hash == COMMIT_A and hub.index_path is None and hub.label == "acme/llama-8b@aaaaaaa"
    assert hub.config_path.is_relative_to(cache)


def test_index_file_is_read_when_cached(cache: Path, no_network: None) -> None:
    index = json.dumps({"metadata": {"total_size": 16060522496}, "weight_map": {"lm_head.weight": "a.safetensors"}})
    add_snapshot(cache, "acme/llama-8b", COMMIT_A, {"config.json": bundled_text(LLAMA),
                                                    "model.safetensors.index.json": index})
    hub = H.fetch_config("acme/llama-8b")
    assert hub.index_path is not None
    assert json.loads(hub.index_path.read_text())["metadata"]["total_size"] == 16060522496


def test_every_entry_point_resolves_a_hub_id(cache: Path, no_network: None) -> None:
    add_snapshot(cache, "acme/qwen", COMMIT_A, {"config.json": bundled_text(QWEN)})
    bundled = ModelSpec.from_hf_config(QWEN)
    assert ModelSpec.from_hf_config("acme/qwen").num_parameters() == bundled.num_parameters()
    p = vllm_mem.plan("acme/qwen", "H100-80GB", max_model_len=8192)
    q = vllm_mem.plan(QWEN, "H100-80GB", max_model_len=8192)
    assert p.weights_bytes == q.weights_bytes and p.available_kv_cache_bytes == q.available_kv_cache_bytes
    assert vllm_mem.kv_cache_capacity("acme/qwen", 10 << 30, max_model_len=8192).num_blocks == \
        vllm_mem.kv_cache_capacity(QWEN, 10 << 30, max_model_len=8192).num_blocks


def test_stage_models_and_needs_resolve_a_hub_id(cache: Path, no_network: None) -> None:
    add_snapshot(cache, "acme/qwen", COMMIT_A, {"config.json": bundled_text(QWEN)})
    stages = {"stages": [{"stage_id": 0, "devices": "0", "gpu_memory_utilization": 0.6}]}
    by_hub = vllm_mem.check_stages(stages, gpus="H100-80GB", models={0: "acme/qwen"}, max_model_len=8192)
    by_name = vllm_mem.check_stages(stages, gpus="H100-80GB", models={0: QWEN}, max_model_len=8192)
    assert by_hub.plans[0]["model"] == "acme/qwen" and by_name.plans[0]["model"] == QWEN
    for key in ("weights_bytes", "available_kv_cache_bytes", "num_blocks", "max_concurrency", "fits"):
        assert by_hub.plans[0][key] == by_name.plans[0][key], key
    need = {"stage_id": 0, "model": "acme/qwen", "max_model_len": 8192, "concurrency": 4}
    a = vllm_mem.assign_utilizations([need], gpus="H100-80GB")
    b = vllm_mem.assign_utilizations([dict(need, model=QWEN)], gpus="H100-80GB")
    assert a.to_dict()["stages"] == b.to_dict()["stages"]


def test_path_wins_over_bundled_and_bundled_over_the_hub(cache: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    # The cache holds Qwen3-8B's config under Llama's id: the bundled Llama must still win.
    add_snapshot(cache, LLAMA, COMMIT_A, {"config.json": bundled_text(QWEN)})
    assert ModelSpec.from_hf_config(LLAMA).model_type == "llama"
    # A folder org/name on disk wins over the Hub id of the same spelling.
    folder = tmp_path / "acme" / "qwen"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(bundled_text(LLAMA))
    add_snapshot(cache, "acme/qwen", COMMIT_A, {"config.json": bundled_text(QWEN)})
    monkeypatch.chdir(tmp_path)
    assert ModelSpec.from_hf_config("acme/qwen").model_type == "llama"
    monkeypatch.chdir(cache)
    assert ModelSpec.from_hf_config("acme/qwen").model_type == "qwen3"


def test_cold_cache_offline_is_a_clear_error(cache: Path, no_network: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError) as info:
        ModelSpec.from_pretrained("acme/not-cached")
    text = str(info.value)
    assert text.startswith("repo_id: config.json of acme/not-cached is not in the local cache")
    assert "HF_HUB_OFFLINE is set" in text and "local path" in text and len(text) <= 300
    with pytest.raises(ValueError, match=r"^config: config.json of acme/not-cached .*HF_HUB_OFFLINE"):
        ModelSpec.from_hf_config("acme/not-cached")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(ValueError, match=r"not in the local cache \(.*\) and local_files_only=True"):
        ModelSpec.from_pretrained("acme/not-cached", local_files_only=True)


def test_revision_pinning(cache: Path, no_network: None) -> None:
    add_snapshot(cache, "acme/m", COMMIT_A, {"config.json": bundled_text(LLAMA)}, refs=("main",))
    add_snapshot(cache, "acme/m", COMMIT_B, {"config.json": bundled_text(QWEN)}, refs=("v2",))
    assert ModelSpec.from_pretrained("acme/m").model_type == "llama"
    assert ModelSpec.from_pretrained("acme/m", revision="v2").model_type == "qwen3"
    by_sha = ModelSpec.from_pretrained("acme/m", revision=COMMIT_B)
    assert by_sha.model_type == "qwen3" and by_sha.name == f"acme/m@{COMMIT_B}"
    assert H.fetch_config("acme/m", "v2").commit_hash == COMMIT_B
    with pytest.raises(ValueError, match=r"acme/m at revision 'v3' is not in the local cache"):
        ModelSpec.from_pretrained("acme/m", revision="v3")


def _http_error(cls: type[Exception], status: int) -> Exception:
    """huggingface_hub's own exception class, built with a response of the HTTP library this
    huggingface_hub version uses (httpx2, httpx or requests)."""
    import importlib

    for module in ("httpx2", "httpx"):
        try:
            httpx = importlib.import_module(module)
        except ImportError:
            continue
        return cls("simulated", response=httpx.Response(status, request=httpx.Request("GET", "https://huggingface.co/x")))
    import requests

    response = requests.Response()
    response.status_code = status
    return cls("simulated", response=response)


@pytest.mark.parametrize(("exc", "expected"), [
    (lambda: _http_error(E.GatedRepoError, 401), "acme/gated is a gated repo: accept its terms on "
                                                 "https://huggingface.co/acme/gated and pass token="),
    (lambda: _http_error(E.RepositoryNotFoundError, 404), "no model repo acme/gated on the Hub, or it is private"),
    (lambda: _http_error(E.RevisionNotFoundError, 404), "acme/gated has no revision 'dev'"),
    (lambda: _http_error(E.RemoteEntryNotFoundError, 404), "acme/gated at revision 'dev' has no config.json"),
    (lambda: E.LocalEntryNotFoundError("simulated"), "the Hub could not be reached"),
])
def test_hub_failures_are_one_clear_line(monkeypatch: pytest.MonkeyPatch, exc: Any, expected: str) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    calls: list[dict[str, Any]] = []

    def fake_download(repo_id: str, filename: str, **kwargs: Any) -> str:
        calls.append({"repo_id": repo_id, "filename": filename, **kwargs})
        raise exc()

    def fake_head(url: str, **kwargs: Any) -> None:  # the one HEAD before the download: reachable
        calls.append({"url": url, **kwargs})

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", fake_head)
    with pytest.raises(ValueError) as info:
        ModelSpec.from_pretrained("acme/gated", revision="dev", token="hf_x")
    assert str(info.value).startswith("repo_id: ") and expected in str(info.value), str(info.value)
    assert len(str(info.value)) <= 300 and info.value.__cause__ is None
    assert calls[0]["url"].endswith("/acme/gated/resolve/dev/config.json") and calls[0]["token"] == "hf_x"
    assert calls[1]["token"] == "hf_x" and calls[1]["revision"] == "dev" and calls[1]["local_files_only"] is False

    # The same answers from the HEAD itself: the one-line error at once, no download tried.
    def failing_head(url: str, **kwargs: Any) -> None:
        raise exc()

    calls.clear()
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", failing_head)
    with pytest.raises(ValueError) as info:
        ModelSpec.from_pretrained("acme/gated", revision="dev", token="hf_x")
    assert str(info.value).startswith("repo_id: ") and expected in str(info.value), str(info.value)
    assert calls == []


def test_arguments_are_checked(cache: Path) -> None:
    with pytest.raises(ValueError, match=r"^repo_id: must be a Hugging Face Hub id of the form org/name"):
        ModelSpec.from_pretrained("no-slash")
    with pytest.raises(TypeError, match=r"^repo_id: must be a Hugging Face Hub id"):
        ModelSpec.from_pretrained(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^token: "):
        ModelSpec.from_pretrained("acme/m", token=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^local_files_only: "):
        ModelSpec.from_pretrained("acme/m", local_files_only="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^weights_source: must be one of config, headers"):
        ModelSpec.from_pretrained("acme/m", weights_source="file")


def test_offline_refuses_headers_before_any_request(cache: Path, no_network: None) -> None:
    add_snapshot(cache, "acme/llama-8b", COMMIT_A, {"config.json": bundled_text(LLAMA)})
    with pytest.raises(ValueError, match=r"^weights_source: 'headers' reads acme/llama-8b's .*HF_HUB_OFFLINE"):
        ModelSpec.from_pretrained("acme/llama-8b", weights_source="headers")


# --- weights from safetensors headers ------------------------------------------------------------

WIDTH = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1, "I32": 4}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    """A safetensors file: little-endian u64 header length, the JSON header (dtype, shape,
    data_offsets per tensor, __metadata__), space-padded to 8 bytes, then the data (a sparse
    hole: only headers are read). Returns the data bytes."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * WIDTH[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        f.truncate(8 + len(blob) + offset)
    return offset


def test_header_sum_by_dtype_with_skipped_tensors(tmp_path: Path) -> None:
    # An FP8 checkpoint of 2 decoder layers plus an MTP layer (index 2) and a Qwen3-Next-style mtp.* block.
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {
        "model.embed_tokens.weight": ("BF16", [1000, 64]),          # 128,000 bytes
        "model.layers.0.mlp.down_proj.weight": ("F8_E4M3", [64, 256]),  # 16,384
        "model.layers.0.mlp.down_proj.weight_scale_inv": ("F32", [1, 2]),  # 8
        "model.layers.1.mlp.down_proj.weight": ("F8_E4M3", [64, 256]),  # 16,384
    })
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {
        "model.layers.1.self_attn.q_proj.qweight": ("I32", [8, 64]),  # 2,048
        "model.norm.weight": ("BF16", [64]),                          # 128
        "lm_head.weight": ("BF16", [1000, 64]),                       # 128,000
        "model.layers.2.eh_proj.weight": ("BF16", [64, 128]),         # MTP layer: skipped
        "mtp.fc.weight": ("BF16", [64, 128]),                         # skipped
        "model.layers.0.self_attn.rotary_emb.inv_freq": ("F32", [32]),  # skipped
    })
    shards = {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
              "lm_head.weight": "model-00002-of-00002.safetensors"}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": shards}))
    w = H.local_checkpoint_weights(tmp_path, num_layers=2)
    assert w.by_dtype == {
        "BF16": {"tensors": 3, "parameters": 128064, "bytes": 256128},
        "F32": {"tensors": 1, "parameters": 2, "bytes": 8},
        "F8_E4M3": {"tensors": 2, "parameters": 32768, "bytes": 32768},
        "I32": {"tensors": 1, "parameters": 512, "bytes": 2048},
    }
    assert w.total_bytes == 256128 + 8 + 32768 + 2048 == 290952
    assert w.num_tensors == 7 and w.num_parameters == 128064 + 2 + 32768 + 512
    assert w.skipped_tensors == 3 and w.skipped_bytes == 2 * 64 * 128 * 2 + 32 * 4
    # Quantized: stored dtypes kept; unquantized fp32 served in bf16: floats at 2 bytes.
    assert w.bytes_as_served("bfloat16", quantized=True) == w.total_bytes
    assert w.bytes_as_served("float32", quantized=False) == (128064 + 2) * 4 + 32768 + 2048
    # Without num_layers, layer 2 is not known to be an MTP layer.
    assert H.local_checkpoint_weights(tmp_path).skipped_tensors == 2


def test_ernie_mtp_modules_are_not_counted_as_served_weights(tmp_path: Path) -> None:
    # ERNIE-4.5-MoE checkpoints keep their MTP module beside the decoder as model.mtp_emb_norm.0.*,
    # model.mtp_hidden_norm.0.*, model.mtp_linear_proj.0.* and model.mtp_block.0.* (the names
    # vllm/model_executor/models/ernie_mtp.py rewrites); ernie45_moe.py's load_weights skips every
    # name holding "mtp", so the target model never holds them.
    write_safetensors(tmp_path / "model.safetensors", {
        "model.embed_tokens.weight": ("BF16", [1000, 64]),                  # 128,000 bytes
        "model.layers.0.mlp.gate_proj.weight": ("BF16", [256, 64]),         # 32,768
        "model.norm.weight": ("BF16", [64]),                                # 128
        "model.mtp_emb_norm.0.weight": ("BF16", [64]),                      # skipped
        "model.mtp_hidden_norm.0.weight": ("BF16", [64]),                   # skipped
        "model.mtp_linear_proj.0.weight": ("BF16", [64, 128]),              # skipped
        "model.mtp_block.0.mlp.gate_proj.weight": ("BF16", [256, 64]),      # skipped
    })
    w = H.local_checkpoint_weights(tmp_path, num_layers=1)
    assert w.total_bytes == 128000 + 32768 + 128 and w.num_tensors == 3
    assert w.skipped_tensors == 4 and w.skipped_bytes == 2 * (64 + 64 + 64 * 128 + 256 * 64)


def test_header_whose_offsets_disagree_with_its_shape_is_refused(tmp_path: Path) -> None:
    blob = json.dumps({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 30]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(len(blob).to_bytes(8, "little") + blob + bytes(30))
    with pytest.raises(ValueError, match=r"^checkpoint: 'model.safetensors', tensor 'w': spans 30 bytes, but BF16 x "
                                         r"\[4, 4\] is 32$"):
        H.local_checkpoint_weights(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match=r"^checkpoint: 'model.safetensors': declares a header of 184467\d+ bytes; "
                                         r"at most 16777216 are read$"):
        H.local_checkpoint_weights(tmp_path)
    with pytest.raises(ValueError, match=r"holds neither model.safetensors nor model.safetensors.index.json"):
        H.local_checkpoint_weights(tmp_path / "elsewhere")


class FakeHub:
    """The Hub's side of range requests on a repo's files (status 206 and Content-Range, as the
    Hub answers them), served from files in a folder; ``index`` is hf_hub_download's answer for
    model.safetensors.index.json (None: the repo has none)."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch, index: Path | None = None) -> None:
        self.folder, self.requests, self.index = folder, [], index
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setattr(huggingface_hub, "get_session", lambda: self)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", self.download)
        monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url, **kwargs: None)  # the HEAD first

    def download(self, repo_id: str, filename: str, **kwargs: Any) -> str:
        if self.index is None:
            raise _http_error(E.RemoteEntryNotFoundError, 404)
        return str(self.index)

    def get(self, url: str, headers: dict[str, str], timeout: Any) -> Any:
        from types import SimpleNamespace

        self.requests.append((url, headers["range"], headers.get("authorization")))
        data = (self.folder / url.rsplit("/", 1)[1]).read_bytes()
        first, last = (int(x) for x in headers["range"].removeprefix("bytes=").split("-"))
        body = data[first: last + 1]
        return SimpleNamespace(status_code=206, content=body,
                               headers={"content-range": f"bytes {first}-{first + len(body) - 1}/{len(data)}"})


def test_hub_headers_are_read_with_range_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_safetensors(tmp_path / "model.safetensors", {"model.layers.0.w": ("BF16", [1024, 1024]),
                                                       "lm_head.weight": ("F32", [10, 10])})
    hub = FakeHub(tmp_path, monkeypatch)
    w = H.checkpoint_weights("acme/m", "v1", "hf_x", num_layers=1)
    assert w.total_bytes == 1024 * 1024 * 2 + 400 and w.source == "acme/m@v1"
    url, ranged, auth = hub.requests[0]
    assert url.endswith("/acme/m/resolve/v1/model.safetensors") and ranged == "bytes=0-100000"
    assert auth == "Bearer hf_x" and len(hub.requests) == 1  # a small header: one request
    # The same checks as a local file, against the size the Hub reports: a header whose
    # offsets run past the file (the file is cut short) is refused naming the tensor.
    data = (tmp_path / "model.safetensors").read_bytes()
    (tmp_path / "model.safetensors").write_bytes(data[:-1])
    with pytest.raises(ValueError, match=r"^checkpoint: 'acme/m/model.safetensors', tensor 'lm_head.weight': "
                                         r"data_offsets end at byte 2097552, beyond the file's 2097551"):
        H.checkpoint_weights("acme/m", "v1")


def test_hub_headers_of_a_sharded_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A header larger than the first read (100,001 bytes) takes a second request for the rest.
    big = {f"model.layers.0.w{i:05d}": ("BF16", [2]) for i in range(3000)}
    write_safetensors(tmp_path / "a.safetensors", big)
    write_safetensors(tmp_path / "b.safetensors", {"lm_head.weight": ("BF16", [4, 4])})
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"lm_head.weight": "b.safetensors", "x": "a.safetensors"}}))
    hub = FakeHub(tmp_path, monkeypatch, index)
    w = H.checkpoint_weights("acme/m", num_layers=1)
    assert w.num_tensors == 3001 and w.total_bytes == 3000 * 4 + 32
    assert [r[1].split("-")[0] for r in hub.requests] == ["bytes=0", "bytes=100001", "bytes=0"]
    # An index entry outside the checkpoint's folder is refused before any header is requested.
    hub.requests.clear()
    index.write_text(json.dumps({"weight_map": {"lm_head.weight": "../other/b.safetensors"}}))
    with pytest.raises(ValueError, match=r"weight_map\['lm_head.weight'\] is '../other/b.safetensors', not a "
                                         r"\.safetensors file in the checkpoint's own folder"):
        H.checkpoint_weights("acme/m")
    assert hub.requests == []


def _checkpoint_folder(tmp_path: Path, config: dict[str, Any], stored_bytes: int) -> Path:
    """A local checkpoint: the config and one bf16 tensor of ``stored_bytes``."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    write_safetensors(folder / "model.safetensors", {"model.layers.0.blob": ("BF16", [stored_bytes // 2])})
    return folder


def test_plan_uses_header_bytes_split_as_the_config(tmp_path: Path) -> None:
    config = json.loads(bundled_text(LLAMA))
    spec = ModelSpec.from_hf_config(config)
    one = spec.weight_breakdown()["per_pp_rank"][0]
    params_bytes = one["total_bytes"] - one["buffer_bytes"]  # what the config path loads, buffers aside
    extra = 3 << 30
    folder = _checkpoint_folder(tmp_path, config, params_bytes + extra)
    headers = ModelSpec.from_hf_config(folder, weights_source="headers")
    assert headers.checkpoint_weight_bytes == params_bytes + extra and headers.weights_source == "checkpoint headers"
    assert headers.checkpoint_weights is not None and headers.checkpoint_weights.by_dtype["BF16"]["tensors"] == 1

    by_config = vllm_mem.plan(spec, "H100-80GB", max_model_len=8192)
    by_headers = vllm_mem.plan(headers, "H100-80GB", max_model_len=8192)
    # One GPU: the whole checkpoint plus the config's buffers (rotary cache: in no checkpoint).
    assert by_headers.weights_bytes == by_config.weights_bytes + extra
    assert by_headers.available_kv_cache_bytes == by_config.available_kv_cache_bytes - extra
    d = by_headers.to_dict()
    assert d["weights_source"] == "checkpoint headers"
    assert d["inputs"]["checkpoint_weights_bytes"] == params_bytes + extra
    assert by_config.to_dict()["weights_source"] == "config"
    assert "checkpoint headers" in by_headers.report() and "checkpoint headers" not in by_config.report()


@pytest.mark.parametrize(("tp", "pp"), [(2, 1), (4, 1), (1, 2), (2, 2)])
def test_header_bytes_equal_to_the_config_split_like_the_config(tmp_path: Path, tp: int, pp: int) -> None:
    # A checkpoint holding exactly the config's parameter bytes plans exactly the config's
    # per-rank weights at every TP/PP layout (to the byte, up to rounding of the share).
    config = json.loads(bundled_text(LLAMA))
    spec = ModelSpec.from_hf_config(config)
    one = spec.weight_breakdown()["per_pp_rank"][0]
    folder = _checkpoint_folder(tmp_path, config, one["total_bytes"] - one["buffer_bytes"])
    headers = ModelSpec.from_hf_config(folder, weights_source="headers")
    a = vllm_mem.plan(spec, "H100-80GB", max_model_len=8192, tensor_parallel_size=tp, pipeline_parallel_size=pp)
    b = vllm_mem.plan(headers, "H100-80GB", max_model_len=8192, tensor_parallel_size=tp, pipeline_parallel_size=pp)
    for ra, rb in zip(a.ranks, b.ranks, strict=True):
        assert abs(ra.weights_bytes - rb.weights_bytes) <= 1, (ra.pp_rank, ra.weights_bytes, rb.weights_bytes)
    # Twice the bytes: each rank's parameter share doubles, its buffers stay.
    folder2 = tmp_path / "double"
    folder2.mkdir()
    (folder2 / "config.json").write_text(json.dumps(config))
    write_safetensors(folder2 / "model.safetensors", {"w": ("BF16", [one["total_bytes"] - one["buffer_bytes"]])})
    c = vllm_mem.plan(ModelSpec.from_hf_config(folder2, weights_source="headers"), "H100-80GB", max_model_len=8192,
                      tensor_parallel_size=tp, pipeline_parallel_size=pp)
    per_rank = spec.weight_breakdown(tensor_parallel_size=tp, pipeline_parallel_size=pp)["per_pp_rank"]
    for rc, rw in zip(c.ranks, per_rank, strict=True):
        assert abs(rc.weights_bytes - (2 * (rw["total_bytes"] - rw["buffer_bytes"]) + rw["buffer_bytes"])) <= 1


def test_fp32_checkpoint_served_in_bf16_counts_half(tmp_path: Path) -> None:
    config = dict(json.loads(bundled_text(LLAMA)), torch_dtype="float32")
    folder = tmp_path / "fp32"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    write_safetensors(folder / "model.safetensors", {"w": ("F32", [1 << 28])})  # 1 GiB stored
    spec = ModelSpec.from_hf_config(folder, weights_source="headers")
    assert spec.checkpoint_weight_bytes == 1 << 30
    assert spec._checkpoint_weights_bytes("auto", None) == 1 << 29      # fp32 is served as bf16 (dtype auto)
    assert spec._checkpoint_weights_bytes("float32", None) == 1 << 30
    plan = vllm_mem.plan(spec, "H100-80GB", max_model_len=8192)
    assert plan.to_dict()["inputs"]["checkpoint_weights_bytes"] == 1 << 29


def test_headers_refused_where_there_is_no_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^weights_source: 'headers' needs a checkpoint folder or a Hub id \(org"):
        ModelSpec.from_hf_config("llama-3.1-8b-instruct", weights_source="headers")  # a bundled short name
    # A bundled id is the Hub's id: its headers come from the Hub, refused offline.
    with pytest.raises(ValueError, match=r"^weights_source: 'headers' reads meta-llama/.*HF_HUB_OFFLINE"):
        ModelSpec.from_hf_config(LLAMA, weights_source="headers")
    with pytest.raises(ValueError, match=r"^weights_source: 'headers' needs a checkpoint folder or a Hub id, not a"):
        ModelSpec.from_hf_config(json.loads(bundled_text(LLAMA)), weights_source="headers")
    (tmp_path / "config.json").write_text(bundled_text(LLAMA))
    with pytest.raises(ValueError, match=r"^checkpoint: .* holds neither model.safetensors"):
        ModelSpec.from_hf_config(tmp_path, weights_source="headers")


def test_the_core_refuses_a_negative_checkpoint_figure() -> None:
    inputs = vllm_mem._C.PlanInputs()
    inputs.total_memory_bytes = 80 << 30
    inputs.checkpoint_weights_bytes = -1
    with pytest.raises(ValueError, match="checkpoint_weights_bytes"):
        vllm_mem._C.evaluate_plan(ModelSpec.from_hf_config(LLAMA)._spec, inputs)


def test_cli_plan_takes_weights_from_headers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A local checkpoint folder: the bundled Llama config and one (sparse) shard holding 20 GB of
    # BF16 embedding rows, so the headers figure cannot be mistaken for the config's 16.06 GB.
    from vllm_mem.cli import main
    (tmp_path / "config.json").write_text(bundled_text(LLAMA))
    data_bytes = write_safetensors(tmp_path / "model.safetensors",
                                   {"model.embed_tokens.weight": ("BF16", [10_000_000, 1000])})
    assert data_bytes == 20_000_000_000
    assert main(["plan", str(tmp_path), "--gpu", "H100", "--weights-source", "headers", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["weights_source"] == "checkpoint headers"
    assert out["inputs"]["checkpoint_weights_bytes"] == data_bytes
    assert main(["plan", str(tmp_path), "--gpu", "H100"]) == 0
    assert "config: parameters" in capsys.readouterr().out
    assert main(["plan", str(tmp_path), "--gpu", "H100", "--weights-source", "disk"]) == 2
    assert "--weights-source" in capsys.readouterr().err
