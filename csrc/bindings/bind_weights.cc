/*!
 * \file bindings/bind_weights.cc
 * \brief Parameter counts, weight bytes per GPU and the guide's rules of thumb. Conversions
 *        only: every number is computed in core/model/weights.cc and core/model/approximations.cc.
 */
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings/bind.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/model/approximations.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/sizing_cache.h"

namespace py = pybind11;

namespace vllm_mem::bindings {
namespace {

WeightOptions MakeOptions(const std::string& dtype, const std::optional<std::string>& quantization,
                          int64_t tp, int64_t pp, const std::string& mxfp4_backend,
                          const std::string& mp_linear_kernel) {
  WeightOptions o;
  o.dtype = dtype;
  o.quantization = quantization.value_or("");
  o.tensor_parallel_size = tp;
  o.pipeline_parallel_size = pp;
  o.mxfp4_backend = mxfp4_backend;
  o.mp_linear_kernel = mp_linear_kernel;
  return o;
}

py::dict RankToDict(const RankWeights& r) {
  py::dict d;
  d["pp_rank"] = r.pp_rank;
  d["first_layer"] = r.first_layer;
  d["end_layer"] = r.end_layer;
  d["embedding_bytes"] = r.embedding_bytes;
  d["lm_head_bytes"] = r.lm_head_bytes;
  d["attention_bytes"] = r.attention_bytes;
  d["mlp_bytes"] = r.mlp_bytes;
  d["norm_bytes"] = r.norm_bytes;
  d["quantization_overhead_bytes"] = r.quantization_overhead_bytes;
  d["buffer_bytes"] = r.buffer_bytes;
  d["kernel_layout_bytes"] = r.kernel_layout_bytes;
  d["vision_encoder_bytes"] = r.vision_encoder_bytes;
  d["audio_encoder_bytes"] = r.audio_encoder_bytes;
  d["total_bytes"] = r.total_bytes;
  return d;
}

py::dict BreakdownToDict(const WeightBreakdown& b) {
  py::dict d;
  d["num_parameters"] = b.num_parameters;
  d["vision_encoder_parameters"] = b.vision_encoder_parameters;
  d["audio_encoder_parameters"] = b.audio_encoder_parameters;
  d["dtype"] = b.dtype;
  d["quantization"] = b.quantization.empty() ? py::object(py::none()) : py::object(py::str(b.quantization));
  d["fullest_rank_bytes"] = b.fullest_rank_bytes;
  d["fullest_pp_rank"] = b.fullest_pp_rank;
  py::list ranks;
  for (const RankWeights& r : b.per_pp_rank) ranks.append(RankToDict(r));
  d["per_pp_rank"] = ranks;
  return d;
}

}  // namespace

void BindWeights(py::module_& m) {
  m.def("num_parameters", &NumParameters, py::arg("spec"),
        "Parameter count of the checkpoint (tied embeddings counted once, a multimodal checkpoint's vision "
        "tower and projector included)");
  m.def(
      "weight_bytes",
      [](const ModelSpec& spec, const std::string& dtype, const std::optional<std::string>& quantization,
         int64_t tp, int64_t pp, const std::string& mxfp4_backend, const std::string& mp_linear_kernel) {
        return WeightBytes(spec, MakeOptions(dtype, quantization, tp, pp, mxfp4_backend, mp_linear_kernel));
      },
      py::arg("spec"), py::arg("dtype") = "auto", py::arg("quantization") = py::none(),
      py::arg("tensor_parallel_size") = 1, py::arg("pipeline_parallel_size") = 1, py::arg("mxfp4_backend") = "triton",
      py::arg("mp_linear_kernel") = "", "Weight bytes of the fullest GPU (vLLM's 'Model loading took')");
  // ModelSpec.weight_bytes(): the model's SizingCache remembers the breakdown per weight settings.
  m.def(
      "weight_bytes_for",
      [](const SizingCache& cache, const std::string& dtype, const std::optional<std::string>& quantization,
         int64_t tp, int64_t pp, const std::string& mxfp4_backend, const std::string& mp_linear_kernel) {
        const WeightOptions o = MakeOptions(dtype, quantization, tp, pp, mxfp4_backend, mp_linear_kernel);
        return cache.Weights(o)->fullest_rank_bytes;
      },
      py::arg("cache"), py::arg("dtype"), py::arg("quantization"), py::arg("tensor_parallel_size"),
      py::arg("pipeline_parallel_size"), py::arg("mxfp4_backend"), py::arg("mp_linear_kernel"),
      "weight_bytes on the model's SizingCache (each weight setting computed once)");
  m.def(
      "weight_breakdown",
      [](const ModelSpec& spec, const std::string& dtype, const std::optional<std::string>& quantization,
         int64_t tp, int64_t pp, const std::string& mxfp4_backend, const std::string& mp_linear_kernel) {
        const WeightOptions o = MakeOptions(dtype, quantization, tp, pp, mxfp4_backend, mp_linear_kernel);
        return BreakdownToDict(ComputeWeights(spec, o));
      },
      py::arg("spec"), py::arg("dtype") = "auto", py::arg("quantization") = py::none(),
      py::arg("tensor_parallel_size") = 1, py::arg("pipeline_parallel_size") = 1, py::arg("mxfp4_backend") = "triton",
      py::arg("mp_linear_kernel") = "", "Weight bytes per component and per pipeline rank");

  m.def("rule_of_thumb_kv_cache_bytes",
        py::overload_cast<const ModelSpec&, int64_t, int64_t, std::string_view>(&RuleOfThumbKvCacheBytes),
        py::arg("spec"), py::arg("batch_size"), py::arg("seq_len"), py::arg("dtype") = "auto");
  m.def("rule_of_thumb_weight_bytes",
        py::overload_cast<const ModelSpec&, std::string_view>(&RuleOfThumbWeightBytes), py::arg("spec"),
        py::arg("dtype") = "auto");
  m.def(
      "rule_of_thumb_activation_bytes",
      [](int64_t weight_bytes) {
        const ActivationRange r = RuleOfThumbActivationBytes(weight_bytes);
        return py::make_tuple(r.low_bytes, r.high_bytes);
      },
      py::arg("weight_bytes"));
}

}  // namespace vllm_mem::bindings
