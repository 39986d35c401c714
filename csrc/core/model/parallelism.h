/*!
 * \file core/model/parallelism.h
 * \brief How vLLM splits a model over tensor- and pipeline-parallel ranks: one definition used
 *        by weights, KV-cache and activation sizing alike.
 */
#ifndef VLLM_MEM_CORE_MODEL_PARALLELISM_H_
#define VLLM_MEM_CORE_MODEL_PARALLELISM_H_

#include <cstdint>
#include <utility>

namespace vllm_mem {

/*! \brief [first, last) decoder layers held by pipeline rank \p pp_rank, as vLLM's
 *  get_pp_indices: an even split, the remainder going to the ranks before the last one
 *  (the last rank also holds the LM head and sampler). */
std::pair<int64_t, int64_t> PipelineLayerRange(int64_t num_layers, int64_t pp_rank, int64_t pp_size);

/*! \brief Checks tensor_parallel_size / pipeline_parallel_size are >= 1 and that PP does not
 *  exceed the layer count. InvalidArgument naming the field otherwise. */
void ValidateParallelism(int64_t num_layers, int64_t tensor_parallel_size, int64_t pipeline_parallel_size);

/*! \brief KV heads per tensor-parallel rank: max(1, total / tp). Heads are replicated when
 *  tp > total; InvalidArgument (field tensor_parallel_size) when neither divides the other,
 *  as vLLM's model code asserts. 0 for an attention-free model (no KV heads). */
int64_t KvHeadsPerRank(int64_t total_kv_heads, int64_t tensor_parallel_size);

/*! \brief Query heads per rank; InvalidArgument unless tp divides num_attention_heads. */
int64_t AttentionHeadsPerRank(int64_t num_attention_heads, int64_t tensor_parallel_size);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_PARALLELISM_H_
