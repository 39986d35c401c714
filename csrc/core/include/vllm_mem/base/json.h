/*!
 * \file vllm_mem/base/json.h
 * \brief The core's JSON document type and its strict reader (nlohmann/json underneath), for
 *        Hugging Face config.json and stage configs. The core owns config interpretation, so
 *        the same parsing serves Python callers (who pass JSON text) and C++ users alike.
 */
#ifndef VLLM_MEM_BASE_JSON_H_
#define VLLM_MEM_BASE_JSON_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vllm_mem {

class JsonValue;
using JsonArray = std::vector<JsonValue>;
using JsonObject = std::map<std::string, JsonValue, std::less<>>;

/*! \brief One JSON value. Numbers keep their double value and, when the text was an integer
 *  that fits, the exact int64. */
class JsonValue {
 public:
  struct Number {
    double value = 0.0;
    std::optional<int64_t> integer;  // set when the literal is integral and fits in int64
  };

  JsonValue() = default;  // null
  explicit JsonValue(bool b) : data_(b) {}
  explicit JsonValue(Number n) : data_(n) {}
  explicit JsonValue(std::string s) : data_(std::move(s)) {}
  explicit JsonValue(JsonArray a) : data_(std::make_shared<JsonArray>(std::move(a))) {}
  explicit JsonValue(JsonObject o) : data_(std::make_shared<JsonObject>(std::move(o))) {}

  bool IsNull() const { return std::holds_alternative<std::monostate>(data_); }
  bool IsBool() const { return std::holds_alternative<bool>(data_); }
  bool IsNumber() const { return std::holds_alternative<Number>(data_); }
  bool IsString() const { return std::holds_alternative<std::string>(data_); }
  bool IsArray() const { return std::holds_alternative<std::shared_ptr<JsonArray>>(data_); }
  bool IsObject() const { return std::holds_alternative<std::shared_ptr<JsonObject>>(data_); }

  bool AsBool() const { return std::get<bool>(data_); }
  const Number& AsNumber() const { return std::get<Number>(data_); }
  const std::string& AsString() const { return std::get<std::string>(data_); }
  const JsonArray& AsArray() const { return *std::get<std::shared_ptr<JsonArray>>(data_); }
  const JsonObject& AsObject() const { return *std::get<std::shared_ptr<JsonObject>>(data_); }

  /*! \brief The member \p key of an object, or nullptr when absent or not an object. */
  const JsonValue* Find(std::string_view key) const;

  /*! \brief A short name of the kind, for error messages ("an integer", "a string", ...). */
  std::string KindName() const;

 private:
  std::variant<std::monostate, bool, Number, std::string, std::shared_ptr<JsonArray>,
               std::shared_ptr<JsonObject>>
      data_;
};

/*! \brief Limits checked before the work they bound: a published config.json is tens of KB with
 *  a few thousand values and nests a handful of levels, so these are 100x beyond any real file
 *  and still keep a hostile document's parse under a second and its tree under ~100 MB. */
inline constexpr int64_t kJsonMaxBytes = int64_t{16} << 20;
inline constexpr int64_t kJsonMaxValues = int64_t{1} << 20;
inline constexpr int kJsonMaxDepth = 256;

/*! \brief Parses JSON text (RFC 8259: no NaN, no comments, no duplicate keys); InvalidArgument
 *  naming \p source, with line and column where the text is malformed, or the limit exceeded. */
JsonValue ParseJson(std::string_view text, const std::string& source = "json");

}  // namespace vllm_mem

#endif  // VLLM_MEM_BASE_JSON_H_
