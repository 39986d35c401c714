"""MXFP4 expert weights as vLLM holds them when it prints "Model loading took", per MoE backend.

tests/data/mxfp4_startups.json: the gpt-oss-20b start-ups of llm-d-planner's v0.19.0 H100 sweep
(TP 1 and TP 2, 'Using 'TRITON' Mxfp4 MoE backend'), with the printed "Peak GPU memory after
loading weights" and "Model loading took". Before this layout was modelled the plan counted the
experts as created (mxfp4.py create_weights): 12.83 GiB at TP 1 (-5.9% of 13.64) and 6.53 GiB at
TP 2 (-6.8% of 7.01). vLLM 0.19's TRITON backend then swizzles the experts into triton_kernels'
Hopper layouts (the 0.19 wheel's vllm/third_party/triton_kernels, tensor_details/layout_details/
hopper_value.py and hopper_scale.py): values padded to 64 x 64 bytes, a second (swizzled) copy of
the scales with rows padded to 256 beside the loaded ones, and float32 expert biases
(fused_moe/oracle/mxfp4.py convert_to_mxfp4_moe_kernel_format).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem.model_spec import MXFP4_BACKENDS

GiB = float(1 << 30)
DATA = Path(__file__).resolve().parents[1] / "data"
OSS = "openai/gpt-oss-20b"  # the bundled config.json (python/vllm_mem/configs)


def _startups() -> list[dict[str, Any]]:
    return json.loads((DATA / "mxfp4_startups.json").read_text())["startups"]


def _plan_weights_bytes(row: dict[str, Any], gpu: str | None = None) -> int:
    p = vllm_mem.plan(
        OSS,
        gpu=gpu or row["gpu"],
        vllm_version=row["vllm_version"],
        max_model_len=8192,
        tensor_parallel_size=row["tensor_parallel_size"],
    )
    return p.ranks[0].weights_bytes


@pytest.mark.parametrize("row", _startups(), ids=lambda r: r["id"])
def test_plan_weights_within_one_percent_of_model_loading_took(row: dict[str, Any]) -> None:
    printed = row["observed"]["model_loading_took_gib"]
    assert f"Model loading took {printed:.2f} GiB" in " ".join(row["printed"])
    assert "Using 'TRITON' Mxfp4 MoE backend" in row["backend_line"]
    ours = _plan_weights_bytes(row) / GiB
    print(row["id"], round(ours, 3), printed, f"{ours / printed - 1:+.2%}")
    assert abs(ours / printed - 1) <= 0.01
    # The plan picked TRITON on the H100 by itself: the same figure as asking for it.
    spec = vllm_mem.ModelSpec.from_hf_config(OSS)
    tp = row["tensor_parallel_size"]
    assert spec.weight_bytes(tensor_parallel_size=tp, mxfp4_backend="triton") == round(ours * GiB)


@pytest.mark.parametrize("row", _startups(), ids=lambda r: r["id"])
def test_the_layout_is_what_loading_adds_after_the_printed_peak(row: dict[str, Any]) -> None:
    """The tensors as created are at most the printed peak after load_weights (which also holds
    the loader's transients); the Hopper layout is what takes "Model loading took" past it."""
    spec = vllm_mem.ModelSpec.from_hf_config(OSS)
    tp = row["tensor_parallel_size"]
    after = spec.weight_breakdown(tensor_parallel_size=tp, mxfp4_backend="triton")["per_pp_rank"][0]
    # Created: the same tensors with bf16 biases, no swizzled scale copy, no value padding.
    layers, experts, hidden = 24, 32, 2880
    inter = -(-hidden // tp // 64) * 64  # create_weights: the per-rank intermediate rounded up to 64
    value_pad = experts * (
        (-(-hidden // 2 // 64) * 64 - hidden // 2) * 2 * inter + (-(-inter // 2 // 64) * 64 - inter // 2) * hidden
    )
    bias_to_fp32 = experts * (2 * inter + hidden) * 2
    scale_copy = experts * (
        -(-2 * inter // 256) * 256 * (hidden // 32) + -(-hidden // 256) * 256 * -(-(inter // 32) // 2) * 2
    )
    created = after["total_bytes"] - layers * (value_pad + bias_to_fp32 + scale_copy)
    assert created / GiB <= row["observed"]["peak_after_loading_weights_gib"] + 0.005
    assert after["total_bytes"] / GiB > row["observed"]["peak_after_loading_weights_gib"]
    # The created figure alone, what the plan gave before, is 5.9-6.8% below the printed figure.
    assert created / GiB / row["observed"]["model_loading_took_gib"] - 1 < -0.05


@pytest.mark.parametrize(
    ("gpu", "backend"),
    [
        ("H100-80GB", "triton"),
        ("H200-141GB", "triton"),
        ("GH200-96GB", "triton"),  # SM90: OAITritonExperts
        ("B200-180GB", "flashinfer_trtllm"),
        ("B300-288GB", "flashinfer_trtllm"),  # SM100 family: TrtLlmMxfp4Experts
        ("A100-80GB", "marlin"),
        ("L40S", "marlin"),
        ("RTX-5090", "marlin"),  # 8.x, 12.0: MarlinExperts
        ("MI300X", "triton_rocm"),
        ("MI355X", "triton_rocm_gfx950"),  # ROCm: TRITON, strided / CDNA4 scales
    ],
)
def test_the_plan_picks_vllms_backend_for_the_gpu(gpu: str, backend: str) -> None:
    """vLLM 0.19's select_mxfp4_moe_backend: the first of TRTLLM, CK, TRITON, CUTLASS, ...,
    MARLIN whose experts class supports the device (fused_moe/oracle/mxfp4.py)."""
    p = vllm_mem.plan(OSS, gpu=gpu, vllm_version="0.19.0", max_model_len=8192)
    spec = vllm_mem.ModelSpec.from_hf_config(OSS)
    assert p.ranks[0].weights_bytes == spec.weight_bytes(mxfp4_backend=backend)
    # Every other backend gives another figure, but TRTLLM and ROCm's TRITON: both pad to 256 and
    # hold float32 biases with the scales as loaded.
    same = {"triton_rocm", "flashinfer_trtllm"} if backend in {"triton_rocm", "flashinfer_trtllm"} else {backend}
    for other in set(MXFP4_BACKENDS) - same:
        assert spec.weight_bytes(mxfp4_backend=other) != p.ranks[0].weights_bytes, other


@pytest.mark.parametrize("gpu", ["V100-32GB", "T4"])
def test_mxfp4_is_refused_below_compute_capability_8_as_vllm_does(gpu: str) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError, match="Minimum capability: 80") as e:
        vllm_mem.plan(OSS, gpu=gpu, vllm_version="0.19.0", max_model_len=8192)
    assert e.value.field == "quantization"


def test_backends_differ_only_in_the_experts() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(OSS)
    parts = {b: spec.weight_breakdown(mxfp4_backend=b)["per_pp_rank"][0] for b in MXFP4_BACKENDS}
    for b, r in parts.items():
        for key in ("embedding_bytes", "lm_head_bytes", "attention_bytes", "norm_bytes", "buffer_bytes"):
            assert r[key] == parts["triton"][key], (b, key)
    # gfx950 adds one same-size copy of the scales to the ROCm layout: 24 x 32 x (6144 + 3072) x 96.
    assert (
        parts["triton_rocm_gfx950"]["quantization_overhead_bytes"] - parts["triton_rocm"]["quantization_overhead_bytes"]
    ) == 24 * 32 * (6144 + 3072) * 96


@pytest.mark.parametrize("tp", [1, 2])
def test_a_checkpoint_share_keeps_what_only_the_kernel_layout_holds(tmp_path: Path, tp: int) -> None:
    """Headers give the checkpoint as stored; the layout's additions (kernel_layout_bytes) are in
    no file, so a plan from headers adds them back like the rotary cache (startup_plan.cc
    CheckpointShare). A checkpoint holding exactly the created tensors plans the config's figure."""
    from test_hub import write_safetensors

    config = vllm_mem.ModelSpec.from_hf_config(OSS)
    one = config.weight_breakdown()["per_pp_rank"][0]
    assert one["kernel_layout_bytes"] > 0
    created = one["total_bytes"] - one["buffer_bytes"] - one["kernel_layout_bytes"]
    # The tensors as created are the published checkpoint to the byte: "total_size": 13761264768 in
    # https://huggingface.co/openai/gpt-oss-20b/blob/main/model.safetensors.index.json (mxfp4
    # blocks and scales as U8, everything else BF16), so the 0.79 GiB over it at TP 1 is the layout.
    assert created == 13_761_264_768
    folder = tmp_path / "oss"
    folder.mkdir()
    bundled = Path(vllm_mem.__file__).parent / "configs" / "openai--gpt-oss-20b.json"
    (folder / "config.json").write_text(bundled.read_text())
    write_safetensors(folder / "model.safetensors", {"model.layers.0.blob": ("U8", [created])})
    headers = vllm_mem.ModelSpec.from_hf_config(folder, weights_source="headers")
    a = vllm_mem.plan(config, "H100-80GB", max_model_len=8192, tensor_parallel_size=tp)
    b = vllm_mem.plan(headers, "H100-80GB", max_model_len=8192, tensor_parallel_size=tp)
    assert abs(a.ranks[0].weights_bytes - b.ranks[0].weights_bytes) <= 1


@pytest.mark.parametrize(
    ("tp", "padding_bytes"), [(1, 24 * 32 * 32 * (5760 + 2880)), (2, 24 * 32 * 32 * (2944 + 2880))]
)
def test_releases_before_0_17_vendor_a_value_layout_without_the_64_byte_alignment(tp: int, padding_bytes: int) -> None:
    """vLLM 0.15.0 / 0.16.0 vendor a hopper_value.py that pads only to the mma tile (N to 16, K
    bytes to 32); 0.17.0 added the 64 x 64 alignment (vllm_versions.json mxfp4_hopper_value_align).
    gpt-oss-20b's packed K is 1440 bytes for w13 and 1440 (TP 1) / 736 (TP 2) for w2, so 0.16
    holds the 32 bytes x N rows of each less: w13 N = 2 x 2880 / tp (rounded to 64), w2 N = 2880."""

    def weights(version: str) -> int:
        p = vllm_mem.plan(OSS, gpu="H100-80GB", vllm_version=version, max_model_len=8192, tensor_parallel_size=tp)
        return p.ranks[0].weights_bytes

    assert weights("0.19.0") - weights("0.16.0") == padding_bytes
    assert weights("0.17.0") == weights("0.19.0")
