"""A stage's vLLM engine arguments as plan() takes them.

Each key of a stage that is a row of the settings table (``kv_cache_dtype``, ``block_size``,
``dtype``, ``quantization``, ``cpu_offload_gb``, ``enable_prefix_caching``, ...), vLLM's
``speculative_config`` and ``compilation_config`` reaches the stage's start-up plan the way
``plan(**settings)`` takes it: read by vLLM's own engine-argument reading
(:func:`vllm_mem.vllm_args.engine_args_to_plan_keywords`), checked by the rows of the one request
object (:func:`vllm_mem.planner.inputs.plan_request`), and completed by the same model inputs
(:func:`vllm_mem.planner.evaluate.model_inputs`: the drafter, the checkpoint's weights). An error
names the stage and the key where the file writes it: ``stages[0] (stage 0)
engine_args.kv_cache_dtype: ...``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import _validate as V
from ..errors import NotModelledError


@dataclass(frozen=True)
class StageSettings:
    """What one stage's engine arguments give its plan."""

    label: str
    """``"stages[0] (stage 0)"``: the stage as messages name it (the core's own spelling)."""
    fields: dict[str, str] = field(default_factory=dict)
    """plan() keyword -> where the file has it (``"stages[0] (stage 0) engine_args.block_size"``)."""
    keywords: dict[str, Any] = field(default_factory=dict)
    """The plan() keywords, each checked by its row."""
    speculative_config: Any = None
    """vLLM's ``speculative_config`` mapping (read when the stage is planned: "mtp" needs its model)."""
    refusal: NotModelledError | None = None
    """A setting vllm_mem does not model, raised when the stage is planned: a stage that is not
    planned still gets its per-GPU check."""


@contextmanager
def named_as_written(stages: Iterable[StageSettings], prefixed: bool = False) -> Iterator[None]:
    """An error naming a plan() keyword names the stage's key instead. ``prefixed``: the field
    already starts with the stage's label (the core's stage plans put it there)."""
    try:
        yield
    except (ValueError, NotImplementedError) as exc:
        for stage in stages:
            named = V.renamed(exc, stage.fields, stage.label + " " if prefixed else "")
            if named is not None:
                raise named from None
        raise


def _engine_args(stage: Mapping[str, Any], label: str, keys: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    """The engine arguments of ``keys`` a stage gives (``engine_args.<key>``, then the flat
    ``<key>``: vLLM-Omni's precedence, the core's too; a null is not given) and where each is."""
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    holders = [("", stage)]
    if isinstance(stage.get("engine_args"), Mapping):
        holders.append(("engine_args.", stage["engine_args"]))  # last: it wins
    for prefix, holder in holders:
        for key in keys:
            if holder.get(key) is not None:
                values[key] = holder[key]
                where[key] = f"{label} {prefix}{key}"
    return values, where


def read_stage_settings(stage: Mapping[str, Any], label: str, keys: tuple[str, ...]) -> StageSettings:
    """One stage's engine arguments of ``keys`` read and checked as plan() reads them."""
    from ..planner.inputs import plan_request
    from ..vllm_args import engine_args_to_plan_keywords

    values, where = _engine_args(stage, label, keys)
    try:
        keywords = engine_args_to_plan_keywords(values, flag_of=lambda name: where.get(name, f"{label} {name}"))
    except NotModelledError as exc:
        return StageSettings(label, where, refusal=exc)
    speculative_config = keywords.pop("speculative_config", None)
    # What --compilation-config gave (cudagraph_mode, ...) is written under it in the file.
    compiled = where.get("compilation_config", label)
    fields = {**{k: f"{compiled}.{k}" for k in keywords if k not in where}, **where}
    settings = StageSettings(label, fields, keywords, speculative_config)
    with named_as_written([settings]):
        plan_request(**keywords)  # each row's check, as plan(**keywords) checks it
    return settings


def stage_plan_inputs(
    settings: StageSettings, target: Any, spec: Any, vllm_version: str | None, allow_long_max_model_len: bool | None
) -> Any:
    """The core's PlanInputs for the stage, built as plan() builds them: its request object, the
    release and environment resolved, the drafter read against ``target`` (the model as given)
    and the checkpoint's weights of ``spec``. The stage check sets the device over it."""
    from ..planner.evaluate import model_inputs
    from ..planner.inputs import environment_inputs, plan_request

    if settings.refusal is not None:
        raise settings.refusal
    keywords = dict(settings.keywords)
    if vllm_version is not None:
        keywords["vllm_version"] = vllm_version
    with named_as_written([settings]):
        inputs = environment_inputs(plan_request(**keywords), allow_long_max_model_len)
        return model_inputs(inputs, spec, target, settings.speculative_config)
