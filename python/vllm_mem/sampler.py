"""The peak sampler: a C++ thread that reads device free memory and torch's allocated/reserved
bytes at a fixed interval, so allocations made and freed between two snapshots are seen."""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is loaded when a timeline is built (by pybind11), not at import
    import numpy as np
    import numpy.typing as npt

from . import _C
from ._device import DeviceLike, device_index

__all__ = ["MemorySampler", "MemoryTimeline"]


@dataclass(frozen=True)
class MemoryTimeline:
    """The samples as columns, one entry per sample (bytes; seconds).

    Attributes
    ----------
    start_timestamp : float
        ``time.time()`` when sampling started; ``time_s`` counts from it.
    time_s : numpy.ndarray of float64
    free_memory, cuda_memory, torch_allocated, torch_reserved, non_torch_memory : numpy.ndarray
        int64 columns; ``cuda_memory = total - free``, ``non_torch_memory = cuda_memory -
        torch_reserved``, as in :class:`~vllm_mem.mem_utils.MemorySnapshot`.
    """

    start_timestamp: float
    time_s: npt.NDArray[np.float64]
    free_memory: npt.NDArray[np.int64]
    cuda_memory: npt.NDArray[np.int64]
    torch_allocated: npt.NDArray[np.int64]
    torch_reserved: npt.NDArray[np.int64]
    non_torch_memory: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.time_s.shape[0])


class MemorySampler:
    """Samples one device in the background while a ``with`` block runs.

    Parameters
    ----------
    device : int, str or torch.device, optional
        The CUDA device (current one when ``None``).
    interval_s : float
        Seconds between samples; at least 1e-5 (ValueError otherwise, also for <= 0).
    max_samples : int
        Timeline capacity; further samples still update the peaks.

    Examples
    --------
    >>> with MemorySampler(interval_s=0.0005) as s:   # doctest: +SKIP
    ...     run_forward()
    >>> s.peak_non_torch_memory, len(s.timeline)      # doctest: +SKIP
    """

    def __init__(self, device: DeviceLike = None, interval_s: float = 0.0005,
                 max_samples: int = 1 << 21) -> None:
        self._index = device_index(device)
        self._impl = _C.MemorySampler(self._index, float(interval_s), int(max_samples))

    def start(self) -> MemorySampler:
        """Start sampling (once per sampler).

        Raises
        ------
        RuntimeError
            When torch is imported but vllm_mem has no torch provider: the thread reads torch's
            figures in C++ without the GIL, so it would count every torch byte as non-torch.
        """
        if str(_C.torch_stats(self._index).status) == "no_provider":
            _, _, refusal = _C.torch_provider_info()
            raise RuntimeError(
                "memory sampler: torch is imported but vllm_mem cannot read its allocator in C++ ("
                + (str(refusal) or "built without the torch provider")
                + "); its non-torch peaks would include torch's memory. Profile without "
                "sample_interval_s, or rebuild: pip install --no-build-isolation --force-reinstall vllm_mem")
        self._impl.start()
        return self

    def stop(self) -> None:
        """Stop and join the thread (idempotent)."""
        self._impl.stop()

    def __enter__(self) -> MemorySampler:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc_val: BaseException | None, exc_tb: TracebackType | None) -> None:
        self.stop()
        # A failed device read ends sampling early; say so unless the block's own error wins.
        if exc_type is None and self._impl.error:
            raise RuntimeError(f"memory sampler stopped early: {self._impl.error}")

    @property
    def running(self) -> bool:
        return bool(self._impl.running)

    @property
    def error(self) -> str:
        """Why sampling stopped early; empty when it did not."""
        return str(self._impl.error)

    def peaks(self) -> Any:
        """The C++ ``SamplerPeaks`` (maxima over every sample taken)."""
        return self._impl.peaks()

    @property
    def num_samples(self) -> int:
        return int(self._impl.peaks().num_samples)

    @property
    def peak_cuda_memory(self) -> int:
        return int(self._impl.peaks().peak_cuda_memory)

    @property
    def peak_non_torch_memory(self) -> int:
        return int(self._impl.peaks().peak_non_torch_memory)

    @property
    def dropped_samples(self) -> int:
        return int(self._impl.dropped_samples)

    @property
    def timeline(self) -> MemoryTimeline:
        """A copy of the samples taken so far, as NumPy arrays."""
        t = self._impl.timeline()
        return MemoryTimeline(**t)
