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
from pathlib import Path
from typing import Callable, Optional

import vllm_mem
from vllm_mem import ModelSpec, _C

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


def kv_call(spec: ModelSpec) -> tuple[Optional[Callable[[], object]], str]:
    """The KV-capacity call to time, and a note on which entry point it uses."""
    public = getattr(vllm_mem, "kv_cache_capacity", None)
    if public is not None:
        for kwargs in ({"max_model_len": MAX_MODEL_LEN, "tensor_parallel_size": TP},
                       {"max_model_len": MAX_MODEL_LEN}):
            try:
                public(spec, AVAILABLE_BYTES, **kwargs)
            except TypeError:
                continue
            return (lambda: public(spec, AVAILABLE_BYTES, **kwargs)), "vllm_mem.kv_cache_capacity"
    raw = getattr(_C, "kv_cache_capacity", None)
    if raw is None:
        return None, "kv_cache_capacity not available"
    options = _C.KvCacheOptions()
    options.max_model_len = MAX_MODEL_LEN
    options.tensor_parallel_size = TP
    return (lambda: raw(spec._spec, [AVAILABLE_BYTES], options)), (
        "_C.kv_cache_capacity (the Python wrapper vllm_mem.kv_cache_capacity was not ready)")


def python_rows(repeats: int) -> tuple[list[tuple[str, str, str, float, float]], list[str]]:
    rows, notes = [], []
    for name in MODELS:
        spec = ModelSpec.from_hf_config(name)
        median, low = time_call(lambda: spec.weight_bytes(tensor_parallel_size=TP), repeats)
        rows.append(("python", name, "weight_bytes", median, low))
        try:
            call, note = kv_call(spec)
            if note not in notes:
                notes.append(note)
            if call is None:
                continue
            median, low = time_call(call, repeats)
        except Exception as exc:  # report, do not hide: the KV area may not support this model yet
            notes.append(f"{name}: kv_cache_capacity raised {type(exc).__name__}: {exc}")
            continue
        rows.append(("python", name, "kv_cache_capacity", median, low))
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


def main(argv: Optional[list[str]] = None) -> int:
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
