"""Exact KV-cache sizing, as vLLM computes it (blocks, tokens, concurrency).

Every rule lives in the C++ core (``csrc/core/kv_cache/``); this module converts arguments and
results. The rules follow vLLM v0.19 (see ``docs/kv_cache.md``).

Examples
--------
>>> import vllm_mem
>>> cap = vllm_mem.kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", 58 * 2**30)
>>> cap.num_blocks, cap.num_tokens
(29696, 475136)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Union

from . import _C
from . import _limits as L
from . import _validate as V
from .model_spec import ConfigSource, ModelSpec

if TYPE_CHECKING:
    from typing import Unpack

    from ._settings import KvCacheSettingsArgs

__all__ = [
    "KvCacheGroup",
    "KvCacheCapacity",
    "kv_cache_capacity",
    "estimate_max_model_len",
    "auto_fit_max_model_len",
    "check_enough_kv_cache_memory",
    "kv_cache_memory_shortfall",
    "allowed_kv_cache_dtypes",
]

#: The KV functions' request object: its keywords and properties are the settings table's rows.
KvCacheSettings = _C.KvCacheSettings
AvailableBytes = Union[int, Sequence[int]]
SpecSource = Union[ModelSpec, ConfigSource]


@dataclass(frozen=True)
class KvCacheGroup:
    """One KV-cache group: layers that share a block table (vLLM's ``KVCacheGroupSpec``).

    Attributes
    ----------
    kind : str
        ``"full_attention"``, ``"sliding_window"``, ``"mla"``, ``"chunked_local"`` or ``"mamba"``.
    layer_indices : tuple of int
        Global decoder-layer indices in the group.
    block_size : int
        Tokens per block of this group, after page-size unification.
    page_size_bytes : int
        Bytes of one block of one layer.
    sliding_window_tokens : int
        The window for sliding-window groups, else 0.
    max_memory_per_request_bytes : int
        Bytes one ``max_model_len`` request needs in one layer of the group.
    blocks_per_request : int
        Block ids one ``max_model_len`` request takes in this group.
    uniform_type : bool
        Layers of one type with different shapes (vLLM's ``UniformTypeKVCacheSpecs``).
    """

    kind: str
    layer_indices: tuple[int, ...]
    block_size: int
    page_size_bytes: int
    sliding_window_tokens: int
    max_memory_per_request_bytes: int
    blocks_per_request: int
    uniform_type: bool

    @classmethod
    def _from_native(cls, g: Any) -> KvCacheGroup:
        return cls(
            kind=g.kind,
            layer_indices=tuple(g.layer_indices),
            block_size=g.block_size,
            page_size_bytes=g.page_size_bytes,
            sliding_window_tokens=g.sliding_window_tokens,
            max_memory_per_request_bytes=g.max_memory_per_request_bytes,
            blocks_per_request=g.blocks_per_request,
            uniform_type=g.uniform_type,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form (lists for tuples), for JSON."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["layer_indices"] = list(self.layer_indices)
        return out


@dataclass(frozen=True)
class KvCacheCapacity:
    """How much KV cache fits, in vLLM's own figures.

    Attributes
    ----------
    num_blocks : int
        vLLM's ``num_gpu_blocks``: the minimum over workers.
    num_tokens : int
        vLLM's "GPU KV cache size: N tokens" (``int(max_concurrency * max_model_len)``).
    max_concurrency : float
        vLLM's "Maximum concurrency for L tokens per request".
    block_size : int
        Smallest block size over groups (vLLM's ``cache_config.block_size``).
    bytes_per_block : int
        Bytes one block id costs on the tightest worker, all its layers.
    bytes_per_request : int
        KV bytes one ``max_model_len`` request needs on the tightest worker.
    kv_cache_bytes : int
        Bytes allocated for KV per worker (``num_blocks * bytes_per_block``).
    available_bytes : int
        The budget of the tightest worker.
    max_model_len : int
    num_blocks_per_worker : tuple of int
        Each worker's block count before the min-reduction.
    groups : tuple of KvCacheGroup
    kv_cache_dtype : str
        The KV storage dtype, ``"auto"`` resolved.
    num_padding_layers : int
        vLLM's "Add N padding layers" for hybrid models.
    log_lines : tuple of str
        The two lines vLLM logs, worded as vLLM words them.
    mamba_state_bytes : int
        Hybrid models: one recurrent layer's state (conv + SSM) on one rank, unpadded; 0 otherwise.
    mamba_page_size_padded_bytes : int
        The state padded to the attention page (0: equal, or not a hybrid).
    mamba_padding_percent : float
        vLLM's "Padding mamba page size by P%".
    attention_block_size : int
        The attention block size vLLM sets for a hybrid (0 otherwise).
    hybrid_log_lines : tuple of str
        vLLM's "Setting attention block size to N tokens ..." and "Padding mamba page size by
        P% ..." lines, worded as vLLM words them (empty for non-hybrids).
    """

    # The core's result in a slot (no instance dict to build per call); the fields converted
    # from it on first read live in the instance dict, made then.
    __slots__ = ("_native", "__dict__")

    num_blocks: int
    num_tokens: int
    max_concurrency: float
    block_size: int
    bytes_per_block: int
    bytes_per_request: int
    kv_cache_bytes: int
    available_bytes: int
    max_model_len: int
    num_blocks_per_worker: tuple[int, ...]
    groups: tuple[KvCacheGroup, ...]
    kv_cache_dtype: str
    num_padding_layers: int
    log_lines: tuple[str, ...]
    mamba_state_bytes: int = 0
    mamba_page_size_padded_bytes: int = 0
    mamba_padding_percent: float = 0.0
    attention_block_size: int = 0
    hybrid_log_lines: tuple[str, ...] = ()

    @classmethod
    def _from_native(cls, c: Any) -> KvCacheCapacity:
        """The frozen dataclass around the core's result, each field converted on first read:
        a sizing call in a loop pays for the fields it reads, not for fourteen conversions,
        the groups' tuples and two formatted log lines (docs/performance.md)."""
        self = object.__new__(cls)
        _set_native(self, c)  # the slot's own setter: frozen, so no __setattr__
        return self

    def __getattr__(self, name: str) -> Any:
        # Only reached for a field not converted yet (or an unknown name).
        convert = _CAPACITY_FIELDS.get(name)  # None for "_native" itself, unset on a dataclass-built one
        native = _get_native(self, None) if convert is not None else None
        if convert is None or native is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = convert(native)
        object.__setattr__(self, name, value)
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled and copied as its fields (the native result is not picklable).
        return (type(self), tuple(getattr(self, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form (lists for tuples, groups as dicts), for JSON."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["num_blocks_per_worker"] = list(self.num_blocks_per_worker)
        out["groups"] = [g.to_dict() for g in self.groups]
        out["log_lines"] = list(self.log_lines)
        out["hybrid_log_lines"] = list(self.hybrid_log_lines)
        return out

    def __repr__(self) -> str:
        kinds = ", ".join(f"{g.kind} x{len(g.layer_indices)}" for g in self.groups) or "attention-free"
        return (
            f"KvCacheCapacity({self.num_blocks:,} blocks of {self.block_size} tokens, "
            f"{self.num_tokens:,} tokens, {self.max_concurrency:.2f}x concurrency at "
            f"{self.max_model_len:,} tokens, {self.bytes_per_block:,} B/block, "
            f"kv {self.kv_cache_dtype}, groups: {kinds})"
        )

    def _repr_html_(self) -> str:
        from .display import kv_capacity_html  # imported on first display only

        return kv_capacity_html(self)


# A field's default lives in the generated __init__ too; as a class attribute it would shadow
# the lazily converted value (__getattr__ only runs for names not found), so it is removed.
for _field in fields(KvCacheCapacity):
    if _field.name in KvCacheCapacity.__dict__:
        delattr(KvCacheCapacity, _field.name)
del _field

_set_native = KvCacheCapacity._native.__set__  # type: ignore[attr-defined]
_native_slot = KvCacheCapacity._native  # type: ignore[attr-defined]


def _get_native(capacity: KvCacheCapacity, default: Any) -> Any:
    """The core's result in ``capacity``'s slot; ``default`` when it was built field by field."""
    try:
        return _native_slot.__get__(capacity, KvCacheCapacity)
    except AttributeError:
        return default


#: How each field is read from the core's result, on first access.
_CAPACITY_FIELDS: dict[str, Any] = {
    "num_blocks": lambda c: c.num_blocks,
    "num_tokens": lambda c: c.num_tokens,
    "max_concurrency": lambda c: c.max_concurrency,
    "block_size": lambda c: c.block_size,
    "bytes_per_block": lambda c: c.bytes_per_block,
    "bytes_per_request": lambda c: c.bytes_per_request,
    "kv_cache_bytes": lambda c: c.kv_cache_bytes,
    "available_bytes": lambda c: c.available_bytes,
    "max_model_len": lambda c: c.max_model_len,
    "num_blocks_per_worker": lambda c: tuple(c.num_blocks_per_worker),
    "groups": lambda c: tuple(KvCacheGroup._from_native(g) for g in c.groups),
    "kv_cache_dtype": lambda c: c.kv_cache_dtype,
    "num_padding_layers": lambda c: c.num_padding_layers,
    "log_lines": lambda c: tuple(_C.kv_cache_log_lines(c)),
    "mamba_state_bytes": lambda c: c.mamba_state_bytes,
    "mamba_page_size_padded_bytes": lambda c: c.mamba_page_size_padded_bytes,
    "mamba_padding_percent": lambda c: c.mamba_padding_percent,
    "attention_block_size": lambda c: c.attention_block_size,
    "hybrid_log_lines": lambda c: tuple(c.hybrid_log_lines),
}


def allowed_kv_cache_dtypes() -> list[str]:
    """The ``--kv-cache-dtype`` values understood here."""
    return [name.strip() for name in _C.allowed_kv_cache_dtypes().split(",")]


def _sizing(spec: SpecSource) -> Any:
    """The model's cached KV layouts (``ModelSpec._sizing``): built once per ModelSpec."""
    return (spec if spec.__class__ is ModelSpec else ModelSpec.from_hf_config(spec))._sizing


class _DefaultLength(int):
    """The KV functions' default ``max_model_len`` (8192): an int that says it was not passed, so
    a request object given with ``settings=`` keeps its own length."""


#: vLLM's most common served length, the KV functions' default.
DEFAULT_MAX_MODEL_LEN: int = _DefaultLength(8192)


def kv_settings(max_model_len: Any = DEFAULT_MAX_MODEL_LEN, settings: Any = None, **given: Any) -> Any:
    """The request object of the KV functions (``_C.KvCacheSettings``), built once: from the
    keywords (each checked by its row of the core's settings table), or ``settings`` with those
    keywords (and a ``max_model_len`` passed) replaced. An unset ``vllm_version`` becomes the
    installed vLLM's (else the newest profile), as plan() picks it."""
    return _kv_request(max_model_len, settings, given)


def _kv_request(max_model_len: Any, settings: Any, given: dict[str, Any]) -> Any:
    """:func:`kv_settings` with the keywords as the caller's dict (the KV functions pass theirs
    on without repacking). Keywords alone are remembered with the request they give, installed
    release included (read once per process, :func:`_installed_version`), so a sizing call in a
    loop pays one dict look-up for its arguments (docs/performance.md)."""
    key = None
    if settings is None:
        try:
            values = given.values()
            key = (max_model_len.__class__, max_model_len, *given, *values, *map(type, values))
            known = _KV_REQUESTS.get(key)
        except TypeError:  # an unhashable value: built each time
            key = known = None
        if known is not None:
            return known
    request = _new_kv_request(max_model_len, settings, given)
    if key is not None and len(_KV_REQUESTS) < _REQUESTS_KEPT:
        _KV_REQUESTS[key] = request
    return request


def _new_kv_request(max_model_len: Any, settings: Any, given: dict[str, Any]) -> Any:
    if given.get("vllm_version") == "":
        from .planner.versions import refuse_empty_version  # the planner imports this module

        refuse_empty_version(given)
    if max_model_len is None:  # the plan resolves an unset length from the model; a KV question needs one
        raise V.bad_type("max_model_len", f"an integer in [1, {L.MAX_MODEL_LEN_TOKENS}]", None)
    if settings is None:
        settings = _cached_request(_C.KvCacheSettings, given, max_model_len=max_model_len)
    elif given or max_model_len is not DEFAULT_MAX_MODEL_LEN:
        if max_model_len is not DEFAULT_MAX_MODEL_LEN:
            given["max_model_len"] = max_model_len
        settings = settings.replace(**given)
    if not settings.vllm_version:
        installed = _installed_version()
        if installed:
            settings = settings.replace(vllm_version=installed)
    return settings


def _cached_request(cls: Any, given: dict[str, Any], **more: Any) -> Any:
    """``cls(**given, **more)``, remembered by the keywords when they are hashable: a sizing
    call in a loop then skips parsing them (each request object is built once, checked by the
    table, and never changed in place: callers replace() into a copy). Bounded: keywords are
    user input."""
    given.update(more)
    try:
        # Typed: 8192.0 == 8192 and True == 1, but the table refuses the float and the bool.
        # Flat (the names, the values, their types: n of each), so no tuple per keyword is built.
        values = given.values()
        key = (cls, *given, *values, *map(type, values))
        cached = _REQUESTS.get(key)
    except TypeError:  # an unhashable value (a list of capture sizes): built each time
        return cls(**given)
    if cached is None:
        cached = cls(**given)
        if len(_REQUESTS) < _REQUESTS_KEPT:
            _REQUESTS[key] = cached
    return cached


_REQUESTS: dict[Any, Any] = {}
_KV_REQUESTS: dict[Any, Any] = {}  # the KV functions' keywords -> their final request object
_REQUESTS_KEPT = 256


def _installed_version() -> str:
    """The installed vLLM's version when a profile covers it, else "" (the newest profile).
    Read once per process (a process does not change its vllm): a function-level import on
    every sizing call costs microseconds."""
    global _INSTALLED
    if _INSTALLED is None:
        from .planner.versions import choose_vllm_version  # the planner imports this module

        _INSTALLED = choose_vllm_version(None)[0]
    return _INSTALLED


_INSTALLED: str | None = None


_SETTINGS_DOC = """
    Parameters
    ----------
    spec : ModelSpec, path, folder, dict or bundled model name
        The model.
    available_bytes : int or list of int
        KV-cache bytes per worker (vLLM's "Available KV cache memory"): one value for every
        worker, one per pipeline rank, or one per worker (``tp * pp``, pipeline-rank major).
    max_model_len : int
        vLLM's ``--max-model-len`` (default 8192; with ``settings``, the request's own unless given).
    settings : KvCacheSettings, optional
        A request object built once (``vllm_mem.kv_cache.KvCacheSettings(...)``) and reused in a loop;
        keywords given beside it replace its fields.
    **settings
        The KV-cache settings of the core's table (docs/settings.md; the request object
        ``vllm_mem.kv_cache.KvCacheSettings``): ``block_size``, ``kv_cache_dtype``, ``dtype``,
        ``tensor_parallel_size``, ``pipeline_parallel_size``, ``decode_context_parallel_size``,
        ``max_num_batched_tokens``, ``enable_prefix_caching``, ``mamba_cache_mode``,
        ``mamba_cache_dtype``, ``mamba_ssm_cache_dtype``, ``num_gpu_blocks_override``,
        ``disable_hybrid_kv_cache_manager``, ``max_concurrent_batches``,
        ``cap_sliding_window_at_full`` and ``vllm_version`` (the release whose KV rules apply:
        the printed token count, the hybrid block alignment, the sliding-window need and the
        hybrid KV-cache manager; default the installed vLLM, else the newest profile). An
        unknown keyword is a TypeError naming the closest known one.
"""


def kv_cache_capacity(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int | str = DEFAULT_MAX_MODEL_LEN,
    *,
    settings: KvCacheSettings | None = None,
    num_speculative_tokens: int = 0,
    **given: Unpack[KvCacheSettingsArgs],
) -> KvCacheCapacity:
    """KV-cache blocks, tokens and concurrency for the given per-worker bytes, as vLLM sizes them.

    Hybrid (Mamba / linear-attention) models also take the number of speculative tokens
    (extra state blocks). ``decode_context_parallel_size`` shards the KV cache along tokens, so
    the tokens are what vLLM prints with DCP. ``enable_prefix_caching`` changes nothing for
    attention-only models; on a hybrid model with ``mamba_cache_mode="none"`` it is refused
    (vLLM then picks ``all`` or ``align`` by a per-model flag not modelled here: pass the mode).

    Raises
    ------
    ValueError
        Bad input (naming the field and the allowed values), or vLLM's own message when no
        memory is available or one ``max_model_len`` request does not fit.
    NotImplementedError
        A hybrid layout vLLM cannot build.
    """
    tokens = num_speculative_tokens
    if (settings is None and spec.__class__ is ModelSpec and tokens.__class__ is int
            and 0 <= tokens <= _MAX_SPECULATIVE_TOKENS and max_model_len is not None
            and ("vllm_version" not in given or given["vllm_version"])):
        # The common call, keywords on a loaded model: the table converts them in C++ and the call
        # crosses once (the same conversion, checks and errors as the request object's).
        native = _from_keywords(spec._sizing, available_bytes, max_model_len, tokens,
                                _INSTALLED if _INSTALLED is not None else _installed_version(), given)
    else:
        request = _kv_request(max_model_len, settings, given)
        if tokens.__class__ is not int or not 0 <= tokens <= L.MAX_NUM_SPECULATIVE_TOKENS:
            tokens = V.integer(tokens, "num_speculative_tokens", low=0, high=L.MAX_NUM_SPECULATIVE_TOKENS)
        native = _C.kv_cache_capacity_for(_sizing(spec), available_bytes, request, tokens)
    # KvCacheCapacity._from_native without its call: a sizing call in a loop pays two stores.
    capacity = _new_object(KvCacheCapacity)
    _set_native(capacity, native)
    return capacity


_new_object = object.__new__
_from_keywords = _C.kv_cache_capacity_from_keywords
_MAX_SPECULATIVE_TOKENS = L.MAX_NUM_SPECULATIVE_TOKENS


def estimate_max_model_len(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int | str = DEFAULT_MAX_MODEL_LEN,
    *,
    settings: KvCacheSettings | None = None,
    **given: Unpack[KvCacheSettingsArgs],
) -> int:
    """vLLM's ``estimate_max_model_len``: the largest length in ``[1, max_model_len]`` whose one
    request fits on every worker; 0 when not even one token fits."""
    request = _kv_request(max_model_len, settings, given)
    return int(_C.estimate_max_model_len_for(_sizing(spec), available_bytes, request))


def auto_fit_max_model_len(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int | str = DEFAULT_MAX_MODEL_LEN,
    *,
    settings: KvCacheSettings | None = None,
    **given: Unpack[KvCacheSettingsArgs],
) -> int:
    """vLLM's auto-fit (``--max-model-len -1``): like :func:`estimate_max_model_len` but counting
    the tensor slots that grouped hybrid layers share (padding layers included)."""
    request = _kv_request(max_model_len, settings, given)
    return int(_C.auto_fit_max_model_len_for(_sizing(spec), available_bytes, request))


def check_enough_kv_cache_memory(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int | str = DEFAULT_MAX_MODEL_LEN,
    *,
    settings: KvCacheSettings | None = None,
    **given: Unpack[KvCacheSettingsArgs],
) -> None:
    """vLLM's ``check_enough_kv_cache_memory``: returns when one ``max_model_len`` request fits on
    every worker, else raises ``ValueError`` with vLLM's exact message."""
    message = kv_cache_memory_shortfall(spec, available_bytes, max_model_len, settings=settings, **given)
    if message is not None:
        raise ValueError(message)


def kv_cache_memory_shortfall(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int | str = DEFAULT_MAX_MODEL_LEN,
    *,
    settings: KvCacheSettings | None = None,
    **given: Unpack[KvCacheSettingsArgs],
) -> str | None:
    """The message :func:`check_enough_kv_cache_memory` would raise, or ``None`` when it fits.

    Bad input still raises ``ValueError``, so callers can tell "does not fit" from "wrong input".
    """
    request = _kv_request(max_model_len, settings, given)
    return _C.kv_cache_memory_shortfall_for(_sizing(spec), available_bytes, request) or None


for _fn in (kv_cache_capacity, estimate_max_model_len, auto_fit_max_model_len, check_enough_kv_cache_memory,
            kv_cache_memory_shortfall):
    _fn.__doc__ = (_fn.__doc__ or "") + _SETTINGS_DOC
del _fn
