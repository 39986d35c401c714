/*!
 * \file vllm_mem/plan/speculative_config_keys.h
 * \brief The keys of vLLM's --speculative-config (the SpeculativeConfig fields) by release, and
 *        what the planner does with each: used (it changes the plan), accepted with no memory
 *        effect, accepted only with the values whose memory is modelled, or refused as vLLM
 *        refuses it. Data: plan/speculative_config_keys.json (each key with its source and the
 *        release range where it was read); table: docs/speculative_decoding.md.
 */
#ifndef VLLM_MEM_PLAN_SPECULATIVE_CONFIG_KEYS_H_
#define VLLM_MEM_PLAN_SPECULATIVE_CONFIG_KEYS_H_

#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/base/json.h"

namespace vllm_mem {

/*! \brief What vllm_mem does with one key (speculative_config_keys.json "use"). */
enum class SpeculativeKeyUse {
  kUsed,         //!< changes the plan
  kNoMemory,     //!< accepted; vLLM's use of it changes no memory vllm_mem sizes
  kNotModelled,  //!< accepted with a modelled value; another value is refused (Unsupported)
  kInternal,     //!< a field vLLM's engine fills itself; refused by name
  kRefused,      //!< vLLM refuses it, in its own words
  kVllmMem,      //!< vllm_mem's own switch, not a vLLM field
};
const char* SpeculativeKeyUseName(SpeculativeKeyUse use);  //!< "used", "no_memory", ...

/*! \brief One row of the table. since / removed: "" where not read (accepted for every release). */
struct SpeculativeConfigKey {
  std::string key;
  SpeculativeKeyUse use = SpeculativeKeyUse::kNoMemory;
  std::string effect;
  std::string since, release;
  std::string removed, removed_release;
  std::string source;
  std::string message;                     //!< kRefused: vLLM's message
  std::vector<JsonValue> modelled_values;  //!< kNotModelled: the values whose memory is modelled
};

/*! \brief One method name vLLM's SpeculativeMethod accepts ("methods" of the file). */
struct SpeculativeMethodRow {
  std::string name;
  std::string sized_as;  //!< "ngram", "draft_model", "eagle", "eagle3", "mtp"; "" : not modelled
  std::string since, release, source;
};
const std::vector<SpeculativeMethodRow>& SpeculativeMethodRows();
/*! \brief The row of \p name, or nullptr when vLLM has no such method. */
const SpeculativeMethodRow* FindSpeculativeMethodRow(std::string_view name);

/*! \brief The table, in file order (parsed once). */
const std::vector<SpeculativeConfigKey>& SpeculativeConfigKeys();

/*! \brief The release from which vLLM refuses a key its SpeculativeConfig lacks ("0.14.0";
 *  before it, pydantic dropped such a key silently). */
const std::string& SpeculativeUnknownKeysRefusedSince();

/*! \brief Checks the keys of a --speculative-config object as vLLM release \p vllm_version
 *  ("" : the newest profile's) reads them. InvalidArgument naming speculative_config.<key> for
 *  a key that release's SpeculativeConfig lacks (vLLM's "Unexpected keyword argument", from
 *  the release that refuses unknown keys), an internal field, a key vLLM refuses, or a method
 *  name the release's SpeculativeMethod lacks (speculative_config.method);
 *  Unsupported naming the key for a value whose memory is not modelled. Returns the keys
 *  present that are accepted without a memory effect (no_memory ones, and keys an older vLLM
 *  dropped), for the plan's notes. */
std::vector<std::string> CheckSpeculativeConfigKeys(const JsonValue& config, std::string_view vllm_version);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_SPECULATIVE_CONFIG_KEYS_H_
