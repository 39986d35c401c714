#!/usr/bin/env python3
"""Cost of ``import vllm_mem`` in a fresh interpreter (vLLM imports it in every worker).

    python3 benchmarks/bench_import.py [--runs 15]

Runs ``python -X importtime -c "import vllm_mem"`` repeatedly, prints the median cumulative
time of ``vllm_mem`` and of the interpreter's own start-up for comparison, the modules that cost
most in the median run, and whether NumPy/PyYAML/torch were loaded. Target: <= 50 ms on a GPU
host (issue 9); the first run warms the file cache and is not counted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys


def _one_run() -> tuple[int, dict[str, int], list[str]]:
    code = "import sys, vllm_mem; print(','.join(m for m in ('numpy', 'yaml', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                         check=True)
    cumulative: dict[str, int] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line.split("|")
        try:
            cumulative_us = int(parts[1])
        except ValueError:
            continue  # the header line
        cumulative[parts[2].strip()] = cumulative_us
    heavy = [m for m in out.stdout.strip().split(",") if m]
    return cumulative["vllm_mem"], cumulative, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    _one_run()  # warm the file cache
    runs = [_one_run() for _ in range(args.runs)]
    totals = [r[0] for r in runs]
    median_run = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    print(f"import vllm_mem: median {statistics.median(totals) / 1000:.1f} ms, "
          f"min {min(totals) / 1000:.1f} ms, max {max(totals) / 1000:.1f} ms over {len(runs)} fresh interpreters")
    print(f"heavy modules loaded by the import: {median_run[2] or 'none'}")
    print("top cumulative costs in the median run (ms):")
    top = sorted(median_run[1].items(), key=lambda kv: -kv[1])[:12]
    for name, us in top:
        print(f"  {us / 1000:7.1f}  {name}")


if __name__ == "__main__":
    main()
