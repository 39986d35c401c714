"""vllm_mem.plan: each failure phase, each lever, the report and the dict, bad input."""

from __future__ import annotations

import json
import math

import pytest
import vllm_mem
from outcome import outcome
from vllm_mem import GiB_bytes

# The release these figures were written for: 0.21, the last whose V1 model runner serves every dense
# model with its CUDA-graph estimate in the KV budget (0.21; 0.22-0.24 give Model Runner V2 to listed
# architectures, Llama from 0.23); from 0.25 Model Runner V2 serves
# dense models and budgets no graphs (vllm_versions.json "model_runner"), which the newest profile
# would apply.
V1_GRAPHS = "0.21"

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
H100 = vllm_mem.lookup_gpu("H100-80GB").total_memory_bytes


def lever(p: vllm_mem.StartupPlan, name: str) -> vllm_mem.PlanSuggestion:
    found = [s for s in p.suggestions if s.lever == name]
    assert found, f"no {name} lever in {[s.lever for s in p.suggestions]}"
    return found[0]


def test_fitting_plan_terms_add_up() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, gpu_memory_utilization=0.92, max_model_len=8192)
    assert p.fits and p.failure_phase is None and p.suggestions == []
    assert p.requested_bytes == math.ceil(H100 * 0.92)
    assert p.available_kv_cache_bytes == (p.requested_bytes - p.weights_bytes - p.activation_peak_bytes
                                          - p.non_torch_bytes - p.cudagraph_bytes)
    kv = p.kv_cache
    assert kv is not None
    assert kv.num_blocks == p.available_kv_cache_bytes // p.ranks[0].kv_bytes_per_block
    assert p.kv_cache_memory_bytes_suggestion == p.available_kv_cache_bytes - 150 * (1 << 20)
    # The same model through a ModelSpec, a dict and a bundled name gives the same plan.
    spec = vllm_mem.ModelSpec.from_hf_config(LLAMA)
    assert vllm_mem.plan(spec, gpu="h100", vllm_version=V1_GRAPHS,
                         max_model_len=8192, gpu_memory_utilization=0.92).to_dict() == p.to_dict()


def test_enforce_eager_removes_graph_memory() -> None:
    graphs = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, max_model_len=8192)
    eager = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, max_model_len=8192, enforce_eager=True)
    assert eager.cudagraph_bytes == 0 < graphs.cudagraph_bytes
    assert eager.available_kv_cache_bytes - graphs.available_kv_cache_bytes == graphs.cudagraph_bytes


def test_phase_free_memory_and_the_decrease_lever() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.9, max_model_len=8192,
                      free_memory_bytes=40 * GiB_bytes)
    assert not p.fits and p.failure_phase == "free_memory"
    assert p.failure_message.startswith("Free memory on device cuda:0 (40.0/79.19 GiB) on startup")
    assert p.shortfall_bytes == p.requested_bytes - 40 * GiB_bytes
    util = lever(p, "gpu_memory_utilization")
    assert util.direction == "decrease" and util.fits_after
    assert util.value == f"{math.floor(40 * GiB_bytes / H100 * 1000) / 1000:.3f}"
    assert util.bytes_freed == p.requested_bytes - math.ceil(H100 * float(util.value))
    assert all(s.direction != "increase" for s in p.suggestions)


def test_phase_weights() -> None:
    p = vllm_mem.plan(LLAMA, gpu="T4", gpu_memory_utilization=0.85, max_model_len=8192)
    assert p.failure_phase == "weights"
    assert p.shortfall_bytes == p.weights_bytes - p.free_memory_bytes
    tp = lever(p, "tensor_parallel_size")
    assert tp.direction == "increase" and tp.fits_after
    assert vllm_mem.plan(LLAMA, gpu="T4", gpu_memory_utilization=0.85, max_model_len=8192,
                         tensor_parallel_size=int(tp.value)).fits
    q = lever(p, "quantization")
    assert q.setting == "--quantization fp8"
    fp8 = vllm_mem.plan(LLAMA, gpu="T4", gpu_memory_utilization=0.85, max_model_len=8192, quantization="fp8")
    assert q.bytes_freed == p.weights_bytes - fp8.weights_bytes


def test_phase_profile_peak_and_batched_tokens() -> None:
    # An 8192-token forward (a 16.5 GiB GPU by size defaults to vLLM's 2048: pinned here).
    kwargs = dict(total_memory_bytes=33 * GiB_bytes // 2, max_model_len=2048, max_num_seqs=256)
    p = vllm_mem.plan(LLAMA, max_num_batched_tokens=8192, **kwargs)
    assert p.failure_phase == "profile_peak"
    assert p.weights_bytes < p.free_memory_bytes < p.weights_bytes + p.activation_peak_bytes + p.non_torch_bytes
    tokens = lever(p, "max_num_batched_tokens")
    assert tokens.direction == "decrease"
    at = vllm_mem.plan(LLAMA, **{**kwargs, "max_num_batched_tokens": int(tokens.value)})
    assert at.failure_phase != "profile_peak"
    assert tokens.bytes_freed == (p.weights_bytes + p.activation_peak_bytes + p.non_torch_bytes
                                  - at.weights_bytes - at.activation_peak_bytes - at.non_torch_bytes)
    assert vllm_mem.plan(LLAMA, max_num_batched_tokens=int(tokens.value) + 1, **kwargs).failure_phase == "profile_peak"


def test_phase_no_kv_blocks_and_the_exact_utilization() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.2, max_model_len=8192)
    assert p.failure_phase == "no_kv_blocks" and p.available_kv_cache_bytes < 0
    assert p.failure_message.startswith("No available memory for the cache blocks.")
    util = lever(p, "gpu_memory_utilization")
    assert util.direction == "increase" and util.fits_after
    value = float(util.value)
    assert vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=value, max_model_len=8192).fits
    assert not vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=round(value - 0.001, 3),
                             max_model_len=8192).fits
    assert all(s.direction != "decrease" for s in p.suggestions)
    # Every lever listed frees something; max_num_seqs is absent because the forward of 8192
    # tokens, not the sampler, sets this peak.
    assert all(s.bytes_freed > 0 for s in p.suggestions)
    assert "max_num_seqs" not in [s.lever for s in p.suggestions]
    # 2048 x 128256 logits: the V1 runner's sampler (13 B/logit) dominates; Model Runner V2, which
    # serves this dense model from 0.25, keeps one float32 copy (4 B/logit) and its forward does.
    big_vocab_rows = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, gpu_memory_utilization=0.25,
                                   max_model_len=8192, max_num_seqs=2048)
    seqs = lever(big_vocab_rows, "max_num_seqs")
    assert big_vocab_rows.failure_phase == "max_model_len"
    assert seqs.direction == "decrease" and seqs.bytes_freed > 0 and seqs.fits_after
    assert not vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, gpu_memory_utilization=0.25,
                             max_model_len=8192, max_num_seqs=int(seqs.value) + 1).fits


def test_phase_max_model_len_and_its_levers() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, gpu_memory_utilization=0.3, max_model_len=131072)
    assert p.failure_phase == "max_model_len"
    fits = p.max_model_len_that_fits
    length = lever(p, "max_model_len")
    assert length.value == str(fits) and length.fits_after and length.direction == "decrease"
    assert vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS,
                         gpu_memory_utilization=0.3, max_model_len=fits).fits
    assert not vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS,
                             gpu_memory_utilization=0.3, max_model_len=fits + 16).fits
    kv8 = lever(p, "kv_cache_dtype")
    assert kv8.setting == "--kv-cache-dtype fp8"
    fp8 = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS,
                        gpu_memory_utilization=0.3, max_model_len=131072,
                        kv_cache_dtype="fp8")
    assert kv8.fits_after == fp8.fits
    eager = lever(p, "enforce_eager")
    assert eager.bytes_freed == p.cudagraph_bytes and not eager.fits_after
    ranked = [s.fits_after for s in p.suggestions]
    assert ranked == sorted(ranked, reverse=True)  # levers that fit alone come first


def test_fewer_capture_sizes_lever() -> None:
    fits = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, gpu_memory_utilization=0.3,
                         max_model_len=131072).max_model_len_that_fits
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS,
                      gpu_memory_utilization=0.3, max_model_len=fits + 1024)
    cap = lever(p, "max_cudagraph_capture_size")
    assert cap.fits_after and cap.direction == "decrease"
    assert vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS,
                         gpu_memory_utilization=0.3, max_model_len=fits + 1024,
                         max_cudagraph_capture_size=int(cap.value)).fits


def test_pipeline_parallel_tightest_rank() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=0.95, max_model_len=8192,
                      max_num_seqs=1024, pipeline_parallel_size=2)
    ranks = p.ranks
    assert len(ranks) == 2 and p.tightest_pp_rank == 1
    assert p.kv_cache is not None
    assert p.kv_cache.num_blocks == min(r.num_blocks for r in ranks)


def test_kv_cache_memory_bytes_path() -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, kv_cache_memory_bytes=20 * GiB_bytes)
    assert p.fits and p.available_kv_cache_bytes == 20 * GiB_bytes


def test_report_and_dict() -> None:
    p = vllm_mem.plan(LLAMA, gpu="L4", vllm_version=V1_GRAPHS, max_model_len=32768)
    text = str(p)
    for word in ("weights", "peak activation", "non-torch", "CUDA graph", "KV cache", "requested",
                 "largest max_model_len that fits", "verdict: DOES NOT FIT", "what to change",
                 "[Available KV cache memory]"):
        assert word in text, word
    assert p.suggestions[0].setting in text
    d = json.loads(json.dumps(p.to_dict()))
    assert d["failure_phase"] == "max_model_len"
    assert d["weights"]["bytes"] == p.weights_bytes
    assert d["weights"]["fraction_of_device"] == pytest.approx(p.weights_bytes / p.total_memory_bytes, rel=1e-5)
    assert d["available_kv_cache"]["gib"] == pytest.approx(p.available_kv_cache_bytes / GiB_bytes, abs=1e-4)
    assert "<table>" in p._repr_html_()


@pytest.mark.parametrize("kwargs, field", [
    (dict(gpu_memory_utilization=1.5), "gpu_memory_utilization"),
    (dict(gpu_memory_utilization=0.0), "gpu_memory_utilization"),
    (dict(max_model_len=0), "max_model_len"),
    (dict(max_model_len=-8), "max_model_len"),
    (dict(tensor_parallel_size=3), "tensor_parallel_size"),
    (dict(tensor_parallel_size=4, gpu_count=2), "tensor_parallel_size"),
    (dict(max_num_seqs=0), "max_num_seqs"),
    (dict(kv_cache_memory_bytes=-1), "kv_cache_memory_bytes"),
    (dict(gpu="H100-90GB"), "gpu"),
    (dict(gpu="A100"), "gpu"),
])
def test_bad_input_names_the_field(kwargs: dict, field: str) -> None:
    args = dict(gpu="H100-80GB", max_model_len=8192)
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"^{field}:"):
        vllm_mem.plan(LLAMA, **args)


def test_unknown_gpu_lists_close_matches() -> None:
    with pytest.raises(ValueError, match="close matches: H100-80GB"):
        vllm_mem.plan(LLAMA, gpu="H100-90GB")


def test_catalog_lookup_spellings() -> None:
    for spelling in ("H100-80GB", "H100", "NVIDIA H100 80GB HBM3", "h100_80gb"):
        assert vllm_mem.lookup_gpu(spelling).total_memory_bytes == 85029158912
    assert vllm_mem.lookup_gpu("RTX-4090").vendor == "nvidia"
    assert vllm_mem.lookup_gpu("MI300X").vendor == "amd"
    names = {g.name for g in vllm_mem.gpu_catalog()}
    assert {"A100-80GB", "A100-40GB", "L4", "L40S", "H200-141GB", "MI300X"} <= names


PLAN_KEYWORDS = [
    {},
    {"max_model_len": 8192, "gpu_memory_utilization": 0.92, "max_num_seqs": 256, "max_num_batched_tokens": 8192},
    {"max_model_len": "auto", "tensor_parallel_size": 2, "kv_cache_dtype": "fp8"},
    {"max_model_len": 131072, "gpu_memory_utilization": 0.3},
    {"total_memory_bytes": H100, "enforce_eager": True},
    {"total_memory_bytes": 8 * GiB_bytes},
    {"max_model_len": 8192.0},
    {"tensor_parallel_size": True},
    {"gpu_memory_utilization": 1.5},
    {"max_num_seqs": -1},
    {"enforce_eagre": True},
    {"vllm_version": ""},
]


@pytest.mark.parametrize("gpu", [None, "H100-80GB", "h100", "L40S", "no-such-gpu"])
@pytest.mark.parametrize("keywords", PLAN_KEYWORDS, ids=repr)
def test_keywords_on_a_loaded_model_plan_as_the_request_path(
        gpu: str | None, keywords: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    # plan(ModelSpec, gpu, **keywords) converts the keywords in C++ and crosses once; an explicit
    # allow_long_max_model_len (False, as the unset variable reads) sends the same call down the
    # request path. Same plan, same errors (field included), on the first call (the GPU name not
    # looked up yet) and the next (looked up).
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    spec = vllm_mem.ModelSpec.from_hf_config(LLAMA)
    for _ in range(2):
        fast = outcome(lambda: vllm_mem.plan(spec, gpu, **keywords))
        by_request = outcome(lambda: vllm_mem.plan(spec, gpu, allow_long_max_model_len=False, **keywords))
        assert fast == by_request


def test_the_common_plan_call_takes_the_keyword_crossing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The equivalence above is only worth something if the keyword crossing is taken: a catalog
    # GPU already looked up, or a byte total; a GPU name beside a total keeps the request path
    # (the name is then the caller's text, not the catalog's).
    from vllm_mem.planner import evaluate

    answered: list[bool] = []
    crossing = evaluate._evaluate_keywords
    monkeypatch.setattr(evaluate, "_evaluate_keywords", lambda *a: answered.append(crossing(*a) is not None) or
                        crossing(*a))
    spec = vllm_mem.ModelSpec.from_hf_config(LLAMA)
    vllm_mem.plan(spec, "H100-80GB")  # looks the name up if no plan has yet
    answered.clear()
    vllm_mem.plan(spec, "H100-80GB", max_model_len=8192)
    vllm_mem.plan(spec, total_memory_bytes=H100)
    vllm_mem.plan(spec, "H100-80GB", total_memory_bytes=H100)
    assert answered == [True, True, False]
