/*!
 * \file vllm_mem/model/dtype.h
 * \brief Model (weight / activation) data types and their sizes, with the spellings that
 *        Hugging Face configs and vLLM's --dtype accept.
 */
#ifndef VLLM_MEM_MODEL_DTYPE_H_
#define VLLM_MEM_MODEL_DTYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace vllm_mem {

enum class DType { kFloat32, kFloat16, kBFloat16, kFloat8E4M3, kFloat8E5M2, kInt8, kUInt8 };

/*! \brief Bytes per element. */
int64_t DTypeSizeBytes(DType dtype);

/*! \brief Canonical name ("float32", "float16", "bfloat16", ...). */
std::string DTypeName(DType dtype);

/*! \brief Parses a dtype spelling ("float16", "half", "fp16", "torch.bfloat16", "bf16",
 *  "float32", "float", "fp32", ...). InvalidArgument naming \p field and listing the allowed
 *  values otherwise. */
DType ParseDType(std::string_view name, const char* field);

/*! \brief vLLM's --dtype resolution: "auto" keeps the checkpoint dtype, except that a float32
 *  checkpoint is served in bfloat16 (vLLM downcasts fp32 to bf16 by default). Any other value
 *  is parsed with ParseDType. */
DType ResolveModelDType(std::string_view requested, DType checkpoint_dtype, const char* field);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_DTYPE_H_
