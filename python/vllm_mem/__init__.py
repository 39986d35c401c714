"""vllm_mem: GPU-memory sizing and profiling for LLM serving.

A drop-in for ``vllm.utils.mem_utils`` measured in C++, exact KV-cache sizing from a Hugging
Face ``config.json``, an offline start-up planner, and checks for multi-stage, multi-GPU plans.

Importing this package never loads or initialises CUDA: the driver is opened on first use.
"""

from __future__ import annotations

import importlib

from . import _C
from .approximations import *  # noqa: F403
from .catalog import *  # noqa: F403
from .kv_cache import *  # noqa: F403
from .mem_utils import *  # noqa: F403
from .model_spec import *  # noqa: F403
from .planner import *  # noqa: F403
from .sampler import *  # noqa: F403
from .stages import *  # noqa: F403
from .sweep import *  # noqa: F403

# Each area module lists its public names in __all__; the package re-exports all of them.
from .units import *  # noqa: F403
from .worker_flow import *  # noqa: F403

__version__: str = _C.__version__

# The area modules, fetched by name: "from . import sweep" would hand back vllm_mem.sweep, which
# the star import above has already rebound to the function of the same name.
_AREA_MODULES = ("units", "model_spec", "kv_cache", "approximations", "mem_utils", "sampler",
                 "worker_flow", "catalog", "planner", "sweep", "stages")


def _public_names() -> list[str]:
    names: list[str] = ["__version__"]
    for area in _AREA_MODULES:
        module = importlib.import_module(f"{__name__}.{area}")
        names.extend(name for name in module.__all__ if name not in names)
    return names


__all__ = _public_names()
