"""vLLM-Omni stage configs on shared GPUs: parsing, per-device sums, start-up, CLI."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import check_memory_imbalance, check_stages, load_stage_config

H100_BYTES = 85029158912  # torch's total_memory of an H100-80GB
GIB = 1 << 30
EXAMPLES = Path(vllm_mem.__file__).resolve().parent / "examples" / "stages"
SEED_OLD = EXAMPLES / "qwen3_omni_moe.stage_args.yaml"
SEED_NEW = EXAMPLES / "qwen3_omni_moe.stages.yaml"
OVER = EXAMPLES / "qwen3_omni_moe.overcommitted.yaml"


def seed_dict(stage1_util: float = 0.3) -> dict[str, Any]:
    return {
        "stages": [
            {"stage_id": 0, "devices": "0,1", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.6},
            {"stage_id": 1, "devices": "1", "gpu_memory_utilization": stage1_util},
            {"stage_id": 2, "devices": "0", "gpu_memory_utilization": 0.1},
        ]
    }


@pytest.mark.parametrize("path", [SEED_OLD, SEED_NEW], ids=["stage_args", "stages"])
def test_seed_example_both_formats_offline(path: Path) -> None:
    result = check_stages(path, gpus=H100_BYTES)
    assert result.ok, str(result)
    assert result.format == ("stage_args" if path == SEED_OLD else "stages")
    assert result.device(0).utilization == "0.7"
    assert result.device(1).utilization == "0.9"
    assert result.device(1).utilization_expression == "0.6 (stage 0) + 0.3 (stage 1) = 0.9"
    assert [s["stage_id"] for s in result.device(0).stages] == [0, 2]
    assert [s["stage_id"] for s in result.device(1).stages] == [0, 1]
    # Bytes are vLLM's ceil(total * util) per stage; headroom is what is left.
    want = math.ceil(H100_BYTES * 0.6) + math.ceil(H100_BYTES * 0.3)
    assert result.device(1).requested_bytes == want
    assert result.device(1).headroom_bytes == H100_BYTES - want
    assert result.device(1).headroom == "0.1"
    assert not result.problems
    assert all(not p.fails for p in result.startup)
    report = str(result)
    assert "0.6 (stage 0) + 0.3 (stage 1) = 0.9" in report and ": OK" in report


def test_catalog_gpu_name_matches_total() -> None:
    by_name = check_stages(SEED_OLD, gpus="H100-80GB")
    by_bytes = check_stages(SEED_OLD, gpus=H100_BYTES)
    assert by_name.device(0).name == "H100-80GB"
    assert by_name.device(1).requested_bytes == by_bytes.device(1).requested_bytes


def test_both_formats_read_the_same_layout() -> None:
    old, new = load_stage_config(SEED_OLD), load_stage_config(SEED_NEW)
    assert old.format == "stage_args" and new.format == "stages"
    for a, b in zip(old.stages, new.stages, strict=True):
        assert (a.stage_id, a.resident_devices, a.utilization_text, a.tensor_parallel_size) == (
            b.stage_id, b.resident_devices, b.utilization_text, b.tensor_parallel_size)
    assert any("platforms" in n for n in new.notes)
    assert any("old schema" in n for n in old.notes)


def test_over_committed_fails_with_exact_reason() -> None:
    result = check_stages(OVER, gpus=H100_BYTES)
    assert not result.ok
    requested = math.ceil(H100_BYTES * 0.6) + math.ceil(H100_BYTES * 0.5)
    gpu1 = result.device(1)
    assert gpu1.over_committed and gpu1.utilization == "1.1"
    assert gpu1.reason == (
        "GPU 1 is over-committed: the gpu_memory_utilization of its resident stages sums to "
        "0.6 (stage 0) + 0.5 (stage 1) = 1.1 > 1.0; they request "
        f"{vllm_mem.format_gib(requested)} GiB of its {vllm_mem.format_gib(H100_BYTES)} GiB "
        f"({vllm_mem.format_gib(requested - H100_BYTES)} GiB too much)"
    )
    assert gpu1.reason in result.problems
    failed = [p for p in result.startup if p.fails]
    assert [p.stage_id for p in failed] == [1]
    assert failed[0].message.startswith("Free memory on device cuda:0 (")
    assert "less than desired GPU memory utilization (0.5, " in failed[0].message
    assert any(s.startswith("lower stage 1's gpu_memory_utilization from 0.5 to 0.4") for s in result.suggestions)
    assert result.oom_advice


def test_live_free_memory_prediction_and_concrete_fix() -> None:
    held = 12 * GIB  # another process on GPU 1
    result = check_stages(seed_dict(), gpus="H100-80GB", free_memory_bytes={0: H100_BYTES, 1: H100_BYTES - held})
    assert not result.ok
    (failed,) = [p for p in result.startup if p.fails]
    free_at_start = H100_BYTES - held - math.ceil(H100_BYTES * 0.6)
    assert (failed.stage_id, failed.physical_id, failed.free_bytes) == (1, 1, free_at_start)
    lowered = [s for s in result.suggestions if s.startswith("lower stage 1's")]
    assert lowered, result.suggestions
    value = float(lowered[0].split(" to ")[1].split()[0])
    assert math.ceil(H100_BYTES * value) <= free_at_start < math.ceil(H100_BYTES * (value + 0.01))
    assert any("other processes hold 12.0 GiB" in s for s in result.suggestions)


def test_move_suggestion_to_an_idle_gpu() -> None:
    result = check_stages(seed_dict(0.5), gpus=["H100-80GB"] * 3)
    assert 'move stage 1 to GPU 2 (devices: "2"); GPU 2 would carry 0.5' in result.suggestions


def test_cuda_visible_devices_maps_to_physical() -> None:
    result = check_stages(SEED_NEW, gpus=H100_BYTES, cuda_visible_devices="4,6")
    assert [d.physical_id for d in result.devices] == [4, 6]
    assert result.device(6).utilization == "0.9"
    with pytest.raises(ValueError, match=r"stages\[0\] \(stage 0\) devices: device index 1 is outside"):
        check_stages(SEED_NEW, gpus=H100_BYTES, cuda_visible_devices="4")


def test_to_dict_and_html() -> None:
    result = check_stages(SEED_OLD, gpus="H100-80GB")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["ok"] is True
    assert [d["utilization"] for d in data["devices"]] == ["0.7", "0.9"]
    html = result._repr_html_()
    assert "<table>" in html and "0.9" in html


BAD_CASES = [
    ({"stages": [{"stage_id": 0}, {"stage_id": 0}]}, r"stages\[1\] \(stage 0\) stage_id: duplicate"),
    ({"stages": [{"stage_id": 1, "devices": "0,1", "tensor_parallel_size": 4}]},
     r"\(stage 1\) tensor_parallel_size: tensor_parallel_size 4 needs 4 GPU\(s\)"),
    ({"stage_args": [{"stage_id": 2, "engine_args": {"gpu_memory_utilization": 1.5}}]},
     r"stage_args\[0\] \(stage 2\) engine_args.gpu_memory_utilization: must be in \(0, 1\]"),
    ({"stages": [{"devices": "0"}]}, r"stages\[0\] stage_id: missing"),
    ({"stages": [{"stage_id": 3, "devices": "0,a"}]}, r"\(stage 3\) devices: device 'a'"),
    ({"stages": [{"stage_id": 3, "runtime": {"devices": "7"}}]},
     r"\(stage 3\) runtime.devices: device index 7 is outside"),
    ({"model": "x"}, r"top level: missing the stages"),
]


@pytest.mark.parametrize("config,pattern", BAD_CASES)
def test_bad_input_names_stage_and_field(config: dict[str, Any], pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        check_stages(config, gpus=["H100-80GB", "H100-80GB"])


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    bad = tmp_path / "list.yaml"
    bad.write_text("- stage_id: 0\n")
    with pytest.raises(ValueError, match="top level: a stage config must be a mapping"):
        load_stage_config(bad)


def test_unknown_gpu_is_bad_input() -> None:
    with pytest.raises(ValueError, match="gpu"):
        check_stages(SEED_OLD, gpus="no-such-gpu-9000")


def test_memory_imbalance() -> None:
    balanced = check_memory_imbalance([70 * GIB, 68 * GIB])
    assert not balanced.imbalanced and "balanced" in str(balanced)
    skewed = check_memory_imbalance([70 * GIB, 30 * GIB, 70 * GIB])
    assert skewed.imbalanced and skewed.min_rank == 1 and skewed.warning_ranks == [0, 2]
    assert "rank 1: 30.0 GiB" in skewed.message
    assert skewed.lost_bytes == 40 * GIB
    assert not check_memory_imbalance([95, 100], ratio=0.95).imbalanced
    with pytest.raises(ValueError, match="ratio"):
        check_memory_imbalance([1, 2], ratio=2.0)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "vllm_mem.cli", "stages", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_exit_codes(tmp_path: Path) -> None:
    ok = run_cli(str(SEED_OLD), "--gpu", "H100-80GB")
    assert ok.returncode == 0, ok.stderr
    assert "0.6 (stage 0) + 0.3 (stage 1) = 0.9" in ok.stdout
    over = run_cli(str(OVER), "--gpu", "H100-80GB", "--json")
    assert over.returncode == 1, over.stderr
    assert json.loads(over.stdout)["devices"][1]["utilization"] == "1.1"
    bad = tmp_path / "bad.yaml"
    bad.write_text("stages:\n  - stage_id: 0\n    gpu_memory_utilization: 1.2\n")
    rc2 = run_cli(str(bad), "--gpu", "H100-80GB")
    assert rc2.returncode == 2
    assert "(stage 0) gpu_memory_utilization" in rc2.stderr
    missing = run_cli(str(tmp_path / "nope.yaml"), "--gpu", "H100-80GB")
    assert missing.returncode == 2


# --- utilization assignment and per-rank plans ------------------------------------------------

from vllm_mem import StageNeed, assign_utilizations, kv_cache_capacity, plan_ranks  # noqa: E402


def test_assign_utilizations_from_bytes() -> None:
    needs = [
        StageNeed(0, devices=[0, 1], tensor_parallel_size=2, fixed_bytes=20 * GIB, kv_bytes_needed=10 * GIB),
        StageNeed(1, devices=[1], fixed_bytes=6 * GIB, kv_bytes_needed=4 * GIB),
        {"stage_id": 2, "devices": [0], "fixed_bytes": 2 * GIB, "kv_bytes_needed": 1 * GIB},
    ]
    a = assign_utilizations(needs, "H100-80GB")
    assert a.feasible, a.message
    for s in a.stages:
        assert s.kv_bytes >= s.kv_bytes_needed and s.kv_headroom >= 1.0
        assert float(s.gpu_memory_utilization) >= float(s.min_gpu_memory_utilization)
    assert all(float(d["utilization"]) <= 0.95 for d in a.devices)
    # The assignment, written back as a stage config, passes the check with the same sums.
    check = check_stages(a.stage_config(), gpus="H100-80GB")
    assert check.ok
    assert [d.utilization for d in check.devices] == [d["utilization"] for d in a.devices]


def test_assign_utilizations_names_the_unsatisfied_stage() -> None:
    needs = [
        StageNeed(0, devices=[0, 1], tensor_parallel_size=2, fixed_bytes=20 * GIB, kv_bytes_needed=10 * GIB),
        StageNeed(1, devices=[1], fixed_bytes=6 * GIB, kv_bytes_needed=60 * GIB),
    ]
    a = assign_utilizations(needs, ["H100-80GB", "H100-80GB"])
    assert not a.feasible
    assert (a.unsatisfied_stage_id, a.unsatisfied_device) == (1, 1)
    assert a.shortfall_bytes > 0
    assert "stage 1 cannot be satisfied on GPU 1" in a.message
    fixed = [needs[0], StageNeed(1, devices=[1], fixed_bytes=6 * GIB, kv_bytes_needed=60 * GIB - a.shortfall_bytes)]
    assert assign_utilizations(fixed, "H100-80GB", step=0.000001).feasible


def test_assign_utilizations_sizes_models_with_the_planner() -> None:
    needs = [
        StageNeed(0, devices=[0, 1], tensor_parallel_size=2, model="meta-llama/Llama-3.1-8B-Instruct",
                  max_model_len=8192, concurrency=16),
        StageNeed(1, model="microsoft/phi-2", max_model_len=2048, concurrency=8),
    ]
    a = assign_utilizations(needs, "H100-80GB", num_gpus=2)
    assert a.feasible, a.message
    llama = a.stages[0]
    # The KV budget it was given really serves the concurrency, by the KV sizing itself.
    cap = kv_cache_capacity("meta-llama/Llama-3.1-8B-Instruct", llama.kv_bytes, max_model_len=8192,
                            tensor_parallel_size=2)
    assert cap.max_concurrency >= 16
    assert len(a.stages[1].devices) == 1


def test_assign_utilizations_bad_input() -> None:
    with pytest.raises(ValueError, match="stage 0 devices"):
        assign_utilizations([StageNeed(0, devices=[0], tensor_parallel_size=2, fixed_bytes=1, kv_bytes_needed=1)],
                            ["H100-80GB", "H100-80GB"])
    with pytest.raises(ValueError, match="stage 3: give either"):
        assign_utilizations([StageNeed(3, devices=[0])], "H100-80GB")


def test_plan_ranks_tightest_and_min_blocks() -> None:
    r = plan_ranks("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", tensor_parallel_size=2,
                   pipeline_parallel_size=2, gpu_memory_utilization=0.9, max_model_len=8192,
                   overhead_bytes=[2 * GIB, 4 * GIB])
    assert r.fits, r.failure_message
    assert r.num_blocks == min(w.num_blocks for w in r.workers)
    tight = r.workers[r.tightest_rank]
    assert tight.holds_lm_head and tight.extra_blocks == 0
    assert r.workers[0].holds_embedding and not r.workers[0].holds_lm_head
    assert all(w.budget_bytes == math.ceil(H100_BYTES * 0.9) for w in r.workers)
    smaller = plan_ranks("meta-llama/Llama-3.1-8B-Instruct", [H100_BYTES, H100_BYTES - 8 * GIB],
                         tensor_parallel_size=2, max_model_len=8192)
    assert smaller.tightest_rank == 1 and smaller.workers[0].extra_blocks > 0
    assert "rank 1" in str(smaller)


def test_stage_plans_with_models() -> None:
    models = {0: "Qwen/Qwen3-30B-A3B", 1: "Qwen/Qwen3-8B"}
    r = check_stages(SEED_NEW, gpus="H100-80GB", models=models, max_model_len={0: 32768, 1: 8192})
    assert [p["stage_id"] for p in r.plans] == [0, 1]
    talker = r.plans[1]
    assert talker["physical_id"] == 1
    # Planned within its own budget, with the free memory left when it starts (after stage 0).
    assert talker["requested_bytes"] == math.ceil(H100_BYTES * 0.3)
    assert talker["free_bytes"] == H100_BYTES - math.ceil(H100_BYTES * 0.6)
    assert talker["fits"] and talker["max_concurrency"] > 1
    thinker_1gpu = check_stages(seed_dict(), gpus="H100-80GB", models={0: "Qwen/Qwen3-30B-A3B"}).plans[0]
    # TP 2 splits the weights.
    assert thinker_1gpu["weights_bytes"] < vllm_mem.ModelSpec.from_hf_config("Qwen/Qwen3-30B-A3B").weight_bytes()
    assert "Stage plans" in str(r)


def test_stage_plan_that_does_not_fit_gets_a_raise() -> None:
    config = seed_dict()
    config["stages"][2]["gpu_memory_utilization"] = 0.05
    r = check_stages(config, gpus="H100-80GB", models={2: "Qwen/Qwen3-8B"}, max_model_len=4096)
    assert not r.ok
    (plan,) = r.plans
    assert not plan["fits"] and plan["shortfall_bytes"] > 0
    assert plan["line"] in r.problems
    (raise_,) = [s for s in r.suggestions if s.startswith("raise stage 2's gpu_memory_utilization")]
    value = float(raise_.split(" to ")[1].split()[0])
    assert math.ceil(H100_BYTES * value) >= plan["requested_bytes"] + plan["shortfall_bytes"]
    config["stages"][2]["gpu_memory_utilization"] = value
    again = check_stages(config, gpus="H100-80GB", models={2: "Qwen/Qwen3-8B"}, max_model_len=4096)
    assert again.plans[0]["failure_phase"] != plan["failure_phase"] or again.plans[0]["fits"]


def test_live_check_reads_the_visible_gpus() -> None:
    from vllm_mem.testing import SimulatedDevice

    with SimulatedDevice(H100_BYTES, num_devices=2) as dev:
        dev.other_process_alloc(12 * GIB, device=1)
        result = check_stages(SEED_OLD)  # gpus=None: measure now
    assert [d.free_source for d in result.devices] == ["live", "live"]
    assert result.device(0).total_bytes == H100_BYTES
    assert result.device(1).free_bytes <= H100_BYTES - 12 * GIB
    (failed,) = [p for p in result.startup if p.fails]
    assert failed.stage_id == 1 and failed.physical_id == 1
    assert any("other processes hold" in s for s in result.suggestions)
    with SimulatedDevice(H100_BYTES, num_devices=1):
        with pytest.raises(ValueError, match=r"\(stage 0\) runtime.devices: device index 1 is outside"):
            check_stages(SEED_OLD)
