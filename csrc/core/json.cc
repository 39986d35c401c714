/*!
 * \file core/json.cc
 * \brief Recursive-descent JSON parser (RFC 8259), with a depth limit so hostile input cannot
 *        exhaust the stack. NaN and Infinity, which Python's json module writes, are accepted.
 */
#include "core/json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/error.h"

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

constexpr int kMaxDepth = 256;

class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  JsonValue ParseDocument() {
    SkipSpace();
    JsonValue v = ParseValue(0);
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InvalidArgument(source_, "malformed JSON at line " + std::to_string(line) +
                                       ", column " + std::to_string(col) + ": " + what);
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  JsonValue ParseValue(int depth) {
    if (depth > kMaxDepth) Fail("nesting deeper than 256 levels");
    if (pos_ >= text_.size()) Fail("unexpected end of input");
    char c = text_[pos_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') return JsonValue(ParseString());
    if (Consume("true")) return JsonValue(true);
    if (Consume("false")) return JsonValue(false);
    if (Consume("null")) return JsonValue();
    if (Consume("NaN")) return JsonValue(JsonValue::Number{std::nan(""), std::nullopt});
    if (Consume("Infinity")) {
      return JsonValue(JsonValue::Number{std::numeric_limits<double>::infinity(), std::nullopt});
    }
    if (Consume("-Infinity")) {
      return JsonValue(JsonValue::Number{-std::numeric_limits<double>::infinity(), std::nullopt});
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    Fail(std::string("unexpected character '") + c + "'");
  }

  JsonValue ParseObject(int depth) {
    ++pos_;  // '{'
    JsonObject obj;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return JsonValue(std::move(obj));
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') Fail("expected a string key");
      std::string key = ParseString();
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') Fail("expected ':'");
      ++pos_;
      SkipSpace();
      // Later duplicates win, as in Python's json module.
      obj.insert_or_assign(std::move(key), ParseValue(depth + 1));
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return JsonValue(std::move(obj));
      }
      Fail("expected ',' or '}'");
    }
  }

  JsonValue ParseArray(int depth) {
    ++pos_;  // '['
    JsonArray arr;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return JsonValue(std::move(arr));
    }
    while (true) {
      SkipSpace();
      arr.push_back(ParseValue(depth + 1));
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return JsonValue(std::move(arr));
      }
      Fail("expected ',' or ']'");
    }
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  uint32_t ParseHex4() {
    if (pos_ + 4 > text_.size()) Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else Fail("bad hex digit in \\u escape");
    }
    return v;
  }

  std::string ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) Fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) Fail("control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) Fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          uint32_t cp = ParseHex4();
          if (cp >= 0xD800 && cp < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t lo = ParseHex4();
            if (lo < 0xDC00 || lo >= 0xE000) Fail("bad UTF-16 surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default: Fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  JsonValue ParseNumber() {
    size_t start = pos_;
    bool integral = true;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - d;
    };
    if (digits() == 0) Fail("expected digits");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (digits() == 0) Fail("expected digits after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) Fail("expected exponent digits");
    }
    std::string literal(text_.substr(start, pos_ - start));
    JsonValue::Number n;
    n.value = std::strtod(literal.c_str(), nullptr);
    if (integral) {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(literal.c_str(), &end, 10);
      if (errno == 0) n.integer = static_cast<int64_t>(v);
    }
    return JsonValue(n);
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue ParseJson(std::string_view text, const std::string& source) {
  return Parser(text, source).ParseDocument();
}

}  // namespace vllm_mem
