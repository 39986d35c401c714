"""The config.json load path read faster (benchmarks/bench_vramscout.py) reads the same: one
bounded read of a regular file, a byte-order mark dropped, every refusal as before, bundled
names found by every spelling they were found by."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import vllm_mem
from vllm_mem import _validate as V

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _bundled_text(name: str = LLAMA) -> str:
    return (Path(vllm_mem.__file__).parent / "configs" / (name.replace("/", "--") + ".json")).read_text()


def test_a_file_reads_as_the_bundled_name_does(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(_bundled_text())
    from_file, from_folder = vllm_mem.ModelSpec.from_hf_config(path), vllm_mem.ModelSpec.from_hf_config(tmp_path)
    bundled = vllm_mem.ModelSpec.from_hf_config(LLAMA)
    assert from_file.weight_bytes() == from_folder.weight_bytes() == bundled.weight_bytes()
    assert from_file.name == from_folder.name == str(path)


def test_a_byte_order_mark_is_dropped_and_offsets_count_it(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + _bundled_text().encode())
    assert vllm_mem.ModelSpec.from_hf_config(path).num_layers == vllm_mem.ModelSpec.from_hf_config(LLAMA).num_layers
    path.write_bytes(b"\xef\xbb\xbf{\xff}")  # the bad byte is the file's 5th (offset 4)
    with pytest.raises(ValueError, match=r"is not UTF-8 text \(byte 0xff at offset 4\)$"):
        vllm_mem.ModelSpec.from_hf_config(path)


def test_the_bound_counts_bytes_read_not_the_reported_size(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"x" * 101)
    with pytest.raises(ValueError, match=r"is 101 bytes; at most 100 are read$"):
        V.read_text(path, "config", 100)
    assert V.read_text(path, "config", 101) == "x" * 101


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_a_file_reporting_size_zero_is_read_to_its_end() -> None:
    # /proc files report st_size 0: the read must not stop at the reported size.
    assert os.stat("/proc/self/status").st_size == 0
    assert "Name:" in V.read_text(Path("/proc/self/status"), "config", 1 << 20)
    with pytest.raises(ValueError, match="holds more than 8 bytes; at most 8 are read$"):
        V.read_text(Path("/proc/self/status"), "config", 8)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):  # opening it would block
        vllm_mem.ModelSpec.from_hf_config(fifo)


@pytest.mark.parametrize("spelling", [LLAMA, LLAMA.replace("/", "--"), LLAMA.lower(), "llama-3.1-8b-instruct"])
def test_bundled_names_by_every_spelling(spelling: str) -> None:
    spec = vllm_mem.ModelSpec.from_hf_config(spelling)
    assert spec.name == LLAMA
    assert spec.weight_bytes() == vllm_mem.ModelSpec.from_hf_config(LLAMA).weight_bytes()


def test_bundled_model_configs_is_a_fresh_list() -> None:
    names = vllm_mem.bundled_model_configs()
    assert LLAMA in names and names == sorted(names, key=lambda n: n.replace("/", "--") + ".json")  # files in order
    names.clear()
    assert vllm_mem.bundled_model_configs()
