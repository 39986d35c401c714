/*!
 * \file tests/cpp/deepseek_v32_config.h
 * \brief DeepSeek-V3.2's attention and indexer dimensions on a dense body, for the tests of its
 *        sparse-attention buffers (the indexer's profile request and FlashMLA sparse's load-time
 *        reservation): one definition for both. The MoE layers' share of the shared workspace is
 *        tests/python/test_families_deepseek_v32.py's.
 */
#ifndef VLLM_MEM_TESTS_DEEPSEEK_V32_CONFIG_H_
#define VLLM_MEM_TESTS_DEEPSEEK_V32_CONFIG_H_

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem::testing {

/*! 128 heads, kv_lora_rank 512 and rope 64 (576-wide queries); the indexer's 64 heads of 128, top 2,048. */
inline ModelSpec DeepseekV32DenseBody() {
  return ModelSpec::FromHfConfigText(R"({"model_type": "deepseek_v32", "num_hidden_layers": 61,
    "hidden_size": 7168, "intermediate_size": 18432, "num_attention_heads": 128, "num_key_value_heads": 128,
    "vocab_size": 129280, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128, "v_head_dim": 128, "torch_dtype": "bfloat16", "index_n_heads": 64,
    "index_head_dim": 128, "index_topk": 2048})");
}

}  // namespace vllm_mem::testing

#endif  // VLLM_MEM_TESTS_DEEPSEEK_V32_CONFIG_H_
