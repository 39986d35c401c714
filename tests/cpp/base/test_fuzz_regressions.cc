// Regression tests of the base area for the defect classes the libFuzzer harnesses of tests/fuzz
// found (and the earlier external fuzzing pass of issue 9 reported), and for the inputs vLLM
// refuses that the core used to size anyway (issue 10). docs/fuzzing.md lists each finding and
// its fix. Every test below failed (undefined behaviour under UBSan, a wrong number, or
// unbounded work) on the code before the fix.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "core/base/checked_math.h"
#include "fuzz_regression.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"

// In vllm_mem::testing, beside the shared helpers (fuzz_regression.h).
namespace vllm_mem::testing {
namespace {

TEST(FuzzRegression, MalformedJsonMessagesAreShortPrintableText) {
  // nlohmann quotes the text last read, each control character as <U+0009>: a run of tabs gave
  // a 425-character message; invalid UTF-8 (why the parse failed) came back raw.
  for (const std::string& text :
       {"[" + std::string(300, '\t') + "x", std::string("[\"\xff\xfe\xc3") + "\"]",
        std::string("{\"") + std::string(500, 'k') + "\": 1, \"" + std::string(500, 'k') + "\": 2}"}) {
    const InvalidArgument e = InvalidArgumentOf([&] { ParseJson(text, "config.json"); });
    ExpectClearMessage(e, "config.json");
    for (char ch : std::string(e.what())) EXPECT_TRUE(ch >= 0x20 && ch <= 0x7e) << e.what();
  }
  // A cut never splits a UTF-8 character: 79 ASCII bytes, then a 2-byte one that would end at 81.
  EXPECT_EQ(EchoValue(std::string(79, 'a') + "\xc3\xa9" + std::string(10, 'b')),
            "'" + std::string(79, 'a') + "'... (91 bytes)");
  // Escapes count as the four characters they take (80 escaped bytes made a 316-character
  // message): 20 of them fill the 80.
  EXPECT_EQ(EchoValue(std::string(100, '\xff')).size(), 1 + 80 + 1 + std::string("... (100 bytes)").size());
  // Bytes that are not UTF-8, and control characters, are shown escaped: the message stays text.
  EXPECT_EQ(EchoValue("A100\xff\xfe\n"), "'A100\\xff\\xfe\\x0a'");
  EXPECT_EQ(EchoValue("caf\xc3\xa9"), "'caf\xc3\xa9'");
}

TEST(FuzzRegression, CheckedDoubleToInt64RefusesWhatDoesNotFit) {
  EXPECT_EQ(CheckedDoubleToInt64(-3.9, "x"), -3);  // truncation toward zero, as Python's int()
  EXPECT_EQ(CheckedDoubleToInt64(-9223372036854775808.0, "x"), std::numeric_limits<int64_t>::min());
  for (double bad : {9223372036854775808.0, -1e19, std::nan(""), std::numeric_limits<double>::infinity()}) {
    ExpectClearMessage(InvalidArgumentOf([&] { CheckedDoubleToInt64(bad, "x"); }), "x");
  }
}

}  // namespace
}  // namespace vllm_mem::testing
