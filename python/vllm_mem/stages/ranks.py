"""Per-worker plans of one engine under TP x PP, and its KV capacity as vLLM computes it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import _C
from .. import _limits as L
from .. import _validate as V
from ..model_spec import ModelSpec
from .devices import GpuSpec, gpu_info

T = TypeVar("T")


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

    def __repr__(self) -> str:
        verdict = f"{self.num_blocks} blocks, {self.max_concurrency:.2f}x" if self.fits else "does not fit"
        return f"<RankPlans {len(self.workers)} workers: {verdict}, tightest rank {self.tightest_rank}>"

    def _repr_html_(self) -> str:
        from ..display import rank_plans_html  # imported on first display only

        return rank_plans_html(self)


def _one_or_per_worker(value: Any, field: str, check: Callable[[Any, str], T]) -> list[T]:
    """One value for every worker, or a list of them (at most one per worker of an engine)."""
    if isinstance(value, (list, tuple)):
        return [check(v, f"{field}[{i}]") for i, v in enumerate(V.items(value, field, max_items=L.MAX_WORLD_SIZE))]
    return [check(value, field)]


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
    spec = model if isinstance(model, ModelSpec) else ModelSpec.from_hf_config(model)
    tp = V.setting("tensor_parallel_size", tensor_parallel_size)
    pp = V.setting("pipeline_parallel_size", pipeline_parallel_size)
    if tp * pp > L.MAX_WORLD_SIZE:
        raise V.bad_value("tensor_parallel_size", f"such that TP x PP <= {L.MAX_WORLD_SIZE}", tp * pp)
    gpu_list = _one_or_per_worker(gpus, "gpus", V.gpu)
    totals = [int(_C.device_total_bytes(gpu_info(i, g))) for i, g in enumerate(gpu_list)]
    kv = _C.KvCacheOptions()
    kv.max_model_len = V.setting("max_model_len", max_model_len if max_model_len is not None
                                 else spec.max_position_embeddings)
    kv.block_size = V.optional_setting("block_size", block_size) or 0
    kv.kv_cache_dtype = V.kv_cache_dtype(kv_cache_dtype)
    kv.model_dtype = V.dtype(dtype)
    overheads = _one_or_per_worker(overhead_bytes, "overhead_bytes", V.size_bytes)
    frees = [] if free_memory_bytes is None else _one_or_per_worker(free_memory_bytes, "free_memory_bytes",
                                                                    V.size_bytes)
    quantization = V.optional_text(quantization, "quantization")
    utilization = V.fraction(gpu_memory_utilization, "gpu_memory_utilization")
    r = _C.compute_rank_layout(spec._spec, totals, utilization, frees, overheads, kv.model_dtype,
                               quantization or "", tp, pp, kv)
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
