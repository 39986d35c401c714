/*!
 * \file core/model/config_fields.cc
 * \brief Typed reads of config.json fields (config_fields.h).
 */
#include "core/model/config_fields.h"

#include <cmath>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

const JsonValue* FindFirst(const JsonValue& obj, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const JsonValue* v = obj.Find(key);
    if (v != nullptr && !v->IsNull()) return v;
  }
  return nullptr;
}

std::pair<const char*, const JsonValue*> FindFirstKey(const JsonValue& obj, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const JsonValue* v = obj.Find(key);
    if (v != nullptr && !v->IsNull()) return {key, v};
  }
  return {nullptr, nullptr};
}

std::string KeyList(std::initializer_list<const char*> keys) {
  std::string out;
  for (const char* key : keys) {
    if (!out.empty()) out += " / ";
    out += key;
  }
  return out;
}

int64_t AsInteger(const JsonValue& v, const std::string& field) {
  if (v.IsNumber()) {
    const auto& n = v.AsNumber();
    if (n.integer) return *n.integer;
    // The range is checked before the conversion (a double outside int64, NaN or infinity
    // converts with undefined behaviour; fuzzing found 1e300 here).
    if (n.value > -9.2e18 && n.value < 9.2e18 && n.value == std::trunc(n.value)) {
      return static_cast<int64_t>(n.value);
    }
    throw InvalidArgument(field,
                          "must be an integer, got a number that is not one (" + FormatRounded(n.value, 6) + ")");
  }
  throw InvalidArgument(field, "must be an integer, got " + v.KindName());
}

std::optional<int64_t> OptionalInt(const JsonValue& obj, std::initializer_list<const char*> keys) {
  const auto [key, v] = FindFirstKey(obj, keys);
  if (v == nullptr) return std::nullopt;
  return AsInteger(*v, key);
}

std::optional<int64_t> OptionalIntIn(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t lo,
                                     int64_t hi) {
  const auto [key, v] = FindFirstKey(obj, keys);
  if (v == nullptr) return std::nullopt;
  const int64_t value = AsInteger(*v, key);
  if (value < lo || value > hi) {
    throw InvalidArgument(
        key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(value));
  }
  return value;
}

int64_t RequiredPositiveInt(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t bound) {
  const auto [key, v] = FindFirstKey(obj, keys);
  if (v == nullptr) {
    throw InvalidArgument(KeyList(keys), "required field missing from config.json");
  }
  const int64_t value = AsInteger(*v, key);
  if (value <= 0) {
    throw InvalidArgument(key, "must be a positive integer, got " + std::to_string(value));
  }
  if (value > bound) {
    throw InvalidArgument(key, "must be at most " + std::to_string(bound) +
                                   " (vllm_mem/base/limits.h: 100x beyond real models), got " + std::to_string(value));
  }
  return value;
}

std::optional<bool> OptionalBool(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || v->IsNull()) return std::nullopt;
  if (!v->IsBool()) throw InvalidArgument(key, "must be true or false, got " + v->KindName());
  return v->AsBool();
}

std::string OptionalString(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || v->IsNull()) return "";
  if (!v->IsString()) throw InvalidArgument(key, "must be a string, got " + v->KindName());
  return v->AsString();
}

const JsonValue* OptionalObject(const JsonValue& obj, const char* key, const std::string& field) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || v->IsNull()) return nullptr;
  if (!v->IsObject()) throw InvalidArgument(field, "must be an object (or null), got " + v->KindName());
  return v;
}

}  // namespace vllm_mem
