"""Reading a vLLM-Omni stage config (the old ``stage_args:`` list or the newer top-level
``stages:`` list) from YAML / JSON into the core's parsed form."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from .. import _C
from .devices import VisibleArg, visible_list

StageSource = Union[str, "os.PathLike[str]", Mapping[str, Any], "StageConfig"]


def bundled_stage_examples() -> list[Path]:
    """The example stage configs shipped with the package (``examples/stages/*.yaml``)."""
    folder = Path(__file__).resolve().parent.parent / "examples" / "stages"
    return sorted(folder.glob("*.yaml"))



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
            self._json_text, visible_list(cuda_visible_devices), int(num_visible_devices)
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
    parsed = _C.parse_stage_config(text, visible_list(cuda_visible_devices), int(num_visible_devices))
    return StageConfig(parsed, text, name)
