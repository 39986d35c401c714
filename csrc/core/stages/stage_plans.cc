/*!
 * \file core/stages/stage_plans.cc
 * \brief Start-up plans of the stages of a checked config.
 */
#include "vllm_mem/stages/stage_plans.h"

#include <algorithm>
#include <limits>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/stages/stage_config.h"

namespace vllm_mem {
namespace {

const StageConfig& FindStage(const StageCheckResult& check, int64_t stage_id) {
  for (const auto& s : check.config.stages) {
    if (s.stage_id == stage_id) return s;
  }
  throw InvalidArgument("stage " + std::to_string(stage_id) + " model", "no such stage in the config");
}

/*! The stage's smallest resident device (row.physical_id, row.total_bytes) and the least free
 *  memory predicted at its start on its devices; returns that device's name. */
std::string PlaceOnDevice(const StageCheckResult& check, const StageConfig& stage, StagePlanSummary& row) {
  std::string name;
  row.total_bytes = std::numeric_limits<int64_t>::max();
  for (const auto& d : check.devices) {
    const auto& res = stage.resident_devices;
    if (std::find(res.begin(), res.end(), d.physical_id) == res.end()) continue;
    if (d.total_bytes < row.total_bytes) {
      row.total_bytes = d.total_bytes;
      row.physical_id = d.physical_id;
      name = d.name;
    }
  }
  row.free_bytes = row.total_bytes;
  for (const auto& p : check.startup) {
    if (p.stage_id == stage.stage_id) row.free_bytes = std::min(row.free_bytes, p.free_bytes);
  }
  return name;
}

/*! plan()'s settings object for the stage (m.settings) with what the stage check decides set
 *  over it: the device, its free memory at the stage's start, and the stage config's own knobs. */
PlanInputs StageInputs(const StageModel& m, const StageConfig& stage, const StagePlanSummary& row,
                       const std::string& gpu_name) {
  PlanInputs in = m.settings;
  in.total_memory_bytes = row.total_bytes;
  in.free_memory_bytes = row.free_bytes;
  // The device's catalog (or live) name, as plan(gpu=...) has it: the release's scheduler
  // defaults, the sampler's SM count and dtype auto depend on the GPU.
  in.gpu_name = gpu_name.empty() ? "GPU " + std::to_string(row.physical_id) : gpu_name;
  in.gpu_memory_utilization = stage.gpu_memory_utilization;
  in.max_model_len = m.max_model_len != 0 ? m.max_model_len : stage.max_model_len;  // -1: auto-fit
  in.tensor_parallel_size = stage.tensor_parallel_size;
  in.pipeline_parallel_size = stage.pipeline_parallel_size;
  if (stage.max_num_seqs > 0) in.max_num_seqs = stage.max_num_seqs;
  if (stage.max_num_batched_tokens > 0) in.max_num_batched_tokens = stage.max_num_batched_tokens;
  in.enforce_eager = stage.enforce_eager;
  return in;
}

/*! EvaluatePlan, its refusals of the stage's settings naming the stage ("stages[0] (stage 0)
 *  kv_cache_dtype: ..."), so a config of several stages says whose setting is at fault. */
StartupPlan EvaluateStagePlan(const ModelSpec& spec, const PlanInputs& in, const StageConfig& stage) {
  const std::string label = stage.source + " (" + stage.Label() + ")";
  try {
    return EvaluatePlan(spec, in);
  } catch (const InvalidArgument& e) {
    const std::string text = e.what();
    throw InvalidArgument(label + " " + e.field(), text.substr(std::min(text.size(), e.field().size() + 2)));
  } catch (const Unsupported& e) {
    throw Unsupported(label + ": " + e.what());
  }
}

void Summarise(const StartupPlan& plan, StagePlanSummary& row) {
  row.max_model_len = plan.inputs.max_model_len;
  row.fits = plan.fits;
  row.failure_phase = FailurePhaseName(plan.failure_phase);
  row.failure_message = plan.failure_message;
  row.shortfall_bytes = plan.shortfall_bytes;
  row.requested_bytes = plan.requested_bytes;
  row.weights_bytes = plan.weights_bytes;
  row.non_kv_cache_bytes = plan.non_kv_cache_bytes;
  row.available_kv_cache_bytes = plan.available_kv_cache_bytes;
  if (plan.kv_cache.has_value()) {
    row.num_blocks = plan.kv_cache->num_blocks;
    row.num_tokens = plan.kv_cache->num_tokens;
    row.max_concurrency = plan.kv_cache->max_concurrency;
  }
}

std::string SummaryLine(const StagePlanSummary& row, const StageConfig& stage, const PlanInputs& in) {
  std::string line = stage.Label() + " (" + (row.model.empty() ? "model" : row.model) + ", TP " +
                     std::to_string(in.tensor_parallel_size) +
                     (in.pipeline_parallel_size > 1 ? " PP " + std::to_string(in.pipeline_parallel_size) : "") + ", " +
                     stage.utilization_text + " of GPU " + std::to_string(row.physical_id) + "): weights " +
                     FormatGib(row.weights_bytes) + " GiB/GPU, non-KV " + FormatGib(row.non_kv_cache_bytes) +
                     " GiB, KV " + FormatGib(row.available_kv_cache_bytes) + " GiB";
  if (row.fits) {
    return line + " = " + FormatThousands(row.num_tokens) + " tokens, max concurrency " +
           FormatFixed(row.max_concurrency, 2) + "x at " + std::to_string(row.max_model_len) + " tokens";
  }
  return line + "; DOES NOT FIT at " + row.failure_phase + ", short by " + FormatGib(row.shortfall_bytes) +
         " GiB: " + row.failure_message;
}

}  // namespace

std::vector<StagePlanSummary> PlanStages(const StageCheckResult& check, const std::vector<StageModel>& models) {
  std::vector<StagePlanSummary> out;
  for (const StageModel& m : models) {
    const StageConfig& stage = FindStage(check, m.stage_id);
    if (stage.resident_devices.empty()) throw InvalidArgument(stage.Label() + " model", "the stage runs on the CPU");
    StagePlanSummary row;
    row.stage_id = m.stage_id;
    row.model = m.name;
    const std::string gpu_name = PlaceOnDevice(check, stage, row);
    const PlanInputs in = StageInputs(m, stage, row, gpu_name);
    Summarise(EvaluateStagePlan(m.spec, in, stage), row);
    row.line = SummaryLine(row, stage, in);
    out.push_back(row);
  }
  return out;
}

std::vector<StagePlanSummary> AddStagePlans(StageCheckResult& check, const std::vector<StageModel>& models) {
  std::vector<StagePlanSummary> plans = PlanStages(check, models);
  for (const auto& p : plans) {
    check.plan_lines.push_back(p.line);
    if (p.fits) continue;
    check.problems.push_back(p.line);
    check.ok = false;
    if (p.failure_phase == "free_memory" || p.shortfall_bytes <= 0) continue;  // the start-up fixes cover it
    // The utilization (a multiple of 0.01) whose budget covers the shortfall, if the stage's
    // devices leave room for it.
    const StageConfig* stage = &FindStage(check, p.stage_id);
    const int64_t needed = p.requested_bytes + p.shortfall_bytes;
    int64_t u = stage->utilization_ppm;
    while (u < 1'000'000 && RequestedMemoryBytes(p.total_bytes, static_cast<double>(u) / 1e6) < needed) {
      u = (u / 10'000 + 1) * 10'000;
    }
    int64_t limit = 1'000'000;
    for (const auto& l : check.limits) {
      if (l.stage_id == p.stage_id) limit = l.max_utilization_ppm;
    }
    const std::string label = "stage " + std::to_string(p.stage_id);
    if (RequestedMemoryBytes(p.total_bytes, static_cast<double>(u) / 1e6) >= needed && u <= limit) {
      check.suggestions.push_back("raise " + label + "'s " + stage->utilization_field + " from " +
                                  stage->utilization_text + " to " + FormatUtilizationPpm(u) + " (its plan is " +
                                  FormatGib(p.shortfall_bytes) + " GiB short)");
    } else {
      check.suggestions.push_back(label + " needs " + FormatGib(p.shortfall_bytes) +
                                  " GiB more than its devices leave it: lower its max_model_len or "
                                  "max_num_batched_tokens, quantize it, or give it a GPU of its own");
    }
  }
  return plans;
}

}  // namespace vllm_mem
