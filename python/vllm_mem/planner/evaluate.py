"""The plan call: :func:`plan` evaluates vLLM's start-up memory for a model on a GPU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _C
from ..model_spec import ModelSpec
from .inputs import (
    NO_GPU,
    SpecSource,
    catalog_entry,
    plan_inputs,
    prepared_call,
    resolved_environment,
    spec_of,
)
from .result import StartupPlan
from .speculative import speculative_config as speculative
from .versions import allow_long_from_env, choose_vllm_version

_evaluate_keywords = _C.evaluate_keywords

if TYPE_CHECKING:
    from typing import Unpack

    from .._settings import PlanSettingsArgs

#: The plan's request object: its keywords and properties are the settings table's rows.
PlanRequest = _C.PlanRequest


def plan(
    spec: SpecSource,
    gpu: str | None = None,
    *,
    request: PlanRequest | None = None,
    speculative_config: Mapping[str, Any] | str | None = None,
    allow_long_max_model_len: bool | None = None,
    **settings: Unpack[PlanSettingsArgs],
) -> StartupPlan:
    """Plan vLLM's start-up memory on one GPU type, per pipeline rank.

    Parameters
    ----------
    spec : ModelSpec or config source
        A :class:`ModelSpec`, or anything :meth:`ModelSpec.from_hf_config` accepts (a
        ``config.json`` path or folder, a dict, a bundled model name).
    gpu : str, optional
        A catalog name in any common spelling (``"H100-80GB"``, ``"L40S"``, ``"MI300X"``);
        or give ``total_memory_bytes``.
    request : PlanRequest, optional
        A request object built once (``vllm_mem.planner.evaluate.PlanRequest(...)``) and reused in a loop (the
        fastest path); keywords given beside it replace its fields.
    speculative_config : dict or str, optional
        vLLM's ``--speculative-config`` (a dict or its JSON text): ``method`` ("ngram",
        "draft_model", "eagle", "eagle3", "mtp"), ``model`` (the drafter: a bundled name, a
        path, a dict or a Hub id; "mtp" reads the target's MTP layers), ``num_speculative_tokens``,
        ``draft_tensor_parallel_size``. The drafter's weights and its share of the KV pool are
        separate terms of the plan; the capture sizes become multiples of 1 + K.
        docs/speculative_decoding.md.
    allow_long_max_model_len : bool, optional
        ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``: accept a ``max_model_len`` above the model's
        derived maximum (default: the environment variable).
    **settings
        vLLM's engine arguments, one row each of the core's settings table
        (docs/settings.md, which gives each one's bounds, vLLM
        flag and what "unset" resolves to): ``max_model_len``, ``gpu_memory_utilization``,
        ``tensor_parallel_size``, ``max_num_seqs``, ``kv_cache_dtype``, ``cpu_offload_gb``,
        ``vllm_version``, ``total_memory_bytes``, ``free_memory_bytes``, ``gpu_count``, ...
        Left ``None``, each takes the planned release's default: ``max_model_len`` the model's
        derived maximum (rope scaling included), ``gpu_memory_utilization`` 0.9 (0.92 from
        v0.20), the scheduler sizes by GPU and ``usage_context``. ``vllm_version`` defaults to
        the installed vllm's version (read from its metadata, vllm is not imported), else the
        newest known release; the report says which and why. An unknown keyword is a
        TypeError naming the closest known one. ``max_model_len="auto"`` (or -1) is vLLM's
        ``--max-model-len auto`` (from 0.14): the scheduler sizes and the profile run take the
        derived maximum, then the KV cache keeps the longest length one request fits in
        (``plan.auto_fit_line`` is vLLM's line; ``max_model_len`` the length it settled on).

    Returns
    -------
    StartupPlan

    Raises
    ------
    ValueError
        Naming the field: utilization outside (0, 1], an unknown GPU (with close matches),
        non-positive lengths, a TP larger than ``gpu_count`` or not dividing the heads, a
        ``max_model_len`` above the model's maximum (vLLM's message), an unknown version form.
    """
    if (request is None and speculative_config is None and allow_long_max_model_len is None
            and spec.__class__ is ModelSpec and spec._checkpoint is None and "vllm_version" not in settings):
        # The common call, keywords on a loaded model for a catalog GPU or a byte total: the table
        # converts them in C++ and the plan crosses once (the request path's conversion, checks
        # and errors; None sends the rarer device spellings down that path).
        device = NO_GPU if gpu is None else catalog_entry(gpu) if gpu.__class__ is str else None
        if device is not None:
            version, source = choose_vllm_version(None)  # the installed release, else the newest
            native = _evaluate_keywords(spec._sizing, settings, gpu is not None, device[0], device[1], version,
                                        source, allow_long_from_env())
            if native is not None:
                return StartupPlan(native, spec)
    s = spec_of(spec)
    r, total, name, asked_version = prepared_call(gpu, request, settings)
    if speculative_config is None and s._checkpoint is None:
        # The one entrance: the request object and the model's cached KV layouts.
        version, source, allow_long = resolved_environment(asked_version, allow_long_max_model_len)
        return StartupPlan(_C.evaluate_request(s._sizing, r, total, name, version, source, allow_long), s)
    inputs = plan_inputs(gpu=gpu, allow_long_max_model_len=allow_long_max_model_len, request=r)
    return StartupPlan(_C.evaluate_plan(s._spec, model_inputs(inputs, s, spec, speculative_config)), s)


def model_inputs(inputs: Any, s: ModelSpec, target: Any, speculative_config: Any) -> Any:
    """What the model adds to ``inputs`` (the core's PlanInputs, changed and returned): the
    drafter of ``speculative_config`` read against ``target`` (the model as the caller gave it:
    "mtp" reads its config.json), and, for a spec read with weights_source="headers", the
    checkpoint's own bytes as served. plan() and the stage check's plans both take it from here."""
    inputs.speculative = speculative(speculative_config, target, inputs.vllm_version)
    if s.checkpoint_weights is not None:
        inputs.checkpoint_weights_bytes = s._checkpoint_weights_bytes(inputs.dtype, inputs.quantization or None)
    return inputs
