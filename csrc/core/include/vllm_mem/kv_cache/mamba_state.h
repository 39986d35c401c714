/*!
 * \file vllm_mem/kv_cache/mamba_state.h
 * \brief The per-request recurrent state of a hybrid model's state layers, as vLLM sizes it:
 *        MambaStateShapeCalculator / MambaStateDtypeCalculator
 *        (vllm/model_executor/layers/mamba/mamba_utils.py) give the state tensors of one layer
 *        on one tensor-parallel rank, MambaSpec (vllm/v1/kv_cache_interface.py) their page, and
 *        HybridAttentionMambaModelConfig.verify_and_update_config
 *        (vllm/model_executor/models/config.py; vllm/platforms/interface.py
 *        _align_hybrid_block_size since PR 37467) the attention block size that makes one
 *        attention page at least one Mamba page, with the Mamba page padded to equal it.
 */
#ifndef VLLM_MEM_KV_CACHE_MAMBA_STATE_H_
#define VLLM_MEM_KV_CACHE_MAMBA_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <optional>

#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief One state tensor of one layer on one rank (conv or SSM / recurrent). */
struct MambaStateTensor {
  std::string name;             //!< "conv" or "ssm"
  std::vector<int64_t> shape;   //!< per rank, as vLLM's shape calculator returns it
  std::string dtype;            //!< torch dtype name ("bfloat16", "float32", ...)
  int64_t bytes = 0;            //!< prod(shape) * element size
};

/*! \brief What decides the state: vLLM's --mamba-cache-dtype / --mamba-ssm-cache-dtype
 *  ("auto", "float32", "float16", "bfloat16": CacheConfig's MambaDType), TP, speculative tokens. */
struct MambaStateOptions {
  std::string mamba_cache_dtype = "auto";
  std::string mamba_ssm_cache_dtype = "auto";
  int64_t tensor_parallel_size = 1;
  int64_t num_speculative_tokens = 0;
  /*! Newer mamba_utils.py widens the Mamba-2 / GDN conv state by num_spec tokens
   *  (conv_kernel - 1 + num_spec); earlier releases kept conv_kernel - 1. */
  bool conv_state_includes_spec_tokens = true;
  /*! NemotronHForCausalLMConfig / Qwen3_5ForConditionalGenerationConfig replace an "auto" SSM
   *  dtype with the checkpoint's (mamba_ssm_cache_dtype / text_config.mamba_ssm_dtype). The
   *  release of vLLM issue 24280 had no such rule (Nemotron-Nano-9B-v2 ran with a 16-bit state). */
  bool ssm_dtype_from_config = true;
};

/*! \brief The state of one layer on one rank. */
struct MambaStateLayout {
  std::vector<MambaStateTensor> tensors;
  int64_t page_size_bytes = 0;  //!< Σ tensor bytes: MambaSpec.page_size_bytes before padding
};

/*! \brief The state tensors of one recurrent layer of \p model (model.hybrid must be set) on one
 *  tensor-parallel rank, with the state dtypes resolved against \p model_dtype. InvalidArgument
 *  naming the option for a dtype vLLM does not accept or a TP size vLLM's divide() refuses. */
MambaStateLayout ComputeMambaState(const ModelSpec& model, DType model_dtype, const MambaStateOptions& options);

/*! \brief The Mamba-2 group count per rank after vLLM's replication rule
 *  (extra_groups_for_head_shards: groups that do not divide TP are extended to tp_size). */
int64_t Mamba2GroupsAfterReplication(int64_t n_groups, int64_t tensor_parallel_size);

/*! \brief Inputs of the attention / Mamba page unification. */
struct HybridBlockSizeInputs {
  int64_t attention_page_per_token_bytes = 0;  //!< FullAttentionSpec(block_size=1).page_size_bytes
  int64_t mamba_page_size_bytes = 0;           //!< one state layer's unpadded page
  int64_t kernel_block_alignment_tokens = 16;  //!< the attention backend's smallest kernel block
  int64_t user_block_size_tokens = 0;          //!< --block-size; 0: not given
  /*! PR 37467 (vLLM 2026-03, _align_hybrid_block_size in update_block_size_for_backend): the
   *  alignment becomes max(kernel alignment, the block size set before it, the user's). Before
   *  it the alignment was the kernel's alone and the user's block size only a floor. */
  bool align_to_user_block_size = true;
  MambaCacheMode cache_mode = MambaCacheMode::kNone;
  int64_t mamba_chunk_size_tokens = 0;         //!< "all": the SSD chunk (user mamba_block_size first)
};

/*! \brief What verify_and_update_config decides, with the lines it logs. */
struct HybridBlockSize {
  int64_t attention_block_size_tokens = 0;
  int64_t attention_page_size_bytes = 0;
  int64_t mamba_page_size_bytes = 0;          //!< unpadded
  int64_t mamba_page_size_padded_bytes = 0;   //!< = attention page (0 when no padding was needed)
  int64_t mamba_block_size_tokens = 0;        //!< 0: max_model_len (mode "none")
  double mamba_padding_percent = 0.0;
  /*! "Setting attention block size to N tokens to ensure that attention page size is >= mamba
   *  page size." (when the block size was raised) and "Padding mamba page size by P% to ensure
   *  that mamba page size and attention page size are exactly equal." (when they differ). */
  std::vector<std::string> log_lines;
};

/*! \brief HybridAttentionMambaModelConfig.verify_and_update_config's block-size arithmetic. */
HybridBlockSize AlignHybridBlockSize(const HybridBlockSizeInputs& in);

/*! \brief What a hybrid's layer specs are built from: the attention block size after the
 *  unification, the Mamba spec every recurrent layer gets, and the unification's log lines. */
struct HybridLayerPlan {
  int64_t attention_block_size_tokens = 0;
  MambaKvSpec mamba;
  MambaStateLayout state;
  std::optional<HybridBlockSize> alignment;  //!< set when the model has attention layers
};

/*! \brief The hybrid settings of \p options (KvSpecBuildOptions::hybrid), with the mode name
 *  checked: InvalidArgument unless mamba_cache_mode is "none", "align" or "all". */
HybridKvOptions HybridKvOptionsOf(const KvCacheOptions& options);

/*! \brief The plan for \p model (model.hybrid set) under \p options; \p default_block_size is what
 *  the attention layers would use without the unification. Raises vLLM's refusals
 *  (Unsupported for Qwen3.5 with mamba_cache_mode "all"). */
HybridLayerPlan PlanHybridLayers(const ModelSpec& model, const KvSpecBuildOptions& options,
                                 int64_t default_block_size);

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_MAMBA_STATE_H_
