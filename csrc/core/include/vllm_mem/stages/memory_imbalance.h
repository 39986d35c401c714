/*!
 * \file vllm_mem/stages/memory_imbalance.h
 * \brief SGLang's cross-rank memory-imbalance check, which vLLM lacks: with tensor (or pipeline)
 *        parallelism every rank is sized by the tightest one (vLLM takes the minimum block count
 *        over workers), so one GPU with much less free memory than the others, usually because
 *        another process sits on it, silently shrinks the whole engine.
 *
 * SGLang (model_runner.init_torch_distributed): with tp > 1, a rank warns when
 * min_free_over_ranks < local_free * 0.9. Here the same test runs over every rank at once.
 */
#ifndef VLLM_MEM_STAGES_MEMORY_IMBALANCE_H_
#define VLLM_MEM_STAGES_MEMORY_IMBALANCE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace vllm_mem {

/*! \brief SGLang's ratio: warn when the minimum free is below 0.9 x a rank's free. */
inline constexpr double kSglangImbalanceRatio = 0.9;

/*! \brief The verdict over all ranks. */
struct MemoryImbalance {
  bool imbalanced = false;
  double ratio = kSglangImbalanceRatio;
  std::vector<int64_t> free_bytes_per_rank;
  int64_t min_free_bytes = 0;
  int64_t max_free_bytes = 0;
  int64_t min_rank = 0;             //!< the rank with least free memory (first on ties)
  int64_t max_rank = 0;             //!< the rank with most free memory (first on ties)
  std::vector<int64_t> warning_ranks;  //!< ranks where min < free * ratio (SGLang warns there)
  int64_t lost_bytes = 0;           //!< max - min: what the tightest rank costs every other rank
  std::string message;              //!< one warning with per-rank figures; "" when balanced
};

/*! \brief Checks the free memory of each rank (index = rank). InvalidArgument for an empty
 *  list, a negative figure, or a ratio outside (0, 1]. */
MemoryImbalance CheckMemoryImbalance(const std::vector<int64_t>& free_bytes_per_rank,
                                     double ratio = kSglangImbalanceRatio);

}  // namespace vllm_mem

#endif  // VLLM_MEM_STAGES_MEMORY_IMBALANCE_H_
