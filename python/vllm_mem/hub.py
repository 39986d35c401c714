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

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from . import _limits as L
from . import _validate as V
from ._bounded_json import load_json
from .errors import InvalidArgumentError

__all__ = ["CheckpointWeights", "HubConfig", "SafetensorsFile", "SafetensorsTensor", "check_environment",
           "checkpoint_weights", "fetch_config", "hub_cache_dir", "is_hub_id", "local_checkpoint_weights",
           "parse_safetensors_header", "sum_safetensors_metadata"]

#: The Hub's repo-id shape, ``org/name`` (huggingface_hub's validate_repo_id: letters, digits,
#: ``-``, ``_``, ``.``; at most 96 characters each side; no ``--`` or ``..``).
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")

#: Where the repo's safetensors index lives (transformers' SAFE_WEIGHTS_INDEX_NAME).
_INDEX_FILE = "model.safetensors.index.json"

#: Bits per element of every safetensors dtype (the safetensors library's Dtype enum, exact
#: spelling: "bf16" or "I4" is refused there, so here). Sub-byte dtypes (F4, F6_*) must fill
#: whole bytes. Packed int4 weights are stored as I32/U8 by the quantizers, not as a dtype.
_DTYPE_BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
               "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
               "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}
#: Dims of one tensor (safetensors sets no bound; real tensors have at most 5-6) and the u64
#: range the safetensors library reads dims and offsets into.
_MAX_TENSOR_RANK = 64
_MAX_U64 = (1 << 64) - 1

#: Floating dtypes vLLM casts to the model dtype when it loads an unquantized parameter
#: (vllm/model_executor/model_loader/weight_utils.py default_weight_loader: param.data.copy_).
_CAST_FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
_SERVED_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


#: huggingface_hub's true and false spellings of a boolean variable (constants._is_true); we
#: also strip surrounding spaces ("1 " is offline, not silently online) and refuse anything else.
_ENV_TRUE = ("1", "ON", "YES", "TRUE")
_ENV_FALSE = ("", "0", "OFF", "NO", "FALSE")
#: Seconds variables huggingface_hub reads with int() at import (an "abc" would fail that import
#: with "invalid literal for int()"): a whole number of seconds, up to an hour.
_ENV_SECONDS = ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT")
_ENV_PATHS = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")
_MAX_ENV_SECONDS = 3600
#: Connecting to the Hub: a reachable Hub answers in well under this; an unreachable one (no
#: route, a dead proxy, a firewall that drops packets) is reported after it instead of after
#: huggingface_hub's retries with back-off (about 24 s).
HUB_CONNECT_TIMEOUT_S = 1.5


def _env_flag(name: str) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return False
    value = raw.strip().upper()
    if value in _ENV_TRUE:
        return True
    if value in _ENV_FALSE:
        return False
    raise V.bad_value(name, "1, ON, YES or TRUE (offline), or 0, OFF, NO, FALSE or empty (online)", raw)


def _env_seconds(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    text = raw.strip()
    if not text.isascii() or not text.isdigit():
        raise V.bad_value(name, "a whole number of seconds (huggingface_hub reads it with int())", raw)
    seconds = int(text[:8])
    if len(text) > 8 or seconds > _MAX_ENV_SECONDS:
        raise V.bad_value(name, f"at most {_MAX_ENV_SECONDS} seconds", raw)
    return seconds or default  # huggingface_hub reads 0 as "use the default"


def check_environment() -> None:
    """The Hugging Face variables huggingface_hub reads when it is imported, checked first, each
    refusal a ValueError naming the variable (huggingface_hub itself fails its own import on a
    non-integer timeout, and reads an unknown offline value as online)."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        _env_flag(name)
    for name in _ENV_SECONDS:
        _env_seconds(name, 10)
    for name in _ENV_PATHS:
        if os.environ.get(name):
            V.path_of(os.environ[name], name)
    endpoint = os.environ.get("HF_ENDPOINT")
    if endpoint is not None and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", endpoint):
        raise V.bad_value("HF_ENDPOINT", "an http:// or https:// URL such as https://huggingface.co", endpoint)


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
    for name in _ENV_PATHS:
        if os.environ.get(name):
            V.path_of(os.environ[name], name)
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME")
    if not home:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        home = os.path.join(xdg, "huggingface")
    return Path(home).expanduser() / "hub"


def offline() -> bool:
    """``HF_HUB_OFFLINE`` (else ``TRANSFORMERS_OFFLINE``) as huggingface_hub reads it, at the time
    of the call, with surrounding spaces ignored; an unknown value is a ValueError naming it."""
    return _env_flag("HF_HUB_OFFLINE") or _env_flag("TRANSFORMERS_OFFLINE")


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
    check_environment()
    repo = V.text(repo_id, field, what="a Hugging Face Hub id (org/name)")
    if not is_hub_id(repo):
        raise V.bad_value(field, "a Hugging Face Hub id of the form org/name (letters, digits, '-', '_', '.')",
                          repo)
    rev = V.optional_text(revision, "revision", what="a branch, tag or commit hash, or None")
    if rev is not None and not _is_ref_name(rev):
        # The revision names a file under refs/ in the cache: "../refs/main" or "/etc/x" would
        # be read from outside the repo's folder.
        raise V.bad_value("revision", "a branch, tag or commit hash (git's ref-name rules: no '..', no leading "
                                      "or trailing '/', no spaces or control characters)", rev)
    if token is not None and not isinstance(token, (str, bool)):
        raise V.bad_type("token", "a Hugging Face token (str), True/False or None", token)
    if isinstance(token, str):
        V.text(token, "token")
    local = offline() if local_files_only is None else V.flag(local_files_only, "local_files_only")
    return repo, rev, token, local


#: git check-ref-format: what a branch or tag name cannot hold.
_BAD_REF = re.compile(r"(^|/)\.|\.\.|//|@\{|[\x00-\x20\x7f~^:?*\[\\]|\.lock(/|$)|^/|/$|\.$")


def _is_ref_name(rev: str) -> bool:
    return bool(rev) and rev != "@" and _BAD_REF.search(rev) is None


_COMMIT = re.compile(r"[0-9a-f]{40}")


def _repo_folder(repo: str) -> Path:
    return hub_cache_dir() / ("models--" + repo.replace("/", "--"))


def _check_cached_ref(repo: str, revision: str | None) -> None:
    """The cache's refs/<revision> file, read as untrusted before huggingface_hub reads it: a
    regular file (a FIFO would block the read) of one commit hash (a path there sends the
    snapshot lookup out of the repo's folder: huggingface_hub's "Invalid pointer path")."""
    if revision is not None and _COMMIT.fullmatch(revision):
        return  # a commit hash is looked up under snapshots/, not refs/
    ref = _repo_folder(repo) / "refs" / (revision or "main")
    if not os.path.lexists(ref):
        return
    where = f"refs/{revision or 'main'} of {repo}"  # the cache's folder is in hub_cache_dir()
    field = "revision" if revision else "repo_id"
    problem = V.file_problem(ref)
    if problem is not None:
        V.fail(field, f"the cache's {where} cannot be read: {problem}")
    try:
        with open(ref, "rb") as f:
            text = f.read(4096).decode("utf-8", "replace").strip()
    except OSError as exc:
        V.fail(field, f"the cache's {where} cannot be read: {exc.strerror or type(exc).__name__}")
    if not _COMMIT.fullmatch(text):
        V.fail(field, f"the cache's {where} holds {V.show(text)}, not a 40-character commit hash: delete the file "
                      "(or the repo's folder in the cache) and fetch again")


def _inside_repo(repo: str, path: Path, field: str, what: str) -> Path:
    """``path`` (a snapshot file, a symlink to blobs/) as a regular file inside the repo's folder."""
    folder = _repo_folder(repo).resolve()
    real = path.resolve()
    if folder not in real.parents:  # a link to anywhere else on the machine is not this repo's file
        V.fail(field, f"the cache's {what} of {repo} points outside the repo's folder in the cache: delete the "
                      "snapshot and fetch again")
    problem = V.file_problem(real)
    if problem is not None:
        V.fail(field, f"the cache's {what} of {repo} cannot be read: {problem}")
    return path


class _QuietHub:
    """huggingface_hub's own warnings while we call it ("Retrying in 1s [Retry 1/5]", "... thrown
    while requesting HEAD"): every failure becomes our one-line error, so these lines only break
    the CLI's one-line (or one-JSON-object) stderr. Levels are restored afterwards."""

    _NAMES = ("huggingface_hub.utils._http", "huggingface_hub.file_download", "huggingface_hub.utils._headers")

    def __enter__(self) -> None:
        import logging

        self._saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in self._NAMES]
        for logger, _ in self._saved:
            logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        for logger, level in self._saved:
            logger.setLevel(level)


def _timeout(read_s: float) -> Any:
    """A short connect timeout and huggingface_hub's read timeout, in the form of the HTTP
    library its session uses (httpx/httpx2: a Timeout; requests: a (connect, read) tuple)."""
    import importlib

    from huggingface_hub import get_session

    library = type(get_session()).__module__.split(".")[0]
    if library.startswith("httpx"):
        return importlib.import_module(library).Timeout(read_s, connect=HUB_CONNECT_TIMEOUT_S)
    return (HUB_CONNECT_TIMEOUT_S, read_s)


def _unreachable(exc: BaseException) -> bool:
    """A connection-level failure (no answer from the Hub), or the answers huggingface_hub
    itself falls back to the cache on (429, 5xx)."""
    from huggingface_hub import errors as E

    if isinstance(exc, E.HfHubHTTPError):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        return status is None or status == 429 or status >= 500
    return not isinstance(exc, (E.EntryNotFoundError, E.HFValidationError))


def _probe(repo: str, filename: str, revision: str | None, token: Any) -> None:
    """One HEAD of the file: no retries and a short connect timeout. Raises what the Hub
    answered (a missing repo, a gated one) or the connection error."""
    import inspect

    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    kwargs: dict[str, Any] = {}
    if "retry_on_errors" in inspect.signature(get_hf_file_metadata).parameters:
        kwargs["retry_on_errors"] = False
    read_s = _env_seconds("HF_HUB_ETAG_TIMEOUT", 10)
    with _QuietHub():
        get_hf_file_metadata(hf_hub_url(repo, filename, revision=revision), token=token, timeout=_timeout(read_s),
                             **kwargs)


def _hub_error(repo: str, revision: str | None, exc: BaseException, local: bool, what: str,
               field: str = "repo_id", reason: str = "") -> ValueError:
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
            else "the Hub could not be reached" + (f" ({reason})" if reason else "")
        unset = ", unset HF_HUB_OFFLINE," if local and offline() else ""
        text = (f"{what} of {repo}{at} is not in the local cache ({hub_cache_dir()}) and {why}: fetch it "
                f"once with network access (`hf download {repo} {what}`){unset} or give a local path")
    elif isinstance(exc, E.EntryNotFoundError):
        text = f"{repo}{at} has no {what}: not a transformers model repo? give a local config.json path"
    elif isinstance(exc, E.HFValidationError):
        text = f"{V.show(repo)} is not a valid Hub id or revision: {exc}"
    else:
        text = f"fetching {what} of {repo}{at} failed ({type(exc).__name__}: {exc}); retry, or give a local path"
    return InvalidArgumentError(V.clip(f"{field}: {text}", L.MAX_MESSAGE_CHARS), field)


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

    with _QuietHub():
        return str(hf_hub_download(repo, filename, revision=revision, token=token, local_files_only=local,
                                   cache_dir=hub_cache_dir(), etag_timeout=_env_seconds("HF_HUB_ETAG_TIMEOUT", 10)))


def fetch_config(repo_id: str, revision: str | None = None, token: str | bool | None = None, *,
                 local_files_only: bool | None = None, field: str = "repo_id") -> HubConfig:
    """``config.json`` of a Hub model, from the local cache when it is there (the Hub is asked
    which commit ``revision`` names unless offline), and ``model.safetensors.index.json`` when the
    repo has one (from the cache only when the config was cached already).
    ``local_files_only=None`` follows ``HF_HUB_OFFLINE``; ``field`` is the argument errors name."""
    repo, rev, tok, local = _check_args(repo_id, revision, token, local_files_only, field)
    _check_cached_ref(repo, rev)
    from huggingface_hub import try_to_load_from_cache

    # A config already cached says nothing about the network; asking the Hub for an index it
    # has never seen would then retry with back-off (about 24 s without a route to the Hub).
    with _QuietHub():
        cached_before = isinstance(try_to_load_from_cache(repo, "config.json", cache_dir=hub_cache_dir(),
                                                          revision=rev), str)
    if not local:
        # One HEAD first, no retries: an unreachable Hub is known in about a second (the cached
        # copy is then used, as huggingface_hub would after its retries), and a missing or gated
        # repo is its one-line error at once.
        try:
            _probe(repo, "config.json", rev, tok)
        except Exception as exc:
            if not _is_fetch_error(exc):
                raise
            if not _unreachable(exc):
                raise _hub_error(repo, rev, exc, local, "config.json", field) from None
            if not cached_before:
                from huggingface_hub import errors as E

                reason = type(exc).__name__  # ConnectError, ConnectTimeout, ProxyError ...
                raise _hub_error(repo, rev, E.LocalEntryNotFoundError(reason), local, "config.json", field,
                                 reason) from None
            local = True
    try:
        config_path = Path(_download(repo, "config.json", rev, tok, local))
    except Exception as exc:
        if not _is_fetch_error(exc):
            raise
        raise _hub_error(repo, rev, exc, local, "config.json", field) from None
    _inside_repo(repo, config_path, field, "config.json")
    # snapshots/<commit>/config.json: the folder's name is the commit read.
    commit = config_path.parent.name
    index_path: Path | None = None
    try:
        index_path = Path(_download(repo, _INDEX_FILE, rev, tok, local or cached_before))
    except Exception as exc:
        if not _is_fetch_error(exc):
            raise
        index_path = None  # a single-file checkpoint (or not cached offline): the index is optional
    if index_path is not None:
        _inside_repo(repo, index_path, field, _INDEX_FILE)
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
# A name segment that opens with "mtp." or "mtp_": Qwen3-Next's "mtp.fc", ERNIE-4.5's
# "model.mtp_block.0.", "model.mtp_emb_norm.0.", "model.mtp_hidden_norm.0.", "model.mtp_linear_proj.0.".
_MTP_SEGMENT = re.compile(r"(?:^|\.)mtp[._]")


def _skipped_by_vllm(name: str, num_layers: int | None) -> bool:
    """Tensors a checkpoint holds that vLLM's model does not load:
    - ``mtp.*`` (Qwen3-Next: vllm/model_executor/models/qwen3_next.py maps the "mtp." prefix
      to None in hf_to_vllm_mapper: "MTP weights are loaded by the draft model");
    - ERNIE-4.5's ``mtp_*`` modules (ernie45_moe.py Ernie4_5_MoeModel.load_weights: ``if "mtp" in
      name: continue``, "MTP will be supported soon"; only the drafter, ernie_mtp.py, loads
      mtp_emb_norm / mtp_hidden_norm / mtp_linear_proj / mtp_block);
    - decoder layers at index >= num_hidden_layers: the next-token-prediction layers of
      DeepSeek-V3 / GLM-4.5 (deepseek_v2.py / glm4_moe.py load_weights skip the names
      get_spec_layer_idx_from_weight_name matches, model.layers.{num_hidden_layers + i}.);
    - ``rotary_emb.inv_freq`` buffers of old checkpoints (llama.py load_weights skips them).
    """
    if _MTP_SEGMENT.search(name) or "rotary_emb.inv_freq" in name:
        return True
    if num_layers is not None:
        m = _LAYER.search(name)
        if m and int(m.group(1)) >= num_layers and not name.startswith(("vision", "visual")):
            return True
    return False


@dataclass(frozen=True)
class SafetensorsTensor:
    """One tensor of a safetensors header, checked as the safetensors library checks it."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int                 #: data_offsets[0], relative to the data section
    end: int                   #: data_offsets[1]

    @property
    def num_elements(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n


@dataclass(frozen=True)
class SafetensorsFile:
    """One file's header: its tensors, and the size of its data section when known (a local
    file's size, or the Hub's Content-Range) so offsets are checked against it."""

    name: str
    tensors: dict[str, SafetensorsTensor]
    data_bytes: int | None = None


def _header_fail(file: str, text: str, tensor: str | None = None) -> NoReturn:
    where = V.show(file) + (f", tensor {V.show(tensor)}" if tensor is not None else "")
    V.fail("checkpoint", f"{where}: {text}")


def _exact_int(value: Any) -> bool:
    return type(value) is int  # not bool, not float (2.5 would be truncated by int())


def _tensor(file: str, name: str, entry: Any) -> SafetensorsTensor:
    """One header entry, checked field by field: the dtype table, non-negative integer dims,
    and data offsets that equal dtype x shape (sub-byte dtypes filling whole bytes)."""
    if not isinstance(entry, dict):
        _header_fail(file, f"is {type(entry).__name__}, not an object with dtype, shape and data_offsets", name)
    for key in ("dtype", "shape", "data_offsets"):
        if key not in entry:
            _header_fail(file, f"has no {key}", name)
    dtype = entry["dtype"]
    if not isinstance(dtype, str) or dtype not in _DTYPE_BITS:
        _header_fail(file, f"dtype {V.show(dtype)} is not a safetensors dtype ({', '.join(_DTYPE_BITS)})", name)
    shape = entry["shape"]
    if not isinstance(shape, list) or len(shape) > _MAX_TENSOR_RANK:
        _header_fail(file, f"shape {V.show(shape)} is not a list of at most {_MAX_TENSOR_RANK} dims", name)
    for dim in shape:
        if not _exact_int(dim) or not 0 <= dim <= _MAX_U64:
            _header_fail(file, f"shape {V.show(shape)} holds {V.show(dim)}, not a non-negative integer", name)
    offsets = entry["data_offsets"]
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_exact_int(x) for x in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= _MAX_U64):
        _header_fail(file, f"data_offsets {V.show(offsets)} are not [begin, end] with 0 <= begin <= end", name)
    t = SafetensorsTensor(name, dtype, tuple(shape), offsets[0], offsets[1])
    bits = t.num_elements * _DTYPE_BITS[dtype]
    if bits % 8:
        # safetensors' MisalignedSlice: a sub-byte tensor must fill whole bytes.
        _header_fail(file, f"{dtype} x {list(shape)} is {bits} bits, not a whole number of bytes", name)
    if bits // 8 != t.end - t.begin:
        _header_fail(file, f"spans {t.end - t.begin} bytes, but {dtype} x {list(shape)} is {bits // 8}", name)
    return t


def parse_safetensors_header(header: bytes, file: str, data_bytes: int | None = None) -> SafetensorsFile:
    """A safetensors header (the JSON after the 8-byte length) checked as the safetensors
    library checks it before vLLM can load the file: bounded JSON text, strict UTF-8, an object
    whose names appear once, ``__metadata__`` a string-to-string map, every tensor valid
    (:func:`_tensor`), and the tensors tiling the data section: sorted by offset, each starts
    where the previous ends (no gap, no overlap), and the last ends at ``data_bytes`` (when
    known). Every refusal is a ValueError naming the file and the tensor."""
    doc = load_json(header, "checkpoint", where=V.show(file) + " header", unique_keys=True)
    if not isinstance(doc, dict):
        _header_fail(file, f"the header is JSON {type(doc).__name__}, not an object of tensors")
    meta = doc.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        _header_fail(file, "__metadata__ is not an object of strings")
    if len(doc) > L.MAX_CHECKPOINT_TENSORS:
        _header_fail(file, f"lists more than {L.MAX_CHECKPOINT_TENSORS} tensors")
    tensors = {name: _tensor(file, name, entry) for name, entry in doc.items()}
    end = 0
    previous: str | None = None
    for t in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if t.begin < end:
            _header_fail(file, f"data_offsets [{t.begin}, {t.end}] overlap tensor {V.show(previous)}", t.name)
        if t.begin > end:
            _header_fail(file, f"data_offsets [{t.begin}, {t.end}] leave bytes {end}..{t.begin} unclaimed (the "
                               "safetensors format has no gaps)", t.name)
        end, previous = t.end, t.name
    if data_bytes is not None and end != data_bytes:
        if end > data_bytes:
            _header_fail(file, f"data_offsets end at byte {end}, beyond the file's {data_bytes} data bytes",
                         previous)
        _header_fail(file, f"the tensors end at byte {end} of the file's {data_bytes} data bytes")
    return SafetensorsFile(file, tensors, data_bytes)


def sum_safetensors_metadata(metadata: Any, source: str, num_layers: int | None = None) -> CheckpointWeights:
    """Sums a checkpoint's tensors: a list of :class:`SafetensorsFile` (or a ``huggingface_hub``
    ``SafetensorsRepoMetadata`` / ``SafetensorsFileMetadata``, whose entries are checked the same
    way), bytes as stored per tensor from its data offsets. A tensor name in two files is
    refused: vLLM loads one tensor per name."""
    files = _as_files(metadata)
    by_dtype: dict[str, dict[str, int]] = {}
    total = params = count = skipped_bytes = skipped = 0
    seen: dict[str, str] = {}
    for file in files:
        if len(seen) + len(file.tensors) > L.MAX_CHECKPOINT_TENSORS:
            V.fail("checkpoint", f"{source} lists more than {L.MAX_CHECKPOINT_TENSORS} tensors")
        for name, t in file.tensors.items():
            if name in seen:
                _header_fail(file.name, f"is also in {V.show(seen[name])}: vLLM loads one tensor per name", name)
            seen[name] = file.name
            stored = t.end - t.begin
            n = t.num_elements
            if _skipped_by_vllm(name, num_layers):
                skipped += 1
                skipped_bytes += stored
                continue
            row = by_dtype.setdefault(t.dtype, {"tensors": 0, "parameters": 0, "bytes": 0})
            row["tensors"] += 1
            row["parameters"] += n
            row["bytes"] += stored
            total += stored
            params += n
            count += 1
    if count == 0:
        V.fail("checkpoint", f"{source} holds no tensor vLLM loads")
    if total > L.MAX_DEVICE_BYTES or params > L.MAX_DEVICE_BYTES:
        V.fail("checkpoint", f"{source} holds {total} bytes ({params} parameters); at most {L.MAX_DEVICE_BYTES} "
                             "(1 PiB) are planned")
    return CheckpointWeights(source, total, params, count, dict(sorted(by_dtype.items())), skipped_bytes, skipped)


def _as_files(metadata: Any) -> list[SafetensorsFile]:
    if isinstance(metadata, SafetensorsFile):
        return [metadata]
    if isinstance(metadata, (list, tuple)) and all(isinstance(f, SafetensorsFile) for f in metadata):
        return list(metadata)
    # huggingface_hub's parsed metadata: each entry re-checked as a header entry would be.
    files = getattr(metadata, "files_metadata", None)
    named = files.items() if isinstance(files, dict) else [("model.safetensors", metadata)]
    out = []
    for file_name, file_meta in named:
        tensors = getattr(file_meta, "tensors", None)
        if not isinstance(tensors, dict):
            _header_fail(str(file_name), "has no tensors table")
        entries = {name: {"dtype": getattr(info, "dtype", None), "shape": getattr(info, "shape", None),
                          "data_offsets": list(getattr(info, "data_offsets", ()) or ())}
                   for name, info in tensors.items()}
        out.append(SafetensorsFile(str(file_name), {n: _tensor(str(file_name), n, e) for n, e in entries.items()}))
    return out


def _shard_names(index_text_or_path: Path, where: str) -> list[str]:
    # ``where`` names the index in messages: its file name (the folder is the caller's), or
    # org/name/file for a Hub repo.
    """The shard files a ``model.safetensors.index.json`` names, as vLLM would load them: the
    ``weight_map`` values are file names in the checkpoint's own folder (vLLM keeps the
    folder's ``*.safetensors`` files the index names): no path separators, no ``..``, no absolute
    paths, each ending in ``.safetensors``."""
    problem = V.file_problem(index_text_or_path)
    if problem is not None:
        V.fail("checkpoint", f"{where}: cannot be read: {problem}")
    try:
        with open(index_text_or_path, "rb") as f:
            data = f.read(L.JSON_MAX_BYTES + 1)  # the size is checked by the reader, bounded here
    except OSError as exc:
        V.fail("checkpoint", f"{where}: cannot be read: {exc.strerror or type(exc).__name__}")
    doc = load_json(data.removeprefix(b"\xef\xbb\xbf"), "checkpoint", where=where, unique_keys=True)
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict):
        V.fail("checkpoint", f"{where} has no weight_map object")
    if len(weight_map) > L.MAX_CHECKPOINT_TENSORS:
        V.fail("checkpoint", f"{where} lists more than {L.MAX_CHECKPOINT_TENSORS} tensors")
    shards: set[str] = set()
    for tensor, shard in weight_map.items():
        if (not isinstance(shard, str) or not shard.endswith(".safetensors") or "/" in shard or "\\" in shard
                or shard.startswith(".") or "\x00" in shard or len(shard.encode()) > L.MAX_PATH_COMPONENT_BYTES):
            V.fail("checkpoint", f"{where}: weight_map[{V.show(tensor)}] is {V.show(shard)}, not a .safetensors "
                                 "file in the checkpoint's own folder")
        shards.add(shard)
    if not shards:
        V.fail("checkpoint", f"{where} has an empty weight_map")
    return sorted(shards)


def checkpoint_weights(repo_id: str, revision: str | None = None, token: str | bool | None = None, *,
                       num_layers: int | None = None) -> CheckpointWeights:
    """Weight bytes of a Hub checkpoint from its safetensors headers (HTTP range requests of
    each shard's header, as huggingface_hub's ``get_safetensors_metadata`` makes them; no weights
    downloaded), each header checked by :func:`parse_safetensors_header` against the file size
    the Hub reports. Needs the network: offline it is a ValueError saying so."""
    repo, rev, tok, local = _check_args(repo_id, revision, token, None)
    if local:
        V.fail("weights_source", f"'headers' reads {repo}'s safetensors headers from the Hub, and HF_HUB_OFFLINE "
                                 "is set: unset it, or use weights_source='config'")
    from huggingface_hub import errors as E

    source = f"{repo}@{rev}" if rev else repo
    try:
        # One HEAD first, no retries (as fetch_config): an unreachable Hub is this one-line error
        # in about a second, not huggingface_hub's retries of the index download.
        _probe(repo, "config.json", rev, tok)
    except Exception as exc:
        if not _is_fetch_error(exc):
            raise
        if _unreachable(exc):
            V.fail("weights_source", f"'headers' reads {repo}'s safetensors headers from the Hub, which could not be "
                                     f"reached ({type(exc).__name__}): retry with network access, or use "
                                     "weights_source='config'")
        raise _hub_error(repo, rev, exc, local, "the safetensors headers") from None
    try:
        try:
            index = Path(_download(repo, _INDEX_FILE, rev, tok, False))
        except E.EntryNotFoundError:
            shards = ["model.safetensors"]
        else:
            shards = _shard_names(index, f"{source}/{_INDEX_FILE}")
        files = [_remote_header(repo, shard, rev, tok) for shard in shards]
    except Exception as exc:
        if not _is_fetch_error(exc) or isinstance(exc, ValueError) and not isinstance(exc, E.HFValidationError):
            raise
        if isinstance(exc, E.EntryNotFoundError):
            V.fail("weights_source", f"{repo} has no safetensors checkpoint: use weights_source='config'")
        raise _hub_error(repo, rev, exc, local, "the safetensors headers") from None
    return sum_safetensors_metadata(files, source, num_layers)


#: The first request of a remote header: most headers fit (huggingface_hub reads 100 kB too).
_FIRST_READ_BYTES = 100_001
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+)")


def _remote_header(repo: str, shard: str, revision: str | None, token: Any) -> SafetensorsFile:
    """One shard's header over HTTP range requests, its length bounded before the header is
    requested and the file's size taken from Content-Range."""
    from huggingface_hub import get_session, hf_hub_url
    from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

    url = hf_hub_url(repo, shard, revision=revision)
    headers = build_hf_headers(token=token)
    timeout = _timeout(_env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10))
    where = f"{repo}/{shard}"

    def get(first: int, last: int) -> tuple[bytes, int]:
        with _QuietHub():
            response = get_session().get(url, headers={**headers, "range": f"bytes={first}-{last}"}, timeout=timeout)
        if response.status_code >= 400:
            hf_raise_for_status(response)
        m = _CONTENT_RANGE.fullmatch(str(response.headers.get("content-range", "")).strip())
        if response.status_code != 206 or m is None or int(m.group(1)) != first:
            V.fail("checkpoint", f"{where}: the Hub did not answer a range request (status {response.status_code})")
        body = bytes(response.content[: last - first + 1])
        return body, int(m.group(3))

    body, file_bytes = get(0, _FIRST_READ_BYTES - 1)
    length = _header_length(body, where, file_bytes)
    header = body[8: 8 + length]
    if len(header) < length:
        header += get(8 + len(header), 8 + length - 1)[0]
    if len(header) != length:
        _header_fail(where, f"the Hub returned {len(header)} of the header's {length} bytes")
    return parse_safetensors_header(header, where, file_bytes - 8 - length)


def _header_length(prefix: bytes, where: str, file_bytes: int) -> int:
    """The 8-byte little-endian header length, bounded before the header is read: at most
    JSON_MAX_BYTES (the one cap on JSON text) and within the file."""
    if len(prefix) < 8 or file_bytes < 8:
        _header_fail(where, f"is {file_bytes} bytes, too short for a safetensors file (an 8-byte header length "
                            "comes first)")
    length = int.from_bytes(prefix[:8], "little")
    if length > L.JSON_MAX_BYTES:
        _header_fail(where, f"declares a header of {length} bytes; at most {L.JSON_MAX_BYTES} are read")
    if length > file_bytes - 8:
        _header_fail(where, f"declares a header of {length} bytes, but the file holds {file_bytes - 8} after "
                            "its length")
    return length


def local_checkpoint_weights(folder: str | os.PathLike[str], num_layers: int | None = None) -> CheckpointWeights:
    """The same sum for a checkpoint on disk: a folder holding ``model.safetensors`` or
    ``model.safetensors.index.json`` and its shards (only each file's header is read; every
    file must be a regular file in the folder itself)."""
    path = V.path_of(folder, "checkpoint")
    index = path / _INDEX_FILE
    if os.path.lexists(index):
        shards = _shard_names(index, _INDEX_FILE)
    elif os.path.lexists(path / "model.safetensors"):
        shards = ["model.safetensors"]
    else:
        V.fail("checkpoint", f"{V.show(str(path))} holds neither model.safetensors nor {_INDEX_FILE}")
    return sum_safetensors_metadata([_local_header(path / shard) for shard in shards], str(path), num_layers)


def _local_header(file: Path) -> SafetensorsFile:
    """One file's header: a regular file (a FIFO or a device would block or never end), its
    length bounded before the header is read, the header checked against the file's size."""
    where = file.name  # messages name the shard; its folder is the checkpoint the caller gave
    problem = V.file_problem(file)
    if problem is not None:
        _header_fail(where, f"cannot be read: {problem}")
    try:
        with open(file, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            length = _header_length(f.read(8), where, size)
            header = f.read(length)
    except OSError as exc:
        _header_fail(where, f"cannot be read: {exc.strerror or type(exc).__name__}")
    if len(header) != length:
        _header_fail(where, f"holds {len(header)} of its header's {length} bytes")
    return parse_safetensors_header(header, where, size - 8 - length)
