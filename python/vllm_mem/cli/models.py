"""``vllm-mem models``: the model configs usable by name as CONFIG: those bundled with the package
and those in the local Hugging Face cache (``HF_HUB_CACHE``), with where each comes from."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from . import EXIT_OK, options, print_json


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser("models", help="list the bundled and locally cached model configs (usable as CONFIG)",
                              description="Model configs shipped with vllm_mem and those in the local Hugging "
                                          "Face cache (scanned with huggingface_hub, no network): each name works "
                                          "wherever a command takes CONFIG, as do a config.json path or folder and "
                                          "any Hub id (org/name). A cached config the sizing core refuses is "
                                          "listed with the reason.")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="the Hugging Face cache to scan (default: HF_HUB_CACHE, else HF_HOME/hub, else "
                        "~/.cache/huggingface/hub)")
    p.add_argument("--no-cache", action="store_true", help="list the bundled configs only")
    options.add_json(p)
    p.set_defaults(func=run)


def _row(name: str, source: str, path: str | None, config: Any) -> dict[str, Any]:
    """One model: its figures, or the core's reason for refusing its config (never raised)."""
    from ..model_spec import ModelSpec

    row: dict[str, Any] = {"name": name, "source": source, "path": path, "model_type": None,
                           "exact_rules": False, "num_parameters": None, "num_layers": None,
                           "max_position_embeddings": None, "dtype": None, "error": None}
    try:
        spec = ModelSpec.from_hf_config(config)
    except (ValueError, TypeError, NotImplementedError, OSError, RecursionError, MemoryError, OverflowError) as exc:
        row["error"] = " ".join(str(exc).split()) or type(exc).__name__
        row["model_type"] = _raw_model_type(config)
        return row
    row.update(model_type=spec.model_type, num_parameters=spec.num_parameters(), num_layers=spec.num_layers,
               max_position_embeddings=spec.max_position_embeddings, dtype=spec.dtype)
    return row


def _raw_model_type(config: Any) -> str | None:
    """model_type as the file spells it, for a config the core refused (bounded read)."""
    from .. import _limits as L
    from .. import _validate as V

    try:
        doc = json.loads(V.read_text(Path(config), "config", L.MAX_CONFIG_FILE_BYTES))
    except (ValueError, OSError, RecursionError):
        return None
    value = doc.get("model_type") if isinstance(doc, dict) else None
    return V.clip(value, 64) if isinstance(value, str) else None


def cached_models(cache_dir: str | Path | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(rows, warnings): every model repo revision in the Hugging Face cache whose snapshot holds
    a config.json, scanned with huggingface_hub's ``scan_cache_dir`` (no network)."""
    from huggingface_hub import scan_cache_dir

    try:
        from huggingface_hub.errors import CacheNotFound
    except ImportError:  # huggingface_hub < 0.27 kept it in utils
        from huggingface_hub.utils import CacheNotFound  # type: ignore[attr-defined]

    from ..hub import hub_cache_dir

    where = Path(cache_dir) if cache_dir is not None else hub_cache_dir()
    try:
        info = scan_cache_dir(where)
    except CacheNotFound:
        return [], []
    rows: list[dict[str, Any]] = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id.lower()):
        if repo.repo_type != "model":
            continue
        revisions = sorted(repo.revisions, key=lambda r: (-r.last_modified, r.commit_hash))
        for rev in revisions:
            config = rev.snapshot_path / "config.json"
            if not any(f.file_name == "config.json" and f.file_path.parent == rev.snapshot_path for f in rev.files):
                continue
            row = _row(repo.repo_id, "cache", str(config), config)
            row["revision"] = rev.commit_hash
            row["refs"] = sorted(rev.refs)
            rows.append(row)
    return rows, [" ".join(str(w).split()) for w in info.warnings]


def _mark_exact(rows: list[dict[str, Any]]) -> None:
    # Whether vLLM-exact rules exist for the model_type (csrc/core/model/model_families.json).
    from ..model_spec import supported_model_types

    supported = set(supported_model_types())
    for r in rows:
        r["exact_rules"] = r["model_type"] in supported


def run(args: argparse.Namespace) -> int:
    from .. import _validate as V
    from ..model_spec import bundled_model_configs

    rows = [_row(name, "bundled", None, name) for name in bundled_model_configs()]
    warnings: list[str] = []
    if not args.no_cache:
        cache = None if args.cache_dir is None else V.path_of(args.cache_dir, "--cache-dir")
        cached, warnings = cached_models(cache)
        rows += cached
    _mark_exact(rows)
    if args.json:
        print_json(rows)
        return EXIT_OK
    width = max(len(r["name"]) for r in rows)
    print(f"{'name':<{width}}  {'type':<16} {'exact':<5} {'params':>8}  {'layers':>6}  {'context':>9}  "
          f"{'dtype':<9} source")
    for r in rows:
        where = "bundled" if r["source"] == "bundled" else f"cache {r['path']}"
        exact = "yes" if r["exact_rules"] else "no"
        mtype = r["model_type"] or "?"
        if r["error"] is None:
            print(f"{r['name']:<{width}}  {mtype:<16} {exact:<5} {r['num_parameters'] / 1e9:>7.1f}B  "
                  f"{r['num_layers']:>6}  {r['max_position_embeddings']:>9,}  {r['dtype']:<9} {where}")
        else:
            print(f"{r['name']:<{width}}  {mtype:<16} {'no':<5} {'-':>8}  {'-':>6}  {'-':>9}  {'-':<9} {where}")
            print(f"{'':<{width}}  refused: {V.clip(r['error'], 200)}")
    for w in warnings:
        print(f"cache warning: {V.clip(w, 200)}")
    return EXIT_OK
