"""vLLM's ``--speculative-config`` for the planner: a dict (or its JSON text) checked and turned
into the core's ``SpeculativeConfig``. The rules (which drafter is loaded, what it shares with the
target, which refusals) live in the core: csrc/core/plan/speculative_decoding.cc and
docs/speculative_decoding.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..model_spec import ModelSpec, _read_config_text

FIELD = "speculative_config"

#: Keys of vLLM's SpeculativeConfig that this planner reads, plus the two sharing switches of its
#: own (vLLM decides those at load time by comparing tensors, which needs the checkpoint).
_KEYS = ("method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "prompt_lookup_max",
         "prompt_lookup_min", "eagle_embed_tokens_shared", "eagle_lm_head_shared")


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


def speculative_config(value: Any, target: Any) -> Any:
    """The core's SpeculativeConfig for ``value`` (a dict as vLLM's ``--speculative-config``
    takes, or its JSON text), or None. ``target`` is the model as passed to plan() (a source or a
    ModelSpec): "mtp" reads its layer count from the target's config.json."""
    if value is None:
        return None
    if isinstance(value, str):
        # Bounded before parsing (size and nesting: deep text would raise RecursionError).
        from .._bounded_json import load_json

        value = load_json(value, FIELD)
    if not isinstance(value, Mapping):
        raise V.bad_type(FIELD, "a dict (vLLM's --speculative-config JSON)", value)
    if "tensor_parallel_size" in value:
        # vLLM's own refusal (SpeculativeConfig._verify_args).
        V.fail(f"{FIELD}.tensor_parallel_size", "'tensor_parallel_size' is not a valid argument in the "
                                                "speculative_config. Please pass 'draft_tensor_parallel_size' instead.")
    for key in value:
        if key not in _KEYS:
            raise V.bad_value(FIELD, "keys among " + ", ".join(_KEYS), key)
    c = _C.SpeculativeConfig()
    model = value.get("model")
    method = _method(value.get("method"), model)
    if model in ("ngram", "[ngram]"):
        model = None
    c.method = _C.normalize_speculative_method(method)  # ValueError / NotImplementedError naming it
    tokens = value.get("num_speculative_tokens")
    if tokens is not None:
        # vLLM: Field(gt=0), then "Expected num_speculative_tokens to be greater than zero".
        c.num_speculative_tokens = V.integer(tokens, f"{FIELD}.num_speculative_tokens", low=1,
                                             high=L.MAX_NUM_SPECULATIVE_TOKENS)
    draft_tp = value.get("draft_tensor_parallel_size")
    if draft_tp is not None:
        c.draft_tensor_parallel_size = V.integer(draft_tp, f"{FIELD}.draft_tensor_parallel_size", low=1,
                                                 high=L.MAX_TENSOR_PARALLEL_SIZE)
    lookup: dict[str, int] = {}
    for key in ("prompt_lookup_max", "prompt_lookup_min"):  # n-gram windows: no memory, checked only
        if value.get(key) is not None:
            lookup[key] = V.integer(value[key], f"{FIELD}.{key}", low=1, high=L.MAX_MODEL_LEN_TOKENS)
    if (c.method == "ngram" and len(lookup) == 2
            and lookup["prompt_lookup_min"] > lookup["prompt_lookup_max"]):
        # vLLM's SpeculativeConfig.__post_init__ (n-gram only: other methods reset both to 0).
        V.fail(f"{FIELD}.prompt_lookup_min", f"prompt_lookup_min={lookup['prompt_lookup_min']} must be <= "
                                             f"prompt_lookup_max={lookup['prompt_lookup_max']}")
    if value.get("eagle_embed_tokens_shared") is not None:
        c.eagle_embed_tokens_shared = V.flag(value["eagle_embed_tokens_shared"], f"{FIELD}.eagle_embed_tokens_shared")
    if value.get("eagle_lm_head_shared") is not None:
        c.eagle_lm_head_shared = V.flag(value["eagle_lm_head_shared"], f"{FIELD}.eagle_lm_head_shared")

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
