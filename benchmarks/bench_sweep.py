"""Plans per second of vllm_mem.sweep on one core, and the ratio against vllm_mem.plan in a loop.

    PYTHONPATH=build/dev-plan/site python3 benchmarks/bench_sweep.py

Two grids: the catalog grid (every catalog GPU x 50 utilizations x 7 lengths x 4 TP x 2 KV
dtypes x 3 max_num_seqs; issue 21 asks >= 3 M plans/s), and a max_model_len grid (128 lengths x
4 GPUs x 4 TP x 2 KV dtypes x 16 utilizations; >= 1 M plans/s), where every length is a new
plan shape, so it measures the per-shape plan rather than the per-row arithmetic.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import vllm_mem

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def best_rate(spec, rows: int, repeat: int, **axes) -> float:
    """Rows per second of the fastest of `repeat` sweeps (after one warm-up)."""
    vllm_mem.sweep(spec, as_frame=False, **axes)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        cols = vllm_mem.sweep(spec, as_frame=False, **axes)
        best = min(best, time.perf_counter() - t0)
    assert len(cols["fits"]) == rows
    return rows / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--loop-plans", type=int, default=300, help="plan() calls timed in the Python loop")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core

    spec = vllm_mem.ModelSpec.from_hf_config(MODEL)
    gpus = [g.name for g in vllm_mem.gpu_catalog()]
    axes = dict(
        gpus=gpus,
        gpu_memory_utilization=list(np.round(np.linspace(0.5, 0.99, 50), 3)),
        max_model_len=[2048, 4096, 8192, 16384, 32768, 65536, 131072],
        tensor_parallel_size=[1, 2, 4, 8],
        kv_cache_dtype=["auto", "fp8"],
        max_num_seqs=[128, 256, 512],
    )
    rows = len(gpus) * 50 * 7 * 4 * 2 * 3
    vllm_mem.sweep(spec, as_frame=False, **axes)  # warm-up
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        cols = vllm_mem.sweep(spec, as_frame=False, **axes)
        best = min(best, time.perf_counter() - t0)
    assert len(cols["fits"]) == rows
    sweep_rate = rows / best

    rng = np.random.default_rng(0)
    picks = rng.integers(0, rows, size=args.loop_plans)
    t0 = time.perf_counter()
    for i in picks:
        vllm_mem.plan(spec, total_memory_bytes=int(cols["total_memory_bytes"][i]),
                      gpu_memory_utilization=float(cols["gpu_memory_utilization"][i]),
                      max_model_len=int(cols["max_model_len"][i]),
                      tensor_parallel_size=int(cols["tensor_parallel_size"][i]),
                      kv_cache_dtype=str(cols["kv_cache_dtype"][i]),
                      max_num_seqs=int(cols["max_num_seqs"][i]))
    loop_rate = args.loop_plans / (time.perf_counter() - t0)

    print(f"sweep: {rows:,} plans in {best * 1e3:.1f} ms = {sweep_rate / 1e6:.2f} M plans/s on one core "
          f"(incl. NumPy column assembly)")
    lengths = [1024 * (i + 1) for i in range(128)]  # 1K .. 128K tokens
    len_rows = 128 * 4 * 4 * 2 * 16
    len_rate = best_rate(spec, len_rows, args.repeat, gpus=["H100-80GB", "A100-40GB", "L40S", "L4"],
                         gpu_memory_utilization=list(np.round(np.linspace(0.5, 0.95, 16), 3)),
                         max_model_len=lengths, tensor_parallel_size=[1, 2, 4, 8], kv_cache_dtype=["auto", "fp8"])
    print(f"sweep over max_model_len: {len_rows:,} plans = {len_rate / 1e6:.2f} M plans/s on one core")
    print(f"plan() in a Python loop: {loop_rate:,.0f} plans/s")
    print(f"ratio: {sweep_rate / loop_rate:,.0f}x")


if __name__ == "__main__":
    main()
