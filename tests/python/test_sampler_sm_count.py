"""The profile run's Triton top-k/top-p sampler keeps one float32 vocabulary row per program,
min(num_compute_units, rows) programs (vllm/v1/sample/ops/topk_topp_triton.py
apply_top_k_top_p_triton, PR #33538, from 0.17: rule sampler_kernel_programs). num_compute_units is
torch's multi_processor_count: the planned GPU's SM count from the catalog (gpu_catalog.json
sm_count, each cited), 132 (the H100 SXM's) for a GPU outside the catalog, with a note."""

from __future__ import annotations

import vllm_mem

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
VOCAB = 128_256  # Llama-3.1-8B-Instruct's config.json vocab_size
# Same scheduler sizes on both GPUs (vLLM's defaults differ: 1024 on H100, 256 on A100 in 0.19).
SIZES = {"max_num_seqs": 1024, "max_num_batched_tokens": 8192, "max_model_len": 8192, "vllm_version": "0.19"}


def test_every_catalog_gpu_has_its_sm_count_and_source() -> None:
    counts = {g.name: g.sm_count for g in vllm_mem.gpu_catalog()}
    assert all(n > 0 for n in counts.values()) and all(g.sm_source for g in vllm_mem.gpu_catalog())
    # NVIDIA's architecture whitepapers (H100: 132 SXM5 / 114 PCIe; A100: 108), AMD's CU counts.
    named = ("H100-80GB", "H100-PCIe-80GB", "A100-80GB", "MI300X")
    assert [counts[name] for name in named] == [132, 114, 108, 304]
    assert vllm_mem.lookup_gpu("A100-80GB").to_dict()["sm_count"] == 108


def test_an_a100_plan_keeps_24_fewer_sampler_rows_than_an_h100_plan() -> None:
    h100 = vllm_mem.plan(LLAMA, gpu="H100-80GB", **SIZES)
    a100 = vllm_mem.plan(LLAMA, gpu="A100-80GB", **SIZES)
    # min(SMs, 1,024 rows) rows of 128,256 float32 logits: (132 - 108) x 128,256 x 4 bytes.
    expected = (132 - 108) * VOCAB * 4
    assert expected == 12_312_576
    assert h100.activation_peak_bytes - a100.activation_peak_bytes == expected


def test_a_gpu_outside_the_catalog_takes_the_h100_count_and_says_so() -> None:
    h100 = vllm_mem.plan(LLAMA, gpu="H100-80GB", **SIZES)
    for name in (None, "a runtime's own device name"):
        unknown = vllm_mem.plan(LLAMA, gpu=name, total_memory_bytes=h100.total_memory_bytes, **SIZES)
        assert unknown.activation_peak_bytes == h100.activation_peak_bytes
        assert "132 SMs" in str(unknown) and "132 SMs" in unknown.to_dict()["sampler_programs_note"]
    assert "132 SMs" not in str(h100) and h100.to_dict()["sampler_programs_note"] is None
    # Releases without the Triton sampler (before 0.17) have no rows, so nothing to say.
    old = vllm_mem.plan(LLAMA, total_memory_bytes=h100.total_memory_bytes, **{**SIZES, "vllm_version": "0.16"})
    assert "132 SMs" not in str(old)


def test_a_sweep_sizes_each_gpu_with_its_own_count() -> None:
    gpus = ["H100-80GB", "A100-80GB", "MI300X"]
    table = vllm_mem.sweep(LLAMA, gpus=gpus, as_frame=False, **SIZES)
    for i, gpu in enumerate(table["gpu"]):
        plan = vllm_mem.plan(LLAMA, gpu=str(gpu), **SIZES)
        assert int(table["activation_peak_bytes"][i]) == plan.activation_peak_bytes, gpu
    peaks = {str(g): int(b) for g, b in zip(table["gpu"], table["activation_peak_bytes"], strict=True)}
    assert peaks["H100-80GB"] - peaks["A100-80GB"] == (132 - 108) * VOCAB * 4
