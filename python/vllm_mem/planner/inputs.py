"""The plan's request object (``_C.PlanRequest``, one row per setting in the core's table) and
the resolved ``PlanInputs`` the core plans with."""

from __future__ import annotations

from typing import Any, Union

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..catalog import lookup_gpu
from ..kv_cache import _cached_request
from ..model_spec import ConfigSource, ModelSpec
from .versions import allow_long_from_env, choose_vllm_version, refuse_empty_version

SpecSource = Union[ModelSpec, ConfigSource]

#: Catalog lookups by the spelling asked (the catalog is compiled in, so an answer never
#: changes): plan() in a loop skips the fuzzy name matching. Bounded: spellings are user input.
_CATALOG_TOTALS: dict[str, tuple[int, str]] = {}
_CATALOG_TOTALS_KEPT = 256


def spec_of(spec: SpecSource) -> ModelSpec:
    return spec if isinstance(spec, ModelSpec) else ModelSpec.from_hf_config(spec)


def gpu_total(gpu: Any, total_memory_bytes: Any) -> tuple[int, str]:
    """The device's total and its name: ``total_memory_bytes`` when given (checked by the
    caller's request), else the catalog entry of ``gpu``."""
    if total_memory_bytes:
        return total_memory_bytes, V.optional_text(gpu, "gpu", max_chars=L.MAX_GPU_NAME_CHARS) or ""
    if gpu is None:
        raise V.bad_type("gpu", "a catalog GPU name (see `vllm-mem gpus`), or give total_memory_bytes", gpu)
    known = _CATALOG_TOTALS.get(gpu) if gpu.__class__ is str else None
    if known is None:
        info = lookup_gpu(gpu)  # raises for an unknown name, with close matches
        known = (info.total_memory_bytes, info.name)
        if len(_CATALOG_TOTALS) < _CATALOG_TOTALS_KEPT:
            _CATALOG_TOTALS[gpu] = known
    return known


def plan_request(request: Any = None, **settings: Any) -> Any:
    """The request object: built from the keywords (each checked by its row), or ``request``
    with those keywords replaced (a loop builds it once and reuses it)."""
    refuse_empty_version(settings)
    if request is None:
        return _cached_request(_C.PlanRequest, settings)
    if not isinstance(request, _C.PlanRequest):
        raise V.bad_type("request", "a vllm_mem.PlanRequest", request)
    return request.replace(**settings) if settings else request


def prepared_call(gpu: Any, request: Any, settings: dict[str, Any]) -> tuple[Any, int, str, Any]:
    """What plan()'s arguments give before the environment is read: ``(request object, device
    total, GPU name, asked vllm_version or None)``. Each is a function of
    the arguments alone (the catalog is compiled in; request objects are never changed in
    place), so keywords alone are remembered by their typed values, like :func:`_cached_request`:
    a plan() loop pays one dict look-up for them. Bounded: keywords are user input."""
    key = None
    if request is None:
        try:
            values = settings.values()
            key = (gpu, gpu.__class__, *settings, *values, *map(type, values))
            known = _PREPARED.get(key)
        except TypeError:  # an unhashable value (a list of capture sizes): prepared each time
            key = known = None
        if known is not None:
            return known
    r = plan_request(request, **settings)
    total, name = gpu_total(gpu, r.total_memory_bytes)
    prepared = (r, total, name, r.vllm_version or None)
    if key is not None and len(_PREPARED) < _CATALOG_TOTALS_KEPT:
        _PREPARED[key] = prepared
    return prepared


_PREPARED: dict[Any, tuple[Any, int, str, Any]] = {}


def catalog_entry(gpu: str) -> tuple[int, str] | None:
    """``(total, name)`` of a GPU name :func:`gpu_total` has already looked up, else None (the
    look-up, and its refusal of an unknown name, stay :func:`gpu_total`'s)."""
    return _CATALOG_TOTALS.get(gpu)


#: The device of a plan that gives total_memory_bytes and no GPU name.
NO_GPU: tuple[int, str] = (0, "")


def resolved_environment(asked_version: Any, allow_long_max_model_len: Any) -> tuple[str, str, bool]:
    """``(vllm_version, source, allow_long)``: the release asked (the request's ``vllm_version``,
    None when unset), else the installed one, else the newest profile;
    VLLM_ALLOW_LONG_MAX_MODEL_LEN unless given. Read on every plan: both may change while a
    process runs (a test sets the variable; the installed version is read once, and cached)."""
    version, source = choose_vllm_version(asked_version)
    allow_long = (allow_long_from_env() if allow_long_max_model_len is None
                  else V.flag(allow_long_max_model_len, "allow_long_max_model_len"))
    return version, source, allow_long


def plan_inputs(*, gpu: Any = None, allow_long_max_model_len: bool | None = None, request: Any = None,
                **settings: Any) -> Any:
    """The core's PlanInputs: the request (:func:`plan_request`), the device's total from
    ``gpu`` unless ``total_memory_bytes`` is given, and the environment resolved (release,
    VLLM_ALLOW_LONG_MAX_MODEL_LEN). Settings left unset are the release's, filled by the core."""
    r = plan_request(request, **settings)
    total, name = gpu_total(gpu, r.total_memory_bytes)
    i = environment_inputs(r, allow_long_max_model_len)
    i.total_memory_bytes = total
    i.gpu_name = name
    return i


def environment_inputs(request: Any, allow_long_max_model_len: bool | None = None) -> Any:
    """The core's PlanInputs of a request object with the environment resolved
    (:func:`resolved_environment`), its device not yet set: :func:`plan_inputs` sets the GPU's,
    the stage check each stage's."""
    i = _C.PlanInputs(request)
    i.vllm_version, i.vllm_version_source, i.allow_long_max_model_len = resolved_environment(
        request.vllm_version or None, allow_long_max_model_len)
    return i
