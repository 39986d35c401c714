"""Several vLLM engines (vLLM-Omni stages) on shared GPUs.

Read a vLLM-Omni stage config (the old ``stage_args:`` list or the newer top-level ``stages:``
list), check per physical GPU that the resident stages' ``gpu_memory_utilization`` sum to at
most 1.0, predict vLLM's start-up check ("Free memory on device ... is less than desired GPU
memory utilization") stage by stage, and get the fixes made concrete for the config. The
memory-imbalance check across ranks (SGLang's) lives here too.

Everything is computed in C++ (``csrc/core/include/vllm_mem/stages/stage_config.h``,
``stage_check.h``, ``memory_imbalance.h``); this package loads YAML / JSON and shapes the
results. One module per responsibility:

- ``config``: reading stage files and dicts (:func:`load_stage_config`, bundled examples);
- ``devices``: the GPUs checked against (catalog names, totals, the visible devices);
- ``check``: the per-device check and start-up prediction (:func:`check_stages`);
- ``assignment``: choosing utilizations for stages that share GPUs (:func:`assign_utilizations`);
- ``ranks``: per-worker plans of one engine (:func:`plan_ranks`);
- ``imbalance``: SGLang's free-memory imbalance check over ranks.
"""

from __future__ import annotations

from .assignment import StageAssignmentRow, StageNeed, UtilizationAssignment, assign_utilizations
from .check import StageCheck, StageDeviceRow, StageStartup, check_stages
from .config import StageConfig, bundled_stage_examples, load_stage_config
from .imbalance import MemoryImbalance, check_memory_imbalance
from .ranks import RankPlanRow, RankPlans, plan_ranks

__all__ = [
    "StageConfig",
    "StageDeviceRow",
    "StageStartup",
    "StageCheck",
    "MemoryImbalance",
    "load_stage_config",
    "check_stages",
    "check_memory_imbalance",
    "bundled_stage_examples",
    "StageNeed",
    "StageAssignmentRow",
    "UtilizationAssignment",
    "assign_utilizations",
    "RankPlanRow",
    "RankPlans",
    "plan_ranks",
]
