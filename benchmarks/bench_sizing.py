"""Per-call time of vllm_mem's sizing calls against the same formulas in plain Python, side by
side in one run: ``kv_cache_capacity``, ``weight_bytes`` and ``plan`` on Llama-3.1-8B (dense),
Qwen3-30B-A3B (MoE), gemma-3-27b-it (sliding window) and DeepSeek-V3 (MLA, fp8 blocks).

The baseline is benchmarks/plain_python_sizing.py (it lives only here). Before anything is
timed, every figure of both sides is asserted equal on the same inputs. Each call is timed
timeit-style: the median over ``--repeats`` batches of ``--number`` calls, after a warm-up.

Target (the issue's): vllm_mem at least 5x faster than the plain-Python formula for every
call; the script exits 1 when a ratio is below it. A target, not a test: timings depend on
the machine, so nothing in tests/ times anything.

    PYTHONPATH=build/dev-NAME/site python3 benchmarks/bench_sizing.py [--repeats N] [--cxx]

``--cxx`` also runs the C++-only benchmark (benchmarks/cxx/bench_sizing.cc, built in
build/bench with -DVLLM_MEM_BUILD_BENCHMARKS=ON when missing).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import vllm_mem
from vllm_mem import ModelSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plain_python_sizing as plain  # noqa: E402
from bench_inputs import KV_AVAILABLE_BYTES, MAX_MODEL_LEN, MODELS, PLAN_SETTINGS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build" / "bench"
CONFIG_DIR = ROOT / "python" / "vllm_mem" / "configs"
TARGET_RATIO = 5.0
GIB = 1 << 30


def time_call(call: Callable[[], object], repeats: int, number: int) -> float:
    """Median nanoseconds per call over ``repeats`` batches of ``number`` calls."""
    for _ in range(50):
        call()  # warm-up (caches, branch predictors, and errors before timing)
    return statistics.median(t / number * 1e9 for t in timeit.repeat(call, number=number, repeat=repeats))


def _same(what: str, ours: Any, theirs: Any) -> None:
    if ours != theirs:
        raise AssertionError(f"{what}: vllm_mem {ours!r} != plain Python {theirs!r}")


def check_kv(name: str, cap: Any, base: dict[str, Any]) -> None:
    d = cap.to_dict()
    for key, value in base.items():
        if key == "groups":
            for i, (g, b) in enumerate(zip(d["groups"], value, strict=True)):
                for gk, gv in b.items():
                    _same(f"{name} kv groups[{i}].{gk}", g[gk], gv)
        else:
            _same(f"{name} kv {key}", d[key], value)


def check_weights(name: str, breakdown: dict[str, Any], base: dict[str, Any]) -> None:
    _same(f"{name} weights fullest_rank_bytes", breakdown["fullest_rank_bytes"], base["fullest_rank_bytes"])
    for ours, theirs in zip(breakdown["per_pp_rank"], base["per_pp_rank"], strict=True):
        for key, value in theirs.items():
            _same(f"{name} weights rank {theirs['pp_rank']} {key}", ours[key], value)


def check_plan(name: str, p: Any, base: dict[str, Any]) -> None:
    for key in ("requested_bytes", "free_memory_bytes", "tightest_pp_rank", "weights_bytes", "activation_peak_bytes",
                "non_torch_bytes", "cudagraph_bytes", "available_kv_cache_bytes", "max_model_len_that_fits", "fits",
                "failure_phase", "shortfall_bytes"):
        _same(f"{name} plan {key}", getattr(p, key), base[key])
    for ours, theirs in zip(p._p.ranks, base["ranks"], strict=True):  # the core's ranks: every term
        for key, value in theirs.items():
            _same(f"{name} plan rank {theirs['pp_rank']} {key}", getattr(ours, key), value)
    if base["kv_cache"] is None:
        _same(f"{name} plan kv_cache", p.kv_cache, None)
    else:
        check_kv(f"{name} plan", p.kv_cache, base["kv_cache"])


def rows(repeats: int, number: int) -> list[tuple[str, str, float, float]]:
    out = []
    for name, (tp, gpu) in MODELS.items():
        spec = ModelSpec.from_hf_config(name)
        model = plain.model_from_spec(spec, CONFIG_DIR / (name.replace("/", "--") + ".json"))
        total = vllm_mem.lookup_gpu(gpu).total_memory_bytes

        def kv_ours(spec: ModelSpec = spec, tp: int = tp) -> Any:
            return vllm_mem.kv_cache_capacity(spec, KV_AVAILABLE_BYTES, max_model_len=MAX_MODEL_LEN,
                                              tensor_parallel_size=tp)

        def kv_plain(model: dict[str, Any] = model, tp: int = tp) -> Any:
            return plain.kv_cache_capacity(model, KV_AVAILABLE_BYTES, max_model_len=MAX_MODEL_LEN,
                                           tensor_parallel_size=tp)

        def weights_ours(spec: ModelSpec = spec, tp: int = tp) -> int:
            return spec.weight_bytes(tensor_parallel_size=tp)

        def weights_plain(model: dict[str, Any] = model, tp: int = tp) -> int:
            return plain.weight_bytes(model, tensor_parallel_size=tp)

        def plan_ours(spec: ModelSpec = spec, tp: int = tp, total: int = total) -> Any:
            return vllm_mem.plan(spec, total_memory_bytes=total, tensor_parallel_size=tp, **PLAN_SETTINGS)

        def plan_plain(model: dict[str, Any] = model, tp: int = tp, total: int = total) -> Any:
            return plain.plan(model, total, tensor_parallel_size=tp, **PLAN_SETTINGS)

        # Equal figures first: a fast wrong answer is not faster.
        check_kv(name, kv_ours(), kv_plain())
        _same(f"{name} weight_bytes", weights_ours(), weights_plain())
        check_weights(name, spec.weight_breakdown(tensor_parallel_size=tp),
                      plain.weight_breakdown(model, tensor_parallel_size=tp))
        check_plan(name, plan_ours(), plan_plain())

        for function, ours, theirs in (("kv_cache_capacity", kv_ours, kv_plain),
                                       ("weight_bytes", weights_ours, weights_plain),
                                       ("plan", plan_ours, plan_plain)):
            out.append((name, function, time_call(ours, repeats, number), time_call(theirs, repeats, number)))
    return out


def cxx_rows(repeats: int) -> str:
    binary = BUILD_DIR / "bench_sizing"
    if not binary.exists():
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD_DIR), "-DCMAKE_BUILD_TYPE=Release",
                        "-DVLLM_MEM_BUILD_PYTHON=OFF", "-DVLLM_MEM_BUILD_BENCHMARKS=ON"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(BUILD_DIR), "--target", "bench_sizing", "-j", "2"],
                       check=True, stdout=subprocess.DEVNULL)
    return subprocess.run([str(binary), str(CONFIG_DIR), str(repeats)], check=True, capture_output=True,
                          text=True).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31, help="timed batches per call (median over them)")
    parser.add_argument("--number", type=int, default=500, help="calls per batch")
    parser.add_argument("--cxx", action="store_true", help="also run the C++-only benchmark")
    parser.add_argument("--one-core", action="store_true", help="pin to one core (as bench_sweep.py)")
    args = parser.parse_args(argv)
    if args.one_core and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    results = rows(args.repeats, args.number)
    print(f"per-call time, median of {args.repeats} batches x {args.number} calls; figures asserted equal first")
    print(f"{'model':34s} {'call':18s} {'vllm_mem us':>12s} {'plain Python us':>16s} {'ratio':>7s}")
    worst = float("inf")
    for model, function, ours, theirs in results:
        ratio = theirs / ours
        worst = min(worst, ratio)
        mark = "" if ratio >= TARGET_RATIO else "  < target"
        print(f"{model:34s} {function:18s} {ours / 1e3:12.2f} {theirs / 1e3:16.2f} {ratio:6.1f}x{mark}")
    print(f"target: vllm_mem >= {TARGET_RATIO:.0f}x faster than plain Python for every call; worst {worst:.1f}x")
    if args.cxx:
        print(cxx_rows(args.repeats))
    return 0 if worst >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
