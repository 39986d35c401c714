#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/plan/startup_budget.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

std::vector<JsonValue> CalibrationRows() {
  std::ifstream in(std::string(VLLM_MEM_SOURCE_DIR) + "/tests/data/vllm_startup_logs.calibration.jsonl");
  std::vector<JsonValue> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(ParseJson(line, "calibration"));
  }
  return rows;
}

const std::string& Str(const JsonValue& v, const char* a, const char* b) { return v.Find(a)->Find(b)->AsString(); }
double Num(const JsonValue& v, const char* a, const char* b) { return v.Find(a)->Find(b)->AsNumber().value; }
int64_t GibBytes(double gib) { return std::llround(gib * static_cast<double>(kGiB)); }

const int64_t kH100 = 85029158912;

}  // namespace

TEST(PythonFloatRepr, MatchesPython) {
  EXPECT_EQ(PythonFloatRepr(0.95), "0.95");
  EXPECT_EQ(PythonFloatRepr(0.9), "0.9");
  EXPECT_EQ(PythonFloatRepr(1.0), "1.0");
  EXPECT_EQ(PythonFloatRepr(0.5), "0.5");
  EXPECT_EQ(PythonFloatRepr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PythonFloatRepr(1e-05), "1e-05");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(123.0), "123.0");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(-2.5), "-2.5");
}

TEST(RequestMemory, CeilOfTotalTimesUtilization) {
  // 0.95 * 85029158912 = 80777700966.4 -> 80777700967, printed as 75.23 GiB.
  EXPECT_EQ(RequestMemory(kH100, kH100, 0.95), 80777700967);
  EXPECT_EQ(FormatGib(RequestMemory(kH100, kH100, 0.95)), "75.23");
  EXPECT_EQ(RequestMemory(kH100, kH100, 1.0), kH100);
}

TEST(RequestMemory, FreeMemoryMessageIsVerbatim) {
  // Reconstructed from vLLM issue #48140: 55.87 free of 119.56 GiB at utilization 0.5.
  const int64_t total = GibBytes(119.56);
  const int64_t free = GibBytes(55.87);
  RequestedMemory r = CheckRequestMemory(total, free, 0.5, "cuda:0");
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.error_message,
            "Free memory on device cuda:0 (55.87/119.56 GiB) on startup is less than desired GPU memory "
            "utilization (0.5, 59.78 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.");
  try {
    RequestMemory(total, free, 0.5);
    FAIL() << "expected InsufficientMemory";
  } catch (const InsufficientMemory& e) {
    EXPECT_EQ(std::string(e.what()), r.error_message);
  }
  // Exactly enough free memory passes: the check is free >= requested.
  EXPECT_TRUE(CheckRequestMemory(total, r.requested_bytes, 0.5).fits);
  EXPECT_FALSE(CheckRequestMemory(total, r.requested_bytes - 1, 0.5).fits);
}

TEST(RequestMemory, BadUtilizationNamesTheField) {
  for (double bad : {0.0, -0.1, 1.01, std::nan("")}) {
    try {
      RequestMemory(kH100, kH100, bad);
      FAIL() << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.field(), "gpu_memory_utilization");
    }
  }
  EXPECT_THROW(CheckRequestMemory(kH100, -1, 0.9), InvalidArgument);
}

// 10 GiB of weights, a 2 GiB peak, 0.25 GiB non-torch and a 0.5 GiB graph estimate.
ProfileMeasurements TenGibProfile() {
  ProfileMeasurements p;
  p.weights_bytes = 10 * kGiB;
  p.torch_peak_increase_bytes = 2 * kGiB;
  p.non_torch_increase_bytes = kGiB / 4;
  p.cudagraph_estimate_bytes = kGiB / 2;
  return p;
}

TEST(AvailableKvCache, ArithmeticAndLines) {
  ProfileMeasurements p = TenGibProfile();
  AvailableKvOptions o;
  o.total_memory_bytes = kH100;
  o.gpu_memory_utilization = 0.95;
  const int64_t requested = RequestMemory(kH100, kH100, 0.95);
  AvailableKvMemory a = DetermineAvailableKvCacheMemory(requested, p, o);
  EXPECT_EQ(a.non_kv_cache_bytes, 12 * kGiB + kGiB / 4);
  EXPECT_EQ(a.cudagraph_applied_bytes, kGiB / 2);
  EXPECT_EQ(a.available_kv_cache_bytes, requested - 12 * kGiB - kGiB / 4 - kGiB / 2);
  EXPECT_EQ(a.available_line, "Available KV cache memory: " + FormatGib(a.available_kv_cache_bytes) + " GiB");
  EXPECT_FALSE(a.from_kv_cache_memory_bytes);

  // VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0: nothing subtracted, WARNING text instead.
  o.estimate_cudagraphs = false;
  AvailableKvMemory b = DetermineAvailableKvCacheMemory(requested, p, o);
  EXPECT_EQ(b.available_kv_cache_bytes, a.available_kv_cache_bytes + kGiB / 2);
  EXPECT_NE(b.cudagraph_line.find("CUDA graph memory profiling is disabled"), std::string::npos);

  // The kv_cache_memory_bytes short-cut ignores the profile.
  o.kv_cache_memory_bytes = 40 * kGiB;
  o.init_free_memory_bytes = GibBytes(78.68);
  AvailableKvMemory c = DetermineAvailableKvCacheMemory(requested, p, o);
  EXPECT_TRUE(c.from_kv_cache_memory_bytes);
  EXPECT_EQ(c.available_kv_cache_bytes, 40 * kGiB);
  EXPECT_EQ(c.kv_cache_memory_bytes_line.rfind("Initial free memory 78.68 GiB, reserved 40.0 GiB memory for KV "
                                               "Cache as specified by kv_cache_memory_bytes config",
                                               0),
            0u);
}

// From vLLM 0.26 memory_profiling's own non_kv_cache_memory (total consumed + transient peak
// headroom) is subtracted as is; the three terms stay the result's parts, not its sum.
TEST(AvailableKvCache, ReleaseNonKvFigureReplacesTheSum) {
  ProfileMeasurements p = TenGibProfile();
  p.non_kv_cache_bytes = 15 * kGiB;  // 2.75 GiB the three terms do not see (torch memory outside them)
  AvailableKvOptions o;
  o.total_memory_bytes = kH100;
  const int64_t requested = RequestMemory(kH100, kH100, 0.9);
  AvailableKvMemory a = DetermineAvailableKvCacheMemory(requested, p, o);
  EXPECT_EQ(a.non_kv_cache_bytes, 15 * kGiB);
  EXPECT_EQ(a.available_kv_cache_bytes, requested - 15 * kGiB - kGiB / 2);
  p.non_kv_cache_bytes.reset();
  EXPECT_EQ(DetermineAvailableKvCacheMemory(requested, p, o).non_kv_cache_bytes, 12 * kGiB + kGiB / 4);
}

TEST(AvailableKvCache, NegativeIsReportedNotClamped) {
  ProfileMeasurements p;
  p.weights_bytes = 80 * kGiB;
  AvailableKvOptions o;
  o.total_memory_bytes = kH100;
  AvailableKvMemory a = DetermineAvailableKvCacheMemory(RequestedMemoryBytes(kH100, 0.5), p, o);
  EXPECT_LT(a.available_kv_cache_bytes, 0);
}

TEST(CudagraphLine, EnabledTextAndClamp) {
  // 0.84 GiB estimate on an H100 at 0.95: delta = 0.010607...
  EXPECT_EQ(CudagraphProfilingLine(GibBytes(0.84), kH100, 0.95),
            "CUDA graph memory profiling is enabled (default since v0.21.0). The current "
            "--gpu-memory-utilization=0.9500 is equivalent to --gpu-memory-utilization=0.9394 without CUDA graph "
            "memory profiling. To maintain the same effective KV cache size as before, increase "
            "--gpu-memory-utilization to 0.9606. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.");
  EXPECT_NE(CudagraphProfilingLine(GibBytes(0.84), kH100, 0.995).find("increase --gpu-memory-utilization to 1.0000."),
            std::string::npos);
  EXPECT_EQ(CudagraphProfilingLine(0, kH100, 0.95), "");
  EXPECT_EQ(EstimatedCudagraphLine(GibBytes(0.84)), "Estimated CUDA graph memory: 0.84 GiB total");
}

// The 25 real start-ups: what the printed numbers pin down exactly, and the rest.
TEST(Calibration, AvailableKvFromPrintedTermsWithinRounding) {
  auto rows = CalibrationRows();
  ASSERT_EQ(rows.size(), 25u);
  for (const auto& row : rows) {
    const double util = Num(row, "observed", "desired_gpu_memory_utilization");
    const int64_t requested = RequestMemory(kH100, kH100, util);
    EXPECT_EQ(FormatGib(requested), FormatRounded(Num(row, "observed", "desired_memory_gib"), 2));
    ProfileMeasurements p;
    // The suggestion line's terms and its "kv cache memory in use" come from one worker; the
    // other lines of a PP log may come from different ranks.
    p.weights_bytes = GibBytes(Num(row, "observed", "free_line_weights_gib"));
    p.torch_peak_increase_bytes = GibBytes(Num(row, "observed", "free_line_peak_activation_gib"));
    p.non_torch_increase_bytes = GibBytes(Num(row, "observed", "free_line_non_torch_gib"));
    p.cudagraph_estimate_bytes = GibBytes(Num(row, "observed", "estimated_cuda_graph_memory_gib"));
    AvailableKvOptions o;
    o.total_memory_bytes = kH100;
    o.gpu_memory_utilization = util;
    // v0.19 logged the graph estimate but did not subtract it (the default flipped in v0.20.0):
    // the printed available memory is requested - non-KV on every row.
    o.estimate_cudagraphs = false;
    AvailableKvMemory a = DetermineAvailableKvCacheMemory(requested, p, o);
    EXPECT_EQ(a.cudagraph_applied_bytes, 0);
    o.estimate_cudagraphs = true;
    EXPECT_EQ(DetermineAvailableKvCacheMemory(requested, p, o).available_kv_cache_bytes,
              a.available_kv_cache_bytes - p.cudagraph_estimate_bytes);
    // Three inputs each rounded to +-0.005 GiB: the result is within 0.02 GiB of the print.
    const double printed = Num(row, "observed", "free_line_kv_cache_in_use_gib");
    EXPECT_NEAR(static_cast<double>(a.available_kv_cache_bytes) / kGiB, printed, 0.0201)
        << Str(row, "raw_lines", "free_mem");
  }
}

TEST(Calibration, SuggestionLineByteForByte) {
  // Exact: requested = ceil(total*util); to_gpu - to_requested = init free - requested, so the
  // init free memory and the non-KV sum follow exactly from the two printed integers. Only
  // approximate: how that sum splits into the four printed terms (each rounded to 0.01 GiB),
  // so the split is chosen inside the printed rounding intervals.
  const std::regex re(
      R"(Free memory on device \(([\d.]+)/([\d.]+) GiB\) on startup\. Desired GPU memory utilization is \(([\d.]+), ([\d.]+) GiB\)\. Actual usage is ([\d.]+) GiB for weight, ([\d.]+) GiB for peak activation, ([\d.]+) GiB for non-torch memory, and ([\d.]+) GiB for CUDAGraph memory\. Replace gpu_memory_utilization config with `--kv-cache-memory=(\d+)` \(([\d.]+) GiB\) to fit into requested memory, or `--kv-cache-memory=(\d+)` \(([\d.]+) GiB\) to fully utilize gpu memory\. Current kv cache memory in use is ([\d.]+) GiB\.)");
  int exact_split = 0;
  auto rows = CalibrationRows();
  for (const auto& row : rows) {
    const std::string& raw = Str(row, "raw_lines", "free_mem");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(raw, m, re)) << raw;
    const double util = std::stod(m[3]);
    const int64_t requested = RequestMemory(kH100, kH100, util);
    const int64_t to_requested = std::stoll(m[9]);
    const int64_t to_gpu = std::stoll(m[11]);
    const int64_t init_free = to_gpu - to_requested + requested;
    EXPECT_EQ(FormatGib(init_free), m[1].str());
    EXPECT_EQ(FormatGib(kH100), m[2].str());
    const int64_t non_kv = requested - kKvSuggestionBufferBytes - to_requested;
    double printed[4] = {std::stod(m[5]), std::stod(m[6]), std::stod(m[7]), std::stod(m[8])};
    int64_t terms[4];
    int64_t sum = 0;
    for (int i = 0; i < 4; ++i) sum += terms[i] = GibBytes(printed[i]);
    if (sum == non_kv || FormatGib(terms[3] + non_kv - sum) == m[8].str()) ++exact_split;
    // Move the residual into the terms, each staying inside its rounding interval.
    int64_t residual = non_kv - sum;
    for (int i = 3; i >= 0 && residual != 0; --i) {
      const int64_t half = kGiB / 200 - 1;
      int64_t step = std::clamp<int64_t>(residual, -half, half);
      terms[i] += step;
      residual -= step;
    }
    ASSERT_EQ(residual, 0) << "the printed terms cannot sum to the non-KV bytes: " << raw;
    const int64_t in_use = GibBytes(std::stod(m[13]));
    KvCacheMemorySuggestion s =
        SuggestKvCacheMemoryBytes(init_free, kH100, util, requested, terms[0], terms[1], terms[2], terms[3], in_use);
    EXPECT_EQ(s.to_requested_limit_bytes, to_requested);
    EXPECT_EQ(s.to_gpu_limit_bytes, to_gpu);
    EXPECT_EQ(s.line, raw);
  }
  // Recorded, not asserted as a constant: how often the printed terms alone already give the
  // exact sum (the rest need the in-interval split above).
  RecordProperty("rows_with_exact_printed_split", exact_split);
}

}  // namespace vllm_mem
