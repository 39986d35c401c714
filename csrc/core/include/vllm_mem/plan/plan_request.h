/*!
 * \file vllm_mem/plan/plan_request.h
 * \brief What a user asks for: the serving settings of a KV-cache question (KvCacheSettings)
 *        and of a start-up plan (PlanRequest), each field spelled once, in one table.
 *
 * Each setting is one row of the X-macros below: its C++ type, name and initial value (the
 * struct member) beside its row (kind, bounds and why, what "unset" means, the vLLM flag it
 * mirrors, its help). From that one place come the structs, ValidateSetting (the only bounds
 * check of a setting, C++ and Python alike), the bound classes' properties (bindings), the
 * CLI's flags and the docs' settings table (python/vllm_mem/_settings.py, docs/settings.md).
 *
 * An unset value (0, "", an empty list, or an empty optional; -1 where unset_int says so) is
 * "resolved by the release" (ResolveForVersion) or by the model: `unset` says how. A new vLLM
 * flag that changes memory is one row here plus its use in the phase that needs it.
 */
#ifndef VLLM_MEM_PLAN_PLAN_REQUEST_H_
#define VLLM_MEM_PLAN_PLAN_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vllm_mem/base/limits.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_dtype.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/mm_settings.h"

namespace vllm_mem {

/*! \brief How a setting is typed (Python, CLI and docs read it). */
/*! kMapping: a JSON object as vLLM's flag takes it (plan/mm_settings.h reads it), given as a dict or its
 *  JSON text; a row whose unset_int is set also takes that int form. */
enum class SettingKind { kInt, kFloat, kBool, kOptionalBool, kText, kEnum, kIntList, kTextList, kMapping };
std::string SettingKindName(SettingKind kind);  //!< "int", "float", "bool", ..., "text list", "mapping"

/*! \brief One row of the settings table. Bounds apply to a set value (not to "unset"). */
struct SettingRow {
  const char* name = "";
  SettingKind kind = SettingKind::kInt;
  double low = 0.0;            //!< smallest value (int, float, list item)
  double high = 0.0;           //!< largest value
  bool low_exclusive = false;  //!< (low, high] instead of [low, high]
  std::string choices = "";    //!< comma-separated allowed values (text, enum, int); "": any
  int64_t max_items = 0;       //!< lists: most items
  int64_t unset_int = 0;       //!< the int that means "unset" (0; -1 for a byte count where 0 is a value)
  int64_t auto_int = 0;        //!< an int outside the bounds that is vLLM's "auto" value (0: none)
  const char* auto_text = "";  //!< the word vLLM reads as auto_int, any case ("auto" for --max-model-len)
  const char* unset = "";      //!< what an unset value resolves to; "": always set (the default is its value)
  const char* why = "";        //!< why the bounds are what they are
  const char* flag = "";       //!< the vLLM flag it mirrors ("" for a planner-only setting)
  const char* help = "";       //!< one line for the CLI and the docs
  bool kv = false;             //!< a KvCacheSettings row (the KV functions take it too)
};

/*! \brief max_model_len -1, vLLM's `--max-model-len auto` (original_max_model_len == -1): start
 *  at the model's derived maximum and, after profiling, keep the longest length whose one request
 *  the KV budget holds (ResolveForVersion, then EvaluatePlan's auto-fit phase). */
inline constexpr int64_t kMaxModelLenAuto = -1;

#define VLLM_MEM_BLOCK_SIZES "1, 8, 16, 32, 64, 128, 256"
#define VLLM_MEM_MAMBA_DTYPES "auto, float32, float16, bfloat16"

// X(type, name, initial value, row fields...): the KV-cache rows. Every KV entry point and the plan take them.
#define VLLM_MEM_KV_CACHE_SETTINGS(X)                                                                                 \
  X(int64_t, max_model_len, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxModelLenTokens,                      \
    .auto_int = kMaxModelLenAuto, .auto_text = "auto",                                                               \
    .unset = "the model's derived maximum (max_position_embeddings, rope scaling included)",                         \
    .why = "limits.h: 2^30 tokens, ~1000x the longest context served", .flag = "--max-model-len",                    \
    .help = "Longest request (prompt + output) in tokens; auto (-1): vLLM's auto-fit (from 0.14)")                  \
  X(int64_t, block_size, 0, .kind = SettingKind::kInt, .low = 1, .high = 256, .choices = VLLM_MEM_BLOCK_SIZES,       \
    .unset = "vLLM's default: 16 (64 for MLA models; hybrids align it to the state)",                               \
    .why = "vLLM's CacheConfig.block_size accepts only these", .flag = "--block-size",                              \
    .help = "Tokens per KV-cache block")                                                                             \
  X(std::string, kv_cache_dtype, "auto", .kind = SettingKind::kText, .choices = AllowedKvCacheDTypes(),              \
    .why = "vLLM's CacheDType", .flag = "--kv-cache-dtype",                                                          \
    .help = "KV storage dtype (auto follows the served model dtype)")                                                \
  X(std::vector<std::string>, kv_cache_dtype_skip_layers, {}, .kind = SettingKind::kTextList,                        \
    .max_items = kMaxNumLayers, .unset = "no layer skipped",                                                         \
    .why = "vLLM's CacheConfig: layer indices or sliding_window; at most one per layer (limits.h)",                  \
    .flag = "--kv-cache-dtype-skip-layers",                                                                          \
    .help = "Layers whose KV cache stays in the model dtype beside a quantized one (indices, sliding_window)")       \
  X(std::string, dtype, "auto", .kind = SettingKind::kText, .why = "a dtype name (the model area checks it)",        \
    .flag = "--dtype", .help = "Served model dtype (auto: the checkpoint's, float32 served as bfloat16)")             \
  X(int64_t, tensor_parallel_size, 1, .kind = SettingKind::kInt, .low = 1, .high = kMaxTensorParallelSize,           \
    .why = "limits.h: 4096 GPUs per TP group", .flag = "--tensor-parallel-size", .help = "Tensor-parallel GPUs")     \
  X(int64_t, pipeline_parallel_size, 1, .kind = SettingKind::kInt, .low = 1, .high = kMaxPipelineParallelSize,       \
    .why = "limits.h: 1024 pipeline stages", .flag = "--pipeline-parallel-size", .help = "Pipeline-parallel stages") \
  X(int64_t, decode_context_parallel_size, 1, .kind = SettingKind::kInt, .low = 1, .high = kMaxTensorParallelSize,   \
    .why = "it must divide tensor_parallel_size (vLLM's ParallelConfig)", .flag = "--decode-context-parallel-size",  \
    .help = "Ranks of each TP group the KV cache is sharded over along tokens")                                      \
  X(int64_t, max_num_batched_tokens, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxNumBatchedTokens,           \
    .unset = "the release's default for the GPU and usage context (8192 for the KV functions)",                      \
    .why = "limits.h: at most max_model_len's bound", .flag = "--max-num-batched-tokens",                            \
    .help = "Tokens per scheduler step (sizes sliding-window reservations and the profile run)")                     \
  X(std::optional<bool>, enable_prefix_caching, std::nullopt, .kind = SettingKind::kOptionalBool,                    \
    .unset = "the release's default: on; hybrid models from 0.28, attention-free Mamba models never",               \
    .flag = "--enable-prefix-caching",                                                                              \
    .help = "Prefix caching (a hybrid model then runs mamba_cache_mode align; before 0.28 as its class decides)")   \
  X(std::string, mamba_cache_mode, "none", .kind = SettingKind::kText, .choices = "none, align, all",                  \
    .why = "vLLM's MambaCacheMode", .flag = "--mamba-cache-mode",                                                    \
    .help = "Hybrid models: one state per request (none), per aligned block (align) or per block (all)")             \
  X(std::string, mamba_cache_dtype, "auto", .kind = SettingKind::kText, .choices = VLLM_MEM_MAMBA_DTYPES,            \
    .why = "vLLM's MambaDType", .flag = "--mamba-cache-dtype", .help = "Hybrid models: the conv state's dtype")      \
  X(std::string, mamba_ssm_cache_dtype, "auto", .kind = SettingKind::kText, .choices = VLLM_MEM_MAMBA_DTYPES,        \
    .why = "vLLM's MambaDType", .flag = "--mamba-ssm-cache-dtype", .help = "Hybrid models: the SSM state's dtype")   \
  X(int64_t, num_gpu_blocks_override, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxModelLenTokens,            \
    .unset = "the blocks the budget holds", .why = "limits.h: a block holds at least one token",                    \
    .flag = "--num-gpu-blocks-override", .help = "Use this many KV blocks instead of what fits")                     \
  X(bool, disable_hybrid_kv_cache_manager, false, .kind = SettingKind::kBool,                                        \
    .flag = "--disable-hybrid-kv-cache-manager", .help = "Size every layer for the full length")                     \
  X(int64_t, max_concurrent_batches, 1, .kind = SettingKind::kInt, .low = 1, .high = kMaxPipelineParallelSize,       \
    .why = "batches in flight: one per pipeline stage, so bounded like pipeline_parallel_size",                      \
    .help = "Batches in flight (sliding-window reservations grow with it)")                                          \
  X(std::optional<bool>, cap_sliding_window_at_full, std::nullopt, .kind = SettingKind::kOptionalBool,               \
    .unset = "the release's rule (sliding_window_capped_at_full)",                                                   \
    .help = "Cap a sliding-window group's need at full attention's")                                                 \
  X(std::string, vllm_version, "", .kind = SettingKind::kText,                                                       \
    .unset = "the installed vLLM, else the newest known release", .why = "a release name such as 0.19 or 0.10.2",    \
    .help = "The vLLM release whose rules apply")

// The plan's own rows (after the KV rows).
#define VLLM_MEM_PLAN_SETTINGS(X)                                                                                     \
  X(int64_t, total_memory_bytes, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxDeviceBytes,                    \
    .unset = "the gpu's catalog total", .why = "limits.h: 1 PiB", .help = "The device's total memory in bytes")      \
  X(int64_t, free_memory_bytes, -1, .kind = SettingKind::kInt, .low = 0, .high = kMaxDeviceBytes, .unset_int = -1,   \
    .unset = "total minus the idle CUDA context (and NCCL)", .why = "limits.h: 1 PiB; at most the total",           \
    .help = "Free device memory at start-up in bytes")                                                               \
  X(int64_t, gpu_count, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxWorldSize, .unset = "not limited",       \
    .why = "limits.h: 16384 GPUs", .help = "GPUs available (TP x PP may not exceed it)")                             \
  X(double, gpu_memory_utilization, 0.0, .kind = SettingKind::kFloat, .low = 0.0, .high = 1.0, .low_exclusive = true, \
    .unset = "the release's default (0.9; 0.92 from v0.20)", .why = "a fraction of the device",                      \
    .flag = "--gpu-memory-utilization", .help = "Fraction of the GPU vLLM may use")                                  \
  X(int64_t, max_num_seqs, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxNumSeqs,                              \
    .unset = "the release's default for the GPU and usage context", .why = "limits.h: 2^20 sequences",               \
    .flag = "--max-num-seqs", .help = "Sequences per scheduler step")                                                \
  X(std::string, quantization, "", .kind = SettingKind::kText, .unset = "the checkpoint's own",                      \
    .why = "a method name (the model area checks it)", .flag = "--quantization", .help = "Weight quantization method") \
  X(bool, enforce_eager, false, .kind = SettingKind::kBool, .flag = "--enforce-eager",                               \
    .help = "No CUDA graphs")                                                                                        \
  X(CudagraphMode, cudagraph_mode, CudagraphMode::kFullAndPiecewise, .kind = SettingKind::kEnum,                     \
    .choices = "NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE", .why = "vLLM's CUDAGraphMode",             \
    .flag = "--cudagraph-mode", .help = "Which CUDA graphs are captured (compilation config)")                        \
  X(std::vector<int64_t>, cudagraph_capture_sizes, {}, .kind = SettingKind::kIntList, .low = 1,                      \
    .high = kMaxCudagraphCaptureSize, .max_items = kMaxCudagraphCaptureSizes, .unset = "vLLM's default sizes",       \
    .why = "limits.h: sizes up to 65536, 8192 of them", .flag = "--cudagraph-capture-sizes",                         \
    .help = "Batch sizes captured as CUDA graphs")                                                                   \
  X(int64_t, max_cudagraph_capture_size, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxCudagraphCaptureSize,   \
    .unset = "vLLM's default (512, bounded by the scheduler)", .why = "limits.h: 65536",                             \
    .flag = "--max-cudagraph-capture-size", .help = "Largest CUDA-graph batch size")                                 \
  X(int64_t, kv_cache_memory_bytes, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxDeviceBytes,                 \
    .unset = "profiled (utilization minus the non-KV memory)", .why = "limits.h: 1 PiB",                             \
    .flag = "--kv-cache-memory-bytes", .help = "KV-cache bytes per GPU instead of profiling")                        \
  X(std::optional<bool>, cudagraph_memory_in_budget, std::nullopt, .kind = SettingKind::kOptionalBool,               \
    .unset = "the release's default (on from v0.20)",                                                                \
    .help = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: subtract the graph estimate from the KV budget")              \
  X(std::string, usage_context, "server", .kind = SettingKind::kText, .choices = "server, offline",                   \
    .why = "vLLM's scheduler defaults differ", .help = "server (vllm serve) or offline (the LLM class)")             \
  X(double, cpu_offload_gb, 0.0, .kind = SettingKind::kFloat, .low = 0.0, .high = double(kMaxDeviceBytes >> 30),     \
    .unset = "", .why = "limits.h: 1 PiB of weights", .flag = "--cpu-offload-gb",                                    \
    .help = "GiB of weights per GPU kept in CPU memory (whole parameters, first layers first)")                     \
  X(bool, enable_lora, false, .kind = SettingKind::kBool, .flag = "--enable-lora",                                   \
    .help = "LoRA adapters: vLLM's adapter slots in every wrapped layer and the LoRA profile run")                  \
  X(int64_t, max_loras, 1, .kind = SettingKind::kInt, .low = 1, .high = kMaxNumSeqs,                                 \
    .why = "vLLM's LoRAConfig (ge=1); bounded like max_num_seqs (limits.h)", .flag = "--max-loras",                  \
    .help = "LoRA adapters on the GPU at once: one slot each in every wrapped layer")                               \
  X(int64_t, max_lora_rank, 16, .kind = SettingKind::kInt, .low = 1, .high = 512,                                    \
    .choices = "1, 8, 16, 32, 64, 128, 256, 320, 512", .why = "vLLM's MaxLoRARanks (config/lora.py)",                 \
    .flag = "--max-lora-rank", .help = "Largest adapter rank: every slot is this wide")                              \
  X(std::string, lora_dtype, "auto", .kind = SettingKind::kText, .choices = "auto, float16, bfloat16",               \
    .why = "vLLM's LoRADType", .flag = "--lora-dtype", .help = "The adapter slots' dtype (auto: the served dtype)")  \
  X(bool, fully_sharded_loras, false, .kind = SettingKind::kBool, .flag = "--fully-sharded-loras",                   \
    .help = "Shard both LoRA matrices over tensor parallelism (smaller slots at TP > 1)")                            \
  X(int64_t, max_cpu_loras, 0, .kind = SettingKind::kInt, .low = 1, .high = kMaxNumSeqs, .unset = "max_loras",       \
    .why = "vLLM's LoRAConfig: at least max_loras", .flag = "--max-cpu-loras",                                       \
    .help = "LoRA adapters cached in host memory (no GPU memory; accepted so a command line plans)")                \
  X(MmLimitPerPrompt, limit_mm_per_prompt, {}, .kind = SettingKind::kMapping, .low = 0, .high = kMaxNumSeqs,         \
    .unset_int = -1, .unset = "vLLM's default: 999 of every modality the model takes",                              \
    .why = "items per prompt, bounded like max_num_seqs; options as vLLM's DummyOptions (config/multimodal.py)",     \
    .flag = "--limit-mm-per-prompt",                                                                                 \
    .help = "Multimodal models: items per prompt by modality ({\"image\": 2, \"video\": 0}, or "                   \
            "{\"image\": {\"count\": 1, \"width\": 512, \"height\": 512}}); an int N: N images, other modalities off")  \
  X(MmProcessorKwargs, mm_processor_kwargs, {}, .kind = SettingKind::kMapping, .unset = "the processor's published defaults", \
    .why = "a JSON object forwarded to the processor (config/multimodal.py)", .flag = "--mm-processor-kwargs",       \
    .help = "Multimodal models: processor overrides; max_pixels / min_pixels (or size) bound the Qwen-VL dummy image") \
  X(bool, skip_mm_profiling, false, .kind = SettingKind::kBool, .flag = "--skip-mm-profiling",                       \
    .help = "Multimodal models: skip the encoder's profile run (its memory is then not reserved)")                   \
  X(bool, language_model_only, false, .kind = SettingKind::kBool, .flag = "--language-model-only",                   \
    .help = "Multimodal models: every modality limited to 0 (no encoder profile run)")                               \
  X(double, mm_processor_cache_gb, 4.0, .kind = SettingKind::kFloat, .low = 0.0, .high = double(kMaxDeviceBytes >> 30), \
    .why = "limits.h: 1 PiB", .flag = "--mm-processor-cache-gb",                                                     \
    .help = "Multimodal processor cache in host memory (GiB; no GPU memory, accepted so a command line plans)")

#define VLLM_MEM_SETTING_MEMBER(type, name, init, ...) type name = init;

/*! \brief The KV-cache settings a user asks for (the KV functions' keywords). */
struct KvCacheSettings {
  VLLM_MEM_KV_CACHE_SETTINGS(VLLM_MEM_SETTING_MEMBER)
};

/*! \brief Everything a user asks of a plan: the KV settings and the plan's own. PlanInputs
 *  (startup_plan.h) extends it with what the release resolves. */
struct PlanRequest : KvCacheSettings {
  VLLM_MEM_PLAN_SETTINGS(VLLM_MEM_SETTING_MEMBER)
};

#undef VLLM_MEM_SETTING_MEMBER

/*! \brief Every row, the KV rows first, in the structs' order. */
const std::vector<SettingRow>& PlanSettingRows();
/*! \brief The row of \p name; nullptr when none. */
const SettingRow* FindSettingRow(const std::string& name);
/*! \brief The row name closest to \p name (for "did you mean"). */
std::string ClosestSettingName(const std::string& name);

// One value against its row; InvalidArgument naming the field (\p field, else the row's name).
void ValidateSetting(const SettingRow& row, int64_t value, const std::string& field = "");
void ValidateSetting(const SettingRow& row, double value, const std::string& field = "");
/*! \brief ValidateSetting of a value the caller gave: the row's "unset" spelling (0, -1) is a
 *  value then, refused unless it is in bounds (the caller's None is how to leave a row unset). */
void ValidateExplicitSetting(const SettingRow& row, int64_t value, const std::string& field);
void ValidateExplicitSetting(const SettingRow& row, double value, const std::string& field);
void ValidateSetting(const SettingRow& row, const std::string& value, const std::string& field = "");
void ValidateSetting(const SettingRow& row, const std::vector<int64_t>& value, const std::string& field = "");
void ValidateSetting(const SettingRow& row, const std::vector<std::string>& value, const std::string& field = "");
inline void ValidateSetting(const SettingRow&, bool, const std::string& = "") {}
inline void ValidateSetting(const SettingRow&, std::optional<bool>, const std::string& = "") {}
inline void ValidateSetting(const SettingRow&, CudagraphMode, const std::string& = "") {}
/*! \brief Each count against the row's bounds (the reader typed the rest). */
void ValidateSetting(const SettingRow& row, const MmLimitPerPrompt& value, const std::string& field = "");
inline void ValidateSetting(const SettingRow&, const MmProcessorKwargs&, const std::string& = "") {}

/*! \brief Every field against its row. */
void ValidateKvCacheSettings(const KvCacheSettings& settings);
void ValidatePlanRequest(const PlanRequest& request);

/*! \brief The kv_cache area's options for \p settings (the release's KV rules not applied:
 *  ApplyVersionKvRules does that); max_model_len 0 stays 0 for the caller to resolve. */
KvCacheOptions KvCacheOptionsFrom(const KvCacheSettings& settings);

/*! \brief The options a KV entry point sizes with: \p settings checked against the table, the
 *  KV rules of the release settings.vllm_version names (the newest when ""), then what the user
 *  set explicitly (cap_sliding_window_at_full, disable_hybrid_kv_cache_manager). */
KvCacheOptions KvOptionsForRelease(const KvCacheSettings& settings, int64_t num_speculative_tokens = 0);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_PLAN_REQUEST_H_
