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
  /*! Which MXFP4 MoE kernel vLLM picks (vLLM 0.19 fused_moe/oracle/mxfp4.py
   *  select_mxfp4_moe_backend; the plan picks it from the GPU, plan/mxfp4_backend.h). It decides
   *  how far the expert weights are padded at creation and what process_weights_after_loading
   *  leaves allocated when vLLM prints "Model loading took" (docs/weights.md, MXFP4):
   *  "triton" (SM90 Hopper with triton_kernels): intermediate per rank to 64; float32 expert
   *  biases, values in triton_kernels' HopperMXValueLayout (storage padded to 64 x 64 bytes) and
   *  a HopperMXScaleLayout copy of the scales (rows to 256) beside the loaded ones;
   *  "marlin" (compute capability 8.x and 12.x, or VLLM_MXFP4_USE_MARLIN): intermediate to 128,
   *  hidden to 256, repacked in place; "flashinfer_trtllm" (SM100 family): both to 256, float32
   *  biases; "flashinfer_cutlass" (SM90 with VLLM_USE_FLASHINFER_MOE_MXFP4_BF16): both to 128;
   *  "triton_rocm" (ROCm): both to 256, float32 biases, strided layouts (no copy);
   *  "triton_rocm_gfx950" (MI350X / MI355X): the same plus a CDNA4MXScaleLayout copy of the
   *  scales. Only read for mxfp4 checkpoints. */
  std::string mxfp4_backend = "triton";
  /*! "triton": the alignment of HopperMXValueLayout's value storage, both the packed K bytes
   *  and N, in the triton_kernels the release vendors: 64 from vLLM 0.17.0; 0 before, where only
   *  the mma tile pads (N to 16, K bytes to 32). plan() takes it from the release
   *  (vllm_versions.json mxfp4_hopper_value_align). */
  int64_t mxfp4_hopper_value_align = 64;
  /*! The mixed-precision linear kernel vLLM's choose_mp_linear_kernel tries first for AWQ, GPTQ
   *  and compressed-tensors WNA16 linears, which decides what
   *  process_weights_after_loading leaves allocated (docs/weights.md, Quantization): "" the
   *  checkpoint's layout (no GPU known: today's count); "marlin" (compute capability 8.x, 10.x,
   *  12.x) frees the unused g_idx / qzeros of symmetric schemes and keeps act-order's sort
   *  indices; "machete" (9.0 only) keeps each zero point in the activation dtype, and a linear
   *  Machete cannot implement (group size, shape, act-order under a row split) falls back to
   *  Marlin. MoE experts go to vLLM's Marlin MoE methods under either kernel (moe_wna16 where
   *  Marlin MoE cannot take the layer; model/moe_wna16_layout.cc). The plan picks it from the
   *  catalog GPU and the release (plan/mp_linear_kernel.h). */
  std::string mp_linear_kernel;
  /*! The GPU's streaming multiprocessors (torch's multi_processor_count), which size the Marlin
   *  workspaces vLLM allocates while loading (marlin_utils.py marlin_make_workspace_new: SMs x
   *  max_blocks_per_sm int32): one per Marlin linear, one of 4 blocks an SM per Marlin MoE layer.
   *  Read only where mp_linear_kernel is set; the plan takes it from the catalog GPU, the
   *  default is the H100 SXM's 132. */
  int64_t gpu_sm_count = 132;
  /*! The served --max-model-len, read only where the family's rotary table follows it
   *  (ArchitectureTraits::rope_rows_capped_by_max_model_len: min(max_position_embeddings, this)
   *  rows); 0: the config's rows. plan() sets it for those families only, so every other model
   *  keeps one remembered breakdown per weight setting whatever the length. */
  int64_t max_model_len = 0;

  /*! Every field: the SizingCache keeps a breakdown per options, so a field added here is
   *  compared without a second list to keep in step. */
  bool operator==(const WeightOptions&) const = default;
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
  /*! The audio tower and its embedder (Gemma-3n), every PP rank like the vision tower; 0 without one. */
  int64_t audio_encoder_bytes = 0;
  /*! Of mlp_bytes and quantization_overhead_bytes: what the kernels' layouts add after loading
   *  beyond the tensors as created (MXFP4 experts: float32 biases, padding, scale copies; Machete
   *  linears: zero points widened to the activation dtype). No checkpoint file holds it, so a
   *  share of a checkpoint's size leaves it out. */
  int64_t kernel_layout_bytes = 0;
  int64_t first_layer = 0;       //!< decoder layers [first_layer, end_layer) on this rank
  int64_t end_layer = 0;
  int64_t total_bytes = 0;
};

/*! \brief Weights across the deployment. */
struct WeightBreakdown {
  int64_t num_parameters = 0;              //!< checkpoint parameter count (vision tower included)
  int64_t vision_encoder_parameters = 0;   //!< of which the vision tower and projector
  int64_t audio_encoder_parameters = 0;    //!< of which the audio tower and its embedder
  std::vector<RankWeights> per_pp_rank;    //!< one per pipeline rank (tensor ranks are equal)
  int64_t fullest_rank_bytes = 0;          //!< max over ranks: what "Model loading took" shows
  int64_t fullest_pp_rank = 0;
  std::string dtype;                       //!< the model dtype weights are served in
  std::string quantization;                //!< the quantization method in effect ("" none)
};

/*! \brief Parameter count of the checkpoint (tied embeddings counted once; a multimodal
 *  checkpoint's vision tower and projector included when ModelSpec::vision is set, its audio
 *  tower and embedder when ModelSpec::audio is). */
int64_t NumParameters(const ModelSpec& spec);

/*! \brief Weight bytes on every GPU. InvalidArgument for an unknown dtype / quantization or a
 *  parallel layout that does not divide the model. */
WeightBreakdown ComputeWeights(const ModelSpec& spec, const WeightOptions& options);

/*! \brief Whether \p q's linears are 4-bit WNA16 ones vLLM hands to a mixed-precision linear kernel
 *  (AWQ, GPTQ, compressed-tensors integer schemes; WeightOptions::mp_linear_kernel). */
bool HasWna16Linears(const QuantizationSpec& q);

/*! \brief ComputeWeights(...).fullest_rank_bytes. */
int64_t WeightBytes(const ModelSpec& spec, const WeightOptions& options);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_WEIGHTS_H_
