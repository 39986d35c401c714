/*!
 * \file vllm_mem/plan/gpu_catalog.h
 * \brief Total device memory of common NVIDIA and AMD GPUs as CUDA / ROCm report it
 *        (cudaMemGetInfo total, torch.cuda.get_device_properties().total_memory), with
 *        tolerant, case-insensitive name lookup.
 *
 * vLLM's budget is ceil(total * gpu_memory_utilization) of *this* figure, not the marketing
 * capacity: an "80GB" H100 reports 85029158912 bytes (79.19 GiB). Every entry says where its
 * figure comes from and how exact it is; docs/planner.md explains the estimation rule.
 */
#ifndef VLLM_MEM_PLAN_GPU_CATALOG_H_
#define VLLM_MEM_PLAN_GPU_CATALOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vllm_mem {

enum class GpuVendor { kNvidia, kAmd };

/*! \brief How an entry's total_memory_bytes was obtained, most exact first. */
enum class MemoryFigureSource {
  kMeasured,     //!< byte-exact, from a real start-up log (cudaMemGetInfo total)
  kReportedMib,  //!< torch's "_CudaDeviceProperties(... total_memory=N MB)": +-1 MiB
  kReportedGib,  //!< PyTorch's OOM text "total capacity of X GiB": +-5 MiB
  kEstimated,    //!< no public figure found: derived by the documented rule (see note)
};

/*! \brief One GPU model. */
struct GpuInfo {
  std::string name;                //!< canonical catalog key, e.g. "H100-80GB"
  std::string device_name;         //!< what torch.cuda.get_device_name() prints
  GpuVendor vendor = GpuVendor::kNvidia;
  std::string memory_type;         //!< "HBM3", "GDDR6", ...
  int64_t nominal_memory_gb = 0;   //!< the marketing capacity ("80" for an 80GB card)
  int64_t total_memory_bytes = 0;  //!< total memory as the runtime reports it
  MemoryFigureSource figure_source = MemoryFigureSource::kEstimated;
  int64_t figure_uncertainty_bytes = 0;  //!< +- bound implied by figure_source
  std::string source_note;         //!< where the figure comes from, or the estimation rule
  std::vector<std::string> aliases;  //!< other spellings (matched after normalisation)
  std::string compute_capability;  //!< NVIDIA "8.0", "9.0"; "" for AMD
  bool supports_bfloat16 = true;   //!< false below compute capability 8.0 (V100, T4)
  /*! Streaming multiprocessors (AMD: compute units), torch's multi_processor_count: the
   *  programs of the Triton top-k/top-p sampler (rule sampler_kernel_programs). */
  int64_t sm_count = 0;
  std::string sm_source;  //!< the published spec (or measured property) it is taken from
};

/*! \brief The H100 SXM's SM count: the sampler's programs where the GPU is not in the catalog
 *  (a total memory given without a catalog name). */
inline constexpr int64_t kUnknownGpuSmCount = 132;

/*! \brief The catalog entry of \p name, or nullptr when \p name is empty or not a catalog GPU
 *  (an unknown or ambiguous name: a runtime's device name the catalog does not list). */
const GpuInfo* FindCatalogGpu(std::string_view name);

/*! \brief All catalog entries, NVIDIA first, in a stable order. */
const std::vector<GpuInfo>& GpuCatalog();

/*! \brief Lower-cases \p name, drops vendor / brand words (nvidia, amd, tesla, geforce,
 *  instinct, radeon, quadro) and every non-alphanumeric character: "NVIDIA H100 80GB HBM3",
 *  "h100_80gb" and "H100-80GB" become "h10080gbhbm3", "h10080gb", "h10080gb". */
std::string NormalizeGpuName(std::string_view name);

/*! \brief The entry for \p name (any spelling of a name or alias). InvalidArgument (field
 *  "gpu") for an unknown or ambiguous name, listing the close matches. */
const GpuInfo& LookupGpu(std::string_view name);

/*! \brief Up to \p limit canonical names closest to \p name (for error messages). */
std::vector<std::string> CloseGpuMatches(std::string_view name, size_t limit = 5);

/*! \brief "measured", "reported_mib", "reported_gib" or "estimated". */
std::string MemoryFigureSourceName(MemoryFigureSource source);

/*! \brief "nvidia" or "amd". */
std::string GpuVendorName(GpuVendor vendor);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_GPU_CATALOG_H_
