// The older --kv-cache-dtype names by release, as vLLM's CacheDType listed them at each tag (the
// rule kv_cache_dtypes_added, sources in plan/vllm_versions.json): the versioned API docs give
// ('auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2') at v0.9.0 / v0.9.2, 'fp8_inc' added at v0.10.0; the
// release wheels give 'bfloat16' at v0.11.0, 'fp8_ds_mla' at v0.11.1 and 'float16' at v0.18.0.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/plan_request.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {
namespace {

const VllmVersionProfile& Profile(const std::string& version) { return *LookupVllmVersion(version).profile; }

}  // namespace

// Each name's first release is in VllmVersion.KvCacheDTypesAreAcceptedFromTheirFirstRelease.
TEST(KvDTypeNamesByRelease, AnOlderReleaseListsOnlyItsOwnNames) {
  // v0.9.2's CacheDType: the four names of every release, and nothing the later tags added.
  const std::string refusal = KvCacheDTypeRefusal(Profile("0.9"), "bfloat16");
  for (const char* listed : {"'auto'", "'fp8'", "'fp8_e4m3'", "'fp8_e5m2'"}) {
    EXPECT_NE(refusal.find(listed), std::string::npos) << refusal;
  }
  for (const char* later : {"'fp8_inc'", "'float16'", "'fp8_ds_mla'", "'nvfp4'"}) {
    EXPECT_EQ(refusal.find(later), std::string::npos) << refusal;
  }
  // The KV functions refuse it as the plan does, naming the field.
  KvCacheSettings kv;
  kv.max_model_len = 8192;
  kv.kv_cache_dtype = "fp8_inc";
  kv.vllm_version = "0.9";
  try {
    KvOptionsForRelease(kv);
    FAIL() << "0.9 has no fp8_inc";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "kv_cache_dtype");
  }
  kv.vllm_version = "0.10";
  EXPECT_NO_THROW(KvOptionsForRelease(kv));
}

}  // namespace vllm_mem
