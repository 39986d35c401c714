"""The names ``vllm_mem`` exports are a contract: moving code between modules (issue 14) must not
add, drop or rename one. The list below was captured before the stages/planner split."""

from __future__ import annotations

import vllm_mem

PUBLIC_NAMES = [
    "AvailableKvCacheMemory", "CudaGraphMemory", "DeviceMemoryProfiler", "FAILURE_PHASES", "GB_bytes",
    "GiB_bytes", "GpuInfo", "InvalidArgumentError", "InvalidArgumentTypeError", "KB_bytes", "KiB_bytes",
    "KvCacheCapacity", "KvCacheGroup",
    "KvCacheMemorySuggestion", "MB_bytes", "MemoryImbalance", "MemoryProfilingResult", "MemorySampler",
    "MemorySnapshot", "MemoryTimeline", "MiB_bytes", "ModelSpec", "NotModelledError", "PlanSuggestion",
    "ProcessMemory",
    "RankPlan", "RankPlanRow", "RankPlans", "StageAssignmentRow", "StageCheck", "StageConfig",
    "StageDeviceRow", "StageNeed", "StageStartup", "StartupLogExplanation", "StartupPlan", "TermComparison", "UtilizationAssignment",
    "VllmCommand", "VllmCommandPlan", "VllmPatch",
    "__version__",
    "allowed_kv_cache_dtypes", "assign_utilizations", "auto_fit_max_model_len", "bundled_model_configs",
    "bundled_stage_examples", "check_enough_kv_cache_memory", "check_memory_imbalance", "check_stages",
    "close_gpu_matches", "determine_available_kv_cache_memory", "device_processes",
    "estimate_max_model_len", "explain_startup_log", "format_gib", "format_gib_text", "format_mib", "get_cpu_memory", "get_max_shared_memory_bytes",
    "gpu_catalog", "kv_cache_capacity", "kv_cache_memory_shortfall", "load_stage_config", "lookup_gpu",
    "measure_cuda_graph_memory", "memory_profiling", "parse_size", "parse_vllm_args", "patch_vllm", "plan", "plan_from_vllm_args",
    "plan_ranks", "read_startup_log",
    "release_device_memory_under_pressure", "request_memory", "rule_of_thumb_activation_bytes",
    "rule_of_thumb_kv_cache_bytes", "rule_of_thumb_weight_bytes", "suggest_kv_cache_memory_bytes",
    "supported_model_types",
    "sweep", "torch_memory_stats",
    "vllm_versions",
]


def test_all_is_pinned() -> None:
    assert sorted(vllm_mem.__all__) == PUBLIC_NAMES
    assert len(set(vllm_mem.__all__)) == len(vllm_mem.__all__)


def test_every_name_resolves() -> None:
    missing = [name for name in PUBLIC_NAMES if not hasattr(vllm_mem, name)]
    assert missing == []


def test_functions_are_not_shadowed_by_their_modules() -> None:
    # vllm_mem.plan and vllm_mem.sweep are functions although modules of similar names exist.
    assert callable(vllm_mem.plan) and not isinstance(vllm_mem.plan, type(vllm_mem))
    assert callable(vllm_mem.sweep) and not isinstance(vllm_mem.sweep, type(vllm_mem))
