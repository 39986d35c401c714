"""Models named by their Hugging Face Hub id (``org/name``): the config from the local cache or
the Hub, and, on request, the checkpoint's exact weight bytes from its safetensors headers.

Everything goes through ``huggingface_hub``, imported inside the functions (``import vllm_mem``
stays cheap; ``tests/python/test_import_cost.py``), so its cache layout, tokens (``token=``,
``HF_TOKEN``, ``hf auth login``) and endpoint settings are the ones vLLM itself uses. Only
``config.json`` is fetched (and ``model.safetensors.index.json`` where the repo has one); never
weights. The environment is read at each call, not at import: ``HF_HUB_CACHE`` (or
``HF_HOME``/hub) names the cache, ``HF_HUB_OFFLINE=1`` reads the cache only.

Every failure (no such repo, a gated repo without a token, an unknown revision, offline with a
cold cache) is a ``ValueError`` naming the repo and what to do; ``docs/models.md``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from . import _limits as L
from . import _validate as V

__all__ = ["CheckpointWeights", "HubConfig", "checkpoint_weights", "fetch_config", "hub_cache_dir",
           "is_hub_id", "local_checkpoint_weights", "sum_safetensors_metadata"]

#: The Hub's repo-id shape, ``org/name`` (huggingface_hub's validate_repo_id: letters, digits,
#: ``-``, ``_``, ``.``; at most 96 characters each side; no ``--`` or ``..``).
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")

#: Where the repo's safetensors index lives (transformers' SAFE_WEIGHTS_INDEX_NAME).
_INDEX_FILE = "model.safetensors.index.json"

#: Bytes per element of the safetensors dtypes (safetensors' Dtype enum). Sub-byte dtypes
#: (F4 and packed ints) are counted from the data offsets alone.
_DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
                "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}

#: Floating dtypes vLLM casts to the model dtype when it loads an unquantized parameter
#: (vllm/model_executor/model_loader/weight_utils.py default_weight_loader: param.data.copy_).
_CAST_FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
_SERVED_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


def _truthy(value: str | None) -> bool:
    # huggingface_hub's constants._is_true.
    return value is not None and value.upper() in ("1", "ON", "YES", "TRUE")


def is_hub_id(name: str) -> bool:
    """Whether ``name`` has the Hub's ``org/name`` shape (checked after paths and bundled
    names, so a folder ``org/name`` on disk wins)."""
    # A name ending like a file (a mistyped config.json or stage-file path) is not sent to the Hub.
    return (bool(_HUB_ID.fullmatch(name)) and "--" not in name and ".." not in name
            and not name.lower().endswith((".json", ".yaml", ".yml")))


def hub_cache_dir() -> Path:
    """The Hugging Face cache as huggingface_hub resolves it, read from the environment now:
    ``HF_HUB_CACHE``, else ``HF_HOME``/hub, else ``$XDG_CACHE_HOME/huggingface/hub``, else
    ``~/.cache/huggingface/hub`` (huggingface_hub/constants.py)."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME")
    if not home:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        home = os.path.join(xdg, "huggingface")
    return Path(home).expanduser() / "hub"


def offline() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub reads it, at the time of the call."""
    return _truthy(os.environ.get("HF_HUB_OFFLINE"))


@dataclass(frozen=True)
class HubConfig:
    """Where a Hub model's config came from."""

    repo_id: str
    revision: str | None       #: as asked (``None``: the ``main`` branch)
    commit_hash: str           #: the snapshot read
    config_path: Path
    index_path: Path | None    #: model.safetensors.index.json, when the repo has one

    @property
    def label(self) -> str:
        """``org/name@abc1234``: the name reports show."""
        return f"{self.repo_id}@{self.commit_hash[:7]}" if self.commit_hash else self.repo_id


def _check_args(repo_id: Any, revision: Any, token: Any, local_files_only: Any,
                field: str = "repo_id") -> tuple[str, str | None, Any, bool]:
    repo = V.text(repo_id, field, what="a Hugging Face Hub id (org/name)")
    if not is_hub_id(repo):
        raise V.bad_value(field, "a Hugging Face Hub id of the form org/name (letters, digits, '-', '_', '.')",
                          repo)
    rev = V.optional_text(revision, "revision", what="a branch, tag or commit hash, or None")
    if token is not None and not isinstance(token, (str, bool)):
        raise V.bad_type("token", "a Hugging Face token (str), True/False or None", token)
    if isinstance(token, str):
        V.text(token, "token")
    local = offline() if local_files_only is None else V.flag(local_files_only, "local_files_only")
    return repo, rev, token, local


def _hub_error(repo: str, revision: str | None, exc: BaseException, local: bool, what: str,
               field: str = "repo_id") -> ValueError:
    """huggingface_hub's exception as one line naming the repo and what to do (most specific
    class first: GatedRepoError is a RepositoryNotFoundError)."""
    from huggingface_hub import errors as E

    at = f" at revision {V.show(revision)}" if revision else ""
    if isinstance(exc, E.GatedRepoError):
        text = (f"{repo} is a gated repo: accept its terms on https://huggingface.co/{repo} and pass token= "
                "(or set HF_TOKEN, or run `hf auth login`); or give a local config.json path")
    elif isinstance(exc, E.RepositoryNotFoundError):
        text = (f"no model repo {repo} on the Hub, or it is private (pass token= or set HF_TOKEN); "
                "check the id, or give a local config.json path or a bundled name (`vllm-mem models`)")
    elif isinstance(exc, E.RevisionNotFoundError):
        text = f"{repo} has no revision {V.show(revision)}: give a branch, tag or commit hash that exists"
    elif isinstance(exc, E.LocalEntryNotFoundError):
        why = ("HF_HUB_OFFLINE is set" if offline() else "local_files_only=True") if local \
            else "the Hub could not be reached"
        text = (f"{what} of {repo}{at} is not in the local cache ({hub_cache_dir()}) and {why}: fetch it "
                f"once with network access (`hf download {repo} {what}`), unset HF_HUB_OFFLINE, "
                "or give a local path")
    elif isinstance(exc, E.EntryNotFoundError):
        text = f"{repo}{at} has no {what}: not a transformers model repo? give a local config.json path"
    elif isinstance(exc, E.HFValidationError):
        text = f"{V.show(repo)} is not a valid Hub id or revision: {exc}"
    else:
        text = f"fetching {what} of {repo}{at} failed ({type(exc).__name__}: {exc}); retry, or give a local path"
    return ValueError(V.clip(f"{field}: {text}", L.MAX_MESSAGE_CHARS))


def _is_fetch_error(exc: BaseException) -> bool:
    """Errors of the Hub client or its HTTP layer (httpx or requests, by version), which become
    ValueErrors; anything else is a bug and propagates."""
    from huggingface_hub import errors as E

    if isinstance(exc, (E.HfHubHTTPError, E.EntryNotFoundError, E.HFValidationError, OSError)):
        return True
    root = type(exc).__module__.split(".")[0]
    return root in ("httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3")


def _download(repo: str, filename: str, revision: str | None, token: Any, local: bool) -> str:
    from huggingface_hub import hf_hub_download

    return str(hf_hub_download(repo, filename, revision=revision, token=token, local_files_only=local,
                               cache_dir=hub_cache_dir()))


def fetch_config(repo_id: str, revision: str | None = None, token: str | bool | None = None, *,
                 local_files_only: bool | None = None, field: str = "repo_id") -> HubConfig:
    """``config.json`` of a Hub model, from the local cache when it is there (the Hub is asked
    which commit ``revision`` names unless offline), and ``model.safetensors.index.json`` when the
    repo has one (from the cache only when the config was cached already). ``local_files_only=None`` follows ``HF_HUB_OFFLINE``; ``field`` is the argument
    errors name."""
    repo, rev, tok, local = _check_args(repo_id, revision, token, local_files_only, field)
    from huggingface_hub import try_to_load_from_cache

    # A config already cached says nothing about the network; asking the Hub for an index it
    # has never seen would then retry with back-off (about 24 s without a route to the Hub).
    cached_before = isinstance(try_to_load_from_cache(repo, "config.json", cache_dir=hub_cache_dir(),
                                                      revision=rev), str)
    try:
        config_path = Path(_download(repo, "config.json", rev, tok, local))
    except Exception as exc:
        if not _is_fetch_error(exc):
            raise
        raise _hub_error(repo, rev, exc, local, "config.json", field) from None
    # snapshots/<commit>/config.json: the folder's name is the commit read.
    commit = config_path.parent.name
    index_path: Path | None = None
    try:
        index_path = Path(_download(repo, _INDEX_FILE, rev, tok, local or cached_before))
    except Exception as exc:
        if not _is_fetch_error(exc):
            raise
        index_path = None  # a single-file checkpoint (or not cached offline): the index is optional
    return HubConfig(repo, rev, commit, config_path, index_path)


# --- weights from the checkpoint's safetensors headers ------------------------------------------


@dataclass(frozen=True)
class CheckpointWeights:
    """Every tensor of a safetensors checkpoint, summed from its headers (no weights read).

    ``total_bytes`` is the bytes as stored (each tensor's ``data_offsets`` span) of the tensors
    vLLM loads; ``by_dtype`` splits them per safetensors dtype; ``skipped_*`` are tensors vLLM's
    model does not load (multi-token-prediction layers, rotary ``inv_freq`` buffers).
    """

    source: str                                 #: "org/name@rev" or a local path
    total_bytes: int
    num_parameters: int
    num_tensors: int
    by_dtype: dict[str, dict[str, int]] = field(default_factory=dict)  #: dtype -> tensors, parameters, bytes
    skipped_bytes: int = 0
    skipped_tensors: int = 0

    def bytes_as_served(self, served_dtype: str, quantized: bool) -> int:
        """Bytes once vLLM has loaded them: an unquantized model's floating tensors are cast to
        the model dtype (an fp32 checkpoint served in bf16 takes half its file size); a quantized
        checkpoint's tensors keep their stored dtypes (packed weights, scales)."""
        width = _SERVED_BYTES.get(served_dtype)
        if quantized or width is None:
            return self.total_bytes
        total = 0
        for dtype, row in self.by_dtype.items():
            total += row["parameters"] * width if dtype in _CAST_FLOAT_DTYPES else row["bytes"]
        return total

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "total_bytes": self.total_bytes, "num_parameters": self.num_parameters,
                "num_tensors": self.num_tensors, "by_dtype": {k: dict(v) for k, v in self.by_dtype.items()},
                "skipped_bytes": self.skipped_bytes, "skipped_tensors": self.skipped_tensors}


_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def _skipped_by_vllm(name: str, num_layers: int | None) -> bool:
    """Tensors a checkpoint holds that vLLM's model does not load:
    - ``mtp.*`` (Qwen3-Next: vllm/model_executor/models/qwen3_next.py maps the "mtp." prefix
      to None in hf_to_vllm_mapper: "MTP weights are loaded by the draft model");
    - decoder layers at index >= num_hidden_layers: the next-token-prediction layers of
      DeepSeek-V3 / GLM-4.5 (deepseek_v2.py / glm4_moe.py load_weights skip the names
      get_spec_layer_idx_from_weight_name matches, model.layers.{num_hidden_layers + i}.);
    - ``rotary_emb.inv_freq`` buffers of old checkpoints (llama.py load_weights skips them).
    """
    if name.startswith("mtp.") or ".mtp." in name or "rotary_emb.inv_freq" in name:
        return True
    if num_layers is not None:
        m = _LAYER.search(name)
        if m and int(m.group(1)) >= num_layers and not name.startswith(("vision", "visual")):
            return True
    return False


def sum_safetensors_metadata(metadata: Any, source: str, num_layers: int | None = None) -> CheckpointWeights:
    """Sums a ``huggingface_hub`` ``SafetensorsRepoMetadata`` (or a single file's
    ``SafetensorsFileMetadata``): bytes as stored per tensor from its data offsets, checked
    against dtype x shape where the dtype has a whole-byte width."""
    files = getattr(metadata, "files_metadata", None)
    file_list = list(files.values()) if files is not None else [metadata]
    by_dtype: dict[str, dict[str, int]] = {}
    total = params = count = skipped_bytes = skipped = 0
    for file_meta in file_list:
        tensors = file_meta.tensors
        if count + skipped + len(tensors) > L.MAX_CHECKPOINT_TENSORS:
            V.fail("checkpoint", f"{source} lists more than {L.MAX_CHECKPOINT_TENSORS} tensors")
        for name, info in tensors.items():
            begin, end = (int(x) for x in info.data_offsets)
            stored = end - begin
            if begin < 0 or stored < 0:
                V.fail("checkpoint", f"{source}: tensor {V.show(name)} has data offsets {V.show([begin, end])}")
            n = 1
            for dim in info.shape:
                n *= int(dim)
            width = _DTYPE_BYTES.get(str(info.dtype))
            if width is not None and n * width != stored:
                V.fail("checkpoint", f"{source}: tensor {V.show(name)} spans {stored} bytes, but "
                                     f"{info.dtype} x {list(info.shape)} is {n * width}")
            if _skipped_by_vllm(name, num_layers):
                skipped += 1
                skipped_bytes += stored
                continue
            row = by_dtype.setdefault(str(info.dtype), {"tensors": 0, "parameters": 0, "bytes": 0})
            row["tensors"] += 1
            row["parameters"] += n
            row["bytes"] += stored
            total += stored
            params += n
            count += 1
    if count == 0:
        V.fail("checkpoint", f"{source} holds no tensor vLLM loads")
    return CheckpointWeights(source, total, params, count, dict(sorted(by_dtype.items())), skipped_bytes, skipped)


def checkpoint_weights(repo_id: str, revision: str | None = None, token: str | bool | None = None, *,
                       num_layers: int | None = None) -> CheckpointWeights:
    """Weight bytes of a Hub checkpoint from its safetensors headers (``get_safetensors_metadata``:
    HTTP range requests of each shard's header; no weights downloaded). Needs the network:
    offline it is a ValueError saying so."""
    repo, rev, tok, local = _check_args(repo_id, revision, token, None)
    if local:
        V.fail("weights_source", f"'headers' reads {repo}'s safetensors headers from the Hub, and HF_HUB_OFFLINE "
                                 "is set: unset it, or use weights_source='config'")
    from huggingface_hub import get_safetensors_metadata

    try:
        meta = get_safetensors_metadata(repo, revision=rev, token=tok)
    except Exception as exc:
        if not _is_fetch_error(exc):
            raise
        from huggingface_hub import errors as E

        if isinstance(exc, getattr(E, "NotASafetensorsRepoError", ())):
            V.fail("weights_source", f"{repo} has no safetensors checkpoint: use weights_source='config'")
        raise _hub_error(repo, rev, exc, local, "the safetensors headers") from None
    return sum_safetensors_metadata(meta, f"{repo}@{rev}" if rev else repo, num_layers)


def local_checkpoint_weights(folder: str | os.PathLike[str], num_layers: int | None = None) -> CheckpointWeights:
    """The same sum for a checkpoint on disk: a folder holding ``model.safetensors`` or
    ``model.safetensors.index.json`` and its shards (only each file's header is read)."""
    path = V.path_of(folder, "checkpoint")
    index = path / _INDEX_FILE
    if V.file_problem(index) is None:
        doc = json.loads(V.read_text(index, "checkpoint", L.JSON_MAX_BYTES))
        weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
        if not isinstance(weight_map, dict):
            V.fail("checkpoint", f"{V.show(str(index))} has no weight_map")
        shards = sorted({str(v) for v in weight_map.values()})
    elif V.file_problem(path / "model.safetensors") is None:
        shards = ["model.safetensors"]
    else:
        V.fail("checkpoint", f"{V.show(str(path))} holds neither model.safetensors nor {_INDEX_FILE}")

    # The one attribute of huggingface_hub's SafetensorsRepoMetadata that the sum reads.
    repo = SimpleNamespace(files_metadata={shard: _parse_header(path / shard) for shard in shards})
    return sum_safetensors_metadata(repo, str(path), num_layers)


def _parse_header(file: Path) -> Any:
    """One safetensors file's header, parsed by huggingface_hub (only the header is read)."""
    import huggingface_hub

    parse = getattr(huggingface_hub, "parse_local_safetensors_file_metadata", None) or _parse_header_fallback
    try:
        return parse(file)
    except Exception as exc:
        from huggingface_hub import errors as E

        if isinstance(exc, (OSError, ValueError, getattr(E, "SafetensorsParsingError", ValueError))):
            V.fail("checkpoint", f"cannot read the safetensors header of {V.show(str(file))}: {exc}")
        raise


def _parse_header_fallback(file: Path) -> Any:
    # huggingface_hub before parse_local_safetensors_file_metadata: the same read of the format
    # (an 8-byte little-endian header length, then that many bytes of JSON) into its own types.
    from huggingface_hub.utils._safetensors import SafetensorsFileMetadata, TensorInfo

    with open(file, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        if length > L.JSON_MAX_BYTES:
            raise ValueError(f"header of {length} bytes; at most {L.JSON_MAX_BYTES} are read")
        header = json.loads(f.read(length))
    meta = header.pop("__metadata__", {})
    return SafetensorsFileMetadata(metadata=meta, tensors={
        k: TensorInfo(dtype=v["dtype"], shape=v["shape"], data_offsets=tuple(v["data_offsets"]))
        for k, v in header.items()})
