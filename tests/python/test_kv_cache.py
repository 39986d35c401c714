"""The Python KV-cache API, its errors and the ``vllm-mem kv`` command."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import kv_cache

GIB = 1 << 30
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _dense(layers: int, kv_heads: int, head_dim: int, dtype: str) -> dict[str, Any]:
    return {"model_type": "llama", "num_hidden_layers": layers, "hidden_size": kv_heads * head_dim,
            "num_attention_heads": kv_heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
            "vocab_size": 100, "torch_dtype": dtype}


def test_public_names_are_exported() -> None:
    for name in ("kv_cache_capacity", "estimate_max_model_len", "check_enough_kv_cache_memory",
                 "KvCacheCapacity", "KvCacheGroup"):
        assert name in kv_cache.__all__
        assert getattr(vllm_mem, name) is getattr(kv_cache, name)


def test_capacity_is_typed_and_serialisable() -> None:
    cap = vllm_mem.kv_cache_capacity(LLAMA, 58 * GIB, max_model_len=8192)
    assert isinstance(cap, vllm_mem.KvCacheCapacity)
    assert dataclasses.is_dataclass(cap)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cap.num_blocks = 1  # type: ignore[misc]
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes x 16 tokens per block.
    assert cap.bytes_per_block == 32 * 8 * 256 * 2 * 16
    assert cap.num_blocks == 58 * GIB // cap.bytes_per_block
    assert cap.num_tokens == int(cap.num_blocks / 512 * 8192)
    assert cap.groups[0].kind == "full_attention" and len(cap.groups[0].layer_indices) == 32
    d = cap.to_dict()
    assert json.loads(json.dumps(d))["num_blocks"] == cap.num_blocks
    assert d["groups"][0]["layer_indices"] == list(range(32))
    assert "blocks" in repr(cap) and "full_attention x32" in repr(cap)


def test_accepts_a_model_spec_a_dict_and_a_path(tmp_path: Path) -> None:
    cfg = _dense(2, 8, 64, "float16")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    results = {vllm_mem.kv_cache_capacity(src, 20 * GIB, max_model_len=16).num_blocks
               for src in (cfg, str(path), tmp_path, vllm_mem.ModelSpec.from_hf_config(cfg))}
    # vLLM's test_init_kv_cache_without_kv_sharing: 20 GiB -> 327680 blocks.
    assert results == {327680}


def test_available_bytes_per_pipeline_rank_and_per_worker() -> None:
    cfg = _dense(4, 4, 64, "float16")
    per_rank = vllm_mem.kv_cache_capacity(cfg, [4 * GIB, 2 * GIB], max_model_len=16, pipeline_parallel_size=2)
    assert per_rank.num_blocks_per_worker[0] == 2 * per_rank.num_blocks_per_worker[1]
    assert per_rank.num_blocks == per_rank.num_blocks_per_worker[1]
    per_worker = vllm_mem.kv_cache_capacity(cfg, [4 * GIB, 3 * GIB, 2 * GIB, 4 * GIB], max_model_len=16,
                                            tensor_parallel_size=2, pipeline_parallel_size=2)
    assert len(per_worker.num_blocks_per_worker) == 4
    assert per_worker.num_blocks == min(per_worker.num_blocks_per_worker)


def test_estimate_max_model_len_matches_vllm_test() -> None:
    cfg = _dense(32, 32, 128, "float16")
    assert vllm_mem.estimate_max_model_len(cfg, 8 * GIB, max_model_len=16385, max_num_batched_tokens=32768) == 16384
    assert vllm_mem.estimate_max_model_len(cfg, 8 * GIB, max_model_len=16383, max_num_batched_tokens=32768) == 16383


def test_check_enough_kv_cache_memory_raises_vllms_message() -> None:
    vllm_mem.check_enough_kv_cache_memory(LLAMA, GIB, max_model_len=8192)
    with pytest.raises(ValueError, match=r"max seq len \(8192\)") as err:
        vllm_mem.check_enough_kv_cache_memory(LLAMA, GIB // 2, max_model_len=8192)
    assert "estimated maximum model length is 4096" in str(err.value)
    with pytest.raises(ValueError, match="No available memory for the cache blocks"):
        vllm_mem.kv_cache_capacity(LLAMA, 0)
    assert vllm_mem.kv_cache_memory_shortfall(LLAMA, GIB) is None
    assert "max seq len" in (vllm_mem.kv_cache_memory_shortfall(LLAMA, GIB // 2) or "")


def test_hybrid_model_groups() -> None:
    cap = vllm_mem.kv_cache_capacity("google/gemma-3-27b-it", 40 * GIB, max_model_len=8192)
    kinds = [g.kind for g in cap.groups]
    assert kinds.count("full_attention") == 1 and kinds.count("sliding_window") == 6
    assert cap.num_padding_layers == 8  # 52 sliding layers in groups of 10
    off = vllm_mem.kv_cache_capacity("google/gemma-3-27b-it", 40 * GIB, max_model_len=8192,
                                     disable_hybrid_kv_cache_manager=True)
    assert len(off.groups) == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (dict(max_model_len=0), "max_model_len"),
        (dict(kv_cache_dtype="fp7"), "kv_cache_dtype"),
        (dict(tensor_parallel_size=3), "tensor_parallel_size"),
        (dict(pipeline_parallel_size=0), "pipeline_parallel_size"),
        (dict(block_size=0), "block_size"),
        (dict(dtype="int3"), "dtype"),
        (dict(max_model_len=1 << 61), "max_model_len"),
    ],
)
def test_bad_input_raises_value_error_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        vllm_mem.kv_cache_capacity(LLAMA, 10 * GIB, **kwargs)


def test_unknown_kv_dtype_lists_allowed_values() -> None:
    with pytest.raises(ValueError) as err:
        vllm_mem.kv_cache_capacity(LLAMA, 10 * GIB, kv_cache_dtype="fp7")
    for allowed in ("auto", "fp8", "fp8_e5m2", "bfloat16"):
        assert allowed in str(err.value)
    assert "fp8_e4m3" in vllm_mem.allowed_kv_cache_dtypes()


@pytest.mark.parametrize("available", [1.5 * GIB, "10", [GIB, "x"], True])
def test_available_bytes_must_be_integers(available: Any) -> None:
    with pytest.raises(TypeError, match="available_bytes"):
        vllm_mem.kv_cache_capacity(LLAMA, available)


@pytest.mark.parametrize("available", [[], -1, [GIB, -1]])
def test_available_bytes_must_be_a_non_empty_list_of_sizes(available: Any) -> None:
    with pytest.raises(ValueError, match="available_bytes"):
        vllm_mem.kv_cache_capacity(LLAMA, available)


def test_wrong_number_of_available_values() -> None:
    with pytest.raises(ValueError, match="available_bytes"):
        vllm_mem.kv_cache_capacity(LLAMA, [GIB, GIB, GIB], pipeline_parallel_size=2)


# --- vllm-mem kv ------------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-m", "vllm_mem.cli", "kv", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_prints_vllms_wording() -> None:
    out = _cli(LLAMA, "--available-gib", "60", "--max-model-len", "8192")
    assert out.returncode == 0, out.stderr
    cap = vllm_mem.kv_cache_capacity(LLAMA, 60 * GIB, max_model_len=8192)
    assert f"GPU KV cache size: {cap.num_tokens:,} tokens" in out.stdout
    assert f"Maximum concurrency for 8,192 tokens per request: {cap.max_concurrency:.2f}x" in out.stdout
    assert f"num_gpu_blocks: {cap.num_blocks:,}" in out.stdout


def test_cli_json() -> None:
    out = _cli("mistralai/Mistral-7B-v0.1", "--available-gib", "20", "--json", "-tp", "2", "--max-model-len", "8192")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    cap = vllm_mem.kv_cache_capacity("mistralai/Mistral-7B-v0.1", 20 * GIB, tensor_parallel_size=2)
    assert data["fits"] is True and data["num_blocks"] == cap.num_blocks
    assert data["groups"][0]["kind"] == "sliding_window"


def test_cli_exit_1_when_one_request_does_not_fit() -> None:
    out = _cli(LLAMA, "--available-gib", "0.5", "--max-model-len", "8192")
    assert out.returncode == 1
    assert "To serve at least one request with the model's max seq len (8192)" in out.stderr


@pytest.mark.parametrize(
    "args",
    [
        [LLAMA, "--available-gib", "10", "--kv-cache-dtype", "fp7"],
        [LLAMA, "--available-gib", "10", "--tensor-parallel-size", "3"],
        [LLAMA, "--available-gib", "10", "--max-model-len", "0"],
        ["no/such-model", "--available-gib", "10"],
    ],
)
def test_cli_exit_2_on_bad_input(args: list[str]) -> None:
    out = _cli(*args)
    assert out.returncode == 2
    assert "error" in out.stderr


def test_cli_rejects_non_positive_memory() -> None:
    assert _cli(LLAMA, "--available-gib", "0").returncode == 2
