"""vllm_mem: GPU-memory sizing and profiling for LLM serving.

A drop-in for ``vllm.utils.mem_utils`` measured in C++, exact KV-cache sizing from a Hugging
Face ``config.json``, an offline start-up planner, and checks for multi-stage, multi-GPU plans.

Importing this package never loads or initialises CUDA: the driver is opened on first use.
"""

from __future__ import annotations

from . import _C

# Each area module lists its public names in __all__; the package re-exports all of them.
from .units import *  # noqa: F403
from .model_spec import *  # noqa: F403
from .kv_cache import *  # noqa: F403
from .approximations import *  # noqa: F403
from .mem_utils import *  # noqa: F403
from .sampler import *  # noqa: F403
from .worker_flow import *  # noqa: F403
from .catalog import *  # noqa: F403
from .planner import *  # noqa: F403
from .sweep import *  # noqa: F403
from .stages import *  # noqa: F403
from . import units, model_spec, kv_cache, approximations, mem_utils, sampler, worker_flow
from . import catalog, planner, sweep, stages

__version__: str = _C.__version__

__all__ = [
    "__version__",
    *units.__all__,
    *model_spec.__all__,
    *kv_cache.__all__,
    *approximations.__all__,
    *mem_utils.__all__,
    *sampler.__all__,
    *worker_flow.__all__,
    *catalog.__all__,
    *planner.__all__,
    *sweep.__all__,
    *stages.__all__,
]
