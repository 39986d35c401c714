"""Worker: times vllm_mem's calls in this process, for whichever vllm_mem PYTHONPATH imports
(the working tree's or a release built beside it: only API that 0.3.0 already had is used).

Prints one JSON line: ``metrics`` (ns per call, or plans per second for the sweeps) and
``figures`` (what the calls computed, so the table can show both sides planned the same).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import vllm_mem  # noqa: E402
from bench_inputs import GIB, KV_AVAILABLE_BYTES, MAX_MODEL_LEN, MODELS, PLAN_SETTINGS  # noqa: E402
from side_by_side import ns_per_call, rate_per_s, worker_main  # noqa: E402
from vllm_mem import ModelSpec  # noqa: E402

SWEEP_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
#: The issue's max_model_len sweep: 128 lengths x 4 GPUs x 4 TP x 2 KV dtypes x 16 utilizations.
LENGTH_GRID = dict(
    gpus=["H100-80GB", "H200-141GB", "A100-80GB", "L40S"],
    max_model_len=[1024 * k for k in range(1, 129)],
    tensor_parallel_size=[1, 2, 4, 8],
    kv_cache_dtype=["auto", "fp8"],
    gpu_memory_utilization=[round(0.5 + 0.03 * k, 2) for k in range(16)],
)


def bench_grid() -> dict[str, Any]:
    """bench_sweep.py's grid: every catalog GPU x 50 utilizations x 7 lengths x 4 TP x 2 KV
    dtypes x 3 max_num_seqs."""
    return dict(
        gpus=[g.name for g in vllm_mem.gpu_catalog()],
        gpu_memory_utilization=[round(0.5 + 0.01 * k, 3) for k in range(50)],
        max_model_len=[2048, 4096, 8192, 16384, 32768, 65536, 131072],
        tensor_parallel_size=[1, 2, 4, 8],
        kv_cache_dtype=["auto", "fp8"],
        max_num_seqs=[128, 256, 512],
    )


def plan_calls(args: Any, metrics: dict[str, float], figures: dict[str, Any]) -> None:
    for name, (tp, gpu) in MODELS.items():
        spec = ModelSpec.from_hf_config(name)
        total = vllm_mem.lookup_gpu(gpu).total_memory_bytes

        def plan(spec: ModelSpec = spec, tp: int = tp, total: int = total) -> Any:
            return vllm_mem.plan(spec, total_memory_bytes=total, tensor_parallel_size=tp, **PLAN_SETTINGS)

        def kv(spec: ModelSpec = spec, tp: int = tp) -> Any:
            return vllm_mem.kv_cache_capacity(spec, KV_AVAILABLE_BYTES, max_model_len=MAX_MODEL_LEN,
                                              tensor_parallel_size=tp)

        p, k = plan(), kv()
        figures[f"plan {name}"] = (f"KV {p.available_kv_cache_bytes / GIB:.2f} GiB, "
                                   f"max_model_len that fits {p.max_model_len_that_fits}")
        figures[f"kv {name}"] = f"{k.num_blocks} blocks, {k.num_tokens} tokens"
        metrics[f"plan {name}"] = ns_per_call(plan, args.repeats, args.number)
        metrics[f"kv_cache_capacity {name}"] = ns_per_call(kv, args.repeats, args.number)


def sweep_calls(args: Any, metrics: dict[str, float], figures: dict[str, Any]) -> None:
    spec = ModelSpec.from_hf_config(SWEEP_MODEL)
    for label, grid in (("sweep, bench grid", bench_grid()), ("sweep, max_model_len grid", LENGTH_GRID)):
        def run(grid: dict[str, Any] = grid) -> int:
            return len(vllm_mem.sweep(spec, as_frame=False, **grid)["fits"])

        figures[label] = f"{run():,} plans"
        metrics[label] = rate_per_s(run, max(3, args.repeats // 2))


def config_load(args: Any, metrics: dict[str, float], figures: dict[str, Any]) -> None:
    path = args.config
    spec = ModelSpec.from_hf_config(path)
    figures["config load"] = f"{spec.num_layers} layers, {spec.weight_bytes()} weight bytes"
    metrics["config load"] = ns_per_call(lambda: ModelSpec.from_hf_config(path), args.repeats, args.number)


def peer_calls(args: Any, metrics: dict[str, float], figures: dict[str, Any]) -> None:
    """The calls bench_vramscout.py sets beside vramscout's: the config file's load, one plan of
    the loaded model on ``--gpu``, and both in one call."""
    path = args.config
    total = vllm_mem.lookup_gpu(args.gpu).total_memory_bytes
    spec = ModelSpec.from_hf_config(path)

    def plan() -> Any:
        return vllm_mem.plan(spec, total_memory_bytes=total, **PLAN_SETTINGS)

    def plan_from_file() -> Any:
        return vllm_mem.plan(ModelSpec.from_hf_config(path), total_memory_bytes=total, **PLAN_SETTINGS)

    p = plan()
    figures["config load"] = f"{spec.num_layers} layers, {spec.weight_bytes()} weight bytes (the config's)"
    figures["plan"] = (f"fits {p.fits}, largest max_model_len {p.max_model_len_that_fits}, KV cache "
                       f"(all blocks) {p.available_kv_cache_bytes / GIB:.2f} GiB")
    figures["plan from the file"] = f"fits {plan_from_file().fits}"
    metrics["config load"] = ns_per_call(lambda: ModelSpec.from_hf_config(path), args.repeats, args.number)
    metrics["plan"] = ns_per_call(plan, args.repeats, args.number)
    metrics["plan from the file"] = ns_per_call(plan_from_file, args.repeats, args.number)


CALLS = {"plan": plan_calls, "sweep": sweep_calls, "config": config_load, "peer": peer_calls}


def measure(args: Any) -> dict[str, Any]:
    metrics: dict[str, float] = {}
    figures: dict[str, Any] = {"version": vllm_mem.__version__}
    for what in args.calls.split(","):
        CALLS[what](args, metrics, figures)
    return {"metrics": metrics, "figures": figures}


def add_args(parser: Any) -> None:
    parser.add_argument("--calls", default="plan,sweep,config")
    parser.add_argument("--config", required=True, help="the config.json file timed by 'config' and 'peer'")
    parser.add_argument("--gpu", default="H100-80GB", help="the GPU of 'peer''s plan")


if __name__ == "__main__":
    worker_main(measure, add_args)
