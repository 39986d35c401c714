"""The offline start-up plan: how vLLM will spend GPU memory, and what to change if it does not fit.

Every number comes from the C++ core (``csrc/core/plan/startup_plan.cc`` and the estimators it
uses); this package converts arguments and presents results:

- ``inputs``: the keywords checked and converted to the core's ``PlanInputs``;
- ``evaluate``: :func:`plan`, the call;
- ``result``: :class:`StartupPlan` (figures, verdict, levers), :class:`PlanSuggestion`,
  :class:`RankPlan`;
- ``render``: the text report, plain data (``to_dict``) and notebook HTML;
- ``versions``: which vLLM release a plan is for (:func:`vllm_versions` lists them).

Examples
--------
>>> import vllm_mem
>>> p = vllm_mem.plan("meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", max_model_len=8192)
>>> p.fits, p.failure_phase
(True, None)
"""

from __future__ import annotations

from .evaluate import plan
from .result import FAILURE_PHASES, PlanSuggestion, RankPlan, StartupPlan
from .versions import vllm_versions

__all__ = ["FAILURE_PHASES", "PlanSuggestion", "RankPlan", "StartupPlan", "plan", "vllm_versions"]
