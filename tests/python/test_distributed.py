"""vllm_mem.distributed on a real gloo group: several local processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from vllm_mem.distributed import (  # noqa: E402
    MemoryImbalanceWarning,
    check_memory_imbalance_across_ranks,
    gather_snapshots,
    reduce_available_kv_cache_memory,
    reduce_num_blocks,
    snapshot_table,
)

WORLD = 3
GIB = 1 << 30
# Per-rank figures; rank 1 is the one another process sits on.
FREE = [70 * GIB, 30 * GIB, 69 * GIB]
AVAILABLE_KV = [40 * GIB + 7, 12 * GIB + 3, 39 * GIB]
BLOCKS = [5000, 4100, 4999]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker(rank: int, port: int, out_dir: str) -> None:
    if os.path.exists("/sys/class/net/lo"):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # loopback only
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    try:
        result: dict[str, Any] = {
            "kv": reduce_available_kv_cache_memory(AVAILABLE_KV[rank]),
            "blocks": reduce_num_blocks(BLOCKS[rank]),
        }
        rows = gather_snapshots({"free_memory": FREE[rank], "total_memory": 80 * GIB}, dst=0)
        result["rows"] = rows
        result["table"] = snapshot_table(rows) if rows is not None else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            verdict = check_memory_imbalance_across_ranks(FREE[rank])
        result["imbalanced"] = verdict.imbalanced
        result["per_rank"] = verdict.free_bytes_per_rank
        result["warned"] = [str(w.message) for w in caught if issubclass(w.category, MemoryImbalanceWarning)]
        # A subgroup of the two balanced ranks: reductions honour the group argument.
        sub = dist.new_group([0, 2])
        if rank in (0, 2):
            result["sub_blocks"] = reduce_num_blocks(BLOCKS[rank], group=sub)
            result["sub_imbalanced"] = check_memory_imbalance_across_ranks(
                FREE[rank], group=sub, warn=False).imbalanced
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("gloo")
    mp.spawn(worker, args=(free_port(), str(out)), nprocs=WORLD, join=True)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)]


def test_min_reductions_reach_every_rank(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["kv"] == min(AVAILABLE_KV)
        assert r["blocks"] == min(BLOCKS)
    assert ranks[0]["sub_blocks"] == ranks[2]["sub_blocks"] == min(BLOCKS[0], BLOCKS[2])


def test_gather_to_rank_zero_only(ranks: list[dict[str, Any]]) -> None:
    rows = ranks[0]["rows"]
    assert [row["rank"] for row in rows] == list(range(WORLD))
    assert [row["free_memory"] for row in rows] == FREE
    assert ranks[1]["rows"] is None and ranks[2]["rows"] is None
    table = ranks[0]["table"].splitlines()
    assert table[0].split()[:4] == ["rank", "host", "free_memory", "total_memory"]
    assert "30.0 GiB" in table[2]


def test_imbalance_warns_on_the_ranks_sglang_would(ranks: list[dict[str, Any]]) -> None:
    for r in ranks:
        assert r["imbalanced"] is True
        assert r["per_rank"] == FREE
    assert ranks[1]["warned"] == []  # the tight rank itself is not above the minimum
    for r in (ranks[0], ranks[2]):
        (message,) = r["warned"]
        assert message.startswith("The memory capacity is unbalanced.")
        assert "rank 1: 30.0 GiB" in message
    assert ranks[0]["sub_imbalanced"] is False


def test_needs_an_initialised_group() -> None:
    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    with pytest.raises(RuntimeError, match="not initialised"):
        reduce_num_blocks(1)


def test_gather_takes_a_snapshot_and_its_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's documented usage, gather_snapshots(snapshot.__dict__), raised TypeError on
    the snapshot's float timestamp (issue 19): byte fields travel, the rest is left out."""
    from vllm_mem.mem_utils import MemorySnapshot

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    if os.path.exists("/sys/class/net/lo"):
        monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    snap = MemorySnapshot(torch_peak=GIB, free_memory=70 * GIB, total_memory=80 * GIB,
                          cuda_memory=10 * GIB, torch_memory=GIB, non_torch_memory=9 * GIB,
                          timestamp=1.5, device=0, auto_measure=False)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        rows = gather_snapshots(snap.__dict__)
        assert rows == gather_snapshots(snap)
        with pytest.raises(TypeError, match="'free_memory'.*str"):
            gather_snapshots({"free_memory": "70 GiB"})
        with pytest.raises(TypeError, match="no byte figures"):
            gather_snapshots({"timestamp": 1.5})
    finally:
        dist.destroy_process_group()
    assert rows is not None
    (row,) = rows
    assert row["free_memory"] == 70 * GIB and row["non_torch_memory"] == 9 * GIB
    assert row["rank"] == 0
    for left_out in ("timestamp", "auto_measure", "integrated", "torch_status", "device", "device_",
                     "_index"):
        assert left_out not in row
    assert "free_memory" in snapshot_table(rows)
