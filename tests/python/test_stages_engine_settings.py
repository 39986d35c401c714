"""A stage's engine arguments that are plan settings reach its start-up plan as plan(**settings)
takes them (issue 20, item 5): a stage whose engine_args say kv_cache_dtype: fp8 or carry a
speculative_config is planned with vLLM's KV pool and peak for them, its figures are plan()'s, a
bad value names the stage and the key, and the CLI shows the same."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from test_hybrid_models import NEMOTRON_NANO_9B_V2
from vllm_mem import check_stages
from vllm_mem._limits import MAX_MESSAGE_CHARS
from vllm_mem._validate import clip
from vllm_mem.errors import InvalidArgumentError, NotModelledError
from vllm_mem.stages.config import APPLIED_STAGE_KEYS, NO_MEMORY_STAGE_KEYS, UNMODELLED_STAGE_KEYS

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GPU = "H100-80GB"
LABEL = "stages[0] (stage 0)"
MIB = 1 << 20
GIB = 1 << 30


def _doc(engine_args: dict[str, Any], model: Any = LLAMA, **flat: Any) -> dict[str, Any]:
    """One stage at 0.5 of GPU 0 with vLLM-Omni's default enforce_eager (true), 8192 tokens."""
    stage = {
        "stage_id": 0,
        "devices": "0",
        "gpu_memory_utilization": 0.5,
        "max_model_len": 8192,
        "engine_args": engine_args,
        **flat,
    }
    if model is not None:
        stage["model"] = model
    return {"stages": [stage]}


def _figures(stage_plan: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "fits",
        "max_model_len",
        "requested_bytes",
        "weights_bytes",
        "available_kv_cache_bytes",
        "num_blocks",
        "num_tokens",
        "max_concurrency",
        "shortfall_bytes",
    )
    return {k: stage_plan[k] for k in keys}


def _plan_figures(p: Any) -> dict[str, Any]:
    kv = p.kv_cache
    return {
        "fits": p.fits,
        "max_model_len": p.max_model_len,
        "requested_bytes": p.requested_bytes,
        "weights_bytes": p.weights_bytes,
        "available_kv_cache_bytes": p.available_kv_cache_bytes,
        "num_blocks": kv.num_blocks if kv else 0,
        "num_tokens": kv.num_tokens if kv else 0,
        "max_concurrency": kv.max_concurrency if kv else 0.0,
        "shortfall_bytes": p.shortfall_bytes,
    }


def _as_plan(model: Any, stage_plan: dict[str, Any], **settings: Any) -> dict[str, Any]:
    """plan() with the stage's own knobs (0.5, eager as vLLM-Omni defaults, 8192) on its GPU with
    the free memory the check predicted at its start, and ``settings``."""
    return _plan_figures(
        vllm_mem.plan(
            model,
            GPU,
            free_memory_bytes=stage_plan["free_bytes"],
            **{"gpu_memory_utilization": 0.5, "enforce_eager": True, "max_model_len": 8192, **settings},
        )
    )


# Each: the stage's engine_args, then the plan() keywords they are.
CASES = {
    "kv_cache_dtype": ({"kv_cache_dtype": "fp8"}, {"kv_cache_dtype": "fp8"}),
    "eagle3": (
        {
            "speculative_config": {
                "method": "eagle3",
                "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                "num_speculative_tokens": 3,
            }
        },
        {
            "speculative_config": {
                "method": "eagle3",
                "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                "num_speculative_tokens": 3,
            }
        },
    ),
    "block_size": ({"block_size": 32}, {"block_size": 32}),
    "quantization": ({"quantization": "fp8"}, {"quantization": "fp8"}),
    "dtype": ({"dtype": "float32"}, {"dtype": "float32"}),
    "cpu_offload_gb": ({"cpu_offload_gb": 4}, {"cpu_offload_gb": 4}),
    # From 0.20 the CUDA-graph estimate comes out of the KV budget (cudagraph_memory_in_budget),
    # so on 0.21 the graphs vLLM-Omni's default enforce_eager leaves out change the stage's pool.
    "compilation_config": (
        {"enforce_eager": False, "compilation_config": {"cudagraph_mode": "PIECEWISE"}},
        {"enforce_eager": False, "cudagraph_mode": "PIECEWISE", "vllm_version": "0.21"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_stage_figures_are_plans_with_the_same_settings(case: str) -> None:
    engine_args, keywords = CASES[case]
    version = keywords.get("vllm_version")
    [stage_plan] = check_stages(_doc(engine_args), gpus=GPU, vllm_version=version).plans
    plain = check_stages(_doc({}), gpus=GPU, vllm_version=version).plans[0]
    want = _as_plan(LLAMA, stage_plan, **keywords)
    assert _figures(stage_plan) == want
    assert _figures(stage_plan) != _figures(plain), "the setting changes nothing: the test could not fail"


def test_fp8_kv_cache_doubles_the_tokens_by_hand() -> None:
    # Llama-3.1-8B's config.json: 32 layers x 8 KV heads x head 128 x (K + V) = 65,536 values a
    # token: 128 KiB in bfloat16, 2 MiB a 16-token block; fp8 stores one byte: 1 MiB a block.
    # The KV budget is the same (the weights and the profile peak do not change), so the blocks
    # double, as vLLM's "GPU KV cache size" would.
    fp8 = check_stages(_doc({"kv_cache_dtype": "fp8"}), gpus=GPU).plans[0]
    bf16 = check_stages(_doc({}), gpus=GPU).plans[0]
    assert fp8["available_kv_cache_bytes"] == bf16["available_kv_cache_bytes"]
    assert bf16["num_blocks"] == bf16["available_kv_cache_bytes"] // (2 * MIB)
    assert fp8["num_blocks"] == fp8["available_kv_cache_bytes"] // MIB
    assert fp8["num_tokens"] == 16 * fp8["num_blocks"] and fp8["num_tokens"] in (
        2 * bf16["num_tokens"],
        2 * bf16["num_tokens"] + 16,
    )


def test_cpu_offload_moves_the_gib_off_the_gpu() -> None:
    # --cpu-offload-gb 4: vLLM keeps whole parameters of at most 4 GiB in host memory, first
    # layers first (the plan's rule, docs/settings.md), so the GPU holds at least 3.x GiB less.
    offload = check_stages(_doc({"cpu_offload_gb": 4}), gpus=GPU).plans[0]
    plain = check_stages(_doc({}), gpus=GPU).plans[0]
    moved = plain["weights_bytes"] - offload["weights_bytes"]
    assert 3 * GIB < moved <= 4 * GIB
    assert offload["available_kv_cache_bytes"] - plain["available_kv_cache_bytes"] == moved


def test_prefix_caching_on_a_hybrid_changes_its_pool_as_plan_does() -> None:
    # From 0.28 a hybrid model runs prefix caching by default with mamba_cache_mode 'align'
    # (vllm#50991; tests/python/test_hybrid_prefix_caching_default.py); off, one state per request.
    def stage(engine_args: dict[str, Any]) -> dict[str, Any]:
        doc = _doc(engine_args, model=None)
        return check_stages(doc, gpus=GPU, models={0: NEMOTRON_NANO_9B_V2}, vllm_version="0.28.0").plans[0]

    off = stage({"enable_prefix_caching": False})
    default = stage({})
    assert _figures(off) == _as_plan(NEMOTRON_NANO_9B_V2, off, vllm_version="0.28.0", enable_prefix_caching=False)
    assert _figures(default) == _as_plan(NEMOTRON_NANO_9B_V2, default, vllm_version="0.28.0")
    assert off["num_tokens"] != default["num_tokens"]
    aligned = stage({"enable_prefix_caching": True, "mamba_cache_mode": "align"})
    assert _figures(aligned) == _figures(default)


def test_flat_keys_and_engine_args_follow_vllm_omnis_precedence() -> None:
    # engine_args.<key> wins over the flat <key>, as for every knob (docs/stages.md).
    both = check_stages(_doc({"kv_cache_dtype": "fp8"}, kv_cache_dtype="auto"), gpus=GPU).plans[0]
    flat = check_stages(_doc({}, kv_cache_dtype="fp8"), gpus=GPU).plans[0]
    assert _figures(both) == _figures(flat) == _as_plan(LLAMA, flat, kv_cache_dtype="fp8")


def test_vllm_version_reaches_every_stage_plan() -> None:
    [stage_plan] = check_stages(_doc({"kv_cache_dtype": "fp8"}), gpus=GPU, vllm_version="0.11.0").plans
    assert _figures(stage_plan) == _as_plan(LLAMA, stage_plan, kv_cache_dtype="fp8", vllm_version="0.11.0")


def _error_of(call: Any) -> BaseException:
    try:
        call()
    except (ValueError, TypeError, NotImplementedError) as exc:
        return exc
    raise AssertionError("no error")


@pytest.mark.parametrize(
    ("engine_args", "flat", "key", "keywords"),
    [
        ({"kv_cache_dtype": "fp9"}, {}, "engine_args.kv_cache_dtype", {"kv_cache_dtype": "fp9"}),
        ({}, {"block_size": 3}, "block_size", {"block_size": 3}),
        ({"cpu_offload_gb": -1}, {}, "engine_args.cpu_offload_gb", {"cpu_offload_gb": -1}),
        ({"mamba_cache_mode": "some"}, {}, "engine_args.mamba_cache_mode", {"mamba_cache_mode": "some"}),
        ({"enable_prefix_caching": "yes"}, {}, "engine_args.enable_prefix_caching", {"enable_prefix_caching": "yes"}),
        (
            {"compilation_config": {"cudagraph_capture_sizes": [1, 0]}},
            {},
            "engine_args.compilation_config.cudagraph_capture_sizes",
            {"cudagraph_capture_sizes": [1, 0]},
        ),
        (
            {
                "speculative_config": {
                    "method": "eagle3",
                    "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                    "num_speculative_tokens": 0,
                }
            },
            {},
            "engine_args.speculative_config",
            {
                "speculative_config": {
                    "method": "eagle3",
                    "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                    "num_speculative_tokens": 0,
                }
            },
        ),
        # vLLM's own refusal, raised in the core's plan: its message, the stage and key named.
        (
            {"decode_context_parallel_size": 2},
            {},
            "engine_args.decode_context_parallel_size",
            {"decode_context_parallel_size": 2},
        ),
    ],
)
def test_a_bad_value_names_the_stage_and_key(
    engine_args: dict[str, Any], flat: dict[str, Any], key: str, keywords: dict[str, Any]
) -> None:
    got = _error_of(lambda: check_stages(_doc(engine_args, **flat), gpus=GPU))
    want = _error_of(lambda: vllm_mem.plan(LLAMA, GPU, max_model_len=8192, **keywords))
    assert type(got) is type(want)
    assert isinstance(got, InvalidArgumentError)
    want_field = str(want.field)  # type: ignore[attr-defined]
    head = want_field.split(".", 1)[0].split("[", 1)[0]
    assert got.field == f"{LABEL} {key}{want_field[len(head) :]}"
    # plan()'s words after the field, the whole message clipped as every message is.
    assert str(got) == clip(f"{got.field}: {str(want)[len(want_field) + 2 :]}", MAX_MESSAGE_CHARS)


def test_the_dcp_refusal_is_vllms_message() -> None:
    with pytest.raises(
        InvalidArgumentError,
        match=re.escape(f"{LABEL} engine_args.decode_context_parallel_size: tp_size=1 must be divisible bydcp_size=2."),
    ):
        check_stages(_doc({"decode_context_parallel_size": 2}), gpus=GPU)


def test_a_bad_value_is_refused_without_a_model_too() -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(f"{LABEL} engine_args.kv_cache_dtype:")):
        check_stages(_doc({"kv_cache_dtype": "fp9"}, model=None), gpus=GPU)


def test_a_setting_not_modelled_is_refused_when_the_stage_is_planned() -> None:
    # --enable-chunked-prefill False: the unchunked scheduler is not modelled (vllm_args), so a
    # planned stage is refused by name; the per-GPU check of an unplanned stage does not use it.
    args = {"enable_chunked_prefill": False}
    assert check_stages(_doc(args, model=None), gpus=GPU).ok
    with pytest.raises(NotModelledError, match=re.escape(f"{LABEL} engine_args.enable_chunked_prefill=False")):
        check_stages(_doc(args), gpus=GPU)


def test_applied_keys_come_from_the_settings_table_and_leave_the_notes() -> None:
    flagged = {row["name"] for row in vllm_mem._C.plan_settings() if row["flag"]}
    assert flagged <= set(APPLIED_STAGE_KEYS)
    assert {"kv_cache_dtype", "speculative_config", "enable_prefix_caching", "compilation_config"} <= set(
        APPLIED_STAGE_KEYS
    )
    assert not set(UNMODELLED_STAGE_KEYS) & set(APPLIED_STAGE_KEYS)
    assert not set(NO_MEMORY_STAGE_KEYS) & set(APPLIED_STAGE_KEYS)
    r = check_stages(_doc({"kv_cache_dtype": "fp8", "hf_overrides": {"num_hidden_layers": 2}}), gpus=GPU)
    assert not [n for n in r.notes if "kv_cache_dtype" in n]
    [note] = [n for n in r.notes if "hf_overrides" in n]
    assert note.startswith(f"{LABEL} engine_args.hf_overrides changes the stage's memory")
    # mm_processor_kwargs became a settings row (test_mm_settings.py): applied, so on a text model
    # the stage's plan refuses it as vLLM's ModelConfig does.
    assert "mm_processor_kwargs" in APPLIED_STAGE_KEYS
    with pytest.raises(vllm_mem.InvalidArgumentError, match="only supported for multimodal models"):
        check_stages(_doc({"mm_processor_kwargs": {"max_pixels": 1}}), gpus=GPU)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_mem.cli", "stages", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_shows_the_same(tmp_path: Path) -> None:
    path = tmp_path / "stages.json"
    path.write_text(json.dumps(_doc({"kv_cache_dtype": "fp8"})))
    cli = _cli(str(path), "--gpu", GPU, "--vllm-version", "0.19", "--json")
    assert cli.returncode == 0, cli.stderr
    [out] = json.loads(cli.stdout)["plans"]
    [api] = check_stages(path, gpus=GPU, vllm_version="0.19").plans
    assert _figures(out) == _figures(api) == _as_plan(LLAMA, api, kv_cache_dtype="fp8", vllm_version="0.19")
    text = _cli(str(path), "--gpu", GPU, "--vllm-version", "0.19")
    assert f"{api['num_tokens']:,} tokens" in text.stdout
    path.write_text(json.dumps(_doc({"kv_cache_dtype": "fp9"})))
    bad = _cli(str(path), "--gpu", GPU)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith(f"vllm-mem stages: error: {LABEL} engine_args.kv_cache_dtype: ")
