/*!
 * \file core/model/weights_common.h
 * \brief What every weight count shares, dense (weights.cc) and hybrid (hybrid_weights.cc):
 *        the checks before sizing, vLLM's TP split and vocab padding, and a rank's total.
 *        Internal to the model area.
 */
#ifndef VLLM_MEM_CORE_MODEL_WEIGHTS_COMMON_H_
#define VLLM_MEM_CORE_MODEL_WEIGHTS_COMMON_H_

#include <cstdint>
#include <string>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {

/*! \brief The checks vLLM makes before any weight is sized: the parallel layout, the query
 *  heads dividing over TP, and the spec's layer list matching its layer count. */
void CheckWeightLayout(const ModelSpec& spec, const WeightOptions& options);

/*! \brief a / tp, or InvalidArgument(tensor_parallel_size) where vLLM's divide() would assert. */
int64_t SplitEvenly(int64_t a, int64_t tp, const std::string& what);

/*! \brief Rows of the embedding / LM head on one rank: vocab padded to a multiple of 64
 *  (vLLM's DEFAULT_VOCAB_PADDING_SIZE), then split over TP. */
int64_t VocabRowsPerRank(int64_t vocab, int64_t tp);

/*! \brief Elements of one layer's q/k norms on one rank (0 without traits.qk_norm), by
 *  traits.qk_norm_shape; \p heads and \p kv_heads are the rank's, \p tp the TP size. */
int64_t QkNormElements(const ModelSpec& spec, int64_t heads, int64_t kv_heads, int64_t tp);

/*! \brief Sums \p rank's parts into its total and appends it, keeping the fullest rank. */
void AppendRank(RankWeights rank, WeightBreakdown& out);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_WEIGHTS_COMMON_H_
