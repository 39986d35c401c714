"""vLLM's ``--speculative-config`` for the planner: a dict (or its JSON text) checked and turned
into the core's ``SpeculativeConfig``. The rules (which drafter is loaded, what it shares with the
target, which refusals) live in the core: csrc/core/plan/speculative_decoding.cc and
docs/speculative_decoding.md."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..model_spec import ModelSpec, _read_config_text

FIELD = "speculative_config"


def _config_text(source: Any, field: str) -> tuple[str, str]:
    """_read_config_text, with errors naming ``field`` instead of ``config``."""
    try:
        return _read_config_text(source)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{field}: {e}") from None


def _method(value: Any, model: Any) -> str:
    """vLLM's __post_init__ inference: no method and model "ngram" -> ngram; a model name holding
    "eagle-" -> eagle, "eagle3" -> eagle3; otherwise draft_model."""
    if value is not None:
        return V.text(value, f"{FIELD}.method")
    if isinstance(model, str):
        lowered = model.lower()
        if lowered in ("ngram", "[ngram]"):
            return "ngram"
        if "eagle-" in lowered:
            return "eagle"
        if "eagle3" in lowered:
            return "eagle3"
    return "draft_model"


def _keys_checked(value: Mapping[Any, Any], vllm_version: str) -> list[str]:
    """The key table's verdict (csrc/core/plan/speculative_config_keys.json, one row per key of
    vLLM's SpeculativeConfig by release): raises naming the key vLLM refuses or whose value is
    not modelled; returns the keys accepted without a memory effect."""
    try:
        # Values that are not JSON (a ModelSpec as "model") are checked as their text here and
        # typed by the readers below.
        text = json.dumps(value, allow_nan=False, default=repr)
    except (TypeError, ValueError, RecursionError) as e:
        raise V.bad_value(FIELD, "JSON keys and finite values, as vLLM's --speculative-config", str(e)) from None
    return list(_C.check_speculative_config_keys(text, vllm_version))


def _count(value: Mapping[str, Any], key: str, low: int, high: int) -> int | None:
    return None if value.get(key) is None else V.integer(value[key], f"{FIELD}.{key}", low=low, high=high)


def _read_used_keys(value: Mapping[str, Any], c: Any) -> None:
    """The keys that change the plan (and the n-gram window vLLM checks), typed as vLLM's
    fields: Field(gt=0) / Field(ge=1) integers, a quantization method name."""
    tokens = _count(value, "num_speculative_tokens", 1, L.MAX_NUM_SPECULATIVE_TOKENS)
    if tokens is not None:  # vLLM: Field(gt=0), then "Expected num_speculative_tokens to be greater than zero"
        c.num_speculative_tokens = tokens
    draft_tp = _count(value, "draft_tensor_parallel_size", 1, L.MAX_TENSOR_PARALLEL_SIZE)
    if draft_tp is not None:
        c.draft_tensor_parallel_size = draft_tp
    max_len = _count(value, "max_model_len", 1, L.MAX_MODEL_LEN_TOKENS)
    if max_len is not None:
        c.max_model_len = max_len
    if value.get("quantization") is not None:
        c.quantization = V.text(value["quantization"], f"{FIELD}.quantization")
    lookup_max = _count(value, "prompt_lookup_max", 1, L.MAX_MODEL_LEN_TOKENS)
    lookup_min = _count(value, "prompt_lookup_min", 1, L.MAX_MODEL_LEN_TOKENS)
    if c.method == "ngram" and lookup_max is not None and lookup_min is not None and lookup_min > lookup_max:
        # vLLM's SpeculativeConfig.__post_init__ (n-gram only: other methods reset both to 0).
        V.fail(f"{FIELD}.prompt_lookup_min",
               f"prompt_lookup_min={lookup_min} must be <= prompt_lookup_max={lookup_max}")
    for key in ("eagle_embed_tokens_shared", "eagle_lm_head_shared"):  # vllm_mem's own switches
        if value.get(key) is not None:
            setattr(c, key, V.flag(value[key], f"{FIELD}.{key}"))


def speculative_config(value: Any, target: Any, vllm_version: str = "") -> Any:
    """The core's SpeculativeConfig for ``value`` (a dict as vLLM's ``--speculative-config``
    takes, or its JSON text), or None. ``target`` is the model as passed to plan() (a source or a
    ModelSpec): "mtp" reads its layer count from the target's config.json. ``vllm_version``: the
    release whose SpeculativeConfig reads the keys ("": the newest known)."""
    if value is None:
        return None
    if isinstance(value, str):
        # Bounded before parsing (size and nesting: deep text would raise RecursionError).
        from .._bounded_json import load_json

        value = load_json(value, FIELD)
    if not isinstance(value, Mapping):
        raise V.bad_type(FIELD, "a dict (vLLM's --speculative-config JSON)", value)
    no_effect = _keys_checked(value, vllm_version)
    c = _C.SpeculativeConfig()
    c.no_effect_keys = no_effect
    model = value.get("model")
    method = _method(value.get("method"), model)
    if model in ("ngram", "[ngram]"):
        model = None
    c.method = _C.normalize_speculative_method(method)  # ValueError / NotImplementedError naming it
    _read_used_keys(value, c)

    if c.method == "mtp":
        # vLLM loads the MTP layers from the target checkpoint (model defaults to the target's).
        source = model if model is not None else target
        if isinstance(source, ModelSpec) and source.name and source.name != "<dict>":
            source = source.name  # the bundled name, path or Hub id it was read from
        if isinstance(source, ModelSpec):
            V.fail(f"{FIELD}.method", "'mtp' reads the MTP layer count from the target's config.json: pass "
                                      "the model as a name, path or dict (not a ModelSpec), or give "
                                      "speculative_config.model")
        text, name = _config_text(source, f"{FIELD}.model")
        c = _C.read_speculative_config_fields(text, True, c)
        c.draft_name = name if model is not None else "MTP layers of the target"
    elif c.method != "ngram" and model is not None:
        text, name = _config_text(model, f"{FIELD}.model")
        try:
            c.draft = _C.ModelSpec.from_json(text, False)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{FIELD}.model: {e}") from None
        c = _C.read_speculative_config_fields(text, False, c)
        c.draft_name = name
    return c
