"""Reading a vLLM-Omni stage config (the old ``stage_args:`` list or the newer top-level
``stages:`` list) from YAML / JSON into the core's parsed form."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from .. import _C
from .. import _limits as L
from .. import _validate as V
from .devices import VisibleArg, device_list_text, visible_list
from .engine_settings import StageSettings, read_stage_settings
from .yaml_reader import load_json, load_yaml

StageSource = Union[str, "os.PathLike[str]", Mapping[str, Any], "StageConfig"]


def bundled_stage_examples() -> list[Path]:
    """The example stage configs shipped with the package (``examples/stages/*.yaml``); each is
    addressable by its file name or stem (``"qwen3_omni_moe.stages.yaml"``,
    ``"qwen3_omni_moe.stages"``), and the current-schema variant ``<model>.stages.yaml`` by the
    model's name alone (``"qwen3_omni_moe"``, ``"qwen3_omni_moe.yaml"``)."""
    folder = Path(__file__).resolve().parent.parent / "examples" / "stages"
    return sorted(folder.glob("*.yaml"))


def example_names(path: Path) -> list[str]:
    """The names a bundled example answers to: its stem first, then its file name, and for the
    current-schema variant ``<model>.stages.yaml`` the model's name alone (and ``<model>.yaml``,
    as the README writes it)."""
    stem = path.name.removesuffix(".yaml")
    names = [stem, path.name]
    if stem.endswith(".stages"):
        model = stem.removesuffix(".stages")
        names += [model, model + ".yaml"]
    return names


def bundled_stage_example(name: str) -> Path | None:
    """The bundled example ``name`` refers to (see :func:`example_names`), or None."""
    return next((path for path in bundled_stage_examples() if name in example_names(path)), None)


def _read_document(source: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[Any, str]:
    """(parsed document, a name for messages): a dict as given, a ``.json`` file as JSON, any
    other file through the bounded YAML reader, a bare name as a bundled example."""
    if isinstance(source, Mapping):
        return source, "<dict>"
    if not isinstance(source, (str, os.PathLike)):
        raise V.bad_type("config", "a path to a YAML/JSON stage file, a bundled example name or a dict", source)
    path = V.path_of(source, "config")
    if V.file_problem(path) == "no such file" and isinstance(source, str):
        bundled = bundled_stage_example(source)
        if bundled is None:
            V.fail("config", f"no such file: {V.show(source)}, nor a bundled example "
                             "(see bundled_stage_examples() or `vllm-mem stages --list-examples`)")
        path = bundled
    text = V.read_text(path, "config", L.MAX_STAGE_FILE_BYTES)
    load = load_json if path.suffix.lower() == ".json" else load_yaml
    return load(text, f"stage config {V.show(str(path))}"), str(path)


def _stage_list_bounds(document: Mapping[str, Any]) -> None:
    """Stage count and device lists checked on the document, in one pass over the stages: the
    core walks stages x devices, so both are bounded before it runs."""
    for key in ("stages", "stage_args"):
        stages = document.get(key)
        if not isinstance(stages, list):
            continue
        if len(stages) > L.MAX_STAGES:
            raise V.bad_value(key, f"a list of at most {L.MAX_STAGES} stages (vLLM-Omni pipelines have 2-4)",
                              stages)
        for i, stage in enumerate(stages):
            if not isinstance(stage, Mapping):
                continue
            runtime = stage.get("runtime")
            for where, holder in (("devices", stage), ("runtime.devices", runtime)):
                if isinstance(holder, Mapping) and isinstance(holder.get("devices"), str):
                    device_list_text(holder["devices"], f"{key}[{i}] {where}")


#: vLLM engine arguments a stage's plan takes as plan() takes them (stages/engine_settings.py):
#: every row of the settings table that mirrors a vLLM flag, vLLM's --speculative-config, and the
#: keys vLLM's own command line reads into plan() keywords (vllm_args: --compilation-config's
#: CUDA-graph keys, --enable-chunked-prefill at its default only).
ENGINE_SETTING_KEYS = (*(row["name"] for row in _C.plan_settings() if row["flag"]), "speculative_config",
                       "compilation_config", "enable_chunked_prefill")
#: Keys read per stage: engine_args.<key>, then the flat <key> (docs/stages.md). The core's stage
#: reader reads the utilization, TP/PP, enforce_eager, the scheduler sizes and max_model_len for
#: the per-GPU check; model is planned (check_stages); model_stage and model_arch are shown only.
APPLIED_STAGE_KEYS = (*ENGINE_SETTING_KEYS, "model", "model_stage", "model_arch")
#: A stage's own structure (runtime.devices, runtime.max_batch_size are read).
_STRUCTURE_KEYS = ("stage_id", "engine_args", "runtime", "devices")
_RUNTIME_KEYS = ("devices", "max_batch_size", "process")
#: vLLM-Omni / vLLM keys that do not change a stage's start-up GPU memory: accepted and not read.
NO_MEMORY_STAGE_KEYS = (
    "stage_type", "execution_type", "worker_type", "engine_input_source", "custom_process_input_func",
    "custom_process_next_stage_input_func", "final_output", "final_output_type", "is_comprehension",
    "default_sampling_params", "input_connectors", "output_connectors", "trust_remote_code",
    "async_scheduling", "engine_output_type", "worker_cls", "scheduler_cls",
    "hf_config_name", "tokenizer", "tokenizer_subdir", "model_subdir", "seed", "distributed_executor_backend",
    "disable_log_stats", "revision", "tokenizer_mode", "skip_tokenizer_init",
    "swap_space",  # host memory for swapped blocks (vllm_args lists --swap-space as no effect)
)
#: vLLM engine arguments that change memory and that no plan setting models: accepted with a note
#: saying the stage's plan is made without them (a key that becomes a settings row leaves this
#: list by itself: it is then applied).
UNMODELLED_STAGE_KEYS = tuple(key for key in (
    "mm_processor_kwargs",  # the multimodal processor's sizes (the dummy item of the profile run)
    "hf_overrides",  # config overrides: they can change any layer size
) if key not in APPLIED_STAGE_KEYS)
_TOP_LEVEL_KEYS = ("stages", "stage_args", "platforms", "base_config", "async_chunk", "connectors", "runtime")


def _unknown_key(field: str, key: Any, known: tuple[str, ...]) -> None:
    import difflib

    close = difflib.get_close_matches(str(key), known, n=1) if isinstance(key, str) else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    V.fail(field, f"unknown key{hint}; a stage config's keys are listed in docs/stages.md, and a key vllm_mem "
                  "does not know is refused rather than ignored")


def check_stage_keys(document: Mapping[str, Any]) -> list[str]:
    """Refuse a key no stage config has (a misspelt knob would otherwise be silently ignored,
    leaving vLLM-Omni's default in its place); return a note for each memory-changing vLLM
    argument no plan setting models."""
    notes: list[str] = []
    known = (*APPLIED_STAGE_KEYS, *_STRUCTURE_KEYS, *NO_MEMORY_STAGE_KEYS, *UNMODELLED_STAGE_KEYS)
    if "stages" not in document and "stage_args" not in document:
        return notes  # not a stage config at all: the core says what is missing
    for key in document:
        if key not in _TOP_LEVEL_KEYS:
            _unknown_key(f"top level {V.show(key)}", key, _TOP_LEVEL_KEYS)
    for list_key in ("stages", "stage_args"):
        stages = document.get(list_key)
        if not isinstance(stages, list):
            continue
        for i, stage in enumerate(stages):
            if not isinstance(stage, Mapping):
                continue  # the core names the malformed entry
            label = f"{list_key}[{i}] (stage {stage.get('stage_id', '?')})"
            holders: list[tuple[str, Any, tuple[str, ...]]] = [("", stage, known)]
            if isinstance(stage.get("engine_args"), Mapping):
                engine_known = (*APPLIED_STAGE_KEYS, *NO_MEMORY_STAGE_KEYS, *UNMODELLED_STAGE_KEYS)
                holders.append(("engine_args.", stage["engine_args"], engine_known))
            if isinstance(stage.get("runtime"), Mapping):
                holders.append(("runtime.", stage["runtime"], _RUNTIME_KEYS))
            for prefix, holder, allowed in holders:
                for key in holder:
                    if key not in allowed:
                        _unknown_key(f"{label} {prefix}{V.clip(str(key), L.MAX_ECHOED_CHARS)}", key, allowed)
                    elif key in UNMODELLED_STAGE_KEYS:
                        notes.append(f"{label} {prefix}{key} changes the stage's memory but no plan setting models "
                                     "it: the stage's plan is made without it (its budget is its "
                                     "gpu_memory_utilization either way)")
    return notes


class StageConfig:
    """A vLLM-Omni stage config: the document and its stages as vLLM-Omni resolves them.

    Build it with :func:`load_stage_config`. ``stages`` are in list (start) order; each has
    ``stage_id``, ``physical_devices``, ``resident_devices`` (the first
    ``tensor_parallel_size x pipeline_parallel_size`` devices, which vLLM uses),
    ``gpu_memory_utilization`` and ``utilization_text`` (as written), ``tensor_parallel_size``...
    """

    __slots__ = ("_set", "_json_text", "name", "_key_notes", "_settings")

    def __init__(self, parsed: _C.StageConfigSet, json_text: str, name: str = "",
                 key_notes: list[str] | None = None, settings: dict[int, StageSettings] | None = None) -> None:
        self._set = parsed
        self._json_text = json_text
        self.name = name
        self._key_notes = list(key_notes or [])
        #: stage_id -> what its engine arguments give its plan (stages/engine_settings.py)
        self._settings = dict(settings or {})

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
        return [*self._set.notes, *self._key_notes]

    def reparsed(self, cuda_visible_devices: VisibleArg, num_visible_devices: int = 0) -> StageConfig:
        """The same document read under another CUDA_VISIBLE_DEVICES."""
        visible = visible_list(cuda_visible_devices)
        limit = V.integer(num_visible_devices, "num_visible_devices", low=0, high=L.MAX_DEVICE_ID)
        parsed = _C.parse_stage_config(self._json_text, visible, limit)
        return StageConfig(parsed, self._json_text, self.name, self._key_notes, self._settings)

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
        V.fail("top level", f"a stage config must be a mapping with a stages: (or stage_args:) list; "
                            f"{V.show(name)} holds {kind}")
    _stage_list_bounds(document)
    text = V.plain_json(document, "stage config", max_depth=L.MAX_STAGE_DEPTH, max_nodes=L.MAX_STAGE_NODES,
                        max_chars=L.MAX_STAGE_EXPANDED_CHARS,
                        content_error=TypeError if name == "<dict>" else ValueError)
    key_notes = check_stage_keys(document)  # after the document is known to be plain, bounded data
    visible = visible_list(cuda_visible_devices)
    limit = V.integer(num_visible_devices, "num_visible_devices", low=0, high=L.MAX_DEVICE_ID)
    parsed = _C.parse_stage_config(text, visible, limit)
    return StageConfig(parsed, text, name, key_notes, _stage_settings(document, parsed))


def _stage_settings(document: Mapping[str, Any], parsed: _C.StageConfigSet) -> dict[int, StageSettings]:
    """Each stage's engine arguments read as plan() reads them, after the core has read the
    stages (so its messages for the utilization, TP/PP and devices come first)."""
    entries = document.get("stages", document.get("stage_args"))
    return {stage.stage_id: read_stage_settings(entries[stage.list_index], f"{stage.source} (stage {stage.stage_id})",
                                                ENGINE_SETTING_KEYS)
            for stage in parsed.stages}
