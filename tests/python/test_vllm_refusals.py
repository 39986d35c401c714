"""Settings vLLM refuses are refused here too, with vLLM's words, instead of sized (issue 10's
"silently accepted, wrong answer" class): TP not dividing the attention heads, KV heads not
dividing them, block sizes outside vLLM's CacheConfig list, quantization group sizes of 0 or
below -1, rope-scaling factors <= 0 or NaN, booleans given as strings. The checks live in the
core (csrc/core, "refuse"/"bounds" commit); these tests hold every entry point to them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import cli

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
AWQ = "Qwen/Qwen2.5-7B-Instruct-AWQ"
GIB = 1 << 30
CONFIGS = Path(vllm_mem.__file__).resolve().parent / "configs"
VLLM_TP_MESSAGE = "Total number of attention heads (32) must be divisible by tensor parallel size (3)."


def config(name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / (name.replace("/", "--") + ".json")).read_text())
    return {**data, **changes}


@pytest.mark.parametrize("call", [
    lambda: vllm_mem.plan(LLAMA, gpu="H100-80GB", tensor_parallel_size=3),
    lambda: vllm_mem.kv_cache_capacity(LLAMA, 20 * GIB, tensor_parallel_size=3),
    lambda: vllm_mem.estimate_max_model_len(LLAMA, 20 * GIB, tensor_parallel_size=3),
    lambda: vllm_mem.ModelSpec.from_hf_config(LLAMA).weight_bytes(tensor_parallel_size=3),
    lambda: vllm_mem.plan_ranks(LLAMA, "H100-80GB", tensor_parallel_size=3),
], ids=["plan", "kv_cache_capacity", "estimate_max_model_len", "weight_bytes", "plan_ranks"])
def test_tp_not_dividing_the_heads_gets_vllms_message(call: Any) -> None:
    with pytest.raises(ValueError) as info:
        call()
    assert VLLM_TP_MESSAGE in str(info.value) and str(info.value).startswith("tensor_parallel_size")


def test_a_sweep_marks_such_rows_invalid_instead_of_sizing_them() -> None:
    cols = vllm_mem.sweep(LLAMA, gpus=["H100-80GB"], tensor_parallel_size=[1, 3], as_frame=False)
    assert list(cols["failure_phase"]) == [None, "invalid"] and list(cols["fits"]) == [True, False]


def test_the_cli_names_the_flag_with_vllms_message(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["plan", LLAMA, "--gpu", "H100-80GB", "-tp", "3"], ["kv", LLAMA, "--available-gib", "20", "-tp", "3"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"--tensor-parallel-size: {VLLM_TP_MESSAGE}" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("kv_heads", [5, 7, 33, 0, -8])
def test_kv_heads_that_do_not_divide_the_heads(kv_heads: int) -> None:
    with pytest.raises(ValueError, match="^num_key_value_heads"):
        vllm_mem.ModelSpec.from_hf_config(config(LLAMA, num_key_value_heads=kv_heads))


@pytest.mark.parametrize("block_size", [2, 17, 24, 48, 512, 528])
def test_block_sizes_vllm_refuses(block_size: int, capsys: pytest.CaptureFixture[str]) -> None:
    for call in (lambda: vllm_mem.kv_cache_capacity(LLAMA, 20 * GIB, block_size=block_size),
                 lambda: vllm_mem.plan(LLAMA, gpu="H100-80GB", block_size=block_size),
                 lambda: vllm_mem.plan_ranks(LLAMA, "H100-80GB", block_size=block_size)):
        with pytest.raises(ValueError, match=r"^block_size: must be one of 1, 8, 16, 32, 64, 128, 256"):
            call()
    assert cli.main(["plan", LLAMA, "--gpu", "H100-80GB", "--block-size", str(block_size)]) == 2
    assert "--block-size: must be one of 1, 8, 16" in capsys.readouterr().err


@pytest.mark.parametrize("block_size", [1, 8, 16, 32, 64, 128, 256])
def test_block_sizes_vllm_accepts(block_size: int) -> None:
    assert vllm_mem.kv_cache_capacity(LLAMA, 20 * GIB, block_size=block_size).block_size == block_size


@pytest.mark.parametrize("group_size", [0, -2, -128])
def test_quantization_group_size(group_size: int) -> None:
    base = config(AWQ)
    bad = {**base, "quantization_config": {**base["quantization_config"], "group_size": group_size}}
    with pytest.raises(ValueError, match="^quantization_config.group_size"):
        vllm_mem.ModelSpec.from_hf_config(bad)


@pytest.mark.parametrize("factor", [0, -1.0, math.nan, math.inf, 1e9])
def test_rope_scaling_factor(factor: float) -> None:
    with pytest.raises(ValueError, match=r"^rope_scaling\.factor"):
        vllm_mem.ModelSpec.from_hf_config(config(LLAMA, rope_scaling={"rope_type": "linear", "factor": factor}))


@pytest.mark.parametrize("value", ["false", "0", "true", "no", 0, 1])
def test_booleans_given_as_strings_or_numbers_in_a_config(value: Any) -> None:
    # "false" is truthy in Python; taking it as True would tie the embeddings and miscount weights.
    with pytest.raises(ValueError, match="^tie_word_embeddings"):
        vllm_mem.ModelSpec.from_hf_config(config(LLAMA, tie_word_embeddings=value))


@pytest.mark.parametrize("value", ["false", "0"])
def test_booleans_given_as_strings_in_a_stage_file(tmp_path: Path, value: str) -> None:
    path = tmp_path / "stages.yaml"
    path.write_text(f'stages:\n  - stage_id: 0\n    devices: "0"\n    gpu_memory_utilization: 0.5\n'
                    f'    enforce_eager: "{value}"\n')
    with pytest.raises(ValueError, match="enforce_eager: must be true or false"):
        vllm_mem.load_stage_config(path)
