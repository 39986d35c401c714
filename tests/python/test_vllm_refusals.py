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

# The release these figures were written for: 0.21, the last whose V1 model runner serves every dense
# model with its CUDA-graph estimate in the KV budget (0.21; 0.22-0.24 give Model Runner V2 to listed
# architectures, Llama from 0.23); from 0.25 Model Runner V2 serves
# dense models and budgets no graphs (vllm_versions.json "model_runner"), which the newest profile
# would apply.
V1_GRAPHS = "0.21"

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


# ---- vLLM's _get_and_verify_max_len (vllm/config/model.py): the derived maximum -------------
QWEN = "Qwen/Qwen2.5-7B-Instruct"
LONG_PREFIX = ("User-specified max_model_len (32769) is greater than the derived max_model_len "
               "(max_position_embeddings=32768 or model_max_length=None in model's config.json).")


@pytest.fixture()
def _no_long_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)


@pytest.mark.usefixtures("_no_long_env")
@pytest.mark.parametrize(("version", "tail"), [
    # vLLM's cautionary sentences after these are left out (messages stay within 300 characters).
    ("0.19", " To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."),
    ("0.9", " To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"),
])
def test_max_model_len_above_the_models_maximum_gets_vllms_message(version: str, tail: str) -> None:
    with pytest.raises(ValueError) as info:
        vllm_mem.plan(QWEN, gpu="H100-80GB", max_model_len=32769, vllm_version=version)
    text = str(info.value)
    assert text.startswith("max_model_len: ") and text.endswith(LONG_PREFIX + tail)
    assert len(text) <= 300


@pytest.mark.usefixtures("_no_long_env")
def test_the_override_flag_and_the_env_var_allow_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert vllm_mem.plan(QWEN, gpu="H100-80GB", max_model_len=32769, allow_long_max_model_len=True).max_model_len \
        == 32769
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    assert vllm_mem.plan(QWEN, gpu="H100-80GB", max_model_len=40000).max_model_len == 40000
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0")
    with pytest.raises(ValueError, match="^max_model_len"):
        vllm_mem.plan(QWEN, gpu="H100-80GB", max_model_len=40000)


@pytest.mark.usefixtures("_no_long_env")
def test_rope_scaling_raises_the_derived_maximum() -> None:
    """yarn: original_max_position_embeddings x factor (Qwen2.5's documented 128K setting);
    a scaled length is a float in vLLM's message."""
    yarn = config(QWEN, rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
    p = vllm_mem.plan(yarn, gpu="H100-80GB", tensor_parallel_size=2)
    assert p.max_model_len == 131072  # the default: the derived maximum
    with pytest.raises(ValueError, match=r"max_position_embeddings=131072\.0 or"):
        vllm_mem.plan(yarn, gpu="H100-80GB", max_model_len=131073)
    linear = config(LLAMA, max_position_embeddings=8192, rope_scaling={"rope_type": "linear", "factor": 2.0})
    assert vllm_mem.plan(linear, gpu="H100-80GB").max_model_len == 16384
    llama3 = config(LLAMA, max_position_embeddings=8192,
                    rope_scaling={"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
                                  "low_freq_factor": 1.0, "high_freq_factor": 4.0})
    assert vllm_mem.plan(llama3, gpu="H100-80GB").max_model_len == 8192  # llama3: not multiplied


@pytest.mark.usefixtures("_no_long_env")
def test_every_entry_point_defaults_max_model_len_to_the_models_maximum(capsys: pytest.CaptureFixture[str]) -> None:
    assert vllm_mem.plan(QWEN, gpu="H100-80GB").max_model_len == 32768
    cols: Any = vllm_mem.sweep(QWEN, gpus=["H100-80GB"], as_frame=False)
    assert list(cols["max_model_len"]) == [32768]
    assert cli.main(["kv", QWEN, "--available-gib", "20"]) == 0
    assert "using the model's limit 32,768" in capsys.readouterr().out
    assert cli.main(["kv", QWEN, "--available-gib", "20", "--max-model-len", "40000"]) == 2
    err = capsys.readouterr().err
    assert "--max-model-len: User-specified max_model_len (40000)" in err and "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in err
    assert len(err.splitlines()) == 1
    assert cli.main(["kv", QWEN, "--available-gib", "20", "--max-model-len", "40000",
                     "--allow-long-max-model-len"]) == 0
    capsys.readouterr()
    assert cli.main(["plan", QWEN, "--gpu", "H100-80GB", "--max-model-len", "40000"]) == 2
    assert "--max-model-len" in capsys.readouterr().err


def test_dtype_auto_on_a_gpu_without_bfloat16_is_float16() -> None:
    """vLLM's CudaPlatform supports bfloat16 from compute capability 8.0; 'auto' then serves a
    bfloat16 checkpoint in float16 (V100 7.0, T4 7.5)."""
    p = vllm_mem.plan(QWEN, gpu="V100-32GB", max_model_len=4096)
    assert p.settings["dtype"] == "float16" and "compute capability 7.0" in p.report()
    assert vllm_mem.plan(QWEN, gpu="L4", max_model_len=4096).settings["dtype"] == "auto"


def test_when_no_single_lever_fits_the_smallest_combination_is_suggested() -> None:
    """Llama-3.1-70B at its full 131072 context on H100s with two GPUs available: fp8 weights
    alone leave no room for the 40 GiB KV request, TP 2 alone does not fit the bf16 weights
    beside it, together they do."""
    p = vllm_mem.plan("meta-llama/Llama-3.1-70B-Instruct", gpu="H100-80GB", gpu_count=2, vllm_version="0.21")
    assert not p.fits
    levers = p.suggestions
    assert not any(s.fits_after for s in levers if s.lever != "combination")
    combo = [s for s in levers if s.lever == "combination"]
    assert len(combo) == 1 and combo[0].fits_after and combo[0].bytes_freed > 0
    assert combo[0].setting.count("--") == 2
    kwargs: dict[str, Any] = {}
    for part in combo[0].value.split(", "):
        key, value = part.split("=")
        kwargs[key] = int(value) if value.isdigit() else (value == "true" if value in ("true", "false") else value)
    assert vllm_mem.plan("meta-llama/Llama-3.1-70B-Instruct", gpu="H100-80GB", gpu_count=2, vllm_version="0.21",
                         **kwargs).fits


def test_a_kv_cache_memory_suggestion_that_would_not_start_is_not_offered() -> None:
    fits = vllm_mem.plan(LLAMA, gpu="H100-80GB", vllm_version=V1_GRAPHS, max_model_len=8192)
    assert fits.kv_cache_memory_bytes_suggestion == fits.available_kv_cache_bytes - 150 * (1 << 20)
    short = vllm_mem.plan(LLAMA, gpu="L4", vllm_version=V1_GRAPHS, max_model_len=131072)
    assert not short.fits and short.kv_cache_memory_bytes_suggestion is None
    assert short.to_dict()["kv_cache_memory_bytes_suggestion"] is None
