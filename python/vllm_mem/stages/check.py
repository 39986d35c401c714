"""The per-GPU check of a stage layout: utilization sums per physical device, vLLM's start-up
check stage by stage, and (for stages given a model) each stage's start-up plan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..model_spec import ModelSpec
from ..units import format_gib_text
from .config import StageSource, load_stage_config
from .devices import FreeArg, GpusArg, VisibleArg, gpu_info, live_devices, per_device, visible_list
from .engine_settings import StageSettings, named_as_written, stage_plan_inputs
from .render import stage_check_html, stage_check_text


@dataclass(frozen=True)
class StageDeviceRow:
    """One physical GPU: its resident stages and their exact utilization sum."""

    physical_id: int
    name: str
    total_bytes: int
    free_bytes: int
    free_source: str
    stages: list[dict[str, Any]]
    utilization: str
    """The exact sum as users write it (``"0.9"``)."""
    utilization_expression: str
    requested_bytes: int
    headroom_bytes: int
    headroom: str
    over_committed: bool
    reason: str
    admission_required_bytes: int
    admission_ok: bool


@dataclass(frozen=True)
class StageStartup:
    """vLLM's start-up check of one stage worker, predicted in start order."""

    stage_id: int
    physical_id: int
    device: str
    free_bytes: int
    requested_bytes: int
    fails: bool
    message: str


@dataclass(frozen=True)
class StageCheck:
    """What :func:`check_stages` found. ``str()`` is a readable report."""

    ok: bool
    format: str
    devices: list[StageDeviceRow]
    startup: list[StageStartup]
    problems: list[str]
    suggestions: list[str]
    oom_advice: list[str]
    notes: list[str]
    plans: list[dict[str, Any]]
    """Per stage with a model: the start-up plan on its devices (weights, KV, concurrency)."""
    report: str = field(repr=False)
    """The text report (:func:`vllm_mem.stages.render.stage_check_text`), what ``str()`` prints."""

    def device(self, physical_id: int) -> StageDeviceRow:
        """The row of GPU ``physical_id``."""
        for row in self.devices:
            if row.physical_id == physical_id:
                return row
        raise KeyError(f"GPU {physical_id} carries no stage and was not given")

    def __str__(self) -> str:
        return self.report

    def to_dict(self) -> dict[str, Any]:
        """Plain data (ints, strings, lists), for ``--json`` and notebooks."""
        out = asdict(self)
        out.pop("report")
        return out

    def __repr__(self) -> str:
        return (f"<StageCheck {self.format}: {'ok' if self.ok else 'does not fit'}, {len(self.devices)} GPUs, "
                f"{len(self.problems)} problems>")

    def _repr_html_(self) -> str:
        return stage_check_html(self)


def _device_row(d: _C.DeviceCheck) -> StageDeviceRow:
    return StageDeviceRow(
        physical_id=d.physical_id,
        name=d.name,
        total_bytes=d.total_bytes,
        free_bytes=d.free_bytes,
        free_source=d.free_source,
        stages=[
            {
                "stage_id": s.stage_id,
                "local_device": f"cuda:{s.local_index}",
                "utilization": s.utilization_text,
                "requested_bytes": s.requested_bytes,
            }
            for s in d.stages
        ],
        utilization=d.utilization_text,
        utilization_expression=d.utilization_expression,
        requested_bytes=d.requested_bytes,
        headroom_bytes=d.headroom_bytes,
        headroom=_C.format_utilization_ppm(d.headroom_ppm),
        over_committed=d.over_committed,
        reason=d.reason,
        admission_required_bytes=d.admission_required_bytes,
        admission_ok=d.admission_ok,
    )


def _check_against_totals(entries: list[tuple[int, str | int, int]], reserve: int) -> None:
    """Offline figures no GPU could show: a reserve or a free figure beyond the device's total.
    ``entries``: (physical id, GPU name or total bytes, free bytes or -1)."""
    for physical_id, gpu, free in entries:
        total = int(_C.device_total_bytes(gpu_info(physical_id, gpu)))
        where = f"GPU {physical_id} ({gpu if isinstance(gpu, str) else format_gib_text(total) + ' GiB'})"
        if reserve >= total:
            V.fail("reserve_bytes", f"{reserve} bytes ({format_gib_text(reserve)} GiB) is not less than the total "
                                    f"memory of {where}, {total} bytes ({format_gib_text(total)} GiB)")
        if free > total:
            V.fail("free_memory_bytes", f"{free} bytes ({format_gib_text(free)} GiB) is more than the total memory "
                                        f"of {where}, {total} bytes ({format_gib_text(total)} GiB)")


def check_stages(
    config: StageSource,
    gpus: GpusArg = None,
    free_memory_bytes: FreeArg = None,
    cuda_visible_devices: VisibleArg = None,
    reserve_bytes: int = 0,
    models: Mapping[int, Any] | None = None,
    max_model_len: None | int | Mapping[int, int] = None,
    vllm_version: str | None = None,
    allow_long_max_model_len: bool | None = None,
) -> StageCheck:
    """Check a vLLM-Omni stage layout per physical GPU.

    Parameters
    ----------
    config
        A stage config (path, dict or :class:`StageConfig`).
    gpus
        The GPUs, offline: a catalog name (``"H100-80GB"``) or a total in bytes for every
        device; a list (index = physical id); or a ``{physical_id: gpu}`` mapping. ``None``:
        measure the visible GPUs now (live snapshot).
    free_memory_bytes
        Free memory before any stage starts: one figure for all, a list or a mapping per
        physical id. ``None`` offline: total minus ``reserve_bytes``.
    cuda_visible_devices
        ``CUDA_VISIBLE_DEVICES`` of the launching process (``"2,3"``); stage indices map
        through it. ``None``: unset.
    reserve_bytes
        Offline: memory assumed held by others on each device (CUDA contexts, other jobs).
    models
        ``{stage_id: model}`` (a :class:`~vllm_mem.ModelSpec`, config path / dict or bundled
        name): those stages also get their full start-up plan (weights on the TP split, KV
        capacity, max concurrency) on their devices, with the free memory predicted at their
        start; a plan that does not fit makes the check fail.
    max_model_len
        For planned stages: one length for all, or ``{stage_id: length}``; default: the
        stage's ``max_model_len``, else the model's limit. ``"auto"`` (-1): vLLM's auto-fit.
    vllm_version, allow_long_max_model_len
        For planned stages, as :func:`vllm_mem.plan` takes them (default: the installed vLLM,
        else the newest known release; VLLM_ALLOW_LONG_MAX_MODEL_LEN). Each stage's own engine
        arguments that are plan settings (``kv_cache_dtype``, ``block_size``, ``dtype``,
        ``quantization``, ``cpu_offload_gb``, ``enable_prefix_caching``, ``speculative_config``,
        ``compilation_config``, ...; docs/stages.md) reach its plan as ``plan(**settings)`` takes
        them, so its KV tokens, peak and fit are plan()'s for those settings.

    Returns
    -------
    StageCheck
        Per-device rows (sum exactly as written: ``0.6 + 0.3`` is ``"0.9"``), the start-up
        prediction, problems with their exact reasons, and concrete suggestions.
    """
    visible = visible_list(cuda_visible_devices)
    devices: list[_C.DeviceMemoryInfo] = []
    default = _C.DeviceMemoryInfo(0, "", 0, -1)
    live = gpus is None
    reserve = V.size_bytes(reserve_bytes, "reserve_bytes")
    frees: dict[int, int] = {}
    common_free = -1
    if isinstance(free_memory_bytes, (Mapping, list, tuple)):
        frees = per_device(free_memory_bytes, "free_memory_bytes", V.size_bytes)
    elif free_memory_bytes is not None:
        common_free = V.size_bytes(free_memory_bytes, "free_memory_bytes")

    entries: list[tuple[int, str | int, int]] = []
    if live:
        devices = live_devices(visible)
    elif isinstance(gpus, (str, int)):
        one = V.gpu(gpus, "gpus")
        default = gpu_info(0, one, common_free)
        entries = [(0, one, common_free), *((i, one, f) for i, f in frees.items())]
    elif isinstance(gpus, (Mapping, list, tuple)):
        entries = [(i, g, frees.get(i, common_free)) for i, g in per_device(gpus, "gpus", V.gpu).items()]
    else:
        raise V.bad_type("gpus", "a GPU name, a total in bytes, a list or a {physical_id: gpu} mapping, or "
                                 "None (measure now)", gpus)
    _check_against_totals(entries, reserve)
    if not live:
        devices = [gpu_info(i, g, f) for i, g, f in entries[1:]] if isinstance(gpus, (str, int)) else \
            [gpu_info(i, g, f) for i, g, f in entries]

    num_visible = 0
    if not visible and (live or isinstance(gpus, (list, tuple))):
        num_visible = len(devices)  # indices beyond the GPUs there are cannot be valid
    parsed = load_stage_config(config, visible or None, num_visible)

    planned = []
    if models is not None and not isinstance(models, Mapping):
        raise V.bad_type("models", "a {stage_id: model} mapping or None", models)
    if models is not None and len(models) > L.MAX_STAGES:
        raise V.bad_value("models", f"a mapping of at most {L.MAX_STAGES} stages", models)
    model_items: list[tuple[Any, Any]] = list((models or {}).items())
    # A stage whose file names its model (model: / engine_args.model) is planned like one given
    # in models=, which wins for its stage: the file's max_model_len then applies as well, so a
    # stage that cannot hold its model is a problem, never a silent OK.
    given_ids = {V.integer(k, "models key", low=0) for k, _ in model_items}
    key_notes = list(parsed._key_notes)
    for stage in parsed.stages:
        if stage.model and stage.stage_id not in given_ids:
            if stage.on_cpu:  # no GPU budget to plan against: said, not refused
                key_notes.append(f"{stage.source} (stage {stage.stage_id}) model {V.show(stage.model)} runs on the "
                                 "CPU: no GPU start-up plan is made for it")
            else:
                model_items.append((stage.stage_id, _file_model(stage)))
    lengths = max_model_len if isinstance(max_model_len, Mapping) else {}
    if vllm_version is not None:
        V.setting("vllm_version", vllm_version)
    for stage_id, model in model_items:
        sid = V.integer(stage_id, "models key", low=0)
        spec = model if isinstance(model, ModelSpec) else ModelSpec.from_hf_config(model)
        length = lengths.get(stage_id, 0) if isinstance(max_model_len, Mapping) else (max_model_len or 0)
        # plan()'s settings object for the stage's engine arguments; the core sets its device.
        settings = parsed._settings.get(sid) or StageSettings(f"stage {sid}")
        inputs = stage_plan_inputs(settings, model, spec, vllm_version, allow_long_max_model_len)
        planned.append((sid, spec._spec, spec.name, _planned_length(length), inputs))
    with named_as_written(parsed._settings.values(), prefixed=True):
        result, plans = _C.check_stages_with_plans(parsed._set, devices, default, reserve, live, planned)
    check = StageCheck(
        ok=bool(result.ok),
        format=parsed.format,
        devices=[_device_row(d) for d in result.devices],
        startup=[
            StageStartup(p.stage_id, p.physical_id, p.device, p.free_bytes, p.requested_bytes,
                         p.fails, p.message)
            for p in result.startup
        ],
        problems=list(result.problems),
        suggestions=list(result.suggestions),
        oom_advice=list(result.oom_advice),
        notes=[*result.notes, *key_notes],
        plans=[
            {k: getattr(p, k) for k in (
                "stage_id", "model", "physical_id", "total_bytes", "free_bytes", "max_model_len", "fits",
                "failure_phase", "failure_message", "shortfall_bytes", "requested_bytes", "weights_bytes",
                "non_kv_cache_bytes", "available_kv_cache_bytes", "num_blocks", "num_tokens",
                "max_concurrency", "line")}
            for p in plans
        ],
        report="",
    )
    gpu_stages = sum(not stage.on_cpu for stage in parsed.stages)
    return replace(check, report=stage_check_text(check, len(parsed.stages), gpu_stages))


def _file_model(stage: _C.StageConfig) -> ModelSpec:
    """The model a stage file names, read as any model name is (path, bundled, Hub id); an
    unreadable one is an error naming the stage's field."""
    try:
        return ModelSpec.from_hf_config(stage.model)
    except ValueError as exc:
        V.fail(f"{stage.source} model", f"{V.show(stage.model)}: {exc}")


def _planned_length(length: Any) -> int:
    """0 leaves the stage's own length; "auto" / -1 is vLLM's auto-fit (the settings row's check)."""
    if isinstance(length, str) or (isinstance(length, int) and not isinstance(length, bool) and length == -1):
        return int(V.setting("max_model_len", length, "max_model_len"))
    return V.integer(length, "max_model_len", low=0, high=L.MAX_MODEL_LEN_TOKENS)
