"""vllm_mem now against vllm_mem 0.3.0 built beside it, side by side in one run on one core.

Two builds of one module cannot share a process, so each side runs
benchmarks/workers/vllm_mem_calls.py in a subprocess pinned to the same core, the sides
alternating for ``--rounds`` rounds; the table shows the medians over rounds and their ratio.
Timed (the same calls and arguments on both sides; the figures each side computed are printed
below the table):

- ``plan`` and ``kv_cache_capacity`` on Llama-3.1-8B, Qwen3-30B-A3B, gemma-3-27b-it (TP 2) and
  DeepSeek-V3 (TP 8), as benchmarks/bench_sizing.py calls them;
- ``sweep`` over bench_sweep.py's grid (every catalog GPU x 50 utilizations x 7 lengths x 4 TP
  x 2 KV dtypes x 3 max_num_seqs) and over 128 max_model_len x 4 GPUs x 4 TP x 2 KV dtypes x
  16 utilizations, in plans per second;
- ``ModelSpec.from_hf_config`` of Llama-3.1-8B's config.json file.

Targets (issue 21): plan and kv_cache_capacity no slower than 0.3.0, sweep at least as fast and
>= 3 M plans/s on the bench's grid, the max_model_len sweep >= 1 M plans/s. Exit 1 when one is
missed.

The 0.3.0 side is built by benchmarks/release_build.py into build/release-0.3.0 when absent (a
few minutes: git archive of its commit, its _C in Release mode); with ``--no-build``, or when it
cannot be built, the script prints one line saying why and exits 0.

    PYTHONPATH=build/dev-NAME/site python3 benchmarks/bench_release.py [--rounds 5] [--no-build]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import release_build  # noqa: E402
from side_by_side import Side, interleave, median  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "python" / "vllm_mem" / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json"
RELEASE = "0.3.0"
#: The sweeps' floors in plans per second (the issue's); every other timed call must be no slower
#: than 0.3.0 (speed-up >= 1: time ratio for calls, rate ratio for sweeps).
SWEEP_FLOOR = {"sweep, bench grid": 3e6, "sweep, max_model_len grid": 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs of each side (median over them)")
    parser.add_argument("--repeats", type=int, default=7, help="timed batches per call in a run")
    parser.add_argument("--number", type=int, default=300, help="calls per batch")
    parser.add_argument("--core", type=int, default=None, help="the core both sides run on (default: the first)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="CPU time of the worker (default; robust to other load) or wall time")
    parser.add_argument("--no-build", action="store_true", help=f"skip when {RELEASE} is not built yet")
    args = parser.parse_args(argv)

    site = release_build.site_of(RELEASE)
    if site is None:
        problem = "--no-build given" if args.no_build else release_build.why_not_buildable(RELEASE)
        if problem is not None:
            print(f"skipped: vllm_mem {RELEASE} is not built in {release_build.release_dir(RELEASE)} ({problem})")
            return 0
        site = release_build.build(RELEASE)

    ours = os.environ.get("PYTHONPATH", "")
    sides = [Side(f"vllm_mem {RELEASE}", sys.executable, "vllm_mem_calls.py", env={"PYTHONPATH": str(site)}),
             Side("vllm_mem now", sys.executable, "vllm_mem_calls.py", env={"PYTHONPATH": ours})]
    worker_args = ["--config", str(CONFIG), "--repeats", str(args.repeats), "--number", str(args.number),
                   "--clock", args.clock]
    core = args.core if args.core is not None else (sorted(os.sched_getaffinity(0))[0]
                                                    if hasattr(os, "sched_getaffinity") else None)
    print(f"vllm_mem now vs {RELEASE} ({site}), {args.rounds} rounds alternating, core {core}, "
          f"{args.clock} time", file=sys.stderr)
    old, new = interleave(sides, args.rounds, core, worker_args)
    return report(old, new, args)


def report(old: dict, new: dict, args: argparse.Namespace) -> int:
    print(f"vllm_mem {new['_figures']['version']} (now) vs {old['_figures']['version']}: medians of "
          f"{args.rounds} alternating runs on one core ({args.clock} time)")
    print(f"{'call':52s} {RELEASE:>12s} {'now':>12s} {'speed-up':>9s}  target")
    missed = []
    for key in new:
        if key.startswith("_"):
            continue
        before, after = median(old[key]), median(new[key])
        is_rate = key in SWEEP_FLOOR
        ratio = after / before if is_rate else before / after
        unit = "M plans/s" if is_rate else "us"
        scale = 1e-6 if is_rate else 1e-3
        target = "no slower" if not is_rate else f"as fast, >= {SWEEP_FLOOR[key] / 1e6:.0f} M plans/s"
        ok = ratio >= 1.0 and (not is_rate or after >= SWEEP_FLOOR[key])
        if key == "config load":
            target, ok = "(shown)", True
        if not ok:
            missed.append(key)
        print(f"{key + ' (' + unit + ')':52s} {before * scale:12.2f} {after * scale:12.2f} {ratio:8.2f}x  "
              f"{target}{'' if ok else '  MISSED'}")
    print("figures computed (0.3.0 | now):")
    for key, value in new["_figures"].items():
        if key != "version":
            print(f"  {key}: {old['_figures'].get(key)} | {value}")
    print("all targets met" if not missed else f"missed: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
