/*!
 * \file tests/fuzz/fuzz_json.cc
 * \brief libFuzzer harness of ParseJson (core/base/json.cc): any text, then a walk of the tree
 *        it returns, so a malformed tree (wrong variant, dangling pointer) is touched.
 */
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.h"
#include "vllm_mem/base/json.h"

namespace {

// Visits every value; returns a count so the walk cannot be optimised away.
int64_t Walk(const vllm_mem::JsonValue& value, int depth) {
  if (depth > vllm_mem::kJsonMaxDepth + 1) __builtin_trap();  // the parser's limit leaked
  int64_t count = 1;
  (void)value.KindName();
  if (value.IsArray()) {
    for (const auto& item : value.AsArray()) count += Walk(item, depth + 1);
  } else if (value.IsObject()) {
    for (const auto& [key, item] : value.AsObject()) {
      if (value.Find(key) != &item) __builtin_trap();  // lookup disagrees with iteration
      count += Walk(item, depth + 1);
    }
  } else if (value.IsNumber()) {
    const auto& number = value.AsNumber();
    // The exact integer, when kept, is the double's value rounded (it came from one literal).
    if (number.integer && static_cast<double>(*number.integer) != number.value &&
        number.value == number.value) {
      double diff = static_cast<double>(*number.integer) - number.value;
      if (diff > 1.0 || diff < -1.0) __builtin_trap();
    }
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  vllm_mem::fuzz::Expect([&] {
    vllm_mem::JsonValue root = vllm_mem::ParseJson(text, "fuzz");
    if (Walk(root, 0) > vllm_mem::kJsonMaxValues) __builtin_trap();  // the value limit leaked
  });
  return 0;
}
