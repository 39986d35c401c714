/*!
 * \file core/plan/gpu_catalog.cc
 * \brief The GPU catalog (its figures are data: gpu_catalog.json) and the tolerant name lookup.
 *
 * Sources, in order of preference: a byte-exact start-up log (the calibration set), torch's
 * printed device properties (total_memory in MiB), PyTorch's OOM message (GiB, 2 decimals).
 * The figure moves by a few MiB between driver versions (the same T4 prints 14930-15109 MB
 * across drivers); where several were found the most recent driver's value is used.
 *
 * Estimation rule, for cards with no public figure: the runtime reports about 1% less than the
 * nominal capacity read as GiB (H100 80 -> 79.19, A100 80 -> 79.25, H20 96 -> 95.00, B200 180
 * -> 178.36, RTX 4090 24 -> 23.99 GiB), so an estimated entry is nominal GiB * 0.99, rounded to
 * MiB, with 1% as its uncertainty. AMD reports 0.02 GiB less than nominal (64 -> 63.98, 192 ->
 * 191.98, 256 -> 255.98, 288 -> 287.98 GiB), which is the AMD rule.
 */
#include "vllm_mem/plan/gpu_catalog.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

// The catalog's figures are data: csrc/core/plan/gpu_catalog.json, compiled in by CMake as the
// string kGpuCatalogJson (generated gpu_catalog_data.inc), read once on first use. Each entry's
// figure keeps its source's own unit (bytes, MiB, GiB with 2 decimals, or an estimation rule),
// so the file reads like the sources it was taken from and the conversions live here.
#include "gpu_catalog_data.inc"


int64_t FromMib(int64_t mib) { return mib * kMiB; }
// A GiB figure printed with 2 decimals, kept at MiB granularity.
int64_t FromGib(double gib) { return std::llround(gib * 1024.0) * kMiB; }
int64_t EstimateNvidia(int64_t nominal_gb) { return FromGib(static_cast<double>(nominal_gb) * 0.99); }
int64_t EstimateAmd(int64_t nominal_gb) { return FromGib(static_cast<double>(nominal_gb) - 0.02); }

int64_t Uncertainty(MemoryFigureSource source, int64_t nominal_gb) {
  switch (source) {
    case MemoryFigureSource::kMeasured: return 0;
    case MemoryFigureSource::kReportedMib: return kMiB;
    case MemoryFigureSource::kReportedGib: return 6 * kMiB;  // +-0.005 GiB = 5.12 MiB, plus MiB rounding
    case MemoryFigureSource::kEstimated: return nominal_gb * kGiB / 100;
  }
  return 0;
}

int64_t FigureBytes(const JsonValue& figure, int64_t nominal_gb, const std::string& name) {
  const auto number = [&](const char* key) -> const JsonValue::Number* {
    const JsonValue* v = figure.Find(key);
    return v != nullptr && v->IsNumber() ? &v->AsNumber() : nullptr;
  };
  if (const auto* bytes = number("bytes"); bytes != nullptr && bytes->integer) return *bytes->integer;
  if (const auto* mib = number("mib"); mib != nullptr && mib->integer) return FromMib(*mib->integer);
  if (const auto* gib = number("gib")) return FromGib(gib->value);
  if (const JsonValue* rule = figure.Find("rule"); rule != nullptr && rule->IsString()) {
    if (rule->AsString() == "nvidia") return EstimateNvidia(nominal_gb);
    if (rule->AsString() == "amd") return EstimateAmd(nominal_gb);
  }
  throw std::logic_error("gpu_catalog.json: entry " + name + " has no usable figure");
}

MemoryFigureSource ParseFigureSource(const std::string& text, const std::string& name) {
  for (auto s : {MemoryFigureSource::kMeasured, MemoryFigureSource::kReportedMib,
                 MemoryFigureSource::kReportedGib, MemoryFigureSource::kEstimated}) {
    if (MemoryFigureSourceName(s) == text) return s;
  }
  throw std::logic_error("gpu_catalog.json: entry " + name + " has figure source '" + text + "'");
}

const std::string& StringField(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || !v->IsString()) {
    throw std::logic_error(std::string("gpu_catalog.json: an entry lacks the string '") + key + "'");
  }
  return v->AsString();
}

int64_t IntField(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || !v->IsNumber() || !v->AsNumber().integer) {
    throw std::logic_error(std::string("gpu_catalog.json: an entry lacks the integer '") + key + "'");
  }
  return *v->AsNumber().integer;
}

const JsonArray& ArrayField(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || !v->IsArray()) {
    throw std::logic_error(std::string("gpu_catalog.json: '") + key + "' must be a list");
  }
  return v->AsArray();
}

/*! The parsed catalog file. A malformed file is a build defect (tests/cpp/plan/test_gpu_catalog
 *  reads every entry), reported as std::logic_error rather than blamed on the caller's input. */
const JsonValue& CatalogDocument() {
  static const JsonValue kDocument = ParseJson(kGpuCatalogJson, "gpu_catalog.json");
  return kDocument;
}

std::vector<GpuInfo> BuildCatalog() {
  std::vector<GpuInfo> c;
  for (const JsonValue& e : ArrayField(CatalogDocument(), "gpus")) {
    GpuInfo g;
    g.name = StringField(e, "name");
    g.device_name = StringField(e, "device_name");
    const std::string& vendor = StringField(e, "vendor");
    if (vendor != "nvidia" && vendor != "amd") {
      throw std::logic_error("gpu_catalog.json: entry " + g.name + " has vendor '" + vendor + "'");
    }
    g.vendor = vendor == "amd" ? GpuVendor::kAmd : GpuVendor::kNvidia;
    g.memory_type = StringField(e, "memory_type");
    g.nominal_memory_gb = IntField(e, "nominal_gb");
    const JsonValue* figure_ptr = e.Find("figure");
    if (figure_ptr == nullptr || !figure_ptr->IsObject()) {
      throw std::logic_error("gpu_catalog.json: entry " + g.name + " has no 'figure' object");
    }
    const JsonValue& figure = *figure_ptr;
    g.figure_source = ParseFigureSource(StringField(figure, "source"), g.name);
    g.total_memory_bytes = FigureBytes(figure, g.nominal_memory_gb, g.name);
    g.figure_uncertainty_bytes = Uncertainty(g.figure_source, g.nominal_memory_gb);
    g.source_note = StringField(e, "note");
    g.sm_count = IntField(e, "sm_count");
    g.sm_source = StringField(e, "sm_source");
    if (g.sm_count <= 0) throw std::logic_error("gpu_catalog.json: entry " + g.name + " has sm_count <= 0");
    // bfloat16 needs compute capability 8.0 on NVIDIA (vLLM's CudaPlatform supported_dtypes);
    // every AMD entry here is MI200 or later, which has it.
    if (const JsonValue* cc = e.Find("compute_capability"); cc != nullptr && cc->IsString()) {
      g.compute_capability = cc->AsString();
      g.supports_bfloat16 = std::stod(g.compute_capability) >= 8.0;
    } else if (g.vendor == GpuVendor::kNvidia) {
      throw std::logic_error("gpu_catalog.json: NVIDIA entry " + g.name + " has no compute_capability");
    }
    for (const JsonValue& alias : ArrayField(e, "aliases")) {
      if (!alias.IsString()) throw std::logic_error("gpu_catalog.json: " + g.name + " has a non-string alias");
      g.aliases.push_back(alias.AsString());
    }
    c.push_back(std::move(g));
  }
  return c;
}

// Bare names that several entries share (gpu_catalog.json "ambiguous_names"): an error listing
// the variants beats a silent guess that is 40 GB off.
struct Ambiguity {
  std::string normalized;
  std::vector<std::string> candidates;
};
const std::vector<Ambiguity>& Ambiguous() {
  static const std::vector<Ambiguity> kAmbiguous = [] {
    std::vector<Ambiguity> out;
    const JsonValue* table = CatalogDocument().Find("ambiguous_names");
    if (table == nullptr || !table->IsObject()) {
      throw std::logic_error("gpu_catalog.json: 'ambiguous_names' must be an object");
    }
    for (const auto& [normalized, names] : table->AsObject()) {
      Ambiguity a{normalized, {}};
      if (!names.IsArray()) throw std::logic_error("gpu_catalog.json: ambiguous_names." + normalized + " must be a list");
      for (const JsonValue& n : names.AsArray()) a.candidates.push_back(n.IsString() ? n.AsString() : "?");
      out.push_back(std::move(a));
    }
    return out;
  }();
  return kAmbiguous;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const std::vector<GpuInfo>& GpuCatalog() {
  static const std::vector<GpuInfo> kCatalog = BuildCatalog();
  return kCatalog;
}

std::string NormalizeGpuName(std::string_view name) {
  // Brand words carry no identity: "NVIDIA GeForce RTX 4090" is the "RTX 4090". Removed as the
  // text is copied (a word completed at the end of the copy is dropped, so removals that join
  // into a new word drop it too), in one pass: erasing each occurrence in place was quadratic,
  // seconds for a 64 KiB name of repeated "amd" (fuzz_gpu_name).
  static constexpr std::string_view kBrandWords[] = {"nvidia", "amd", "tesla", "geforce", "instinct", "radeon",
                                                     "quadro"};
  std::string lower;
  lower.reserve(name.size());
  for (char ch : name) {
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    for (std::string_view word : kBrandWords) {
      if (lower.size() >= word.size() && lower.compare(lower.size() - word.size(), word.size(), word) == 0) {
        lower.resize(lower.size() - word.size());
        break;
      }
    }
  }
  std::string out;
  for (char ch : lower) {
    if (std::isalnum(static_cast<unsigned char>(ch))) out.push_back(ch);
  }
  return out;
}

namespace {

/*! Every spelling of each catalog entry (name, device name, aliases), normalised once: lookups
 *  compared against freshly normalised spellings each call, ~150 of them per lookup. */
const std::vector<std::vector<std::string>>& NormalizedSpellings() {
  static const std::vector<std::vector<std::string>> kSpellings = [] {
    std::vector<std::vector<std::string>> out;
    for (const auto& gpu : GpuCatalog()) {
      std::vector<std::string> spellings = {NormalizeGpuName(gpu.name), NormalizeGpuName(gpu.device_name)};
      for (const auto& alias : gpu.aliases) spellings.push_back(NormalizeGpuName(alias));
      out.push_back(std::move(spellings));
    }
    return out;
  }();
  return kSpellings;
}

}  // namespace

std::vector<std::string> CloseGpuMatches(std::string_view name, size_t limit) {
  // The edit distance is quadratic in the length; a name this long is farther than the
  // threshold (a third of its length) from every catalog spelling (< 40 characters), so the
  // answer is exactly "none" without computing it.
  if (static_cast<int64_t>(name.size()) > kMaxGpuNameChars) return {};
  const std::string query = NormalizeGpuName(name);
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, catalog index)
  const auto& catalog = GpuCatalog();
  const auto& normalized = NormalizedSpellings();
  const size_t threshold = std::max<size_t>(2, query.size() / 3);
  for (size_t i = 0; i < catalog.size(); ++i) {
    size_t best = SIZE_MAX;
    for (const std::string& norm : normalized[i]) {
      // A shared prefix of 3+ characters ("h100", "mi30") makes a candidate worth naming.
      const bool prefix = query.size() >= 3 && (norm.rfind(query, 0) == 0 || query.rfind(norm, 0) == 0);
      // The distance is at least the difference in length: above the threshold, the spelling
      // cannot be named, so its quadratic distance is not computed (same answer, and a long
      // name no longer costs ~150 full distance tables per lookup).
      const size_t gap = query.size() > norm.size() ? query.size() - norm.size() : norm.size() - query.size();
      if (!prefix && gap > threshold) continue;
      size_t d = EditDistance(query, norm);
      if (prefix) d = std::min<size_t>(d, 1);
      best = std::min(best, d);
    }
    if (best <= threshold) scored.emplace_back(best, i);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, i] : scored) {
    if (out.size() >= limit) break;
    out.push_back(catalog[i].name);
  }
  return out;
}

const GpuInfo& LookupGpu(std::string_view name) {
  if (static_cast<int64_t>(name.size()) > kMaxGpuNameChars) {
    throw InvalidArgument("gpu", "unknown GPU " + EchoValue(name) + ": names are at most " +
                                     std::to_string(kMaxGpuNameChars) + " characters (vllm-mem gpus lists the catalog)");
  }
  // A plan looks its GPU up more than once, and callers loop over one GPU: the last name found
  // is remembered per thread (the catalog is immutable), sparing the normalization's string work.
  thread_local std::string last_found_name;
  thread_local const GpuInfo* last_found = nullptr;
  if (last_found != nullptr && name == last_found_name) return *last_found;
  const std::string query = NormalizeGpuName(name);
  const auto& catalog = GpuCatalog();
  if (!query.empty()) {
    const auto& normalized = NormalizedSpellings();
    for (size_t i = 0; i < catalog.size(); ++i) {
      for (const std::string& spelling : normalized[i]) {
        if (spelling == query) {
          last_found_name.assign(name);
          last_found = &catalog[i];
          return catalog[i];
        }
      }
    }
    for (const auto& amb : Ambiguous()) {
      if (query == amb.normalized) {
        std::string list;
        for (const auto& c : amb.candidates) list += (list.empty() ? "" : ", ") + c;
        throw InvalidArgument("gpu", EchoValue(name) + " is ambiguous; name the variant: " + list);
      }
    }
  }
  std::vector<std::string> close = CloseGpuMatches(name);
  std::string msg = "unknown GPU " + EchoValue(name);
  if (!close.empty()) {
    msg += "; close matches: ";
    for (size_t i = 0; i < close.size(); ++i) msg += (i ? ", " : "") + close[i];
  }
  msg += "; pass total_memory_bytes for a GPU not in the catalog (vllm-mem gpus lists it)";
  throw InvalidArgument("gpu", msg);
}

const GpuInfo* FindCatalogGpu(std::string_view name) {
  if (name.empty()) return nullptr;
  try {
    return &LookupGpu(name);
  } catch (const InvalidArgument&) {
    return nullptr;  // not a catalog GPU: its facts are unknown
  }
}

std::string MemoryFigureSourceName(MemoryFigureSource source) {
  switch (source) {
    case MemoryFigureSource::kMeasured: return "measured";
    case MemoryFigureSource::kReportedMib: return "reported_mib";
    case MemoryFigureSource::kReportedGib: return "reported_gib";
    case MemoryFigureSource::kEstimated: return "estimated";
  }
  return "estimated";
}

std::string GpuVendorName(GpuVendor vendor) { return vendor == GpuVendor::kAmd ? "amd" : "nvidia"; }

}  // namespace vllm_mem
