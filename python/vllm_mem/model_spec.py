"""A model as the sizing code sees it, read from a Hugging Face ``config.json``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Union

from . import _C
from . import _limits as L
from . import _validate as V

__all__ = ["ModelSpec", "bundled_model_configs", "supported_model_types"]

ConfigSource = Union[str, "os.PathLike[str]", Mapping[str, Any]]

_BUNDLED_SUFFIX = ".json"


def _bundled_dir() -> Path:
    return Path(str(resources.files("vllm_mem") / "configs"))


def bundled_model_configs() -> list[str]:
    """Names of the model configs shipped with the package (Hugging Face ids)."""
    names = []
    for path in sorted(_bundled_dir().glob("*" + _BUNDLED_SUFFIX)):
        names.append(path.stem.replace("--", "/"))
    return names


def _bundled_path(name: str) -> Path | None:
    candidate = _bundled_dir() / (name.replace("/", "--") + _BUNDLED_SUFFIX)
    if candidate.is_file():
        return candidate
    # Case-insensitive match on the id or on its last part ("llama-3.1-8b-instruct").
    wanted = name.lower()
    for known in bundled_model_configs():
        if known.lower() == wanted or known.split("/")[-1].lower() == wanted:
            return _bundled_dir() / (known.replace("/", "--") + _BUNDLED_SUFFIX)
    return None


def _read_config_text(source: ConfigSource) -> tuple[str, str]:
    """Returns (json text, a name for messages). Every problem with the source is a
    ``ValueError``/``TypeError`` naming ``config``, checked before the text reaches the core."""
    if isinstance(source, Mapping):
        return V.plain_json(source, "config", max_depth=L.JSON_MAX_DEPTH, max_nodes=L.JSON_MAX_VALUES,
                            max_chars=L.JSON_MAX_BYTES), "<dict>"
    if not isinstance(source, (str, os.PathLike)):
        raise V.bad_type("config", "a path to config.json, a folder holding one, a bundled model name "
                                   "or a dict", source)
    path = V.path_of(source, "config")
    if V.file_problem(path) == "is a directory":
        path = path / "config.json"
        if V.file_problem(path) == "no such file":
            V.fail("config", f"no config.json in folder {V.show(str(source))}")
    if V.file_problem(path) in (None, "permission denied", "not a regular file"):
        return V.read_text(path, "config", L.MAX_CONFIG_FILE_BYTES), str(path)
    bundled = _bundled_path(str(source))
    if bundled is not None:
        return bundled.read_text(encoding="utf-8"), bundled.stem.replace("--", "/")
    V.fail("config", f"{V.show(str(source))} is neither a file, a folder holding config.json, nor a "
                     "bundled model (see bundled_model_configs() or `vllm-mem models`)")


def _weight_args(dtype: Any, quantization: Any, tensor_parallel_size: Any,
                 pipeline_parallel_size: Any) -> tuple[str, str | None, int, int]:
    return (V.dtype(dtype), V.optional_text(quantization, "quantization"),
            V.setting("tensor_parallel_size", tensor_parallel_size),
            V.setting("pipeline_parallel_size", pipeline_parallel_size))


class ModelSpec:
    """Dimensions, per-layer attention kinds, MLA, MoE and quantization of one model.

    Build it with :meth:`from_hf_config`. The object is a light handle on the C++ spec; every
    computation (weights, KV cache, plans) happens in C++.
    """

    __slots__ = ("_spec", "name")

    def __init__(self, spec: _C.ModelSpec, name: str = "") -> None:
        self._spec = spec
        self.name = name

    @classmethod
    def from_hf_config(cls, source: ConfigSource, *, allow_unknown: bool = False) -> ModelSpec:
        """Read a model from a ``config.json`` path, a folder holding one, a dict, or the name
        of a bundled config (see :func:`bundled_model_configs`).

        Only families with exact rules are read (:func:`supported_model_types`). A
        ``model_type`` without rules raises ``ValueError`` listing them, and one whose memory is
        known not to be modelled yet (hybrid Mamba / linear-attention models, Llama-4's shared
        expert, encoder-decoders) raises ``NotImplementedError`` saying what is missing: sized
        as a plain transformer, either would give a plausible, wrong number. With
        ``allow_unknown=True`` such a model is read as a generic transformer instead, and
        :attr:`generic_estimate_reason` (shown by every report) says why its figures are an
        estimate.

        Raises ``ValueError`` naming the field when a required field is missing or invalid.
        """
        allow = V.flag(allow_unknown, "allow_unknown")
        text, name = _read_config_text(source)
        return cls(_C.ModelSpec.from_json(text, allow), name)

    # --- how exact the figures are ---------------------------------------------------------
    @property
    def generic_estimate_reason(self) -> str:
        """Empty when the core has exact rules for this model; otherwise why every figure is a
        generic transformer estimate (the model was read with ``allow_unknown=True``)."""
        return str(self._spec.generic_estimate_reason)

    @property
    def has_exact_rules(self) -> bool:
        return not self._spec.generic_estimate_reason

    @property
    def caveats(self) -> list[str]:
        """What the figures leave out although the family is supported (a multimodal
        checkpoint's vision tower, for one)."""
        return list(self._spec.caveats)

    # --- dimensions ---------------------------------------------------------------------------
    @property
    def model_type(self) -> str:
        return self._spec.model_type

    @property
    def architectures(self) -> list[str]:
        return list(self._spec.architectures)

    @property
    def dtype(self) -> str:
        """Checkpoint dtype (``torch_dtype`` in config.json)."""
        return self._spec.dtype

    @property
    def num_layers(self) -> int:
        return self._spec.num_layers

    @property
    def hidden_size(self) -> int:
        return self._spec.hidden_size

    @property
    def num_attention_heads(self) -> int:
        return self._spec.num_attention_heads

    @property
    def num_kv_heads(self) -> int:
        """Total KV heads before tensor parallelism."""
        return self._spec.num_kv_heads

    @property
    def head_dim(self) -> int:
        return self._spec.head_dim

    @property
    def intermediate_size(self) -> int:
        return self._spec.intermediate_size

    @property
    def vocab_size(self) -> int:
        return self._spec.vocab_size

    @property
    def max_position_embeddings(self) -> int:
        return self._spec.max_position_embeddings

    @property
    def tie_word_embeddings(self) -> bool:
        return self._spec.tie_word_embeddings

    @property
    def mla(self) -> _C.MlaSpec | None:
        return self._spec.mla

    @property
    def moe(self) -> _C.MoeSpec | None:
        return self._spec.moe

    @property
    def quantization(self) -> _C.QuantizationSpec | None:
        return self._spec.quantization

    @property
    def layers(self) -> list[_C.LayerSpec]:
        return list(self._spec.layers)

    # --- weights ------------------------------------------------------------------------------
    def num_parameters(self) -> int:
        """Parameter count of the checkpoint (embeddings counted once when tied)."""
        return int(_C.num_parameters(self._spec))

    def weight_bytes(
        self,
        dtype: str = "auto",
        quantization: str | None = None,
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
    ) -> int:
        """Bytes of weights on the fullest GPU, as vLLM's "Model loading took X GiB" reports.

        ``dtype`` is vLLM's ``--dtype`` (``auto`` keeps the checkpoint dtype, fp32 served as
        bf16); ``quantization`` is vLLM's ``--quantization`` (``None`` uses the checkpoint's
        ``quantization_config``).
        """
        return int(_C.weight_bytes(self._spec, *_weight_args(dtype, quantization, tensor_parallel_size,
                                                             pipeline_parallel_size)))

    def weight_breakdown(
        self,
        dtype: str = "auto",
        quantization: str | None = None,
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
    ) -> dict[str, Any]:
        """Weights per component and per pipeline rank (bytes), for reports."""
        return dict(_C.weight_breakdown(self._spec, *_weight_args(dtype, quantization, tensor_parallel_size,
                                                                  pipeline_parallel_size)))

    def __repr__(self) -> str:
        extra = []
        if self.mla is not None:
            extra.append("MLA")
        if self.moe is not None:
            extra.append(f"MoE {self.moe.num_experts}x top-{self.moe.num_experts_per_token}")
        sliding = sum(1 for layer in self._spec.layers
                      if layer.attention == _C.AttentionKind.SLIDING_WINDOW)
        if sliding:
            extra.append(f"{sliding}/{self.num_layers} sliding-window layers")
        if not self.has_exact_rules:
            extra.append("GENERIC ESTIMATE")
        if self.caveats:
            extra.append(f"{len(self.caveats)} caveat{'s' if len(self.caveats) > 1 else ''}")
        tail = (", " + ", ".join(extra)) if extra else ""
        return (
            f"ModelSpec({self.name or self.model_type!r}: {self.num_layers} layers, hidden "
            f"{self.hidden_size}, {self.num_attention_heads} heads / {self.num_kv_heads} KV heads "
            f"x {self.head_dim}, vocab {self.vocab_size}, {self.dtype}{tail})"
        )

    def _repr_html_(self) -> str:
        from .display import model_spec_html  # imported on first display only

        return model_spec_html(self)


def supported_model_types() -> list[str]:
    """The ``config.json`` model_types with exact sizing rules (``csrc/core/model/model_families.json``)."""
    return list(_C.supported_model_types())
