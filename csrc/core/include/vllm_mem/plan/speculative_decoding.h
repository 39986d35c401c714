/*!
 * \file vllm_mem/plan/speculative_decoding.h
 * \brief Speculative decoding in the start-up plan: what vLLM's drafter adds to one GPU (its
 *        weights, its attention layers in the shared KV pool) and how num_speculative_tokens
 *        changes the CUDA-graph capture sizes.
 *
 * Methods as vLLM names them (vllm/config/speculative.py, SpeculativeMethod): "ngram",
 * "draft_model", "eagle", "eagle3", "mtp" are sized; "medusa" and vLLM's other methods are
 * refused as not modelled (Unsupported) rather than sized wrongly. What each loads and shares
 * (vllm/v1/spec_decode/llm_base_proposer.py _maybe_share_embeddings / _maybe_share_lm_head,
 * draft_model.py, models/llama_eagle.py, llama_eagle3.py, deepseek_mtp.py) and every
 * rule's source: docs/speculative_decoding.md.
 */
#ifndef VLLM_MEM_PLAN_SPECULATIVE_DECODING_H_
#define VLLM_MEM_PLAN_SPECULATIVE_DECODING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/base/json.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief vLLM's --speculative-config, reduced to what changes memory. */
struct SpeculativeConfig {
  /*! "ngram", "draft_model", "eagle", "eagle3" or "mtp"; vLLM's deprecated MTP
   *  names ("deepseek_mtp", "qwen3_next_mtp", ...) mean "mtp", "[ngram]" means "ngram";
   *  empty: "draft_model" (vLLM's default when a model is named without a method). */
  std::string method;
  /*! Required and > 0, unless the drafter's config gives n_predict (vLLM's default). */
  int64_t num_speculative_tokens = 0;
  /*! The drafter's config.json: the draft model or the EAGLE / EAGLE-3 head. For "mtp", empty: vLLM loads the MTP layers from the target's own checkpoint. */
  std::optional<ModelSpec> draft;
  std::string draft_name;              //!< for the report
  int64_t draft_tensor_parallel_size = 0;  //!< 0: the target's (vLLM's default)
  /*! The drafter's --quantization (vLLM passes it to the draft ModelConfig); empty: an MTP
   *  drafter takes the target's, a draft model or head its own checkpoint's. */
  std::string quantization;
  /*! The drafter's max_model_len; 0: unset. Checked (CheckDraftMaxModelLen), no memory effect. */
  int64_t max_model_len = 0;
  /*! Keys of the user's config accepted without a memory effect (CheckSpeculativeConfigKeys),
   *  for the plan's notes. */
  std::vector<std::string> no_effect_keys;
  /*! The drafter's config fields ModelSpec does not carry (ReadSpeculativeConfigFields). */
  int64_t n_predict = 0;               //!< the draft config's n_predict; 0: none
  int64_t draft_vocab_size = 0;        //!< EAGLE-3 draft_vocab_size; 0: the head's vocab_size
  int64_t draft_target_hidden_size = 0;//!< EAGLE-3 target_hidden_size; 0: the head's hidden_size
  /*! The target's MTP layers: DeepSeek num_nextn_predict_layers, Qwen3-Next
   *  mtp_num_hidden_layers (read from the target config; 0: the model has none). */
  int64_t target_num_mtp_layers = 0;
  /*! vLLM shares the target's embedding with an EAGLE head when the head's checkpoint has none
   *  or an identical copy (torch.equal at load), which holds for the published EAGLE / EAGLE-3
   *  Llama heads; false for a head trained with its own embeddings. */
  bool eagle_embed_tokens_shared = true;
  /*! Same test for the lm_head. Unset: EAGLE heads ship none (shared), EAGLE-3 heads ship their
   *  own over draft_vocab_size (kept). */
  std::optional<bool> eagle_lm_head_shared;
};

/*! \brief The speculative fields of a config.json that ModelSpec does not read: n_predict
 *  draft_vocab_size, target_hidden_size (drafter); num_nextn_predict_layers /
 *  mtp_num_hidden_layers (target, top level or text_config). Absent fields stay 0.
 *  InvalidArgument naming the field when one is present but not a non-negative integer.
 *  \p as_target: read the target's MTP layer count; otherwise the drafter's fields. */
void ReadSpeculativeConfigFields(const JsonValue& config, bool as_target, SpeculativeConfig& out);

/*! \brief vLLM's SpeculativeMethod values this planner sizes. The user's text ("[ngram]", the
 *  MTP aliases, "" for a draft model) becomes this in ParseSpeculativeMethod, the one
 *  conversion; SpeculativeMethodName gives vLLM's name back. */
enum class SpeculativeMethod { kNgram, kDraftModel, kEagle, kEagle3, kMtp };
const char* SpeculativeMethodName(SpeculativeMethod method);  //!< "ngram", "draft_model", ...
/*! \brief Unsupported for a method vLLM runs but this planner does not model, InvalidArgument
 *  (speculative_config.method) for a name vLLM does not know. */
SpeculativeMethod ParseSpeculativeMethod(std::string_view method);

/*! \brief The method vLLM would run: \p method normalised ("[ngram]" -> "ngram", the MTP
 *  aliases -> "mtp"; empty: "draft_model", as vLLM infers it). InvalidArgument
 *  (speculative_config.method) for a name vLLM does not know or this planner does not size. */
std::string NormalizeSpeculativeMethod(const std::string& method);

/*! \brief A config resolved against the target: defaults filled, vLLM's refusals raised. */
struct ResolvedSpeculative {
  std::string method;
  int64_t num_speculative_tokens = 0;
  int64_t draft_tensor_parallel_size = 1;
  int64_t uniform_decode_query_len = 1;  //!< 1 + num_speculative_tokens
  /*! The drafter's attention layers as a model of their own (the EAGLE / draft config, or the
   *  target's MTP layers); null for ngram, which keeps no KV. */
  std::shared_ptr<const ModelSpec> kv_model;
};

/*! \brief Validates \p config against the target the way vLLM's SpeculativeConfig does, with
 *  vLLM's messages: num_speculative_tokens missing or <= 0, a model-based method without a
 *  drafter, draft_tensor_parallel_size other than 1 or the target's, a draft model whose
 *  vocabulary differs, num_speculative_tokens not divisible by n_predict; and what this planner
 *  refuses (field speculative_config.*): MTP on a model without MTP layers, pipeline
 *  parallelism with a drafter (its pipeline placement is not modelled; n-gram is fine). */
ResolvedSpeculative ResolveSpeculativeConfig(const ModelSpec& target, const SpeculativeConfig& config,
                                             int64_t tensor_parallel_size, int64_t pipeline_parallel_size);

/*! \brief vLLM's _maybe_override_draft_max_model_len: the drafter's max_model_len, when given,
 *  may not exceed the drafter's derived maximum (its config's; the target's when it has none)
 *  nor \p target_max_model_len; InvalidArgument (speculative_config.max_model_len) with vLLM's
 *  messages. No memory effect: the drafter's KV layers share the target's block table. n-gram
 *  (no drafter config) skips the check, as vLLM does. */
void CheckDraftMaxModelLen(const ModelSpec& target, const SpeculativeConfig& config,
                           const ResolvedSpeculative& resolved, int64_t target_max_model_len);

/*! \brief The model the shared KV pool is sized for: \p target with the drafter's attention
 *  layers appended as extra LayerSpecs (indices num_layers + i, as EAGLE and MTP name them),
 *  so vLLM's grouping sees target and drafter layers together, as get_kv_cache_spec does. A
 *  drafter whose per-rank KV geometry (KV heads x head size, MLA dims) equals the target's
 *  joins its group as is (EAGLE heads, MTP layers). A draft model with another geometry makes
 *  vLLM form one UniformTypeKVCacheSpecs group whose block costs the sum of the layers'
 *  pages; with full attention everywhere that is exactly n_draft * draft_page / target_page
 *  extra target-shaped layers, which is what is appended (Unsupported when that is not a whole
 *  number or a model has non-full-attention layers). Returns \p target unchanged for ngram. */
ModelSpec WithDrafterKvLayers(const ModelSpec& target, const ResolvedSpeculative& resolved,
                              int64_t tensor_parallel_size);

/*! \brief The drafter's weights on one GPU, by part (bytes). */
struct DraftWeights {
  int64_t layers_bytes = 0;          //!< decoder layers (attention, MLP/MoE, their norms, scales)
  int64_t extra_bytes = 0;           //!< fc / eh_proj, enorm/hnorm, hidden_norm, d2t; minus norms vLLM omits
  int64_t embedding_bytes = 0;       //!< its own embedding (0 when the target's is shared)
  int64_t lm_head_bytes = 0;         //!< its own LM head(s) (0 when the target's is shared)
  int64_t total_bytes = 0;
  bool embedding_shared = false;
  bool lm_head_shared = false;
  int64_t num_parameters = 0;        //!< parameters the drafter loads (shared ones excluded)
};

/*! \brief The drafter's weights per GPU as vLLM loads them ("Model loading took" includes the
 *  drafter; a shared embedding / lm_head is the target's tensor, counted once). ngram: 0.
 *  \p dtype and \p quantization are the served ones (the drafter runs in the target's dtype). */
DraftWeights ComputeDraftWeights(const ModelSpec& target, const SpeculativeConfig& config,
                                 const ResolvedSpeculative& resolved, const std::string& dtype,
                                 const std::string& quantization);

/*! \brief The CUDA-graph capture sizes vLLM uses with speculative decoding: the default largest
 *  size becomes min(max_num_seqs * (1 + K) * 2, 512, max_num_batched_tokens)
 *  (VllmConfig._set_cudagraph_sizes), then every size is rounded up to a multiple of 1 + K,
 *  sizes above the largest dropped, [1 + K] kept when nothing else remains
 *  (CompilationConfig.adjust_cudagraph_sizes_for_spec_decode). InvalidArgument with vLLM's
 *  message when no size remains. \p capture_sizes / \p max_capture_size: the user's (empty / 0
 *  for vLLM's defaults). */
std::vector<int64_t> SpecDecodeCaptureSizes(const std::vector<int64_t>& capture_sizes, int64_t max_capture_size,
                                            int64_t max_num_seqs, int64_t max_num_batched_tokens,
                                            int64_t uniform_decode_query_len);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_SPECULATIVE_DECODING_H_
