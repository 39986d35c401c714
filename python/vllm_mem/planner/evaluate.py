"""The plan call: :func:`plan` evaluates vLLM's start-up memory for a model on a GPU."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import _C
from .. import _validate as V
from ..errors import InvalidArgumentError
from ..kv_cache import PREFIX_CACHING_HYBRID
from . import versions
from .inputs import SpecSource, gpu_total, plan_inputs, spec_of
from .result import StartupPlan
from .speculative import speculative_config as speculative

#: Catalog lookups by the spelling asked (the catalog is compiled in, so an answer never
#: changes): plan() in a loop skips the fuzzy name matching. Bounded: spellings are user input.
_CATALOG_TOTALS: dict[str, tuple[int, str]] = {}
_CATALOG_TOTALS_KEPT = 256


def _version_dependent() -> bool:
    """True when the environment changes what plan() resolves: an installed vllm (its version
    is planned for) or VLLM_ALLOW_LONG_MAX_MODEL_LEN."""
    return versions.installed_vllm_version() is not None or versions.allow_long_from_env()


def plan(
    spec: SpecSource,
    gpu: str | None = None,
    *,
    total_memory_bytes: int | None = None,
    free_memory_bytes: int | None = None,
    gpu_count: int | None = None,
    gpu_memory_utilization: float | None = None,
    max_model_len: int | None = None,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    dtype: str = "auto",
    quantization: str | None = None,
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
    enforce_eager: bool = False,
    cudagraph_mode: str = "FULL_AND_PIECEWISE",
    cudagraph_capture_sizes: Sequence[int] | None = None,
    max_cudagraph_capture_size: int | None = None,
    kv_cache_memory_bytes: int | None = None,
    cudagraph_memory_in_budget: bool | None = None,
    vllm_version: str | None = None,
    usage_context: str = "server",
    allow_long_max_model_len: bool | None = None,
    speculative_config: Mapping[str, Any] | str | None = None,
    decode_context_parallel_size: int = 1,
    enable_prefix_caching: bool | None = None,
) -> StartupPlan:
    """Plan vLLM's start-up memory on one GPU type, per pipeline rank.

    Parameters
    ----------
    spec : ModelSpec or config source
        A :class:`ModelSpec`, or anything :meth:`ModelSpec.from_hf_config` accepts (a
        ``config.json`` path or folder, a dict, a bundled model name).
    gpu : str, optional
        A catalog name in any common spelling (``"H100-80GB"``, ``"L40S"``, ``"MI300X"``).
    total_memory_bytes : int, optional
        The device's total memory instead of ``gpu``.
    free_memory_bytes : int, optional
        Free memory at start-up; default: total minus the idle CUDA context (and NCCL).
    gpu_count : int, optional
        GPUs available; ``tensor_parallel_size * pipeline_parallel_size`` may not exceed it.
    gpu_memory_utilization, max_model_len, tensor_parallel_size, pipeline_parallel_size,
    max_num_seqs, max_num_batched_tokens, dtype, quantization, kv_cache_dtype, block_size,
    enforce_eager, kv_cache_memory_bytes
        vLLM's engine arguments of the same names. Left ``None``, each takes the planned
        release's default: ``max_model_len`` the model's derived maximum (rope scaling
        included), ``gpu_memory_utilization`` 0.9 (0.92 from v0.21), the scheduler sizes by
        GPU and ``usage_context`` (e.g. 1024 / 8192 on an H100 for the server).
    cudagraph_mode, cudagraph_capture_sizes, max_cudagraph_capture_size
        vLLM's compilation config.
    cudagraph_memory_in_budget : bool, optional
        ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``; default: the release's (on from v0.21;
        v0.19 logged the estimate without subtracting it).
    vllm_version : str, optional
        The vLLM release to plan for (``"0.19"``, ``"0.10.2"``); default: the installed vllm's
        version (read from its metadata, vllm is not imported), else the newest known release.
        The report says which and why. See :func:`vllm_mem.vllm_versions`.
    usage_context : str
        ``"server"`` (``vllm serve``, the API server) or ``"offline"`` (the ``LLM`` class):
        vLLM's scheduler defaults differ.
    allow_long_max_model_len : bool, optional
        ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``: accept a ``max_model_len`` above the model's
        derived maximum (default: the environment variable).
    speculative_config : dict or str, optional
        vLLM's ``--speculative-config`` (a dict or its JSON text): ``method`` ("ngram",
        "draft_model", "eagle", "eagle3", "mtp"), ``model`` (the drafter: a bundled name, a
        path, a dict or a Hub id; "mtp" reads the target's MTP layers), ``num_speculative_tokens``,
        ``draft_tensor_parallel_size``. The drafter's weights and its share of the KV pool are
        separate terms of the plan; the capture sizes become multiples of 1 + K.
        docs/speculative_decoding.md.

    Returns
    -------
    StartupPlan

    Raises
    ------
    ValueError
        Naming the field: utilization outside (0, 1], an unknown GPU (with close matches),
        non-positive lengths, a TP larger than ``gpu_count`` or not dividing the heads, a
        ``max_model_len`` above the model's maximum (vLLM's message), an unknown version form.
    """
    s = spec_of(spec)
    # The fast path plans for the newest release: only when no other release is asked, none is
    # installed and nothing version-related is set (else the checked path resolves them).
    if (s._checkpoint is None and speculative_config is None and vllm_version is None and usage_context == "server"
            and allow_long_max_model_len is None and not _version_dependent() and not enable_prefix_caching
            and decode_context_parallel_size.__class__ is int and decode_context_parallel_size == 1):
        # Positional fast path on the model's cached KV layouts: None when an argument is not a
        # plain in-range value (or explicit capture sizes), and the checked path below raises
        # what it raises. An argument added to plan() must be added here and to
        # bindings/bind_plan.cc (PlanArguments) too, or make this path fall back when it is set.
        if total_memory_bytes is None:
            known = _CATALOG_TOTALS.get(gpu) if gpu.__class__ is str else None
            if known is None:
                known = gpu_total(gpu, None)  # raises for an unknown name
                if len(_CATALOG_TOTALS) < _CATALOG_TOTALS_KEPT:
                    _CATALOG_TOTALS[gpu] = known
            total, name = known
        else:
            total, name = total_memory_bytes, gpu
        native = _C._evaluate_plan_fast(
            s._sizing, total, name, free_memory_bytes, gpu_count, gpu_memory_utilization, max_model_len,
            tensor_parallel_size, pipeline_parallel_size, max_num_seqs, max_num_batched_tokens, dtype,
            quantization, kv_cache_dtype, block_size, enforce_eager, cudagraph_mode, cudagraph_capture_sizes,
            max_cudagraph_capture_size, kv_cache_memory_bytes, cudagraph_memory_in_budget)
        if native is not None:
            return StartupPlan(native, s)
    total, name = gpu_total(gpu, total_memory_bytes)
    inputs = plan_inputs(
        total_memory_bytes=total, gpu_name=name, free_memory_bytes=free_memory_bytes,
        gpu_count=gpu_count, gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens, dtype=dtype, quantization=quantization,
        kv_cache_dtype=kv_cache_dtype, block_size=block_size, enforce_eager=enforce_eager,
        cudagraph_mode=cudagraph_mode, cudagraph_capture_sizes=cudagraph_capture_sizes,
        max_cudagraph_capture_size=max_cudagraph_capture_size,
        kv_cache_memory_bytes=kv_cache_memory_bytes,
        cudagraph_memory_in_budget=cudagraph_memory_in_budget, vllm_version=vllm_version,
        usage_context=usage_context, allow_long_max_model_len=allow_long_max_model_len,
        decode_context_parallel_size=decode_context_parallel_size)
    inputs.speculative = speculative(speculative_config, spec)
    if enable_prefix_caching is not None and V.flag(enable_prefix_caching, "enable_prefix_caching") and any(
            layer.attention == _C.AttentionKind.NONE for layer in s.layers):
        # Hybrid (state-space) layers: vLLM picks the Mamba cache mode by a per-model flag (kv_cache.py).
        raise InvalidArgumentError(PREFIX_CACHING_HYBRID, "enable_prefix_caching")
    if s.checkpoint_weights is not None:  # weights_source="headers": the checkpoint's own bytes
        inputs.checkpoint_weights_bytes = s._checkpoint_weights_bytes(inputs.dtype, inputs.quantization or None)
    return StartupPlan(_C.evaluate_plan(s._spec, inputs), s)
