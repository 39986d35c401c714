"""How long one sizing call takes: ``weight_bytes`` and ``kv_cache_capacity``, from Python and
from C++.

Python: ``timeit`` of the public calls, median (and minimum) over many repeats. C++: the
``bench_sizing`` executable (benchmarks/cxx/bench_sizing.cc), built in ``build/bench`` with
``-DVLLM_MEM_BUILD_BENCHMARKS=ON`` when missing. Prints one table.

    PYTHONPATH=build/dev-NAME/site python3 benchmarks/bench_sizing.py [--repeats N] [--no-cxx]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import vllm_mem
from vllm_mem import ModelSpec

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build" / "bench"
CONFIG_DIR = ROOT / "python" / "vllm_mem" / "configs"
MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-30B-A3B", "meta-llama/Llama-3.1-70B-Instruct"]
AVAILABLE_BYTES = 60 << 30  # an H100's room after weights, roughly
MAX_MODEL_LEN = 8192
TP = 2


def time_call(call: Callable[[], object], repeats: int, number: int = 200) -> tuple[float, float]:
    """Median and minimum nanoseconds per call over ``repeats`` batches of ``number`` calls."""
    call()  # warm up (and surface errors before timing)
    per_call = [t / number * 1e9 for t in timeit.repeat(call, number=number, repeat=repeats)]
    return statistics.median(per_call), min(per_call)


def python_rows(repeats: int) -> tuple[list[tuple[str, str, str, float, float]], list[str]]:
    rows: list[tuple[str, str, str, float, float]] = []
    notes: list[str] = []
    for name in MODELS:
        spec = ModelSpec.from_hf_config(name)

        def weights(spec: ModelSpec = spec) -> int:
            return spec.weight_bytes(tensor_parallel_size=TP)

        def kv(spec: ModelSpec = spec) -> object:
            return vllm_mem.kv_cache_capacity(spec, AVAILABLE_BYTES, max_model_len=MAX_MODEL_LEN,
                                              tensor_parallel_size=TP)

        rows.append(("python", name, "weight_bytes", *time_call(weights, repeats)))
        rows.append(("python", name, "kv_cache_capacity", *time_call(kv, repeats)))
    return rows, notes


def cxx_binary(rebuild: bool) -> Path:
    binary = BUILD_DIR / "bench_sizing"
    if rebuild or not binary.exists():
        subprocess.run(
            ["cmake", "-S", str(ROOT), "-B", str(BUILD_DIR), "-DCMAKE_BUILD_TYPE=Release",
             "-DVLLM_MEM_BUILD_PYTHON=OFF", "-DVLLM_MEM_BUILD_BENCHMARKS=ON"],
            check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(BUILD_DIR), "--target", "bench_sizing", "-j", "2"],
                       check=True, stdout=subprocess.DEVNULL)
    return binary


def cxx_rows(repeats: int, rebuild: bool) -> tuple[list[tuple[str, str, str, float, float]], list[str]]:
    out = subprocess.run([str(cxx_binary(rebuild)), str(CONFIG_DIR), str(repeats)],
                         check=True, capture_output=True, text=True).stdout
    rows, notes = [], []
    for line in out.splitlines()[1:]:
        fields = line.split("\t")
        model, function = fields[0].replace("--", "/", 1), fields[1]
        if fields[2] == "nan":
            notes.append(f"C++ {model}: {function} failed {' '.join(fields[4:])}")
            continue
        rows.append(("C++", model, function, float(fields[2]), float(fields[3])))
    return rows, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=101, help="timed batches per call (median over them)")
    parser.add_argument("--no-cxx", action="store_true", help="skip the C++ benchmark")
    parser.add_argument("--rebuild", action="store_true", help="rebuild build/bench first")
    args = parser.parse_args(argv)

    rows, notes = python_rows(args.repeats)
    if not args.no_cxx:
        cxx, cxx_notes = cxx_rows(args.repeats, args.rebuild)
        rows += cxx
        notes += cxx_notes

    print(f"per-call time, TP={TP}, max_model_len={MAX_MODEL_LEN} (median / min over {args.repeats} batches)")
    print(f"{'side':7s} {'model':38s} {'function':18s} {'median us':>10s} {'min us':>9s}")
    for side, model, function, median, low in rows:
        print(f"{side:7s} {model:38s} {function:18s} {median / 1e3:10.2f} {low / 1e3:9.2f}")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
