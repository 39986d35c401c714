/*!
 * \file tests/cpp/bundled_config.h
 * \brief Reading the model configs shipped with the package (python/vllm_mem/configs/) and
 *        other files of the source tree from the C++ tests: one definition for every test.
 */
#ifndef VLLM_MEM_TESTS_BUNDLED_CONFIG_H_
#define VLLM_MEM_TESTS_BUNDLED_CONFIG_H_

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem::testing {

/*! \brief The text of \p path relative to the source tree; a missing file fails the test. */
inline std::string SourceFileText(const std::string& path) {
  std::ifstream in(std::string(VLLM_MEM_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/*! \brief A bundled config's text by file name ("meta-llama--Llama-3.1-8B-Instruct.json"). */
inline std::string BundledConfigText(const std::string& file) {
  return SourceFileText("python/vllm_mem/configs/" + file);
}

/*! \brief A bundled config read into a ModelSpec. */
inline ModelSpec BundledModel(const std::string& file) { return ModelSpec::FromHfConfigText(BundledConfigText(file)); }

}  // namespace vllm_mem::testing

#endif  // VLLM_MEM_TESTS_BUNDLED_CONFIG_H_
