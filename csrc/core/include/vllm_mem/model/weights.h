/*!
 * \file vllm_mem/model/weights.h
 * \brief Parameter counts and weight bytes per GPU, matching vLLM's "Model loading took X GiB".
 */
#ifndef VLLM_MEM_MODEL_WEIGHTS_H_
#define VLLM_MEM_MODEL_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief How the model is served. */
struct WeightOptions {
  std::string dtype = "auto";     //!< vLLM --dtype
  std::string quantization;       //!< vLLM --quantization; empty: the checkpoint's own config
  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  /*! Which MXFP4 MoE kernel vLLM picks (vllm/model_executor/layers/quantization/mxfp4.py
   *  get_mxfp4_backend): it decides how far the expert weights are padded at creation.
   *  "triton" (Hopper with triton_kernels, the H100 default): intermediate size per rank rounded
   *  up to 64; "marlin" (GPUs without native FP4, e.g. A100, or VLLM_MXFP4_USE_MARLIN):
   *  intermediate to 128, hidden to 256; "flashinfer_trtllm" (SM100 TRT-LLM / BF16): both to
   *  256; "flashinfer_cutlass" (SM100 CUTLASS, SM90 FlashInfer BF16): both to 128. Only read
   *  for mxfp4 checkpoints. */
  std::string mxfp4_backend = "triton";
};

/*! \brief Weight bytes of one GPU, by component. */
struct RankWeights {
  int64_t pp_rank = 0;
  int64_t embedding_bytes = 0;   //!< vocab-parallel input embedding (first PP rank)
  int64_t lm_head_bytes = 0;     //!< vocab-parallel LM head (last PP rank; 0 when tied on 1 rank)
  int64_t attention_bytes = 0;   //!< q/k/v/o (or MLA) projections, biases, q/k norms
  int64_t mlp_bytes = 0;         //!< dense MLP, routed and shared experts, router
  int64_t norm_bytes = 0;        //!< layer norms and the final norm
  int64_t quantization_overhead_bytes = 0;  //!< scales and zero points of quantized layers
  int64_t buffer_bytes = 0;      //!< non-parameter buffers allocated at load (rotary cos/sin caches)
  /*! The vision tower and projector of a multimodal model (every PP rank: vLLM's wrappers
   *  build them whatever the rank), in the model dtype; 0 for a text model. */
  int64_t vision_encoder_bytes = 0;
  int64_t first_layer = 0;       //!< decoder layers [first_layer, end_layer) on this rank
  int64_t end_layer = 0;
  int64_t total_bytes = 0;
};

/*! \brief Weights across the deployment. */
struct WeightBreakdown {
  int64_t num_parameters = 0;              //!< checkpoint parameter count (vision tower included)
  int64_t vision_encoder_parameters = 0;   //!< of which the vision tower and projector
  std::vector<RankWeights> per_pp_rank;    //!< one per pipeline rank (tensor ranks are equal)
  int64_t fullest_rank_bytes = 0;          //!< max over ranks: what "Model loading took" shows
  int64_t fullest_pp_rank = 0;
  std::string dtype;                       //!< the model dtype weights are served in
  std::string quantization;                //!< the quantization method in effect ("" none)
};

/*! \brief Parameter count of the checkpoint (tied embeddings counted once; a multimodal
 *  checkpoint's vision tower and projector included when ModelSpec::vision is set). */
int64_t NumParameters(const ModelSpec& spec);

/*! \brief Weight bytes on every GPU. InvalidArgument for an unknown dtype / quantization or a
 *  parallel layout that does not divide the model. */
WeightBreakdown ComputeWeights(const ModelSpec& spec, const WeightOptions& options);

/*! \brief ComputeWeights(...).fullest_rank_bytes. */
int64_t WeightBytes(const ModelSpec& spec, const WeightOptions& options);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_WEIGHTS_H_
