"""SGLang's memory-imbalance check over the ranks of one engine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import _C
from .. import _limits as L
from .. import _validate as V


@dataclass(frozen=True)
class MemoryImbalance:
    """SGLang's imbalance check over ranks: warn when the least free memory is below
    ``ratio`` x a rank's free memory."""

    imbalanced: bool
    ratio: float
    free_bytes_per_rank: list[int]
    min_rank: int
    max_rank: int
    warning_ranks: list[int]
    lost_bytes: int
    message: str

    def __str__(self) -> str:
        return self.message or (
            f"memory balanced over {len(self.free_bytes_per_rank)} ranks "
            f"(min {_C.format_gib(min(self.free_bytes_per_rank))} GiB, max "
            f"{_C.format_gib(max(self.free_bytes_per_rank))} GiB, ratio {self.ratio})"
        )


def check_memory_imbalance(free_bytes_per_rank: Sequence[int], ratio: float = 0.9) -> MemoryImbalance:
    """SGLang-style imbalance check over the free memory of each rank (index = rank).

    vLLM sizes every worker by the tightest one (the minimum block count), so one GPU that
    another process sits on shrinks the whole engine; vLLM does not warn, SGLang does.
    """
    ranks = V.items(free_bytes_per_rank, "free_bytes_per_rank", max_items=L.MAX_WORLD_SIZE)
    free = [V.size_bytes(x, f"free_bytes_per_rank[{i}]") for i, x in enumerate(ranks)]
    r = _C.check_memory_imbalance(free, V.fraction(ratio, "ratio"))
    return MemoryImbalance(
        imbalanced=bool(r.imbalanced),
        ratio=float(r.ratio),
        free_bytes_per_rank=list(r.free_bytes_per_rank),
        min_rank=int(r.min_rank),
        max_rank=int(r.max_rank),
        warning_ranks=list(r.warning_ranks),
        lost_bytes=int(r.lost_bytes),
        message=str(r.message),
    )
