"""Cross-rank memory figures for a worker group on ``torch.distributed``.

vLLM sizes the KV cache of an engine by its tightest worker: each worker computes its own
available KV memory, and the engine keeps the minimum block count over workers
(``get_kv_cache_configs``); under an external launcher (torchrun) it all-reduces the bytes
with MIN first. These helpers do the same reductions on any process group, so a tool running
inside every rank (NCCL on GPUs, gloo on CPUs, across machines unchanged) gets the figures
vLLM will use, gathers every rank's snapshot into one table on one rank, and warns when one
GPU has much less free memory than the others (SGLang's check; vLLM has none).

Not imported by ``vllm_mem`` itself; ``torch`` is imported on first use only.
Snapshots are ``dict[str, int]`` of byte figures (e.g. ``{"free_memory": ..., "total_memory":
...}``); a :class:`~vllm_mem.mem_utils.MemorySnapshot` itself, or any snapshot's ``__dict__`` /
``to_dict()``, is accepted too: its byte fields (ints) are kept and its other fields (timestamp,
flags, status text, device objects, private attributes) are left out.
"""

from __future__ import annotations

import socket
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from . import _validate as V
from .stages import MemoryImbalance, check_memory_imbalance
from .units import format_gib_text

__all__ = [
    "MemoryImbalanceWarning",
    "reduce_available_kv_cache_memory",
    "reduce_num_blocks",
    "gather_snapshots",
    "snapshot_table",
    "check_memory_imbalance_across_ranks",
]


class MemoryImbalanceWarning(RuntimeWarning):
    """One rank's GPU has much less free memory than another's (SGLang's check)."""


def _dist() -> Any:
    import torch.distributed as dist  # lazy: importing vllm_mem never imports torch

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "torch.distributed is not initialised: call init_process_group (nccl on GPUs, gloo "
            "on CPUs) in every rank first"
        )
    return dist


def _tensor_device(dist: Any, group: Any | None) -> Any:
    """Where a collective's tensor must live: the current GPU for NCCL, the CPU otherwise."""
    import torch

    backend = str(dist.get_backend(group)).lower()
    if "nccl" in backend:
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _all_reduce_min(value: int, group: Any | None, name: str) -> int:
    import torch

    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    dist = _dist()
    t = torch.tensor([value], dtype=torch.int64, device=_tensor_device(dist, group))
    dist.all_reduce(t, op=dist.ReduceOp.MIN, group=group)
    return int(t.item())


def reduce_available_kv_cache_memory(available_bytes: int, group: Any | None = None) -> int:
    """All-reduce MIN of each rank's available KV-cache bytes, as vLLM's
    ``ExecutorWithExternalLauncher.determine_available_memory`` does; every rank gets the
    minimum. Call it in every rank of ``group`` (default: the world)."""
    return _all_reduce_min(available_bytes, group, "available_bytes")


def reduce_num_blocks(num_blocks: int, group: Any | None = None) -> int:
    """All-reduce MIN of each rank's KV-cache block count: the engine-wide ``num_gpu_blocks``
    vLLM settles on (``min(cfg.num_blocks)`` over workers in ``get_kv_cache_configs``)."""
    return _all_reduce_min(num_blocks, group, "num_blocks")


# MemorySnapshot's byte fields: these must be ints wherever they appear (a str or float there is
# a caller's mistake, not metadata to leave out).
_BYTE_FIELDS = frozenset(("torch_peak", "free_memory", "total_memory", "cuda_memory", "torch_memory",
                          "non_torch_memory", "torch_allocated", "cuda_free_memory"))
# Int fields of a snapshot that are not bytes (the device ordinal): left out like the rest.
_NOT_BYTES = frozenset(("device",))


def _plain(snapshot: Any) -> dict[str, int]:
    """The byte figures of a snapshot: a mapping, a MemorySnapshot, or any object's ``__dict__``.

    A snapshot's ``__dict__`` also holds a float timestamp, bool flags, the status text and
    device objects (and private attributes); those are not byte figures and are left out, where
    they used to raise TypeError. A byte field of the wrong type still raises, naming it.
    """
    if not isinstance(snapshot, Mapping):
        if not hasattr(snapshot, "__dict__"):
            raise TypeError(f"snapshot: expected a dict of byte figures or a MemorySnapshot, got "
                            f"{type(snapshot).__name__}")
        snapshot = vars(snapshot)
    out: dict[str, int] = {}
    for key, value in snapshot.items():
        name = str(key)
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if name in _BYTE_FIELDS and not is_int:
            raise TypeError(f"snapshot[{name!r}]: expected an int (bytes), got {type(value).__name__}")
        if is_int and not name.startswith("_") and name not in _NOT_BYTES:
            out[name] = int(value)
    if not out:
        raise TypeError("snapshot: no byte figures (int fields) in it")
    return out


def gather_snapshots(
    snapshot: Mapping[str, int] | Any, dst: int = 0, group: Any | None = None
) -> list[dict[str, Any]] | None:
    """Gather every rank's snapshot (a ``dict`` of ints, or a MemorySnapshot / its ``__dict__``)
    to rank ``dst``.

    Returns, on ``dst``, one row per rank in rank order, each the snapshot plus ``rank`` and
    ``host``; ``None`` on the other ranks. Works over NCCL and gloo alike.
    """
    dist = _dist()
    row: dict[str, Any] = {"rank": dist.get_rank(), "host": socket.gethostname(), **_plain(snapshot)}
    world = dist.get_world_size(group)
    is_dst = dist.get_rank() == dst
    gathered: list[Any] | None = [None] * world if is_dst else None
    dist.gather_object(row, gathered, dst=dst, group=group)
    if not is_dst:
        return None
    assert gathered is not None
    return [dict(r) for r in gathered]


def snapshot_table(rows: Sequence[Mapping[str, Any]], keys: Sequence[str] | None = None) -> str:
    """One text table of gathered snapshots: a row per rank, byte fields in GiB as vLLM
    prints them."""
    if not rows:
        return "(no ranks)"
    if keys is None:
        keys = [k for k in rows[0] if k not in ("rank", "host")]
    header = ["rank", "host", *keys]
    body = [
        [str(r.get("rank", "")), str(r.get("host", ""))]
        + [format_gib_text(int(r[k])) + " GiB" if k in r else "-" for k in keys]
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(lines)


def check_memory_imbalance_across_ranks(
    free_bytes: int, ratio: float = 0.9, group: Any | None = None, warn: bool = True
) -> MemoryImbalance:
    """All-gather each rank's free bytes and run SGLang's imbalance check on them.

    Every rank gets the same verdict; with ``warn`` each rank SGLang would warn on (its own
    free memory x ``ratio`` above the group minimum) emits a :class:`MemoryImbalanceWarning`
    with the per-rank figures.
    """
    # Checked before the collective, so a bad argument fails here on this rank rather than after
    # every rank has joined the all-gather.
    free_bytes = V.size_bytes(free_bytes, "free_bytes")
    ratio = V.fraction(ratio, "ratio")
    import torch

    dist = _dist()
    device = _tensor_device(dist, group)
    world = dist.get_world_size(group)
    mine = torch.tensor([free_bytes], dtype=torch.int64, device=device)
    parts = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world)]
    dist.all_gather(parts, mine, group=group)
    result = check_memory_imbalance([int(p.item()) for p in parts], ratio)
    rank_in_group = dist.get_rank(group) if group is not None else dist.get_rank()
    if warn and result.imbalanced and rank_in_group in result.warning_ranks:
        warnings.warn(result.message, MemoryImbalanceWarning, stacklevel=2)
    return result
