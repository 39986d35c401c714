"""``vllm-mem models``: the model configs usable by name as CONFIG: those bundled with the package
and those in the local Hugging Face cache (``HF_HUB_CACHE``), with where each comes from."""

from __future__ import annotations

import argparse
import os
import re
import stat
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

    from .._bounded_json import load_json

    try:
        doc = load_json(V.read_text(Path(config), "config", L.MAX_CONFIG_FILE_BYTES), "config")
    except (ValueError, OSError):
        return None
    value = doc.get("model_type") if isinstance(doc, dict) else None
    return V.clip(value, 64) if isinstance(value, str) else None


def cached_models(cache_dir: str | Path | None = None, *, max_entries: int | None = None,
                  max_seconds: float | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(rows, warnings): every model repo revision in the Hugging Face cache whose snapshot holds
    a config.json (no network). The cache is read as untrusted, in huggingface_hub's layout
    (``models--org--name/{refs,snapshots}``) but not with its ``scan_cache_dir``, which opens
    every refs file (a FIFO there blocks it) and walks every blob: only directory listings and
    ``stat`` calls, refs read only when they are small regular files holding a commit hash, a
    config.json only when it resolves to a regular file inside its repo's folder; the scan stops
    after ``max_entries`` directory entries or ``max_seconds`` with a warning saying so."""
    from .. import _limits as L
    from ..hub import check_environment, hub_cache_dir

    check_environment()
    where = Path(cache_dir) if cache_dir is not None else hub_cache_dir()
    budget = _Budget(L.MAX_CACHE_SCAN_ENTRIES if max_entries is None else max_entries,
                     L.MAX_CACHE_SCAN_SECONDS if max_seconds is None else max_seconds)
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    if not where.is_dir():
        return rows, warnings
    try:
        for repo_dir in sorted(budget.listing(where), key=lambda p: p.name.lower()):
            if not repo_dir.name.startswith("models--") or not _is_dir(repo_dir):
                continue
            repo_id = repo_dir.name[len("models--"):].replace("--", "/")
            refs = _refs(repo_dir, budget, warnings)
            revisions = []
            for snap in budget.listing(repo_dir / "snapshots"):
                config = snap / "config.json"
                if not _COMMIT.fullmatch(snap.name) or not _is_dir(snap) or not os.path.lexists(config):
                    continue
                problem = _cached_file_problem(repo_dir, config)
                if problem is not None:
                    warnings.append(f"{repo_id}@{snap.name[:7]}: config.json {problem}; skipped")
                    continue
                revisions.append((-_mtime(snap), snap.name, config))
            for _, commit, config in sorted(revisions):
                row = _row(repo_id, "cache", str(config), config)
                row["revision"] = commit
                row["refs"] = sorted(r for r, c in refs.items() if c == commit)
                rows.append(row)
    except _ScanStopped as stop:
        warnings.append(f"cache scan of {where} stopped: {stop}; the models listed so far are shown")
    return rows, warnings


class _ScanStopped(Exception):
    pass


class _Budget:
    """Directory entries and seconds the scan may take (a cache of millions of files, or a slow
    or hung file system, ends the scan with a warning, not a hang)."""

    def __init__(self, max_entries: int, max_seconds: float) -> None:
        import time

        self.entries_left = max_entries
        self.max_entries = max_entries
        self.max_seconds = max_seconds
        self.deadline = time.monotonic() + max_seconds

    def listing(self, folder: Path) -> list[Path]:
        import time

        out: list[Path] = []
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    self.entries_left -= 1
                    if self.entries_left < 0:
                        raise _ScanStopped(f"more than {self.max_entries} entries")
                    if time.monotonic() > self.deadline:
                        raise _ScanStopped(f"over {self.max_seconds:g} s")
                    out.append(Path(entry.path))
        except OSError:
            return out
        return out


_COMMIT = re.compile(r"[0-9a-f]{40}")


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _mtime(path: Path) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def _cached_file_problem(repo_dir: Path, path: Path) -> str | None:
    """Why a snapshot file cannot be read as one (None: it can): it must resolve to a regular
    file inside its repo's folder (huggingface_hub links snapshots/ to blobs/)."""
    from .. import _validate as V

    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "is a broken link"
    if repo_dir.resolve() not in real.parents:
        return "points outside its repo's folder"
    return V.file_problem(real)


def _refs(repo_dir: Path, budget: _Budget, warnings: list[str]) -> dict[str, str]:
    """{ref name: commit} from refs/ (refs/pr/N nested): regular files of one commit hash; any
    other is skipped with a warning, never opened when it is not a regular file."""
    from .. import _validate as V

    out: dict[str, str] = {}
    base = repo_dir / "refs"
    stack = [base]
    while stack:
        for path in budget.listing(stack.pop()):
            name = path.relative_to(base).as_posix()
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > 64:
                warnings.append(f"{repo_dir.name}: refs/{V.clip(name, 64)} is not a small regular file; skipped")
                continue
            try:
                text = V.read_text(path, "refs", 64).strip()
            except ValueError:
                text = ""
            if _COMMIT.fullmatch(text):
                out[name] = text
            else:
                warnings.append(f"{repo_dir.name}: refs/{V.clip(name, 64)} does not hold a commit hash; skipped")
    return out


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
