/*!
 * \file vllm_mem/model/approximations.h
 * \brief The rules of thumb of vLLM-Omni's GPU-memory guide, kept as plainly named
 *        approximations so a report can show how far each is from the exact figure.
 *
 * None of these is used for sizing. The exact functions are ComputeWeights / WeightBytes
 * (vllm_mem/model/weights.h) and ComputeKvCacheCapacity (vllm_mem/kv_cache/kv_cache_capacity.h); docs/approximations.md
 * measures the gap on real models.
 */
#ifndef VLLM_MEM_MODEL_APPROXIMATIONS_H_
#define VLLM_MEM_MODEL_APPROXIMATIONS_H_

#include <cstdint>
#include <string_view>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The guide's `batch x seq_len x hidden_size x num_layers x 2 x dtype_size`.
 *  It assumes every layer stores hidden_size values for K and for V per token, which is true
 *  only for multi-head attention: GQA / MQA models store num_kv_heads x head_dim (several times
 *  less), MLA models one latent, sliding-window layers only the window. InvalidArgument for
 *  negative inputs or overflow. */
int64_t RuleOfThumbKvCacheBytes(int64_t batch_size, int64_t seq_len, int64_t hidden_size,
                                int64_t num_layers, int64_t dtype_bytes);

/*! \brief Bytes per value for the rules of thumb: "auto" is the served model dtype (vLLM's
 *  --dtype auto), otherwise any ParseDType spelling, so "int8" / "fp8" give the guide's 1 byte. */
int64_t RuleOfThumbDTypeBytes(const ModelSpec& spec, std::string_view dtype);

/*! \brief Same, reading hidden_size and num_layers from \p spec. */
int64_t RuleOfThumbKvCacheBytes(const ModelSpec& spec, int64_t batch_size, int64_t seq_len,
                                std::string_view dtype);

/*! \brief The guide's `num_parameters x dtype_size`: ignores vocab padding, tensor-parallel
 *  replication, quantization scales and the rotary cache. */
int64_t RuleOfThumbWeightBytes(int64_t num_parameters, int64_t dtype_bytes);

/*! \brief Same, with NumParameters(spec). */
int64_t RuleOfThumbWeightBytes(const ModelSpec& spec, std::string_view dtype);

/*! \brief The guide's "activation memory is usually 10-30% of model weight memory". */
struct ActivationRange {
  int64_t low_bytes = 0;   //!< 10% of the weights
  int64_t high_bytes = 0;  //!< 30% of the weights
};

/*! \brief 10% and 30% of \p weight_bytes (rounded down). vLLM's real activation peak depends on
 *  max_num_batched_tokens and the vocabulary, not on the weights. */
ActivationRange RuleOfThumbActivationBytes(int64_t weight_bytes);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_APPROXIMATIONS_H_
