"""Diagnosis of the first H100 run's finding: in vLLM's profiling scenario plus a raw 1 GiB workspace
freed inside the block, ``last - first`` non-torch memory read 1 GiB instead of 256 MiB.

Prints every figure of that scenario at each step, from two sources side by side (vllm_mem's
snapshot and torch's own ``mem_get_info`` / ``memory_reserved``), then which explanation the
figures support. Run by scripts/gpu_check.sh into docs/gpu-acceptance.md; needs torch with CUDA.

The candidate explanations:
  A. torch's figures were missing (provider absent or refused): the 1 GiB torch spike, kept in
     torch's cache after ``del``, was counted as non-torch.
  B. the driver kept the freed 1 GiB (cuMemFree did not raise free memory at once) and served the
     next 256 MiB allocation from it, so the free figure moved by 1 GiB in all.
  C. neither: the readings agree with the arithmetic (the finding does not reproduce here).
"""

from __future__ import annotations

import ctypes
import sys
import time

MiB = 1 << 20
GiB = 1 << 30


def main() -> int:
    try:
        import torch
    except ImportError:
        print("skipped: torch is not importable")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch has no CUDA device")
        return 0
    from vllm_mem import _C
    from vllm_mem.mem_utils import MemorySnapshot

    cuda = ctypes.CDLL("libcuda.so.1")

    def cu_malloc(nbytes: int) -> ctypes.c_uint64:
        ptr = ctypes.c_uint64()
        rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        assert rc == 0, f"cuMemAlloc failed: {rc}"
        return ptr

    def cu_free(ptr: ctypes.c_uint64) -> None:
        assert cuda.cuMemFree_v2(ptr) == 0

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    # The provider is opened on the first measurement that finds torch loaded, not at import:
    # asked before one, it reads "not loaded" with no reason.
    first = MemorySnapshot()
    path, loaded, refusal = _C.torch_provider_info()
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}); provider {path}: "
          f"{'loaded' if loaded else 'NOT loaded'}{' (' + refusal + ')' if refusal else ''}; "
          f"the first snapshot's torch figures came from {first.torch_source}")
    rows = []

    def record(step: str) -> None:
        torch.cuda.synchronize()
        snap = MemorySnapshot()
        free_t, total_t = torch.cuda.mem_get_info()
        reserved_t = torch.cuda.memory_reserved()
        rows.append((step, snap.free_memory, free_t, snap.torch_memory, reserved_t, snap.non_torch_memory,
                     total_t - free_t - reserved_t, snap.torch_status))

    handle1 = cu_malloc(512 * MiB)
    weights = torch.randn(128, 1024, 1024, device="cuda", dtype=torch.float32)
    record("start (512 MiB raw + 512 MiB weights)")
    spike = torch.randn(256, 1024, 1024, device="cuda", dtype=torch.float32)
    del spike
    record("after a 1 GiB torch spike, deleted")
    workspace = cu_malloc(GiB)
    record("after cuMemAlloc 1 GiB workspace")
    time.sleep(0.05)
    cu_free(workspace)
    record("after cuMemFree of the workspace")
    time.sleep(0.2)
    record("0.2 s later")
    handle2 = cu_malloc(256 * MiB)
    record("after cuMemAlloc 256 MiB (NCCL)")

    print()
    print("| step | free (ours) MiB | free (torch) MiB | torch reserved (ours) MiB | reserved (torch) MiB "
          "| non-torch (ours) MiB | non-torch (torch view) MiB | torch_status |")
    print("|---|---|---|---|---|---|---|---|")
    for step, free_o, free_t, res_o, res_t, nt_o, nt_t, status in rows:
        print(f"| {step} | {free_o / MiB:.0f} | {free_t / MiB:.0f} | {res_o / MiB:.0f} | {res_t / MiB:.0f} "
              f"| {nt_o / MiB:.0f} | {nt_t / MiB:.0f} | {status} |")
    first, freed, later, last = rows[1], rows[3], rows[4], rows[5]
    delta_ours = last[5] - first[5]
    print()
    print(f"last - first non-torch: ours {delta_ours / MiB:.0f} MiB, torch's view {(last[6] - first[6]) / MiB:.0f} MiB "
          "(vLLM's arithmetic: 256 MiB)")
    torch_missing = any(r[3] != r[4] for r in rows)
    kept = freed[1] < first[1] - 512 * MiB  # the freed GiB did not come back
    if torch_missing:
        print("diagnosis: A. vllm_mem's torch figures differ from torch.cuda.memory_reserved(): the torch "
              "cache is counted as non-torch (provider: " + ("loaded" if loaded else "not loaded") + ").")
    elif kept:
        back = "came back later" if later[1] >= first[1] - 64 * MiB else "still not back 0.2 s later"
        print(f"diagnosis: B. cuMemFree did not return the 1 GiB to the free figure at once ({back}); the "
              "256 MiB allocation after it moved free memory by "
              f"{(later[1] - last[1]) / MiB:.0f} MiB.")
    else:
        print("diagnosis: C. the figures follow the arithmetic here; the first run's 1 GiB does not reproduce.")
    cu_free(handle1)
    cu_free(handle2)
    del weights
    return 0


if __name__ == "__main__":
    sys.exit(main())
