/*!
 * \file core/base/json.cc
 * \brief ParseJson on nlohmann/json's SAX parser: the tokenizer and grammar are nlohmann's
 *        (RFC 8259, strict UTF-8); this file only builds our JsonValue tree and enforces the
 *        limits that keep hostile input bounded before the memory is spent.
 *
 * Why SAX rather than nlohmann::json's DOM: the core's value type keeps the exact int64 of an
 * integer literal beside its double (parameter counts above 2^53 must stay exact), duplicate
 * keys are refused instead of silently keeping the last, and the depth / value-count limits stop
 * the parse at the first value over them instead of after the whole tree has been allocated.
 * nlohmann's SAX driver keeps its own state on the heap, so depth never grows the C++ stack.
 */
#include "vllm_mem/base/json.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "vllm_mem/base/error.h"

namespace vllm_mem {

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (!IsObject()) return nullptr;
  const auto& obj = AsObject();
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &it->second;
}

std::string JsonValue::KindName() const {
  if (IsNull()) return "null";
  if (IsBool()) return "a boolean";
  if (IsNumber()) return AsNumber().integer ? "an integer" : "a number";
  if (IsString()) return "a string";
  if (IsArray()) return "a list";
  return "an object";
}

namespace {

/*! Line and column (1-based) of byte \p offset, for messages a person can act on. */
std::string Place(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

/*! Builds a JsonValue tree from nlohmann's SAX events. Returning false stops the parse; the
 *  reason is kept in error_ and reported with the place by ParseJson. */
class TreeBuilder {
 public:
  using number_integer_t = int64_t;
  using number_unsigned_t = uint64_t;
  using number_float_t = double;
  using string_t = std::string;
  using binary_t = std::vector<uint8_t>;

  bool null() { return Add(JsonValue()); }
  bool boolean(bool value) { return Add(JsonValue(value)); }
  bool number_integer(int64_t value) {
    return Add(JsonValue(JsonValue::Number{static_cast<double>(value), value}));
  }
  bool number_unsigned(uint64_t value) {
    JsonValue::Number n{static_cast<double>(value), std::nullopt};
    if (value <= static_cast<uint64_t>(INT64_MAX)) n.integer = static_cast<int64_t>(value);
    return Add(JsonValue(n));
  }
  bool number_float(double value, const std::string& /*literal*/) {
    return Add(JsonValue(JsonValue::Number{value, std::nullopt}));
  }
  bool string(std::string& value) { return Add(JsonValue(std::move(value))); }
  bool binary(binary_t& /*value*/) { return Fail("binary values are not JSON"); }

  bool start_object(std::size_t /*size*/) { return Open(true); }
  bool key(std::string& name) {
    Frame& top = stack_.back();
    if (top.object.find(name) != top.object.end()) {
      return Fail("duplicate key \"" + Truncated(name) + "\" (each key may appear once)");
    }
    top.key = std::move(name);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t /*size*/) { return Open(false); }
  bool end_array() { return Close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    error_ = ex.what();
    // nlohmann's text is "[json.exception.parse_error.101] parse error at line 1, column 3:
    // syntax error ... - <detail>"; keep the detail, we print the place ourselves.
    const auto dash = error_.rfind("; ");
    if (dash != std::string::npos) error_ = error_.substr(dash + 2);
    // The detail quotes the text last read, which may be long (nlohmann spells each control
    // character as <U+0009>) or invalid UTF-8 (the very reason it failed): keep it printable
    // ASCII and short, so the message stays under 300 characters and decodes in Python
    // (fuzzing found a 425-character message).
    for (char& ch : error_) {
      if (ch < 0x20 || ch > 0x7e) ch = '?';
    }
    if (error_.size() > kMaxDetailChars) error_ = error_.substr(0, kMaxDetailChars - 3) + "...";
    error_offset_ = position == 0 ? 0 : position - 1;
    return false;
  }

  JsonValue TakeRoot() { return std::move(root_); }
  const std::string& error() const { return error_; }
  std::optional<size_t> error_offset() const { return error_offset_; }

 private:
  struct Frame {
    bool is_object = false;
    JsonObject object;
    JsonArray array;
    std::string key;
  };

  static constexpr size_t kMaxDetailChars = 160;

  static std::string Truncated(const std::string& s) {
    if (s.size() <= 80) return s;
    size_t cut = 77;  // on a UTF-8 character boundary, so the message still decodes
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return s.substr(0, cut) + "...";
  }

  bool Fail(std::string what) {
    error_ = std::move(what);
    return false;
  }

  bool Count() {
    if (++num_values_ > kJsonMaxValues) {
      return Fail("more than " + std::to_string(kJsonMaxValues) +
                  " values (a model or stage config has a few thousand)");
    }
    return true;
  }

  bool Add(JsonValue value) {
    if (!Count()) return false;
    if (stack_.empty()) {
      root_ = std::move(value);
    } else if (stack_.back().is_object) {
      Frame& top = stack_.back();
      top.object.emplace(std::move(top.key), std::move(value));
    } else {
      stack_.back().array.push_back(std::move(value));
    }
    return true;
  }

  bool Open(bool is_object) {
    if (stack_.size() >= static_cast<size_t>(kJsonMaxDepth)) {
      return Fail("nesting deeper than " + std::to_string(kJsonMaxDepth) + " levels");
    }
    stack_.push_back(Frame{is_object, {}, {}, {}});
    return true;
  }

  bool Close() {
    Frame top = std::move(stack_.back());
    stack_.pop_back();
    return Add(top.is_object ? JsonValue(std::move(top.object)) : JsonValue(std::move(top.array)));
  }

  std::vector<Frame> stack_;
  JsonValue root_;
  int64_t num_values_ = 0;
  std::string error_;
  std::optional<size_t> error_offset_;
};

}  // namespace

JsonValue ParseJson(std::string_view text, const std::string& source) {
  if (text.size() > static_cast<size_t>(kJsonMaxBytes)) {
    throw InvalidArgument(source, "is " + std::to_string(text.size()) +
                                      " bytes; JSON documents are limited to " +
                                      std::to_string(kJsonMaxBytes) + " bytes");
  }
  TreeBuilder builder;
  const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &builder,
                                            nlohmann::json::input_format_t::json,
                                            /*strict=*/true, /*ignore_comments=*/false);
  if (!ok) {
    std::string what = "malformed JSON";
    if (builder.error_offset()) what += " at " + Place(text, *builder.error_offset());
    what += ": " + builder.error();
    throw InvalidArgument(source, what);
  }
  return builder.TakeRoot();
}

}  // namespace vllm_mem
