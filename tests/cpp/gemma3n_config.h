/*!
 * \file tests/cpp/gemma3n_config.h
 * \brief google/gemma-3n-E4B-it's shape for the C++ tests of its towers (their weights and their
 *        profile-run items): one definition for both.
 */
#ifndef VLLM_MEM_TESTS_GEMMA3N_CONFIG_H_
#define VLLM_MEM_TESTS_GEMMA3N_CONFIG_H_

namespace vllm_mem::testing {

/*! transformers' class defaults are E4B's language model, Gemma3nVisionConfig's MobileNet-V5 and
 *  Gemma3nAudioConfig's conformer, so sub-configs naming only their class describe it. */
inline constexpr const char* kGemma3nE4bConfig = R"JSON({"architectures": ["Gemma3nForConditionalGeneration"],
    "model_type": "gemma3n", "text_config": {"torch_dtype": "bfloat16"},
    "vision_config": {"model_type": "gemma3n_vision", "architecture": "mobilenetv5_300m_enc"},
    "audio_config": {"model_type": "gemma3n_audio"}})JSON";

}  // namespace vllm_mem::testing

#endif  // VLLM_MEM_TESTS_GEMMA3N_CONFIG_H_
