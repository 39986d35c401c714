"""``vllm-mem models``: the model configs bundled with the package, usable by name as CONFIG."""

from __future__ import annotations

import argparse
from typing import Any

from . import EXIT_OK, options, print_json


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser("models", help="list the bundled model configs (usable by name as CONFIG)",
                              description="Model configs shipped with vllm_mem: each name works wherever a "
                                          "command takes CONFIG, as does a config.json path or folder.")
    options.add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..model_spec import ModelSpec, bundled_model_configs

    rows: list[dict[str, Any]] = []
    for name in bundled_model_configs():
        spec = ModelSpec.from_hf_config(name)
        rows.append({"name": name, "model_type": spec.model_type, "num_parameters": spec.num_parameters(),
                     "num_layers": spec.num_layers, "max_position_embeddings": spec.max_position_embeddings,
                     "dtype": spec.dtype})
    if args.json:
        print_json(rows)
        return EXIT_OK
    width = max(len(r["name"]) for r in rows)
    print(f"{'name':<{width}}  {'type':<14} {'params':>8}  {'layers':>6}  {'context':>9}  dtype")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['model_type']:<14} {r['num_parameters'] / 1e9:>7.1f}B  "
              f"{r['num_layers']:>6}  {r['max_position_embeddings']:>9,}  {r['dtype']}")
    return EXIT_OK
