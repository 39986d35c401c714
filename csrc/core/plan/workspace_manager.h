/*!
 * \file core/plan/workspace_manager.h
 * \brief How vLLM's WorkspaceManager sizes a request (internal to the plan area): the FlashMLA sparse
 *        reservation at load (sparse_mla_workspace.cc) and the indexer's profile-run request
 *        (sparse_indexer_profile.cc) share its buffer, so they share its rounding.
 */
#ifndef VLLM_MEM_CORE_PLAN_WORKSPACE_MANAGER_H_
#define VLLM_MEM_CORE_PLAN_WORKSPACE_MANAGER_H_

#include <cstdint>

#include "core/base/checked_math.h"

namespace vllm_mem {

/*! vllm/v1/worker/workspace.py WorkspaceManager.get_simultaneous rounds each piece of a request up to
 *  256 bytes. */
inline constexpr int64_t kWorkspacePieceAlignBytes = 256;

/*! \brief One piece of a WorkspaceManager request of \p bytes, as the buffer holds it. */
inline int64_t WorkspacePieceBytes(int64_t bytes, const char* field) {
  return CheckedMul(CeilDiv(bytes, kWorkspacePieceAlignBytes), kWorkspacePieceAlignBytes, field);
}

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_PLAN_WORKSPACE_MANAGER_H_
