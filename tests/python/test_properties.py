"""Property tests (issue 10): generated configs, stage files, engine arguments and command lines,
valid and bad, with one invariant each:

    a clean ValueError / TypeError naming a field (<= 300 characters), or a result that passes
    the consistency checks (blocks x bytes per block <= the bytes available, tokens >= 0, ...)

and for the CLI: exit 0/1/2, and on 2 exactly one stderr line (a JSON object under --json),
never a traceback. The whole module stays well under a minute: the ``vllm_mem`` profile bounds
the examples and turns the per-example deadline off (a first call warms caches). Set
``HYPOTHESIS_PROFILE=vllm_mem-long`` for a deeper run.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
import vllm_mem  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from vllm_mem import _limits as L  # noqa: E402
from vllm_mem import cli  # noqa: E402

settings.register_profile("vllm_mem", max_examples=200, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("vllm_mem-long", max_examples=2000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "vllm_mem"))

CONFIG_DIR = Path(vllm_mem.__file__).resolve().parent / "configs"
MODELS = sorted(vllm_mem.bundled_model_configs())
GIB = 1 << 30
CLEAN = (ValueError, TypeError)


#: vLLM's own "does not fit" messages, raised verbatim as vLLM raises them (a result, not bad input).
VLLM_DOES_NOT_FIT = ("To serve at least one request with the model's max seq len",
                     "No available memory for the cache blocks")


def assert_clean(exc: BaseException) -> None:
    """The error half of the invariant: the right types, a field named, a bounded message."""
    assert isinstance(exc, CLEAN), f"{type(exc).__name__}: {exc}"
    text = str(exc)
    if isinstance(exc, ValueError) and text.startswith(VLLM_DOES_NOT_FIT):
        return
    assert len(text) <= L.MAX_MESSAGE_CHARS, text
    assert ":" in text and "incompatible function arguments" not in text, text
    assert "\n" not in text


# --- generators ---------------------------------------------------------------------------------

#: Values of every kind and class a careless or hostile caller produces.
junk = st.one_of(
    st.none(), st.booleans(), st.sampled_from(["false", "0", "", "auto", "nan", "1e400", "x" * 5000]),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.binary(max_size=4),
)

#: Engine arguments in and just outside their ranges.
lengths = st.one_of(st.integers(min_value=1, max_value=1 << 20), st.sampled_from([0, -1, L.MAX_MODEL_LEN_TOKENS + 1]))
parallel = st.one_of(st.sampled_from([1, 2, 4, 8]), st.integers(min_value=-2, max_value=64))
block_sizes = st.one_of(st.none(), st.sampled_from([1, 8, 16, 32, 64, 128, 256]), st.integers(-4, 1 << 12))
fractions = st.one_of(st.floats(min_value=0.01, max_value=1.0),
                      st.floats(allow_nan=True, allow_infinity=True))
dtypes = st.sampled_from(["auto", "float16", "bfloat16", "float32", "int3", ""])
kv_dtypes = st.sampled_from(["auto", "fp8", "fp8_e5m2", "bfloat16", "fp7"])


@st.composite
def configs(draw: Any) -> dict[str, Any]:
    """A bundled config.json with a few fields replaced by other values (valid or not)."""
    name = draw(st.sampled_from(MODELS))
    config: dict[str, Any] = json.loads((CONFIG_DIR / (name.replace("/", "--") + ".json")).read_text())
    keys = sorted(k for k in config if isinstance(config[k], (int, float, str, bool)))
    for key in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
        original = config[key]
        config[key] = draw(st.one_of(
            junk,
            # a negative published value (Mistral-3's vision_feature_layer -1) bounds the range below
            st.integers(min_value=min(0, 2 * original), max_value=max(0, 2 * original)) if isinstance(original, int)
            and not isinstance(original, bool) else st.just(original),
        ))
    return config


@st.composite
def stage_documents(draw: Any) -> dict[str, Any]:
    """vLLM-Omni stage documents: stage ids, device lists, utilizations, TP; some malformed."""
    n = draw(st.integers(min_value=0, max_value=6))
    stages = []
    for i in range(n):
        stage: dict[str, Any] = {"stage_id": draw(st.one_of(st.just(i), junk))}
        if draw(st.booleans()):
            stage["devices"] = draw(st.one_of(st.text(alphabet="0123 ,", max_size=8), st.integers(-1, 9), junk))
        stage["gpu_memory_utilization"] = draw(st.one_of(fractions, junk))
        if draw(st.booleans()):
            stage["engine_args"] = {"tensor_parallel_size": draw(st.one_of(parallel, junk))}
        stages.append(stage)
    key = draw(st.sampled_from(["stages", "stage_args"]))
    return {key: stages}


# --- properties: Python API ---------------------------------------------------------------------


@given(config=configs())
def test_config_reader(config: dict[str, Any]) -> None:
    try:
        spec = vllm_mem.ModelSpec.from_hf_config(config)
        parameters = spec.num_parameters()
        weights = spec.weight_bytes()
    except NotImplementedError:
        return  # an architecture or layout vLLM itself cannot serve (documented)
    except Exception as exc:  # noqa: BLE001 - the property is about what is raised
        assert_clean(exc)
        return
    assert spec.num_layers > 0 and spec.hidden_size > 0 and parameters > 0 and weights > 0


@given(model=st.sampled_from(MODELS), available=st.one_of(st.integers(0, 200 * GIB), junk),
       max_model_len=lengths, block_size=block_sizes, tp=parallel, kv_dtype=kv_dtypes, dtype=dtypes)
def test_kv_cache_capacity(model: str, available: Any, max_model_len: int, block_size: Any, tp: int,
                           kv_dtype: str, dtype: str) -> None:
    try:
        cap = vllm_mem.kv_cache_capacity(model, available, max_model_len=max_model_len, block_size=block_size,
                                         tensor_parallel_size=tp, kv_cache_dtype=kv_dtype, dtype=dtype)
    except NotImplementedError:
        return
    except Exception as exc:  # noqa: BLE001
        assert_clean(exc)
        return
    assert cap.num_blocks >= 0 and cap.num_tokens >= 0 and cap.max_concurrency >= 0
    assert cap.block_size > 0 and cap.bytes_per_block > 0
    assert cap.kv_cache_bytes == cap.num_blocks * cap.bytes_per_block <= cap.available_bytes
    assert cap.num_tokens <= cap.num_blocks * cap.block_size * max(1, len(cap.groups))


@given(model=st.sampled_from(MODELS), gpu=st.one_of(st.sampled_from(["H100-80GB", "L4", "A10G", "MI300X"]), junk),
       utilization=fractions, max_model_len=st.one_of(st.none(), lengths), tp=parallel, pp=parallel,
       block_size=block_sizes, kv_dtype=kv_dtypes, eager=st.one_of(st.booleans(), junk))
def test_plan(model: str, gpu: Any, utilization: float, max_model_len: Any, tp: int, pp: int, block_size: Any,
              kv_dtype: str, eager: Any) -> None:
    try:
        p = vllm_mem.plan(model, gpu=gpu, gpu_memory_utilization=utilization, max_model_len=max_model_len,
                          tensor_parallel_size=tp, pipeline_parallel_size=pp, block_size=block_size,
                          kv_cache_dtype=kv_dtype, enforce_eager=eager)
    except NotImplementedError:
        return
    except Exception as exc:  # noqa: BLE001
        assert_clean(exc)
        return
    assert 0 < p.requested_bytes <= p.total_memory_bytes
    assert p.weights_bytes > 0 and p.activation_peak_bytes >= 0 and p.cudagraph_bytes >= 0
    if p.fits:
        kv = p.kv_cache
        assert kv is not None and p.failure_phase is None and p.available_kv_cache_bytes > 0
        assert kv.num_blocks * kv.bytes_per_block <= p.available_kv_cache_bytes
        assert kv.num_tokens >= max(1, p.max_model_len) - kv.block_size or kv.max_concurrency >= 1 - 1e-9
    else:
        assert p.failure_phase in vllm_mem.FAILURE_PHASES
    json.dumps(p.to_dict(), allow_nan=False)


@given(doc=stage_documents(), gpu=st.sampled_from(["H100-80GB", "L4", 24 * GIB]),
       reserve=st.one_of(st.integers(0, 100 * GIB), junk), visible=st.one_of(st.none(), st.text("0123,", max_size=6)))
def test_stage_checks(doc: dict[str, Any], gpu: Any, reserve: Any, visible: Any) -> None:
    try:
        result = vllm_mem.check_stages(doc, gpus=gpu, reserve_bytes=reserve, cuda_visible_devices=visible)
    except Exception as exc:  # noqa: BLE001
        assert_clean(exc)
        return
    for row in result.devices:
        assert row.requested_bytes <= row.total_bytes or row.over_committed
        assert sum(s["requested_bytes"] for s in row.stages) == row.requested_bytes
    assert result.ok == (not result.problems)
    json.dumps(result.to_dict(), allow_nan=False)


@given(doc=stage_documents())
def test_stage_files_read_like_dicts(tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any]) -> None:
    """A document written as YAML and read back checks the same as the dict (or fails the same)."""
    path = tmp_path_factory.mktemp("stages") / "s.yaml"
    try:
        path.write_text(yaml.safe_dump(doc))
    except (yaml.YAMLError, ValueError):
        return  # not representable as YAML (bytes, ...): nothing to compare
    outcomes = []
    for source in (doc, path):
        try:
            outcomes.append(repr(vllm_mem.load_stage_config(source).stages and
                                 [s.stage_id for s in vllm_mem.load_stage_config(source).stages]))
        except Exception as exc:  # noqa: BLE001
            assert_clean(exc)
            # InvalidArgumentTypeError is both: the wrong kind of value in a dict, the same
            # content read from YAML may be the wrong value instead.
            outcomes.append("TypeError-or-ValueError" if isinstance(exc, TypeError) else type(exc).__name__)
    if "TypeError-or-ValueError" not in outcomes:  # a Python object in a dict is a TypeError, in YAML a ValueError
        assert outcomes[0] == outcomes[1]


@given(name=st.sampled_from(["plan", "kv_cache_capacity", "sweep", "plan_ranks", "weight_bytes"]),
       field=st.sampled_from(["max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "block_size",
                              "dtype", "kv_cache_dtype", "gpu_memory_utilization"]),
       value=junk)
def test_any_junk_in_any_keyword(name: str, field: str, value: Any) -> None:
    """Each bad class (junk) in each keyword of each entry point: clean error or a sane result."""
    calls = {
        "plan": lambda kw: vllm_mem.plan("meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", **kw),
        "kv_cache_capacity": lambda kw: vllm_mem.kv_cache_capacity("Qwen/Qwen3-8B", 20 * GIB, **kw),
        "sweep": lambda kw: vllm_mem.sweep("Qwen/Qwen3-8B", gpus=["L4"], as_frame=False, **kw),
        "plan_ranks": lambda kw: vllm_mem.plan_ranks("Qwen/Qwen3-8B", "H100-80GB", **kw),
        "weight_bytes": lambda kw: vllm_mem.ModelSpec.from_hf_config("Qwen/Qwen3-8B").weight_bytes(**kw),
    }
    accepted = {"kv_cache_capacity": {"gpu_memory_utilization"}, "weight_bytes":
                {"max_model_len", "block_size", "kv_cache_dtype", "gpu_memory_utilization"}}
    if field in accepted.get(name, set()):
        return
    try:
        calls[name]({field: value})
    except NotImplementedError:
        return
    except Exception as exc:  # noqa: BLE001
        assert_clean(exc)


@given(other=junk)
def test_snapshot_arithmetic_with_anything(other: Any) -> None:
    from vllm_mem.testing import SimulatedDevice

    with SimulatedDevice():
        snap = vllm_mem.MemorySnapshot()
        with pytest.raises(TypeError):
            snap - other


# --- the CLI invariant ---------------------------------------------------------------------------

_FLAGS = ["--max-model-len", "--tensor-parallel-size", "--pipeline-parallel-size", "--block-size",
          "--gpu-memory-utilization", "--gpu", "--dtype", "--kv-cache-dtype", "--free-memory-gib",
          "--total-memory-gib", "--available-gib", "--reserve-gib", "--cuda-visible-devices", "--max-num-seqs"]
cli_values = st.one_of(st.sampled_from(["0", "-1", "1", "8192", "nan", "inf", "1e400", "H100-80GB", "80GiB", "80",
                                        "0,,1", "", "x" * 3000, str(2**63), "0.5", "false"]),
                       st.text(alphabet="0123456789.eE-+,GiBx ", max_size=12))


@given(command=st.sampled_from(["plan", "kv", "stages"]), pairs=st.lists(st.tuples(st.sampled_from(_FLAGS), cli_values),
                                                                          max_size=3),
       as_json=st.booleans())
def test_cli_invariant(capsys: pytest.CaptureFixture[str], command: str, pairs: list[tuple[str, str]],
                       as_json: bool) -> None:
    head = {"plan": ["plan", "Qwen/Qwen3-8B", "--gpu", "L4"], "kv": ["kv", "Qwen/Qwen3-8B", "--available-gib", "20"],
            "stages": ["stages", "qwen3_omni_moe", "--gpu", "H100-80GB"]}[command]
    argv = [*head, *(x for pair in pairs for x in pair), *(["--json"] if as_json else [])]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code)
    assert "Traceback" not in err
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1, (argv, err)
        if as_json:
            assert json.loads(lines[0])["error"]["exit_code"] == 2
    elif as_json:
        json.loads(out)


def test_properties_use_a_bounded_profile() -> None:
    # The suite's cost is examples x calls: keep the default profile's examples bounded.
    assert settings.default.max_examples <= 2000 and settings.default.deadline is None
    assert math.isfinite(settings.default.max_examples)


# --- the positional fast paths equal the checked paths (docs/performance.md) --------------------

_SPECS: dict[str, vllm_mem.ModelSpec] = {}


def _spec(model: str) -> vllm_mem.ModelSpec:
    # One ModelSpec per model for the whole module, so its cached KV layouts are reused across
    # examples (what the fast path exists for) while every example's result is compared.
    if model not in _SPECS:
        _SPECS[model] = vllm_mem.ModelSpec.from_hf_config(model, allow_unknown=True)
    return _SPECS[model]


def _outcome(call: Any) -> Any:
    """A call's result as plain data, or its exception's type and message."""
    try:
        result = call()
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return (type(exc).__name__, str(exc))
    return result.to_dict() if hasattr(result, "to_dict") else result


_fast_ints = st.one_of(st.integers(-2, 70), st.sampled_from([0, 1, 16, 64, 4096, 8192, 32768, 1 << 30, 1 << 31]))
_fast_values = st.one_of(_fast_ints, st.none(), st.booleans(), st.sampled_from(["auto", "fp8", "bfloat16", "x", ""]),
                         st.floats(allow_nan=True), st.just([1, 2]))


@given(model=st.sampled_from(MODELS), available=st.one_of(st.integers(0, 100 * GIB), st.lists(st.integers(0, 90 * GIB),
       min_size=1, max_size=4), _fast_values), max_model_len=st.one_of(st.integers(1, 300_000), _fast_values),
       block_size=st.one_of(st.sampled_from([None, 16, 32, 64, 128]), _fast_values),
       kv_cache_dtype=st.sampled_from(["auto", "fp8", "fp8_e5m2", "bfloat16", "int9", 3]),
       tp=st.one_of(st.sampled_from([1, 2, 4, 8]), _fast_values), pp=st.sampled_from([1, 2, 3, 0, True]),
       batched=st.one_of(st.sampled_from([None, 2048, 8192]), _fast_values), dtype=st.sampled_from(["auto", "float16", "float32", "int8"]),
       override=st.sampled_from([None, 100, 0]), batches=st.sampled_from([1, 2, 0]), cap=st.sampled_from([True, False, 1]))
def test_kv_cache_capacity_fast_path_equals_checked_path(model: str, available: Any, max_model_len: Any,
                                                         block_size: Any, kv_cache_dtype: Any, tp: Any, pp: Any,
                                                         batched: Any, dtype: Any, override: Any, batches: Any,
                                                         cap: Any) -> None:
    # The hand-written positional fast path is gone (issue 21): the property now holds between the
    # one entrance (a request object on the model's cached layouts) and the core with a layout
    # built for this call only, over the same valid and invalid arguments.
    from vllm_mem.kv_cache import KvCacheSettings

    spec = _spec(model)
    kw = dict(block_size=block_size, kv_cache_dtype=kv_cache_dtype, tensor_parallel_size=tp,
              pipeline_parallel_size=pp, max_num_batched_tokens=batched, dtype=dtype,
              disable_hybrid_kv_cache_manager=False, num_gpu_blocks_override=override,
              max_concurrent_batches=batches, cap_sliding_window_at_full=cap)
    entrance = _outcome(lambda: vllm_mem.kv_cache_capacity(spec, available, max_model_len, **kw))

    def per_call_layout() -> Any:
        options = vllm_mem._C.kv_options_for_release(KvCacheSettings(max_model_len=max_model_len, **kw))
        budgets = [available] if available.__class__ is int else available
        return vllm_mem.kv_cache.KvCacheCapacity._from_native(vllm_mem._C.kv_cache_capacity(spec._spec, budgets,
                                                                                             options))

    per_call = _outcome(per_call_layout)
    if isinstance(entrance, tuple):  # refused: the per-call path refuses too (its list conversion words it)
        assert isinstance(per_call, tuple)
    else:
        assert entrance == per_call


@given(model=st.sampled_from(MODELS), dtype=st.sampled_from(["auto", "float16", "bfloat16", "float32", "fp8", 1, None]),
       quantization=st.sampled_from([None, "fp8", "awq", "bitsandbytes", "none", "", 4]),
       tp=st.one_of(st.sampled_from([1, 2, 4, 8, 3]), _fast_values), pp=st.one_of(st.sampled_from([1, 2, 4]), _fast_values))
def test_weight_bytes_fast_path_equals_checked_path(model: str, dtype: Any, quantization: Any, tp: Any, pp: Any) -> None:
    from vllm_mem.model_spec import _weight_args

    spec = _spec(model)
    fast = _outcome(lambda: spec.weight_bytes(dtype, quantization, tp, pp))
    checked = _outcome(lambda: vllm_mem._C.weight_bytes(spec._spec, *_weight_args(dtype, quantization, tp, pp)))
    assert fast == checked


@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(["H100-80GB", "L4", "H200", "MI300X"]),
       utilization=st.one_of(st.none(), st.floats(0.05, 1.0), _fast_values), max_model_len=st.one_of(st.none(), st.integers(1, 300_000)),
       tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2]), seqs=st.one_of(st.none(), st.sampled_from([1, 64, 256, 1024])),
       batched=st.one_of(st.none(), st.sampled_from([512, 2048, 8192, 16384])),
       kv_cache_dtype=st.sampled_from(["auto", "fp8", "nope"]), block_size=st.sampled_from([None, 16, 64, 7]),
       eager=st.booleans(), mode=st.sampled_from(["FULL_AND_PIECEWISE", "PIECEWISE", "FULL", "NONE", "full", "bogus"]),
       in_budget=st.sampled_from([None, True, False]), kv_memory=st.sampled_from([None, 4 * GIB]),
       free=st.sampled_from([None, 10 * GIB, 70 * GIB]))
def test_plan_fast_path_equals_checked_path(model: str, gpu: str, utilization: Any, max_model_len: Any, tp: int,
                                            pp: int, seqs: Any, batched: Any, kv_cache_dtype: str, block_size: Any,
                                            eager: bool, mode: str, in_budget: Any, kv_memory: Any, free: Any) -> None:
    from vllm_mem.planner.inputs import plan_inputs
    from vllm_mem.planner.result import StartupPlan

    spec = _spec(model)
    kwargs = dict(free_memory_bytes=free, gpu_memory_utilization=utilization, max_model_len=max_model_len,
                  tensor_parallel_size=tp, pipeline_parallel_size=pp, max_num_seqs=seqs, max_num_batched_tokens=batched,
                  kv_cache_dtype=kv_cache_dtype, block_size=block_size, enforce_eager=eager, cudagraph_mode=mode,
                  kv_cache_memory_bytes=kv_memory, cudagraph_memory_in_budget=in_budget)
    # The one entrance (the request object on the model's cached layouts) equals the core planning
    # with PlanInputs and layouts built for this call (the fast path it replaced was held to this).
    entrance = _outcome(lambda: vllm_mem.plan(spec, gpu, **kwargs))

    def checked() -> StartupPlan:
        return StartupPlan(vllm_mem._C.evaluate_plan(spec._spec, plan_inputs(gpu=gpu, **kwargs)), spec)

    assert entrance == _outcome(checked)


def test_fast_path_bounds_match_the_python_limits() -> None:
    # The settings table bounds a name as _validate.text() does (the fast path's copy is gone).
    vllm_mem._C.validate_setting("quantization", "q" * L.MAX_NAME_CHARS)
    with pytest.raises(ValueError, match="quantization"):
        vllm_mem._C.validate_setting("quantization", "q" * (L.MAX_NAME_CHARS + 1))


def test_fast_path_reuses_one_layout_per_setting() -> None:
    spec = vllm_mem.ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    for available in (GIB, 20 * GIB, 40 * GIB):
        for length in (1024, 8192):
            vllm_mem.kv_cache_capacity(spec, available, max_model_len=length)
    assert spec._sizing.num_kv_layouts == 1
    vllm_mem.kv_cache_capacity(spec, 20 * GIB, tensor_parallel_size=2)
    vllm_mem.kv_cache_capacity(spec, 20 * GIB, kv_cache_dtype="fp8")
    assert spec._sizing.num_kv_layouts == 3
