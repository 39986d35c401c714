/*!
 * \file core/model/config_fields.h
 * \brief Typed reads of config.json fields, shared by the model area's reading steps: each
 *        names the field it reads in its InvalidArgument (wrong type, out of range, missing).
 *        Internal to the model area.
 */
#ifndef VLLM_MEM_CORE_MODEL_CONFIG_FIELDS_H_
#define VLLM_MEM_CORE_MODEL_CONFIG_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "vllm_mem/base/json.h"

namespace vllm_mem {

/*! \brief The value of the first present, non-null key among \p keys, or nullptr. */
const JsonValue* FindFirst(const JsonValue& obj, std::initializer_list<const char*> keys);

/*! \brief The first present, non-null key among \p keys and its value (nullptr when none): an
 *  error about the value names the spelling the file used. */
std::pair<const char*, const JsonValue*> FindFirstKey(const JsonValue& obj, std::initializer_list<const char*> keys);

/*! \brief "a / b / c": the field name an error gives for a set of alternative spellings. */
std::string KeyList(std::initializer_list<const char*> keys);

/*! \brief An integer; floats with an integral value (4096.0, written by some tools) are accepted. */
int64_t AsInteger(const JsonValue& v, const std::string& field);

std::optional<int64_t> OptionalInt(const JsonValue& obj, std::initializer_list<const char*> keys);

/*! \brief An optional integer that must lie in [lo, hi] when given. */
std::optional<int64_t> OptionalIntIn(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t lo,
                                     int64_t hi);

/*! \brief A required integer in [1, bound] (the bound from vllm_mem/base/limits.h). Errors
 *  name the key the file used, or every spelling when none is present. */
int64_t RequiredPositiveInt(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t bound);

std::optional<bool> OptionalBool(const JsonValue& obj, const char* key);

/*! \brief A string field, "" when absent or null. */
std::string OptionalString(const JsonValue& obj, const char* key);

/*! \brief An optional object (nullptr when absent or null); anything else names \p field. */
const JsonValue* OptionalObject(const JsonValue& obj, const char* key, const std::string& field);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_CONFIG_FIELDS_H_
