/*!
 * \file vllm_mem/plan/plan_verdict.h
 * \brief The verdict of a start-up plan, in vLLM's order: the free-memory check of
 *        request_memory, loading the weights, the profile run, then vLLM's KV-cache check.
 *        One function decides it for the plan (startup_plan.h) and for every row of the sweep
 *        (plan_sweep.h), so the two cannot disagree on a phase or a shortfall.
 */
#ifndef VLLM_MEM_PLAN_PLAN_VERDICT_H_
#define VLLM_MEM_PLAN_PLAN_VERDICT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace vllm_mem {

/*! \brief Where a plan fails, in vLLM's start-up order. */
enum class FailurePhase {
  kNone,         //!< fits
  kFreeMemory,   //!< request_memory: free memory < ceil(total * utilization)
  kWeights,      //!< the weights alone do not fit in the device's free memory (OOM while loading)
  kProfilePeak,  //!< weights + activation peak + non-torch exceed free memory (OOM in the profile run)
  kNoKvBlocks,   //!< the KV budget left after profiling holds no block
  kMaxModelLen,  //!< blocks remain, but not one request of max_model_len
};
std::string FailurePhaseName(FailurePhase phase);  //!< "", "free_memory", "weights", ...

/*! \brief What the verdict reads, per GPU: each phase's worst pipeline rank. Filled rank by
 *  rank with AddRank. */
struct VerdictFigures {
  bool request_fits = true;     //!< request_memory passed (the V0 engine has no such check)
  int64_t requested_bytes = 0;  //!< ceil(total x utilization)
  int64_t free_memory_bytes = 0;
  int64_t worst_weights_bytes = 0;
  int64_t worst_non_kv_bytes = 0;  //!< weights + activation peak + non-torch
  bool kv_fits = true;             //!< every rank holds one max_model_len request
  bool any_rank_without_blocks = false;
  int64_t min_blocks = -1;              //!< over ranks (-1: no rank yet)
  int64_t block_shortfall_bytes = 0;    //!< max(0, over ranks: one block - the KV budget)
  int64_t request_shortfall_bytes = 0;  //!< max(0, over ranks: one request - the KV budget)
};

/*! \brief One pipeline rank's figures into \p f. \p kv_fits: the rank holds one request (vLLM's
 *  check on its workers). */
void AddRank(VerdictFigures& f, int64_t weights_bytes, int64_t non_kv_bytes, int64_t available_kv_bytes,
             int64_t bytes_per_block, int64_t bytes_per_request, int64_t num_blocks, bool kv_fits);

/*! \brief vLLM's own words where it has them; the sweep asks for the phase only. */
struct VerdictWords {
  std::string_view request_memory_error;  //!< request_memory's ValueError
  std::string_view kv_shortfall;          //!< the V1 KV check's message
  bool v0_engine = false;                 //!< V0 words its KV failures itself (worker.py)
  int64_t max_model_len = 0;              //!< for V0's message
  int64_t block_size = 0;                 //!< likewise
};

/*! \brief The failing phase, how many bytes per GPU it lacks, and (with \p words) the message. */
struct Verdict {
  FailurePhase phase = FailurePhase::kNone;
  std::string message;
  int64_t shortfall_bytes = 0;
  bool fits() const { return phase == FailurePhase::kNone; }
};

/*! \brief The first phase of vLLM's start-up that \p f fails; \p words null: no message. */
Verdict DecideVerdict(const VerdictFigures& f, const VerdictWords* words);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_PLAN_VERDICT_H_
