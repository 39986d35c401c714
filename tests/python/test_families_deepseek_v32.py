"""DeepSeek-V3.2 (model_type deepseek_v32) as vLLM 0.19 serves it: DeepSeek-V3's MLA and MoE plus the
sparse-attention indexer on every layer (vllm/model_executor/models/deepseek_v2.py Indexer and
DeepseekV32IndexerCache; models/config.py DeepseekV32ForCausalLM.verify_and_update_config).

The config is DeepSeek-V3's (the bundled deepseek-ai/DeepSeek-V3 config.json) with the indexer fields of
deepseek-ai/DeepSeek-V3.2-Exp's config.json: architectures DeepseekV32ForCausalLM, index_head_dim 128,
index_n_heads 64, index_topk 2048 beside V3's dimensions (seen together in the V3.2 fixtures of code-index
ids 54491311024 and 54828193714, and with V3's 61 layers, 7168 hidden, 128 heads in 59746637458)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

GIB = 1 << 30
LAYERS = 61
HIDDEN = 7168
Q_LORA_RANK = 1536
INDEX_HEADS, INDEX_HEAD_DIM, INDEX_TOPK = 64, 128, 2048

DEEPSEEK_V3: dict[str, Any] = json.loads(
    (Path(vllm_mem.__file__).resolve().parent / "configs" / "deepseek-ai--DeepSeek-V3.json").read_text()
)
DEEPSEEK_V32: dict[str, Any] = {
    **DEEPSEEK_V3,
    "architectures": ["DeepseekV32ForCausalLM"],
    "model_type": "deepseek_v32",
    "index_head_dim": INDEX_HEAD_DIM,
    "index_n_heads": INDEX_HEADS,
    "index_topk": INDEX_TOPK,
}

# vLLM's Indexer, per MLA layer: wq_b (q_lora_rank -> index_n_heads x index_head_dim), wk_weights_proj
# (hidden -> index_head_dim + index_n_heads: wk and weights_proj fused), k_norm (a LayerNorm: weight + bias).
WQ_B = Q_LORA_RANK * INDEX_HEADS * INDEX_HEAD_DIM
WK_WEIGHTS_PROJ = HIDDEN * (INDEX_HEAD_DIM + INDEX_HEADS)
K_NORM = 2 * INDEX_HEAD_DIM
INDEXER = WQ_B + WK_WEIGHTS_PROJ + K_NORM
# The fp8 checkpoint's float32 weight_scale_inv per 128 x 128 block of wq_b and of (unfused) wk.
WQ_B_SCALES = (INDEX_HEADS * INDEX_HEAD_DIM // 128) * (Q_LORA_RANK // 128)
INDEXER_SCALES = WQ_B_SCALES + (INDEX_HEAD_DIM // 128) * (HIDDEN // 128)


# DeepSeek-V3's F32 tensors (41,555,600, below) less its 59 float32 e_score_correction_bias vectors.
V3_BLOCK_SCALES = 41_555_600 - 59 * 256


def test_supported_and_the_indexer_is_read() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V32)
    assert spec.has_exact_rules and "deepseek_v32" in vllm_mem.supported_model_types()
    assert (spec.mla.index_n_heads, spec.mla.index_head_dim, spec.mla.index_topk) == (64, 128, 2048)
    # DeepSeek-V3 itself has no indexer.
    assert vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V3).mla.index_head_dim == 0


def test_indexer_parameters_by_hand() -> None:
    v3 = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V3).num_parameters()
    v32 = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V32).num_parameters()
    assert v32 - v3 == LAYERS * INDEXER == LAYERS * 13_959_424


def _mtp_module_parameters(config: dict[str, Any]) -> int:
    """One next-token-prediction module as DeepSeek's checkpoints store it (model.layers.61: vLLM's
    deepseek_mtp.py): a decoder layer like the last (MoE, and the indexer on V3.2), enorm, hnorm,
    eh_proj (2 x hidden -> hidden), shared_head.norm, and its own copies of embed_tokens and
    shared_head.head."""
    one_more = vllm_mem.ModelSpec.from_hf_config({**config, "num_hidden_layers": LAYERS + 1}).num_parameters()
    decoder_layer = one_more - vllm_mem.ModelSpec.from_hf_config(config).num_parameters()
    vocab = config["vocab_size"]
    return decoder_layer + 3 * HIDDEN + 2 * HIDDEN * HIDDEN + 2 * vocab * HIDDEN


def test_deepseek_v3_checkpoint_total_is_reproduced_exactly() -> None:
    # The Hub's safetensors total for deepseek-ai/DeepSeek-V3, 684,531,386,000 = BF16 3,918,786,560 +
    # F8_E4M3 680,571,043,840 + F32 41,555,600 (code-index id 67469160833; also 58758039937): the 61 layers
    # vLLM loads, the MTP module it skips, and the F32 tensors: the fp8 checkpoint's block scales (one per
    # 128 x 128 block of each quantized linear) and the 59 MoE layers' e_score_correction_bias (256 each,
    # already in the counts). The same rules then give V3.2's total below.
    main = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V3).num_parameters()
    assert main + _mtp_module_parameters(DEEPSEEK_V3) + V3_BLOCK_SCALES == 684_531_386_000


def test_deepseek_v32_count_matches_the_card() -> None:
    # deepseek-ai/DeepSeek-V3.2-Exp's card: 685B parameters (the Hub's count of the checkpoint, the MTP
    # module included); vLLM loads the 61 main layers only. The checkpoint adds the indexer to all 62
    # layers (the MTP layer has one too) with fp8 wq_b / wk and their float32 block scales.
    main = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V32).num_parameters()
    checkpoint = main + _mtp_module_parameters(DEEPSEEK_V32) + V3_BLOCK_SCALES + (LAYERS + 1) * INDEXER_SCALES
    assert checkpoint == 684_531_386_000 + (LAYERS + 1) * (INDEXER + INDEXER_SCALES)
    assert round(checkpoint / 1e9) == 685
    assert round(main / 1e9) == 672  # what vLLM loads without speculative decoding


def test_indexer_weight_bytes_by_hand() -> None:
    # The fp8 checkpoint (quantization_config fp8, 128 x 128 blocks): wq_b stays fp8 with float32 block
    # scales; wk_weights_proj is built with quant_config=None (an fp8 wk is upcast to bf16 when loaded);
    # k_norm's weight and bias are float32 (vLLM layers/layernorm.py LayerNorm).
    v3 = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V3).weight_breakdown()["per_pp_rank"][0]
    v32 = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V32).weight_breakdown()["per_pp_rank"][0]
    assert v32["attention_bytes"] - v3["attention_bytes"] == LAYERS * (WQ_B * 1 + WK_WEIGHTS_PROJ * 2 + K_NORM * 4)
    assert v32["quantization_overhead_bytes"] - v3["quantization_overhead_bytes"] == LAYERS * WQ_B_SCALES * 4
    # The indexer's NeoX-style rope is a second cos/sin cache of MLA's rows (vLLM PR #28968).
    assert v32["buffer_bytes"] == 2 * v3["buffer_bytes"]
    # Replicated: tensor parallelism does not split the indexer.
    v3_tp8 = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V3).weight_breakdown(tensor_parallel_size=8)
    v32_tp8 = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V32).weight_breakdown(tensor_parallel_size=8)
    diff = v32_tp8["per_pp_rank"][0]["attention_bytes"] - v3_tp8["per_pp_rank"][0]["attention_bytes"]
    assert diff == v32["attention_bytes"] - v3["attention_bytes"]


@pytest.mark.parametrize(
    ("kv_cache_dtype", "latent_bytes", "shown"),
    [
        # auto: the model dtype, 576 (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes.
        ("auto", 576 * 2, "bfloat16"),
        ("bfloat16", 576 * 2, "bfloat16"),  # verify_and_update_config turns bfloat16 into auto
        # Every fp8 dtype becomes fp8_ds_mla: 512 fp8 + 4 float32 scales + 64 bf16 rope = 656 bytes.
        ("fp8", 656, "fp8_ds_mla"),
        ("fp8_e4m3", 656, "fp8_ds_mla"),
        ("fp8_ds_mla", 656, "fp8_ds_mla"),
    ],
)
def test_kv_bytes_per_token_by_hand(kv_cache_dtype: str, latent_bytes: int, shown: str) -> None:
    # Per layer and token: the MLA latent, plus the indexer's key of 128 fp8 values and one float32
    # scale per 128 (DeepseekV32IndexerCache head_size 128 + 128 // 128 * 4 = 132, uint8). Both are
    # MLAAttentionSpecs of one block size, so vLLM makes one UniformTypeKVCacheSpecs group whose block
    # holds every layer's pages; FlashMLA's block is 64 tokens.
    budget = 40 * GIB
    cap = vllm_mem.kv_cache_capacity(DEEPSEEK_V32, budget, max_model_len=32768, kv_cache_dtype=kv_cache_dtype)
    per_token = LAYERS * (latent_bytes + 132)
    assert cap.kv_cache_dtype == shown
    assert len(cap.groups) == 1 and cap.groups[0].uniform_type and cap.groups[0].kind == "mla"
    assert cap.block_size == 64 and cap.bytes_per_block == 64 * per_token
    assert cap.num_blocks == budget // (64 * per_token)
    assert cap.num_tokens == cap.num_blocks * 64
    # The indexer's cache is there with every dtype: DeepSeek-V3's latent alone is smaller.
    v3 = vllm_mem.kv_cache_capacity(DEEPSEEK_V3, budget, max_model_len=32768, kv_cache_dtype="auto")
    assert v3.bytes_per_block == 64 * LAYERS * 576 * 2


def test_kv_is_replicated_over_tensor_parallel_ranks() -> None:
    one = vllm_mem.kv_cache_capacity(DEEPSEEK_V32, 40 * GIB, max_model_len=32768)
    eight = vllm_mem.kv_cache_capacity(DEEPSEEK_V32, 40 * GIB, max_model_len=32768, tensor_parallel_size=8)
    assert one.bytes_per_block == eight.bytes_per_block == 64 * LAYERS * (1152 + 132)


def test_missing_indexer_fields_are_named() -> None:
    for field in ("index_n_heads", "index_head_dim", "index_topk"):
        config = {k: v for k, v in DEEPSEEK_V32.items() if k != field}
        with pytest.raises(vllm_mem.InvalidArgumentError) as e:
            vllm_mem.ModelSpec.from_hf_config(config)
        assert e.value.field == field
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**DEEPSEEK_V32, "index_head_dim": "128"})
    assert e.value.field == "index_head_dim"
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.ModelSpec.from_hf_config({**DEEPSEEK_V32, "q_lora_rank": None})
    assert e.value.field == "q_lora_rank"


def test_plan_counts_the_topk_indices_buffer_and_lists_the_profile_caveat() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V32)
    # What the plan leaves out is said in every report: the sparse MLA backends' buffers where it does
    # not know them (FlashMLA sparse's reservation on a catalog GPU and the indexer's buffers are modelled, below).
    assert any("FlashMLA sparse" in c and "WorkspaceManager" in c for c in spec.caveats)
    assert not any("indexer's prefill buffer" in c for c in spec.caveats)
    p = vllm_mem.plan(spec, "H200", tensor_parallel_size=8, max_model_len=32768, max_num_batched_tokens=8192)
    weights = spec.weight_breakdown(tensor_parallel_size=8)["per_pp_rank"][0]["total_bytes"]
    # DeepseekV2Model allocates topk_indices_buffer (max_num_batched_tokens x index_topk int32) at load.
    assert p.weights_bytes - weights == 8192 * INDEX_TOPK * 4


MIB = 1 << 20
# The profile run on one H200 of TP 8 with 1,024 batched tokens: small enough that at 163,840 tokens the
# indexer's request outgrows the fused-MoE workspace, and at 32,768 does not.
# Eager: from 0.29 Model Runner V2 measures its CUDA graphs, which no plan models (the profile run is the same).
PROFILE = {"tensor_parallel_size": 8, "max_num_batched_tokens": 1024, "max_num_seqs": 256, "enforce_eager": True}


def _profile(config: dict[str, Any], max_model_len: int, version: str) -> tuple[Any, Any]:
    p = vllm_mem.plan(config, "H200", max_model_len=max_model_len, vllm_version=version, **PROFILE)
    return p, p._p.ranks[0].activation


def _indexer_by_hand(max_model_len: int, version: str) -> tuple[int, int]:
    """vLLM's indexer in the profile run (vllm_versions.json sparse_indexer_profile): its WorkspaceManager
    request and the tensors it frees when the op returns."""
    if version in ("0.11", "0.12"):
        # get_max_prefill_buffer_size = 2 x max_model_len; sparse_attn_indexer_fake's [keys, 132] uint8,
        # its [keys, 128] fp8 copy and [keys, 1] float32 copy (multiples of 512 bytes here).
        keys = 2 * max_model_len
        return 0, keys * (132 + 128 + 4)
    keys = 40 * max_model_len  # get_max_prefill_buffer_size from PR #27532
    radix = MIB if version >= "0.20" else 0  # RADIX_TOPK_WORKSPACE_SIZE (PR #37421)
    logits = 512 * MIB if version >= "0.19" else 0  # VLLM_SPARSE_INDEXER_MAX_LOGITS_MB (PR #36178)
    return keys * INDEX_HEAD_DIM + keys * 4 + radix, logits


@pytest.mark.parametrize("max_model_len", [163840, 32768])
@pytest.mark.parametrize("version", ["0.11", "0.12", "0.13", "0.18", "0.19", "0.20", "0.28", "0.32"])
def test_indexer_profile_buffers_move_the_peak_by_hand(max_model_len: int, version: str) -> None:
    # DeepSeek-V3 has the same body without the indexer: every other profile term is the same.
    p3, v3 = _profile(DEEPSEEK_V3, max_model_len, version)
    p32, v32 = _profile(DEEPSEEK_V32, max_model_len, version)
    workspace, transient = _indexer_by_hand(max_model_len, version)
    assert v32.sparse_indexer_workspace_bytes == workspace
    assert v32.sparse_indexer_transient_bytes == transient
    # One WorkspaceManager buffer for the indexer and the fused-MoE layers, the larger request.
    shared = max(v3.moe_workspace_bytes, workspace)
    grow = shared - v3.moe_workspace_bytes
    assert v32.moe_workspace_bytes == shared
    assert (grow > 0) == (version not in ("0.11", "0.12") and max_model_len == 163840)
    assert v32.attention_bytes == v3.attention_bytes + transient
    assert v32.mlp_intermediate_bytes == v3.mlp_intermediate_bytes + grow
    assert v32.sampler_phase_bytes == v3.sampler_phase_bytes + grow
    forward = v3.hidden_states_bytes + max(v3.mlp_intermediate_bytes + grow, v3.attention_bytes + transient + shared)
    assert v32.forward_bytes == forward
    # The plan's peak moves by exactly that.
    assert p32.activation_peak_bytes - p3.activation_peak_bytes == (
        max(forward, v32.sampler_phase_bytes) - max(v3.forward_bytes, v3.sampler_phase_bytes)
    )


def test_indexer_request_at_163840_tokens_is_vllms_825_mib() -> None:
    # indexer.py's comment: 40 * 163840 * 132 = 865075200 bytes = 825 MB (MiB), plus the 1 MiB radix top-k.
    _, a = _profile(DEEPSEEK_V32, 163840, "0.28")
    assert a.sparse_indexer_workspace_bytes == 865_075_200 + MIB
    assert round(a.sparse_indexer_workspace_bytes / MIB) == 826


# The FlashMLA sparse backend's WorkspaceManager reservation while the model is built (vllm_versions.json
# sparse_mla_workspace), by hand on one H200 (SM90) of TP 8: 16 heads per rank, 576-wide bf16 rows
# (kv_lora_rank 512 + rope 64), 8,192 batched tokens, max_model_len 32,768.
Q16 = 8192 * 16 * 576 * 2  # q_concat_buffer (0.18+)
PREFILL = 5 * 32768 * 576 * 2  # the fp8_ds_mla prefill workspace (0.13+)
MQA = 8192 * 64 * 576 * 2 + 8192 * 64 * 512 * 2 + 8192 * 16 * 512 * 2  # fp8 MQA prefill buffers (0.31+)


@pytest.mark.parametrize(
    ("version", "kv_cache_dtype", "reserved", "keeps_views"),
    [
        ("0.12", "fp8", 0, True),  # no WorkspaceManager yet
        ("0.13", "fp8", PREFILL, True),
        ("0.13", "auto", 0, True),
        ("0.18", "fp8", Q16 + PREFILL, True),
        ("0.18", "auto", Q16, True),
        ("0.25", "auto", 0, True),  # a bf16 cache goes to FlashAttention MLA sparse on SM90
        ("0.25", "fp8", Q16 + PREFILL, True),
        ("0.31", "fp8", Q16 + PREFILL + MQA, False),
        ("0.32", "fp8", Q16 + PREFILL + MQA, False),
    ],
)
def test_flashmla_sparse_reservation_is_in_the_weights_by_hand(
    version: str, kv_cache_dtype: str, reserved: int, keeps_views: bool
) -> None:
    settings = {
        "tensor_parallel_size": 8,
        "max_model_len": 32768,
        "max_num_batched_tokens": 8192,
        "enforce_eager": True,
    }
    spec = vllm_mem.ModelSpec.from_hf_config(DEEPSEEK_V32)
    p = vllm_mem.plan(spec, "H200", vllm_version=version, kv_cache_dtype=kv_cache_dtype, **settings)
    weights = spec.weight_breakdown(tensor_parallel_size=8)["per_pp_rank"][0]["total_bytes"]
    # "Model loading took" holds the weights, the indexer's top-k buffer and the backend's reservation.
    assert p.weights_bytes - weights == 8192 * INDEX_TOPK * 4 + reserved
    a = p._p.ranks[0].activation
    assert a.shared_workspace_reserved_bytes == reserved
    # The profile run's fused-MoE / indexer request (DeepSeek-V3's body sizes the MoE's) grows the buffer
    # only beyond the reservation: a second buffer while the backend keeps views of the first (to 0.30).
    v3 = vllm_mem.plan(DEEPSEEK_V3, "H200", vllm_version=version, kv_cache_dtype=kv_cache_dtype, **settings)
    request = max(v3._p.ranks[0].activation.moe_workspace_bytes, a.sparse_indexer_workspace_bytes)
    if request <= reserved:
        grow = 0
    else:
        grow = request if keeps_views else request - reserved
    assert a.moe_workspace_bytes == grow


def test_mtp_layer_builds_its_own_topk_buffer() -> None:
    # deepseek_mtp.py: each MTP layer allocates topk_indices_buffer (max_num_batched_tokens x index_topk
    # int32) while it is built, so the drafter's share of "Model loading took" grows with the batch.
    def draft(tokens: int) -> int:
        p = vllm_mem.plan(
            DEEPSEEK_V32,
            "H200",
            tensor_parallel_size=8,
            max_model_len=32768,
            max_num_batched_tokens=tokens,
            enforce_eager=True,
            vllm_version="0.20",
            speculative_config={"method": "mtp", "num_speculative_tokens": 1},
        )
        return p._p.ranks[0].draft_weights_bytes

    assert draft(8192) - draft(4096) == (8192 - 4096) * INDEX_TOPK * 4
