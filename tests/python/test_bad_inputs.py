"""A catalogue of bad inputs (issue 10): one case per class of bad value and per entry point.

Every case asserts the exact exception type (``ValueError`` for a value of the right kind that
is not allowed, ``TypeError`` for the wrong kind), that the message names the field the caller
typed, that it is at most 300 characters, and that it does not echo a huge value back. CLI
cases (in ``test_bad_inputs_cli.py``) assert exit 2, one stderr line and no traceback.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import _limits as L
from vllm_mem.errors import InvalidArgumentError, InvalidArgumentTypeError
from vllm_mem.testing import SimulatedDevice

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GIB = 1 << 30
HUGE_TEXT = "x" * (1 << 20)  # 1 MiB: must never come back in a message
BIG_INT = 10**400  # beyond a double; str() of it is refused above 4300 digits


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[], Any]
    exc: type[Exception]
    field: str


#: The typed error each built-in kind arrives as (vllm_mem.errors): still that built-in type for
#: callers that catch it, and carrying the field.
TYPED = {TypeError: InvalidArgumentTypeError, ValueError: InvalidArgumentError}


def check(case: Case) -> str:
    with pytest.raises(Exception) as info:
        case.call()
    error = info.value
    assert isinstance(error, case.exc), f"{type(error).__name__}: {error}"
    # Exactly the typed kind: a TypeError case must not arrive as a plain ValueError and back.
    # (vLLM's own refusals, worded as vLLM words them, stay plain ValueErrors.)
    if isinstance(error, InvalidArgumentError):
        assert type(error) is TYPED[case.exc], f"{type(error).__name__}: {error}"
        # case.field is a word the message must hold (sometimes not the field itself); the
        # typed error's own field is the head of the message.
        assert error.field and str(error).startswith(error.field[:40]), (error.field, str(error))
    else:
        assert type(error) is case.exc, f"{type(error).__name__}: {error}"
    text = str(error)
    assert case.field in text, text
    assert len(text) <= L.MAX_MESSAGE_CHARS, text
    assert "\n" not in text
    return text


# --- the classes of bad values ------------------------------------------------------------------

#: (id, value, exception) for a field that takes a positive integer (count, length, size).
BAD_COUNTS: list[tuple[str, Any, type[Exception]]] = [
    ("str", "8192", TypeError),
    ("bool", True, TypeError),
    ("float", 8192.0, TypeError),
    ("none", None, TypeError),
    ("list", [8192], TypeError),
    ("zero", 0, ValueError),
    ("negative", -1, ValueError),
    ("2**63", 2**63, ValueError),
    ("2**64", 2**64, ValueError),
    ("huge", BIG_INT, ValueError),
]
#: For an optional count (None means "default"), the same less None.
BAD_OPTIONAL_COUNTS = [c for c in BAD_COUNTS if c[0] != "none"]


def _bad_for(field: str, cases: list[tuple[str, Any, type[Exception]]]) -> list[tuple[str, Any, type[Exception]]]:
    """max_model_len -1 is vLLM's --max-model-len auto (from 0.14): its negative case is -2."""
    if field != "max_model_len":
        return cases
    return [(t, -2 if t == "negative" else v, e) for t, v, e in cases]


#: For a fraction in (0, 1].
BAD_FRACTIONS: list[tuple[str, Any, type[Exception]]] = [
    ("nan", math.nan, ValueError),
    ("inf", math.inf, ValueError),
    ("-inf", -math.inf, ValueError),
    ("zero", 0.0, ValueError),
    ("above_one", 1.5, ValueError),
    ("negative", -0.5, ValueError),
    ("str", "0.9", TypeError),
    ("bool", True, TypeError),
    ("none", None, TypeError),
    ("huge_int", BIG_INT, ValueError),
]

#: For a name (dtype, KV dtype, GPU): None where a name is required, other kinds, huge strings.
BAD_NAMES: list[tuple[str, Any, type[Exception]]] = [
    ("none", None, TypeError),
    ("int", 3, TypeError),
    ("bytes", b"auto", TypeError),
    ("huge", HUGE_TEXT, ValueError),
    ("nul", "au\x00to", ValueError),
]

#: For a boolean: strings and numbers are not booleans ("false" is truthy in Python).
BAD_FLAGS: list[tuple[str, Any, type[Exception]]] = [
    ("str_false", "false", TypeError),
    ("str_0", "0", TypeError),
    ("int_0", 0, TypeError),
    ("none", None, TypeError),
]

#: For a byte size (>= 0).
BAD_SIZES: list[tuple[str, Any, type[Exception]]] = [
    ("str", "10", TypeError),
    ("float", 1.5 * GIB, TypeError),
    ("bool", True, TypeError),
    ("negative", -1, ValueError),
    ("2**63", 2**63, ValueError),
    ("over_1_pib", L.MAX_DEVICE_BYTES + 1, ValueError),
]


def _cases(entry: str, fn: Callable[..., Any], base: dict[str, Any], field: str,
           bad: list[tuple[str, Any, type[Exception]]]) -> list[Case]:
    return [Case(f"{entry}-{field}-{tag}", lambda v=value, f=field: fn(**{**base, f: v}), exc, field)
            for tag, value, exc in bad]


# --- entry points: Python API -----------------------------------------------------------------

PLAN = dict(spec=LLAMA, gpu="H100-80GB", max_model_len=8192)
KV = dict(spec=LLAMA, available_bytes=20 * GIB, max_model_len=8192)
SWEEP = dict(spec=LLAMA, gpus=["H100-80GB"], max_model_len=[8192], as_frame=False)
RANKS = dict(model=LLAMA, gpus="H100-80GB", max_model_len=8192)

API_CASES: list[Case] = []
for _f in ("tensor_parallel_size", "pipeline_parallel_size"):
    API_CASES += _cases("plan", vllm_mem.plan, PLAN, _f, BAD_COUNTS)
# None: the vLLM release's default (docs/vllm_versions.md).
for _f in ("max_model_len", "block_size", "gpu_count", "max_cudagraph_capture_size", "max_num_seqs",
           "max_num_batched_tokens"):
    API_CASES += _cases("plan", vllm_mem.plan, PLAN, _f, _bad_for(_f, BAD_OPTIONAL_COUNTS))
API_CASES += _cases("plan", vllm_mem.plan, PLAN, "gpu_memory_utilization",
                    [c for c in BAD_FRACTIONS if c[0] != "none"])
API_CASES += _cases("plan", vllm_mem.plan, PLAN, "vllm_version",
                    [("int", 19, TypeError), ("empty", "", ValueError), ("word", "latest", ValueError),
                     ("huge_name", HUGE_TEXT, ValueError), ("old", "0.5.1", ValueError)])
API_CASES += _cases("plan", vllm_mem.plan, PLAN, "usage_context",
                    [("none", None, TypeError), ("word", "batch", ValueError)])
for _f in ("dtype", "kv_cache_dtype", "cudagraph_mode"):
    API_CASES += _cases("plan", vllm_mem.plan, PLAN, _f, BAD_NAMES)
API_CASES += _cases("plan", vllm_mem.plan, PLAN, "enforce_eager", BAD_FLAGS)
API_CASES += _cases("plan", vllm_mem.plan, PLAN, "cudagraph_memory_in_budget",
                    [c for c in BAD_FLAGS if c[0] != "none"])
API_CASES += _cases("plan", vllm_mem.plan, PLAN, "free_memory_bytes", [c for c in BAD_SIZES])
API_CASES += _cases("plan", vllm_mem.plan, {**PLAN, "gpu": None}, "total_memory_bytes",
                    [c for c in BAD_SIZES if c[0] != "negative"] + [("zero", 0, ValueError)])
API_CASES += _cases("plan", vllm_mem.plan, PLAN, "gpu", [c for c in BAD_NAMES if c[0] != "none"])

for _fn in (vllm_mem.kv_cache_capacity, vllm_mem.estimate_max_model_len, vllm_mem.auto_fit_max_model_len,
            vllm_mem.check_enough_kv_cache_memory, vllm_mem.kv_cache_memory_shortfall):
    _name = _fn.__name__
    for _f in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "max_concurrent_batches"):
        API_CASES += _cases(_name, _fn, KV, _f, _bad_for(_f, BAD_COUNTS) if _name == "kv_cache_capacity"
                            else BAD_COUNTS[:3])
    API_CASES += _cases(_name, _fn, KV, "available_bytes", BAD_SIZES)
for _f in ("block_size", "max_num_batched_tokens", "num_gpu_blocks_override"):
    API_CASES += _cases("kv", vllm_mem.kv_cache_capacity, KV, _f, BAD_OPTIONAL_COUNTS)
for _f in ("kv_cache_dtype", "dtype"):
    API_CASES += _cases("kv", vllm_mem.kv_cache_capacity, KV, _f, BAD_NAMES)
API_CASES += _cases("kv", vllm_mem.kv_cache_capacity, KV, "disable_hybrid_kv_cache_manager", BAD_FLAGS)
# None means "the release's rule" here (kv_cache_capacity's vllm_version decides it).
API_CASES += _cases("kv", vllm_mem.kv_cache_capacity, KV, "cap_sliding_window_at_full",
                    [c for c in BAD_FLAGS if c[0] != "none"])

for _f in ("max_model_len", "tensor_parallel_size", "max_num_seqs", "block_size"):
    API_CASES += _cases("sweep", vllm_mem.sweep, SWEEP, _f,
                        [(t, [v], e) for t, v, e in _bad_for(_f, BAD_OPTIONAL_COUNTS) if t not in ("list",)])
API_CASES += _cases("sweep", vllm_mem.sweep, SWEEP, "gpu_memory_utilization",
                    [(t, [0.9, v], e) for t, v, e in BAD_FRACTIONS if t != "none"])
API_CASES += _cases("sweep", vllm_mem.sweep, SWEEP, "enforce_eager", [(t, [v], e) for t, v, e in BAD_FLAGS])
API_CASES += _cases("sweep", vllm_mem.sweep, SWEEP, "gpus",
                    [("empty", [], ValueError), ("bool", [True], TypeError), ("float", [80.0 * GIB], TypeError),
                     ("huge_name", [HUGE_TEXT], ValueError), ("negative", [-1], ValueError)])
API_CASES.append(Case("sweep-rows-over-the-bound", lambda: vllm_mem.sweep(
    LLAMA, gpus=["H100-80GB"] * 257, max_model_len=list(range(1, 65)), max_num_seqs=list(range(1, 65)),
    as_frame=False), ValueError, "sweep"))

for _f in ("tensor_parallel_size", "pipeline_parallel_size"):
    API_CASES += _cases("plan_ranks", vllm_mem.plan_ranks, RANKS, _f, BAD_COUNTS)
API_CASES += _cases("plan_ranks", vllm_mem.plan_ranks, RANKS, "gpu_memory_utilization", BAD_FRACTIONS)
API_CASES += _cases("plan_ranks", vllm_mem.plan_ranks, RANKS, "overhead_bytes", BAD_SIZES)
API_CASES += _cases("plan_ranks", vllm_mem.plan_ranks, RANKS, "gpus",
                    [("none", None, TypeError), ("float", 80.0, TypeError), ("zero", 0, ValueError),
                     ("huge_name", HUGE_TEXT, ValueError)])

API_CASES += _cases("weight_bytes", lambda **kw: vllm_mem.ModelSpec.from_hf_config(LLAMA).weight_bytes(**kw),
                    {}, "tensor_parallel_size", BAD_COUNTS)
API_CASES += _cases("weight_bytes", lambda **kw: vllm_mem.ModelSpec.from_hf_config(LLAMA).weight_bytes(**kw),
                    {}, "dtype", BAD_NAMES)
API_CASES += _cases("rule_of_thumb_kv", vllm_mem.rule_of_thumb_kv_cache_bytes,
                    dict(model=LLAMA, batch_size=1, seq_len=8192), "batch_size", BAD_COUNTS)
API_CASES += _cases("rule_of_thumb_kv", vllm_mem.rule_of_thumb_kv_cache_bytes,
                    dict(model=LLAMA, batch_size=1, seq_len=8192), "seq_len", BAD_COUNTS)
API_CASES += _cases("rule_of_thumb_activation", vllm_mem.rule_of_thumb_activation_bytes, {}, "weight_bytes",
                    BAD_SIZES)
API_CASES += [Case(f"lookup_gpu-{tag}", lambda v=value: vllm_mem.lookup_gpu(v), exc, "gpu")
              for tag, value, exc in BAD_NAMES]
API_CASES += [Case(f"close_gpu_matches-{tag}", lambda v=value: vllm_mem.close_gpu_matches(v), exc, "name")
              for tag, value, exc in BAD_NAMES]
API_CASES += [Case(f"format_gib-{tag}", lambda v=value: vllm_mem.format_gib(v), exc, "b")
              for tag, value, exc in [("nan", math.nan, ValueError), ("inf", math.inf, ValueError),
                                      ("str", "1", TypeError), ("2**63", 2**63, ValueError),
                                      ("none", None, TypeError)]]
API_CASES += _cases("check_memory_imbalance", vllm_mem.check_memory_imbalance,
                    dict(free_bytes_per_rank=[GIB, GIB]), "ratio", BAD_FRACTIONS)
API_CASES += _cases("check_memory_imbalance", vllm_mem.check_memory_imbalance, {}, "free_bytes_per_rank",
                    [("str", "12", TypeError), ("none", None, TypeError),
                     ("too_many", [GIB] * (L.MAX_WORLD_SIZE + 1), ValueError)])
API_CASES += [Case(f"check_memory_imbalance-rank-{tag}",
                   lambda v=value: vllm_mem.check_memory_imbalance([GIB, v]), exc, "free_bytes_per_rank[1]")
              for tag, value, exc in BAD_SIZES]

# torch.distributed helpers: checked before any collective (and before the process group is asked for).
if importlib.util.find_spec("torch") is not None:
    from vllm_mem import distributed as _distributed

    API_CASES += _cases("check_memory_imbalance_across_ranks", _distributed.check_memory_imbalance_across_ranks,
                        dict(free_bytes=GIB), "ratio", BAD_FRACTIONS)
    API_CASES += _cases("check_memory_imbalance_across_ranks", _distributed.check_memory_imbalance_across_ranks,
                        {}, "free_bytes", BAD_SIZES)

# Stage checks and assignments (offline).
STAGES_DOC = {"stages": [{"stage_id": 0, "devices": "0", "gpu_memory_utilization": 0.5}]}
CHECK = dict(config=STAGES_DOC, gpus="H100-80GB")
API_CASES += _cases("check_stages", vllm_mem.check_stages, CHECK, "reserve_bytes",
                    BAD_SIZES + [("beyond_the_gpu", 100 * GIB, ValueError)])
API_CASES += _cases("check_stages", vllm_mem.check_stages, CHECK, "free_memory_bytes",
                    BAD_SIZES[:-1] + [("beyond_the_gpu", 100 * GIB, ValueError)])
API_CASES += _cases("check_stages", vllm_mem.check_stages, CHECK, "gpus",
                    [("float", 80.0, TypeError), ("bool", True, TypeError), ("zero", 0, ValueError),
                     ("huge_name", HUGE_TEXT, ValueError), ("set", {"H100-80GB"}, TypeError)])
API_CASES += _cases("check_stages", vllm_mem.check_stages, CHECK, "cuda_visible_devices",
                    [("empty_entry", "0,,1", ValueError), ("trailing_empty", "0,", ValueError),
                     ("int", 3, TypeError), ("negative", [-1], ValueError), ("huge", HUGE_TEXT, ValueError),
                     ("too_many", list(range(L.MAX_DEVICES_PER_LIST + 1)), ValueError)])
API_CASES += _cases("check_stages", vllm_mem.check_stages, CHECK, "models",
                    [("list", ["x"], TypeError), ("str", "x", TypeError)])
API_CASES += _cases("check_stages", vllm_mem.check_stages, CHECK, "config",
                    [("int", 3, TypeError), ("none", None, TypeError)])
API_CASES += _cases("load_stage_config", vllm_mem.load_stage_config, dict(source=STAGES_DOC),
                    "num_visible_devices", [("str", "2", TypeError), ("negative", -1, ValueError),
                                            ("2**63", 2**63, ValueError)])

NEED = dict(stage_id=0, devices=[0], fixed_bytes=GIB, kv_bytes_needed=GIB)


def _assign(**need: Any) -> Any:
    return vllm_mem.assign_utilizations([{**NEED, **need}], gpus="H100-80GB")


API_CASES += [Case(f"assign_utilizations-{f}-{tag}", lambda f=f, v=v: _assign(**{f: v}), exc, f"stages[0].{f}")
              for f, cases in (("tensor_parallel_size", BAD_COUNTS[:3] + BAD_COUNTS[5:]),
                               ("fixed_bytes", BAD_SIZES), ("kv_bytes_needed", BAD_SIZES),
                               ("concurrency", [("nan", math.nan, ValueError), ("zero", 0.0, ValueError),
                                                ("str", "1", TypeError)]))
              for tag, v, exc in cases]
API_CASES += [
    Case("assign_utilizations-unknown-key", lambda: _assign(gpu_util=0.5), ValueError, "gpu_util"),
    Case("assign_utilizations-step-nan", lambda: vllm_mem.assign_utilizations([NEED], "H100-80GB", step=math.nan),
         ValueError, "step"),
    Case("assign_utilizations-max-util", lambda: vllm_mem.assign_utilizations(
        [NEED], "H100-80GB", max_device_utilization=2.0), ValueError, "max_device_utilization"),
    Case("assign_utilizations-num-gpus", lambda: vllm_mem.assign_utilizations([NEED], "H100-80GB", num_gpus=2**63),
         ValueError, "num_gpus"),
    Case("assign_utilizations-stages-str", lambda: vllm_mem.assign_utilizations("x", "H100-80GB"), TypeError,
         "stages"),
]


@pytest.mark.parametrize("case", API_CASES, ids=[c.id for c in API_CASES])
def test_api_refuses(case: Case) -> None:
    text = check(case)
    assert "incompatible function arguments" not in text


# --- config.json sources ------------------------------------------------------------------------


def _llama_config() -> dict[str, Any]:
    path = Path(vllm_mem.__file__).resolve().parent / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json"
    return dict(json.loads(path.read_text()))


def _nested(depth: int) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for _ in range(depth):
        doc = {"a": doc}
    return doc


def _config_file(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _sparse(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(size)  # sparse: no disk used, but stat reports the size
    return path


CONFIG_PATH_CASES: list[tuple[str, Callable[[Path], Any], type[Exception]]] = [
    ("missing", lambda p: p / "nope.json", ValueError),
    ("directory_without_config", lambda p: p, ValueError),
    ("not_a_directory", lambda p: _config_file(p, "f.json", b"{}") / "config.json", ValueError),
    ("name_too_long", lambda p: p / ("x" * 300), ValueError),
    ("path_too_long", lambda p: "/".join(["x" * 200] * 30), ValueError),
    ("nul", lambda p: str(p / "a\x00b"), ValueError),
    ("fifo", lambda p: (os.mkfifo(p / "fifo"), p / "fifo")[1], ValueError),
    ("too_large", lambda p: _sparse(p, L.MAX_CONFIG_FILE_BYTES + 1), ValueError),
    ("not_utf8", lambda p: _config_file(p, "latin1.json", b'{"model_type": "caf\xe9"}'), ValueError),
    ("empty_file", lambda p: _config_file(p, "empty.json", b""), ValueError),
    ("not_json", lambda p: _config_file(p, "bad.json", b"{model_type: llama"), ValueError),
    ("nan_token", lambda p: _config_file(p, "nan.json", json.dumps({**_llama_config(), "rms_norm_eps": "X"})
                                         .replace('"X"', "NaN").encode()), ValueError),
    ("infinity_token", lambda p: _config_file(p, "inf.json", json.dumps({**_llama_config(), "rms_norm_eps": "X"})
                                              .replace('"X"', "Infinity").encode()), ValueError),
    ("deep_nesting", lambda p: _config_file(p, "deep.json", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
     ValueError),
    ("top_level_list", lambda p: _config_file(p, "list.json", b"[1, 2]"), ValueError),
    ("int_type", lambda p: 3, TypeError),
    ("bytes_type", lambda p: b"config.json", TypeError),
]


@pytest.mark.parametrize("tag, make, exc", CONFIG_PATH_CASES, ids=[c[0] for c in CONFIG_PATH_CASES])
@pytest.mark.parametrize("entry", ["from_hf_config", "plan", "kv_cache_capacity", "check_stages_models"])
def test_config_sources_refused(tmp_path: Path, entry: str, tag: str, make: Callable[[Path], Any],
                                exc: type[Exception]) -> None:
    source = make(tmp_path)
    call: Callable[[], Any] = {
        "from_hf_config": lambda: vllm_mem.ModelSpec.from_hf_config(source),
        "plan": lambda: vllm_mem.plan(source, gpu="H100-80GB"),
        "kv_cache_capacity": lambda: vllm_mem.kv_cache_capacity(source, GIB),
        "check_stages_models": lambda: vllm_mem.check_stages(STAGES_DOC, gpus="H100-80GB", models={0: source}),
    }[entry]
    # A file that cannot be read is refused by the Python reader ("config: ..."); a file read but
    # not a valid config by the core's JSON reader, which names it "config.json".
    content = tag in ("nan_token", "infinity_token", "empty_file", "not_json", "deep_nesting", "top_level_list")
    text = check(Case(tag, call, exc, "config.json" if content else "config"))
    assert "x" * 100 not in text


CONFIG_DICT_CASES: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("nan", {**_llama_config(), "rms_norm_eps": math.nan}, ValueError, "rms_norm_eps"),
    ("inf", {**_llama_config(), "rope_theta": math.inf}, ValueError, "rope_theta"),
    ("nested_nan", {**_llama_config(), "rope_scaling": {"factor": math.nan}}, ValueError, "rope_scaling.factor"),
    ("int_beyond_64_bits", {**_llama_config(), "vocab_size": 2**70}, ValueError, "vocab_size"),
    ("object_value", {**_llama_config(), "torch_dtype": object()}, TypeError, "torch_dtype"),
    ("set_value", {**_llama_config(), "architectures": {"LlamaForCausalLM"}}, TypeError, "architectures"),
    ("bytes_value", {**_llama_config(), "model_type": b"llama"}, TypeError, "model_type"),
    ("tuple_key", {**_llama_config(), ("a", "b"): 1}, TypeError, "config"),
    ("too_deep", _nested(10_000), ValueError, "a"),
    ("too_many_values", {"k": list(range(L.JSON_MAX_VALUES + 1))}, ValueError, "config"),
]


@pytest.mark.parametrize("tag, doc, exc, field", CONFIG_DICT_CASES, ids=[c[0] for c in CONFIG_DICT_CASES])
def test_config_dicts_refused(tag: str, doc: dict[str, Any], exc: type[Exception], field: str) -> None:
    check(Case(tag, lambda: vllm_mem.ModelSpec.from_hf_config(doc), exc, field))


def test_a_recursive_dict_is_refused_not_a_recursion_error() -> None:
    doc: dict[str, Any] = {"model_type": "llama"}
    doc["self"] = doc
    check(Case("recursive", lambda: vllm_mem.ModelSpec.from_hf_config(doc), ValueError, "self"))


# --- stage files --------------------------------------------------------------------------------

GOOD_STAGE = "stages:\n  - stage_id: 0\n    devices: \"0\"\n    gpu_memory_utilization: 0.5\n"
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8)) + "stages: []\n"

STAGE_FILE_CASES: list[tuple[str, bytes, str]] = [
    ("alias_bomb", ALIAS_BOMB.encode(), "expands"),
    ("recursive_alias", b"a: &a [*a]\nstages: []\n", "recursive"),
    ("duplicate_key", (GOOD_STAGE + "    gpu_memory_utilization: 0.9\n").encode(), "twice"),
    ("duplicate_top_key", (GOOD_STAGE + GOOD_STAGE).encode(), "twice"),
    ("too_deep", (b"stages: " + b"[" * 200 + b"]" * 200 + b"\n"), "deeper"),
    ("too_deep_block", ("stages:\n" + "".join("  " * i + "- \n" for i in range(1, 100))).encode(), "deeper"),
    ("too_many_stages", ("stages:\n" + "".join(f"  - {{stage_id: {i}}}\n" for i in range(L.MAX_STAGES + 1)))
     .encode(), "stages"),
    ("empty_device_entry", GOOD_STAGE.replace('"0"', '"0,,1"').encode(), "devices"),
    ("empty_runtime_device_entry", b"stages:\n  - stage_id: 0\n    runtime: {devices: \",1\"}\n", "runtime.devices"),
    ("nan_utilization", GOOD_STAGE.replace("0.5", ".nan").encode(), "gpu_memory_utilization"),
    ("inf_utilization", GOOD_STAGE.replace("0.5", ".inf").encode(), "gpu_memory_utilization"),
    ("int_beyond_64_bits", GOOD_STAGE.replace("stage_id: 0", "stage_id: " + "9" * 30).encode(), "stage_id"),
    ("binary_value", (GOOD_STAGE + "    x: !!binary aGVsbG8=\n").encode(), "x"),
    ("date_value", (GOOD_STAGE + "    x: 2024-01-01\n").encode(), "x"),
    ("set_value", (GOOD_STAGE + "    x: !!set {a, b}\n").encode(), "x"),
    ("python_tag", b"stages: !!python/object:os.system [ls]\n", "YAML"),
    ("not_yaml", b"stages: [\n", "YAML"),
    ("top_level_list", b"- 1\n- 2\n", "top level"),
    ("empty_file", b"", "top level"),
    ("not_utf8", GOOD_STAGE.replace("0.5", "0.5 # caf\xe9").encode("latin-1"), "UTF-8"),
    ("tab_indent", b"stages:\n\t- stage_id: 0\n", "YAML"),
]


@pytest.mark.parametrize("tag, data, field", STAGE_FILE_CASES, ids=[c[0] for c in STAGE_FILE_CASES])
@pytest.mark.parametrize("entry", ["load_stage_config", "check_stages"])
def test_stage_files_refused(tmp_path: Path, entry: str, tag: str, data: bytes, field: str) -> None:
    path = tmp_path / "stages.yaml"
    path.write_bytes(data)
    call = (lambda: vllm_mem.load_stage_config(path)) if entry == "load_stage_config" else (
        lambda: vllm_mem.check_stages(path, gpus="H100-80GB"))
    check(Case(tag, call, ValueError, field))


STAGE_PATH_CASES = [c for c in CONFIG_PATH_CASES
                    if c[0] not in ("directory_without_config", "nan_token", "infinity_token", "deep_nesting",
                                    "top_level_list", "empty_file", "not_json")]


@pytest.mark.parametrize("tag, make, exc", STAGE_PATH_CASES, ids=[c[0] for c in STAGE_PATH_CASES])
def test_stage_paths_refused(tmp_path: Path, tag: str, make: Callable[[Path], Any], exc: type[Exception]) -> None:
    source = make(tmp_path)
    if tag == "too_large":
        source = _sparse(tmp_path, L.MAX_STAGE_FILE_BYTES + 1)
    check(Case(tag, lambda: vllm_mem.load_stage_config(source), exc, "config"))


JSON_STAGE = '{"stages": [{"stage_id": 0, "devices": "0", "gpu_memory_utilization": 0.5}]}'
JSON_STAGE_CASES: list[tuple[str, str, str]] = [
    ("duplicate_key", JSON_STAGE.replace('"devices": "0"', '"devices": "0", "devices": "1"'), "twice"),
    ("nan_token", JSON_STAGE.replace("0.5", "NaN"), "NaN"),
    ("infinity_token", JSON_STAGE.replace("0.5", "-Infinity"), "Infinity"),
    ("deep_nesting", '{"stages": ' + "[" * 30000 + "]" * 30000 + "}", "nested"),
    ("not_json", JSON_STAGE[:-1], "JSON"),
    ("trailing_comma", JSON_STAGE.replace("0.5}", "0.5,}"), "JSON"),
]


@pytest.mark.parametrize("tag, text, field", JSON_STAGE_CASES, ids=[c[0] for c in JSON_STAGE_CASES])
def test_json_stage_files_refused(tmp_path: Path, tag: str, text: str, field: str) -> None:
    path = tmp_path / "stages.json"
    path.write_text(text)
    check(Case(tag, lambda: vllm_mem.load_stage_config(path), ValueError, field))


def test_a_json_stage_file_is_read_as_json(tmp_path: Path) -> None:
    # YAML 1.1 (PyYAML) reads 5e-1 as a string; JSON reads a number.
    path = tmp_path / "stages.json"
    path.write_text(JSON_STAGE.replace("0.5", "5e-1"))
    assert vllm_mem.load_stage_config(path).stages[0].utilization_text == "0.5"


@pytest.mark.parametrize("where", ["stat", "open"])
@pytest.mark.parametrize("entry", ["config", "stages"])
def test_unreadable_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, entry: str) -> None:
    # Tests run as root here, where chmod 000 does not stop a read: simulate the OS refusing.
    path = tmp_path / ("config.json" if entry == "config" else "stages.yaml")
    path.write_text("{}")
    real_stat, real_open = os.stat, open

    def stat(p: Any, *args: Any, **kwargs: Any) -> Any:
        if where == "stat" and Path(p) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real_stat(p, *args, **kwargs)

    def guarded_open(p: Any, *args: Any, **kwargs: Any) -> Any:
        if where == "open" and Path(str(p)) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real_open(p, *args, **kwargs)

    def guarded_os_open(p: Any, *args: Any, **kwargs: Any) -> Any:  # read_text's open (no buffer)
        if where == "open" and Path(str(p)) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real_os_open(p, *args, **kwargs)

    real_os_open = os.open
    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr("builtins.open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    call = (lambda: vllm_mem.ModelSpec.from_hf_config(path)) if entry == "config" else (
        lambda: vllm_mem.load_stage_config(path))
    text = check(Case(entry, call, ValueError, "config"))
    assert "ermission denied" in text


def test_a_directory_is_not_a_stage_file(tmp_path: Path) -> None:
    check(Case("dir", lambda: vllm_mem.load_stage_config(tmp_path), ValueError, "is a directory"))


STAGE_DICT_CASES: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("nan", {"stages": [{"stage_id": 0, "gpu_memory_utilization": math.nan}]}, ValueError,
     "stages[0].gpu_memory_utilization"),
    ("object", {"stages": [{"stage_id": 0, "x": object()}]}, TypeError, "stages[0].x"),
    ("too_many_stages", {"stages": [{"stage_id": i} for i in range(L.MAX_STAGES + 1)]}, ValueError, "stages"),
    ("too_deep", {"stages": [], "x": _nested(1000)}, ValueError, "nested deeper"),
    ("empty_device_entry", {"stages": [{"stage_id": 0, "devices": "0,,1"}]}, ValueError, "devices"),
]


@pytest.mark.parametrize("tag, doc, exc, field", STAGE_DICT_CASES, ids=[c[0] for c in STAGE_DICT_CASES])
def test_stage_dicts_refused(tag: str, doc: dict[str, Any], exc: type[Exception], field: str) -> None:
    check(Case(tag, lambda: vllm_mem.load_stage_config(doc), exc, field))


# --- snapshots and the worker flow ----------------------------------------------------------------


@pytest.fixture
def sim() -> Any:
    with SimulatedDevice(total_memory=80 * GIB) as device:
        yield device


@pytest.mark.parametrize("other", [1, 1.5, "x", None, [1]])
def test_snapshot_arithmetic_with_a_wrong_type_is_a_type_error(sim: SimulatedDevice, other: Any) -> None:
    snap = vllm_mem.MemorySnapshot()
    with pytest.raises(TypeError, match="unsupported operand"):
        snap - other
    with pytest.raises(TypeError, match="unsupported operand"):
        other - snap


WORKER_CASES: list[tuple[str, str, Any, type[Exception]]] = [
    ("request_memory", "gpu_memory_utilization", math.nan, ValueError),
    ("request_memory", "gpu_memory_utilization", 1.5, ValueError),
    ("request_memory", "gpu_memory_utilization", "0.9", TypeError),
    ("request_memory", "init_snapshot", None, TypeError),
    ("determine_available_kv_cache_memory", "gpu_memory_utilization", math.inf, ValueError),
    ("determine_available_kv_cache_memory", "weights_memory", 2**63, ValueError),
    ("determine_available_kv_cache_memory", "weights_memory", "1", TypeError),
    ("determine_available_kv_cache_memory", "requested_memory", 1.5, TypeError),
    ("determine_available_kv_cache_memory", "kv_cache_memory_bytes", -1, ValueError),
    ("determine_available_kv_cache_memory", "estimate_cudagraphs", "false", TypeError),
    ("determine_available_kv_cache_memory", "profile_result", 3, TypeError),
    ("suggest_kv_cache_memory_bytes", "weights_memory", 2**64, ValueError),
    ("suggest_kv_cache_memory_bytes", "cuda_graph_memory", None, TypeError),
    ("suggest_kv_cache_memory_bytes", "gpu_memory_utilization", -math.inf, ValueError),
    ("memory_profiling", "weights_memory", 2**63, ValueError),
    ("memory_profiling", "baseline_snapshot", "x", TypeError),
    ("measure_cuda_graph_memory", "capture_fn", None, TypeError),
    ("measure_cuda_graph_memory", "device", 2**63, ValueError),
    ("device_processes", "device_index", 2**63, ValueError),
    ("device_processes", "device_index", "0", TypeError),
    ("device_processes", "device_index", -1, ValueError),
]


DEVICE_CASES: list[tuple[str, Any, type[Exception]]] = [
    ("2**63", 2**63, ValueError), ("2**64", 2**64, ValueError), ("negative", -1, ValueError),
    ("float", 1.5, TypeError), ("bool", True, TypeError), ("text", "gpu0", ValueError),
]


@pytest.mark.parametrize("tag, value, exc", DEVICE_CASES, ids=[c[0] for c in DEVICE_CASES])
@pytest.mark.parametrize("entry", ["MemorySnapshot", "torch_memory_stats", "get_max_shared_memory_bytes",
                                   "DeviceMemoryProfiler"])
def test_device_arguments_refused(sim: SimulatedDevice, entry: str, tag: str, value: Any,
                                  exc: type[Exception]) -> None:
    call = {
        "MemorySnapshot": lambda: vllm_mem.MemorySnapshot(device=value),
        "torch_memory_stats": lambda: vllm_mem.torch_memory_stats(value),
        "get_max_shared_memory_bytes": lambda: vllm_mem.get_max_shared_memory_bytes(value),
        "DeviceMemoryProfiler": lambda: vllm_mem.DeviceMemoryProfiler(value).__enter__(),
    }[entry]
    # vllm_mem._device words its own refusals "device must be ..."; either way the argument is named.
    text = check(Case(entry, call, exc, "gpu" if entry == "get_max_shared_memory_bytes" and exc is ValueError
                      and tag.startswith("2**") else "device"))
    assert "incompatible function arguments" not in text


@pytest.mark.parametrize("entry, field, value, exc", WORKER_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]!r}"[:60] for c in WORKER_CASES])
def test_worker_flow_refuses(sim: SimulatedDevice, entry: str, field: str, value: Any,
                             exc: type[Exception]) -> None:
    snap = vllm_mem.MemorySnapshot()
    base: dict[str, Any] = {
        "request_memory": dict(init_snapshot=snap, gpu_memory_utilization=0.9),
        "determine_available_kv_cache_memory": dict(init_snapshot=snap, requested_memory=GIB,
                                                    gpu_memory_utilization=0.9, log=False),
        "suggest_kv_cache_memory_bytes": dict(init_snapshot=snap, requested_memory=GIB, gpu_memory_utilization=0.9,
                                              weights_memory=1, peak_activation_memory=1, non_torch_memory=1,
                                              cuda_graph_memory=1, kv_cache_memory_in_use=1, log=False),
        "memory_profiling": dict(baseline_snapshot=snap, weights_memory=0),
        "device_processes": dict(device_index=0),
        "measure_cuda_graph_memory": dict(capture_fn=lambda: None, device=0),
    }[entry]
    fn = getattr(vllm_mem, entry)
    kwargs = {**base, field: value}
    if entry == "memory_profiling":
        check(Case(entry, lambda: fn(**kwargs).__enter__(), exc, field))
    else:
        check(Case(entry, lambda: fn(**kwargs), exc, field))


@pytest.mark.parametrize("value", ["\x00" * 10**6, "é" * 10**6, "\U0001f600" * 10**5, 10**5000, [0] * 10**6,
                                   b"x" * 10**6, {i: i for i in range(1000)}],
                         ids=["nul", "accented", "emoji", "int_of_5000_digits", "list", "bytes", "dict"])
def test_a_shown_value_is_at_most_80_characters(value: Any) -> None:
    from vllm_mem import _validate

    assert len(_validate.show(value)) <= L.MAX_ECHOED_CHARS
    assert len(_validate.message("field", "something", value)) <= L.MAX_MESSAGE_CHARS


def test_catalogue_size() -> None:
    # The issue asks for >= 300 cases across entry points; keep the catalogue from shrinking.
    assert len(API_CASES) + 4 * len(CONFIG_PATH_CASES) + 2 * len(STAGE_FILE_CASES) >= 300


# --- the YAML loader --------------------------------------------------------------------------------


def test_libyaml_is_used_where_pyyaml_has_it() -> None:
    import yaml
    from vllm_mem.stages import yaml_reader

    expected = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    assert yaml_reader._Loader is expected


@pytest.mark.parametrize("tag, data, field", [c for c in STAGE_FILE_CASES
                                              if c[0] in ("alias_bomb", "recursive_alias", "duplicate_key",
                                                          "too_deep", "too_deep_block", "python_tag", "not_yaml")],
                         ids=lambda c: c if isinstance(c, str) else None)
def test_the_pure_python_fallback_refuses_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tag: str,
                                                  data: bytes, field: str) -> None:
    import yaml
    from vllm_mem.stages import yaml_reader

    monkeypatch.setattr(yaml_reader, "_Loader", yaml.SafeLoader)
    path = tmp_path / "stages.yaml"
    path.write_bytes(data)
    check(Case(tag, lambda: vllm_mem.load_stage_config(path), ValueError, field))


def test_the_pure_python_fallback_reads_the_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml
    from vllm_mem.stages import yaml_reader

    with_c = [vllm_mem.load_stage_config(p).stages[0].utilization_text for p in vllm_mem.bundled_stage_examples()]
    monkeypatch.setattr(yaml_reader, "_Loader", yaml.SafeLoader)
    pure = [vllm_mem.load_stage_config(p).stages[0].utilization_text for p in vllm_mem.bundled_stage_examples()]
    assert pure == with_c and len(pure) == 3
