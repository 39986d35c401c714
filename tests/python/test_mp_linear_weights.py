"""AWQ / GPTQ / compressed-tensors WNA16 linears as the mixed-precision kernel vLLM picks keeps them.

vLLM hands every 4-bit WNA16 linear (not MoE experts) to choose_mp_linear_kernel
(vllm/model_executor/layers/quantization/kernels/mixed_precision/__init__.py, later
vllm/model_executor/kernels/linear/__init__.py): MacheteLinearKernel first, on compute capability
9.0 only, then MarlinLinearKernel from 8.0. What each leaves allocated after
process_weights_after_loading (machete.py, marlin.py in the same folder):

- Machete: transform_w_zp "pre-apply scales to zero-points", x.data = (-1.0 * w_s *
  x_unpacked.to(w_s.dtype)): each zero point becomes one value in the activation dtype (2 bytes
  for fp16 / bf16) instead of a packed 4-bit one; with zero_points False (symmetric GPTQ) the
  checkpoint's qzeros and g_idx stay registered untouched; act-order keeps a `perm` (int32 per
  input) in act_perm's closure.
- Marlin: marlin_zero_points keeps zero points packed; a symmetric scheme's w_zp and a g_idx
  without act-order become marlin_make_empty_g_idx (empty, freed); act-order keeps the sorted
  g_idx and g_idx_sort_indices (int32 each per input).

AWQ went through choose_mp_linear_kernel from PR #36505 (vllm_versions.json awq_mp_linear_kernel,
since 0.19.0: in v0.19.0's wheel, not v0.18.0's); before it awq_marlin.py repacked for Marlin
(awq_to_marlin_zero_points). The
v0.31.0 H200 start-up of Qwen2.5-7B-Instruct-AWQ prints "Using MacheteLinearKernel for
AutoAWQMarlinLinearMethod" (tests/data/vllm_release_logs.json, synapse-qwen2.5-7b-awq-h200-v0.31.0).

Qwen2.5-7B's shapes (its config.json, bundled): hidden 3584, 28 heads and 4 KV heads of 128,
intermediate 18944, 28 layers, float16; AWQ 4-bit, group 128, zero points. Per layer, one rank:
qkv_proj 3584 x 4608, o_proj 3584 x 3584, gate_up_proj 3584 x 37888, down_proj 18944 x 3584.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

ROOT = Path(__file__).resolve().parents[2]
GiB = float(1 << 30)
FP16 = BF16 = 2
AWQ_7B = "Qwen/Qwen2.5-7B-Instruct-AWQ"
LAYERS = 28
#: (in, out) of each quantized linear of one Qwen2.5-7B layer (the docstring's shapes).
LINEARS = [(3584, 4608), (3584, 3584), (3584, 2 * 18944), (18944, 3584)]
GROUP = 128
#: MarlinLinearKernel's workspace per linear (marlin_utils.py marlin_make_workspace_new: one int32 per
#: SM, allocated while loading), as the caching allocator holds it in 512-byte blocks: 132 SMs (the
#: default of weight_breakdown, an H100 SXM) 528 -> 1024 bytes; 108 (A100) 432 -> 512; four linears a layer.
MARLIN_WORKSPACES = LAYERS * 4 * 1024
MARLIN_WORKSPACES_A100 = LAYERS * 4 * 512


def _group_entries() -> int:
    """(group, output channel) pairs of one layer: one scale and one zero point each."""
    return sum(k // GROUP * n for k, n in LINEARS)


def _awq_7b_config(quantization_config: dict[str, Any]) -> dict[str, Any]:
    path = ROOT / "python" / "vllm_mem" / "configs" / "Qwen--Qwen2.5-7B-Instruct-AWQ.json"
    return {**json.loads(path.read_text()), "quantization_config": quantization_config}


def test_one_qwen25_7b_layer_machete_against_marlin() -> None:
    # 28 x 4,608 + 28 x 3,584 + 28 x 37,888 + 148 x 3,584 = 1,820,672 groups a layer; Machete holds
    # each zero point in 2 bytes, Marlin (as the checkpoint) in half a byte.
    assert _group_entries() == 1_820_672
    spec = vllm_mem.ModelSpec.from_hf_config(AWQ_7B)
    checkpoint = spec.weight_breakdown()["per_pp_rank"][0]
    machete = spec.weight_breakdown(mp_linear_kernel="machete")["per_pp_rank"][0]
    marlin = spec.weight_breakdown(mp_linear_kernel="marlin")["per_pp_rank"][0]
    per_layer_machete = _group_entries() * (FP16 + FP16)  # scales + widened zero points
    per_layer_marlin = _group_entries() * FP16 + _group_entries() // 2  # scales + packed zero points
    assert checkpoint["quantization_overhead_bytes"] == LAYERS * per_layer_marlin
    assert marlin["quantization_overhead_bytes"] == LAYERS * per_layer_marlin + MARLIN_WORKSPACES
    assert machete["quantization_overhead_bytes"] == LAYERS * per_layer_machete
    # The whole model: 50,978,816 groups x 1.5 bytes = 76,468,224 bytes, none of it in the checkpoint;
    # Marlin holds none of it but its 112 workspaces (114,688 bytes).
    assert machete["total_bytes"] - checkpoint["total_bytes"] == 76_468_224
    assert machete["kernel_layout_bytes"] == 76_468_224 and marlin["kernel_layout_bytes"] == MARLIN_WORKSPACES
    assert spec.weight_bytes(mp_linear_kernel="machete") == machete["total_bytes"]
    assert spec.weight_bytes(mp_linear_kernel="marlin") - spec.weight_bytes() == MARLIN_WORKSPACES == 114_688


@pytest.mark.parametrize("desc_act", [False, True])
def test_symmetric_gptq_under_each_kernel(desc_act: bool) -> None:
    # gptq_marlin serves sym=True only (its TYPE_MAP); GPTQ checkpoints carry qzeros and g_idx
    # whatever the symmetry. Checkpoint layout (today's count): fp16 scales, packed qzeros, g_idx
    # only with act-order.
    spec = vllm_mem.ModelSpec.from_hf_config(
        _awq_7b_config({"quant_method": "gptq", "bits": 4, "group_size": GROUP, "desc_act": desc_act, "sym": True})
    )
    scales = _group_entries() * FP16
    packed_zeros = _group_entries() // 2
    per_input = 4 * sum(k for k, _ in LINEARS)  # one int32 per input feature: 118,784 bytes a layer
    act_order = per_input if desc_act else 0

    def overhead(kernel: str) -> int:
        return spec.weight_breakdown(mp_linear_kernel=kernel)["per_pp_rank"][0]["quantization_overhead_bytes"]

    assert overhead("") == LAYERS * (scales + packed_zeros + act_order)
    # Marlin frees qzeros (w_zp empty) and g_idx without act-order; act-order: sorted g_idx + indices.
    assert overhead("marlin") == LAYERS * (scales + 2 * act_order) + MARLIN_WORKSPACES
    # Machete keeps qzeros and g_idx as loaded, plus act_perm's perm with act-order.
    assert overhead("machete") == LAYERS * (scales + packed_zeros + per_input + act_order)


def test_gptq_act_order_split_over_tp_on_machete_is_refused_by_name() -> None:
    # MacheteLinearKernel.can_implement refuses act-order when the input is partitioned (row-parallel
    # linears at TP > 1), which go to Marlin; which linears those are is not modelled.
    spec = vllm_mem.ModelSpec.from_hf_config(
        _awq_7b_config({"quant_method": "gptq", "bits": 4, "group_size": GROUP, "desc_act": True, "sym": True})
    )
    with pytest.raises(vllm_mem.NotModelledError, match="desc_act"):
        spec.weight_bytes(tensor_parallel_size=2, mp_linear_kernel="machete")
    assert spec.weight_bytes(tensor_parallel_size=2, mp_linear_kernel="marlin") > 0


def test_asymmetric_gptq_keeps_the_checkpoint_layout() -> None:
    # sym=False is not in gptq_marlin's TYPE_MAP: vLLM serves it with the gptq method (ExLlama),
    # no mixed-precision kernel.
    spec = vllm_mem.ModelSpec.from_hf_config(
        _awq_7b_config({"quant_method": "gptq", "bits": 4, "group_size": GROUP, "sym": False})
    )
    assert spec.weight_bytes(mp_linear_kernel="machete") == spec.weight_bytes()


def test_an_unknown_kernel_names_the_field() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(AWQ_7B)
    with pytest.raises(ValueError, match="mp_linear_kernel"):
        spec.weight_bytes(mp_linear_kernel="exllama")
    with pytest.raises(TypeError, match="mp_linear_kernel"):
        spec.weight_breakdown(mp_linear_kernel=None)  # type: ignore[arg-type]


def _plan_weights(gpu: str, version: str, config: Any = AWQ_7B, **settings: Any) -> int:
    # Eager: Model Runner V2's measured graph memory (0.29+) is not modelled, and no graph changes the weights.
    plan = vllm_mem.plan(config, gpu=gpu, vllm_version=version, max_model_len=4096, enforce_eager=True, **settings)
    return plan.weights_bytes


def test_plan_picks_the_kernel_vllm_picks_per_gpu_and_release() -> None:
    extra = 76_468_224  # Machete's widened zero points (above)
    # Turing (7.5): vLLM's AWQ kernel keeps the checkpoint's tensors and allocates no workspace.
    checkpoint = _plan_weights("T4", "0.31.0")
    # 9.0 on a release whose awq_marlin chooses through choose_mp_linear_kernel: Machete.
    assert _plan_weights("H200", "0.31.0") - checkpoint == extra
    assert _plan_weights("H100", "0.19.0") - checkpoint == extra
    # 0.18 repacked AWQ for Marlin whatever the GPU; 8.x and 12.x take Marlin: the checkpoint's AWQ
    # tensors plus a workspace per linear, sized by the catalog GPU's SMs (RTX 5090: 170 -> 1024 bytes).
    assert _plan_weights("H200", "0.18.0") - checkpoint == MARLIN_WORKSPACES
    assert _plan_weights("A100-80GB", "0.17.0") - checkpoint == MARLIN_WORKSPACES_A100
    assert _plan_weights("A100-80GB", "0.31.0") - checkpoint == MARLIN_WORKSPACES_A100
    assert _plan_weights("RTX-5090", "0.31.0") - checkpoint == MARLIN_WORKSPACES


def test_plan_of_symmetric_gptq_per_gpu_and_forced_method() -> None:
    config = _awq_7b_config({"quant_method": "gptq", "bits": 4, "group_size": GROUP, "sym": True})
    per_input = 4 * sum(k for k, _ in LINEARS)
    # --quantization gptq makes vLLM "force gptq" (gptq_marlin.py override_quantization_method):
    # the ExLlama kernel keeps the checkpoint's tensors, the count without a kernel.
    forced = _plan_weights("H100", "0.19.0", config, quantization="gptq")
    assert _plan_weights("H100", "0.19.0", config) - forced == LAYERS * per_input  # Machete keeps g_idx
    marlin_frees = LAYERS * (_group_entries() // 2)  # Marlin frees the packed qzeros, adds its workspaces
    assert forced - _plan_weights("A100-80GB", "0.19.0", config) == marlin_frees - MARLIN_WORKSPACES_A100


def test_awq_on_a_hybrid_widens_only_the_non_expert_zero_points() -> None:
    # Qwen3.6-35B-A3B (tests/data/vllm_release_logs.json configs, bf16): with linear_attn, the router
    # and the shared-expert gate left unquantized, the AWQ linears outside the experts are the
    # shared expert's gate_up 2048 x 1024 and down 512 x 2048 in each of the 40 layers, and
    # attention's qkv 2048 x 9216 and o 4096 x 2048 in the 10 full-attention layers. The routed
    # experts go through the MoE kernels (AutoAWQMoEMethod), not choose_mp_linear_kernel: their
    # tensors keep the checkpoint's bytes, and each of the 40 MoE layers allocates a Marlin MoE
    # workspace (4 x 132 int32 = 2112 bytes, 2560 in allocator blocks; test_moe_wna16_weights.py).
    doc = json.loads((ROOT / "tests" / "data" / "vllm_release_logs.json").read_text())
    config = doc["configs"]["Qwen/Qwen3.6-35B-A3B"]["config"]
    awq = {
        "quant_method": "awq",
        "bits": 4,
        "group_size": GROUP,
        "zero_point": True,
        "modules_to_not_convert": ["linear_attn", "mlp.gate", "shared_expert_gate", "visual"],
    }
    spec = vllm_mem.ModelSpec.from_hf_config({**config, "quantization_config": awq})
    shared = 2048 // GROUP * 1024 + 512 // GROUP * 2048
    attention = 2048 // GROUP * 9216 + 4096 // GROUP * 2048
    groups = 40 * shared + 10 * attention
    moe_workspaces = 40 * 2560
    assert spec.weight_bytes(mp_linear_kernel="machete") - spec.weight_bytes() == (
        groups * (BF16 * 2 - 1) // 2 + moe_workspaces
    )
    # Marlin: the same bytes, plus a 1024-byte workspace for each of the 40 x 2 + 10 x 2 linears.
    marlin_workspaces = (40 * 2 + 10 * 2) * 1024
    assert spec.weight_bytes(mp_linear_kernel="marlin") - spec.weight_bytes() == marlin_workspaces + moe_workspaces
