/*!
 * \file core/model/config_defaults.h
 * \brief transformers' config-class defaults (data: model/config_defaults.json), applied to a
 *        config.json before it is read. Internal to the model area.
 */
#ifndef VLLM_MEM_CORE_MODEL_CONFIG_DEFAULTS_H_
#define VLLM_MEM_CORE_MODEL_CONFIG_DEFAULTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/base/json.h"

namespace vllm_mem {

/*! \brief \p config with every absent field of a known config class filled from its
 *  transformers default, as from_dict does: the top level by its model_type (and, for a
 *  multimodal wrapper, the wrapper's own fields), text_config and vision_config by the class
 *  transformers builds them with. Present fields (null included) are kept. Anything not an
 *  object is returned unchanged (the reader refuses it). */
JsonValue ApplyConfigDefaults(const JsonValue& config);

/*! \brief The config class that transformers builds \p config's vision_config with
 *  ("siglip_vision_model", "pixtral", ...), or "" when there is no vision_config object or
 *  no class is known for it. */
std::string VisionConfigClass(const JsonValue& config);

/*! \brief The transformers class of \p config's audio_config ("gemma3n_audio"), or "" when there is
 *  none or its wrapper names no audio class. */
std::string AudioConfigClass(const JsonValue& config);

/*! \brief model_types with a defaults entry (configs and wrappers), sorted. */
std::vector<std::string> ConfigDefaultModelTypes();

/*! \brief The transformers file an entry cites, or "" when \p model_type has none. */
std::string ConfigDefaultsSource(std::string_view model_type);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_CONFIG_DEFAULTS_H_
