#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

TEST(GpuCatalog, H100MatchesTheCalibrationLogs) {
  const GpuInfo& h100 = LookupGpu("H100-80GB");
  EXPECT_EQ(h100.total_memory_bytes, 85029158912);
  EXPECT_EQ(FormatGib(h100.total_memory_bytes), "79.19");  // "Free memory on device (78.68/79.19 GiB)"
  EXPECT_EQ(h100.figure_source, MemoryFigureSource::kMeasured);
  EXPECT_EQ(h100.figure_uncertainty_bytes, 0);
}

TEST(GpuCatalog, SpellingsPeopleUse) {
  for (const char* spelling : {"H100-80GB", "H100", "NVIDIA H100 80GB HBM3", "h100_80gb", "h100 sxm5"}) {
    EXPECT_EQ(LookupGpu(spelling).name, "H100-80GB") << spelling;
  }
  EXPECT_EQ(LookupGpu("a100-80gb").name, "A100-80GB");
  EXPECT_EQ(LookupGpu("NVIDIA A100-SXM4-40GB").name, "A100-40GB");
  EXPECT_EQ(LookupGpu("RTX-4090").name, "RTX-4090");
  EXPECT_EQ(LookupGpu("NVIDIA GeForce RTX 4090").name, "RTX-4090");
  EXPECT_EQ(LookupGpu("mi300x").name, "MI300X");
  EXPECT_EQ(LookupGpu("AMD Instinct MI300X").name, "MI300X");
  EXPECT_EQ(LookupGpu("l40s").name, "L40S");
  EXPECT_EQ(LookupGpu("H200").name, "H200-141GB");
  EXPECT_EQ(LookupGpu("H100 PCIe").name, "H100-PCIe-80GB");
}

TEST(GpuCatalog, VariantsDiffer) {
  EXPECT_NE(LookupGpu("H100-PCIe").total_memory_bytes, LookupGpu("H100-SXM").total_memory_bytes);
  EXPECT_LT(LookupGpu("A100-40GB").total_memory_bytes, LookupGpu("A100-80GB").total_memory_bytes);
  EXPECT_GT(LookupGpu("H100-NVL").total_memory_bytes, LookupGpu("H100").total_memory_bytes);
}

TEST(GpuCatalog, EverySpellingIsUniqueAndFiguresAreSane) {
  std::map<std::string, std::string> owner;
  for (const GpuInfo& gpu : GpuCatalog()) {
    std::set<std::string> own{NormalizeGpuName(gpu.name), NormalizeGpuName(gpu.device_name)};
    for (const auto& a : gpu.aliases) own.insert(NormalizeGpuName(a));
    for (const auto& s : own) {
      auto [it, inserted] = owner.emplace(s, gpu.name);
      EXPECT_TRUE(inserted) << s << " is claimed by " << it->second << " and " << gpu.name;
    }
    // The runtime never reports more than the nominal capacity read as GiB, nor 10% less.
    EXPECT_LE(gpu.total_memory_bytes, gpu.nominal_memory_gb * kGiB) << gpu.name;
    EXPECT_GE(gpu.total_memory_bytes, gpu.nominal_memory_gb * kGiB * 9 / 10) << gpu.name;
    EXPECT_FALSE(gpu.source_note.empty()) << gpu.name;
    if (gpu.figure_source == MemoryFigureSource::kEstimated) {
      EXPECT_NE(gpu.source_note.find("estimated"), std::string::npos) << gpu.name;
    }
    EXPECT_EQ(&LookupGpu(gpu.name), &gpu);
  }
  EXPECT_GE(GpuCatalog().size(), 30u);
}

TEST(GpuCatalog, UnknownNameListsCloseMatches) {
  try {
    LookupGpu("H100-90GB");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "gpu");
    std::string what = e.what();
    EXPECT_NE(what.find("unknown GPU 'H100-90GB'"), std::string::npos) << what;
    EXPECT_NE(what.find("H100-80GB"), std::string::npos) << what;
  }
  try {
    LookupGpu("MI300");
    SUCCEED();
  } catch (...) {
    FAIL() << "MI300 is an alias of MI300X";
  }
  EXPECT_THROW(LookupGpu(""), InvalidArgument);
  EXPECT_THROW(LookupGpu("not a gpu at all"), InvalidArgument);
}

TEST(GpuCatalog, BareAmbiguousNamesAskForTheVariant) {
  try {
    LookupGpu("A100");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("ambiguous"), std::string::npos);
    EXPECT_NE(what.find("A100-40GB"), std::string::npos);
    EXPECT_NE(what.find("A100-80GB"), std::string::npos);
  }
}

TEST(GpuCatalog, NormalizeDropsBrandAndPunctuation) {
  EXPECT_EQ(NormalizeGpuName("NVIDIA H100 80GB HBM3"), "h10080gbhbm3");
  EXPECT_EQ(NormalizeGpuName("h100_80gb"), "h10080gb");
  EXPECT_EQ(NormalizeGpuName("Tesla T4"), "t4");
}

}  // namespace vllm_mem
