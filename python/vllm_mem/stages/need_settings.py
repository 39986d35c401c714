"""A :class:`~vllm_mem.StageNeed`'s ``plan_options``: plan()'s settings, as plan() takes them.

Every keyword ``plan()`` takes for a model is a plan option: each row of the settings table
(``vllm_version``, ``kv_cache_dtype``, ``enable_prefix_caching``, ``decode_context_parallel_size``,
``limit_mm_per_prompt``, ``cudagraph_mode``, ...; docs/settings.md), ``speculative_config`` and
``allow_long_max_model_len``. They reach the stage's need the way the stage check's engine
arguments reach its plans (:mod:`.engine_settings`): checked by the rows of the one request
object, the release and the environment resolved, the drafter and the checkpoint's weights added
by plan()'s own model inputs, so the core sizes the stage from the settings object ``plan()``
evaluates, handed over once. An error names the option where it was given
(``stages[0].plan_options.kv_cache_dtype``).

What the stage itself fixes is refused as a plan option, with where to give it: its length and
split are the :class:`StageNeed`'s own fields, its GPU is the one the assignment sizes model
stages on, and its budget (utilization, free memory, KV bytes or blocks) is what is searched.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from .. import _C
from .. import _validate as V
from .engine_settings import StageSettings, named_as_written, stage_plan_inputs

#: plan() keywords that are not rows of the settings table.
_PLAN_KEYWORDS = ("speculative_config", "allow_long_max_model_len")

_GPUS = "give the GPUs as assign_utilizations(gpus=...), whose largest sizes model stages"
_SEARCHED = "it is what assign_utilizations searches"
_BYTES = (
    "give the StageNeed's fixed_bytes and kv_bytes_needed instead of a model: it fixes the KV cache "
    "whatever the concurrency"
)

#: plan() keywords a stage need fixes itself, and what to do instead.
FIXED_BY_THE_STAGE: dict[str, str] = {
    "max_model_len": "give it as the StageNeed's max_model_len",
    "tensor_parallel_size": "give it as the StageNeed's tensor_parallel_size",
    "pipeline_parallel_size": "give it as the StageNeed's pipeline_parallel_size",
    "gpu": _GPUS,
    "total_memory_bytes": _GPUS,
    "gpu_count": "give the GPUs as assign_utilizations(gpus=..., num_gpus=...)",
    "gpu_memory_utilization": _SEARCHED,
    "free_memory_bytes": _SEARCHED + " (a need is sized with the whole device free)",
    "kv_cache_memory_bytes": _BYTES,
    "num_gpu_blocks_override": _BYTES,
}

@functools.cache
def accepted_options() -> frozenset[str]:
    """The plan options a stage need takes: plan()'s keywords less those the stage fixes (read
    from the settings table on first use, not at import)."""
    names = {row["name"] for row in _C.plan_settings()} | set(_PLAN_KEYWORDS)
    return frozenset(names - set(FIXED_BY_THE_STAGE))


def check_plan_options(options: Any, where: str) -> dict[str, Any]:
    """``options`` as a dict whose every key is a plan option (``where``: ``stages[0]``); its
    values are checked when the stage is sized, by the request object's rows."""
    field = f"{where}.plan_options"
    if not isinstance(options, Mapping):
        raise V.bad_type(field, "a mapping of plan() settings", options)
    accepted = accepted_options()
    for key in options:
        if not isinstance(key, str):
            raise V.bad_type(field, "keys that are plan() setting names", key)
        if key in FIXED_BY_THE_STAGE:
            V.fail(f"{field}.{key}", f"is fixed by the stage: {FIXED_BY_THE_STAGE[key]}")
        if key not in accepted:
            closest = _C.closest_setting_name(key)
            hint = f" (did you mean {closest!r}?)" if closest in accepted else ""
            raise V.bad_value(
                f"{field}.{key}",
                f"a setting plan() takes (docs/settings.md; speculative_config, allow_long_max_model_len){hint}",
                key,
            )
    return dict(options)


def planned_demand(need: Any, where: str, spec: Any, devices: list[int], reference: tuple[int, str]) -> Any:
    """The core's StageDemand of ``need`` (a checked StageNeed with a model) sized on the
    ``reference`` GPU (its total and catalog name), from the PlanInputs plan() would build for the
    same settings; errors name the need's fields (``stages[0].plan_options.dtype``)."""
    options = need.plan_options
    keywords = {k: v for k, v in options.items() if k not in _PLAN_KEYWORDS}
    keywords["tensor_parallel_size"] = need.tensor_parallel_size
    keywords["pipeline_parallel_size"] = need.pipeline_parallel_size
    if need.max_model_len is not None:
        keywords["max_model_len"] = need.max_model_len
    total_memory_bytes, gpu_name = reference
    if total_memory_bytes > 0:
        keywords["total_memory_bytes"] = total_memory_bytes
    fields = {k: f"{where}.plan_options.{k}" for k in options}
    fields.update({k: f"{where}.{k}" for k in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size")})
    fields["total_memory_bytes"] = "gpus"
    settings = StageSettings(where, fields, keywords, options.get("speculative_config"))
    inputs = stage_plan_inputs(settings, need.model, spec, None, options.get("allow_long_max_model_len"))
    inputs.gpu_name = gpu_name
    with named_as_written([settings]):
        return _C.stage_demand_for(spec._spec, inputs, need.stage_id, devices, need.concurrency)
