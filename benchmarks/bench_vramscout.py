"""vllm_mem against vramscout 0.7 (pure Python, on PyPI), side by side in one run on one core.

vramscout is the fastest peer planner measured (docs/performance.md). It is installed in the
benchmark's own virtual environment, ``benchmarks/.venv`` (made by this script with the
interpreter running it: ``python -m venv`` then ``pip install vramscout==0.7.0``), never in the
project's. Each side runs its worker (benchmarks/workers/) in a subprocess pinned to the same
core, the sides alternating for ``--rounds`` rounds; the table shows the medians over rounds.

Like with like: the same config.json file (Llama-3.1-8B-Instruct, the bundled copy), the same
GPU total (the catalog's H100-80GB), utilization 0.92, context / max_model_len 8192, TP 1.

- ``config load``: vllm_mem ``ModelSpec.from_hf_config(path)`` (bounded read of a regular
  file, strict JSON in the core with depth / value / size caps, the model family's rules, every
  dimension checked, the per-layer spec built) against vramscout ``inspect_model(path)``
  (``json.loads`` of the file, the dimensions picked, a parameter estimate).
- ``plan``: vllm_mem ``plan(spec, total_memory_bytes=..., gpu_memory_utilization=0.92,
  max_model_len=8192, max_num_seqs=256, max_num_batched_tokens=8192)`` (weights, profile-run
  peak, non-torch memory, CUDA graphs, KV blocks and tokens, the largest max_model_len that
  fits, vLLM's log lines) against vramscout ``plan_inference(gpu, model, context=8192,
  engine="vllm", gpu_memory_utilization=0.92)`` (weights, KV at the context, runtime, prefill
  scratch, safety reserve, fits, its largest context).
- ``plan from the file``: both loading the config and planning in one call (vllm_mem
  ``from_hf_config`` + ``plan``; vramscout ``plan_modern(path, ...)``, its v0.7 planner).

Goal (issue 21): a plan >= 3x faster, a config load no slower. Exit 1 when missed. With no
network and no ``benchmarks/.venv`` the script prints one line saying why and exits 0.

    PYTHONPATH=build/dev-NAME/site python3 benchmarks/bench_vramscout.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from side_by_side import Side, interleave, median  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VENV = HERE / ".venv"
PEER = "vramscout==0.7.0"
CONFIG = ROOT / "python" / "vllm_mem" / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json"
GPU = "H100-80GB"
UTILIZATION = 0.92
MAX_MODEL_LEN = 8192
#: metric -> the smallest speed-up of vllm_mem over vramscout the issue asks for.
GOALS = {"plan": 3.0, "config load": 1.0, "plan from the file": 1.0}


def peer_python() -> tuple[Path | None, str]:
    """benchmarks/.venv's interpreter with vramscout importable (made when absent), or None and
    why not."""
    python = VENV / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", "import vramscout"], capture_output=True).returncode == 0:
        return python, ""
    steps = ([] if python.exists() else [[sys.executable, "-m", "venv", str(VENV)]]) + [
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", PEER]]
    for step in steps:
        out = subprocess.run(step, capture_output=True, text=True)
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"`{' '.join(step[-3:])}` failed: {last[:160]}"
    return python, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=500)
    parser.add_argument("--core", type=int, default=None)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args(argv)

    python, problem = peer_python()
    if python is None:
        print(f"skipped: {PEER} could not be installed into {VENV} ({problem})")
        return 0
    import vllm_mem  # the working tree's, as PYTHONPATH says; only for the GPU's total

    total = vllm_mem.lookup_gpu(GPU).total_memory_bytes
    common = ["--config", str(CONFIG), "--repeats", str(args.repeats), "--number", str(args.number),
              "--clock", args.clock]
    sides = [Side("vramscout 0.7", str(python), "vramscout_calls.py",
                  args=["--total-bytes", str(total), "--utilization", str(UTILIZATION),
                        "--max-model-len", str(MAX_MODEL_LEN)]),
             Side("vllm_mem", sys.executable, "vllm_mem_calls.py", env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
                  args=["--calls", "peer", "--gpu", GPU])]
    core = args.core if args.core is not None else (sorted(os.sched_getaffinity(0))[0]
                                                    if hasattr(os, "sched_getaffinity") else None)
    print(f"vllm_mem vs {PEER}, {args.rounds} rounds alternating, core {core}, {args.clock} time", file=sys.stderr)
    peer, ours = interleave(sides, args.rounds, core, common)

    print(f"vllm_mem {ours['_figures']['version']} vs vramscout {peer['_figures']['version']}: medians of "
          f"{args.rounds} alternating runs on one core ({args.clock} time), {CONFIG.name}, {GPU}, "
          f"utilization {UTILIZATION}, context {MAX_MODEL_LEN}, TP 1")
    print(f"{'call':22s} {'vramscout us':>13s} {'vllm_mem us':>12s} {'speed-up':>9s}  goal")
    missed = []
    for key, goal in GOALS.items():
        theirs, mine = median(peer[key]), median(ours[key])
        ratio = theirs / mine
        if ratio < goal:
            missed.append(key)
        print(f"{key:22s} {theirs / 1e3:13.2f} {mine / 1e3:12.2f} {ratio:8.2f}x  >= {goal:.0f}x"
              f"{'' if ratio >= goal else '  MISSED'}")
    print("what each side computed (vramscout | vllm_mem):")
    for key in GOALS:
        print(f"  {key}: {peer['_figures'][key]} | {ours['_figures'][key]}")
    print("all goals met" if not missed else f"missed: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
