/*!
 * \file vllm_mem/plan/mm_settings.h
 * \brief The two multimodal settings that are mappings, as vLLM spells them: --limit-mm-per-prompt
 *        and --mm-processor-kwargs (core/plan/mm_settings.cc reads them from JSON).
 *
 * Both are rows of the settings table (plan_request.h, SettingKind::kMapping). A caller passes a
 * mapping (Python: a dict, or its JSON text as vLLM's command line takes it); the reader here is
 * the one place that types its keys, each refusal naming the key ("limit_mm_per_prompt.image.width").
 * What a key does to memory depends on the model's processor, so the profile run decides that
 * (plan/mm_profile_estimate.h), not the reader.
 */
#ifndef VLLM_MEM_PLAN_MM_SETTINGS_H_
#define VLLM_MEM_PLAN_MM_SETTINGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/base/json.h"

namespace vllm_mem {

/*! \brief vLLM's per-modality item limit when --limit-mm-per-prompt leaves a modality out
 *  (vllm/config/multimodal.py MultiModalConfig.get_limit_per_prompt, BaseDummyOptions.count: 999). */
inline constexpr int64_t kDefaultMmLimitPerPrompt = 999;

/*! \brief One modality's entry: vLLM's legacy count ({"image": 2}) or its options
 *  ({"image": {"count": 1, "width": 512, "height": 512}}: vllm/config/multimodal.py
 *  ImageDummyOptions, VideoDummyOptions (num_frames, width, height), AudioDummyOptions (length)).
 *  An option not given is 0. */
struct MmModalityLimit {
  std::string modality;
  int64_t count = kDefaultMmLimitPerPrompt;
  int64_t width = 0;
  int64_t height = 0;
  int64_t num_frames = 0;
  int64_t length = 0;
  bool HasDummyOptions() const { return width > 0 || height > 0 || num_frames > 0 || length > 0; }
  bool operator==(const MmModalityLimit&) const = default;
};

/*! \brief --limit-mm-per-prompt. Unset: vLLM's default, 999 of every modality the model takes.
 *  The planner's int form N (this library's spelling before the mapping, kept): N images per
 *  prompt and every other modality off, so 0 is text only. The mapping: vLLM's, a modality it
 *  leaves out keeps 999. */
struct MmLimitPerPrompt {
  int64_t images = -1;                      //!< the int form; -1 when not used
  std::vector<MmModalityLimit> modalities;  //!< the mapping form, sorted by modality
  bool IsSet() const { return images >= 0 || !modalities.empty(); }
  /*! \brief The entry the mapping gives \p modality; nullptr when none. */
  const MmModalityLimit* Find(std::string_view modality) const;
  /*! \brief Items of \p modality allowed per prompt (MultiModalConfig.get_limit_per_prompt). */
  int64_t Count(std::string_view modality) const;
  bool operator==(const MmLimitPerPrompt&) const = default;
};

/*! \brief --mm-processor-kwargs: what the processor's bound reads typed (0: not given), and every
 *  key given. vllm/config/multimodal.py MultiModalConfig.mm_processor_kwargs (dict[str, object])
 *  is forwarded to the Hugging Face processor as overrides. */
struct MmProcessorKwargs {
  int64_t max_pixels = 0;         //!< the smart_resize processors' largest area
  int64_t min_pixels = 0;         //!< their smallest area
  int64_t longest_edge = 0;       //!< size.longest_edge: Qwen2-VL's image processor's max_pixels spelling
  int64_t shortest_edge = 0;      //!< size.shortest_edge: its min_pixels spelling
  int64_t in_token_limit = 0;     //!< Kimi-VL's image processor's patch budget (KimiVLImageProcessor)
  std::vector<std::string> keys;  //!< every top-level key, sorted
  std::string text;               //!< the JSON text it was read from (what a caller reads back)
  bool IsSet() const { return !keys.empty(); }
  bool operator==(const MmProcessorKwargs&) const = default;
};

/*! \brief The mapping form of --limit-mm-per-prompt from \p value (a JSON object): counts and
 *  options typed and bounded, InvalidArgument naming \p field and the key. */
MmLimitPerPrompt ReadMmLimitPerPrompt(const JsonValue& value, const std::string& field);
/*! \brief --mm-processor-kwargs from \p value (a JSON object); the pixel bounds typed. */
MmProcessorKwargs ReadMmProcessorKwargs(const JsonValue& value, const std::string& field);

/*! \brief The JSON text of a setting (as vLLM's command line spells it): "" when unset, the
 *  int form's number, else the mapping. */
std::string MmLimitPerPromptJson(const MmLimitPerPrompt& limit);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_MM_SETTINGS_H_
