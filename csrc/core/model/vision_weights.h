/*!
 * \file core/model/vision_weights.h
 * \brief Reading vision_config into a VisionEncoderSpec. Internal to the model area.
 */
#ifndef VLLM_MEM_CORE_MODEL_VISION_WEIGHTS_H_
#define VLLM_MEM_CORE_MODEL_VISION_WEIGHTS_H_

#include <optional>

#include "vllm_mem/base/json.h"
#include "vllm_mem/model/vision_encoder.h"

namespace vllm_mem {

/*! \brief The vision tower of \p config (already through ApplyConfigDefaults), or nullopt when
 *  it has no vision_config or its tower / projector has no rules (the caller keeps the
 *  multimodal caveat then). InvalidArgument naming the vision_config field when a count is
 *  missing, not a positive integer or out of bounds. */
std::optional<VisionEncoderSpec> ReadVisionEncoder(const JsonValue& config, int64_t text_hidden_size);

/*! \brief Gemma3nMultimodalEmbedder (vLLM gemma3n_mm.py) of \p vocab hard-token rows of \p width into
 *  \p text_width: its parameters, and the elements one of \p tensor_parallel_size ranks holds
 *  (rows and projection split, norms whole). Gemma-3n's vision and audio embedders are both one. */
int64_t MultimodalEmbedderParameters(int64_t width, int64_t vocab, int64_t text_width);
int64_t MultimodalEmbedderElementsPerRank(int64_t width, int64_t vocab, int64_t text_width,
                                          int64_t tensor_parallel_size);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_VISION_WEIGHTS_H_
