"""A simulated CUDA device for tests without a GPU.

Everything in :mod:`vllm_mem.mem_utils` and :mod:`vllm_mem.sampler` reads it through the same
C++ code path as the real driver. Tests drive it: other processes' memory, torch allocations
(allocated / reserved / peak, with the caching allocator's keep-until-empty_cache behaviour),
non-torch allocations, the integrated flag and host memory. It is thread-safe, so a running
sampler sees every change.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from . import _C
from .units import GiB_bytes as _GiB

__all__ = ["SimulatedDevice"]



class SimulatedDevice:
    """A simulated device, active inside ``with`` (or between :meth:`install`/:meth:`uninstall`).

    Parameters
    ----------
    total_memory : int
        ``cudaMemGetInfo`` total of each device, bytes.
    num_devices : int
        Visible devices (indices ``0..num_devices-1``).
    integrated : bool
        Unified memory: free memory is then read from host ``MemAvailable``, and device
        allocations reduce it.
    host_total_memory, host_available_memory : int
        ``MemTotal`` / ``MemAvailable`` of the simulated host.
    max_shared_memory_bytes : int
        The opt-in shared memory per block (H100: 232448).
    torch_initialized : bool
        Whether torch's CUDA allocator is initialised (its figures are 0 and flagged otherwise).
    """

    def __init__(self, total_memory: int = 80 * _GiB, *, num_devices: int = 1,
                 integrated: bool = False, host_total_memory: int = 256 * _GiB,
                 host_available_memory: int = 200 * _GiB,
                 max_shared_memory_bytes: int = 232448, torch_initialized: bool = True) -> None:
        self._dev = _C.SimulatedDevice(
            num_devices=num_devices, total_bytes=total_memory, integrated=integrated,
            host_total_bytes=host_total_memory, host_available_bytes=host_available_memory,
            max_shared_memory_per_block=max_shared_memory_bytes,
            torch_initialized=torch_initialized)
        self._installed = False

    # ---- activation ----
    def install(self) -> SimulatedDevice:
        """Make this the device every vllm_mem reading uses."""
        if not self._installed:
            _C.install_device(self._dev)
            self._installed = True
            _clear_memos()
        return self

    def uninstall(self) -> None:
        """Stop using it (the previously active device comes back)."""
        if self._installed:
            _C.remove_device(self._dev)
            self._installed = False
            _clear_memos()

    def __enter__(self) -> SimulatedDevice:
        return self.install()

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc_val: BaseException | None, exc_tb: TracebackType | None) -> None:
        self.uninstall()

    # ---- driving it ----
    def other_process_alloc(self, nbytes: int, device: int = 0) -> None:
        """Another process takes ``nbytes`` of device memory."""
        self._dev.add_other_process_bytes(device, int(nbytes))

    def other_process_free(self, nbytes: int, device: int = 0) -> None:
        self._dev.add_other_process_bytes(device, -int(nbytes))

    def non_torch_alloc(self, nbytes: int, device: int = 0) -> None:
        """This process allocates outside torch (cudaMalloc, NCCL, cuBLAS workspace)."""
        self._dev.add_non_torch_bytes(device, int(nbytes))

    def non_torch_free(self, nbytes: int, device: int = 0) -> None:
        self._dev.add_non_torch_bytes(device, -int(nbytes))

    def torch_alloc(self, nbytes: int, device: int = 0) -> None:
        """A torch tensor of ``nbytes``: allocated grows, reserved grows if the cache is short."""
        self._dev.torch_allocate(device, int(nbytes))

    def torch_free(self, nbytes: int, device: int = 0) -> None:
        """A torch tensor is freed: allocated shrinks, reserved stays until ``empty_cache``."""
        self._dev.torch_free(device, int(nbytes))

    @contextlib.contextmanager
    def torch_tensor(self, nbytes: int, device: int = 0) -> Iterator[None]:
        """A torch tensor alive for the ``with`` block."""
        self.torch_alloc(nbytes, device)
        try:
            yield
        finally:
            self.torch_free(nbytes, device)

    @contextlib.contextmanager
    def non_torch_buffer(self, nbytes: int, device: int = 0) -> Iterator[None]:
        """A non-torch buffer (a workspace) alive for the ``with`` block."""
        self.non_torch_alloc(nbytes, device)
        try:
            yield
        finally:
            self.non_torch_free(nbytes, device)

    def transient_non_torch(self, nbytes: int, device: int = 0, reads: int = 2,
                            timeout_s: float = 30.0) -> None:
        """A workspace taken and released while a running sampler reads the device ``reads`` times.

        The spike that vLLM's two readings miss and torch's allocator never sees; waiting for the
        sampler's reads makes it certain the sampler saw it (needs a running sampler, else
        TimeoutError after ``timeout_s``).
        """
        with self.non_torch_buffer(nbytes, device):
            self.wait_for_reads(reads, timeout_s)

    def transient_torch(self, nbytes: int, device: int = 0) -> None:
        """A torch tensor created and freed at once: the allocator's peak counters see it, and
        its segment stays reserved until ``empty_cache``."""
        with self.torch_tensor(nbytes, device):
            pass

    def set_current_device(self, device: int) -> None:
        self._dev.set_current_device(device)

    def set_integrated(self, integrated: bool, device: int = 0) -> None:
        self._dev.set_integrated(device, bool(integrated))

    def set_host_memory(self, total: int, available: int) -> None:
        self._dev.set_host_memory(int(total), int(available))

    def set_torch_initialized(self, initialized: bool) -> None:
        self._dev.set_torch_initialized(bool(initialized))

    def set_torch_status(self, status: str) -> None:
        """What vllm_mem's reader says of torch's allocator: ``"available"``, ``"no_torch"``,
        ``"not_initialized"``, ``"no_provider"`` (torch imported, provider missing or refused:
        the device still tracks torch's memory, but vllm_mem cannot read it), ..."""
        self._dev.set_torch_status(str(status))

    def torch_alloc_between_reads(self, nbytes: int, device: int = 0) -> None:
        """At the next free/total read of ``device``, torch first allocates ``nbytes`` (a new
        segment when its cache is short): an allocation landing between a reader's torch read and
        its device read, the race every snapshot and sample must survive."""
        self._dev.torch_allocate_at_next_read(device, int(nbytes))

    def torch_empty_cache(self) -> None:
        """``torch.cuda.empty_cache()`` as torch does it, whatever vllm_mem can read: for a torch
        stand-in when the reader's status is ``"no_provider"``."""
        self._dev.torch_empty_cache()

    def torch_reset_peak(self, device: int = 0) -> None:
        """``torch.cuda.reset_peak_memory_stats(device)`` as torch does it (see torch_empty_cache)."""
        self._dev.torch_reset_peak(device)

    def fail(self, message: str = "CUDA driver shut down (simulated)") -> None:
        """Every later read raises RuntimeError(message), as after the driver is gone."""
        self._dev.set_failure(message)

    def heal(self) -> None:
        self._dev.set_failure("")

    # ---- inspecting it ----
    def state(self, device: int = 0) -> Any:
        """The C++ ``SimulatedDeviceState`` of ``device`` (bytes)."""
        return self._dev.state(device)

    @property
    def empty_cache_calls(self) -> int:
        return int(self._dev.empty_cache_calls)

    @property
    def reset_peak_calls(self) -> int:
        return int(self._dev.reset_peak_calls)

    @property
    def mem_info_calls(self) -> int:
        """Free/total reads so far (a test can wait for the sampler thread with it)."""
        return int(self._dev.mem_info_calls)

    def wait_for_reads(self, count: int, timeout_s: float = 30.0) -> None:
        """Block until ``count`` more free/total reads happened (e.g. by a sampler).

        Raises
        ------
        TimeoutError
            If they did not happen within ``timeout_s`` (a safety net, not a timing check).
        """
        target = self.mem_info_calls + count
        deadline = time.monotonic() + timeout_s
        while self.mem_info_calls < target:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {count} device reads within {timeout_s} s")
            time.sleep(0.0001)


def _clear_memos() -> None:
    # get_max_shared_memory_bytes is memoised per process, as in vLLM; a device swap resets it.
    from . import mem_utils

    mem_utils.get_max_shared_memory_bytes.cache_clear()
