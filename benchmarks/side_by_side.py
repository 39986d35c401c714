"""Side-by-side timing of two implementations that cannot share a process.

Two builds of one module (vllm_mem now and a release), or two interpreters (vllm_mem and a
peer in its own virtual environment), each run a worker script in a subprocess pinned to the
same core (``os.sched_setaffinity``). The sides alternate, round after round, so a burst of
load on the machine hits both; each worker reports the median of its timed batches, and the
table shows the median over rounds. Used by bench_release.py and bench_vramscout.py.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKERS = Path(__file__).resolve().parent / "workers"


def pin_to_core(core: int | None) -> int | None:
    """Pins this process to ``core`` (the first allowed one when None); None where the OS
    cannot pin (macOS)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    chosen = sorted(os.sched_getaffinity(0))[0] if core is None else core
    os.sched_setaffinity(0, {chosen})
    return chosen


#: The clock the workers time with: this process's CPU time by default. On a shared machine
#: (the development container runs several builds on 2 cores) a pinned process waits for its
#: core, and wall-clock time would count the wait; CPU time counts only the process's own work.
#: ``--clock wall`` (bench scripts) times with perf_counter instead, for a quiet machine.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = CLOCKS["cpu"]


def ns_per_call(call: Callable[[], object], repeats: int, number: int) -> float:
    """Median nanoseconds per call over ``repeats`` batches of ``number`` calls, after a warm-up."""
    for _ in range(min(number, 50)):
        call()
    times = timeit.repeat(call, number=number, repeat=repeats, timer=_clock)
    return statistics.median(t / number * 1e9 for t in times)


def rate_per_s(call: Callable[[], int], repeats: int) -> float:
    """Median items per second of ``call`` (which returns how many items it produced)."""
    call()
    rates = []
    for _ in range(repeats):
        t0 = _clock()
        n = call()
        rates.append(n / (_clock() - t0))
    return statistics.median(rates)


@dataclass
class Side:
    """One implementation: the interpreter and environment its worker runs under."""

    label: str
    python: str
    worker: str
    env: dict[str, str] = field(default_factory=dict)
    args: Sequence[str] = ()


def run_worker(side: Side, core: int | None, args: Sequence[str]) -> dict[str, Any]:
    env = {**os.environ, **side.env}
    cmd = [side.python, str(WORKERS / side.worker), *side.args, *args]
    if core is not None:
        cmd += ["--core", str(core)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{side.label} worker failed ({' '.join(cmd)}):\n{out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def interleave(sides: Sequence[Side], rounds: int, core: int | None,
               args: Sequence[str]) -> list[dict[str, list[float]]]:
    """Each side's metrics per round, the sides alternating (ABAB..., BABA... in odd rounds)."""
    per_side: list[dict[str, list[float]]] = [{} for _ in sides]
    order = list(range(len(sides)))
    for r in range(rounds):
        for i in order if r % 2 == 0 else order[::-1]:
            result = run_worker(sides[i], core, args)
            for key, value in result["metrics"].items():
                per_side[i].setdefault(key, []).append(value)
            per_side[i]["_figures"] = result.get("figures", {})  # type: ignore[assignment]
        print(f"  round {r + 1}/{rounds} done", file=sys.stderr)
    return per_side


def median(values: list[float]) -> float:
    return statistics.median(values)


def worker_main(measure: Callable[[Any], dict[str, Any]], add_args: Callable[[Any], None] | None = None) -> None:
    """The common command line of a worker: ``--core``, ``--repeats``, ``--number``; prints one
    JSON line ``{"metrics": {...}, "figures": {...}}``."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--core", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=300)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    if add_args is not None:
        add_args(parser)
    args = parser.parse_args()
    global _clock
    _clock = CLOCKS[args.clock]
    pin_to_core(args.core)
    print(json.dumps(measure(args)))
