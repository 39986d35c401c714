/*!
 * \file bindings/bind_settings.cc
 * \brief The request objects (KvCacheSettings, PlanRequest) as classes whose properties and
 *        keywords come from the settings table (plan_request.h), the table itself, and the one
 *        entrance of the KV functions and of the plan. Conversions only: every bound is the
 *        table's (ValidateSetting), every rule the core's.
 */
#include <pybind11/stl.h>

#include <functional>
#include <memory>
#include <string_view>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bindings/bind.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/plan/plan_request.h"
#include "vllm_mem/plan/release_resolution.h"
#include "vllm_mem/plan/sizing_cache.h"
#include "vllm_mem/plan/startup_plan.h"

namespace py = pybind11;

namespace vllm_mem::bindings {
namespace {

/*! vllm_mem.errors.InvalidArgumentTypeError naming the field, worded by the Python layer's one
 *  vocabulary (_validate.bad_type: "field: must be ...; got VALUE"). */
[[noreturn]] void RaiseType(const std::string& field, const std::string& expected, py::handle value) {
  py::object error = py::module_::import("vllm_mem._validate").attr("bad_type")(field, expected, value);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

bool IsNumpyBool(py::handle v) {
  const std::string_view name = Py_TYPE(v.ptr())->tp_name;
  return name == "numpy.bool_" || name == "numpy.bool";
}

/*! An integer: a Python int or anything with __index__ (NumPy's), never a bool or a float. */
bool IsExactInt(py::handle v) {
  if (PyBool_Check(v.ptr()) || IsNumpyBool(v)) return false;
  return PyLong_Check(v.ptr()) || (!PyFloat_Check(v.ptr()) && PyIndex_Check(v.ptr()));
}

int64_t ToInt(py::handle v, const SettingRow& row, const std::string& field) {
  if (!IsExactInt(v)) RaiseType(field, "an integer", v);
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) {  // quoted by its size, as _validate.show does: its digits could be millions
    const int64_t bits = index.attr("bit_length")().cast<int64_t>();
    throw InvalidArgument(field, "must be an integer in [" + std::to_string(int64_t(row.low)) + ", " +
                                     std::to_string(int64_t(row.high)) + "]; got an integer of " +
                                     std::to_string(bits) + " bits");
  }
  return x;
}

/*! One setting type between Python and C++: None is "unset" where the row allows it; every
 *  value set is checked against its row (ValidateSetting). To gives the C++ value its Python
 *  type through pybind11's casters, so the properties are typed in _C.pyi. */
template <typename T>
struct Setting;

/*! The row's word for vLLM's auto value ("auto", any case, as vLLM's parser reads it). */
bool IsAutoWord(py::handle v, const SettingRow& row) {
  if (row.auto_text[0] == '\0' || !PyUnicode_Check(v.ptr())) return false;
  return py::str(v).attr("strip")().attr("lower")().cast<std::string>() == row.auto_text;
}

template <>
struct Setting<int64_t> {
  static int64_t From(py::handle v, const SettingRow& row, const std::string& field) {
    if (v.is_none() && row.unset[0] != '\0') return row.unset_int;
    if (IsAutoWord(v, row)) return row.auto_int;
    const int64_t x = ToInt(v, row, field);
    ValidateExplicitSetting(row, x, field);
    return x;
  }
  static int64_t To(int64_t v) { return v; }
};

template <>
struct Setting<double> {
  static double From(py::handle v, const SettingRow& row, const std::string& field) {
    if (v.is_none() && row.unset[0] != '\0') return 0.0;
    if (!PyFloat_Check(v.ptr()) && !IsExactInt(v)) RaiseType(field, "a finite number", v);
    const double x = PyFloat_AsDouble(v.ptr());  // an int past a double's range raises OverflowError
    if (x == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw InvalidArgument(field, "must be a finite number, got an integer beyond a double's range");
    }
    ValidateExplicitSetting(row, x, field);
    return x;
  }
  static double To(double v) { return v; }
};

template <>
struct Setting<bool> {
  static bool From(py::handle v, const SettingRow& row, const std::string& field) {
    if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
    if (IsNumpyBool(v)) return PyObject_IsTrue(v.ptr()) == 1;
    RaiseType(field, "True or False (strings such as 'false' or '0' are not read as booleans)", v);
  }
  static bool To(bool v) { return v; }
};

template <>
struct Setting<std::optional<bool>> {
  static std::optional<bool> From(py::handle v, const SettingRow& row, const std::string& field) {
    if (v.is_none()) return std::nullopt;
    return Setting<bool>::From(v, row, field);
  }
  static std::optional<bool> To(std::optional<bool> v) { return v; }
};

template <>
struct Setting<std::string> {
  static std::string From(py::handle v, const SettingRow& row, const std::string& field) {
    if (v.is_none() && row.unset[0] != '\0') return "";
    if (!PyUnicode_Check(v.ptr())) RaiseType(field, "a string", v);
    std::string x = v.cast<std::string>();
    ValidateSetting(row, x, field);
    return x;
  }
  static const std::string& To(const std::string& v) { return v; }
};

template <>
struct Setting<CudagraphMode> {
  static CudagraphMode From(py::handle v, const SettingRow& row, const std::string& field) {
    if (!PyUnicode_Check(v.ptr())) RaiseType(field, "a str (one of " + row.choices + ")", v);
    return ParseCudagraphMode(v.cast<std::string>());  // case-insensitive, as vLLM's; refuses by field
  }
  static std::string To(CudagraphMode v) { return CudagraphModeName(v); }
};

template <>
struct Setting<std::vector<int64_t>> {
  static std::vector<int64_t> From(py::handle v, const SettingRow& row, const std::string& field) {
    if (v.is_none()) return {};
    if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) RaiseType(field, "a list of ints", v);
    const py::sequence items = py::reinterpret_borrow<py::sequence>(v);
    std::vector<int64_t> out;
    if (static_cast<int64_t>(items.size()) > row.max_items) {
      ValidateSetting(row, std::vector<int64_t>(static_cast<size_t>(row.max_items) + 1, 1), field);  // by count
    }
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      out.push_back(ToInt(items[i], row, field + "[" + std::to_string(i) + "]"));
    }
    ValidateSetting(row, out, field);
    return out;
  }
  static const std::vector<int64_t>& To(const std::vector<int64_t>& v) { return v; }
};

template <>
struct Setting<std::vector<std::string>> {
  /*! A list or tuple of str (a bare str is refused: vLLM's CacheConfig field is list[str]). */
  static std::vector<std::string> From(py::handle v, const SettingRow& row, const std::string& field) {
    if (v.is_none()) return {};
    if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) RaiseType(field, "a list of strings", v);
    const py::sequence items = py::reinterpret_borrow<py::sequence>(v);
    if (static_cast<int64_t>(items.size()) > row.max_items) {
      ValidateSetting(row, std::vector<std::string>(static_cast<size_t>(row.max_items) + 1), field);  // by count
    }
    std::vector<std::string> out;
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string item_field = field + "[" + std::to_string(i) + "]";
      if (!PyUnicode_Check(items[i].ptr())) RaiseType(item_field, "a string", items[i]);
      out.push_back(items[i].cast<std::string>());
    }
    ValidateSetting(row, out, field);
    return out;
  }
  static const std::vector<std::string>& To(const std::vector<std::string>& v) { return v; }
};

/*! The JSON text of a mapping row's value: a dict through Python's json.dumps (vLLM's flag takes the
 *  same JSON), a str as it is (the command line's spelling); the core reads it (mm_settings.h). */
std::string MappingText(py::handle v, const std::string& field, const char* expected) {
  if (PyUnicode_Check(v.ptr())) return v.cast<std::string>();
  if (!PyDict_Check(v.ptr())) RaiseType(field, expected, v);
  try {
    return py::module_::import("json").attr("dumps")(v, py::arg("allow_nan") = false).cast<std::string>();
  } catch (const py::error_already_set&) {  // a value JSON cannot hold (a set, NaN, an object)
    RaiseType(field, std::string(expected) + " of JSON values", v);
  }
}

py::object JsonToPython(const std::string& text) {
  if (text.empty()) return py::none();
  return py::module_::import("json").attr("loads")(text);
}

template <>
struct Setting<MmLimitPerPrompt> {
  static MmLimitPerPrompt From(py::handle v, const SettingRow& row, const std::string& field) {
    MmLimitPerPrompt limit;
    if (v.is_none()) return limit;
    if (IsExactInt(v)) {  // the planner's int form: N images, every other modality off
      limit.images = ToInt(v, row, field);
      ValidateExplicitSetting(row, limit.images, field);
      return limit;
    }
    const std::string text = MappingText(v, field, "an int or a mapping such as {\"image\": 2, \"video\": 0}");
    limit = ReadMmLimitPerPrompt(ParseJson(text, field), field);
    ValidateSetting(row, limit, field);
    return limit;
  }
  static py::object To(const MmLimitPerPrompt& v) {
    if (v.images >= 0) return py::int_(v.images);
    return JsonToPython(MmLimitPerPromptJson(v));
  }
};

template <>
struct Setting<MmProcessorKwargs> {
  static MmProcessorKwargs From(py::handle v, const SettingRow& row, const std::string& field) {
    if (v.is_none()) return {};
    const std::string text = MappingText(v, field, "a mapping such as {\"max_pixels\": 1003520}");
    MmProcessorKwargs k = ReadMmProcessorKwargs(ParseJson(text, field), field);
    if (k.IsSet()) k.text = text;  // {} is unset
    return k;
  }
  static py::object To(const MmProcessorKwargs& v) { return JsonToPython(v.text); }
};

/*! A setting's Python value: the caster's, or the object a mapping row already built. */
template <typename T>
py::object AsObject(const T& v) {
  return py::cast(v);
}
inline py::object AsObject(py::object v) { return v; }

/*! Keyword -> setter of one request class, built from the table once. */
/*! Looked up by a keyword's UTF-8 view, with no std::string built per keyword. */
struct KeywordHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename Request>
using Setters =
    std::unordered_map<std::string, std::function<void(Request&, py::handle)>, KeywordHash, std::equal_to<>>;

#define VLLM_MEM_SETTER(type, member, init, ...)                                                            \
  setters.emplace(#member, [row = FindSettingRow(#member), field = std::string(#member)](Request& r,      \
                                                                                         py::handle v) { \
    r.member = Setting<type>::From(v, *row, field);                                                         \
  });
#define VLLM_MEM_PROPERTY(type, member, init, ...)                                                               \
  cls.def_property(                                                                                               \
      #member, [](const Request& r) { return Setting<type>::To(r.member); },                                     \
      [row = FindSettingRow(#member)](Request& r, py::handle v) { r.member = Setting<type>::From(v, *row, row->name); }, \
      FindSettingRow(#member)->help);

template <typename Request>
const Setters<Request>& KvSetters() {
  static const Setters<Request> all = [] {
    Setters<Request> setters;
    VLLM_MEM_KV_CACHE_SETTINGS(VLLM_MEM_SETTER)
    return setters;
  }();
  return all;
}

const Setters<PlanRequest>& PlanSetters() {
  static const Setters<PlanRequest> all = [] {
    using Request = PlanRequest;
    Setters<Request> setters = KvSetters<Request>();
    VLLM_MEM_PLAN_SETTINGS(VLLM_MEM_SETTER)
    return setters;
  }();
  return all;
}

/*! Sets each keyword; an unknown one is a TypeError naming it and the closest known name. */
template <typename Request>
void SetKeywords(Request& r, const Setters<Request>& setters, const py::dict& kw, const char* cls_name) {
  for (auto item : kw) {
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_Check(item.first.ptr()) ? PyUnicode_AsUTF8AndSize(item.first.ptr(), &size) : nullptr;
    if (utf8 == nullptr) PyErr_Clear();  // not a str, or not encodable: the slow spelling below
    const std::string key = utf8 != nullptr ? std::string() : std::string(py::str(item.first));
    auto it = utf8 != nullptr ? setters.find(std::string_view(utf8, static_cast<size_t>(size))) : setters.find(key);
    if (it == setters.end()) {
      const std::string name = utf8 != nullptr ? std::string(utf8, static_cast<size_t>(size)) : key;
      const SettingRow* row = FindSettingRow(name);
      const std::string hint = row != nullptr ? " (a plan setting: PlanRequest takes it)"
                                              : " (did you mean '" + ClosestSettingName(name) + "'?)";
      // EchoValue quotes (and shortens) the name itself, as Python's own message quotes it once.
      throw py::type_error(std::string(cls_name) + "() got an unexpected keyword argument " + EchoValue(name) +
                           hint);
    }
    it->second(r, item.second);
  }
}

std::vector<int64_t> AvailableBytes(py::handle v) {
  static const SettingRow kRow{.name = "available_bytes", .kind = SettingKind::kInt, .low = 0,
                               .high = double(kMaxDeviceBytes), .why = "limits.h: 1 PiB"};
  const auto one = [](py::handle x, const std::string& field) {
    const int64_t b = ToInt(x, kRow, field);
    ValidateSetting(kRow, b, field);
    return b;
  };
  if (IsExactInt(v)) return {one(v, "available_bytes")};
  if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) {
    RaiseType("available_bytes", "an int or a non-empty list of ints (one per pipeline rank or per worker)", v);
  }
  const py::sequence items = py::reinterpret_borrow<py::sequence>(v);
  if (items.size() == 0 || static_cast<int64_t>(items.size()) > kMaxWorldSize) {
    throw InvalidArgument("available_bytes", "must hold 1 to " + std::to_string(kMaxWorldSize) +
                                                 " values (one per pipeline rank or per worker), got " +
                                                 std::to_string(items.size()));
  }
  std::vector<int64_t> out;
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) out.push_back(one(items[i], "available_bytes[" + std::to_string(i) + "]"));
  return out;
}

py::dict RowDict(const SettingRow& row, py::object default_value) {
  py::dict d;
  d["name"] = row.name;
  d["kind"] = SettingKindName(row.kind);
  d["low"] = row.low;
  d["high"] = row.high;
  d["low_exclusive"] = row.low_exclusive;
  d["choices"] = row.choices;
  d["max_items"] = row.max_items;
  d["unset"] = row.unset;
  d["auto_int"] = row.auto_int;
  d["auto_text"] = row.auto_text;
  d["why"] = row.why;
  d["flag"] = row.flag;
  d["help"] = row.help;
  d["kv"] = row.kv;
  d["default"] = std::move(default_value);
  return d;
}

template <typename Request, typename Class>
void BindRequest(Class& cls, const Setters<Request>& setters, const char* name) {
  cls.def(py::init([&setters, name](const py::kwargs& kw) {
            Request r;
            SetKeywords(r, setters, kw, name);
            return r;
          }),
          "Keywords as the table names them (plan_settings()); each checked against its row.")
      .def("replace", [&setters, name](const Request& self, const py::kwargs& kw) {
        Request r = self;
        SetKeywords(r, setters, kw, name);
        return r;
      }, "A copy with the given keywords changed (loops reuse one request).")
      .def("__copy__", [](const Request& self) { return Request(self); })
      .def("__deepcopy__", [](const Request& self, py::dict) { return Request(self); });
}

}  // namespace

void BindSettings(py::module_& m) {
  py::class_<KvCacheSettings> kv(m, "KvCacheSettings", "The KV-cache settings a user asks for (plan_request.h).");
  {
    using Request = KvCacheSettings;
    auto& cls = kv;
    VLLM_MEM_KV_CACHE_SETTINGS(VLLM_MEM_PROPERTY)
    BindRequest(kv, KvSetters<KvCacheSettings>(), "KvCacheSettings");
  }
  py::class_<PlanRequest, KvCacheSettings> plan(m, "PlanRequest",
                                                "Everything a user asks of a plan (plan_request.h).");
  {
    using Request = PlanRequest;
    auto& cls = plan;
    VLLM_MEM_PLAN_SETTINGS(VLLM_MEM_PROPERTY)
    BindRequest(plan, PlanSetters(), "PlanRequest");
  }

  m.def("plan_settings", [] {
    py::object plan_obj = py::cast(PlanRequest{});
    py::list out;
    for (const SettingRow& row : PlanSettingRows()) out.append(RowDict(row, plan_obj.attr(row.name)));
    return out;
  }, "The settings table: one dict per row (name, kind, bounds and why, unset, flag, help, default).");
  m.def("closest_setting_name", &ClosestSettingName, py::arg("name"));
  m.def("limits", [] {
    // limits.h and json.h by their Python names (kMaxNumSeqs -> MAX_NUM_SEQS): vllm_mem._limits.
    py::dict d;
    d["MAX_NUM_LAYERS"] = kMaxNumLayers;
    d["MAX_MODEL_LEN_TOKENS"] = kMaxModelLenTokens;
    d["MAX_TENSOR_PARALLEL_SIZE"] = kMaxTensorParallelSize;
    d["MAX_PIPELINE_PARALLEL_SIZE"] = kMaxPipelineParallelSize;
    d["MAX_WORLD_SIZE"] = kMaxWorldSize;
    d["MAX_NUM_SEQS"] = kMaxNumSeqs;
    d["MAX_NUM_BATCHED_TOKENS"] = kMaxNumBatchedTokens;
    d["MAX_CUDAGRAPH_CAPTURE_SIZE"] = kMaxCudagraphCaptureSize;
    d["MAX_CUDAGRAPH_CAPTURE_SIZES"] = kMaxCudagraphCaptureSizes;
    d["MAX_NUM_SPECULATIVE_TOKENS"] = kMaxNumSpeculativeTokens;
    d["MAX_DEVICE_BYTES"] = kMaxDeviceBytes;
    d["MAX_STAGES"] = kMaxStages;
    d["MAX_DEVICE_ID"] = kMaxDeviceId;
    d["MAX_DEVICES_PER_LIST"] = kMaxDevicesPerList;
    d["MAX_GPU_NAME_CHARS"] = kMaxGpuNameChars;
    d["MAX_ECHOED_CHARS"] = kMaxEchoedChars;
    d["JSON_MAX_BYTES"] = kJsonMaxBytes;
    d["JSON_MAX_DEPTH"] = kJsonMaxDepth;
    d["JSON_MAX_VALUES"] = kJsonMaxValues;
    return d;
  }, "The core's bounds (limits.h, json.h) by the names vllm_mem._limits gives them.");
  m.def("validate_setting", [](const std::string& name, py::handle value, const std::string& field) -> py::object {
    const SettingRow* row = FindSettingRow(name);
    if (row == nullptr) throw py::key_error("no setting named '" + EchoValue(name) + "'");
    const std::string& shown = field.empty() ? std::string(row->name) : field;
    PlanRequest r;
#define VLLM_MEM_CONVERT(type, field_name, init, ...) \
    if (name == #field_name) return AsObject(Setting<type>::To(Setting<type>::From(value, *row, shown)));
    VLLM_MEM_KV_CACHE_SETTINGS(VLLM_MEM_CONVERT)
    VLLM_MEM_PLAN_SETTINGS(VLLM_MEM_CONVERT)
#undef VLLM_MEM_CONVERT
    (void)r;
    return py::none();
  }, py::arg("name"), py::arg("value"), py::arg("field") = "",
     "One value checked and converted by its row of the table; None stays None where unset is allowed.");

  // ---- the KV functions' one entrance -----------------------------------------------------------
  m.def("kv_options_for_release", &KvOptionsForRelease, py::arg("settings"), py::arg("num_speculative_tokens") = 0);
  // The model's SizingCache remembers each request's options under its release (sizing_cache.h).
  m.def("kv_cache_capacity_for", [](const SizingCache& cache, py::handle available, const KvCacheSettings& settings,
                                    int64_t num_speculative_tokens) {
    return cache.KvCapacity(settings, num_speculative_tokens, AvailableBytes(available));
  }, py::arg("cache"), py::arg("available_bytes"), py::arg("settings"), py::arg("num_speculative_tokens") = 0);
  // kv_cache_capacity(spec, bytes, length, **keywords) on a loaded model: the keywords converted
  // by the table as KvCacheSettings(**keywords, max_model_len=length) converts them, with no
  // Python request object in between, so a call in a loop crosses once. An unset vllm_version
  // is installed_version (the installed vLLM's, "" for the newest profile).
  m.def("kv_cache_capacity_from_keywords", [](const SizingCache& cache, py::handle available, py::handle max_model_len,
                                              int64_t num_speculative_tokens, const std::string& installed_version,
                                              const py::dict& keywords) {
    static const auto& set_max_model_len = KvSetters<KvCacheSettings>().at("max_model_len");
    KvCacheSettings settings;
    SetKeywords(settings, KvSetters<KvCacheSettings>(), keywords, "KvCacheSettings");
    set_max_model_len(settings, max_model_len);
    if (settings.vllm_version.empty()) settings.vllm_version = installed_version;
    return cache.KvCapacity(settings, num_speculative_tokens, AvailableBytes(available));
  }, py::arg("cache"), py::arg("available_bytes"), py::arg("max_model_len"), py::arg("num_speculative_tokens"),
     py::arg("installed_version"), py::arg("keywords"));
  // A search's max_model_len auto is its bound: the model's derived maximum.
  m.def("estimate_max_model_len_for", [](const SizingCache& cache, py::handle available,
                                         const KvCacheSettings& settings) {
    KvCacheOptions options = *cache.KvOptions(settings, 0);
    BoundAutoMaxModelLen(cache.spec(), options);
    return EstimateMaxModelLen(cache.kv_layouts(), AvailableBytes(available), options);
  }, py::arg("cache"), py::arg("available_bytes"), py::arg("settings"));
  m.def("auto_fit_max_model_len_for", [](const SizingCache& cache, py::handle available,
                                         const KvCacheSettings& settings) {
    KvCacheOptions options = *cache.KvOptions(settings, 0);
    BoundAutoMaxModelLen(cache.spec(), options);
    return AutoFitMaxModelLen(cache.kv_layouts(), AvailableBytes(available), options);
  }, py::arg("cache"), py::arg("available_bytes"), py::arg("settings"));
  m.def("kv_cache_memory_shortfall_for", [](const SizingCache& cache, py::handle available,
                                            const KvCacheSettings& settings) {
    const std::shared_ptr<const KvCacheOptions> options = cache.KvOptions(settings, 0);  // the settings first, then the budgets
    return KvShortfallAutoFitted(cache.kv_layouts(), AvailableBytes(available), *options);
  }, py::arg("cache"), py::arg("available_bytes"), py::arg("settings"));

  // ---- the plan's one entrance ------------------------------------------------------------------
  py::class_<PlanInputs, PlanRequest>(m, "PlanInputs")
      .def(py::init<>())
      .def(py::init([](const PlanRequest& r) {
        PlanInputs in;
        static_cast<PlanRequest&>(in) = r;
        return in;
      }), py::arg("request"))
      .def_readwrite("gpu_name", &PlanInputs::gpu_name)
      .def_readwrite("total_memory_source", &PlanInputs::total_memory_source)
      .def_readwrite("checkpoint_weights_bytes", &PlanInputs::checkpoint_weights_bytes)
      .def_readwrite("speculative", &PlanInputs::speculative)
      .def_readwrite("vllm_version_source", &PlanInputs::vllm_version_source)
      .def_readwrite("vllm_engine", &PlanInputs::vllm_engine)
      .def_readwrite("allow_long_max_model_len", &PlanInputs::allow_long_max_model_len)
      .def_readonly("max_model_len_auto", &PlanInputs::max_model_len_auto)
      .def_readwrite("sampler_bytes_per_logit", &PlanInputs::sampler_bytes_per_logit)
      .def_readonly("resolved_vllm_version", &PlanInputs::resolved_vllm_version)
      .def_readonly("vllm_version_note", &PlanInputs::vllm_version_note)
      .def_readonly("model_runner", &PlanInputs::model_runner)
      .def_readonly("model_runner_note", &PlanInputs::model_runner_note)
      .def_readonly("hybrid_kv_cache_manager", &PlanInputs::hybrid_kv_cache_manager)
      .def_property_readonly("kv_log_format", [](const PlanInputs& p) { return static_cast<int>(p.kv_log_format); })
      .def_readonly("dtype_note", &PlanInputs::dtype_note)
      .def_readonly("sampler_programs_note", &PlanInputs::sampler_programs_note)
      .def_readonly("lora_note", &PlanInputs::lora_note)
      .def_readwrite("activation_constants", &PlanInputs::activation_constants)
      .def_readwrite("non_torch_constants", &PlanInputs::non_torch_constants)
      .def_readwrite("cudagraph_constants", &PlanInputs::cudagraph_constants)
      .def_readwrite("baseline_constants", &PlanInputs::baseline_constants);
  m.def("evaluate_request", [](const SizingCache& cache, const PlanRequest& request, int64_t total_memory_bytes,
                               const std::string& gpu_name, const std::string& vllm_version,
                               const std::string& vllm_version_source, bool allow_long_max_model_len) {
    // The GIL stays held: a plan takes a few microseconds, and releasing and re-taking it
    // would be a sizeable part of that.
    return OnHeap([&] {
      return EvaluateRequest(cache, request,
                             PlanEnvironment{total_memory_bytes, gpu_name, vllm_version, vllm_version_source,
                                             allow_long_max_model_len});
    });
  }, py::arg("cache"), py::arg("request"), py::arg("total_memory_bytes"), py::arg("gpu_name"),
     py::arg("vllm_version"), py::arg("vllm_version_source"), py::arg("allow_long_max_model_len"));
  // plan(spec, gpu, **keywords) on a loaded model with no release asked: the keywords converted by
  // the table as PlanRequest(**keywords) converts them, then evaluate_request, in one crossing.
  // The device is total_memory_bytes when given, else the catalog GPU the caller looked up
  // (gpu_total, gpu_name). None when neither or both are given: the caller's request path then
  // raises or names the device as it does.
  m.def("evaluate_keywords", [](const SizingCache& cache, const py::dict& keywords, bool gpu_given,
                                int64_t gpu_total, const std::string& gpu_name, const std::string& vllm_version,
                                const std::string& vllm_version_source, bool allow_long_max_model_len) -> py::object {
    PlanRequest request;
    SetKeywords(request, PlanSetters(), keywords, "PlanRequest");
    const bool total_given = request.total_memory_bytes > 0;
    if (total_given == gpu_given) return py::none();
    PlanEnvironment env{total_given ? request.total_memory_bytes : gpu_total, total_given ? "" : gpu_name,
                        vllm_version, vllm_version_source, allow_long_max_model_len};
    return py::cast(OnHeap([&] { return EvaluateRequest(cache, request, env); }));
  }, py::arg("cache"), py::arg("keywords"), py::arg("gpu_given"), py::arg("gpu_total"), py::arg("gpu_name"),
     py::arg("vllm_version"), py::arg("vllm_version_source"), py::arg("allow_long_max_model_len"));
}

}  // namespace vllm_mem::bindings
