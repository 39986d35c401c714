/*!
 * \file vllm_mem/stages/rank_layout.h
 * \brief One engine's workers under tensor and pipeline parallelism: what each GPU holds, which
 *        worker is the tightest, and the engine-wide KV capacity as vLLM computes it.
 *
 * vLLM runs tp x pp workers (rank = pp_rank * tp + tp_rank). Each computes its own available
 * KV bytes (its budget minus its weights and profiling overheads); the engine then keeps the
 * minimum block count over workers (get_kv_cache_configs), so the tightest worker sizes every
 * GPU. The first pipeline rank also holds the input embedding, the last one the LM head and the
 * sampler's logits, and tensor ranks of a pipeline rank are alike unless their GPUs differ
 * (another process on one, or a mixed machine). Weights come from vllm_mem/model/weights.h and the block
 * arithmetic (including the min over workers) from vllm_mem/kv_cache/kv_cache_capacity.h.
 */
#ifndef VLLM_MEM_STAGES_RANK_LAYOUT_H_
#define VLLM_MEM_STAGES_RANK_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {

/*! \brief The engine and its GPUs. */
struct RankLayoutInputs {
  //! Each worker's budget, vLLM's ceil(total * utilization) of its GPU: give the GPUs' totals
  //! (one for all, or tp * pp in rank order) and the utilization.
  std::vector<int64_t> total_memory_bytes_per_worker;
  double gpu_memory_utilization = 0.9;
  //! Optional per-worker free memory at start-up (tp * pp, or one for all): a worker whose free
  //! memory is below its budget fails vLLM's start-up check; empty: not checked.
  std::vector<int64_t> free_memory_bytes_per_worker;
  //! Non-weight, non-KV memory per worker (activation peak + non-torch + applied CUDA-graph
  //! memory), one for all or one per pipeline rank: the planner's per-rank figures.
  std::vector<int64_t> overhead_bytes_per_pp_rank;
  WeightOptions weights;  //!< tensor/pipeline sizes are taken from here
  KvCacheOptions kv;      //!< max_model_len etc.; its parallel sizes are set from weights
};

/*! \brief One worker (one GPU). */
struct WorkerLayout {
  int64_t rank = 0, tp_rank = 0, pp_rank = 0;
  int64_t first_layer = 0, end_layer = 0;  //!< decoder layers [first, end)
  bool holds_embedding = false;            //!< first pipeline rank
  bool holds_lm_head = false;              //!< last pipeline rank (LM head + sampler)
  int64_t total_bytes = 0;
  int64_t budget_bytes = 0;                //!< ceil(total * utilization)
  int64_t free_bytes = -1;                 //!< at start-up when given
  bool fails_startup = false;              //!< free < budget (vLLM's request_memory)
  int64_t weights_bytes = 0;
  int64_t overhead_bytes = 0;
  int64_t available_kv_bytes = 0;          //!< budget - weights - overhead
  int64_t num_blocks = 0;                  //!< this worker's own block count, before the min
  int64_t extra_blocks = 0;                //!< num_blocks - the engine's min: room the min wastes
};

/*! \brief The engine. */
struct RankLayout {
  std::vector<WorkerLayout> workers;       //!< in rank order
  int64_t tightest_rank = 0;               //!< the worker with the fewest blocks
  std::string tightest_reason;             //!< why that worker is the tightest
  KvCacheCapacity kv_cache;                //!< engine-wide: num_blocks = min over workers
  bool fits = false;                       //!< every worker starts and one request fits
  std::string failure_message;             //!< vLLM's message when it does not
};

/*! \brief Per-worker plan of one engine. InvalidArgument for malformed inputs (list lengths,
 *  utilization, parallel sizes). A layout that does not fit is a result with fits = false. */
RankLayout ComputeRankLayout(const ModelSpec& spec, const RankLayoutInputs& inputs);

}  // namespace vllm_mem

#endif  // VLLM_MEM_STAGES_RANK_LAYOUT_H_
