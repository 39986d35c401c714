"""AWQ / GPTQ MoE experts as vLLM's WNA16 MoE methods keep them, and the Marlin workspaces.

Read in vLLM's vllm/model_executor/layers/quantization/ (the stored 0.1x-era files; the choice
below holds in every profile's release):

- gptq_marlin.py GPTQMarlinConfig.get_quant_method gives a FusedMoE layer GPTQMarlinMoEMethod
  when utils/marlin_utils.py check_moe_marlin_supports_layer accepts it (hidden % 128 == 0, the
  intermediate per rank a multiple of max(64, group), SiLU), else moe_wna16; awq_marlin.py does
  the same with AWQMoEMethod. Both need compute capability 8.0 (get_min_capability 80), the GPUs
  where the plan picks a mixed-precision linear kernel; Machete (9.0) is a linear kernel only.
- GPTQMarlinMoEMethod.create_weights: w13/w2_qzeros of (E, groups, N // pack_factor) in
  params_dtype (2 bytes per 8 four-bit zero points, where the checkpoint's int32 qzeros take 4),
  kept after process_weights_after_loading; w13/w2_g_idx and their sort indices emptied without
  act-order; layer.workspace = marlin_make_workspace_new(device, 4).
- marlin_utils.py marlin_make_workspace_new: torch.zeros(sms * max_blocks_per_sm, dtype=torch.int);
  kernels/mixed_precision/marlin.py MarlinLinearKernel allocates one with max_blocks_per_sm 1 per
  linear. Both run inside the loader, so inside vLLM's "Model loading took". The caching allocator
  holds each in whole 512-byte blocks.

Qwen3-30B-A3B's shapes (the bundled config.json): hidden 2048, 32 heads and 4 KV heads of 128,
48 layers, 128 experts of moe_intermediate_size 768, bf16. Qwen/Qwen3-30B-A3B-GPTQ-Int4's
quantization_config: GPTQ, 4 bits, group 128, desc_act false, sym true. Per layer at TP 1: qkv
2048 x 5120, o 4096 x 2048; per expert gate_up 2048 x 1536 and down 768 x 2048.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

ROOT = Path(__file__).resolve().parents[2]
LAYERS = 48
EXPERTS = 128
BF16 = 2
GPTQ_INT4 = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def _config(quantization_config: dict[str, Any]) -> dict[str, Any]:
    path = ROOT / "python" / "vllm_mem" / "configs" / "Qwen--Qwen3-30B-A3B.json"
    return {**json.loads(path.read_text()), "quantization_config": quantization_config}


def _expert_qzeros_saved() -> int:
    """Bytes per layer GPTQMarlinMoEMethod's bf16 qzeros save on the checkpoint's int32 ones."""
    # gate_up: 2048 / 128 = 16 groups x 1536 outputs; down: 768 / 128 = 6 groups x 2048 outputs.
    entries = 16 * 1536 + 6 * 2048  # 36,864 (group, output) pairs per expert
    checkpoint = entries // 2  # int32 words of eight 4-bit zero points
    held = entries // 8 * BF16  # one bf16 per eight zero points
    return EXPERTS * (checkpoint - held)  # 128 x 9,216 = 1,179,648


def _workspace(sms: int, blocks: int) -> int:
    """marlin_make_workspace_new(device, blocks): sms x blocks int32, in 512-byte allocator blocks."""
    return -(-sms * blocks * 4 // 512) * 512


def test_marlin_moe_holds_gptq_qzeros_in_the_model_dtype() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(_config(GPTQ_INT4))
    checkpoint = spec.weight_breakdown()["per_pp_rank"][0]
    marlin = spec.weight_breakdown(mp_linear_kernel="marlin")["per_pp_rank"][0]
    # Marlin's linears free the symmetric scheme's qzeros: qkv 16 x 5120 / 2 + o 32 x 2048 / 2.
    linear_qzeros = 16 * 5120 // 2 + 32 * 2048 // 2
    assert _expert_qzeros_saved() == 1_179_648 and linear_qzeros == 73_728
    # Workspaces at weight_breakdown's default 132 SMs: 528 -> 1024 bytes per linear, 2112 -> 2560 per MoE layer.
    workspaces = 2 * _workspace(132, 1) + _workspace(132, 4)
    assert workspaces == 4_608
    per_layer = -_expert_qzeros_saved() - linear_qzeros + workspaces
    assert marlin["total_bytes"] - checkpoint["total_bytes"] == LAYERS * per_layer == -59_940_864
    # Only the workspaces are held beyond the checkpoint's tensors.
    assert marlin["kernel_layout_bytes"] == LAYERS * workspaces


def _plan_weights(gpu: str, **settings: Any) -> int:
    plan = vllm_mem.plan(
        _config(GPTQ_INT4), gpu=gpu, vllm_version="0.19.0", max_model_len=4096, enforce_eager=True, **settings
    )
    return plan.weights_bytes


def test_plan_counts_the_moe_layout_and_the_catalog_gpus_workspaces() -> None:
    # --quantization gptq "forces" vLLM's plain gptq method: the checkpoint's layout.
    forced = _plan_weights("A100-80GB", quantization="gptq")
    # A100 (108 SMs): Marlin linears and Marlin MoE; workspaces 432 -> 512 and 1728 -> 2048 bytes.
    a100 = 2 * _workspace(108, 1) + _workspace(108, 4)
    assert a100 == 3_072
    assert forced - _plan_weights("A100-80GB") == LAYERS * (_expert_qzeros_saved() + 73_728 - a100) == 60_014_592
    # H100: Machete takes the linears (it keeps the checkpoint's qzeros and g_idx registered: one
    # int32 per input, (2048 + 4096) x 4 bytes a layer, and no workspace); the experts are Marlin MoE's.
    g_idx = (2048 + 4096) * 4
    h100 = forced - _plan_weights("H100")
    assert h100 == LAYERS * (_expert_qzeros_saved() - g_idx - _workspace(132, 4)) == 55_320_576


def test_shapes_marlin_moe_cannot_take_are_refused_by_name() -> None:
    # TP 4: 768 / 4 = 192 intermediate columns per rank, not a multiple of 128: the experts go to
    # moe_wna16, which halves the group size to 64 and repeats each scale (not modelled).
    with pytest.raises(vllm_mem.NotModelledError, match="moe_wna16"):
        _plan_weights("H100", tensor_parallel_size=4)
    # TP 2: 384 columns, Marlin MoE's.
    assert _plan_weights("H100", tensor_parallel_size=2) > 0
    # Without a GPU (no kernel) the checkpoint's layout is counted at any split.
    spec = vllm_mem.ModelSpec.from_hf_config(_config(GPTQ_INT4))
    assert spec.weight_bytes(tensor_parallel_size=4) > 0


def test_awq_experts_keep_their_bytes() -> None:
    # AWQMoEMethod: awq_marlin_moe_repack, marlin_moe_permute_scales and moe_awq_to_marlin_zero_points
    # return tensors of the loaded shapes and dtypes; only the MoE workspace is new.
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    spec = vllm_mem.ModelSpec.from_hf_config(_config(awq))
    machete = spec.weight_breakdown(mp_linear_kernel="machete")["per_pp_rank"][0]
    checkpoint = spec.weight_breakdown()["per_pp_rank"][0]
    # Machete's linears widen their zero points (1.5 bytes more per group entry of qkv and o).
    widened = (16 * 5120 + 32 * 2048) * 3 // 2
    assert machete["total_bytes"] - checkpoint["total_bytes"] == LAYERS * (widened + _workspace(132, 4))
