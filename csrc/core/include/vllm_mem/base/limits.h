/*!
 * \file vllm_mem/base/limits.h
 * \brief Upper bounds on every count the core does work proportional to, checked before that
 *        work. Each is about 100x beyond the largest real model, deployment or file known, so
 *        no real input meets one, while a hostile or mistyped value (2^40 layers, a TP size of
 *        2^20) gets an InvalidArgument naming the field in microseconds instead of minutes of
 *        work and gigabytes of memory (issue 10). docs/fuzzing.md lists them with the finding
 *        that motivated each.
 */
#ifndef VLLM_MEM_BASE_LIMITS_H_
#define VLLM_MEM_BASE_LIMITS_H_

#include <cstdint>

namespace vllm_mem {

// ---- model dimensions (config.json) --------------------------------------------------------
/*! Decoder layers: the deepest published LLMs have ~126 (Llama-3.1-405B); a per-layer vector is
 *  built and walked per pipeline rank, so this bounds that work. */
inline constexpr int64_t kMaxNumLayers = int64_t{1} << 14;            // 16384
/*! Attention (and KV) heads: real models have <= 128. */
inline constexpr int64_t kMaxAttentionHeads = int64_t{1} << 14;       // 16384
/*! hidden_size: the widest real models are ~25k (Llama-3.1-405B: 16384). */
inline constexpr int64_t kMaxHiddenSize = int64_t{1} << 22;           // 4194304
/*! head_dim and MLA ranks/dims: real ones are <= 576 (MLA's latent + rope). */
inline constexpr int64_t kMaxHeadDim = int64_t{1} << 16;              // 65536
/*! intermediate_size (dense or per expert): real ones are <= ~74k. */
inline constexpr int64_t kMaxIntermediateSize = int64_t{1} << 24;     // 16777216
/*! vocab_size: real ones are <= ~262k (Gemma-3). */
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 26;            // 67108864
/*! Routed or shared experts: real models have <= 384 (Kimi-K2). */
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;              // 65536
/*! Context lengths (max_position_embeddings, max_model_len, the rotary cache after scaling):
 *  the longest real context is 10M tokens (Llama-4 Scout); 2^30 keeps token products of a
 *  few factors far inside int64 and doubles exact. */
inline constexpr int64_t kMaxModelLenTokens = int64_t{1} << 30;       // 1073741824
/*! Sliding windows and attention chunks: never longer than a context. */
inline constexpr int64_t kMaxWindowTokens = kMaxModelLenTokens;
/*! RoPE scaling factor: real ones are <= 64 (yarn); the scaled cache stays below
 *  kMaxModelLenTokens in any case. */
inline constexpr double kMaxRopeScalingFactor = 1e4;

// ---- serving settings ----------------------------------------------------------------------
/*! tensor_parallel_size: real deployments use <= 64 GPUs per TP group. The KV sizing keeps one
 *  entry per worker, so TP x PP is bounded too (kMaxWorldSize). */
inline constexpr int64_t kMaxTensorParallelSize = int64_t{1} << 12;   // 4096
/*! pipeline_parallel_size: real ones are <= 16; a plan keeps per-rank estimates (CUDA-graph
 *  sizes, activations), so this bounds a plan's memory. Also at most the layer count. */
inline constexpr int64_t kMaxPipelineParallelSize = int64_t{1} << 10; // 1024
/*! TP x PP workers of one engine: the largest single vLLM engines span ~128 GPUs. */
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 14;            // 16384
/*! max_num_seqs: vLLM's defaults are 256-1024. */
inline constexpr int64_t kMaxNumSeqs = int64_t{1} << 20;              // 1048576
/*! max_num_batched_tokens: at most a few contexts. */
inline constexpr int64_t kMaxNumBatchedTokens = kMaxModelLenTokens;
/*! A CUDA-graph capture size (tokens of one captured batch): vLLM's default largest is 512
 *  and real overrides stay below ~8192. The default size list grows linearly with it. */
inline constexpr int64_t kMaxCudagraphCaptureSize = int64_t{1} << 16; // 65536
/*! Entries of an explicit cudagraph_capture_sizes list (vLLM's default list has ~67). */
inline constexpr int64_t kMaxCudagraphCaptureSizes = int64_t{1} << 13; // 8192
/*! num_speculative_tokens: published drafters propose 1-8 tokens; 1 + K multiplies the decode
 *  batch and every capture size. */
inline constexpr int64_t kMaxNumSpeculativeTokens = int64_t{1} << 10;  // 1024
/*! Bytes of one device (total, free, reserve, requested): the largest GPUs have ~288 GB;
 *  2^50 (1 PiB) keeps every sum of a few device figures inside int64 and exact as a double. */
inline constexpr int64_t kMaxDeviceBytes = int64_t{1} << 50;

// ---- multi-stage configs and machines ------------------------------------------------------
/*! Stages in one config: vLLM-Omni pipelines have 2-4. */
inline constexpr int64_t kMaxStages = int64_t{1} << 10;               // 1024
/*! A device index or id (CUDA_VISIBLE_DEVICES entries, stage device lists, GPU ids): nodes
 *  have <= 16 GPUs; ids are kept in per-device tables. */
inline constexpr int64_t kMaxDeviceId = int64_t{1} << 12;             // 4096
/*! Devices listed by one stage or one CUDA_VISIBLE_DEVICES value. */
inline constexpr int64_t kMaxDevicesPerList = kMaxDeviceId;

// ---- text ------------------------------------------------------------------------------------
/*! A GPU name: real ones are < 40 characters; the fuzzy match is quadratic in the length. */
inline constexpr int64_t kMaxGpuNameChars = 256;
/*! How much of a user's string an error message echoes (issue 10: messages <= 300 chars). */
inline constexpr int64_t kMaxEchoedChars = 80;

}  // namespace vllm_mem

#endif  // VLLM_MEM_BASE_LIMITS_H_
