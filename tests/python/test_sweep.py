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
    assert cols["enforce_eager"].dtype == bool and not cols["enforce_eager"].any()
    assert all(cols[k].dtype == np.float64 for k in cols if k.endswith(("_gib", "_fraction")))
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
            with pytest.raises(ValueError, match="tensor_parallel_size") as err:
                vllm_mem.plan(LLAMA, **kwargs)
            assert cols["invalid_reason"][i] == str(err.value)
            seen.add("invalid")
            continue
        assert cols["invalid_reason"][i] is None
        p = vllm_mem.plan(LLAMA, **kwargs)
        seen.add(p.failure_phase)
        assert bool(cols["fits"][i]) == p.fits
        assert cols["failure_phase"][i] == p.failure_phase
        assert cols["available_kv_cache_bytes"][i] == p.available_kv_cache_bytes
        assert cols["weights_bytes"][i] == p.weights_bytes
        assert cols["max_model_len_that_fits"][i] == p.max_model_len_that_fits
        # The core's GiB and fraction columns are plan()'s figures over a GiB and over the total,
        # exactly (bytes below 2**53 convert to float64 exactly, and one division rounds once).
        for stem in ("requested", "weights", "activation_peak", "non_torch", "cudagraph", "available_kv_cache"):
            figure = getattr(p, stem + "_bytes")
            assert cols[stem + "_gib"][i] == figure / (1 << 30), stem
            assert cols[stem + "_fraction"][i] == figure / p.total_memory_bytes, stem
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


@pytest.mark.parametrize(("model", "tp", "fixed"), [
    # Each fixed setting reaches every row, as plan() takes it (docs/settings.md's table).
    ("deepseek-ai/DeepSeek-V3", 8, {"decode_context_parallel_size": 8}),
    (LLAMA, 2, {"cpu_offload_gb": 2.0}),
    (LLAMA, 2, {"speculative_config": {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                                       "num_speculative_tokens": 3}}),
    (LLAMA, 2, {"enable_prefix_caching": False, "vllm_version": "0.19.0"}),
], ids=["dcp", "cpu-offload", "eagle3", "prefix-caching-0.19"])
def test_fixed_settings_reach_every_row(model: str, tp: int, fixed: dict) -> None:
    axes = dict(gpus=["H200", "B200"], gpu_memory_utilization=[0.6, 0.9], max_model_len=[4000, 32768],
                tensor_parallel_size=[tp], as_frame=False)
    cols = vllm_mem.sweep(model, **axes, **fixed)
    if "vllm_version" not in fixed:  # the setting changed the rows
        assert list(cols["num_tokens"]) != list(vllm_mem.sweep(model, **axes)["num_tokens"])
    assert set(cols["failure_phase"]) != {"invalid"}
    for i in range(len(cols["fits"])):
        p = vllm_mem.plan(model, gpu=str(cols["gpu"][i]),
                          gpu_memory_utilization=float(cols["gpu_memory_utilization"][i]),
                          max_model_len=int(cols["max_model_len"][i]), tensor_parallel_size=tp, **fixed)
        assert cols["failure_phase"][i] == p.failure_phase
        assert cols["available_kv_cache_bytes"][i] == p.available_kv_cache_bytes
        assert cols["weights_bytes"][i] == p.weights_bytes
        if p.kv_cache is not None:
            assert cols["num_tokens"][i] == p.kv_cache.num_tokens
            assert cols["max_concurrency"][i] == pytest.approx(p.kv_cache.max_concurrency)


def test_a_hybrids_prefix_caching_is_a_fixed_setting() -> None:
    # Up to 0.27, prefix caching asked for on Nemotron-H leaves the mode to its class's flag (not
    # modelled): every row is refused (invalid) until the sweep settles it, as plan() asks. From
    # 0.28 prefix caching is on for hybrids by default with mode 'align' for every class: the
    # default rows plan as plan() does.
    from test_hybrid_models import NEMOTRON_NANO_9B_V2

    asked = vllm_mem.sweep(NEMOTRON_NANO_9B_V2, max_model_len=[8192, 65536], vllm_version="0.27.0",
                           enable_prefix_caching=True, as_frame=False)
    assert set(asked["failure_phase"]) == {"invalid"}
    with pytest.raises(ValueError) as err:
        vllm_mem.plan(NEMOTRON_NANO_9B_V2, gpu="H100-80GB", max_model_len=8192, vllm_version="0.27.0",
                      enable_prefix_caching=True)
    assert set(asked["invalid_reason"]) == {str(err.value)}  # each row says why, as plan() does
    for fixed in ({}, {"enable_prefix_caching": False}, {"mamba_cache_mode": "align"}):
        cols = vllm_mem.sweep(NEMOTRON_NANO_9B_V2, max_model_len=[8192, 65536], vllm_version="0.28.0",
                              as_frame=False, **fixed)
        for i, length in enumerate((8192, 65536)):
            p = vllm_mem.plan(NEMOTRON_NANO_9B_V2, gpu="H100-80GB", max_model_len=length, vllm_version="0.28.0",
                              **fixed)
            assert cols["num_tokens"][i] == p.kv_cache.num_tokens and cols["fits"][i] == p.fits
    with pytest.raises(ValueError, match="gpus"):
        vllm_mem.sweep(LLAMA, total_memory_bytes=1 << 36)
    with pytest.raises(TypeError, match="enable_prefix_caching"):
        vllm_mem.sweep(LLAMA, enable_prefix_cachin=False)
