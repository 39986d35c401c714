// The mamba_cache_mode vLLM runs a model with (ResolvedMambaCacheMode): prefix caching as the
// release defaults it, then vLLM's MambaModelConfig.verify_and_update_config
// (vllm/model_executor/models/config.py). Sources: vllm#50991 (0.28: prefix caching on by default
// for hybrids, mode 'align' for every class), ModelConfig.is_prefix_caching_supported (False for
// attention-free models on every release); rules in plan/vllm_versions.json.
#include <optional>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/release_resolution.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {
namespace {

const VllmVersionProfile& Profile(const std::string& v) { return *LookupVllmVersion(v).profile; }

// nvidia/NVIDIA-Nemotron-Nano-9B-v2's published dimensions and layer pattern
// (https://huggingface.co/nvidia/NVIDIA-Nemotron-Nano-9B-v2/blob/main/config.json); its class
// NemotronHForCausalLM implements SupportsMambaPrefixCaching.
const ModelSpec& NemotronH() {
  static const ModelSpec spec = ModelSpec::FromHfConfigText(
      R"({"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "torch_dtype": "bfloat16",
    "hidden_size": 4480, "num_hidden_layers": 56, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 15680, "vocab_size": 131072, "mamba_num_heads": 128,
    "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "chunk_size": 128,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"})");
  return spec;
}

// state-spaces/mamba-130m-hf's sizes (MambaForCausalLM: IsAttentionFree).
const ModelSpec& Mamba130m() {
  static const ModelSpec spec = ModelSpec::FromHfConfigText(
      R"({"architectures": ["MambaForCausalLM"], "model_type": "mamba", "conv_kernel": 4, "expand": 2,
    "hidden_size": 768, "intermediate_size": 1536, "num_hidden_layers": 24, "state_size": 16,
    "time_step_rank": 48, "torch_dtype": "float32", "use_conv_bias": true, "vocab_size": 50280})");
  return spec;
}

std::string Mode(const std::string& release, const ModelSpec& spec, std::optional<bool> prefix_caching,
                 const std::string& mode = "") {
  KvCacheSettings s;
  s.enable_prefix_caching = prefix_caching;
  s.mamba_cache_mode = mode;
  return ResolvedMambaCacheMode(Profile(release), spec, s);
}

}  // namespace

TEST(MambaCacheModeResolution, ReleaseRules) {
  EXPECT_FALSE(Profile("0.27.0").mamba_cache_mode_align_by_default);
  EXPECT_TRUE(Profile("0.28.0").mamba_cache_mode_align_by_default);
  EXPECT_TRUE(Profile("0.32.0").mamba_cache_mode_align_by_default);
}

// From 0.28 a hybrid whose class has the flag gets 'align', by default and when asked.
TEST(MambaCacheModeResolution, HybridGetsAlignFrom028) {
  for (const char* release : {"0.28.0", "0.29.0", "0.32.0"}) {
    EXPECT_EQ(Mode(release, NemotronH(), std::nullopt), "align") << release;
    EXPECT_EQ(Mode(release, NemotronH(), true), "align") << release;
    EXPECT_EQ(Mode(release, NemotronH(), false), "none") << release;
    EXPECT_EQ(Mode(release, NemotronH(), std::nullopt, "all"), "all") << release;  // passed: kept
  }
}

// Up to 0.27 the default is off, and asked for, the class flag decides: refused by name.
TEST(MambaCacheModeResolution, HybridBefore028) {
  EXPECT_EQ(Mode("0.27.0", NemotronH(), std::nullopt), "none");
  try {
    Mode("0.27.0", NemotronH(), true);
    ADD_FAILURE() << "resolved the class flag of 0.27";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "enable_prefix_caching");
  }
  EXPECT_EQ(Mode("0.27.0", NemotronH(), true, "align"), "align");
}

// Attention-free models keep prefix caching off by default on every release. Asked for, or a
// mode given, it is refused by name: vLLM does not support prefix caching there
// (is_prefix_caching_supported), and without attention blocks there is no block size to align to
// (the KV code failed on mamba_block_size 0 before).
TEST(MambaCacheModeResolution, AttentionFreeDefaultsOff) {
  for (const char* release : {"0.19.0", "0.27.0", "0.28.0", "0.32.0"}) {
    EXPECT_EQ(Mode(release, Mamba130m(), std::nullopt), "none") << release;
    EXPECT_EQ(Mode(release, Mamba130m(), false), "none") << release;
    for (const auto& [prefix, mode] : {std::pair<std::optional<bool>, std::string>{true, ""}, {std::nullopt, "align"},
                                       {false, "all"}}) {
      try {
        Mode(release, Mamba130m(), prefix, mode);
        ADD_FAILURE() << release << " " << mode;
      } catch (const Unsupported& e) {
        EXPECT_NE(std::string(e.what()).find("attention-free Mamba model (mamba) is not modelled"),
                  std::string::npos);
        EXPECT_EQ(std::string(e.what()).rfind(prefix.value_or(false) ? "enable_prefix_caching: " : "mamba_cache_mode: ", 0),
                  0u);
      }
    }
  }
}

}  // namespace vllm_mem
