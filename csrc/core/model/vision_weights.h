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

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_VISION_WEIGHTS_H_
