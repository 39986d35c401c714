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
from typing import Any, Union

from . import _C
from . import _limits as L
from . import _validate as V
from .errors import InvalidArgumentError
from .model_spec import ConfigSource, ModelSpec

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
        object.__setattr__(self, "_native", c)
        return self

    def __getattr__(self, name: str) -> Any:
        # Only reached for a field not converted yet (or an unknown name).
        convert = _CAPACITY_FIELDS.get(name)
        native = self.__dict__.get("_native")
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


def _native_spec(spec: SpecSource) -> Any:
    if isinstance(spec, ModelSpec):
        return spec._spec
    return ModelSpec.from_hf_config(spec)._spec


def _available_list(available_bytes: AvailableBytes) -> list[int]:
    if isinstance(available_bytes, (list, tuple)):
        if not available_bytes:
            raise V.bad_value("available_bytes", "an int or a non-empty list of ints (one per pipeline rank or "
                                                 "per worker)", available_bytes)
        values = V.items(available_bytes, "available_bytes", max_items=L.MAX_WORLD_SIZE)
        return [V.size_bytes(v, f"available_bytes[{i}]") for i, v in enumerate(values)]
    return [V.size_bytes(available_bytes, "available_bytes")]


def _options(
    max_model_len: int,
    block_size: int | None,
    kv_cache_dtype: str,
    tensor_parallel_size: int,
    pipeline_parallel_size: int,
    max_num_batched_tokens: int | None,
    dtype: str,
    disable_hybrid_kv_cache_manager: bool,
    num_gpu_blocks_override: int | None,
    max_concurrent_batches: int,
    cap_sliding_window_at_full: bool,
) -> Any:
    o = _C.KvCacheOptions()
    o.max_model_len = V.setting("max_model_len", max_model_len)
    o.block_size = V.optional_setting("block_size", block_size) or 0
    o.kv_cache_dtype = V.kv_cache_dtype(kv_cache_dtype)
    o.model_dtype = V.dtype(dtype)
    o.tensor_parallel_size = V.setting("tensor_parallel_size", tensor_parallel_size)
    o.pipeline_parallel_size = V.setting("pipeline_parallel_size", pipeline_parallel_size)
    if max_num_batched_tokens is not None:
        o.max_num_batched_tokens = V.setting("max_num_batched_tokens", max_num_batched_tokens)
    o.max_concurrent_batches = V.setting("max_concurrent_batches", max_concurrent_batches)
    o.disable_hybrid_kv_cache_manager = V.flag(disable_hybrid_kv_cache_manager, "disable_hybrid_kv_cache_manager")
    if num_gpu_blocks_override is not None:
        o.num_gpu_blocks_override = V.setting("num_gpu_blocks_override", num_gpu_blocks_override)
    o.cap_sliding_window_at_full = V.flag(cap_sliding_window_at_full, "cap_sliding_window_at_full")
    return o


_COMMON_DOC = """
    Parameters
    ----------
    spec : ModelSpec, path, folder, dict or bundled model name
        The model.
    available_bytes : int or list of int
        KV-cache bytes per worker (vLLM's "Available KV cache memory"): one value for every
        worker, one per pipeline rank, or one per worker (``tp * pp``, pipeline-rank major).
    max_model_len : int
        vLLM's ``--max-model-len``.
    block_size : int, optional
        Tokens per block; ``None``: vLLM's default (16, or 64 for MLA models).
    kv_cache_dtype : str
        vLLM's ``--kv-cache-dtype`` (``auto`` follows the served model dtype).
    tensor_parallel_size, pipeline_parallel_size : int
    max_num_batched_tokens : int, optional
        Sizes the sliding-window reservation; ``None``: 8192.
    dtype : str
        vLLM's ``--dtype`` (``auto``: checkpoint dtype, float32 served as bfloat16).
    disable_hybrid_kv_cache_manager : bool
        vLLM's ``--disable-hybrid-kv-cache-manager``.
    num_gpu_blocks_override : int, optional
        vLLM's ``--num-gpu-blocks-override``.
    max_concurrent_batches : int
        Batches in flight (sliding-window reservations grow with it).
    cap_sliding_window_at_full : bool
        Cap a sliding-window group's need at full attention's. Off (vLLM's formula, +1 block):
        the printed concurrencies of v0.13, v0.19 and v0.23 start-ups need it off
        (tests/python/test_release_logs.py; the version rule sliding_window_capped_at_full).
"""


def kv_cache_capacity(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int = 8192,
    block_size: int | None = None,
    kv_cache_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    dtype: str = "auto",
    disable_hybrid_kv_cache_manager: bool = False,
    num_gpu_blocks_override: int | None = None,
    max_concurrent_batches: int = 1,
    cap_sliding_window_at_full: bool | None = None,
    *,
    mamba_cache_dtype: str = "auto",
    mamba_ssm_cache_dtype: str = "auto",
    mamba_cache_mode: str = "none",
    num_speculative_tokens: int = 0,
    vllm_version: str | None = None,
    enable_prefix_caching: bool | None = None,
    decode_context_parallel_size: int = 1,
) -> KvCacheCapacity:
    """KV-cache blocks, tokens and concurrency for the given per-worker bytes, as vLLM sizes them.

    Hybrid (Mamba / linear-attention) models also take vLLM's ``--mamba-cache-dtype``,
    ``--mamba-ssm-cache-dtype`` (``auto``, ``float32``, ``float16``, ``bfloat16``),
    ``--mamba-cache-mode`` (``none``, ``align``, ``all``) and the number of speculative tokens.

    ``vllm_version`` picks the release whose KV rules apply, as :func:`vllm_mem.plan` resolves it
    (the asked release, else the installed vLLM, else the newest profile): the printed token
    count, the hybrid block alignment, the sliding-window need (``cap_sliding_window_at_full``
    ``None``: the release's) and the hybrid KV-cache manager. ``decode_context_parallel_size``
    is vLLM's ``--decode-context-parallel-size``: the KV cache is sharded along tokens, so the
    tokens are what vLLM prints with DCP. ``enable_prefix_caching`` changes nothing for
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
    hybrid_defaults = (mamba_cache_dtype == "auto" and mamba_ssm_cache_dtype == "auto"
                       and mamba_cache_mode == "none" and num_speculative_tokens.__class__ is int
                       and num_speculative_tokens == 0)  # False == 0.0 == 0: the checked path refuses them
    rules = _version_kv_rules(vllm_version)
    if cap_sliding_window_at_full is None:
        cap_sliding_window_at_full = rules.cap_sliding_window_at_full
    if (spec.__class__ is ModelSpec and hybrid_defaults and rules.fast_path and not enable_prefix_caching
            and decode_context_parallel_size.__class__ is int and decode_context_parallel_size == 1):
        # Positional fast path on the model's cached layouts; None when an argument is not a
        # plain in-range value, and the checked path below raises what it raises. An argument
        # added to this function must be added here and to bindings/bind_kv_cache.cc too
        # (the keyword-only hybrid settings take the checked path when not at their defaults).
        native = _C._kv_cache_capacity_fast(
            spec._sizing, available_bytes, max_model_len, block_size, kv_cache_dtype, tensor_parallel_size,
            pipeline_parallel_size, max_num_batched_tokens, dtype, disable_hybrid_kv_cache_manager,
            num_gpu_blocks_override, max_concurrent_batches, cap_sliding_window_at_full)
        if native is not None:
            return KvCacheCapacity._from_native(native)
    options = _options(max_model_len, block_size, kv_cache_dtype, tensor_parallel_size, pipeline_parallel_size,
                       max_num_batched_tokens, dtype, disable_hybrid_kv_cache_manager, num_gpu_blocks_override,
                       max_concurrent_batches, cap_sliding_window_at_full)
    rules.apply(options)
    options.decode_context_parallel_size = V.setting("tensor_parallel_size", decode_context_parallel_size,
                                                     "decode_context_parallel_size")
    options.mamba_cache_dtype = V.text(mamba_cache_dtype, "mamba_cache_dtype", allowed=_MAMBA_DTYPES)
    options.mamba_ssm_cache_dtype = V.text(mamba_ssm_cache_dtype, "mamba_ssm_cache_dtype", allowed=_MAMBA_DTYPES)
    options.mamba_cache_mode = V.text(mamba_cache_mode, "mamba_cache_mode", allowed=("none", "align", "all"))
    options.num_speculative_tokens = V.integer(num_speculative_tokens, "num_speculative_tokens", low=0,
                                               high=L.MAX_NUM_SEQS)
    prefix = None if enable_prefix_caching is None else V.flag(enable_prefix_caching, "enable_prefix_caching")
    native = _C.kv_cache_capacity(_native_spec(spec), _available_list(available_bytes), options)
    if prefix and options.mamba_cache_mode == "none" and any(g.kind == "mamba" for g in native.groups):
        raise InvalidArgumentError(PREFIX_CACHING_HYBRID, "enable_prefix_caching")
    return KvCacheCapacity._from_native(native)


#: Why enable_prefix_caching on a hybrid model needs the mode spelled out (also plan()'s).
PREFIX_CACHING_HYBRID = (
    "enable_prefix_caching: on a hybrid (Mamba / linear-attention) model vLLM then sets mamba_cache_mode to 'all' "
    "when the model class supports Mamba prefix caching, else 'align' ('align' with speculative decoding in later "
    "releases; MambaModelConfig.verify_and_update_config); which one this model gets is not modelled: pass "
    "mamba_cache_mode='all' or 'align' (vLLM's start-up log says which: 'Mamba cache mode is set to ...')")


class _VersionKvRules:
    """One release's KV rules (plan/vllm_version_profile.cc ApplyVersionKvRules), read once."""

    __slots__ = ("version", "kv_tokens_from_concurrency", "hybrid_align_to_user_block_size",
                 "cap_sliding_window_at_full", "disable_hybrid_kv_cache_manager", "fast_path")

    def __init__(self, version: str) -> None:
        o = _C.KvCacheOptions()
        defaults = (o.kv_tokens_from_concurrency, o.hybrid_align_to_user_block_size)
        self.version = _C.apply_vllm_version_kv_rules(o, version)
        self.kv_tokens_from_concurrency = o.kv_tokens_from_concurrency
        self.hybrid_align_to_user_block_size = o.hybrid_align_to_user_block_size
        self.cap_sliding_window_at_full = o.cap_sliding_window_at_full
        self.disable_hybrid_kv_cache_manager = o.disable_hybrid_kv_cache_manager
        # The positional fast path runs with KvCacheOptions' defaults: only for a release that has them.
        self.fast_path = (defaults == (o.kv_tokens_from_concurrency, o.hybrid_align_to_user_block_size)
                          and not o.disable_hybrid_kv_cache_manager)

    def apply(self, options: Any) -> None:
        options.kv_tokens_from_concurrency = self.kv_tokens_from_concurrency
        options.hybrid_align_to_user_block_size = self.hybrid_align_to_user_block_size
        if self.disable_hybrid_kv_cache_manager:
            options.disable_hybrid_kv_cache_manager = True


_RULES_BY_VERSION: dict[str | None, _VersionKvRules] = {}


def _version_kv_rules(vllm_version: Any) -> _VersionKvRules:
    """The release's rules, chosen as plan() chooses the release (planner/versions.py).

    Cached by what was asked (``None``: the installed vLLM, else the newest profile, which
    planner/versions.py reads once per process too), so a repeated call costs one dict look-up:
    the function-level import below alone costs several microseconds, on every sizing call."""
    if vllm_version is None or vllm_version.__class__ is str:
        rules = _RULES_BY_VERSION.get(vllm_version)
        if rules is not None:
            return rules
    from .planner.versions import choose_vllm_version  # imported late: the planner imports this module

    version, _source = choose_vllm_version(vllm_version)  # checks the text before it is a key
    rules = _VersionKvRules(version)
    if len(_RULES_BY_VERSION) < 64:  # bounded: one entry per release asked
        _RULES_BY_VERSION[vllm_version] = rules
    return rules


#: vLLM's CacheConfig MambaDType.
_MAMBA_DTYPES = ("auto", "float32", "float16", "bfloat16")


def estimate_max_model_len(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int = 8192,
    block_size: int | None = None,
    kv_cache_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    dtype: str = "auto",
    disable_hybrid_kv_cache_manager: bool = False,
    num_gpu_blocks_override: int | None = None,
    max_concurrent_batches: int = 1,
    cap_sliding_window_at_full: bool = False,
) -> int:
    """vLLM's ``estimate_max_model_len``: the largest length in ``[1, max_model_len]`` whose one
    request fits on every worker; 0 when not even one token fits."""
    return int(_C.estimate_max_model_len(
        _native_spec(spec),
        _available_list(available_bytes),
        _options(max_model_len, block_size, kv_cache_dtype, tensor_parallel_size, pipeline_parallel_size,
                 max_num_batched_tokens, dtype, disable_hybrid_kv_cache_manager, num_gpu_blocks_override,
                 max_concurrent_batches, cap_sliding_window_at_full),
    ))


def auto_fit_max_model_len(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int = 8192,
    block_size: int | None = None,
    kv_cache_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    dtype: str = "auto",
    disable_hybrid_kv_cache_manager: bool = False,
    num_gpu_blocks_override: int | None = None,
    max_concurrent_batches: int = 1,
    cap_sliding_window_at_full: bool = False,
) -> int:
    """vLLM's auto-fit (``--max-model-len -1``): like :func:`estimate_max_model_len` but counting
    the tensor slots that grouped hybrid layers share (padding layers included)."""
    return int(_C.auto_fit_max_model_len(
        _native_spec(spec),
        _available_list(available_bytes),
        _options(max_model_len, block_size, kv_cache_dtype, tensor_parallel_size, pipeline_parallel_size,
                 max_num_batched_tokens, dtype, disable_hybrid_kv_cache_manager, num_gpu_blocks_override,
                 max_concurrent_batches, cap_sliding_window_at_full),
    ))


def check_enough_kv_cache_memory(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int = 8192,
    block_size: int | None = None,
    kv_cache_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    dtype: str = "auto",
    disable_hybrid_kv_cache_manager: bool = False,
    num_gpu_blocks_override: int | None = None,
    max_concurrent_batches: int = 1,
    cap_sliding_window_at_full: bool = False,
) -> None:
    """vLLM's ``check_enough_kv_cache_memory``: returns when one ``max_model_len`` request fits on
    every worker, else raises ``ValueError`` with vLLM's exact message."""
    _C.check_enough_kv_cache_memory(
        _native_spec(spec),
        _available_list(available_bytes),
        _options(max_model_len, block_size, kv_cache_dtype, tensor_parallel_size, pipeline_parallel_size,
                 max_num_batched_tokens, dtype, disable_hybrid_kv_cache_manager, num_gpu_blocks_override,
                 max_concurrent_batches, cap_sliding_window_at_full),
    )


def kv_cache_memory_shortfall(
    spec: SpecSource,
    available_bytes: AvailableBytes,
    max_model_len: int = 8192,
    block_size: int | None = None,
    kv_cache_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    dtype: str = "auto",
    disable_hybrid_kv_cache_manager: bool = False,
    num_gpu_blocks_override: int | None = None,
    max_concurrent_batches: int = 1,
    cap_sliding_window_at_full: bool = False,
) -> str | None:
    """The message :func:`check_enough_kv_cache_memory` would raise, or ``None`` when it fits.

    Bad input still raises ``ValueError``, so callers can tell "does not fit" from "wrong input".
    """
    message = _C.kv_cache_memory_shortfall(
        _native_spec(spec),
        _available_list(available_bytes),
        _options(max_model_len, block_size, kv_cache_dtype, tensor_parallel_size, pipeline_parallel_size,
                 max_num_batched_tokens, dtype, disable_hybrid_kv_cache_manager, num_gpu_blocks_override,
                 max_concurrent_batches, cap_sliding_window_at_full),
    )
    return message or None


for _fn in (kv_cache_capacity, estimate_max_model_len, auto_fit_max_model_len, check_enough_kv_cache_memory,
            kv_cache_memory_shortfall):
    _fn.__doc__ = (_fn.__doc__ or "") + _COMMON_DOC
del _fn
