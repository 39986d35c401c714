"""The settings table (csrc/core/include/vllm_mem/plan/plan_request.h): one row per setting is the
only source of the request objects' keywords and properties, of every bound (C++ and Python
alike), of the CLI's flags, of the typed keywords and of docs/settings.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import vllm_mem
from test_hybrid_models import QWEN3_NEXT
from vllm_mem import _C, cli
from vllm_mem.errors import InvalidArgumentError
from vllm_mem.kv_cache import KvCacheSettings
from vllm_mem.planner.evaluate import PlanRequest

ROOT = Path(__file__).resolve().parents[2]
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GiB = 1 << 30


def _generator():
    spec = importlib.util.spec_from_file_location("gen_settings", ROOT / "scripts" / "gen_settings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_settings"] = module
    spec.loader.exec_module(module)
    return module


def test_generated_files_match_the_table() -> None:
    """python/vllm_mem/_settings.py and docs/settings.md are what scripts/gen_settings.py writes
    from the table now: a row changed without regenerating fails here."""
    gen = _generator()
    rows = list(_C.plan_settings())
    assert gen.TYPES.read_text() == gen.types_text(rows), "run scripts/gen_settings.py"
    assert gen.DOCS.read_text() == gen.docs_text(rows), "run scripts/gen_settings.py"


def test_rows_are_the_request_objects_properties() -> None:
    rows = list(_C.plan_settings())
    kv_names = [r["name"] for r in rows if r["kv"]]
    plan_names = [r["name"] for r in rows]
    settings, request = KvCacheSettings(), PlanRequest()
    for name in kv_names:
        assert hasattr(settings, name), name
    for name in plan_names:
        assert hasattr(request, name), name
    assert not hasattr(settings, "max_num_seqs")  # a plan row, not a KV one
    assert {"cpu_offload_gb", "max_model_len", "block_size"} <= set(plan_names)


def test_unknown_keyword_names_the_closest() -> None:
    with pytest.raises(TypeError, match=r"'max_model_length'.*did you mean 'max_model_len'"):
        PlanRequest(max_model_length=4096)
    with pytest.raises(TypeError, match=r"'max_model_length'.*did you mean 'max_model_len'"):
        vllm_mem.plan(LLAMA, "H100", max_model_length=4096)
    with pytest.raises(TypeError, match="max_num_seqs"):
        vllm_mem.kv_cache_capacity(LLAMA, 10 * GiB, max_num_seqs=4)  # a plan setting


def test_values_are_checked_by_their_row_with_the_field() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        PlanRequest(gpu_memory_utilization=1.5)
    assert info.value.field == "gpu_memory_utilization"
    with pytest.raises(TypeError) as type_info:
        PlanRequest(max_model_len="4096")
    assert getattr(type_info.value, "field", None) == "max_model_len"
    request = PlanRequest(max_model_len=4096)
    with pytest.raises(InvalidArgumentError, match="^block_size: must be one of 1, 8, 16"):
        request.block_size = 24


def test_sweep_refuses_a_block_size_vllm_refuses() -> None:
    """Before, the sweep checked block_size against [1, 2^30] (Python's bound) while plan()'s
    core took only vLLM's choices: block_size=[3] was swept. One row, one bound now."""
    with pytest.raises(InvalidArgumentError) as info:
        vllm_mem.sweep(LLAMA, "H100-80GB", block_size=[16, 3], as_frame=False)
    assert info.value.field == "block_size"
    cols = vllm_mem.sweep(LLAMA, "H100-80GB", block_size=[16, 32], max_model_len=8192, as_frame=False)
    assert list(cols["fits"]) == [True, True]


def test_a_request_object_is_reused() -> None:
    request = PlanRequest(max_model_len=8192, gpu_memory_utilization=0.9)
    by_object = vllm_mem.plan(LLAMA, "H100", request=request)
    by_keywords = vllm_mem.plan(LLAMA, "H100", max_model_len=8192, gpu_memory_utilization=0.9)
    assert by_object.to_dict() == by_keywords.to_dict()
    longer = vllm_mem.plan(LLAMA, "H100", request=request, max_model_len=16384)
    assert longer.max_model_len == 16384 and request.max_model_len == 8192  # replaced in a copy
    settings = KvCacheSettings(max_model_len=4096, vllm_version="0.19")
    assert vllm_mem.kv_cache_capacity(LLAMA, 10 * GiB, settings=settings).to_dict() == \
        vllm_mem.kv_cache_capacity(LLAMA, 10 * GiB, max_model_len=4096, vllm_version="0.19").to_dict()


def test_a_plan_keeps_what_was_asked() -> None:
    p = vllm_mem.plan(LLAMA, "H100", max_model_len=8192)
    asked = p.request
    assert isinstance(asked, PlanRequest)
    # As given: the release's defaults and the environment are the plan's settings, not the request's.
    assert asked.max_model_len == 8192 and not asked.gpu_memory_utilization and asked.vllm_version == ""
    assert p.settings["gpu_memory_utilization"] > 0
    # A copy: asking again with one change leaves the plan's own request as it was.
    again = vllm_mem.plan(LLAMA, "H100", request=asked.replace(max_model_len=4096))
    assert again.max_model_len == 4096 and p.request.max_model_len == 8192
    asked.max_model_len = 1024
    assert p.request.max_model_len == 8192


@pytest.mark.parametrize("version", ["0.11.0", "0.20.0"])
def test_kv_entry_points_agree_on_hybrid_alignment(version: str) -> None:
    """kv_cache_memory_shortfall / check_enough_kv_cache_memory took no vllm_version and sized
    with the newest release's hybrid alignment (max(kernel block, --block-size), PR 37467) while
    kv_cache_capacity followed the asked release (alignment 16 before 0.20). Each now answers
    "fits" exactly where kv_cache_capacity finds one request's bytes."""
    kw = dict(max_model_len=32768, tensor_parallel_size=2, block_size=64, vllm_version=version)
    cap = vllm_mem.kv_cache_capacity(QWEN3_NEXT, 10 * GiB, **kw)
    need = cap.bytes_per_request
    assert vllm_mem.kv_cache_memory_shortfall(QWEN3_NEXT, need, **kw) is None
    vllm_mem.check_enough_kv_cache_memory(QWEN3_NEXT, need, **kw)
    assert vllm_mem.kv_cache_memory_shortfall(QWEN3_NEXT, need - 1, **kw) is not None
    with pytest.raises(ValueError):
        vllm_mem.check_enough_kv_cache_memory(QWEN3_NEXT, need - 1, **kw)
    with pytest.raises(ValueError):
        vllm_mem.kv_cache_capacity(QWEN3_NEXT, need - 1, **kw)
    assert vllm_mem.estimate_max_model_len(QWEN3_NEXT, need, **kw) == 32768


def test_cpu_offload_gb_lowers_the_weights() -> None:
    """--cpu-offload-gb (vLLM's maybe_offload_to_cpu, model_executor/models/utils.py): whole
    decoder-layer parameters move to CPU memory, first layers first, until the per-GPU budget is
    used. Llama-3.1-8B's layers hold more than 4 GiB in bf16, so the weights drop by 4 GiB and the
    KV budget grows by as much."""
    base = vllm_mem.plan(LLAMA, "H100", max_model_len=8192)
    offloaded = vllm_mem.plan(LLAMA, "H100", max_model_len=8192, cpu_offload_gb=4)
    assert base.weights_bytes - offloaded.weights_bytes == 4 * GiB
    assert offloaded.available_kv_cache_bytes - base.available_kv_cache_bytes == 4 * GiB
    from vllm_mem.vllm_args import plan_from_vllm_args  # vllm serve ... --cpu-offload-gb 4

    served = plan_from_vllm_args(["vllm", "serve", LLAMA, "--max-model-len", "8192", "--cpu-offload-gb", "4"], "H100")
    assert served.plan.to_dict() == offloaded.to_dict()
    assert cli.main(["plan", LLAMA, "--gpu", "H100", "--max-model-len", "8192", "--cpu-offload-gb", "4"]) == 0
    with pytest.raises(InvalidArgumentError) as info:
        vllm_mem.plan(LLAMA, "H100", cpu_offload_gb=-1)
    assert info.value.field == "cpu_offload_gb"


def test_cli_flags_come_from_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    # A flag the table generates, refused by its row and named by its flag (the error's .field).
    assert cli.main(["plan", LLAMA, "--gpu", "H100", "--mamba-cache-mode", "sometimes"]) == 2
    assert "--mamba-cache-mode" in capsys.readouterr().err
    assert cli.main(["plan", LLAMA, "--gpu", "H100", "--max-model-len", "8192", "--cudagraph-mode", "PIECEWISE"]) == 0
    capsys.readouterr()
    assert cli.main(["plan", LLAMA, "--gpu", "H100", "--max-concurrent-batches", "2"]) == 2  # no vLLM flag
