"""No bad input of <= 10 MB makes an entry point work in proportion to a hostile value (issue 10).

Without timing anything (timings belong in benchmarks/), each case shows the work is bounded:
the input is refused by the bound that names it (the message quotes the bound), before the
expensive step runs (the core function is replaced by one that fails the test if reached, or the
file is never opened), and Python's traced allocations during the call stay a small multiple
of the input, far from the 1 GiB the issue allows.
"""

from __future__ import annotations

import builtins
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import _C
from vllm_mem import _limits as L

TEN_MB = 10 * 1000 * 1000
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the work ran: the input should have been refused before it")


def refused_within(call: Callable[[], Any], bound_text: str, max_traced_bytes: int) -> str:
    tracemalloc.start()
    try:
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    text = str(info.value)
    assert bound_text in text, text
    assert len(text) <= L.MAX_MESSAGE_CHARS
    assert peak <= max_traced_bytes, f"traced peak {peak} bytes"
    return text


def test_a_ten_mb_gpu_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_C, "lookup_gpu", _never)
    name = "H" * TEN_MB
    refused_within(lambda: vllm_mem.plan(LLAMA, gpu=name), str(L.MAX_GPU_NAME_CHARS), 4 << 20)
    refused_within(lambda: vllm_mem.lookup_gpu(name), str(L.MAX_GPU_NAME_CHARS), 4 << 20)


def test_a_ten_mb_config_file_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b" " * (L.MAX_CONFIG_FILE_BYTES + 1))
    real_open = builtins.open

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        assert Path(str(file)) != path, "the oversized file was opened"
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    refused_within(lambda: vllm_mem.ModelSpec.from_hf_config(path), str(L.MAX_CONFIG_FILE_BYTES), 1 << 20)


def test_a_ten_mb_stage_file_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "stages.yaml"
    path.write_bytes(b"stages: []\n" + b"#" * TEN_MB)
    monkeypatch.setattr(_C, "parse_stage_config", _never)
    refused_within(lambda: vllm_mem.load_stage_config(path), str(L.MAX_STAGE_FILE_BYTES), 4 << 20)


def test_an_alias_bomb_at_the_file_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 9 levels of 10x aliases: 10**9 values once expanded, a few hundred bytes on disk.
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\nstages: []\n")
    monkeypatch.setattr(_C, "parse_stage_config", _never)
    refused_within(lambda: vllm_mem.load_stage_config(path), str(L.MAX_STAGE_NODES), 4 << 20)


def test_a_stage_file_of_many_small_values_at_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Just under the file cap, but more values than the node bound: refused while streaming events.
    body = "stages: [" + "0," * ((L.MAX_STAGE_FILE_BYTES - 20) // 2) + "0]\n"
    path = tmp_path / "flat.yaml"
    path.write_text(body)
    monkeypatch.setattr(_C, "parse_stage_config", _never)
    refused_within(lambda: vllm_mem.load_stage_config(path), str(L.MAX_STAGE_NODES), 16 << 20)


def test_deep_nesting_is_refused_before_recursion(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("stages: " + "[" * (L.MAX_STAGE_FILE_BYTES // 3) + "]" * (L.MAX_STAGE_FILE_BYTES // 3))
    refused_within(lambda: vllm_mem.load_stage_config(path), str(L.MAX_STAGE_DEPTH), 8 << 20)


def test_a_ten_mb_device_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_C, "parse_cuda_visible_devices", _never)
    devices = "0," * (TEN_MB // 2)
    refused_within(lambda: vllm_mem.check_stages({"stages": []}, gpus="H100-80GB", cuda_visible_devices=devices),
                   "characters", 1 << 20)


def test_a_list_of_a_million_available_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_C, "kv_cache_capacity", _never)
    values = [1 << 30] * (TEN_MB // 8)
    # The list itself exists before the call; the call must not copy or walk it.
    refused_within(lambda: vllm_mem.kv_cache_capacity(LLAMA, values), str(L.MAX_WORLD_SIZE), 1 << 20)


def test_a_sweep_whose_rows_exceed_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_C, "run_sweep", _never)
    axis = list(range(1, 1101))  # 1100 x 1100 rows
    refused_within(lambda: vllm_mem.sweep(LLAMA, gpus=["H100-80GB"], max_model_len=axis, max_num_seqs=axis,
                                          as_frame=False), str(L.MAX_SWEEP_ROWS), 1 << 20)


def test_a_config_dict_of_ten_mb_of_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_C.ModelSpec, "from_json", _never)
    doc = {"model_type": "llama", "x": list(range(TEN_MB // 8))}
    refused_within(lambda: vllm_mem.ModelSpec.from_hf_config(doc), str(L.JSON_MAX_VALUES), 1 << 20)


def test_huge_integers_are_not_converted_to_text() -> None:
    # str() of a 10**6-digit int is quadratic (and refused above 4300 digits); messages show its size.
    value = 1 << 3_400_000  # a million decimal digits
    text = refused_within(lambda: vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=value), "bits", 1 << 20)
    assert "integer of" in text
