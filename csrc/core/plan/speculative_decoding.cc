/*!
 * \file core/plan/speculative_decoding.cc
 * \brief The drafter's weights and KV layers, and the capture sizes of speculative decoding, as
 *        vLLM loads and configures them (sources per rule: docs/speculative_decoding.md).
 */
#include "vllm_mem/plan/speculative_decoding.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "core/base/checked_math.h"
#include "core/model/parallelism.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/speculative_config_keys.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {
namespace {

constexpr const char* kMethodField = "speculative_config.method";
constexpr const char* kTokensField = "speculative_config.num_speculative_tokens";
constexpr const char* kModelField = "speculative_config.model";
constexpr const char* kDraftTpField = "speculative_config.draft_tensor_parallel_size";

/*! A count field of a config.json: absent or null -> 0; otherwise a non-negative integer <= bound. */
int64_t ReadCount(const JsonValue& config, std::string_view key, int64_t bound) {
  const JsonValue* v = config.Find(key);
  if (v == nullptr || v->IsNull()) return 0;
  const std::string field(key);
  if (!v->IsNumber() || !v->AsNumber().integer.has_value() || *v->AsNumber().integer < 0) {
    throw InvalidArgument(field, "must be a non-negative integer, got " + v->KindName());
  }
  RequireAtMost(*v->AsNumber().integer, bound, field.c_str(), "vllm_mem/base/limits.h");
  return *v->AsNumber().integer;
}

/*! Rows of one rank's vocab-parallel embedding / LM head: the vocabulary padded to 64
 *  (vLLM's DEFAULT_VOCAB_PADDING_SIZE), split evenly over the ranks (as model/weights.cc). */
int64_t VocabRowsPerRank(int64_t vocab, int64_t tp) {
  const int64_t padded = CheckedMul(CeilDiv(vocab, 64), 64, "vocab_size");
  if (padded % tp != 0) {
    throw InvalidArgument("tensor_parallel_size", "vocab_size padded to a multiple of 64 (" + std::to_string(padded) +
                                                      ") must be divisible by tensor_parallel_size (" +
                                                      std::to_string(tp) + ")");
  }
  return padded / tp;
}

/*! The target's MTP layers as a model of their own: vLLM builds each as the target's decoder
 *  layer at index num_hidden_layers + i (deepseek_mtp.py: DeepseekV2DecoderLayer), so they take
 *  the target's dimensions, attention kind and (for layers past first_k_dense_replace) its MoE.
 *  The target's last layer is the template: its kind is what layer index num_layers + i gets in
 *  the families sized here (DeepSeek-V3: MLA + MoE; Qwen3-Next: full attention + MoE). */
std::shared_ptr<const ModelSpec> MtpModel(const ModelSpec& target, int64_t num_mtp_layers) {
  auto m = std::make_shared<ModelSpec>(target);
  m->num_layers = num_mtp_layers;
  m->layers.assign(static_cast<size_t>(num_mtp_layers), target.layers.back());
  return m;
}

}  // namespace

void ReadSpeculativeConfigFields(const JsonValue& config, bool as_target, SpeculativeConfig& out) {
  if (!config.IsObject()) throw InvalidArgument("config", "must be a JSON object, got " + config.KindName());
  if (as_target) {
    // DeepSeek-V3 / GLM-4.5 / MiMo: num_nextn_predict_layers; Qwen3-Next / Qwen3.5:
    // mtp_num_hidden_layers (vLLM's hf_config_override sets n_predict from them). Multimodal
    // checkpoints keep them in text_config.
    const JsonValue* text = config.Find("text_config");
    for (const JsonValue* c : {&config, text}) {
      if (c == nullptr || !c->IsObject()) continue;
      const int64_t n = std::max(ReadCount(*c, "num_nextn_predict_layers", kMaxNumLayers),
                                 ReadCount(*c, "mtp_num_hidden_layers", kMaxNumLayers));
      if (n > 0) {
        out.target_num_mtp_layers = n;
        return;
      }
    }
    out.target_num_mtp_layers = 0;
    return;
  }
  out.n_predict = ReadCount(config, "n_predict", kMaxNumLayers);
  out.draft_vocab_size = ReadCount(config, "draft_vocab_size", kMaxVocabSize);
  out.draft_target_hidden_size = ReadCount(config, "target_hidden_size", kMaxHiddenSize);
}

const char* SpeculativeMethodName(SpeculativeMethod method) {
  switch (method) {
    case SpeculativeMethod::kNgram: return "ngram";
    case SpeculativeMethod::kDraftModel: return "draft_model";
    case SpeculativeMethod::kEagle: return "eagle";
    case SpeculativeMethod::kEagle3: return "eagle3";
    case SpeculativeMethod::kMtp: return "mtp";
  }
  return "";
}

SpeculativeMethod ParseSpeculativeMethod(std::string_view method) {
  if (method.empty()) return SpeculativeMethod::kDraftModel;
  // vLLM's method names (speculative_config_keys.json "methods"): the deprecated per-family MTP
  // names mean "mtp", "[ngram]" means "ngram"; Medusa, the MLP speculator, suffix decoding, GPU
  // n-gram, DFlash / DSpark, custom classes are real methods whose memory is not modelled.
  const SpeculativeMethodRow* row = FindSpeculativeMethodRow(method);
  if (row == nullptr) {
    throw InvalidArgument(kMethodField, "must be one of ngram, draft_model, eagle, eagle3, mtp (vLLM's "
                                        "SpeculativeMethod), got " + EchoValue(std::string(method)));
  }
  for (SpeculativeMethod m : {SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel, SpeculativeMethod::kEagle,
                              SpeculativeMethod::kEagle3, SpeculativeMethod::kMtp}) {
    if (row->sized_as == SpeculativeMethodName(m)) return m;
  }
  throw Unsupported(std::string(kMethodField) + ": vLLM runs '" + std::string(method) +
                    "', but its memory is not modelled here yet (sized: ngram, draft_model, eagle, eagle3, "
                    "mtp; docs/speculative_decoding.md)");
}

std::string NormalizeSpeculativeMethod(const std::string& method) {
  return SpeculativeMethodName(ParseSpeculativeMethod(method));
}

namespace {

/*! num_speculative_tokens: defaults to n_predict, else required (vLLM's messages). */
int64_t ResolveNumSpeculativeTokens(const SpeculativeConfig& c, bool model_based, int64_t n_predict) {
  int64_t k = c.num_speculative_tokens;
  if (k == 0 && model_based && n_predict > 0) k = n_predict;
  if (k == 0) {
    throw InvalidArgument(kTokensField, model_based ? "A speculative model was provided, but `num_speculative_tokens` "
                                                      "was not provided"
                                                    : "num_speculative_tokens must be provided with speculative model "
                                                      "unless the draft model config contains an n_predict parameter.");
  }
  if (n_predict > 0 && k > n_predict && k % n_predict != 0) {
    throw InvalidArgument(kTokensField, "num_speculative_tokens:" + std::to_string(k) +
                                            " must be divisible by n_predict=" + std::to_string(n_predict));
  }
  return k;
}

/*! _verify_and_get_draft_tp: unset -> the target's; else only 1 or the target's. */
int64_t ResolveDraftTp(const SpeculativeConfig& c, bool model_based, int64_t tp) {
  if (c.draft_tensor_parallel_size == 0 || !model_based) return tp;
  if (c.draft_tensor_parallel_size != 1 && c.draft_tensor_parallel_size != tp) {
    throw InvalidArgument(kDraftTpField, "speculative_draft_tensor_parallel_size=" +
                                             std::to_string(c.draft_tensor_parallel_size) +
                                             " cannot be other value than 1 or target model tensor_parallel_size");
  }
  return c.draft_tensor_parallel_size;
}

/*! The drafter's own config (a draft model or an EAGLE head), checked as vLLM checks it. */
std::shared_ptr<const ModelSpec> DraftModel(const ModelSpec& target, const SpeculativeConfig& c, SpeculativeMethod m) {
  const ModelSpec& d = *c.draft;
  if (d.num_layers <= 0 || static_cast<int64_t>(d.layers.size()) != d.num_layers) {
    throw InvalidArgument(kModelField, "the drafter's config must list its layers");
  }
  // verify_equal_vocab_size_if_draft_model.
  if (m == SpeculativeMethod::kDraftModel && d.vocab_size != target.vocab_size) {
    throw InvalidArgument(kModelField, "Target and draft model should have the same vocabulary size. Target model "
                                       "vocab_size=" + std::to_string(target.vocab_size) +
                                           ". Draft model vocab_size=" + std::to_string(d.vocab_size) +
                                           ". Using models with different tokenizers can cause out-of-bounds errors "
                                           "during speculative decoding.");
  }
  // The head layouts sized here are vLLM's Llama ones (llama_eagle.py, llama_eagle3.py; the
  // published EAGLE / EAGLE-3 heads, Qwen3's included, are Llama-architecture configs).
  if ((m == SpeculativeMethod::kEagle || m == SpeculativeMethod::kEagle3) && d.model_type != "llama") {
    throw Unsupported(std::string(kModelField) + ": an " + SpeculativeMethodName(m) + " head of model_type " +
                      EchoValue(d.model_type) +
                      " is not modelled (sized: Llama-architecture heads, llama_eagle.py / llama_eagle3.py)");
  }
  return std::make_shared<ModelSpec>(d);
}

}  // namespace

ResolvedSpeculative ResolveSpeculativeConfig(const ModelSpec& target, const SpeculativeConfig& c, int64_t tp,
                                             int64_t pp) {
  ResolvedSpeculative r;
  const SpeculativeMethod m = ParseSpeculativeMethod(c.method);
  r.method = SpeculativeMethodName(m);
  const bool model_based = m != SpeculativeMethod::kNgram;
  if (pp > 1 && model_based) {  // n-gram has nothing to place
    throw Unsupported("speculative_config with pipeline_parallel_size > 1: where vLLM places the drafter's "
                      "weights and KV layers across pipeline stages is not modelled here");
  }
  RequireNonNegative(c.num_speculative_tokens, kTokensField);
  RequireAtMost(c.num_speculative_tokens, kMaxNumSpeculativeTokens, kTokensField, "vllm_mem/base/limits.h");
  RequireNonNegative(c.draft_tensor_parallel_size, kDraftTpField);
  RequireAtMost(c.draft_tensor_parallel_size, kMaxTensorParallelSize, kDraftTpField, "vllm_mem/base/limits.h");

  // Which drafter: vLLM's __post_init__ ("num_speculative_tokens was provided but without
  // speculative model."); MTP reads its layers from the target checkpoint.
  int64_t n_predict = c.n_predict;
  if (m == SpeculativeMethod::kMtp) {
    if (c.target_num_mtp_layers <= 0) {
      throw InvalidArgument(kMethodField, "'mtp' needs the target's MTP layers (num_nextn_predict_layers or "
                                          "mtp_num_hidden_layers in its config.json), and this " +
                                              target.model_type + " config has none");
    }
    n_predict = c.target_num_mtp_layers;  // hf_config_override: n_predict = num_nextn_predict_layers
  } else if (model_based && !c.draft.has_value()) {
    throw InvalidArgument(kModelField, "num_speculative_tokens was provided but without speculative model.");
  }
  r.num_speculative_tokens = ResolveNumSpeculativeTokens(c, model_based, n_predict);
  r.uniform_decode_query_len = r.num_speculative_tokens + 1;
  r.draft_tensor_parallel_size = ResolveDraftTp(c, model_based, tp);
  if (!model_based) return r;
  r.kv_model = m == SpeculativeMethod::kMtp ? MtpModel(target, c.target_num_mtp_layers) : DraftModel(target, c, m);
  // draft_model_config.verify_with_parallel_config(draft_parallel_config): the drafter's heads
  // must split over its tensor-parallel size.
  AttentionHeadsPerRank(r.kv_model->num_attention_heads, r.draft_tensor_parallel_size);
  KvHeadsPerRank(r.kv_model->num_kv_heads, r.draft_tensor_parallel_size);
  return r;
}

namespace {

/*! What each method adds to the drafter's layers: the figures the parts below read and fill. */
struct DraftParts {
  const ModelSpec& d;
  const SpeculativeConfig& c;
  const RankWeights& rw;
  int64_t h = 0, vh = 0;      //!< hidden size; vocab x hidden
  int64_t s = 0;              //!< bytes per element of the served dtype
  int64_t dtp = 1;            //!< the drafter's tensor-parallel size
  DraftWeights& out;
  int64_t params = 0;          //!< the drafter's parameters
  int64_t extra_elements = 0;  //!< model-dtype elements beyond ComputeWeights' layers
};

/*! A model of its own: nothing shared (draft_model.py _maybe_share_*: pass). */
void DraftModelParts(DraftParts& p) {
  p.out.embedding_bytes = p.rw.embedding_bytes;
  p.out.lm_head_bytes = p.rw.lm_head_bytes;
  p.out.extra_bytes = p.rw.buffer_bytes;
  p.params += p.vh + (p.d.tie_word_embeddings ? 0 : p.vh);
}

/*! An EAGLE head takes the target's embedding, and its LM head unless the checkpoint has its own
 *  (vLLM's _maybe_share_*; EAGLE-1 heads share it by default, EAGLE-3 heads do not). */
void ShareWithTarget(DraftParts& p, bool lm_head_shared_by_default) {
  p.out.embedding_shared = p.c.eagle_embed_tokens_shared;
  p.out.lm_head_shared = p.c.eagle_lm_head_shared.value_or(lm_head_shared_by_default);
  if (!p.out.embedding_shared) {
    p.out.embedding_bytes = p.rw.embedding_bytes;
    p.params += p.vh;
  }
}

/*! llama_eagle.py: layer 0 has no input_layernorm, the model no final norm; fc is a plain
 *  nn.Linear(2H, H, bias=False), replicated on every rank. */
void EagleParts(DraftParts& p) {
  p.extra_elements = CheckedMul(2 * p.h, p.h, "hidden_size") - 2 * p.h;
  ShareWithTarget(p, true);
  if (!p.out.lm_head_shared) {
    p.out.lm_head_bytes = p.rw.lm_head_bytes > 0 ? p.rw.lm_head_bytes : p.rw.embedding_bytes;
    p.params += p.vh;
  }
  p.params += p.extra_elements;
}

/*! llama_eagle3.py: layer 0's qkv_proj reads 2H (embeds ++ hidden); hidden_norm; fc is a
 *  ReplicatedLinear(3 * target_hidden_size, H); lm_head over draft_vocab_size (vocab-parallel);
 *  draft_id_to_target_id, an int64 parameter of draft_vocab_size entries (replicated). */
void Eagle3Parts(DraftParts& p) {
  const ModelSpec& d = p.d;
  const int64_t h = p.h;
  const int64_t heads = AttentionHeadsPerRank(d.num_attention_heads, p.dtp);
  const int64_t kv_heads = KvHeadsPerRank(d.num_kv_heads, p.dtp);
  const int64_t qkv_rows = CheckedMul(heads + 2 * kv_heads, d.head_dim, "head_dim");
  const int64_t target_h = p.c.draft_target_hidden_size > 0 ? p.c.draft_target_hidden_size : h;
  const int64_t draft_vocab = p.c.draft_vocab_size > 0 ? p.c.draft_vocab_size : d.vocab_size;
  p.extra_elements = CheckedAdd(CheckedMul(qkv_rows, h, "hidden_size"), h, "hidden_size");
  p.extra_elements = CheckedAdd(p.extra_elements, CheckedMul(3 * target_h, h, "target_hidden_size"), "hidden_size");
  p.params += CheckedMul(d.num_attention_heads + 2 * d.num_kv_heads, d.head_dim * h, "head_dim") + h +
              3 * target_h * h;
  p.out.extra_bytes = CheckedMul(draft_vocab, 8, "draft_vocab_size");
  ShareWithTarget(p, false);
  if (!p.out.lm_head_shared) {
    p.out.lm_head_bytes = CheckedMul(CheckedMul(VocabRowsPerRank(draft_vocab, p.dtp), h, "draft_vocab_size"), p.s,
                                     "draft_vocab_size");
    p.params += draft_vocab * h;
  }
}

/*! deepseek_mtp.py, per MTP layer: enorm, hnorm, eh_proj nn.Linear(2H, H, bias=False)
 *  (replicated) and shared_head.norm (ComputeWeights' final norm is one of them); the
 *  embedding and shared_head.head are the target's (_maybe_share_*: "Detected MTP model"). */
void MtpParts(DraftParts& p) {
  const int64_t n = p.d.num_layers, h = p.h;
  p.extra_elements = CheckedMul(n, CheckedMul(2 * h, h, "hidden_size") + 2 * h, "num_nextn_predict_layers") +
                     (n - 1) * h;
  p.params += p.extra_elements;
  p.out.embedding_shared = p.out.lm_head_shared = true;
}

/*! ComputeWeights for the drafter; a quantization refusal names the speculative config's key
 *  when the method came from it. */
WeightBreakdown DraftWeightBreakdown(const ModelSpec& d, const WeightOptions& wo, bool quantization_from_config) {
  try {
    return ComputeWeights(d, wo);
  } catch (const InvalidArgument& e) {
    if (!quantization_from_config || e.field() != "quantization") throw;
    const std::string what = e.what();
    throw InvalidArgument("speculative_config.quantization", what.substr(what.find(": ") + 2));
  }
}

}  // namespace

DraftWeights ComputeDraftWeights(const ModelSpec& target, const SpeculativeConfig& c, const ResolvedSpeculative& r,
                                 const std::string& dtype, const std::string& quantization) {
  DraftWeights out;
  const SpeculativeMethod m = ParseSpeculativeMethod(r.method);
  if (m == SpeculativeMethod::kNgram || !r.kv_model) return out;  // proposes from the prompt: no weights
  const ModelSpec& d = *r.kv_model;
  // The drafter runs in the target's resolved dtype (SpeculativeConfig builds the draft
  // ModelConfig with dtype=target_model_config.dtype).
  const std::string served = DTypeName(ResolveModelDType(dtype.empty() ? "auto" : dtype, target.dtype, "dtype"));
  const int64_t element_bytes = DTypeSizeBytes(ResolveModelDType(served, d.dtype, "dtype"));
  WeightOptions wo;
  wo.dtype = served;
  // The speculative config's own quantization goes to the draft ModelConfig; unset, MTP layers
  // (in the target checkpoint) take the target's --quantization, as vLLM aligns them, and a
  // draft model or EAGLE head its own checkpoint's.
  wo.quantization = !c.quantization.empty()          ? c.quantization
                    : m == SpeculativeMethod::kMtp ? quantization
                                                   : std::string();
  wo.tensor_parallel_size = r.draft_tensor_parallel_size;
  wo.pipeline_parallel_size = 1;  // create_draft_parallel_config: pipeline_parallel_size=1
  const WeightBreakdown w = DraftWeightBreakdown(d, wo, !c.quantization.empty());
  DraftParts p{d, c, w.per_pp_rank.at(0), d.hidden_size, CheckedMul(d.vocab_size, d.hidden_size, "vocab_size"),
               element_bytes, r.draft_tensor_parallel_size, out};
  // Decoder layers, their norms and the final norm, with quantization scales; the rotary cache
  // (buffer_bytes) is vLLM's get_rope cache entry, shared with the target for the same rope
  // parameters (a separate draft model with another head size gets its own).
  out.layers_bytes = p.rw.attention_bytes + p.rw.mlp_bytes + p.rw.norm_bytes + p.rw.quantization_overhead_bytes;
  p.params = NumParameters(d) - p.vh;             // embedding (counted by the parts when kept)
  if (!d.tie_word_embeddings) p.params -= p.vh;  // lm_head (likewise)
  switch (m) {
    case SpeculativeMethod::kDraftModel: DraftModelParts(p); break;
    case SpeculativeMethod::kEagle: EagleParts(p); break;
    case SpeculativeMethod::kEagle3: Eagle3Parts(p); break;
    default: MtpParts(p); break;
  }
  out.extra_bytes = CheckedAdd(out.extra_bytes, CheckedMul(p.extra_elements, p.s, "hidden_size"), "draft_weights_bytes");
  out.total_bytes = CheckedAdd(CheckedAdd(out.layers_bytes, out.extra_bytes, "draft_weights_bytes"),
                               CheckedAdd(out.embedding_bytes, out.lm_head_bytes, "draft_weights_bytes"),
                               "draft_weights_bytes");
  out.num_parameters = p.params;
  return out;
}

void CheckDraftMaxModelLen(const ModelSpec& target, const SpeculativeConfig& c, const ResolvedSpeculative& r,
                           int64_t target_max_model_len) {
  if (c.max_model_len == 0 || !r.kv_model || target_max_model_len <= 0) return;
  RequirePositiveAtMost(c.max_model_len, kMaxModelLenTokens, "speculative_config.max_model_len",
                        "vllm_mem/base/limits.h");
  // The draft ModelConfig derives its maximum from its own config (the target's for MTP), or
  // takes spec_target_max_model_len when its config gives none.
  const ModelSpec& drafter = c.draft.has_value() ? *c.draft : target;
  int64_t draft_max = DerivedMaxModelLen(drafter);
  if (draft_max <= 0) draft_max = target_max_model_len;
  for (const auto& [limit, name] : {std::pair{draft_max, "draft_max_model_len"},
                                    std::pair{target_max_model_len, "target_max_model_len"}}) {
    if (c.max_model_len > limit) {
      throw InvalidArgument("speculative_config.max_model_len",
                            "speculative_max_model_len=" + std::to_string(c.max_model_len) + " cannot be larger than " +
                                name + "=" + std::to_string(limit));
    }
  }
}

ModelSpec WithDrafterKvLayers(const ModelSpec& target, const ResolvedSpeculative& r, int64_t tp) {
  ModelSpec out = target;
  if (!r.kv_model) return out;
  const ModelSpec& d = *r.kv_model;
  auto same_mla = [&] {
    if (target.mla.has_value() != d.mla.has_value()) return false;
    if (!target.mla) return true;
    return target.mla->kv_lora_rank == d.mla->kv_lora_rank && target.mla->qk_rope_head_dim == d.mla->qk_rope_head_dim;
  };
  const int64_t target_units = target.mla ? 1 : CheckedMul(KvHeadsPerRank(target.num_kv_heads, tp), target.head_dim,
                                                           "head_dim");
  const int64_t draft_units =
      d.mla ? 1 : CheckedMul(KvHeadsPerRank(d.num_kv_heads, r.draft_tensor_parallel_size), d.head_dim, "head_dim");
  if (same_mla() && target_units == draft_units) {
    out.layers.insert(out.layers.end(), d.layers.begin(), d.layers.end());
  } else {
    auto all_full = [](const ModelSpec& m) {
      return !m.mla && std::all_of(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) {
        return l.attention == AttentionKind::kFull && l.attention_chunk_size_tokens == 0;
      });
    };
    const int64_t draft_total = CheckedMul(d.num_layers, draft_units, "num_layers");
    if (!all_full(target) || !all_full(d) || draft_total % target_units != 0) {
      throw Unsupported("speculative_config.model: the drafter's KV layers (" + std::to_string(d.num_layers) + " x " +
                        std::to_string(draft_units) + " KV elements per token per rank) cannot be sized beside the "
                        "target's (" + std::to_string(target_units) + " per layer): only full-attention models whose "
                        "pages add up to whole target layers are modelled");
    }
    LayerSpec full;
    full.moe = false;
    out.layers.insert(out.layers.end(), static_cast<size_t>(draft_total / target_units), full);
  }
  out.num_layers = static_cast<int64_t>(out.layers.size());
  RequireAtMost(out.num_layers, kMaxNumLayers, "num_layers", "target + drafter layers; vllm_mem/base/limits.h");
  return out;
}

std::vector<int64_t> SpecDecodeCaptureSizes(const std::vector<int64_t>& capture_sizes, int64_t max_capture_size,
                                            int64_t max_num_seqs, int64_t max_num_batched_tokens, int64_t q) {
  RequirePositiveAtMost(q, kMaxNumSpeculativeTokens + 1, "uniform_decode_query_len", "vllm_mem/base/limits.h");
  RequirePositiveAtMost(max_num_seqs, kMaxNumSeqs, "max_num_seqs", "vllm_mem/base/limits.h");
  RequirePositiveAtMost(max_num_batched_tokens, kMaxNumBatchedTokens, "max_num_batched_tokens",
                        "vllm_mem/base/limits.h");
  std::vector<int64_t> sizes;
  int64_t max_size = 0;
  if (!capture_sizes.empty()) {
    sizes = capture_sizes;
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    max_size = max_capture_size > 0 ? max_capture_size : sizes.back();
  } else {
    // VllmConfig._set_cudagraph_sizes: decode_query_len = 1 + num_speculative_tokens.
    max_size = max_capture_size > 0
                   ? max_capture_size
                   : std::min(CheckedMul(CheckedMul(max_num_seqs, q, "max_num_seqs"), 2, "max_num_seqs"), int64_t{512});
    max_size = std::min(max_size, max_num_batched_tokens);
    sizes = DefaultCaptureSizes(max_size);
  }
  if (q <= 1) return sizes;
  // CompilationConfig.adjust_cudagraph_sizes_for_spec_decode (sequence parallelism off).
  std::set<int64_t> rounded;
  for (int64_t size : sizes) {
    const int64_t up = CheckedMul(CeilDiv(size, q), q, "cudagraph_capture_sizes");
    if (up <= max_size) rounded.insert(up);
  }
  if (rounded.empty() && q <= max_size) rounded.insert(q);
  if (rounded.empty()) {
    std::string listed;
    for (size_t i = 0; i < sizes.size() && i < 8; ++i) listed += (i ? ", " : "") + std::to_string(sizes[i]);
    if (sizes.size() > 8) listed += ", ...";
    throw InvalidArgument(kTokensField, "No valid cudagraph sizes after rounding to multiple of " + std::to_string(q) +
                                            " (num_speculative_tokens + 1 or tp if sequence parallelism is enabled) "
                                            "please adjust num_speculative_tokens (" + std::to_string(q - 1) +
                                            ") or max_cudagraph_capture_size (" + std::to_string(max_size) +
                                            ") or cudagraph_capture_sizes ([" + listed + "])");
  }
  return {rounded.begin(), rounded.end()};
}

}  // namespace vllm_mem
