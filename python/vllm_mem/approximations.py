"""The rules of thumb of vLLM-Omni's GPU-memory guide, kept as plainly named approximations.

None of these is used for sizing anywhere in ``vllm_mem``. They exist so a report can show how
far each is from the exact figure; ``docs/approximations.md`` measures the gap on real models.
The exact functions are :meth:`vllm_mem.ModelSpec.weight_bytes` (weights per GPU) and
``vllm_mem.kv_cache_capacity`` (KV-cache blocks, tokens and concurrency).
"""

from __future__ import annotations

from typing import Union

from . import _C
from . import _validate as V
from .model_spec import ConfigSource, ModelSpec

__all__ = [
    "rule_of_thumb_kv_cache_bytes",
    "rule_of_thumb_weight_bytes",
    "rule_of_thumb_activation_bytes",
]

ModelLike = Union[ModelSpec, ConfigSource]


def _spec(model: ModelLike) -> _C.ModelSpec:
    if isinstance(model, ModelSpec):
        return model._spec
    return ModelSpec.from_hf_config(model)._spec


def rule_of_thumb_kv_cache_bytes(
    model: ModelLike, batch_size: int, seq_len: int, dtype: str = "auto"
) -> int:
    """Approximation: ``batch_size x seq_len x hidden_size x num_layers x 2 x dtype_size``.

    This is the guide's formula, not vLLM's. It assumes every layer stores ``hidden_size``
    values for K and for V per token, which holds only for multi-head attention: GQA/MQA models
    store ``num_kv_heads x head_dim`` (4-8x less for Llama-3 and Qwen2.5), MLA models one
    latent, sliding-window layers only the window. For the exact figure use
    ``vllm_mem.kv_cache_capacity``.

    Parameters
    ----------
    model
        A :class:`ModelSpec`, or anything :meth:`ModelSpec.from_hf_config` accepts.
    batch_size, seq_len
        Concurrent sequences and tokens per sequence.
    dtype
        ``"auto"`` (the served model dtype) or a dtype name such as ``"fp8"``.

    Returns
    -------
    int
        Bytes, by the rule of thumb.
    """
    return int(_C.rule_of_thumb_kv_cache_bytes(_spec(model), V.setting("batch_size", batch_size),
                                               V.setting("seq_len", seq_len), V.dtype(dtype)))


def rule_of_thumb_weight_bytes(model: ModelLike, dtype: str = "auto") -> int:
    """Approximation: ``num_parameters x dtype_size``.

    Ignores vocabulary padding, tensor/pipeline-parallel splits and replication, quantization
    scales and the rotary cache. For the exact per-GPU figure (what vLLM prints as "Model
    loading took") use :meth:`ModelSpec.weight_bytes`.

    Parameters
    ----------
    model
        A :class:`ModelSpec`, or anything :meth:`ModelSpec.from_hf_config` accepts.
    dtype
        ``"auto"`` (the served model dtype) or a dtype name; ``"int8"``/``"fp8"`` give the
        guide's 1 byte per parameter.

    Returns
    -------
    int
        Bytes, by the rule of thumb.
    """
    return int(_C.rule_of_thumb_weight_bytes(_spec(model), V.dtype(dtype)))


def rule_of_thumb_activation_bytes(weight_bytes: int) -> tuple[int, int]:
    """Approximation: activation memory is "10-30% of model weight memory".

    vLLM's real activation peak follows ``max_num_batched_tokens``, the hidden and vocabulary
    sizes, not the weights; the profile run measures it.

    Parameters
    ----------
    weight_bytes
        Weight bytes, e.g. from :meth:`ModelSpec.weight_bytes`.

    Returns
    -------
    tuple[int, int]
        ``(low, high)``: 10% and 30% of ``weight_bytes`` (rounded down).
    """
    low, high = _C.rule_of_thumb_activation_bytes(V.size_bytes(weight_bytes, "weight_bytes"))
    return int(low), int(high)
