/*!
 * \file core/stages/stage_plans.cc
 * \brief Start-up plans of the stages of a checked config.
 */
#include "vllm_mem/stages/stage_plans.h"

#include <algorithm>
#include <limits>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/stages/stage_config.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

std::vector<StagePlanSummary> PlanStages(const StageCheckResult& check, const std::vector<StageModel>& models) {
  std::vector<StagePlanSummary> out;
  for (const StageModel& m : models) {
    const std::string name = "stage " + std::to_string(m.stage_id);
    const StageConfig* stage = nullptr;
    for (const auto& s : check.config.stages) {
      if (s.stage_id == m.stage_id) stage = &s;
    }
    if (stage == nullptr) throw InvalidArgument(name + " model", "no such stage in the config");
    if (stage->resident_devices.empty()) throw InvalidArgument(name + " model", "the stage runs on the CPU");

    StagePlanSummary row;
    row.stage_id = m.stage_id;
    row.model = m.name;
    row.total_bytes = std::numeric_limits<int64_t>::max();
    for (const auto& d : check.devices) {
      const auto& res = stage->resident_devices;
      if (std::find(res.begin(), res.end(), d.physical_id) == res.end()) continue;
      if (d.total_bytes < row.total_bytes) {
        row.total_bytes = d.total_bytes;
        row.physical_id = d.physical_id;
      }
    }
    row.free_bytes = row.total_bytes;
    for (const auto& p : check.startup) {
      if (p.stage_id == m.stage_id) row.free_bytes = std::min(row.free_bytes, p.free_bytes);
    }

    PlanInputs in;
    in.total_memory_bytes = row.total_bytes;
    in.free_memory_bytes = row.free_bytes;
    in.gpu_name = "GPU " + std::to_string(row.physical_id);
    in.gpu_memory_utilization = stage->gpu_memory_utilization;
    in.max_model_len = m.max_model_len != 0 ? m.max_model_len : stage->max_model_len;  // -1: auto-fit
    in.tensor_parallel_size = stage->tensor_parallel_size;
    in.pipeline_parallel_size = stage->pipeline_parallel_size;
    if (stage->max_num_seqs > 0) in.max_num_seqs = stage->max_num_seqs;
    if (stage->max_num_batched_tokens > 0) in.max_num_batched_tokens = stage->max_num_batched_tokens;
    in.enforce_eager = stage->enforce_eager;
    // The same weights as plan() for a spec read from its checkpoint's headers.
    in.checkpoint_weights_bytes = m.checkpoint_weights_bytes;
    const StartupPlan plan = EvaluatePlan(m.spec, in);

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
    row.line = name + " (" + (m.name.empty() ? "model" : m.name) + ", TP " + std::to_string(in.tensor_parallel_size) +
               (in.pipeline_parallel_size > 1 ? " PP " + std::to_string(in.pipeline_parallel_size) : "") + ", " +
               stage->utilization_text + " of GPU " + std::to_string(row.physical_id) + "): weights " +
               FormatGib(row.weights_bytes) + " GiB/GPU, non-KV " + FormatGib(row.non_kv_cache_bytes) + " GiB, KV " +
               FormatGib(row.available_kv_cache_bytes) + " GiB";
    if (row.fits) {
      row.line += " = " + FormatThousands(row.num_tokens) + " tokens, max concurrency " +
                  FormatFixed(row.max_concurrency, 2) + "x at " + std::to_string(row.max_model_len) + " tokens";
    } else {
      row.line += "; DOES NOT FIT at " + row.failure_phase + ", short by " + FormatGib(row.shortfall_bytes) +
                  " GiB: " + row.failure_message;
    }
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
    const StageConfig* stage = nullptr;
    for (const auto& s : check.config.stages) {
      if (s.stage_id == p.stage_id) stage = &s;
    }
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
