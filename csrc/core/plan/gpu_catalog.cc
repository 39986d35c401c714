/*!
 * \file core/plan/gpu_catalog.cc
 * \brief The GPU catalog's figures and the tolerant name lookup.
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
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

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

GpuInfo Entry(std::string name, std::string device_name, GpuVendor vendor, std::string memory_type,
              int64_t nominal_gb, int64_t total_bytes, MemoryFigureSource source, std::string note,
              std::vector<std::string> aliases) {
  GpuInfo g;
  g.name = std::move(name);
  g.device_name = std::move(device_name);
  g.vendor = vendor;
  g.memory_type = std::move(memory_type);
  g.nominal_memory_gb = nominal_gb;
  g.total_memory_bytes = total_bytes;
  g.figure_source = source;
  g.figure_uncertainty_bytes = Uncertainty(source, nominal_gb);
  g.source_note = std::move(note);
  g.aliases = std::move(aliases);
  return g;
}

std::vector<GpuInfo> BuildCatalog() {
  using S = MemoryFigureSource;
  const auto kNv = GpuVendor::kNvidia;
  const auto kAmd = GpuVendor::kAmd;
  const std::string kTorchProps = "torch.cuda.get_device_properties: total_memory=";
  const std::string kOom = "PyTorch OOM message: total capacity of ";
  const std::string kRuleNv = "estimated: nominal GiB * 0.99 (NVIDIA rule, docs/planner.md)";
  const std::string kRuleAmd = "estimated: nominal GiB - 0.02 (AMD rule, docs/planner.md)";
  std::vector<GpuInfo> c;
  // ---- NVIDIA data centre ------------------------------------------------------------------
  c.push_back(Entry("H100-80GB", "NVIDIA H100 80GB HBM3", kNv, "HBM3", 80, 85029158912, S::kMeasured,
                    "vLLM v0.19 start-up logs (tests/data): 79.19 GiB; the SXM5 board",
                    {"H100", "H100-SXM", "H100-SXM5", "H100-SXM-80GB", "H100-SXM5-80GB",
                     "H100-80GB-HBM3", "H100 80GB HBM3"}));
  c.push_back(Entry("H100-PCIe-80GB", "NVIDIA H100 PCIe", kNv, "HBM2e", 80, FromMib(81008), S::kReportedMib,
                    kTorchProps + "81008MB", {"H100-PCIe", "H100-80GB-PCIe", "H100 PCIe 80GB"}));
  c.push_back(Entry("H100-NVL-94GB", "NVIDIA H100 NVL", kNv, "HBM3", 94, EstimateNvidia(94), S::kEstimated,
                    kRuleNv, {"H100-NVL", "H100NVL", "H100-94GB"}));
  c.push_back(Entry("H200-141GB", "NVIDIA H200", kNv, "HBM3e", 141, FromMib(143156), S::kReportedMib,
                    kTorchProps + "143156MB (OOM messages agree: 139.80 GiB)",
                    {"H200", "H200-SXM", "H200-SXM-141GB", "H200-141GB-HBM3e"}));
  c.push_back(Entry("H200-NVL-141GB", "NVIDIA H200 NVL", kNv, "HBM3e", 141, FromMib(143156), S::kEstimated,
                    "estimated: same memory as the H200 SXM (143156 MiB)", {"H200-NVL", "H200NVL"}));
  c.push_back(Entry("H20-96GB", "NVIDIA H20", kNv, "HBM3", 96, FromMib(97285), S::kReportedMib,
                    kTorchProps + "97285MB", {"H20"}));
  c.push_back(Entry("GH200-96GB", "NVIDIA GH200 480GB", kNv, "HBM3", 96, EstimateNvidia(96), S::kEstimated,
                    kRuleNv + "; the GPU's own HBM only, not the Grace LPDDR",
                    {"GH200", "GH200-480GB", "GH200 Grace Hopper"}));
  c.push_back(Entry("B200-180GB", "NVIDIA B200", kNv, "HBM3e", 180, FromMib(182642), S::kReportedMib,
                    kTorchProps + "182642MB (vLLM log: 178.36 GiB)", {"B200", "B200-192GB", "HGX-B200"}));
  c.push_back(Entry("GB200-186GB", "NVIDIA GB200", kNv, "HBM3e", 186, EstimateNvidia(186), S::kEstimated,
                    kRuleNv, {"GB200", "GB200-NVL72"}));
  c.push_back(Entry("B300-288GB", "NVIDIA B300", kNv, "HBM3e", 288, EstimateNvidia(288), S::kEstimated,
                    kRuleNv, {"B300", "GB300", "B300-SXM"}));
  c.push_back(Entry("A100-80GB", "NVIDIA A100-SXM4-80GB", kNv, "HBM2e", 80, FromGib(79.25), S::kReportedGib,
                    kOom + "79.25 GiB (older drivers print 79.35)",
                    {"A100-SXM4-80GB", "A100-SXM-80GB", "A100-80G", "A100 80GB SXM"}));
  c.push_back(Entry("A100-PCIe-80GB", "NVIDIA A100 80GB PCIe", kNv, "HBM2e", 80, FromGib(79.25), S::kEstimated,
                    "estimated: same HBM2e as the A100-SXM4-80GB (79.25 GiB)",
                    {"A100-80GB-PCIe", "A100-PCIe", "A100 80GB PCIe"}));
  c.push_back(Entry("A100-40GB", "NVIDIA A100-SXM4-40GB", kNv, "HBM2", 40, FromGib(39.50), S::kReportedGib,
                    kOom + "39.50 GiB (older drivers: 40536MB)",
                    {"A100-SXM4-40GB", "A100-40G", "A100-PCIe-40GB", "A100 40GB PCIe"}));
  c.push_back(Entry("A10", "NVIDIA A10", kNv, "GDDR6", 24, FromGib(21.99), S::kReportedGib,
                    kOom + "21.99 GiB (ECC on)", {"A10-24GB"}));
  c.push_back(Entry("A10G", "NVIDIA A10G", kNv, "GDDR6", 24, FromMib(22587), S::kReportedMib,
                    kTorchProps + "22587MB (AWS g5)", {"A10G-24GB"}));
  c.push_back(Entry("L4", "NVIDIA L4", kNv, "GDDR6", 24, FromGib(22.03), S::kReportedGib,
                    kOom + "22.03 GiB (ECC on)", {"L4-24GB"}));
  c.push_back(Entry("L40S", "NVIDIA L40S", kNv, "GDDR6", 48, FromMib(45589), S::kReportedMib,
                    kTorchProps + "45589MB (ECC on)", {"L40S-48GB"}));
  c.push_back(Entry("L40", "NVIDIA L40", kNv, "GDDR6", 48, FromMib(45589), S::kEstimated,
                    "estimated: same 48 GB GDDR6 with ECC as the L40S (45589 MiB)", {"L40-48GB"}));
  c.push_back(Entry("V100-16GB", "Tesla V100-SXM2-16GB", kNv, "HBM2", 16, FromMib(16160), S::kReportedMib,
                    kTorchProps + "16160MB", {"V100-SXM2-16GB", "V100-PCIe-16GB", "V100-16G"}));
  c.push_back(Entry("V100-32GB", "Tesla V100-SXM2-32GB", kNv, "HBM2", 32, FromGib(31.75), S::kReportedGib,
                    kOom + "31.75 GiB", {"V100-SXM2-32GB", "V100-PCIe-32GB", "V100S", "V100-32G"}));
  c.push_back(Entry("T4", "Tesla T4", kNv, "GDDR6", 16, FromMib(15095), S::kReportedMib,
                    kTorchProps + "15095MB (older drivers: 14930-15109MB)", {"T4-16GB"}));
  // ---- NVIDIA workstation and consumer -------------------------------------------------------
  c.push_back(Entry("RTX-A6000", "NVIDIA RTX A6000", kNv, "GDDR6", 48, FromMib(48676), S::kReportedMib,
                    kTorchProps + "48676MB", {"A6000", "RTX A6000"}));
  c.push_back(Entry("RTX-6000-Ada", "NVIDIA RTX 6000 Ada Generation", kNv, "GDDR6", 48, FromMib(48622),
                    S::kReportedMib, kTorchProps + "48622MB",
                    {"RTX6000Ada", "RTX 6000 Ada", "6000 Ada", "RTX-6000-Ada-Generation"}));
  c.push_back(Entry("RTX-PRO-6000", "NVIDIA RTX PRO 6000 Blackwell", kNv, "GDDR7", 96, EstimateNvidia(96),
                    S::kEstimated, kRuleNv,
                    {"RTX PRO 6000 Blackwell", "RTX-PRO-6000-Blackwell", "PRO-6000"}));
  c.push_back(Entry("RTX-3090", "NVIDIA GeForce RTX 3090", kNv, "GDDR6X", 24, FromMib(24259), S::kReportedMib,
                    kTorchProps + "24259MB", {"3090", "RTX3090"}));
  c.push_back(Entry("RTX-4090", "NVIDIA GeForce RTX 4090", kNv, "GDDR6X", 24, FromMib(24563), S::kReportedMib,
                    kTorchProps + "24563MB", {"4090", "RTX4090"}));
  c.push_back(Entry("RTX-5090", "NVIDIA GeForce RTX 5090", kNv, "GDDR7", 32, FromGib(31.37), S::kReportedGib,
                    kOom + "31.37 GiB", {"5090", "RTX5090"}));
  // ---- AMD Instinct (ROCm reports through hipMemGetInfo; torch.cuda on ROCm) ------------------
  c.push_back(Entry("MI210", "AMD Instinct MI210", kAmd, "HBM2e", 64, FromGib(63.98), S::kReportedGib,
                    kOom + "63.98 GiB (HIP, 64 GB devices)", {"MI210-64GB"}));
  c.push_back(Entry("MI250X", "AMD Instinct MI250X", kAmd, "HBM2e", 64, FromGib(63.98), S::kReportedGib,
                    kOom + "63.98 GiB; ROCm exposes each of the two GCDs as one 64 GB device",
                    {"MI250X-GCD", "MI250X-64GB"}));
  c.push_back(Entry("MI250", "AMD Instinct MI250", kAmd, "HBM2e", 64, EstimateAmd(64), S::kEstimated,
                    kRuleAmd + "; per GCD, as the MI250X", {"MI250-GCD"}));
  c.push_back(Entry("MI300X", "AMD Instinct MI300X", kAmd, "HBM3", 192, FromGib(191.98), S::kReportedGib,
                    kOom + "191.98 GiB", {"MI300X-192GB", "MI300"}));
  c.push_back(Entry("MI325X", "AMD Instinct MI325X", kAmd, "HBM3e", 256, FromGib(255.98), S::kReportedGib,
                    kOom + "255.98 GiB", {"MI325X-256GB", "MI325"}));
  c.push_back(Entry("MI350X", "AMD Instinct MI350X", kAmd, "HBM3e", 288, EstimateAmd(288), S::kEstimated,
                    kRuleAmd + "; same memory as the MI355X", {"MI350X-288GB", "MI350"}));
  c.push_back(Entry("MI355X", "AMD Instinct MI355X", kAmd, "HBM3e", 288, FromGib(287.98), S::kReportedGib,
                    kOom + "287.98 GiB", {"MI355X-288GB", "MI355"}));
  return c;
}

// Bare names that several entries share: an error listing the variants beats a silent guess
// that is 40 GB off.
struct Ambiguity {
  const char* normalized;
  std::vector<std::string> candidates;
};
const std::vector<Ambiguity>& Ambiguous() {
  static const std::vector<Ambiguity> kAmbiguous = {
      {"a100", {"A100-40GB", "A100-80GB", "A100-PCIe-80GB"}},
      {"v100", {"V100-16GB", "V100-32GB"}},
      {"rtx6000", {"RTX-6000-Ada", "RTX-PRO-6000"}},
      {"6000", {"RTX-6000-Ada", "RTX-PRO-6000", "RTX-A6000"}},
  };
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
  std::string lower;
  lower.reserve(name.size());
  for (char ch : name) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  // Brand words carry no identity: "NVIDIA GeForce RTX 4090" is the "RTX 4090".
  for (const char* word : {"nvidia", "amd", "tesla", "geforce", "instinct", "radeon", "quadro"}) {
    for (size_t pos = lower.find(word); pos != std::string::npos; pos = lower.find(word)) {
      lower.erase(pos, std::string(word).size());
    }
  }
  std::string out;
  for (char ch : lower) {
    if (std::isalnum(static_cast<unsigned char>(ch))) out.push_back(ch);
  }
  return out;
}

std::vector<std::string> CloseGpuMatches(std::string_view name, size_t limit) {
  // The edit distance is quadratic in the length; a name this long is farther than the
  // threshold (a third of its length) from every catalog spelling (< 40 characters), so the
  // answer is exactly "none" without computing it.
  if (static_cast<int64_t>(name.size()) > kMaxGpuNameChars) return {};
  const std::string query = NormalizeGpuName(name);
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, catalog index)
  const auto& catalog = GpuCatalog();
  for (size_t i = 0; i < catalog.size(); ++i) {
    size_t best = SIZE_MAX;
    std::vector<std::string> spellings = catalog[i].aliases;
    spellings.push_back(catalog[i].name);
    spellings.push_back(catalog[i].device_name);
    for (const auto& spelling : spellings) {
      std::string norm = NormalizeGpuName(spelling);
      size_t d = EditDistance(query, norm);
      // A shared prefix of 3+ characters ("h100", "mi30") makes a candidate worth naming.
      if (query.size() >= 3 && (norm.rfind(query, 0) == 0 || query.rfind(norm, 0) == 0)) d = std::min<size_t>(d, 1);
      best = std::min(best, d);
    }
    size_t threshold = std::max<size_t>(2, query.size() / 3);
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
  const std::string query = NormalizeGpuName(name);
  const auto& catalog = GpuCatalog();
  if (!query.empty()) {
    for (const auto& gpu : catalog) {
      if (NormalizeGpuName(gpu.name) == query || NormalizeGpuName(gpu.device_name) == query) return gpu;
      for (const auto& alias : gpu.aliases) {
        if (NormalizeGpuName(alias) == query) return gpu;
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
