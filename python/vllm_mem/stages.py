"""Several vLLM engines (vLLM-Omni stages) on shared GPUs.

Read a vLLM-Omni stage config (the old ``stage_args:`` list or the newer top-level ``stages:``
list), check per physical GPU that the resident stages' ``gpu_memory_utilization`` sum to at
most 1.0, predict vLLM's start-up check ("Free memory on device ... is less than desired GPU
memory utilization") stage by stage, and get the fixes made concrete for the config. The
memory-imbalance check across ranks (SGLang's) lives here too.

Everything is computed in C++ (``csrc/core/include/vllm_mem/stages/stage_config.h``, ``stage_check.h``,
``memory_imbalance.h``); this module loads YAML / JSON and shapes the results.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Union

from . import _C

__all__ = [
    "StageConfig",
    "StageDeviceRow",
    "StageStartup",
    "StageCheck",
    "MemoryImbalance",
    "load_stage_config",
    "check_stages",
    "check_memory_imbalance",
    "bundled_stage_examples",
    "StageNeed",
    "StageAssignmentRow",
    "UtilizationAssignment",
    "assign_utilizations",
    "RankPlanRow",
    "RankPlans",
    "plan_ranks",
]

StageSource = Union[str, "os.PathLike[str]", Mapping[str, Any], "StageConfig"]
GpuSpec = Union[str, int]
GpusArg = Union[None, GpuSpec, Sequence[GpuSpec], Mapping[int, GpuSpec]]
FreeArg = Union[None, int, Sequence[int], Mapping[int, int]]
VisibleArg = Union[None, str, Sequence[int]]


def bundled_stage_examples() -> list[Path]:
    """The example stage configs shipped with the package (``examples/stages/*.yaml``)."""
    folder = Path(__file__).resolve().parent / "examples" / "stages"
    return sorted(folder.glob("*.yaml"))


def _visible_list(cuda_visible_devices: VisibleArg) -> list[int]:
    if cuda_visible_devices is None:
        return []
    if isinstance(cuda_visible_devices, str):
        return list(_C.parse_cuda_visible_devices(cuda_visible_devices))
    return [int(x) for x in cuda_visible_devices]


def _read_document(source: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[Any, str]:
    """(parsed document, a name for messages). YAML through PyYAML; JSON is YAML too."""
    if isinstance(source, Mapping):
        return dict(source), "<dict>"
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            "stage config: expected a path to a YAML/JSON file or a dict, got "
            f"{type(source).__name__}"
        )
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"stage config: no such file: {path}")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text), str(path)
    import yaml  # PyYAML, a dependency of the package

    try:
        return yaml.safe_load(text), str(path)
    except yaml.YAMLError as exc:
        raise ValueError(f"stage config {path}: not valid YAML: {exc}") from None


class StageConfig:
    """A vLLM-Omni stage config: the document and its stages as vLLM-Omni resolves them.

    Build it with :func:`load_stage_config`. ``stages`` are in list (start) order; each has
    ``stage_id``, ``physical_devices``, ``resident_devices`` (the first
    ``tensor_parallel_size x pipeline_parallel_size`` devices, which vLLM uses),
    ``gpu_memory_utilization`` and ``utilization_text`` (as written), ``tensor_parallel_size``...
    """

    __slots__ = ("_set", "_json_text", "name")

    def __init__(self, parsed: _C.StageConfigSet, json_text: str, name: str = "") -> None:
        self._set = parsed
        self._json_text = json_text
        self.name = name

    @property
    def format(self) -> str:
        """``"stage_args"`` (old schema) or ``"stages"`` (current)."""
        return str(self._set.format)

    @property
    def stages(self) -> list[_C.StageConfig]:
        return list(self._set.stages)

    @property
    def cuda_visible_devices(self) -> list[int]:
        return list(self._set.cuda_visible_devices)

    @property
    def notes(self) -> list[str]:
        return list(self._set.notes)

    def reparsed(self, cuda_visible_devices: VisibleArg, num_visible_devices: int = 0) -> StageConfig:
        """The same document read under another CUDA_VISIBLE_DEVICES."""
        parsed = _C.parse_stage_config(
            self._json_text, _visible_list(cuda_visible_devices), int(num_visible_devices)
        )
        return StageConfig(parsed, self._json_text, self.name)

    def __repr__(self) -> str:
        parts = [
            f"{s.stage_id}@{','.join(map(str, s.resident_devices)) or 'cpu'}:{s.utilization_text}"
            for s in self._set.stages
        ]
        return f"StageConfig({self.name or self.format!r}: {' '.join(parts)})"


def load_stage_config(
    source: StageSource,
    cuda_visible_devices: VisibleArg = None,
    num_visible_devices: int = 0,
) -> StageConfig:
    """Read a vLLM-Omni stage config.

    Parameters
    ----------
    source
        A YAML or JSON file path, a dict (as ``yaml.safe_load`` gives), or a
        :class:`StageConfig` (re-read under the given visibility).
    cuda_visible_devices
        ``CUDA_VISIBLE_DEVICES`` of the process that launches the stages (``"4,5"`` or
        ``[4, 5]``): stage device indices are logical indices into it. ``None``: unset, so
        indices are physical ids. The environment is never read implicitly.
    num_visible_devices
        When > 0, device indices at or above it are rejected.

    Raises
    ------
    ValueError
        Naming the stage and field for every malformed entry (duplicate stage ids, device
        outside the visible set, fewer devices than TP x PP, utilization outside (0, 1], ...).
    """
    if isinstance(source, StageConfig):
        return source.reparsed(cuda_visible_devices, num_visible_devices)
    document, name = _read_document(source)
    if not isinstance(document, Mapping):
        kind = "nothing" if document is None else type(document).__name__
        raise ValueError(
            f"top level: a stage config must be a mapping with a stages: (or stage_args:) list; "
            f"{name} holds {kind}"
        )
    try:
        text = json.dumps(document, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"stage config {name}: holds values that are not plain data: {exc}") from None
    parsed = _C.parse_stage_config(text, _visible_list(cuda_visible_devices), int(num_visible_devices))
    return StageConfig(parsed, text, name)


# --- results ---------------------------------------------------------------------------------


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

    def _repr_html_(self) -> str:
        status = "OK" if self.ok else "DOES NOT FIT"
        rows = []
        for d in self.devices:
            style = ' style="color:#b00"' if d.over_committed else ""
            stages = ", ".join(f"stage {s['stage_id']}: {s['utilization']}" for s in d.stages)
            rows.append(
                f"<tr{style}><td>GPU {d.physical_id}</td><td>{html.escape(d.name)}</td>"
                f"<td>{html.escape(stages)}</td><td>{html.escape(d.utilization)}</td>"
                f"<td>{_C.format_gib(d.requested_bytes)} / {_C.format_gib(d.total_bytes)} GiB</td>"
                f"<td>{html.escape(d.headroom)}</td></tr>"
            )
        items = "".join(
            f"<li>{html.escape(line)}</li>" for line in [*self.problems, *self.suggestions]
        )
        return (
            f"<p><b>vLLM-Omni stages ({self.format}): {status}</b></p>"
            "<table><tr><th>device</th><th>GPU</th><th>stages</th><th>sum</th>"
            "<th>requested / total</th><th>headroom</th></tr>" + "".join(rows) + "</table>"
            + (f"<ul>{items}</ul>" if items else "")
        )


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


def _gpu_info(physical_id: int, gpu: GpuSpec, free: int = -1) -> _C.DeviceMemoryInfo:
    if isinstance(gpu, bool) or not isinstance(gpu, (str, int)):
        raise TypeError(f"gpus: a GPU is a catalog name or a total in bytes, got {gpu!r}")
    if isinstance(gpu, str):
        return _C.DeviceMemoryInfo(physical_id, gpu, 0, free)
    return _C.DeviceMemoryInfo(physical_id, "", int(gpu), free)


def _live_devices(visible: list[int]) -> list[_C.DeviceMemoryInfo]:
    """Per visible device: a fresh snapshot's total and free, keyed by physical id."""
    count = int(_C.device_count())
    if count <= 0:
        raise ValueError(
            "gpus: no GPU is visible for a live check; to check offline pass gpus='H100-80GB' "
            "or a total in bytes (CLI: --gpu H100-80GB)"
        )
    out = []
    for index in range(count):
        snap = _C.measure_snapshot(index)
        physical = visible[index] if index < len(visible) else index
        out.append(
            _C.DeviceMemoryInfo(
                physical, str(_C.active_device_name()), int(snap.total_memory), int(snap.free_memory)
            )
        )
    return out


def check_stages(
    config: StageSource,
    gpus: GpusArg = None,
    free_memory_bytes: FreeArg = None,
    cuda_visible_devices: VisibleArg = None,
    reserve_bytes: int = 0,
    models: Mapping[int, Any] | None = None,
    max_model_len: None | int | Mapping[int, int] = None,
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
        stage's ``max_model_len``, else the model's limit.

    Returns
    -------
    StageCheck
        Per-device rows (sum exactly as written: ``0.6 + 0.3`` is ``"0.9"``), the start-up
        prediction, problems with their exact reasons, and concrete suggestions.
    """
    visible = _visible_list(cuda_visible_devices)
    devices: list[_C.DeviceMemoryInfo] = []
    default = _C.DeviceMemoryInfo(0, "", 0, -1)
    live = gpus is None
    frees: dict[int, int] = {}
    common_free = -1
    if isinstance(free_memory_bytes, Mapping):
        frees = {int(k): int(v) for k, v in free_memory_bytes.items()}
    elif isinstance(free_memory_bytes, Sequence):
        frees = {i: int(v) for i, v in enumerate(free_memory_bytes)}
    elif free_memory_bytes is not None:
        common_free = int(free_memory_bytes)

    if live:
        devices = _live_devices(visible)
    elif isinstance(gpus, (str, int)):
        default = _gpu_info(0, gpus, common_free)
        devices = [_gpu_info(i, gpus, f) for i, f in frees.items()]
    elif isinstance(gpus, Mapping):
        devices = [_gpu_info(int(i), g, frees.get(int(i), common_free)) for i, g in gpus.items()]
    elif isinstance(gpus, (list, tuple)):
        devices = [_gpu_info(i, g, frees.get(i, common_free)) for i, g in enumerate(gpus)]
    else:
        raise TypeError(f"gpus: expected a GPU name, a total in bytes, a list or a mapping; got {gpus!r}")

    num_visible = 0
    if not visible and (live or isinstance(gpus, (list, tuple))):
        num_visible = len(devices)  # indices beyond the GPUs there are cannot be valid
    parsed = load_stage_config(config, visible or None, num_visible)
    from .model_spec import ModelSpec

    planned = []
    for stage_id, model in (models or {}).items():
        spec = model if isinstance(model, ModelSpec) else ModelSpec.from_hf_config(model)
        length = max_model_len.get(stage_id, 0) if isinstance(max_model_len, Mapping) else (max_model_len or 0)
        planned.append((int(stage_id), spec._spec, spec.name, int(length)))
    result, plans = _C.check_stages_with_plans(parsed._set, devices, default, int(reserve_bytes), live, planned)
    return StageCheck(
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
        notes=list(result.notes),
        plans=[
            {k: getattr(p, k) for k in (
                "stage_id", "model", "physical_id", "total_bytes", "free_bytes", "max_model_len", "fits",
                "failure_phase", "failure_message", "shortfall_bytes", "requested_bytes", "weights_bytes",
                "non_kv_cache_bytes", "available_kv_cache_bytes", "num_blocks", "num_tokens",
                "max_concurrency", "line")}
            for p in plans
        ],
        report=result.report(),
    )


# --- ranks -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryImbalance:
    """SGLang's imbalance check over ranks: warn when the least free memory is below
    ``ratio`` x a rank's free memory."""

    imbalanced: bool
    ratio: float
    free_bytes_per_rank: list[int]
    min_rank: int
    max_rank: int
    warning_ranks: list[int]
    lost_bytes: int
    message: str

    def __str__(self) -> str:
        return self.message or (
            f"memory balanced over {len(self.free_bytes_per_rank)} ranks "
            f"(min {_C.format_gib(min(self.free_bytes_per_rank))} GiB, max "
            f"{_C.format_gib(max(self.free_bytes_per_rank))} GiB, ratio {self.ratio})"
        )


def check_memory_imbalance(free_bytes_per_rank: Sequence[int], ratio: float = 0.9) -> MemoryImbalance:
    """SGLang-style imbalance check over the free memory of each rank (index = rank).

    vLLM sizes every worker by the tightest one (the minimum block count), so one GPU that
    another process sits on shrinks the whole engine; vLLM does not warn, SGLang does.
    """
    r = _C.check_memory_imbalance([int(x) for x in free_bytes_per_rank], float(ratio))
    return MemoryImbalance(
        imbalanced=bool(r.imbalanced),
        ratio=float(r.ratio),
        free_bytes_per_rank=list(r.free_bytes_per_rank),
        min_rank=int(r.min_rank),
        max_rank=int(r.max_rank),
        warning_ranks=list(r.warning_ranks),
        lost_bytes=int(r.lost_bytes),
        message=str(r.message),
    )


# --- utilization assignment ------------------------------------------------------------------


@dataclass(frozen=True)
class StageNeed:
    """What one stage (one vLLM engine) needs, per worker GPU.

    Give either the bytes directly (``fixed_bytes``: weights + activation + non-torch +
    CUDA-graph memory; ``kv_bytes_needed``: KV cache for the required concurrency), or a
    ``model`` with ``max_model_len`` and ``concurrency`` for the start-up planner to size.
    ``devices``: fixed physical GPUs (``tensor_parallel_size x pipeline_parallel_size`` of
    them); ``None``: let :func:`assign_utilizations` place the stage.
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


_PLAN_DEFAULTS: dict[str, Any] = {
    "max_num_seqs": 256,
    "max_num_batched_tokens": 8192,
    "dtype": "auto",
    "quantization": "",
    "kv_cache_dtype": "auto",
    "block_size": 0,
    "enforce_eager": False,
}


def _demand(need: StageNeed, reference_total_bytes: int) -> _C.StageDemand:
    world = int(need.tensor_parallel_size) * int(need.pipeline_parallel_size)
    devices = [] if need.devices is None else [int(d) for d in need.devices]
    if need.fixed_bytes is not None and need.kv_bytes_needed is not None:
        return _C.StageDemand(int(need.stage_id), world, devices, int(need.fixed_bytes), int(need.kv_bytes_needed))
    if need.model is None:
        raise ValueError(
            f"stage {need.stage_id}: give either fixed_bytes and kv_bytes_needed, or a model with "
            "max_model_len and concurrency"
        )
    from .model_spec import ModelSpec

    unknown = set(need.plan_options) - set(_PLAN_DEFAULTS)
    if unknown:
        raise ValueError(
            f"stage {need.stage_id} plan_options: unknown {sorted(unknown)}; allowed: {sorted(_PLAN_DEFAULTS)}"
        )
    opts = {**_PLAN_DEFAULTS, **need.plan_options}
    opts["quantization"] = opts["quantization"] or ""
    opts["block_size"] = opts["block_size"] or 0
    spec = need.model if isinstance(need.model, ModelSpec) else ModelSpec.from_hf_config(need.model)
    return _C.stage_demand_for(
        spec._spec, int(need.stage_id), devices, float(need.concurrency), int(reference_total_bytes),
        int(need.max_model_len or 0), int(need.tensor_parallel_size), int(need.pipeline_parallel_size),
        int(opts["max_num_seqs"]), int(opts["max_num_batched_tokens"]), str(opts["dtype"]),
        str(opts["quantization"]), str(opts["kv_cache_dtype"]), int(opts["block_size"]),
        bool(opts["enforce_eager"]),
    )


def _assignment_devices(gpus: GpusArg, count: int) -> list[_C.DeviceMemoryInfo]:
    if isinstance(gpus, Mapping):
        return [_gpu_info(int(i), g) for i, g in gpus.items()]
    if isinstance(gpus, (list, tuple)):
        return [_gpu_info(i, g) for i, g in enumerate(gpus)]
    if isinstance(gpus, (str, int)):
        return [_gpu_info(i, gpus) for i in range(count)]
    raise TypeError(f"gpus: expected a GPU name, a total in bytes, a list or a mapping; got {gpus!r}")


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
    needs = [s if isinstance(s, StageNeed) else StageNeed(**dict(s)) for s in stages]
    if num_gpus is None:
        used = [d for s in needs for d in (s.devices or [])]
        num_gpus = max(used) + 1 if used else max(
            int(s.tensor_parallel_size) * int(s.pipeline_parallel_size) for s in needs) if needs else 0
    devices = _assignment_devices(gpus, int(num_gpus))
    # Model-sized stages are sized on the largest GPU given; their fixed and KV bytes do not
    # depend on which device they land on.
    reference = max(int(_C.device_total_bytes(d)) for d in devices) if devices else 0
    r = _C.assign_utilizations(
        [_demand(s, reference) for s in needs],
        devices,
        int(_C.utilization_to_ppm(float(max_device_utilization))),
        int(_C.utilization_to_ppm(float(step))),
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


# --- ranks of one engine ---------------------------------------------------------------------


@dataclass(frozen=True)
class RankPlanRow:
    """One worker of an engine under TP x PP."""

    rank: int
    tp_rank: int
    pp_rank: int
    layers: tuple[int, int]
    holds_embedding: bool
    holds_lm_head: bool
    total_bytes: int
    budget_bytes: int
    weights_bytes: int
    overhead_bytes: int
    available_kv_bytes: int
    num_blocks: int
    extra_blocks: int
    fails_startup: bool


@dataclass(frozen=True)
class RankPlans:
    """Per-worker plans of one engine; ``num_blocks`` is vLLM's min over workers."""

    fits: bool
    workers: list[RankPlanRow]
    tightest_rank: int
    tightest_reason: str
    num_blocks: int
    num_tokens: int
    max_concurrency: float
    failure_message: str

    def __str__(self) -> str:
        head = (f"engine KV: {self.num_blocks} blocks (min over workers), {self.num_tokens} tokens, "
                f"max concurrency {self.max_concurrency:.2f}x; tightest: rank {self.tightest_rank}, "
                f"{self.tightest_reason}") if self.fits else f"does not fit: {self.failure_message}"
        rows = [
            f"  rank {w.rank} (tp {w.tp_rank}, pp {w.pp_rank}, layers {w.layers[0]}-{w.layers[1] - 1}"
            f"{', embedding' if w.holds_embedding else ''}{', LM head' if w.holds_lm_head else ''}): "
            f"budget {_C.format_gib(w.budget_bytes)} GiB, weights {_C.format_gib(w.weights_bytes)} GiB, "
            f"KV {_C.format_gib(w.available_kv_bytes)} GiB -> {w.num_blocks} blocks"
            for w in self.workers
        ]
        return "\n".join([head, *rows])


def plan_ranks(
    model: Any,
    gpus: GpuSpec | Sequence[GpuSpec],
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
    overhead_bytes: int | Sequence[int] = 0,
    free_memory_bytes: Sequence[int] | None = None,
    dtype: str = "auto",
    quantization: str | None = None,
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
) -> RankPlans:
    """Per-worker plans of one engine under TP x PP, and its KV capacity as vLLM computes it.

    Parameters
    ----------
    model
        A :class:`~vllm_mem.ModelSpec`, a config path / dict, or a bundled model name.
    gpus
        One GPU (name or total bytes) for every worker, or one per worker in rank order
        (``rank = pp_rank * tp + tp_rank``).
    overhead_bytes
        Activation + non-torch + CUDA-graph bytes per worker: one for all, or one per
        pipeline rank (the planner's per-rank figures).
    free_memory_bytes
        Optional free memory per worker (or one for all) at start-up.
    """
    from .model_spec import ModelSpec

    spec = model if isinstance(model, ModelSpec) else ModelSpec.from_hf_config(model)
    gpu_list: list[GpuSpec] = [gpus] if isinstance(gpus, (str, int)) else list(gpus)
    totals = [int(_C.device_total_bytes(_gpu_info(i, g))) for i, g in enumerate(gpu_list)]
    kv = _C.KvCacheOptions()
    kv.max_model_len = int(max_model_len if max_model_len is not None else spec.max_position_embeddings)
    kv.block_size = 0 if block_size is None else int(block_size)
    kv.kv_cache_dtype = kv_cache_dtype
    kv.model_dtype = dtype
    overheads = [int(overhead_bytes)] if isinstance(overhead_bytes, int) else [int(x) for x in overhead_bytes]
    frees = [] if free_memory_bytes is None else (
        [int(free_memory_bytes)] if isinstance(free_memory_bytes, int) else [int(x) for x in free_memory_bytes])
    r = _C.compute_rank_layout(spec._spec, totals, float(gpu_memory_utilization), frees, overheads, dtype,
                               quantization or "", int(tensor_parallel_size), int(pipeline_parallel_size), kv)
    return RankPlans(
        fits=bool(r.fits),
        workers=[
            RankPlanRow(w.rank, w.tp_rank, w.pp_rank, (w.first_layer, w.end_layer), w.holds_embedding,
                        w.holds_lm_head, w.total_bytes, w.budget_bytes, w.weights_bytes, w.overhead_bytes,
                        w.available_kv_bytes, w.num_blocks, w.extra_blocks, w.fails_startup)
            for w in r.workers
        ],
        tightest_rank=int(r.tightest_rank),
        tightest_reason=str(r.tightest_reason),
        num_blocks=int(r.kv_cache.num_blocks) if r.fits else 0,
        num_tokens=int(r.kv_cache.num_tokens) if r.fits else 0,
        max_concurrency=float(r.kv_cache.max_concurrency) if r.fits else 0.0,
        failure_message=str(r.failure_message),
    )
