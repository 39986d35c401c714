/*!
 * \file vllm_mem/kv_cache/kv_cache_dtype.h
 * \brief vLLM's --kv-cache-dtype: the storage element size of the KV cache and how its
 *        quantization scales are stored (vllm/utils/torch_utils.py kv_cache_dtype_str_to_dtype,
 *        vllm/v1/kv_cache_interface.py get_kv_quant_mode).
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_DTYPE_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_DTYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "vllm_mem/model/dtype.h"

namespace vllm_mem {

/*! \brief How a KV-cache dtype changes the page layout beyond the element size. */
enum class KvQuantMode {
  kNone,              //!< plain float16 / bfloat16 / float32 storage
  kFp8PerTensor,      //!< fp8 with one scale per tensor: no bytes in the page
  kPerTokenHead,      //!< fp8 / int8 per-token-head: + 2*B*H*4 bytes of fp32 scales per page
  kInt4PerTokenHead,  //!< head dim packed two per byte (D//2) + per-token-head scales
  kNvfp4,             //!< head dim stored as D//2 + D//16 bytes (4-bit values + block scales)
  kTurboQuant,        //!< packed TurboQuant slots (page = B*H*tq_slot_size; not modelled)
};

/*! \brief A resolved --kv-cache-dtype. */
struct KvCacheDType {
  std::string name;              //!< the value as given ("auto" resolved to the model dtype name)
  int64_t element_size_bytes = 2;  //!< bytes of one stored element (vLLM's get_dtype_size)
  KvQuantMode quant_mode = KvQuantMode::kNone;
  bool operator==(const KvCacheDType&) const = default;
};

/*! \brief Every value vLLM's --kv-cache-dtype accepts here, comma separated, for messages. */
std::string AllowedKvCacheDTypes();

/*! \brief Resolves \p kv_cache_dtype against the served model dtype: "auto" follows
 *  \p model_dtype (already resolved with ResolveModelDType, so an fp32 checkpoint served as
 *  bf16 stores bf16 KV unless --dtype float32 was asked). InvalidArgument naming \p field and
 *  listing the allowed values for anything else. */
KvCacheDType ResolveKvCacheDType(std::string_view kv_cache_dtype, DType model_dtype,
                                 const char* field = "kv_cache_dtype");

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_DTYPE_H_
