/*!
 * \file vllm_mem/plan/lora_estimate.h
 * \brief --enable-lora: the GPU memory vLLM's LoRA model manager takes at load (the adapter slots
 *        of every wrapped layer and the Punica wrapper's metadata), counted by "Model loading
 *        took", and the float32 shrink buffer each LoRA linear adds to the profile run.
 *
 * vLLM's GPUModelRunner.load_model loads the model and, with a LoRA config, builds the LoRA
 * manager inside the same DeviceMemoryProfiler, so the slots are part of "Model loading took".
 * LoRAModelManager._create_lora_modules wraps every LinearBase of the language model (and the
 * modules the model class lists in embedding_modules: embed_tokens, and lm_head through
 * LogitsProcessorWithLoRA); each wrapper's create_lora_weights allocates, per sub-projection
 * (slice), lora_a_stacked (max_loras, 1, rank_a, in) and lora_b_stacked (max_loras, 1, out, rank)
 * in lora_dtype (auto = the served dtype), zero-filled: vllm/lora/layers/base_linear.py,
 * column_parallel_linear.py, row_parallel_linear.py, vocal_parallel_embedding.py,
 * logits_processor.py. Which families' layers this can express is data
 * (model_families.json "lora_layout"); the rest is refused by name. docs/weights.md "LoRA".
 */
#ifndef VLLM_MEM_PLAN_LORA_ESTIMATE_H_
#define VLLM_MEM_PLAN_LORA_ESTIMATE_H_

#include <cstdint>
#include <string>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief vLLM's LoRAConfig and the scheduler sizes the Punica wrapper is built for. */
struct LoraOptions {
  int64_t max_loras = 1;
  int64_t max_lora_rank = 16;
  std::string lora_dtype = "auto";  //!< auto: the served dtype (LoRAConfig.verify_with_model_config)
  std::string dtype = "auto";       //!< the served model dtype (--dtype)
  bool fully_sharded_loras = false;
  int64_t tensor_parallel_size = 1;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
};

/*! \brief The LoRA bytes one GPU of a pipeline rank allocates at load. */
struct LoraSlotBreakdown {
  int64_t decoder_layers_bytes = 0;   //!< qkv / o / gate_up / down slots of the rank's layers
  int64_t embedding_bytes = 0;        //!< embed_tokens' slots (the first rank)
  int64_t lm_head_bytes = 0;          //!< LogitsProcessorWithLoRA's slots (the last rank)
  int64_t punica_metadata_bytes = 0;  //!< the Punica wrapper's index tensors (every rank)
  int64_t total_bytes = 0;
};

/*! \brief vLLM's refusals and ours before any LoRA figure: the model's family must have a LoRA
 *  layout (model_families.json "lora_layout"; a family without a traits entry is Llama's),
 *  no MoE, MLA or recurrent layers (Unsupported, naming what), vLLM's LogitsProcessorWithLoRA
 *  vocabulary bound (InvalidArgument with vLLM's message), max_lora_rank divisible by the TP
 *  size under fully_sharded_loras (vLLM's divide assertion). */
void CheckLoraSupported(const ModelSpec& spec, const LoraOptions& options);

/*! \brief The slots and metadata one GPU of the pipeline rank holding layers [first_layer,
 *  end_layer) allocates; \p first_rank / \p last_rank add embed_tokens' and lm_head's slots. */
LoraSlotBreakdown EstimateLoraSlots(const ModelSpec& spec, const LoraOptions& options, int64_t first_layer,
                                    int64_t end_layer, bool first_rank, bool last_rank);

/*! \brief Punica's add_lora_linear shrink buffer: float32 (slices, tokens, max_lora_rank), alive
 *  while the layer adds its LoRA output (vllm/lora/punica_wrapper/punica_gpu.py). */
int64_t LoraShrinkBufferBytes(int64_t slices, int64_t tokens, int64_t max_lora_rank);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_LORA_ESTIMATE_H_
