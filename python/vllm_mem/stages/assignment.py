"""Choosing ``gpu_memory_utilization`` (and devices) for stages that share GPUs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..model_spec import ModelSpec
from ..planner.inputs import gpu_total
from .devices import GpusArg, device_id, gpu_info, per_device
from .need_settings import check_plan_options, planned_demand


@dataclass(frozen=True)
class StageNeed:
    """What one stage (one vLLM engine) needs, per worker GPU.

    Give either the bytes directly (``fixed_bytes``: weights + activation + non-torch +
    CUDA-graph memory; ``kv_bytes_needed``: KV cache for the required concurrency), or a
    ``model`` with ``max_model_len`` and ``concurrency`` for the start-up planner to size.
    ``devices``: fixed physical GPUs (``tensor_parallel_size x pipeline_parallel_size`` of
    them); ``None``: let :func:`assign_utilizations` place the stage. ``plan_options``: any
    keyword :func:`vllm_mem.plan` takes for the model (``vllm_version``, ``kv_cache_dtype``,
    ``enable_prefix_caching``, ``decode_context_parallel_size``, ``speculative_config``, ...;
    docs/settings.md), except those the stage fixes itself: ``max_model_len``,
    ``tensor_parallel_size`` and ``pipeline_parallel_size`` (this need's own fields), the GPU
    (``gpu``, ``total_memory_bytes``, ``gpu_count``: the assignment's ``gpus``) and the budget
    the assignment searches (``gpu_memory_utilization``, ``free_memory_bytes``,
    ``kv_cache_memory_bytes``, ``num_gpu_blocks_override``).
    """

    stage_id: int
    devices: Sequence[int] | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    fixed_bytes: int | None = None
    kv_bytes_needed: int | None = None
    model: Any = None
    max_model_len: int | None = None
    concurrency: float = 1.0
    plan_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StageAssignmentRow:
    """One stage's assigned utilization."""

    stage_id: int
    devices: list[int]
    tensor_parallel_size: int
    pipeline_parallel_size: int
    gpu_memory_utilization: str
    """As users write it (``"0.45"``)."""
    min_gpu_memory_utilization: str
    requested_bytes: int
    kv_bytes: int
    kv_bytes_needed: int
    kv_headroom: float


@dataclass(frozen=True)
class UtilizationAssignment:
    """What :func:`assign_utilizations` found: per-stage utilizations and per-device sums, or
    the stage that cannot be satisfied and by how many bytes."""

    feasible: bool
    stages: list[StageAssignmentRow]
    devices: list[dict[str, Any]]
    unsatisfied_stage_id: int | None
    unsatisfied_device: int | None
    shortfall_bytes: int
    message: str

    def __str__(self) -> str:
        if not self.feasible:
            return self.message
        lines = [self.message]
        for s in self.stages:
            lines.append(
                f"  stage {s.stage_id} on GPU {','.join(map(str, s.devices))}: gpu_memory_utilization "
                f"{s.gpu_memory_utilization} (needs >= {s.min_gpu_memory_utilization}), KV "
                f"{_C.format_gib(s.kv_bytes)} GiB = {s.kv_headroom:.2f}x the "
                f"{_C.format_gib(s.kv_bytes_needed)} GiB needed"
            )
        for d in self.devices:
            lines.append(f"  GPU {d['physical_id']}: {d['utilization']} (stages {d['stage_ids']})")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def stage_config(self) -> dict[str, Any]:
        """The assignment as a vLLM-Omni ``stages:`` document (devices as physical ids)."""
        return {
            "stages": [
                {
                    "stage_id": s.stage_id,
                    "devices": ",".join(map(str, s.devices)),
                    "gpu_memory_utilization": float(s.gpu_memory_utilization),
                    **({"tensor_parallel_size": s.tensor_parallel_size} if s.tensor_parallel_size > 1 else {}),
                    **({"pipeline_parallel_size": s.pipeline_parallel_size}
                       if s.pipeline_parallel_size > 1 else {}),
                }
                for s in self.stages
            ]
        }


def _need(raw: StageNeed | Mapping[str, Any], index: int) -> StageNeed:
    """A stage need with every field checked, named ``stages[i].field``."""
    where = f"stages[{index}]"
    if isinstance(raw, Mapping):
        unknown = sorted(str(k) for k in raw if k not in StageNeed.__dataclass_fields__)
        if unknown:
            allowed = "a StageNeed field: " + ", ".join(StageNeed.__dataclass_fields__)
            raise V.bad_value(f"{where} {unknown[0]}", allowed, unknown[0])
        raw = StageNeed(**{str(k): v for k, v in raw.items()})
    elif not isinstance(raw, StageNeed):
        raise V.bad_type(where, "a StageNeed or a dict with its fields", raw)
    devices = None if raw.devices is None else [
        device_id(d, f"{where}.devices[{i}]")
        for i, d in enumerate(V.items(raw.devices, f"{where}.devices", max_items=L.MAX_DEVICES_PER_LIST))]
    tp = V.setting("tensor_parallel_size", raw.tensor_parallel_size, f"{where}.tensor_parallel_size")
    pp = V.setting("pipeline_parallel_size", raw.pipeline_parallel_size, f"{where}.pipeline_parallel_size")
    if tp * pp > L.MAX_WORLD_SIZE:
        raise V.bad_value(f"{where}.tensor_parallel_size", f"such that TP x PP <= {L.MAX_WORLD_SIZE}", tp * pp)
    return StageNeed(
        stage_id=V.integer(raw.stage_id, f"{where}.stage_id", low=0, high=L.MAX_DEVICE_ID * L.MAX_STAGES),
        devices=devices, tensor_parallel_size=tp, pipeline_parallel_size=pp,
        fixed_bytes=None if raw.fixed_bytes is None else V.size_bytes(raw.fixed_bytes, f"{where}.fixed_bytes"),
        kv_bytes_needed=None if raw.kv_bytes_needed is None else V.size_bytes(
            raw.kv_bytes_needed, f"{where}.kv_bytes_needed"),
        model=raw.model,
        max_model_len=V.optional_setting("max_model_len", raw.max_model_len, f"{where}.max_model_len"),
        concurrency=V.number(raw.concurrency, f"{where}.concurrency", low=0.0, high=float(L.MAX_NUM_SEQS),
                             low_open=True),
        plan_options=check_plan_options(raw.plan_options, where),
    )


def _demand(need: StageNeed, index: int, reference: tuple[int, str]) -> _C.StageDemand:
    """The stage's need: as given, or sized by the planner from plan()'s settings object on the
    ``reference`` GPU (its total and catalog name)."""
    world = need.tensor_parallel_size * need.pipeline_parallel_size
    devices = [] if need.devices is None else list(need.devices)
    if need.fixed_bytes is not None and need.kv_bytes_needed is not None:
        return _C.StageDemand(need.stage_id, world, devices, need.fixed_bytes, need.kv_bytes_needed)
    if need.model is None:
        V.fail(f"stage {need.stage_id}", "give either fixed_bytes and kv_bytes_needed, or a model with "
                                         "max_model_len and concurrency")
    spec = need.model if isinstance(need.model, ModelSpec) else ModelSpec.from_hf_config(need.model)
    return planned_demand(need, f"stages[{index}]", spec, devices, reference)


def _reference_gpu(gpus: dict[int, str | int]) -> tuple[int, str]:
    """``(total, catalog name)`` of the largest GPU given (``(0, "")`` for none): model stages
    are sized on it; their fixed and KV bytes do not depend on which device they land on."""
    return max((gpu_total(g, 0) if isinstance(g, str) else (g, "") for g in gpus.values()), default=(0, ""))


def _assignment_gpus(gpus: GpusArg, count: int) -> dict[int, str | int]:
    """Each physical id's GPU (a catalog name or a total in bytes), checked."""
    if isinstance(gpus, (Mapping, list, tuple)):
        return per_device(gpus, "gpus", V.gpu)
    if isinstance(gpus, (str, int)):
        one = V.gpu(gpus, "gpus")
        return dict.fromkeys(range(count), one)
    raise V.bad_type("gpus", "a GPU name, a total in bytes, a list or a {physical_id: gpu} mapping", gpus)


def assign_utilizations(
    stages: Sequence[StageNeed | Mapping[str, Any]],
    gpus: GpusArg,
    num_gpus: int | None = None,
    max_device_utilization: float = 0.95,
    step: float = 0.01,
) -> UtilizationAssignment:
    """Choose ``gpu_memory_utilization`` (and devices for stages without) for stages sharing
    GPUs: every stage gets its need, and the room left goes, ``step`` at a time, to the stage
    whose KV cache is the smallest multiple of its need.

    Parameters
    ----------
    stages
        :class:`StageNeed` objects or dicts with the same keys.
    gpus
        The GPUs: a list or ``{physical_id: gpu}`` of catalog names / totals in bytes, or one
        name / total for ``num_gpus`` devices (default: as many as the stages reference).
    max_device_utilization
        The most one device may carry in total (default 0.95: the docs advise a buffer).
    step
        Granularity of the utilizations handed out.

    Returns
    -------
    UtilizationAssignment
        ``feasible`` False names ``unsatisfied_stage_id`` and ``shortfall_bytes``.
    """
    needs = [_need(s, i) for i, s in enumerate(V.items(stages, "stages", max_items=L.MAX_STAGES))]
    if num_gpus is None:
        used = [d for s in needs for d in (s.devices or [])]
        num_gpus = max(used) + 1 if used else max(
            s.tensor_parallel_size * s.pipeline_parallel_size for s in needs) if needs else 0
    by_id = _assignment_gpus(gpus, V.integer(num_gpus, "num_gpus", low=0, high=L.MAX_DEVICE_ID))
    devices = [gpu_info(i, g) for i, g in by_id.items()]
    reference = _reference_gpu(by_id)
    r = _C.assign_utilizations(
        [_demand(s, i, reference) for i, s in enumerate(needs)],
        devices,
        int(_C.utilization_to_ppm(V.fraction(max_device_utilization, "max_device_utilization"))),
        int(_C.utilization_to_ppm(V.number(step, "step", low=1e-6, high=1.0))),
    )
    # An infeasible assignment lists only the stages placed before the one that failed, so rows
    # are matched to their inputs by stage id, not by position.
    need_by_id = {int(n.stage_id): n for n in needs}
    return UtilizationAssignment(
        feasible=bool(r.feasible),
        stages=[
            StageAssignmentRow(
                stage_id=s.stage_id,
                devices=list(s.devices),
                tensor_parallel_size=int(need.tensor_parallel_size),
                pipeline_parallel_size=int(need.pipeline_parallel_size),
                gpu_memory_utilization=s.utilization_text,
                min_gpu_memory_utilization=_C.format_utilization_ppm(s.min_utilization_ppm),
                requested_bytes=s.requested_bytes,
                kv_bytes=s.kv_bytes,
                kv_bytes_needed=s.kv_bytes_needed,
                kv_headroom=float(s.kv_headroom),
            )
            for s in r.stages
            for need in (need_by_id[s.stage_id],)
        ],
        devices=[
            {"physical_id": d.physical_id, "name": d.name, "total_bytes": d.total_bytes,
             "utilization": d.utilization_text, "stage_ids": list(d.stage_ids)}
            for d in r.devices
        ],
        unsatisfied_stage_id=None if r.unsatisfied_stage_id < 0 else int(r.unsatisfied_stage_id),
        unsatisfied_device=None if r.unsatisfied_device < 0 else int(r.unsatisfied_device),
        shortfall_bytes=int(r.shortfall_bytes),
        message=str(r.message),
    )
