"""vllm_mem: GPU-memory sizing and profiling for LLM serving.

A drop-in for ``vllm.utils.mem_utils`` measured in C++, exact KV-cache sizing from a Hugging
Face ``config.json``, an offline start-up planner, and checks for multi-stage, multi-GPU plans.

Importing this package never loads or initialises CUDA (the driver is opened on first use), and
loads neither NumPy nor PyYAML: vLLM imports it in every worker, so ``import vllm_mem`` costs
the extension module and this file. Each public name is imported from its area module on first
use (PEP 562); ``_EXPORTS`` is the manifest, checked against each module's ``__all__`` by
tests/python/test_public_names.py.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from . import _C

__version__: str = _C.__version__

# Area module -> the public names it defines, in the order the package lists them.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "errors": ("InvalidArgumentError", "InvalidArgumentTypeError", "NotModelledError"),
    "units": ("GB_bytes", "GiB_bytes", "KB_bytes", "KiB_bytes", "MB_bytes", "MiB_bytes", "format_gib",
              "format_gib_text", "format_mib", "parse_size"),
    "model_spec": ("ModelSpec", "bundled_model_configs", "supported_model_types"),
    "kv_cache": ("KvCacheCapacity", "KvCacheGroup", "allowed_kv_cache_dtypes", "auto_fit_max_model_len",
                 "check_enough_kv_cache_memory", "estimate_max_model_len", "kv_cache_capacity",
                 "kv_cache_memory_shortfall"),
    "approximations": ("rule_of_thumb_activation_bytes", "rule_of_thumb_kv_cache_bytes",
                       "rule_of_thumb_weight_bytes"),
    "mem_utils": ("DeviceMemoryProfiler", "MemoryProfilingResult", "MemorySnapshot", "get_cpu_memory",
                  "get_max_shared_memory_bytes", "memory_profiling", "release_device_memory_under_pressure",
                  "torch_memory_stats"),
    "sampler": ("MemorySampler", "MemoryTimeline"),
    "startup_log": ("StartupLogExplanation", "TermComparison", "explain_startup_log", "read_startup_log"),
    "vllm_args": ("VllmCommand", "VllmCommandPlan", "parse_vllm_args", "plan_from_vllm_args"),
    "vllm_patch": ("VllmPatch", "patch_vllm"),
    "worker_flow": ("AvailableKvCacheMemory", "CudaGraphMemory", "KvCacheMemorySuggestion", "ProcessMemory",
                    "determine_available_kv_cache_memory", "device_processes", "measure_cuda_graph_memory",
                    "request_memory", "suggest_kv_cache_memory_bytes"),
    "catalog": ("GpuInfo", "close_gpu_matches", "gpu_catalog", "lookup_gpu"),
    "planner": ("FAILURE_PHASES", "PlanSuggestion", "RankPlan", "StartupPlan", "plan", "vllm_versions"),
    "plan_sweep": ("sweep",),
    "stages": ("MemoryImbalance", "RankPlanRow", "RankPlans", "StageAssignmentRow", "StageCheck",
               "StageConfig", "StageDeviceRow", "StageNeed", "StageStartup", "UtilizationAssignment",
               "assign_utilizations", "bundled_stage_examples", "check_memory_imbalance", "check_stages",
               "load_stage_config", "plan_ranks"),
}
_MODULE_OF: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["__version__", *_MODULE_OF]

if TYPE_CHECKING:  # type checkers and IDEs see every name with its real type
    from .approximations import *  # noqa: F403
    from .catalog import *  # noqa: F403
    from .errors import *  # noqa: F403
    from .kv_cache import *  # noqa: F403
    from .mem_utils import *  # noqa: F403
    from .model_spec import *  # noqa: F403
    from .plan_sweep import *  # noqa: F403
    from .planner import *  # noqa: F403
    from .sampler import *  # noqa: F403
    from .stages import *  # noqa: F403
    from .startup_log import *  # noqa: F403
    from .units import *  # noqa: F403
    from .vllm_args import *  # noqa: F403
    from .vllm_patch import *  # noqa: F403
    from .worker_flow import *  # noqa: F403


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # later look-ups are plain attribute reads
        return value
    # vllm_mem.stages, vllm_mem.testing, ...: a submodule, imported on first use as before.
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
