// Hybrid state-space / linear-attention models: the recurrent state per layer and rank, vLLM's
// attention / Mamba page unification with its log lines, grouping, blocks, tokens and
// concurrency. Each expected number names its source.
#include <gtest/gtest.h>

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/kv_cache/mamba_state.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// The fields of Qwen/Qwen3-Next-80B-A3B-Instruct's config.json that decide its memory
// (https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json).
const char* const kQwen3Next = R"({
  "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "torch_dtype": "bfloat16",
  "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
  "head_dim": 256, "intermediate_size": 5120, "vocab_size": 151936, "full_attention_interval": 4,
  "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
  "linear_num_value_heads": 32, "linear_value_head_dim": 128, "num_experts": 512,
  "num_experts_per_tok": 10, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
  "decoder_sparse_step": 1, "mlp_only_layers": [], "max_position_embeddings": 262144,
  "partial_rotary_factor": 0.25, "tie_word_embeddings": false})";

// nvidia/NVIDIA-Nemotron-Nano-9B-v2: the dimensions and the 56-character pattern (27 M, 4 *, 25 -)
// as published (https://huggingface.co/nvidia/NVIDIA-Nemotron-Nano-9B-v2/blob/main/config.json).
std::string NemotronNano9B(const std::string& extra = "") {
  return R"({"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "torch_dtype": "bfloat16",
    "hidden_size": 4480, "num_hidden_layers": 56, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 15680, "vocab_size": 131072, "mamba_num_heads": 128,
    "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "chunk_size": 128,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-")" +
         extra + "}";
}

// ibm-granite/granite-4.0-h-small: the attention and Mamba-2 fields that set the page sizes
// (hidden 4096, 32 heads / 8 KV heads, Mamba-2 128 heads x 64, one group, state 128, conv 4);
// its MoE fields are left out (a dense stand-in: the KV figures do not depend on them).
std::string GraniteHSmall() {
  std::string types;
  for (int i = 0; i < 40; ++i) types += std::string(i ? ", " : "") + ((i % 10 == 5) ? "\"attention\"" : "\"mamba\"");
  return R"({"model_type": "granitemoehybrid", "torch_dtype": "bfloat16", "hidden_size": 4096,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
    "vocab_size": 100352, "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_n_groups": 1, "mamba_d_state": 128,
    "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256, "position_embedding_type": "nope",
    "layer_types": [)" + types + "]}";
}

KvCacheOptions Opts(int64_t max_model_len, int64_t tp = 1) {
  KvCacheOptions o;
  o.max_model_len = max_model_len;
  o.tensor_parallel_size = tp;
  return o;
}

TEST(HybridModel, ReadsQwen3NextLayerTypes) {
  const ModelSpec m = ModelSpec::FromHfConfigText(kQwen3Next);
  ASSERT_TRUE(m.hybrid.has_value());
  EXPECT_EQ(m.hybrid->num_attention_layers, 12);  // every 4th layer (full_attention_interval 4)
  EXPECT_EQ(m.hybrid->num_state_layers, 36);
  EXPECT_EQ(m.layers[3].attention, AttentionKind::kFull);
  EXPECT_TRUE(m.layers[0].recurrent_state);
  EXPECT_TRUE(m.layers[0].moe);
}

TEST(HybridModel, ReadsNemotronPattern) {
  const ModelSpec m = ModelSpec::FromHfConfigText(NemotronNano9B());
  EXPECT_EQ(m.hybrid->num_attention_layers, 4);
  EXPECT_EQ(m.hybrid->num_state_layers, 27);
  EXPECT_EQ(m.hybrid->intermediate_size, 10240);  // mamba_num_heads * mamba_head_dim
  EXPECT_THROW(ModelSpec::FromHfConfigText(R"({"model_type": "nemotron_h", "hidden_size": 64,
    "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 10, "mamba_num_heads": 4,
    "mamba_head_dim": 8, "hybrid_override_pattern": "M*"})"),
               InvalidArgument);
}

// vLLM issues 25797 / 26871: Qwen3-Next-80B-A3B-Instruct at TP 2 in bf16 logs
// "Setting attention block size to 544 tokens ..." and "Padding mamba page size by 1.49% ...".
// Hand check: conv (3, (2*16*128 + 32*128)/2 = 4096) bf16 = 24,576 B; SSM (16, 128, 128) bf16 =
// 524,288 B; page 548,864 B. Attention per token 2 (K,V) * 1 head * 256 * 2 B = 1,024 B, so
// 16 * cdiv(548864, 16 * 1024) = 16 * 34 = 544 and (557,056 - 548,864) / 548,864 = 1.49%.
TEST(HybridAnchor, Qwen3NextTp2) {
  const ModelSpec m = ModelSpec::FromHfConfigText(kQwen3Next);
  const KvCacheCapacity cap = ComputeKvCacheCapacity(m, {int64_t{10} << 30}, Opts(32768, 2));
  EXPECT_EQ(cap.mamba_state_bytes, 548864);
  EXPECT_EQ(cap.attention_block_size, 544);
  EXPECT_EQ(cap.mamba_page_size_padded_bytes, 557056);
  ASSERT_EQ(cap.hybrid_log_lines.size(), 2u);
  EXPECT_EQ(cap.hybrid_log_lines[0],
            "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.");
  EXPECT_EQ(cap.hybrid_log_lines[1],
            "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly "
            "equal.");
  // Groups (get_kv_cache_groups): 12 attention + 36 GDN layers, group size min(12, 36) = 12,
  // so 1 attention group and 3 Mamba groups, no padding layers. One block id costs
  // 557,056 * 12 = 6,684,672 B: 10 GiB / that = 1,606 blocks. One 32,768-token request takes
  // cdiv(32768, 544) = 61 attention blocks + 1 state block in each of 3 Mamba groups = 64:
  // concurrency 1606 / 64 = 25.09x and int(25.09375 * 32768) = 822,272 tokens.
  ASSERT_EQ(cap.groups.size(), 4u);
  EXPECT_EQ(cap.num_padding_layers, 0);
  EXPECT_EQ(cap.bytes_per_block, 6684672);
  EXPECT_EQ(cap.num_blocks, 1606);
  EXPECT_DOUBLE_EQ(cap.max_concurrency, 1606.0 / 64.0);
  EXPECT_EQ(cap.num_tokens, 822272);
  EXPECT_EQ(cap.block_size, 544);
  // vLLM 0.19 printed num_blocks // len(groups) * min block size (issue 40691): 401 * 544.
  KvCacheOptions old = Opts(32768, 2);
  old.kv_tokens_from_concurrency = false;
  EXPECT_EQ(ComputeKvCacheCapacity(m, {int64_t{10} << 30}, old).num_tokens, 218144);
}

// vLLM issue 24280: NVIDIA-Nemotron-Nano-9B-v2 with a 16-bit SSM state sets 672 tokens; the
// current NemotronHForCausalLMConfig takes float32 from the config (1312). Hand check, bf16:
// conv (3, 10240 + 2*8*128) * 2 = 73,728 B, SSM 128*80*128*2 = 2,621,440 B, page 2,695,168 B;
// attention 2 * 8 * 128 * 2 = 4,096 B/token: 16 * cdiv(2695168, 65536) = 16 * 42 = 672.
// float32 SSM: 5,242,880 + 73,728 = 5,316,608 B: 16 * 82 = 1312.
TEST(HybridAnchor, NemotronNano9Bv2) {
  const ModelSpec m = ModelSpec::FromHfConfigText(NemotronNano9B());
  KvCacheOptions o = Opts(8192);
  KvCacheCapacity cap = ComputeKvCacheCapacity(m, {int64_t{20} << 30}, o);
  EXPECT_EQ(cap.mamba_state_bytes, 5316608);
  EXPECT_EQ(cap.attention_block_size, 1312);
  EXPECT_EQ(cap.hybrid_log_lines.back(),
            "Padding mamba page size by 1.08% to ensure that mamba page size and attention page size are exactly "
            "equal.");
  o.mamba_ssm_dtype_from_config = false;
  cap = ComputeKvCacheCapacity(m, {int64_t{20} << 30}, o);
  EXPECT_EQ(cap.mamba_state_bytes, 2695168);
  EXPECT_EQ(cap.attention_block_size, 672);
  // An explicit --mamba-ssm-cache-dtype wins over the config.
  o.mamba_ssm_dtype_from_config = true;
  o.mamba_ssm_cache_dtype = "bfloat16";
  EXPECT_EQ(ComputeKvCacheCapacity(m, {int64_t{20} << 30}, o).attention_block_size, 672);
  // 4 attention + 27 Mamba layers: groups of 4, 7 Mamba groups, one padding layer (vLLM's
  // "Add 1 padding layers").
  EXPECT_EQ(cap.groups.size(), 8u);
  EXPECT_EQ(cap.num_padding_layers, 1);
}

// ibm-granite/granite-4.0-h-small: "Setting attention block size to 528 tokens" and
// "Padding mamba page size by 0.69%" (vLLM 0.11 start-up log). Hand check: conv (3, 8192 + 2*1*128)
// * 2 = 50,688 B, SSM 128*64*128*2 = 2,097,152 B, page 2,147,840 B; 4,096 B/token attention:
// 16 * cdiv(2147840, 65536) = 528; (2,162,688 - 2,147,840) / 2,147,840 = 0.69%.
TEST(HybridAnchor, Granite40HSmall) {
  const ModelSpec m = ModelSpec::FromHfConfigText(GraniteHSmall());
  const KvCacheCapacity cap = ComputeKvCacheCapacity(m, {int64_t{20} << 30}, Opts(8192));
  EXPECT_EQ(cap.attention_block_size, 528);
  EXPECT_EQ(cap.hybrid_log_lines.back(),
            "Padding mamba page size by 0.69% to ensure that mamba page size and attention page size are exactly "
            "equal.");
  // mamba_cache_mode "all": the block is a multiple of lcm(chunk 256, 16) holding one state:
  // 256 * cdiv(cdiv(2147840, 4096) = 525, 256) = 768 (vllm-gaudi PR 1453: 768 with prefix caching).
  KvCacheOptions all = Opts(8192);
  all.mamba_cache_mode = "all";
  EXPECT_EQ(ComputeKvCacheCapacity(m, {int64_t{20} << 30}, all).attention_block_size, 768);
}

TEST(MambaState, GroupReplicationUnderTp) {
  // extra_groups_for_head_shards: 1 group at TP 4 becomes 4; 8 groups at TP 4 stay 8.
  EXPECT_EQ(Mamba2GroupsAfterReplication(1, 4), 4);
  EXPECT_EQ(Mamba2GroupsAfterReplication(8, 4), 8);
  const ModelSpec m = ModelSpec::FromHfConfigText(GraniteHSmall());
  MambaStateOptions o;
  o.tensor_parallel_size = 4;
  const MambaStateLayout s = ComputeMambaState(m, DType::kBFloat16, o);
  // conv_dim (8192 + 2*4*128) / 4 = 2304 per rank, 3 rows; SSM 32 heads per rank.
  EXPECT_EQ(s.tensors[0].shape, (std::vector<int64_t>{3, 2304}));
  EXPECT_EQ(s.tensors[1].shape, (std::vector<int64_t>{32, 64, 128}));
  o.num_speculative_tokens = 2;  // the conv state keeps conv_kernel - 1 + num_spec rows
  EXPECT_EQ(ComputeMambaState(m, DType::kBFloat16, o).tensors[0].shape[0], 5);
}

TEST(MambaState, PageUnificationWithoutPaddingPrintsOneLine) {
  HybridBlockSizeInputs in;
  in.attention_page_per_token_bytes = 1024;
  in.mamba_page_size_bytes = 32 * 1024;
  const HybridBlockSize b = AlignHybridBlockSize(in);
  EXPECT_EQ(b.attention_block_size_tokens, 32);
  EXPECT_EQ(b.mamba_page_size_padded_bytes, 0);
  EXPECT_EQ(b.log_lines.size(), 1u);
  // A --block-size above the unified size is kept, and no "Setting" line is printed.
  in.user_block_size_tokens = 64;
  const HybridBlockSize u = AlignHybridBlockSize(in);
  EXPECT_EQ(u.attention_block_size_tokens, 64);
  ASSERT_EQ(u.log_lines.size(), 1u);
  EXPECT_EQ(u.log_lines[0].rfind("Padding mamba page size by 100.00%", 0), 0u);
}

TEST(MambaState, RefusesWhatVllmRefuses) {
  const ModelSpec m = ModelSpec::FromHfConfigText(kQwen3Next);
  KvCacheOptions o = Opts(4096, 2);
  o.mamba_cache_mode = "sometimes";
  EXPECT_THROW(ComputeKvCacheCapacity(m, {int64_t{10} << 30}, o), InvalidArgument);
  o = Opts(4096, 2);
  o.mamba_ssm_cache_dtype = "fp8";  // CacheConfig's MambaDType has no fp8
  EXPECT_THROW(ComputeKvCacheCapacity(m, {int64_t{10} << 30}, o), InvalidArgument);
  o = Opts(4096, 2);
  o.disable_hybrid_kv_cache_manager = true;  // Mamba specs cannot become full attention
  EXPECT_THROW(ComputeKvCacheCapacity(m, {int64_t{10} << 30}, o), InvalidArgument);
  o = Opts(4096, 3);  // 16 key heads do not split over 3 ranks
  EXPECT_THROW(ComputeKvCacheCapacity(m, {int64_t{10} << 30}, o), InvalidArgument);
}

// vLLM's own hybrid unit tests (test_kv_cache_utils.py: test_auto_fit_max_model_len_with_hybrid,
// test_unify_kv_cache_spec_page_size_mamba, new_mamba_spec's page) are in test_kv_cache_groups.cc
// (AutoFitWithMambaHybrid, MambaPagesArePaddedAndAttentionBlocksScaled) and test_kv_cache_spec.cc
// (MaxMemoryMamba).

TEST(HybridWeights, NemotronNano9Bv2Parameters) {
  // Per layer: Mamba-2 in_proj 4480 x (2*10240 + 2*8*128 + 128), conv1d 12288 x 4 + bias, A/D/dt_bias
  // 3*128, norm 10240, out_proj 10240 x 4480; attention q 40*128, k/v 8*128, o; MLP up/down
  // 15680 (ReLU^2, no gate); one norm per block; embeddings untied.
  const ModelSpec m = ModelSpec::FromHfConfigText(NemotronNano9B());
  const int64_t mamba = 4480LL * (2 * 10240 + 2 * 8 * 128 + 128) + 12288LL * 4 + 12288 + 3 * 128 + 10240 +
                        10240LL * 4480;
  const int64_t attention = 4480LL * (40 * 128 + 2 * 8 * 128) + 40LL * 128 * 4480;
  const int64_t mlp = 2LL * 4480 * 15680;
  const int64_t expected = 2LL * 131072 * 4480 + 27 * mamba + 4 * attention + 25 * mlp + 56 * 4480 + 4480;
  EXPECT_EQ(NumParameters(m), expected);
  // bf16, with each Mamba layer's A (128 heads) held in float32: 2 extra bytes each. No
  // rotary cache (Nemotron-H's attention has no positional embedding).
  EXPECT_EQ(WeightBytes(m, WeightOptions{}), 2 * expected + 2 * 27 * 128);
}

}  // namespace
}  // namespace vllm_mem
