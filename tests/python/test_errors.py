"""Typed errors (vllm_mem.errors): one class per kind, each carrying the field at fault, raised
alike by the Python checks and the C++ core, and still the built-in type vLLM raises."""

from __future__ import annotations

import pickle

import pytest
import vllm_mem
from vllm_mem import _C
from vllm_mem import _validate as V
from vllm_mem.errors import InvalidArgumentError, InvalidArgumentTypeError, NotModelledError

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def test_python_checks_raise_typed_errors_with_the_field() -> None:
    with pytest.raises(InvalidArgumentTypeError) as type_error:
        V.integer("8", "block_size", low=1)
    assert isinstance(type_error.value, TypeError) and isinstance(type_error.value, ValueError)
    assert type_error.value.field == "block_size"
    with pytest.raises(InvalidArgumentError) as value_error:
        V.integer(0, "max_model_len", low=1)
    assert value_error.value.field == "max_model_len" and not isinstance(value_error.value, TypeError)
    with pytest.raises(InvalidArgumentError) as failed:
        V.fail("speculative_config.method", "unknown method 'x'")
    assert failed.value.field == "speculative_config.method"


def test_public_api_errors_carry_the_field() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        vllm_mem.plan(LLAMA, gpu="H100-80GB", gpu_memory_utilization=1.5)
    assert caught.value.field == "gpu_memory_utilization"
    with pytest.raises(InvalidArgumentTypeError) as caught_type:
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len="long")
    assert caught_type.value.field == "max_model_len"


def test_core_invalid_argument_arrives_typed_with_its_field() -> None:
    # format_gib's core check (a negative byte count is fine; a value the core refuses is not):
    # find a core entry point that throws InvalidArgument, called directly on _C so no Python
    # check runs first.
    with pytest.raises(InvalidArgumentError) as caught:
        _C.lookup_gpu("")  # the catalog refuses an empty name in the core
    assert caught.value.field and str(caught.value).startswith(caught.value.field + ":")


def test_errors_pickle_with_their_field() -> None:
    # Errors cross process boundaries (multiprocessing workers, pytest-xdist).
    for error in (InvalidArgumentError("a: b", "a"), InvalidArgumentTypeError("c: d", "c"),
                  NotModelledError("no rules for x", "model_type")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and copy.field == error.field and str(copy) == str(error)


def test_exported_from_the_package() -> None:
    assert vllm_mem.InvalidArgumentError is InvalidArgumentError
    assert vllm_mem.NotModelledError is NotModelledError
    assert issubclass(NotModelledError, NotImplementedError)
