"""The plugin's markers are functions called with the marker's arguments
(vllm_mem/pytest_plugin/marks.py): the signature is the one place their arguments are written."""

from __future__ import annotations

import inspect

import pytest
from vllm_mem.pytest_plugin import marks


def test_marker_help_is_the_functions_signature_and_docstring() -> None:
    helps = {m.name: m.help() for m in marks.MARKERS}
    assert set(helps) == {"limit_gpu_memory", "limit_gpu_leaks"}
    assert helps["limit_gpu_memory"].startswith("limit_gpu_memory(limit, *, torch_only=False, device=None): fail ")
    assert helps["limit_gpu_leaks"].startswith(
        "limit_gpu_leaks(limit=None, *, torch=None, non_torch=None, device=None): fail "
    )
    for m in marks.MARKERS:  # every keyword the marker takes is in the help, and nothing private
        params = [p for p in inspect.signature(m.function).parameters if not p.startswith("_")]
        assert all(p in helps[m.name] for p in params) and "_marker" not in helps[m.name]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((), {}), (("1 GiB", "2 GiB"), {}), (("1 GiB",), {"cuda": True}), (("1 GiB",), {"_marker": "x"})],
)
def test_a_wrongly_shaped_marker_is_answered_with_its_usage(args: tuple, kwargs: dict) -> None:
    mark = pytest.mark.limit_gpu_memory(*args, **kwargs).mark
    with pytest.raises(ValueError, match=r"^@pytest\.mark\.limit_gpu_memory\(.*\): takes one size and optionally"):
        marks.MARKERS[0].read(mark)


def test_limits_read_from_the_marker_arguments() -> None:
    leaks = marks.MARKERS[1].read(pytest.mark.limit_gpu_leaks("1 MiB", non_torch="2 MiB", device=1).mark)
    assert leaks.name == "limit_gpu_leaks" and leaks.device == 1
    memory = marks.MARKERS[0].read(pytest.mark.limit_gpu_memory(4096).mark)
    assert memory.device is None and callable(memory.check)
