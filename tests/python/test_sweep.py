"""vllm_mem.sweep (python/vllm_mem/plan_sweep.py): columns over the cross product, equal to plan() row by row."""

from __future__ import annotations

import numpy as np
import pytest
import vllm_mem

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def test_sweep_rows_equal_plan() -> None:
    cols = vllm_mem.sweep(LLAMA, gpus=["H100-80GB", "L4", 24 * (1 << 30)], gpu_memory_utilization=[0.5, 0.9],
                          max_model_len=[8192, 131072], tensor_parallel_size=[1, 2, 3],
                          kv_cache_dtype=["auto", "fp8"], as_frame=False)
    n = 3 * 2 * 2 * 3 * 2
    assert all(len(v) == n for v in cols.values())
    assert isinstance(cols["fits"], np.ndarray) and cols["fits"].dtype == bool
    totals = {"H100-80GB": vllm_mem.lookup_gpu("H100-80GB").total_memory_bytes,
              "L4": vllm_mem.lookup_gpu("L4").total_memory_bytes}
    seen = set()
    for i in range(n):
        kwargs = dict(total_memory_bytes=int(cols["total_memory_bytes"][i]),
                      gpu_memory_utilization=float(cols["gpu_memory_utilization"][i]),
                      max_model_len=int(cols["max_model_len"][i]),
                      tensor_parallel_size=int(cols["tensor_parallel_size"][i]),
                      kv_cache_dtype=str(cols["kv_cache_dtype"][i]))
        if cols["gpu"][i] in totals:
            assert cols["total_memory_bytes"][i] == totals[cols["gpu"][i]]
        if cols["failure_phase"][i] == "invalid":
            with pytest.raises(ValueError, match="tensor_parallel_size"):
                vllm_mem.plan(LLAMA, **kwargs)
            seen.add("invalid")
            continue
        p = vllm_mem.plan(LLAMA, **kwargs)
        seen.add(p.failure_phase)
        assert bool(cols["fits"][i]) == p.fits
        assert cols["failure_phase"][i] == p.failure_phase
        assert cols["available_kv_cache_bytes"][i] == p.available_kv_cache_bytes
        assert cols["weights_bytes"][i] == p.weights_bytes
        assert cols["max_model_len_that_fits"][i] == p.max_model_len_that_fits
        assert cols["available_kv_cache_gib"][i] == pytest.approx(p.available_kv_cache_bytes / (1 << 30))
        assert cols["available_kv_cache_fraction"][i] == pytest.approx(
            p.available_kv_cache_bytes / p.total_memory_bytes)
        if p.kv_cache is not None:
            assert cols["num_tokens"][i] == p.kv_cache.num_tokens
            assert cols["max_concurrency"][i] == pytest.approx(p.kv_cache.max_concurrency)
    assert {None, "max_model_len", "invalid"} <= seen


def test_scalar_axes_and_frame_fallback() -> None:
    cols = vllm_mem.sweep(LLAMA, gpus="H100-80GB", max_model_len=8192, as_frame=False)
    assert len(cols["fits"]) == 1 and bool(cols["fits"][0])
    try:
        import pandas  # noqa: F401
    except ImportError:
        assert isinstance(vllm_mem.sweep(LLAMA, gpus="H100", max_model_len=8192), dict)
    else:
        frame = vllm_mem.sweep(LLAMA, gpus="H100", max_model_len=8192)
        assert list(frame["fits"]) == [True]


@pytest.mark.parametrize("kwargs, field", [
    (dict(gpus=[]), "gpus"),
    (dict(gpus=["H100-90GB"]), "gpu"),
    (dict(gpu_memory_utilization=[0.9, 1.2]), "gpu_memory_utilization"),
    (dict(max_model_len=[0]), "max_model_len"),
    # An empty axis sweeps nothing: refused by name (dtype=[] planned the default "auto" before).
    (dict(dtype=[]), "dtype"),
    (dict(kv_cache_dtype=()), "kv_cache_dtype"),
    (dict(max_model_len=[]), "max_model_len"),
])
def test_bad_axes(kwargs: dict, field: str) -> None:
    args = dict(gpus=["H100-80GB"], max_model_len=[8192])
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"^{field}"):
        vllm_mem.sweep(LLAMA, as_frame=False, **args)
