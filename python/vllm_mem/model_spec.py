"""A model as the sizing code sees it, read from a Hugging Face ``config.json``."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from . import _C
from . import _limits as L
from . import _validate as V

__all__ = ["ModelSpec", "bundled_model_configs", "supported_model_types"]

if TYPE_CHECKING:
    from .hub import CheckpointWeights

ConfigSource = Union[str, "os.PathLike[str]", Mapping[str, Any]]

_BUNDLED_SUFFIX = ".json"


@functools.cache
def _bundled_dir() -> Path:
    # importlib.resources costs ~17 us a call; the package does not move while it runs.
    return Path(str(resources.files("vllm_mem") / "configs"))


@functools.cache
def _bundled_files() -> dict[str, Path]:
    """File stem (the id with '/' spelled '--') -> file of each bundled config, sorted, listed once
    (installed files)."""
    return {path.stem: path for path in sorted(_bundled_dir().glob("*" + _BUNDLED_SUFFIX))}


@functools.cache
def _bundled_by_lowercase() -> dict[str, Path]:
    """Lower-cased id and lower-cased last part -> file; the first id in sorted order wins, as
    the search it replaces did (an id holds a '/', a last part none, so the two never meet)."""
    index: dict[str, Path] = {}
    for stem, path in _bundled_files().items():
        known = stem.replace("--", "/")
        index.setdefault(known.lower(), path)
        index.setdefault(known.split("/")[-1].lower(), path)
    return index


def bundled_model_configs() -> list[str]:
    """Names of the model configs shipped with the package (Hugging Face ids)."""
    return [stem.replace("--", "/") for stem in _bundled_files()]


def _bundled_path(name: str) -> Path | None:
    """The bundled config named exactly ``name`` ('org/name' or its file's 'org--name'), else
    case-insensitively by id or by its last part ("llama-3.1-8b-instruct")."""
    found = _bundled_files().get(name.replace("/", "--"))
    return found if found is not None else _bundled_by_lowercase().get(name.lower())


def _read_config_text(source: ConfigSource) -> tuple[str, str]:
    """Returns (json text, a name for messages). Every problem with the source is a
    ``ValueError``/``TypeError`` naming ``config``, checked before the text reaches the core."""
    if isinstance(source, Mapping):
        return V.plain_json(source, "config", max_depth=L.JSON_MAX_DEPTH, max_nodes=L.JSON_MAX_VALUES,
                            max_chars=L.JSON_MAX_BYTES), "<dict>"
    if not isinstance(source, (str, os.PathLike)):
        raise V.bad_type("config", "a path to config.json, a folder holding one, a bundled model name "
                                   "or a dict", source)
    path = V.path_name(source, "config")  # a str: a Path costs more than the rest of the checks
    problem = V.file_problem(path)
    if problem == "is a directory":
        path = os.path.join(path, "config.json")
        problem = V.file_problem(path)
        if problem == "no such file":
            V.fail("config", f"no config.json in folder {V.show(str(source))}")
    if problem in (None, "permission denied", "not a regular file"):
        return V.read_text(path, "config", L.MAX_CONFIG_FILE_BYTES, checked=problem is None), path
    bundled = _bundled_path(path)
    if bundled is not None:
        return V.read_text(bundled, "config", L.MAX_CONFIG_FILE_BYTES), bundled.stem.replace("--", "/")
    from .hub import fetch_config, is_hub_id  # after paths and bundled names: a Hub id (org/name)

    if isinstance(source, str) and is_hub_id(source):
        hub = fetch_config(source, field="config")
        return V.read_text(hub.config_path, "config", L.MAX_CONFIG_FILE_BYTES), hub.repo_id
    V.fail("config", f"{V.show(str(source))} is neither a file, a folder holding config.json, a bundled "
                     "model (`vllm-mem models`), nor a Hugging Face Hub id (org/name)")


def _weight_args(dtype: Any, quantization: Any, tensor_parallel_size: Any,
                 pipeline_parallel_size: Any) -> tuple[str, str | None, int, int]:
    return (V.dtype(dtype), V.optional_text(quantization, "quantization"),
            V.setting("tensor_parallel_size", tensor_parallel_size),
            V.setting("pipeline_parallel_size", pipeline_parallel_size))


#: vLLM's MXFP4 MoE kernels (fused_moe/oracle/mxfp4.py select_mxfp4_moe_backend), which pad and
#: re-lay the expert weights differently (csrc/core/include/vllm_mem/model/weights.h
#: WeightOptions::mxfp4_backend; ``plan()`` picks the one vLLM picks on its GPU).
MXFP4_BACKENDS = ("triton", "marlin", "flashinfer_trtllm", "flashinfer_cutlass", "triton_rocm", "triton_rocm_gfx950")

#: vLLM's mixed-precision linear kernels for AWQ / GPTQ / compressed-tensors WNA16 linears
#: (choose_mp_linear_kernel), which keep different tensors after loading (WeightOptions::
#: mp_linear_kernel in csrc/core/include/vllm_mem/model/weights.h): "" counts the checkpoint's
#: layout; ``plan()`` picks the one vLLM picks on its GPU and release.
MP_LINEAR_KERNELS = ("", "marlin", "machete")


class ModelSpec:
    """Dimensions, per-layer attention kinds, MLA, MoE and quantization of one model.

    Build it with :meth:`from_hf_config`. The object is a light handle on the C++ spec; every
    computation (weights, KV cache, plans) happens in C++.
    """

    __slots__ = ("_checkpoint", "_sizing", "_spec", "name")

    def __init__(self, spec: _C.ModelSpec, name: str = "") -> None:
        self._spec = spec
        self.name = name
        # The KV layouts sizing calls reuse (one per block size, dtypes, TP, PP): the C++ spec
        # is read-only from Python, so they stay valid for the object's life (docs/performance.md).
        self._sizing = _C.SizingCache(spec)
        self._checkpoint: CheckpointWeights | None = None  # weights_source="headers" (vllm_mem.hub)

    @classmethod
    def from_hf_config(cls, source: ConfigSource, *, allow_unknown: bool = False,
                       weights_source: str = "config") -> ModelSpec:
        """Read a model from a ``config.json`` path, a folder holding one, a dict, the name
        of a bundled config (see :func:`bundled_model_configs`), or a Hugging Face Hub id
        (``org/name``, via :meth:`from_pretrained`'s defaults), tried in that order.

        Only families with exact rules are read (:func:`supported_model_types`). A
        ``model_type`` without rules raises ``ValueError`` listing them, and one whose memory is
        known not to be modelled yet (hybrid Mamba / linear-attention models, Llama-4's shared
        expert, encoder-decoders) raises ``NotImplementedError`` saying what is missing: sized
        as a plain transformer, either would give a plausible, wrong number. With
        ``allow_unknown=True`` such a model is read as a generic transformer instead, and
        :attr:`generic_estimate_reason` (shown by every report) says why its figures are an
        estimate.

        ``weights_source="headers"`` sums the weights from the checkpoint's safetensors headers
        (a local folder's shards, or a Hub id's over the network) instead of the config; see
        :attr:`checkpoint_weights`.

        Raises ``ValueError`` naming the field when a required field is missing or invalid.
        """
        allow = V.flag(allow_unknown, "allow_unknown")
        headers = _weights_source(weights_source)
        text, name = _read_config_text(source)
        spec = cls(_C.ModelSpec.from_json(text, allow), name)
        if headers:
            from .hub import checkpoint_weights, is_hub_id, local_checkpoint_weights

            if isinstance(source, Mapping):
                V.fail("weights_source", "'headers' needs a checkpoint folder or a Hub id, not a dict")
            path = V.path_of(source, "config")
            if V.file_problem(path) == "is a directory":
                spec._checkpoint = local_checkpoint_weights(path, spec.num_layers)
            elif V.file_problem(path) is None:
                spec._checkpoint = local_checkpoint_weights(path.parent, spec.num_layers)
            elif isinstance(source, str) and is_hub_id(source):  # a bundled id is the Hub's id too
                spec._checkpoint = checkpoint_weights(source, num_layers=spec.num_layers)
            else:
                V.fail("weights_source", f"'headers' needs a checkpoint folder or a Hub id (org/name); got "
                                         f"{V.show(str(source))}")
        return spec

    @classmethod
    def from_pretrained(cls, repo_id: str, revision: str | None = None, token: str | bool | None = None, *,
                        allow_unknown: bool = False, local_files_only: bool | None = None,
                        weights_source: str = "config") -> ModelSpec:
        """Read a model from the Hugging Face Hub by id (``"Qwen/Qwen3-Next-80B-A3B-Instruct"``)
        with ``huggingface_hub``: only ``config.json`` (and ``model.safetensors.index.json``) are
        fetched, into (or from) the usual cache (``HF_HUB_CACHE`` / ``HF_HOME``).

        ``revision`` pins a branch, tag or commit; ``token`` reads gated or private repos
        (default: ``HF_TOKEN`` or the token ``hf auth login`` saved); ``local_files_only``
        reads the cache only (default: ``HF_HUB_OFFLINE``). ``weights_source="headers"`` also
        reads every shard's safetensors header over the network (never the weights) and
        plans with those exact bytes (:attr:`checkpoint_weights`).

        Raises ``ValueError`` naming the repo and what to do: no such repo, a gated repo without
        a token, an unknown revision, or offline with nothing cached.
        """
        from .hub import checkpoint_weights, fetch_config

        allow = V.flag(allow_unknown, "allow_unknown")
        headers = _weights_source(weights_source)
        hub = fetch_config(repo_id, revision, token, local_files_only=local_files_only)
        text = V.read_text(hub.config_path, "config", L.MAX_CONFIG_FILE_BYTES)
        name = hub.repo_id if revision is None else f"{hub.repo_id}@{revision}"
        spec = cls(_C.ModelSpec.from_json(text, allow), name)
        if headers:
            spec._checkpoint = checkpoint_weights(hub.repo_id, hub.commit_hash or revision, token,
                                                  num_layers=spec.num_layers)
        return spec

    # --- weights read from the checkpoint's headers -------------------------------------------
    @property
    def checkpoint_weights(self) -> CheckpointWeights | None:
        """The checkpoint's tensors summed from its safetensors headers (bytes as stored, per
        dtype), when the spec was read with ``weights_source="headers"``; else ``None``."""
        return self._checkpoint

    @property
    def checkpoint_weight_bytes(self) -> int | None:
        """Bytes of the tensors vLLM loads, as stored in the checkpoint (``None``: not read)."""
        return None if self._checkpoint is None else self._checkpoint.total_bytes

    @property
    def weights_source(self) -> str:
        """Where plans take the weights term from: ``"checkpoint headers"`` or ``"config"``."""
        return "config" if self._checkpoint is None else "checkpoint headers"

    def _checkpoint_weights_bytes(self, dtype: str, quantization: str | None) -> int:
        """The checkpoint's bytes as vLLM serves them (0: no headers read; plans use the
        config): floating tensors cast to the served dtype unless the model is quantized."""
        if self._checkpoint is None:
            return 0
        served = self.weight_breakdown(dtype, quantization)
        return self._checkpoint.bytes_as_served(str(served["dtype"]), bool(served["quantization"]))

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

    @property
    def vision(self) -> _C.VisionEncoderSpec | None:
        """The vision tower and projector of a multimodal checkpoint whose tower has rules
        (SigLIP, CLIP, Pixtral, Llama-4, Qwen2.5-VL, MoonViT); ``None`` for a text model, or
        when the tower is only a caveat (:attr:`caveats`)."""
        return self._spec.vision

    @property
    def vision_encoder_parameters(self) -> int:
        """Parameters of the vision tower and projector (part of :meth:`num_parameters`; 0 for
        a text model)."""
        vision = self._spec.vision
        return 0 if vision is None else int(vision.num_parameters)

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
        mxfp4_backend: str = "triton",
        mp_linear_kernel: str = "",
    ) -> int:
        """Bytes of weights on the fullest GPU, as vLLM's "Model loading took X GiB" reports.

        ``dtype`` is vLLM's ``--dtype`` (``auto`` keeps the checkpoint dtype, fp32 served as
        bf16); ``quantization`` is vLLM's ``--quantization`` (``None`` uses the checkpoint's
        ``quantization_config``). ``mxfp4_backend`` is the MXFP4 MoE kernel vLLM picks for the
        GPU (:data:`MXFP4_BACKENDS`; "triton" on Hopper, "flashinfer_trtllm" on B200/B300,
        "marlin" on Ampere, Ada and RTX 50xx): it sets how an MXFP4 checkpoint's expert weights
        are padded and what the kernel's layout adds after loading, and nothing else.
        ``mp_linear_kernel`` is the kernel vLLM picks for AWQ / GPTQ / compressed-tensors WNA16
        linears (:data:`MP_LINEAR_KERNELS`; "machete" on H100 / H200, "marlin" on other GPUs from
        compute capability 8.0): "" (the default) counts the checkpoint's tensors as stored; a
        kernel also puts the MoE experts in vLLM's Marlin MoE layout and counts the Marlin
        workspaces for an H100's 132 SMs (``plan()`` uses its GPU's).
        A rotary table vLLM builds at the served length (MiniMax-Text-01's) is counted at the
        config's ``max_position_embeddings`` here; :func:`vllm_mem.plan` counts it at its length.
        """
        tp = tensor_parallel_size
        if (tp.__class__ is int and 1 <= tp <= _MAX_TP and quantization is None and pipeline_parallel_size.__class__
                is int and pipeline_parallel_size == 1 and dtype == "auto" and dtype.__class__ is str
                and mxfp4_backend == "triton" and mxfp4_backend.__class__ is str and mp_linear_kernel == ""
                and mp_linear_kernel.__class__ is str):
            # The defaults and a TP in its row's bounds: nothing for the checks below to refuse.
            return _weight_bytes_for(self._sizing, "auto", None, tp, 1, "triton", "")
        return _weight_bytes_for(self._sizing, *_weight_args(dtype, quantization, tensor_parallel_size,
                                                             pipeline_parallel_size),
                                 _mxfp4_backend(mxfp4_backend), _mp_linear_kernel(mp_linear_kernel))

    def weight_breakdown(
        self,
        dtype: str = "auto",
        quantization: str | None = None,
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
        mxfp4_backend: str = "triton",
        mp_linear_kernel: str = "",
    ) -> dict[str, Any]:
        """Weights per component and per pipeline rank (bytes), for reports; a multimodal
        model's vision tower and projector are ``vision_encoder_bytes`` of each rank (every
        pipeline rank builds them) and ``vision_encoder_parameters`` of the whole; an audio tower and
        its embedder (Gemma-3n) ``audio_encoder_bytes`` and ``audio_encoder_parameters``."""
        return dict(_C.weight_breakdown(self._spec, *_weight_args(dtype, quantization, tensor_parallel_size,
                                                                  pipeline_parallel_size),
                                        mxfp4_backend=_mxfp4_backend(mxfp4_backend),
                                        mp_linear_kernel=_mp_linear_kernel(mp_linear_kernel)))

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
        shared = sum(1 for layer in self._spec.layers if layer.kv_shared)
        if shared:
            extra.append(f"{shared} KV-shared layers")  # Gemma-3n's: no KV cache of their own
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


_weight_bytes_for = _C.weight_bytes_for
_MAX_TP = L.MAX_TENSOR_PARALLEL_SIZE


def _mxfp4_backend(value: Any) -> str:
    return V.text(value, "mxfp4_backend", allowed=MXFP4_BACKENDS)


def _mp_linear_kernel(value: Any) -> str:
    return V.text(value, "mp_linear_kernel", allowed=MP_LINEAR_KERNELS)


def _weights_source(value: Any) -> bool:
    """True for ``"headers"`` (read the checkpoint's safetensors headers), False for ``"config"``."""
    if value.__class__ is str and (value == "config" or value == "headers"):
        return value == "headers"  # the common case without building V.text's message parts
    return V.text(value, "weights_source", allowed=("config", "headers")) == "headers"


def supported_model_types() -> list[str]:
    """The ``config.json`` model_types with exact sizing rules (``csrc/core/model/model_families.json``)."""
    return list(_C.supported_model_types())
