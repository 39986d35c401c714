"""Which release accepts which --kv-cache-dtype (rule kv_cache_dtypes_added, plan/vllm_versions.json):
a dtype a later vLLM added is refused for an older release with vLLM's own refusal (pydantic's
literal_error for CacheConfig.cache_dtype) on plan, kv_cache_capacity, sweep and the CLI.

First releases, as CacheDType listed them at the tags (the release wheels' vllm/config/cache.py;
fp8_inc from the versioned API docs): fp8_inc from 0.10.0 (absent at v0.9.2), bfloat16 from 0.11.0
(absent at v0.10.2), fp8_ds_mla from 0.11.1, float16 from 0.18.0 (PR #37199), fp8/int8_per_token_head
and the turboquant names from 0.20.0, int4_per_token_head from 0.25.0 (absent at v0.24.0). nvfp4 is
listed from v0.20.0 but no v0.20.0 backend serves it (FlashInfer raises NotImplementedError): taken
from 0.21.0 (PR #40177)."""

from __future__ import annotations

from typing import Any

import pytest
import vllm_mem
from vllm_mem import cli
from vllm_mem.planner import versions

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"

# Dtypes the planner sizes (docs/kv_cache.md), with the release before their first and the first.
FIRST_RELEASE = [
    ("fp8_per_token_head", "0.19", "0.20"),
    ("int8_per_token_head", "0.19", "0.20"),
    ("nvfp4", "0.20", "0.21"),
    ("int4_per_token_head", "0.24", "0.25"),
    ("fp8_inc", "0.9", "0.10"),
    ("bfloat16", "0.10", "0.11"),
    ("float16", "0.17", "0.18"),
]
# TurboQuant pages are not modelled (NotModelledError) where vLLM takes the name; before, vLLM's refusal.
TURBOQUANT = ["turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"]


@pytest.fixture(autouse=True)
def _no_installed_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "installed_vllm_version", lambda: None)


@pytest.mark.parametrize(("dtype", "before", "first"), FIRST_RELEASE)
def test_plan_accepts_a_kv_dtype_from_its_first_release_and_refuses_it_before(
    dtype: str, before: str, first: str
) -> None:
    p = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, kv_cache_dtype=dtype, vllm_version=first)
    assert p.fits and p.kv_cache is not None and p.kv_cache.num_tokens > 0
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, kv_cache_dtype=dtype, vllm_version=before)
    assert e.value.field == "kv_cache_dtype"
    text = str(e.value)
    assert "Input should be 'auto'" in text
    assert f"[type=literal_error, input_value='{dtype}', input_type=str]" in text
    assert f"accepted from vLLM {first}.0" in text
    # The listed choices are the older release's: the refused name is not among them.
    assert f"'{dtype}'," not in text.split("[type=")[0] and f"or '{dtype}'" not in text


@pytest.mark.parametrize(("dtype", "before", "first"), FIRST_RELEASE)
def test_kv_cache_capacity_follows_the_same_rule(dtype: str, before: str, first: str) -> None:
    tokens = vllm_mem.kv_cache_capacity(LLAMA, 20 << 30, max_model_len=8192, kv_cache_dtype=dtype, vllm_version=first)
    assert tokens.num_tokens > 0
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.kv_cache_capacity(LLAMA, 20 << 30, max_model_len=8192, kv_cache_dtype=dtype, vllm_version=before)
    assert e.value.field == "kv_cache_dtype" and "literal_error" in str(e.value)


@pytest.mark.parametrize("dtype", TURBOQUANT)
def test_turboquant_is_refused_by_release_before_0_20_and_not_modelled_from_it(dtype: str) -> None:
    with pytest.raises(vllm_mem.InvalidArgumentError) as e:
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, kv_cache_dtype=dtype, vllm_version="0.19")
    assert e.value.field == "kv_cache_dtype" and "accepted from vLLM 0.20.0" in str(e.value)
    with pytest.raises(vllm_mem.NotModelledError):
        vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, kv_cache_dtype=dtype, vllm_version="0.20")


def test_dtypes_no_change_names_are_accepted_on_the_oldest_release() -> None:
    for dtype in ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"):
        assert vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192, kv_cache_dtype=dtype, vllm_version="0.8").fits


def test_sweep_rows_of_a_release_without_the_dtype_are_invalid() -> None:
    cols: Any = vllm_mem.sweep(
        LLAMA,
        gpus=["H100-80GB"],
        max_model_len=8192,
        kv_cache_dtype=["fp8", "nvfp4"],
        vllm_version="0.20",
        as_frame=False,
    )
    phases = dict(zip([cols["kv_cache_dtype"][i] for i in range(2)], cols["failure_phase"], strict=True))
    assert phases["nvfp4"] == "invalid" and phases["fp8"] != "invalid"
    newer: Any = vllm_mem.sweep(
        LLAMA, gpus=["H100-80GB"], max_model_len=8192, kv_cache_dtype=["nvfp4"], vllm_version="0.21", as_frame=False
    )
    assert list(newer["failure_phase"]) != ["invalid"]


def _cli_plan_nvfp4(version: str) -> int:
    args = ["plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len", "8192", "--kv-cache-dtype", "nvfp4"]
    return cli.main([*args, "--vllm-version", version])


def test_cli_refuses_the_dtype_for_an_older_release(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli_plan_nvfp4("0.20") == 2
    err = capsys.readouterr().err
    assert "--kv-cache-dtype" in err and "validation error for CacheConfig" in err
    assert _cli_plan_nvfp4("0.21") == 0
