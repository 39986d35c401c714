/*!
 * \file core/plan/mm_settings.cc
 * \brief --limit-mm-per-prompt and --mm-processor-kwargs read from their JSON, each key typed.
 */
#include "vllm_mem/plan/mm_settings.h"

#include <algorithm>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"

namespace vllm_mem {
namespace {

/*! A dummy item's side, frame count or audio length: vLLM's DummyOptions fields are gt=0 with no
 *  upper bound; 2^31 is past any image side, frame count or sample count a processor takes, and
 *  keeps every product of two of them inside int64. */
constexpr int64_t kMaxDummyOption = int64_t{1} << 31;

/*! An integer JSON value (not a bool, not a fraction) in [low, high], else InvalidArgument. */
int64_t IntegerIn(const JsonValue& v, int64_t low, int64_t high, const std::string& field) {
  const bool integral = v.IsNumber() && v.AsNumber().integer.has_value();
  if (!integral || *v.AsNumber().integer < low || *v.AsNumber().integer > high) {
    throw InvalidArgument(field, "must be an integer in [" + std::to_string(low) + ", " + std::to_string(high) +
                                     "]; got " + (integral ? std::to_string(*v.AsNumber().integer) : v.KindName()));
  }
  return *v.AsNumber().integer;
}

const JsonObject& ObjectOf(const JsonValue& v, const std::string& field, const char* example) {
  if (!v.IsObject())
    throw InvalidArgument(field, std::string("must be a JSON object such as ") + example + "; got " + v.KindName());
  return v.AsObject();
}

/*! The options vLLM's DummyOptions class of \p modality takes beside count (config/multimodal.py
 *  _validate_limit_per_prompt: ImageDummyOptions, VideoDummyOptions, AudioDummyOptions forbid
 *  other keys; BaseDummyOptions, for any other modality, has count alone). */
std::vector<std::string> OptionNames(const std::string& modality) {
  if (modality == "image") return {"width", "height"};
  if (modality == "video") return {"num_frames", "width", "height"};
  if (modality == "audio") return {"length"};
  return {};
}

/*! \p text as a JSON string literal (a key read from JSON may hold quotes or control characters). */
std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 0xf];
      out += kHex[c & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

MmModalityLimit ReadModality(const std::string& modality, const JsonValue& v, const std::string& field) {
  MmModalityLimit m;
  m.modality = modality;
  // The legacy count ({"image": 2}) is {"count": 2} to vLLM's validator.
  if (!v.IsObject()) {
    m.count = IntegerIn(v, 0, kMaxNumSeqs, field);
    return m;
  }
  const std::vector<std::string> names = OptionNames(modality);
  for (const auto& [key, value] : v.AsObject()) {
    const std::string key_field = field + "." + key;
    if (key == "count") {
      m.count = IntegerIn(value, 0, kMaxNumSeqs, key_field);
    } else if (std::find(names.begin(), names.end(), key) == names.end()) {
      std::string allowed = "count";
      for (const std::string& n : names) allowed += ", " + n;
      throw InvalidArgument(key_field,
                            "is not an option of " + EchoValue(modality) + " (vLLM's dummy options: " + allowed + ")");
    } else {
      int64_t& slot = key == "width"        ? m.width
                      : key == "height"     ? m.height
                      : key == "num_frames" ? m.num_frames
                                            : m.length;
      slot = IntegerIn(value, 1, kMaxDummyOption, key_field);
    }
  }
  return m;
}

}  // namespace

const MmModalityLimit* MmLimitPerPrompt::Find(std::string_view modality) const {
  for (const MmModalityLimit& m : modalities) {
    if (m.modality == modality) return &m;
  }
  return nullptr;
}

int64_t MmLimitPerPrompt::Count(std::string_view modality) const {
  if (images >= 0) return modality == "image" ? images : 0;
  const MmModalityLimit* m = Find(modality);
  return m != nullptr ? m->count : kDefaultMmLimitPerPrompt;
}

MmLimitPerPrompt ReadMmLimitPerPrompt(const JsonValue& value, const std::string& field) {
  MmLimitPerPrompt limit;
  for (const auto& [modality, entry] : ObjectOf(value, field, "{\"image\": 2, \"video\": 0}")) {
    limit.modalities.push_back(ReadModality(modality, entry, field + "." + modality));
  }
  return limit;  // a std::map's order: sorted by modality
}

MmProcessorKwargs ReadMmProcessorKwargs(const JsonValue& value, const std::string& field) {
  MmProcessorKwargs k;
  for (const auto& [key, entry] : ObjectOf(value, field, "{\"max_pixels\": 1003520}")) {
    k.keys.push_back(key);
    const std::string key_field = field + "." + key;
    if (key == "max_pixels") k.max_pixels = IntegerIn(entry, 1, kMaxDummyOption, key_field);
    if (key == "min_pixels") k.min_pixels = IntegerIn(entry, 1, kMaxDummyOption, key_field);
    if (key == "in_token_limit") k.in_token_limit = IntegerIn(entry, 1, kMaxDummyOption, key_field);
    if (key != "size") continue;
    // Qwen2VLImageProcessor's size {"shortest_edge": min_pixels, "longest_edge": max_pixels}.
    for (const auto& [edge, bound] : ObjectOf(entry, key_field, "{\"longest_edge\": 1003520}")) {
      if (edge == "longest_edge") {
        k.longest_edge = IntegerIn(bound, 1, kMaxDummyOption, key_field + "." + edge);
      } else if (edge == "shortest_edge") {
        k.shortest_edge = IntegerIn(bound, 1, kMaxDummyOption, key_field + "." + edge);
      } else {
        throw InvalidArgument(key_field + "." + edge,
                              "is not a size key the smart_resize processors read "
                              "(longest_edge, shortest_edge)");
      }
    }
  }
  return k;
}

std::string MmLimitPerPromptJson(const MmLimitPerPrompt& limit) {
  if (limit.images >= 0) return std::to_string(limit.images);
  if (limit.modalities.empty()) return "";
  std::string out = "{";
  for (const MmModalityLimit& m : limit.modalities) {
    if (out.size() > 1) out += ", ";
    out += JsonString(m.modality) + ": ";
    if (!m.HasDummyOptions()) {
      out += std::to_string(m.count);
      continue;
    }
    out += "{\"count\": " + std::to_string(m.count);
    const auto add = [&out](const char* name, int64_t v) {
      if (v > 0) out += std::string(", \"") + name + "\": " + std::to_string(v);
    };
    add("num_frames", m.num_frames);
    add("width", m.width);
    add("height", m.height);
    add("length", m.length);
    out += "}";
  }
  return out + "}";
}

}  // namespace vllm_mem
