"""``vllm-mem plan [FLAGS] -- vllm serve MODEL [vLLM flags...]``: plan the start-up a pasted
vLLM command line would make (:func:`vllm_mem.plan_from_vllm_args`).

vllm-mem's own flags (``--gpu``, ``--vllm-version``, ``--json``...) go before ``--``; everything
after it is the vLLM command, read with vLLM's spellings. ``main()`` routes a ``plan`` command
line holding ``--`` here, so ``vllm-mem plan MODEL --flags`` is unchanged.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from .. import _validate as V
from . import EXIT_DOES_NOT_FIT, EXIT_OK, options, print_json

DESCRIPTION = ("Plan the start-up `vllm serve MODEL [flags]` would make: paste the command after `--`. "
               "Flags are read as vLLM reads them (--max_model_len, --max-model-len=32k, -tp 2); flags with no "
               "effect on start-up memory are listed as ignored; unknown flags and flags whose memory is not "
               "modelled yet are refused by name. Exit 0 fits, 1 does not fit, 2 bad input.")


def build(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = parser_class(prog="vllm-mem plan", description=DESCRIPTION,
                     usage="vllm-mem plan [--gpu NAME|SIZE] [--vllm-version X.Y] [--json] -- vllm serve MODEL "
                           "[vLLM flags...]")
    options.add_gpu(p, "required unless --total-memory-gib is given")
    options.add_gib(p, "--total-memory-gib", "total_memory_bytes", help="total device memory instead of --gpu")
    options.add_gib(p, "--free-memory-gib", "free_memory_bytes", "--free-gib", allow_zero=True,
                    help="free memory at start-up (default: total minus the idle CUDA context)")
    options.add_setting(p, "--gpu-count", "gpu_count", help="GPUs available")
    options.add_text(p, "--vllm-version", "vllm_version", metavar="X.Y[.Z]",
                     help="the vLLM release to plan for; default: the installed vllm, else the newest known")
    p.add_argument("--allow-long-max-model-len", dest="allow_long_max_model_len", action="store_true", default=None,
                   help="as VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (also read from the environment)")
    p.add_argument("--allow-unknown", action="store_true",
                   help="size a model family without exact rules as a generic transformer (labelled)")
    options.add_weights_source(p)
    options.add_json(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=run, command_name="plan")
    return p


def parse(arguments: Sequence[str], parser_class: type[argparse.ArgumentParser]) -> argparse.Namespace:
    """Split at the first ``--``: vllm-mem's flags before it (``plan`` itself dropped), the vLLM
    command after it."""
    arguments = list(arguments)
    cut = arguments.index("--")
    head = arguments[:cut]
    head.remove("plan")  # the sub-command word; main() routes here only when it is present
    args = build(parser_class).parse_args(head)
    args.command = "plan"
    args.vllm_command = arguments[cut + 1:]
    return args


def run(args: argparse.Namespace) -> int:
    from ..vllm_args import plan_from_vllm_args

    if not args.vllm_command:
        V.fail("--", "give the vLLM command after --: vllm-mem plan --gpu H100 -- vllm serve MODEL [flags]")
    if args.gpu is None and args.total_memory_bytes is None:
        V.fail("--gpu", "give --gpu NAME|SIZE (see `vllm-mem gpus`) or --total-memory-gib")
    if isinstance(args.gpu, int) and args.total_memory_bytes is not None:
        V.fail("--gpu", "a size and --total-memory-gib both give the total; give one")
    gpu, total = (None, args.gpu) if isinstance(args.gpu, int) else (args.gpu, args.total_memory_bytes)
    result: Any = plan_from_vllm_args(
        args.vllm_command, gpu, total_memory_bytes=total, free_memory_bytes=args.free_memory_bytes,
        gpu_count=args.gpu_count, vllm_version=args.vllm_version,
        allow_long_max_model_len=args.allow_long_max_model_len, allow_unknown=args.allow_unknown,
        weights_source=args.weights_source)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.report(), end="")
    return EXIT_OK if result.fits else EXIT_DOES_NOT_FIT
