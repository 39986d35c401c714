#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"

namespace vllm_mem {

TEST(Json, ParsesConfigShapes) {
  JsonValue v = ParseJson(R"({"a": 1, "b": [1.5, true, null, "x\u00e9"], "c": {"d": -3e2},
                               "big": 9007199254740993, "huge": 18446744073709551615})");
  ASSERT_TRUE(v.IsObject());
  EXPECT_EQ(*v.Find("a")->AsNumber().integer, 1);
  EXPECT_DOUBLE_EQ(v.Find("b")->AsArray()[0].AsNumber().value, 1.5);
  EXPECT_FALSE(v.Find("b")->AsArray()[0].AsNumber().integer.has_value());
  EXPECT_TRUE(v.Find("b")->AsArray()[1].AsBool());
  EXPECT_TRUE(v.Find("b")->AsArray()[2].IsNull());
  EXPECT_EQ(v.Find("b")->AsArray()[3].AsString(), "x\xc3\xa9");
  EXPECT_DOUBLE_EQ(v.Find("c")->Find("d")->AsNumber().value, -300.0);
  EXPECT_EQ(*v.Find("big")->AsNumber().integer, 9007199254740993LL);  // exact, not via double
  EXPECT_FALSE(v.Find("huge")->AsNumber().integer.has_value());  // > int64: a double only
  EXPECT_EQ(v.Find("missing"), nullptr);
}

TEST(Json, RefusesWhatJsonIsNot) {
  // NaN/Infinity (Python's json writes them), comments, duplicate keys: each refused by name.
  for (const char* bad : {R"({"a": NaN})", R"({"a": Infinity})", R"({"a": 1 /* c */})",
                          R"({"a": 1, "a": 2})"}) {
    EXPECT_THROW(ParseJson(bad, "config.json"), InvalidArgument) << bad;
  }
  try {
    ParseJson(R"({"a": 1, "a": 2})", "config.json");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate key \"a\""), std::string::npos) << e.what();
  }
}

TEST(Json, SizeAndCountAreLimitedBeforeTheWork) {
  std::string big(static_cast<size_t>(kJsonMaxBytes) + 1, ' ');
  EXPECT_THROW(ParseJson(big, "config.json"), InvalidArgument);
  // 1.1M tiny values in ~3.3 MB: refused at the value limit, not after building them all.
  std::string many = "[";
  for (int64_t i = 0; i <= kJsonMaxValues + 10; ++i) many += "0,";
  many += "0]";
  try {
    ParseJson(many, "config.json");
    FAIL() << "expected the value limit";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("values"), std::string::npos) << e.what();
  }
}

TEST(Json, MalformedInputNamesThePlace) {
  for (const char* bad : {"{", "{\"a\" 1}", "[1,]", "{\"a\":1} x", "\"abc", "tru", "01x", ""}) {
    EXPECT_THROW(ParseJson(bad, "config.json"), InvalidArgument) << bad;
  }
  try {
    ParseJson("{\n  \"a\": ?\n}", "config.json");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(Json, DepthIsLimited) {
  std::string deep(10000, '[');
  EXPECT_THROW(ParseJson(deep), InvalidArgument);
}

}  // namespace vllm_mem
