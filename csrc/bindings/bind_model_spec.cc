/*!
 * \file bindings/bind_model_spec.cc
 * \brief ModelSpec and its parts, read-only from Python.
 */
#include <pybind11/stl.h>

#include "bindings/bind.h"
#include "vllm_mem/model/model_family.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/vision_encoder.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindModelSpec(py::module_& m) {
  py::enum_<AttentionKind>(m, "AttentionKind")
      .value("FULL", AttentionKind::kFull)
      .value("SLIDING_WINDOW", AttentionKind::kSlidingWindow)
      .value("MLA", AttentionKind::kMla)
      .value("NONE", AttentionKind::kNone);

  py::class_<LayerSpec>(m, "LayerSpec")
      .def_readonly("attention", &LayerSpec::attention)
      .def_readonly("sliding_window_tokens", &LayerSpec::sliding_window_tokens)
      .def_readonly("moe", &LayerSpec::moe)
      .def_readonly("kv_shared", &LayerSpec::kv_shared);

  py::class_<MlaSpec>(m, "MlaSpec")
      .def_readonly("kv_lora_rank", &MlaSpec::kv_lora_rank)
      .def_readonly("q_lora_rank", &MlaSpec::q_lora_rank)
      .def_readonly("qk_nope_head_dim", &MlaSpec::qk_nope_head_dim)
      .def_readonly("qk_rope_head_dim", &MlaSpec::qk_rope_head_dim)
      .def_readonly("v_head_dim", &MlaSpec::v_head_dim)
      .def_readonly("index_n_heads", &MlaSpec::index_n_heads)
      .def_readonly("index_head_dim", &MlaSpec::index_head_dim)
      .def_readonly("index_topk", &MlaSpec::index_topk);

  py::class_<MoeSpec>(m, "MoeSpec")
      .def_readonly("num_experts", &MoeSpec::num_experts)
      .def_readonly("num_experts_per_token", &MoeSpec::num_experts_per_token)
      .def_readonly("expert_intermediate_size", &MoeSpec::expert_intermediate_size)
      .def_readonly("num_shared_experts", &MoeSpec::num_shared_experts)
      .def_readonly("shared_expert_intermediate_size", &MoeSpec::shared_expert_intermediate_size);

  py::class_<QuantizationSpec>(m, "QuantizationSpec")
      .def_readonly("method", &QuantizationSpec::method)
      .def_readonly("weight_bits", &QuantizationSpec::weight_bits)
      .def_readonly("group_size", &QuantizationSpec::group_size)
      .def_readonly("zero_point", &QuantizationSpec::zero_point)
      .def_readonly("nvfp4", &QuantizationSpec::nvfp4)
      .def_readonly("unquantized_modules", &QuantizationSpec::unquantized_modules);

  py::class_<VisionEncoderSpec>(m, "VisionEncoderSpec")
      .def_readonly("config_class", &VisionEncoderSpec::config_class)
      .def_property_readonly("encoder", [](const VisionEncoderSpec& v) { return VisionEncoderKindName(v.encoder); })
      .def_readonly("hidden_size", &VisionEncoderSpec::hidden_size)
      .def_readonly("intermediate_size", &VisionEncoderSpec::intermediate_size)
      .def_readonly("num_layers", &VisionEncoderSpec::num_layers)
      .def_readonly("loaded_layers", &VisionEncoderSpec::loaded_layers)
      .def_readonly("num_heads", &VisionEncoderSpec::num_heads)
      .def_readonly("patch_size", &VisionEncoderSpec::patch_size)
      .def_readonly("image_size", &VisionEncoderSpec::image_size)
      .def_readonly("text_hidden_size", &VisionEncoderSpec::text_hidden_size)
      .def_property_readonly("num_parameters", [](const VisionEncoderSpec& v) { return VisionEncoderParameters(v); });

  py::class_<ModelSpec>(m, "ModelSpec")
      .def_static(
          "from_json",
          [](std::string_view json_text, bool allow_unknown) {
            return ModelSpec::FromHfConfigText(json_text, ModelReadOptions{allow_unknown});
          },
          py::arg("json_text"), py::arg("allow_unknown") = false,
          "Parse the text of a Hugging Face config.json")
      .def_readonly("generic_estimate_reason", &ModelSpec::generic_estimate_reason)
      .def_readonly("caveats", &ModelSpec::caveats)
      .def_readonly("model_type", &ModelSpec::model_type)
      .def_readonly("architectures", &ModelSpec::architectures)
      .def_property_readonly("dtype", [](const ModelSpec& s) { return DTypeName(s.dtype); })
      .def_readonly("num_layers", &ModelSpec::num_layers)
      .def_readonly("hidden_size", &ModelSpec::hidden_size)
      .def_readonly("num_attention_heads", &ModelSpec::num_attention_heads)
      .def_readonly("num_kv_heads", &ModelSpec::num_kv_heads)
      .def_readonly("head_dim", &ModelSpec::head_dim)
      .def_readonly("intermediate_size", &ModelSpec::intermediate_size)
      .def_readonly("vocab_size", &ModelSpec::vocab_size)
      .def_readonly("max_position_embeddings", &ModelSpec::max_position_embeddings)
      .def_readonly("tie_word_embeddings", &ModelSpec::tie_word_embeddings)
      .def_readonly("mla", &ModelSpec::mla)
      .def_readonly("moe", &ModelSpec::moe)
      .def_readonly("quantization", &ModelSpec::quantization)
      .def_readonly("vision", &ModelSpec::vision)
      .def_readonly("layers", &ModelSpec::layers);

  m.def("supported_model_types", &SupportedModelTypes,
        "config.json model_types with exact sizing rules (model_families.json)");
}

}  // namespace vllm_mem::bindings
