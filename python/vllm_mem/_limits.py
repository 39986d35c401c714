"""Upper bounds on every count and size the Python layer accepts, checked before any work.

The serving figures are the C++ core's own (``csrc/core/include/vllm_mem/base/limits.h`` and
``json.h``), read from ``_C.limits()`` under the same names in upper snake case without the
``k`` prefix: there is no second copy to drift. The settings' bounds themselves are rows of the
settings table (``_C.plan_settings()``, ``csrc/core/include/vllm_mem/plan/plan_request.h``).
Each is about 100x beyond the largest real model or deployment; ``docs/errors.md`` gives the
reasons.

The file and text caps below are the Python layer's own: the core never sees a path.
"""

from __future__ import annotations

from ._C import limits as _core_limits

_CORE: dict[str, int] = _core_limits()

# ---- model dimensions, serving settings and JSON text (limits.h, json.h) -----------------------
MAX_NUM_LAYERS: int = _CORE["MAX_NUM_LAYERS"]
MAX_MODEL_LEN_TOKENS: int = _CORE["MAX_MODEL_LEN_TOKENS"]
MAX_TENSOR_PARALLEL_SIZE: int = _CORE["MAX_TENSOR_PARALLEL_SIZE"]
MAX_PIPELINE_PARALLEL_SIZE: int = _CORE["MAX_PIPELINE_PARALLEL_SIZE"]
MAX_WORLD_SIZE: int = _CORE["MAX_WORLD_SIZE"]
MAX_NUM_SEQS: int = _CORE["MAX_NUM_SEQS"]
MAX_NUM_BATCHED_TOKENS: int = _CORE["MAX_NUM_BATCHED_TOKENS"]
MAX_CUDAGRAPH_CAPTURE_SIZE: int = _CORE["MAX_CUDAGRAPH_CAPTURE_SIZE"]
MAX_CUDAGRAPH_CAPTURE_SIZES: int = _CORE["MAX_CUDAGRAPH_CAPTURE_SIZES"]
MAX_NUM_SPECULATIVE_TOKENS: int = _CORE["MAX_NUM_SPECULATIVE_TOKENS"]
MAX_DEVICE_BYTES: int = _CORE["MAX_DEVICE_BYTES"]
MAX_STAGES: int = _CORE["MAX_STAGES"]
MAX_DEVICE_ID: int = _CORE["MAX_DEVICE_ID"]
MAX_DEVICES_PER_LIST: int = _CORE["MAX_DEVICES_PER_LIST"]
MAX_GPU_NAME_CHARS: int = _CORE["MAX_GPU_NAME_CHARS"]
MAX_ECHOED_CHARS: int = _CORE["MAX_ECHOED_CHARS"]
JSON_MAX_BYTES: int = _CORE["JSON_MAX_BYTES"]
JSON_MAX_DEPTH: int = _CORE["JSON_MAX_DEPTH"]
JSON_MAX_VALUES: int = _CORE["JSON_MAX_VALUES"]

# ---- the Python layer's own ------------------------------------------------------------------
#: A config.json file: the core reads at most JSON_MAX_BYTES of JSON; a larger file is refused
#: from its size, before it is read.
MAX_CONFIG_FILE_BYTES = JSON_MAX_BYTES
#: A stage YAML/JSON file: real vLLM-Omni configs are a few KiB. PyYAML builds Python objects
#: per event and per node (~10-20 us each even with libyaml), so this and the node bound below
#: keep a load, or a refusal, within a fraction of a second.
MAX_STAGE_FILE_BYTES = 64 << 10
#: Nesting of a stage document: real ones nest 4-6 deep. PyYAML's pure-Python composer recurses
#: per level, so this also keeps it far from Python's recursion limit.
MAX_STAGE_DEPTH = 64
#: Values of a stage document after aliases are expanded (an alias bomb expands a few hundred
#: bytes into billions of values); real configs hold ~100, so this is ~80x beyond them.
MAX_STAGE_NODES = 1 << 13
#: Characters of scalars after aliases are expanded (the JSON text handed to the core).
MAX_STAGE_EXPANDED_CHARS = 4 * MAX_STAGE_FILE_BYTES
#: A path: Linux's PATH_MAX (4096 bytes) and NAME_MAX (255 bytes per component).
MAX_PATH_BYTES = 4096
MAX_PATH_COMPONENT_BYTES = 255
#: Other names typed by a user (dtype, quantization, KV dtype, cudagraph mode, model names).
MAX_NAME_CHARS = 256
#: Rows of a sweep (the cross product of its axes), bounded before any row is evaluated: the
#: core plans millions of rows a second, but each row becomes ~30 NumPy columns (~250 bytes), so
#: this keeps the result near 256 MiB.
MAX_SWEEP_ROWS = 1 << 20
#: Items of a list argument that is not a device list (available bytes per worker, free bytes
#: per rank, stage needs): bounded by the workers of one engine.
MAX_LIST_ITEMS = MAX_WORLD_SIZE
#: An error message, whatever it quotes (issue 10).
MAX_MESSAGE_CHARS = 300
#: Checkpoint tensors read from safetensors headers (hub.py; Python-only, the core never sees
#: them): DeepSeek-V3 has ~91k tensors (FP8 weights and their scales); a header listing more is
#: refused before it is summed.
MAX_CHECKPOINT_TENSORS = 1 << 22
#: ``vllm-mem models``: directory entries and seconds a scan of the Hugging Face cache may take
#: (cli/models.py). A cache holding a few hundred models has a few thousand entries there (refs
#: and snapshot folders; blobs are never listed); past either bound the scan stops with a warning.
MAX_CACHE_SCAN_ENTRIES = 1 << 17
MAX_CACHE_SCAN_SECONDS = 10.0
