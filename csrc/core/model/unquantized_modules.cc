/*!
 * \file core/model/unquantized_modules.cc
 * \brief Which linears a quantized checkpoint leaves in the model dtype: its list of modules
 *        (compressed-tensors `ignore`, ModelOpt `exclude_modules`, AWQ `modules_to_not_convert`,
 *        fp8 `ignored_layers`) matched against a layer's name as the method's vLLM config does.
 */
#include <algorithm>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/model/weights_common.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem {
namespace {

/*! fnmatch's `*` and `?` over the whole name (ModelOpt's wildcard exclude_modules). */
bool GlobMatches(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0, star = std::string::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

/*! One entry of the list, compiled once: compressed-tensors' check_equal_or_regex_match takes "re:"
 *  patterns with Python's re.match (anchored at the start only) and others as whole names. */
struct Pattern {
  std::string text;
  std::optional<std::regex> regex;
};

std::vector<Pattern> Compile(const QuantizationSpec& q) {
  std::vector<Pattern> out;
  for (const std::string& text : q.unquantized_modules) {
    Pattern p{text, std::nullopt};
    const bool regex_method = q.method.rfind("awq", 0) != 0 && q.method != "modelopt";
    if (regex_method && text.rfind("re:", 0) == 0) {
      try {
        p.regex = std::regex(text.substr(3));
      } catch (const std::regex_error&) {
        throw InvalidArgument("quantization_config.ignore", "not a regular expression: " + EchoValue(text));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

/*! One pattern against one layer name: vLLM awq.py is_layer_skipped_awq (a substring),
 *  modelopt.py is_layer_excluded (a substring or an fnmatch wildcard), compressed-tensors / fp8
 *  (a "re:" regex or the whole name). */
bool PatternMatches(const std::string& method, const Pattern& p, const std::string& name) {
  if (method.rfind("awq", 0) == 0) return name.find(p.text) != std::string::npos;
  if (method == "modelopt") return name.find(p.text) != std::string::npos || GlobMatches(p.text, name);
  if (p.regex) return std::regex_search(name, *p.regex, std::regex_constants::match_continuous);
  return p.text == name;
}

/*! Where a checkpoint's decoder layers live: "model.layers." (Llama-style), or under a
 *  multimodal wrapper's language model (Qwen3.5 / Qwen3-VL: "model.language_model.layers." in
 *  the checkpoint, "language_model.model.layers." in vLLM). */
constexpr const char* kLayerPrefixes[] = {"model.layers.", "model.language_model.layers.",
                                          "language_model.model.layers."};

/*! Whether any entry matches layer \p index's \p module under any layer prefix. */
bool AnyMatches(const std::string& method, const std::vector<Pattern>& patterns, int64_t index,
                const std::string& module) {
  for (const char* prefix : kLayerPrefixes) {
    const std::string name = index < 0 ? module : prefix + std::to_string(index) + "." + module;
    for (const Pattern& p : patterns) {
      if (PatternMatches(method, p, name)) return true;
    }
  }
  return false;
}

/*! Linear::modules read: vLLM's (fused) module name before '|', the checkpoint's shards after. */
struct LinearNames {
  std::string fused;
  std::vector<std::string> shards;
};

LinearNames ParseNames(const char* modules) {
  const std::string text = modules;
  const size_t bar = text.find('|');
  LinearNames out;
  const std::string shards = bar == std::string::npos ? text : text.substr(bar + 1);
  size_t start = 0;
  while (start <= shards.size()) {
    size_t comma = shards.find(',', start);
    if (comma == std::string::npos) comma = shards.size();
    out.shards.push_back(shards.substr(start, comma - start));
    start = comma + 1;
  }
  out.fused = bar == std::string::npos ? out.shards.front() : text.substr(0, bar);
  return out;
}

/*! compressed-tensors' should_ignore_layer: the fused name itself, or every shard alike (vLLM
 *  refuses shards with different schemes). */
bool ShardsSkipped(const QuantizationSpec& q, const std::vector<Pattern>& patterns, int64_t i, const LinearNames& n) {
  if (n.shards.size() > 1 && AnyMatches(q.method, patterns, i, n.fused)) return true;
  std::optional<bool> verdict;
  for (const std::string& shard : n.shards) {
    const bool skipped = AnyMatches(q.method, patterns, i, shard);
    if (verdict && *verdict != skipped) {
      throw Unsupported("the checkpoint's list of unquantized modules covers some shards of " + n.fused +
                        " only; vLLM refuses a fused linear with different schemes");
    }
    verdict = skipped;
  }
  return verdict.value_or(false);
}

/*! Whether the list leaves the linear unquantized in layer \p i, by the method's rule. */
bool SkippedInLayer(const QuantizationSpec& q, const std::vector<Pattern>& patterns, int64_t i, const LinearNames& n) {
  // AWQ matches vLLM's module name (its fused qkv_proj / gate_up_proj); ModelOpt the shards'
  // exact names, then the module name as a substring or wildcard.
  if (q.method.rfind("awq", 0) == 0) return AnyMatches(q.method, patterns, i, n.fused);
  if (q.method == "modelopt") {
    bool all = true;
    for (const std::string& shard : n.shards) all = all && AnyMatches("compressed-tensors", patterns, i, shard);
    return all || AnyMatches(q.method, patterns, i, n.fused);
  }
  return ShardsSkipped(q, patterns, i, n);
}

}  // namespace

bool LeftUnquantized(const QuantizationSpec& q, const char* modules, const std::vector<int64_t>& layers) {
  if (q.unquantized_modules.empty()) return false;
  const std::vector<Pattern> patterns = Compile(q);
  const LinearNames names = ParseNames(modules);
  const std::vector<int64_t> indices = layers.empty() ? std::vector<int64_t>{-1} : layers;
  std::optional<bool> verdict;
  for (const int64_t i : indices) {
    const bool skipped = SkippedInLayer(q, patterns, i, names);
    if (verdict && *verdict != skipped) {
      // A list that names some layers of a kind only would need a per-layer count.
      throw Unsupported("the checkpoint's list of unquantized modules covers " + names.fused +
                        " in some layers only; per-layer quantization exclusions are not modelled");
    }
    verdict = skipped;
  }
  return verdict.value_or(false);
}

void ApplyUnquantizedModules(std::vector<Linear>& linears, const std::optional<QuantizationSpec>& q,
                             const std::vector<int64_t>& layers) {
  if (!q || q->unquantized_modules.empty()) return;
  for (Linear& l : linears) {
    if (l.quantizable && LeftUnquantized(*q, l.modules, layers)) l.quantizable = false;
  }
}

}  // namespace vllm_mem
