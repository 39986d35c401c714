/*!
 * \file core/model/audio_weights.h
 * \brief Reading audio_config into an AudioEncoderSpec. Internal to the model area.
 */
#ifndef VLLM_MEM_CORE_MODEL_AUDIO_WEIGHTS_H_
#define VLLM_MEM_CORE_MODEL_AUDIO_WEIGHTS_H_

#include <optional>

#include "vllm_mem/base/json.h"
#include "vllm_mem/model/audio_encoder.h"

namespace vllm_mem {

/*! \brief The audio tower of \p config (already through ApplyConfigDefaults), or nullopt when it has
 *  no audio_config object or its class has no rules. InvalidArgument naming the audio_config field
 *  when a count or list is missing, malformed or out of bounds. */
std::optional<AudioEncoderSpec> ReadAudioEncoder(const JsonValue& config, int64_t text_hidden_size);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_AUDIO_WEIGHTS_H_
