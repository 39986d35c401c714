/*!
 * \file core/plan/vllm_version_profile.cc
 * \brief vLLM release profiles read from plan/vllm_versions.json, version lookup, and the
 *        defaults each release fills in.
 */
#include "vllm_mem/plan/vllm_version_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_dtype.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/startup_budget.h"

namespace vllm_mem {
namespace {

// The version data file (plan/vllm_versions.json) as the string constant kVllmVersionsJson
// (generated vllm_versions_data.inc), parsed once on first use.
#include "vllm_versions_data.inc"

constexpr const char* kAllowedForm =
    "a vLLM release as MAJOR.MINOR or MAJOR.MINOR.PATCH (e.g. \"0.19\", \"0.10.2\", \"v0.21.0\"; a fourth number and "
    "rc/dev/+local suffixes are ignored)";

// A malformed data file is a build defect (tests read every profile), not the caller's error.
[[noreturn]] void Bad(const std::string& what) { throw std::logic_error("vllm_versions.json: " + what); }

const JsonValue& Member(const JsonValue& obj, const char* key, const std::string& where) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) Bad(where + " has no '" + key + "'");
  return *v;
}

std::string Str(const JsonValue& v, const std::string& where) {
  if (!v.IsString()) Bad(where + " must be a string");
  return v.AsString();
}

int64_t Int(const JsonValue& v, const std::string& where) {
  if (!v.IsNumber() || !v.AsNumber().integer) Bad(where + " must be an integer");
  return *v.AsNumber().integer;
}

std::string ValueText(const JsonValue& v) {
  if (v.IsBool()) return v.AsBool() ? "true" : "false";
  if (v.IsString()) return v.AsString();
  if (v.IsNumber()) return v.AsNumber().integer ? std::to_string(*v.AsNumber().integer) : PythonFloatRepr(v.AsNumber().value);
  if (v.IsArray()) {
    std::string out;
    for (const JsonValue& e : v.AsArray()) {
      if (!out.empty()) out += "; ";
      if (!e.IsObject()) { out += ValueText(e); continue; }
      std::string cond;
      if (const JsonValue* m = e.Find("min_memory_gib")) cond += ">=" + ValueText(*m) + " GiB";
      for (const char* key : {"name_contains_any", "name_contains_none"}) {
        if (const JsonValue* n = e.Find(key); n != nullptr && n->IsArray()) {
          std::string names;
          for (const JsonValue& x : n->AsArray()) names += (names.empty() ? "" : "/") + ValueText(x);
          cond += std::string(cond.empty() ? "" : " ") + (std::string(key) == "name_contains_any" ? "" : "not ") + names;
        }
      }
      const auto pair = [](const JsonValue* p) {
        return p != nullptr && p->IsArray() && p->AsArray().size() == 2
                   ? ValueText(p->AsArray()[0]) + "/" + ValueText(p->AsArray()[1])
                   : std::string("?");
      };
      out += (cond.empty() ? std::string("other GPUs") : cond) + ": server " + pair(e.Find("server")) + ", offline " +
             pair(e.Find("offline"));
    }
    return out + " (max_num_seqs/max_num_batched_tokens)";
  }
  if (v.IsObject()) {
    std::string out;
    for (const auto& [k, x] : v.AsObject()) out += (out.empty() ? "" : ", ") + k + "=" + ValueText(x);
    return out;
  }
  return "null";
}

KvLogFormat ParseLogFormat(const std::string& s) {
  if (s == "v0_blocks") return KvLogFormat::kV0Blocks;
  if (s == "v1_block_tokens") return KvLogFormat::kBlockTokens;
  if (s == "v1_grouped_tokens") return KvLogFormat::kGroupedTokens;
  if (s == "v1_combined_line") return KvLogFormat::kCombinedLine;
  if (s == "v1_concurrency_tokens") return KvLogFormat::kConcurrencyTokens;
  Bad("kv_log_format '" + s + "'");
}

std::vector<BatchDefaultTier> ParseTiers(const JsonValue& v) {
  if (!v.IsArray() || v.AsArray().empty()) Bad("batch_defaults value must be a non-empty list");
  std::vector<BatchDefaultTier> tiers;
  for (const JsonValue& e : v.AsArray()) {
    BatchDefaultTier t;
    if (const JsonValue* m = e.Find("min_memory_gib")) t.min_memory_bytes = CheckedMul(Int(*m, "min_memory_gib"), kGiB, "min_memory_gib");
    for (const char* key : {"name_contains_any", "name_contains_none"}) {
      if (const JsonValue* n = e.Find(key)) {
        if (!n->IsArray()) Bad(std::string(key) + " must be a list");
        auto& dst = std::string(key) == "name_contains_any" ? t.name_contains_any : t.name_contains_none;
        for (const JsonValue& x : n->AsArray()) dst.push_back(Str(x, key));
      }
    }
    const auto pair = [](const JsonValue& p, const char* key) {
      if (!p.IsArray() || p.AsArray().size() != 2) Bad(std::string(key) + " must be [max_num_seqs, max_num_batched_tokens]");
      return std::pair<int64_t, int64_t>{Int(p.AsArray()[0], key), Int(p.AsArray()[1], key)};
    };
    std::tie(t.server_max_num_seqs, t.server_max_num_batched_tokens) = pair(Member(e, "server", "tier"), "server");
    std::tie(t.offline_max_num_seqs, t.offline_max_num_batched_tokens) = pair(Member(e, "offline", "tier"), "offline");
    tiers.push_back(std::move(t));
  }
  return tiers;
}

// "a,b,c" -> {"a", "b", "c"} (empty items dropped): the list values of the data file.
std::vector<std::string> SplitList(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(sep, start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + sep.size();
  }
  return out;
}

// model_runner's value: {"v2_serves": "none" | "listed" | "dense" | "all", "v2_speculative_methods": "a,b",
// "v2_architectures": "A,B" and "v2_listed_dense_unquantized": bool where V2 serves listed architectures}.
void ApplyModelRunner(VllmVersionProfile& p, const JsonValue& v) {
  p.v2_runner_serves = Str(Member(v, "v2_serves", "model_runner"), "model_runner.v2_serves");
  if (p.v2_runner_serves != "none" && p.v2_runner_serves != "listed" && p.v2_runner_serves != "dense" &&
      p.v2_runner_serves != "all") {
    Bad("model_runner.v2_serves '" + p.v2_runner_serves + "'");
  }
  p.v2_runner_speculative_methods =
      SplitList(Str(Member(v, "v2_speculative_methods", "model_runner"), "v2_speculative_methods"), ",");
  p.v2_runner_architectures.clear();
  p.v2_runner_listed_dense_unquantized = false;
  if (const JsonValue* archs = v.Find("v2_architectures")) {
    p.v2_runner_architectures = SplitList(Str(*archs, "model_runner.v2_architectures"), ",");
  }
  if (const JsonValue* dense = v.Find("v2_listed_dense_unquantized")) {
    if (!dense->IsBool()) Bad("model_runner.v2_listed_dense_unquantized must be a boolean");
    p.v2_runner_listed_dense_unquantized = dense->AsBool();
  }
  if (p.v2_runner_serves == "listed" && p.v2_runner_architectures.empty()) {
    Bad("model_runner: v2_serves 'listed' names no v2_architectures");
  }
}

// kv_cache_dtypes_added's value: "a,b" of names the kv_cache area's table knows.
void ApplyKvCacheDTypesAdded(VllmVersionProfile& p, const std::string& value) {
  p.kv_cache_dtypes_added = SplitList(value, ",");
  const std::vector<std::string> known = SplitList(AllowedKvCacheDTypes(), ", ");
  for (const std::string& name : p.kv_cache_dtypes_added) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      Bad("kv_cache_dtypes_added: unknown KV-cache dtype '" + name + "'");
    }
  }
}

// Whether \p p lists \p name among the versioned KV-cache dtypes it accepts.
bool AcceptsKvDType(const VllmVersionProfile& p, std::string_view name) {
  const std::vector<std::string>& names = p.kv_cache_dtypes_added;
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The rules whose value is one boolean field of the profile.
constexpr std::pair<std::string_view, bool VllmVersionProfile::*> kBoolRules[] = {
    {"hybrid_align_to_user_block_size", &VllmVersionProfile::hybrid_align_to_user_block_size},
    {"sliding_window_capped_at_full", &VllmVersionProfile::sliding_window_capped_at_full},
    {"pixtral_dense_block_mask", &VllmVersionProfile::pixtral_dense_block_mask},
    {"qwen25_vision_qkv_copies", &VllmVersionProfile::qwen25_vision_qkv_copies},
    {"qwen25_vision_fp32_rotary", &VllmVersionProfile::qwen25_vision_fp32_rotary},
    {"mm_modality_tie_by_name", &VllmVersionProfile::mm_modality_tie_by_name},
    {"qwen_vl_image_factor_pair", &VllmVersionProfile::qwen_vl_image_factor_pair},
    {"text_only_skips_vision_tower", &VllmVersionProfile::text_only_skips_vision_tower},
    {"mm_dummy_options", &VllmVersionProfile::mm_dummy_options},
    {"hybrid_prefix_caching_default", &VllmVersionProfile::hybrid_prefix_caching_default},
    {"mamba_cache_mode_align_by_default", &VllmVersionProfile::mamba_cache_mode_align_by_default},
    {"max_model_len_auto", &VllmVersionProfile::max_model_len_auto},
    {"kv_cache_dtype_skip_layers", &VllmVersionProfile::kv_cache_dtype_skip_layers},
    {"language_model_only_flag", &VllmVersionProfile::language_model_only_flag},
    {"lora_extra_vocab", &VllmVersionProfile::lora_extra_vocab},
    {"moonvit_dense_attention_mask", &VllmVersionProfile::moonvit_dense_attention_mask},
    {"v2_runner_cudagraph_profiling", &VllmVersionProfile::v2_runner_cudagraph_profiling},
    {"hybrid_kv_cache_manager", &VllmVersionProfile::hybrid_kv_cache_manager},
    {"v0_engine_available", &VllmVersionProfile::v0_engine_available},
    {"cudagraph_memory_in_budget", &VllmVersionProfile::cudagraph_memory_in_budget},
    {"awq_mp_linear_kernel", &VllmVersionProfile::awq_mp_linear_kernel},
};

// True when \p rule is a boolean rule (kBoolRules), its value applied to \p p.
bool ApplyBoolRule(VllmVersionProfile& p, const std::string& rule, const JsonValue& v) {
  for (const auto& [name, field] : kBoolRules) {
    if (rule != name) continue;
    if (!v.IsBool()) Bad(rule + " must be a boolean");
    p.*field = v.AsBool();
    return true;
  }
  return false;
}

/*! The dummy sampler run's terms (ActivationConstants): per logit, the Triton kernel's buffer
 *  rows and the fixed bytes. */
void ApplySamplerRule(VllmVersionProfile& p, const std::string& rule, const JsonValue& v) {
  if (rule == "sampler_bytes_per_logit") {
    if (!v.IsNumber()) Bad(rule + " must be a number");
    p.sampler_bytes_per_logit = v.AsNumber().value;
  } else if (rule == "sampler_kernel_programs") {
    p.sampler_kernel_programs = Int(v, rule);
  } else if (rule == "sampler_fixed_bytes") {
    p.sampler_fixed_bytes = Int(v, rule);
  } else {
    Bad("unknown rule '" + rule + "'");
  }
}

// The rules whose value is a plain number: the default utilization and Model Runner V2's sampler
// figure (bytes per logit; the V1 runner's terms are ApplySamplerRule's). false for any other rule.
bool ApplyNumberRule(VllmVersionProfile& p, const std::string& rule, const JsonValue& v) {
  double* target = rule == "gpu_memory_utilization"       ? &p.gpu_memory_utilization
                   : rule == "v2_sampler_bytes_per_logit" ? &p.v2_sampler_bytes_per_logit
                                                          : nullptr;
  if (target == nullptr) return false;
  if (!v.IsNumber()) Bad(rule + " must be a number");
  *target = v.AsNumber().value;
  return true;
}

/*! sparse_indexer_profile's value: {"keys_per_max_model_len": n, "in_workspace": bool,
 *  "radix_topk_workspace_bytes": n, "logits_reserve_bytes": n, "long_context_above_tokens": n,
 *  "long_context_keys_per_max_model_len": n} (sparse_indexer_profile.h). */
void ApplySparseIndexerRule(VllmVersionProfile& p, const std::string& rule, const JsonValue& v) {
  SparseIndexerProfile& r = p.sparse_indexer;
  r.keys_per_max_model_len_tokens = Int(Member(v, "keys_per_max_model_len", rule), rule);
  const JsonValue& in_workspace = Member(v, "in_workspace", rule);
  if (!in_workspace.IsBool()) Bad(rule + ".in_workspace must be a boolean");
  r.in_workspace = in_workspace.AsBool();
  r.radix_topk_workspace_bytes = Int(Member(v, "radix_topk_workspace_bytes", rule), rule);
  r.logits_reserve_bytes = Int(Member(v, "logits_reserve_bytes", rule), rule);
  r.long_context_above_tokens = Int(Member(v, "long_context_above_tokens", rule), rule);
  r.long_context_keys_per_max_model_len_tokens = Int(Member(v, "long_context_keys_per_max_model_len", rule), rule);
  if (r.keys_per_max_model_len_tokens <= 0 || r.radix_topk_workspace_bytes < 0 || r.logits_reserve_bytes < 0 ||
      r.long_context_above_tokens < 0 || r.long_context_keys_per_max_model_len_tokens < 0) {
    Bad(rule + ": keys_per_max_model_len must be positive and the byte and token counts non-negative");
  }
}

bool Bool(const JsonValue& v, const std::string& rule, const char* key) {
  const JsonValue& b = Member(v, key, rule);
  if (!b.IsBool()) Bad(rule + "." + key + " must be a boolean");
  return b.AsBool();
}

/*! sparse_mla_workspace's value: the SparseMlaWorkspaceRule fields by their JSON names
 *  (sparse_mla_workspace.h). */
void ApplySparseMlaWorkspaceRule(VllmVersionProfile& p, const std::string& rule, const JsonValue& v) {
  SparseMlaWorkspaceRule& r = p.sparse_mla_workspace;
  r.prefill_rows_per_max_model_len_tokens = Int(Member(v, "prefill_rows_per_max_model_len", rule), rule);
  r.long_context_above_tokens = Int(Member(v, "long_context_above_tokens", rule), rule);
  r.long_context_prefill_rows_per_max_model_len_tokens =
      Int(Member(v, "long_context_prefill_rows_per_max_model_len", rule), rule);
  r.query_buffer = Bool(v, rule, "query_buffer");
  r.query_heads_padded_for_bf16_kv = Bool(v, rule, "query_heads_padded_for_bf16_kv");
  r.fp8_mqa_prefill_buffers = Bool(v, rule, "fp8_mqa_prefill_buffers");
  r.sm100_prefill_padding_heads = Int(Member(v, "sm100_prefill_padding_heads", rule), rule);
  r.keeps_views = Bool(v, rule, "keeps_views");
  r.sm100_flashinfer_max_heads = Int(Member(v, "sm100_flashinfer_max_heads", rule), rule);
  r.sm100_flashinfer_for_fp8 = Bool(v, rule, "sm100_flashinfer_for_fp8");
  r.sm90_flash_attn_for_bf16 = Bool(v, rule, "sm90_flash_attn_for_bf16");
  if (r.prefill_rows_per_max_model_len_tokens < 0 || r.long_context_above_tokens < 0 ||
      r.long_context_prefill_rows_per_max_model_len_tokens < 0 || r.sm100_prefill_padding_heads <= 0 ||
      r.sm100_flashinfer_max_heads < 0) {
    Bad(rule + ": the token and head counts must be non-negative (sm100_prefill_padding_heads positive)");
  }
}

void Apply(VllmVersionProfile& p, const std::string& rule, const JsonValue& v) {
  if (ApplyNumberRule(p, rule, v) || ApplyBoolRule(p, rule, v)) return;
  if (rule == "engine") {
    p.engine = Str(v, rule);
    if (p.engine != VllmEngineName(VllmEngine::kV0) && p.engine != VllmEngineName(VllmEngine::kV1)) {
      Bad("engine '" + p.engine + "'");
    }
  } else if (rule == "batch_defaults") {
    p.batch_tiers = ParseTiers(v);
  } else if (rule == "v0_batch_defaults") {
    p.v0_batch.max_num_seqs = Int(Member(v, "max_num_seqs", rule), rule);
    p.v0_batch.min_batched_tokens = Int(Member(v, "min_batched_tokens", rule), rule);
    p.v0_batch.chunked_prefill_above_tokens = Int(Member(v, "chunked_prefill_above_tokens", rule), rule);
    p.v0_batch.chunked_prefill_batched_tokens = Int(Member(v, "chunked_prefill_batched_tokens", rule), rule);
  } else if (rule == "kv_cache_dtypes_added") {
    ApplyKvCacheDTypesAdded(p, Str(v, rule));
  } else if (rule == "model_runner") {
    ApplyModelRunner(p, v);
  } else if (rule.starts_with("sampler_")) {
    ApplySamplerRule(p, rule, v);
  } else if (rule == "sparse_indexer_profile") {
    ApplySparseIndexerRule(p, rule, v);
  } else if (rule == "sparse_mla_workspace") {
    ApplySparseMlaWorkspaceRule(p, rule, v);
  } else if (rule == "kv_log_format") {
    p.kv_log_format = ParseLogFormat(Str(v, rule));
  } else if (rule == "mxfp4_hopper_value_align") {
    p.mxfp4_hopper_value_align = Int(v, rule);
    if (p.mxfp4_hopper_value_align != 0 && p.mxfp4_hopper_value_align != 64) Bad(rule + " must be 0 or 64");
  } else if (rule == "available_kv_line") {
    const std::string f = Str(v, rule);
    if (f != "fixed2" && f != "format_gib") Bad(rule + " '" + f + "'");
    p.available_kv_line_format_gib = f == "format_gib";
  } else if (rule == "qwen3_vl_dummy_video") {
    const std::optional<Qwen3VlDummyVideo> video = Qwen3VlDummyVideoFromName(Str(v, rule));
    if (!video) Bad(rule + " '" + Str(v, rule) + "'");
    p.qwen3_vl_dummy_video = *video;
  } else if (rule == "default_block_size") {
    p.default_block_size = Int(v, rule);
  } else if (rule == "max_model_len_message") {
    const std::string s = Str(v, rule);
    if (s != "short" && s != "with_warning") Bad(rule + " '" + s + "'");
    p.long_max_model_len_warning = s == "with_warning";
  } else if (rule == "non_torch_single_gpu_bytes") {
    // One GPU's non-torch increase in the profile run (CUDA runtime, cuBLAS workspaces): the
    // release's figure replaces NonTorchConstants.single_process_bytes (logs: 0.13 GiB to 0.17, 0.25 from 0.18).
    p.non_torch_single_gpu_bytes = Int(v, rule);
    if (p.non_torch_single_gpu_bytes <= 0) Bad(rule + " must be a positive byte count");
  } else if (rule == "worker_budget") {
    // Follows the engine: recorded for the table only.
  } else if (rule == "non_kv_cache_memory") {
    // memory_profiling's formula (core/memory's NonKvFormula), read by name from the profile's
    // rule list by mem_utils.py; checked here so a typo fails at start-up, not in a worker.
    const std::string f = Str(v, rule);
    if (f != "components" && f != "total_consumed") Bad(rule + " '" + f + "'");
  } else {
    Bad("unknown rule '" + rule + "'");
  }
}

std::vector<VllmVersionProfile> BuildProfiles() {
  const JsonValue doc = ParseJson(kVllmVersionsJson, "vllm_versions.json");
  const JsonValue& releases = Member(doc, "releases", "document");
  const JsonValue& rules = Member(doc, "rules", "document");
  if (!releases.IsArray() || !rules.IsObject()) Bad("'releases' must be a list and 'rules' an object");
  std::vector<VllmVersionProfile> out;
  for (const JsonValue& r : releases.AsArray()) {
    VllmVersionProfile p;
    const VllmVersion version = ParseVllmVersion(Str(Member(r, "version", "release"), "version"));
    p.version = VllmVersionString(version);
    if (const JsonValue* d = r.Find("date")) p.date = Str(*d, "date");
    if (const JsonValue* n = r.Find("note")) p.note = Str(*n, "note");
    if (!out.empty() && !(ParseVllmVersion(out.back().version) < version)) Bad("releases must be in increasing order");
    for (const auto& [name, rule] : rules.AsObject()) {
      const JsonValue& changes = Member(rule, "changes", name);
      if (!changes.IsArray()) Bad(name + ".changes must be a list");
      const JsonValue* chosen = nullptr;
      for (const JsonValue& c : changes.AsArray()) {
        if (ParseVllmVersion(Str(Member(c, "since", name), "since")) <= version) chosen = &c;
      }
      if (chosen == nullptr) Bad(name + " has no value for " + p.version);
      const JsonValue& value = Member(*chosen, "value", name);
      Apply(p, name, value);
      p.rules.push_back({name, ValueText(value), VllmVersionString(ParseVllmVersion(Str(Member(*chosen, "since", name), "since"))),
                         Str(Member(*chosen, "release", name), "release"), Str(Member(*chosen, "source", name), "source")});
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) Bad("no releases");
  return out;
}

// Releases past the newest profile whose start-up changed in ways no rule here models
// (vllm_versions.json "not_modelled"): a plan for one is refused by name, never made with an
// older release's rules.
struct NotModelledFrom {
  VllmVersion from;
  std::string what, source;
};

std::vector<NotModelledFrom> BuildNotModelled() {
  const JsonValue doc = ParseJson(kVllmVersionsJson, "vllm_versions.json");
  std::vector<NotModelledFrom> out;
  const JsonValue* list = doc.Find("not_modelled");
  if (list == nullptr) return out;
  if (!list->IsArray()) Bad("'not_modelled' must be a list");
  for (const JsonValue& e : list->AsArray()) {
    out.push_back({ParseVllmVersion(Str(Member(e, "from", "not_modelled"), "from")),
                   Str(Member(e, "what", "not_modelled"), "what"), Str(Member(e, "source", "not_modelled"), "source")});
  }
  return out;
}


std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool TierMatches(const BatchDefaultTier& t, int64_t total_memory_bytes, const std::string& name_lower) {
  // A tier without a memory floor matches any figure: a negative or zero total reaches here
  // before the plan's own checks refuse it by name (fuzz_model_config found the logic_error).
  if (t.min_memory_bytes > 0 && total_memory_bytes < t.min_memory_bytes) return false;
  if (!t.name_contains_any.empty() &&
      std::none_of(t.name_contains_any.begin(), t.name_contains_any.end(),
                   [&](const std::string& n) { return name_lower.find(n) != std::string::npos; })) {
    return false;
  }
  return std::none_of(t.name_contains_none.begin(), t.name_contains_none.end(),
                      [&](const std::string& n) { return name_lower.find(n) != std::string::npos; });
}

// The release a plan takes when none is asked or installed: the newest whose default start-up
// (CUDA graphs, the estimate in the budget) is planned. From 0.29 Model Runner V2 measures its
// graphs, which no rule reproduces (model_runner.h V2GraphProfileRefusal).
const VllmVersionProfile& DefaultProfile(const std::vector<VllmVersionProfile>& profiles) {
  for (auto it = profiles.rbegin(); it != profiles.rend(); ++it) {
    if (!it->v2_runner_cudagraph_profiling || it->v2_runner_serves == "none") return *it;
  }
  return profiles.front();
}

}  // namespace

void RefuseIfNotModelled(const std::string& asked) {
  static const std::vector<NotModelledFrom> kNotModelled = BuildNotModelled();
  if (asked.empty()) return;
  const VllmVersion v = ParseVllmVersion(asked);
  for (const NotModelledFrom& n : kNotModelled) {
    if (n.from <= v) {
      throw Unsupported("vllm_version " + VllmVersionString(v) + ": not modelled: from vLLM " +
                        VllmVersionString(n.from) + ", " + n.what + " (" + n.source +
                        "). The newest release with rules is " + VllmVersionProfiles().back().version +
                        "; vllm_version=\"" + VllmVersionProfiles().back().version + "\" plans with those rules");
    }
  }
}

bool VllmVersion::operator<(const VllmVersion& o) const {
  if (major != o.major) return major < o.major;
  if (minor != o.minor) return minor < o.minor;
  return patch < o.patch;
}

VllmVersion ParseVllmVersion(std::string_view text) {
  const auto bad = [&]() -> InvalidArgument {
    return InvalidArgument("vllm_version", "must be " + std::string(kAllowedForm) + ", got " +
                                               EchoValue(text));
  };
  std::string_view s = text;
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  VllmVersion v;
  int64_t* parts[3] = {&v.major, &v.minor, &v.patch};
  size_t i = 0;
  int n = 0;
  for (; n < 3; ++n) {
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (n < 2) throw bad();
      break;
    }
    int64_t x = 0;
    size_t digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (++digits > 6) throw bad();  // no release number has more than a few digits
      x = x * 10 + (s[i] - '0');
      ++i;
    }
    *parts[n] = x;
    if (i < s.size() && s[i] == '.' && n < 2) {
      ++i;
      continue;
    }
    ++n;
    break;
  }
  if (n < 2) throw bad();
  // What may follow: a PEP 440 pre/dev/post release or a local version ("rc1", ".dev12+g3e372c5").
  std::string_view rest = s.substr(i);
  // A fourth number is a post-release of the patch (vLLM shipped 0.10.1.1): same rules.
  if (n == 3 && rest.size() >= 2 && rest[0] == '.' && std::isdigit(static_cast<unsigned char>(rest[1]))) {
    size_t k = 1;
    while (k < rest.size() && std::isdigit(static_cast<unsigned char>(rest[k]))) {
      if (k > 6) throw bad();
      ++k;
    }
    rest.remove_prefix(k);
  }
  if (!rest.empty()) {
    const char c = rest.front();
    const bool allowed = c == '.' || c == '+' || c == '-' || std::isalpha(static_cast<unsigned char>(c));
    if (!allowed || rest.size() > 64) throw bad();
    for (char ch : rest) {
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '+' || ch == '-' || ch == '_')) throw bad();
    }
    if (c == '.' && (rest.size() < 2 || std::isdigit(static_cast<unsigned char>(rest[1])))) throw bad();  // "0.19.1.2.3"
  }
  return v;
}

std::string VllmVersionString(const VllmVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

const std::vector<VllmVersionProfile>& VllmVersionProfiles() {
  static const std::vector<VllmVersionProfile> kProfiles = BuildProfiles();
  return kProfiles;
}

VersionLookup LookupVllmVersion(std::string_view version) {
  const auto& profiles = VllmVersionProfiles();
  VersionLookup out;
  if (version.empty()) {
    out.profile = &DefaultProfile(profiles);
    out.note = "no vllm_version given and no vllm installed: vLLM " + out.profile->version +
               ", the newest release whose CUDA-graph start-ups vllm_mem plans" +
               (out.profile == &profiles.back()
                    ? std::string()
                    : " (" + profiles.back().version + " is planned for enforce_eager start-ups when asked for)");
    return out;
  }
  const VllmVersion asked = ParseVllmVersion(version);
  out.asked = VllmVersionString(asked);
  for (const auto& p : profiles) {
    if (ParseVllmVersion(p.version) <= asked) out.profile = &p;
  }
  if (out.profile == nullptr) {
    throw InvalidArgument("vllm_version", EchoValue(version) +
                                              " is older than the oldest profile (" + profiles.front().version +
                                              "); see vllm_mem.vllm_versions()");
  }
  const VllmVersion newest = ParseVllmVersion(profiles.back().version);
  out.newer_than_known = newest < asked && (asked.major != newest.major || asked.minor != newest.minor);
  if (out.newer_than_known) {
    out.note = "vLLM " + out.asked + " is newer than the newest known release (" + profiles.back().version +
               "): planned with " + profiles.back().version + "'s rules";
  } else {
    out.note = out.asked == out.profile->version
                   ? "the release asked for"
                   : "vLLM " + out.asked + " planned with the rules of " + out.profile->version +
                         " (the newest profile at or before it)";
  }
  return out;
}

const char* VllmEngineName(VllmEngine engine) { return engine == VllmEngine::kV0 ? "v0" : "v1"; }

VllmEngine ParseVllmEngine(std::string_view text) {
  if (text == VllmEngineName(VllmEngine::kV0)) return VllmEngine::kV0;
  if (text == VllmEngineName(VllmEngine::kV1)) return VllmEngine::kV1;
  throw InvalidArgument("vllm_engine", "must be \"v0\" or \"v1\", got " + EchoValue(std::string(text)));
}

VllmEngine EngineFor(const VllmVersionProfile& profile, std::string_view asked) {
  return ParseVllmEngine(asked.empty() ? std::string_view(profile.engine) : asked);
}

std::string AvailableKvCacheLine(const VllmVersionProfile& profile, const std::string& engine, int64_t available_bytes) {
  const double gib = static_cast<double>(available_bytes) / static_cast<double>(kGiB);
  if (EngineFor(profile, engine) == VllmEngine::kV0) return "the rest of the memory reserved for KV Cache is " + FormatFixed(gib, 2) + "GiB.";
  return "Available KV cache memory: " +
         (profile.available_kv_line_format_gib ? FormatGib(available_bytes) : FormatFixed(gib, 2)) + " GiB";
}

void ValidateUsageContext(const std::string& usage_context) {
  if (usage_context != "server" && usage_context != "offline") {
    throw InvalidArgument("usage_context", "must be \"server\" (vllm serve, the OpenAI API server) or \"offline\" "
                                           "(the LLM class), got " + EchoValue(usage_context));
  }
}

BatchDefaults ResolveBatchDefaults(const VllmVersionProfile& profile, const std::string& engine,
                                   const std::string& usage_context, int64_t total_memory_bytes,
                                   const std::string& gpu_name, int64_t max_model_len, int64_t max_num_seqs,
                                   int64_t max_num_batched_tokens) {
  ValidateUsageContext(usage_context);
  BatchDefaults d{max_num_seqs, max_num_batched_tokens};
  if (EngineFor(profile, engine) == VllmEngine::kV0) {
    // SchedulerConfig.__post_init__: chunked prefill (on by default above 32K tokens) keeps the
    // 2048-token budget; without it a whole prompt must fit: max(max_model_len, 2048).
    const V0BatchDefaults& v0 = profile.v0_batch;
    if (d.max_num_seqs == 0) d.max_num_seqs = v0.max_num_seqs;
    if (d.max_num_batched_tokens == 0) {
      d.max_num_batched_tokens = max_model_len > v0.chunked_prefill_above_tokens
                                     ? v0.chunked_prefill_batched_tokens
                                     : std::max(max_model_len, v0.min_batched_tokens);
    }
    return d;
  }
  const std::string name = Lower(gpu_name.empty() ? std::string() : gpu_name);
  const BatchDefaultTier* tier = nullptr;
  for (const BatchDefaultTier& t : profile.batch_tiers) {
    if (TierMatches(t, total_memory_bytes, name)) {
      tier = &t;
      break;
    }
  }
  if (tier == nullptr) throw std::logic_error("vllm_versions.json: no batch_defaults tier matches (the last must be unconditional)");
  const bool server = usage_context == "server";
  // 0 is "not set"; a negative figure is kept for ValidateInputs to refuse by name.
  const bool tokens_given = d.max_num_batched_tokens != 0;
  const bool seqs_given = d.max_num_seqs != 0;
  if (!tokens_given) d.max_num_batched_tokens = server ? tier->server_max_num_batched_tokens : tier->offline_max_num_batched_tokens;
  if (!seqs_given) d.max_num_seqs = server ? tier->server_max_num_seqs : tier->offline_max_num_seqs;
  // _set_default_max_num_seqs_and_batched_tokens_args: a default token budget never exceeds
  // what max_num_seqs requests of max_model_len can use, and default seqs never exceed tokens.
  if (!tokens_given && max_model_len > 0 && d.max_num_seqs > 0) {
    d.max_num_batched_tokens = std::min(d.max_num_batched_tokens, CheckedMul(d.max_num_seqs, max_model_len, "max_num_batched_tokens"));
  }
  if (!seqs_given && d.max_num_batched_tokens > 0) d.max_num_seqs = std::min(d.max_num_seqs, d.max_num_batched_tokens);
  return d;
}

int64_t DerivedMaxModelLen(const ModelSpec& spec) {
  // No length key at all: vLLM assumes 2048 (and warns).
  if (spec.max_position_embeddings <= 0) return 2048;
  // Gemma-3's max_position_embeddings is already the scaled length (vLLM skips the factor).
  if (spec.model_type.find("gemma3") != std::string::npos) return spec.max_position_embeddings;
  // The reader applied the same scaling to the rotary cache rows vLLM's get_rope allocates:
  // yarn -> original x factor, linear/dynamic -> positions x factor, llama3/longrope/su -> none.
  return spec.traits.rope_cache_positions > 0 ? spec.traits.rope_cache_positions : spec.max_position_embeddings;
}

std::string LongMaxModelLenError(const VllmVersionProfile& profile, const ModelSpec& spec, int64_t max_model_len,
                                 bool allow_long) {
  // No length key in the config: vLLM takes the asked length as it is (2048 only as a default).
  if (allow_long || spec.max_position_embeddings <= 0) return "";
  const int64_t derived = DerivedMaxModelLen(spec);
  if (max_model_len <= derived) return "";
  // A scaled length is a Python float in vLLM's message ("131072.0").
  const bool scaled = derived != spec.max_position_embeddings && spec.max_position_embeddings > 0;
  std::string msg = "User-specified max_model_len (" + std::to_string(max_model_len) +
                    ") is greater than the derived max_model_len (max_position_embeddings=" + std::to_string(derived) +
                    (scaled ? ".0" : "") + " or model_max_length=None in model's config.json).";
  // vLLM goes on with cautionary sentences (0.7-0.10.1: "This may lead to incorrect model outputs
  // or CUDA errors."; from 0.10.2: "... must be used with extreme caution. If the model uses
  // relative position encoding (RoPE), ..."): left out, since with them the message passes the
  // 300 characters every error keeps to (docs/errors.md). The refusal sentence and the override
  // instruction stay verbatim, with the release's punctuation.
  return msg + " To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" +
         (profile.long_max_model_len_warning ? "." : "");
}

std::string KvCacheDTypeRefusal(const VllmVersionProfile& profile, std::string_view kv_cache_dtype) {
  if (AcceptsKvDType(profile, kv_cache_dtype)) return "";
  const auto& all = VllmVersionProfiles();
  const auto first = std::find_if(all.begin(), all.end(),
                                  [&](const VllmVersionProfile& p) { return AcceptsKvDType(p, kv_cache_dtype); });
  if (first == all.end()) return "";  // not a versioned name: every release takes it
  // pydantic's literal_error lists the release's CacheDType values: here the names the planner
  // knows, less the versioned ones this release does not have yet (the newest profile has all).
  std::string list;
  std::vector<std::string> allowed;
  for (const std::string& name : SplitList(AllowedKvCacheDTypes(), ", ")) {
    if (!AcceptsKvDType(all.back(), name) || AcceptsKvDType(profile, name)) allowed.push_back("'" + name + "'");
  }
  for (size_t i = 0; i < allowed.size(); ++i) {
    list += (i == 0 ? "" : (i + 1 == allowed.size() ? " or " : ", ")) + allowed[i];
  }
  const std::string name(kv_cache_dtype);
  return "1 validation error for CacheConfig\ncache_dtype\n  Input should be " + list +
         " [type=literal_error, input_value='" + name + "', input_type=str] (vLLM " + profile.version + " has no '" +
         name + "' KV cache; it is accepted from vLLM " + first->version + ")";
}

std::string MaxModelLenAutoRefusal(const VllmVersionProfile& profile) {
  if (profile.max_model_len_auto) return "";
  const auto& all = VllmVersionProfiles();
  const auto first =
      std::find_if(all.begin(), all.end(), [](const VllmVersionProfile& p) { return p.max_model_len_auto; });
  const std::string since = first == all.end() ? std::string("no release known here") : first->version;
  return "-1 (auto) is vLLM's auto-fit from " + since + "; vLLM " + profile.version +
         " has none: its parser refuses auto (\"argument --max-model-len: invalid human_readable_int value: "
         "'auto'\") and takes -1 as a length no check refuses, which is not modelled; give a length";
}

std::string KvSkipLayersRefusal(const VllmVersionProfile& profile, const std::vector<std::string>& skip_layers) {
  if (skip_layers.empty() || profile.kv_cache_dtype_skip_layers) return "";
  const auto& all = VllmVersionProfiles();
  const auto first =
      std::find_if(all.begin(), all.end(), [](const VllmVersionProfile& p) { return p.kv_cache_dtype_skip_layers; });
  const std::string since = first == all.end() ? std::string("no release known here") : first->version;
  std::string args;  // argparse echoes the flag and its values (nargs="+"), a few at most here
  for (size_t i = 0; i < skip_layers.size() && i < 4; ++i) args.append(" ").append(EchoValue(skip_layers[i]));
  if (skip_layers.size() > 4) args += " ...";
  return "vllm serve: error: unrecognized arguments: --kv-cache-dtype-skip-layers" + args + " (vLLM " +
         profile.version + " has no --kv-cache-dtype-skip-layers; it is accepted from vLLM " + since + ")";
}

std::string LanguageModelOnlyRefusal(const VllmVersionProfile& profile, bool language_model_only) {
  if (!language_model_only || profile.language_model_only_flag) return "";
  const auto& all = VllmVersionProfiles();
  const auto first =
      std::find_if(all.begin(), all.end(), [](const VllmVersionProfile& p) { return p.language_model_only_flag; });
  const std::string since = first == all.end() ? std::string("no release known here") : first->version;
  return "vllm serve: error: unrecognized arguments: --language-model-only (vLLM " + profile.version +
         " has no --language-model-only; it is accepted from vLLM " + since +
         "; before it, limit every modality to 0 with limit_mm_per_prompt)";
}

void ApplyVersionKvRules(const VllmVersionProfile& profile, const std::string& engine, KvCacheOptions& options) {
  const bool v0 = EngineFor(profile, engine) == VllmEngine::kV0;
  const KvLogFormat format = v0 ? KvLogFormat::kV0Blocks : profile.kv_log_format;
  options.kv_tokens_from_concurrency = format == KvLogFormat::kCombinedLine || format == KvLogFormat::kConcurrencyTokens;
  options.hybrid_align_to_user_block_size = profile.hybrid_align_to_user_block_size;
  options.cap_sliding_window_at_full = profile.sliding_window_capped_at_full;
  if (v0 || !profile.hybrid_kv_cache_manager) options.disable_hybrid_kv_cache_manager = true;
}

}  // namespace vllm_mem
