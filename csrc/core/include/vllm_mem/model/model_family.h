/*!
 * \file vllm_mem/model/model_family.h
 * \brief Which model families the core sizes exactly, which it knows it cannot size yet, and
 *        what it says about the rest. A model read with rules it does not have would be sized
 *        as a plain transformer: a plausible, wrong number (a hybrid's Mamba state, a
 *        multimodal tower's weights). So the reader refuses such a model by default, and a
 *        caller who asks for a generic estimate gets one that carries its reason everywhere.
 *        The lists are data (csrc/core/model/model_families.json, compiled in).
 */
#ifndef VLLM_MEM_MODEL_MODEL_FAMILY_H_
#define VLLM_MEM_MODEL_MODEL_FAMILY_H_

#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/base/json.h"

namespace vllm_mem {

enum class ModelSupport {
  kSupported,    //!< the core has exact rules for this model_type
  kNotModelled,  //!< known, but a part of its memory is not modelled yet (reason says which)
  kUnknown,      //!< no rules at all
};

struct ModelFamily {
  ModelSupport support = ModelSupport::kUnknown;
  std::string description;  //!< what the family is (supported) or what is missing (not modelled)
};

/*! \brief The family of a config.json model_type (the language model's). */
ModelFamily ClassifyModelType(std::string_view model_type);

/*! \brief Every model_type with exact rules, sorted. */
std::vector<std::string> SupportedModelTypes();

/*! \brief The per-family traits of model_families.json ("traits"), or nullptr when the family
 *  has none (its rules are the ones written in C++). The object's keys are checked when the file
 *  is first parsed (each has a type; "source" is required), so readers may trust them. */
const JsonValue* FamilyTraits(std::string_view model_type);

/*! \brief The image processor facts vLLM reads from a published checkpoint's
 *  preprocessor_config.json rather than its config.json (model_families.json "vision_processors",
 *  keyed by the vision_config class: "max_pixels", "source"), or nullptr when the class has none.
 *  Checked when the file is first parsed. */
const JsonValue* VisionProcessorTraits(std::string_view vision_config_class);

/*! \brief A timm vision tower a vision_config names by architecture (model_families.json
 *  "timm_vision_towers": "parameters", "out_channels", "source"), or nullptr when it has none.
 *  Checked when the file is first parsed. */
const JsonValue* TimmVisionTower(std::string_view architecture);

/*! \brief The caveat every report of a multimodal checkpoint carries (only the language model
 *  is sized). */
const std::string& MultimodalCaveat();

/*! \brief The caveat of a multimodal checkpoint whose vision tower is counted: vLLM's start-up
 *  profiling of the image encoder (a dummy batch of maximum-size images) is not modelled. */
const std::string& VisionProfilingCaveat();

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_MODEL_FAMILY_H_
