#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json.h"

namespace vllm_mem {

TEST(Json, ParsesConfigShapes) {
  JsonValue v = ParseJson(R"({"a": 1, "b": [1.5, true, null, "x\u00e9"], "c": {"d": -3e2},
                               "big": 9007199254740993, "nan": NaN})");
  ASSERT_TRUE(v.IsObject());
  EXPECT_EQ(*v.Find("a")->AsNumber().integer, 1);
  EXPECT_DOUBLE_EQ(v.Find("b")->AsArray()[0].AsNumber().value, 1.5);
  EXPECT_FALSE(v.Find("b")->AsArray()[0].AsNumber().integer.has_value());
  EXPECT_TRUE(v.Find("b")->AsArray()[1].AsBool());
  EXPECT_TRUE(v.Find("b")->AsArray()[2].IsNull());
  EXPECT_EQ(v.Find("b")->AsArray()[3].AsString(), "x\xc3\xa9");
  EXPECT_DOUBLE_EQ(v.Find("c")->Find("d")->AsNumber().value, -300.0);
  EXPECT_EQ(*v.Find("big")->AsNumber().integer, 9007199254740993LL);  // exact, not via double
  EXPECT_EQ(v.Find("missing"), nullptr);
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
