"""Worker: times vramscout 0.7's calls in this process (run under benchmarks/.venv, where
bench_vramscout.py installed it). Same JSON line as vllm_mem_calls.py.

What each timed call computes (vramscout's public functions, nothing of ours):
- ``config load``: ``vramscout.model.inspect_model(path)``: reads and parses the config.json
  file with ``json.loads``, picks the dimensions, estimates the parameter count from them (no
  Hub request: the path exists) and returns its ``ModelSpec`` dataclass.
- ``plan``: ``vramscout.plan_inference(gpu, model, context, engine="vllm",
  gpu_memory_utilization=...)`` on a loaded model: per-rank weights, KV cache, runtime, prefill
  scratch and safety reserve at the context, whether it fits total x utilization, and the
  largest context that fits (its binary search).
- ``plan from the file``: ``vramscout.plan_modern(path, ...)``, its v0.7 planner, which reads
  the config on every call (the load and the plan together).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import vramscout  # noqa: E402
from side_by_side import ns_per_call, worker_main  # noqa: E402
from vramscout.model import inspect_model  # noqa: E402
from vramscout.types import GPUInfo  # noqa: E402

GIB = 1 << 30


def measure(args: Any) -> dict[str, Any]:
    metrics: dict[str, float] = {}
    figures: dict[str, Any] = {"version": vramscout.__version__}
    path = args.config
    total_gib = args.total_bytes / GIB
    gpu = GPUInfo(index=0, name="H100-80GB", total_gib=total_gib, used_gib=0.0, free_gib=total_gib)
    model = inspect_model(path)

    def plan() -> Any:
        return vramscout.plan_inference(gpu, model, context=args.max_model_len, engine="vllm",
                                        gpu_memory_utilization=args.utilization, tp_size=1)

    def plan_from_file() -> Any:
        return vramscout.plan_modern(path, context=args.max_model_len, engine="vllm",
                                     gpu_memory_utilization=args.utilization, vram_gib=total_gib)

    p, m = plan(), plan_from_file()
    figures["config load"] = f"{model.num_layers} layers, {model.num_params} parameters (estimated)"
    figures["plan"] = (f"fits {p.fits}, largest context {p.max_context_vram}, KV of one "
                       f"{args.max_model_len}-token sequence {p.breakdown.kv_cache_gib:.2f} GiB")
    figures["plan from the file"] = f"fits {m.fits}, largest context {m.max_context_vram}"
    metrics["config load"] = ns_per_call(lambda: inspect_model(path), args.repeats, args.number)
    metrics["plan"] = ns_per_call(plan, args.repeats, args.number)
    metrics["plan from the file"] = ns_per_call(plan_from_file, args.repeats, args.number)
    return {"metrics": metrics, "figures": figures}


def add_args(parser: Any) -> None:
    parser.add_argument("--config", required=True)
    parser.add_argument("--total-bytes", type=int, required=True)
    parser.add_argument("--utilization", type=float, required=True)
    parser.add_argument("--max-model-len", type=int, required=True)


if __name__ == "__main__":
    worker_main(measure, add_args)
