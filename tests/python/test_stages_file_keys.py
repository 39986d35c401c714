"""A stage file's own keys decide the check: model: and max_model_len: are planned by the CLI as
by the API, an unknown key is refused by name, and the HTML names each stage's physical GPU and
marks the stage that fails (issue 18, item 3)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import check_stages

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
EXAMPLES = Path(vllm_mem.__file__).resolve().parent / "examples" / "stages"


def _write(tmp_path: Path, stages: list[dict[str, Any]], name: str = "stages.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"stages": stages}))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vllm_mem.cli", "stages", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def _llama_stage(**extra: Any) -> dict[str, Any]:
    # 0.3 of an L40S (13.36 GiB) cannot hold Llama-3.1-8B's 14.99 GiB of weights plus its profile.
    return {"stage_id": 0, "devices": "0", "gpu_memory_utilization": 0.3, "model": LLAMA, **extra}


def test_cli_plans_the_model_the_file_names(tmp_path: Path) -> None:
    # Before: exit 0 and OK, the model: key ignored, while the API with models= said DOES NOT FIT.
    with_model = _write(tmp_path, [_llama_stage(max_model_len=8192)])
    cli = _cli(str(with_model), "--gpu", "L40S", "--json")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    out = json.loads(cli.stdout)
    api = check_stages(with_model, gpus="L40S", models={0: LLAMA})
    assert out["ok"] is False and api.ok is False
    [plan] = out["plans"]
    assert plan["model"] == LLAMA and plan["fits"] is False and plan["max_model_len"] == 8192
    assert plan["shortfall_bytes"] == api.plans[0]["shortfall_bytes"] > 0
    # The same layout without model: is a pure utilization check, which passes.
    without = _write(tmp_path, [{k: v for k, v in _llama_stage().items() if k != "model"}], "bare.json")
    assert _cli(str(without), "--gpu", "L40S").returncode == 0


def test_file_max_model_len_is_applied(tmp_path: Path) -> None:
    # 0.5 of an L40S leaves Llama-3.1-8B about 6.5 GiB of KV (53k tokens): 8192 fits, 131072 does not.
    short = check_stages(_write(tmp_path, [_llama_stage(gpu_memory_utilization=0.5, max_model_len=8192)]),
                         gpus="L40S")
    long = check_stages(_write(tmp_path, [_llama_stage(gpu_memory_utilization=0.5, max_model_len=131072)],
                               "long.json"), gpus="L40S")
    assert short.ok and short.plans[0]["max_model_len"] == 8192
    assert not long.ok and long.plans[0]["max_model_len"] == 131072
    assert long.plans[0]["failure_phase"] == "max_model_len"
    # engine_args.max_model_len is read the same way (vLLM-Omni's precedence).
    nested = check_stages({"stages": [{"stage_id": 0, "devices": "0", "model": LLAMA,
                                       "engine_args": {"gpu_memory_utilization": 0.5, "max_model_len": 131072}}]},
                          gpus="L40S")
    assert nested.plans[0]["max_model_len"] == 131072 and not nested.ok


def test_models_argument_overrides_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, [_llama_stage(max_model_len=8192)])
    r = check_stages(path, gpus="L40S", models={0: "meta-llama/Llama-3.2-1B-Instruct"})
    assert [p["model"] for p in r.plans] == ["meta-llama/Llama-3.2-1B-Instruct"] and r.ok


@pytest.mark.parametrize(("stage", "field", "hint"), [
    ({"stage_id": 0, "devices": "0", "gpu_memory_utilisation": 0.5},
     "stages[0] (stage 0) gpu_memory_utilisation", "did you mean gpu_memory_utilization?"),
    ({"stage_id": 0, "devices": "0", "engine_args": {"max_model_length": 4096}},
     "stages[0] (stage 0) engine_args.max_model_length", "did you mean max_model_len?"),
    ({"stage_id": 0, "runtime": {"device": "0"}}, "stages[0] (stage 0) runtime.device", "did you mean devices?"),
])
def test_unknown_key_is_an_error_naming_it(tmp_path: Path, stage: dict[str, Any], field: str, hint: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"{field}: unknown key ({hint})")):
        check_stages({"stages": [stage]}, gpus="H100-80GB")
    cli = _cli(str(_write(tmp_path, [stage])), "--gpu", "H100-80GB")
    assert cli.returncode == 2 and cli.stdout == ""
    assert cli.stderr.startswith(f"vllm-mem stages: error: {field}: unknown key") and cli.stderr.count("\n") == 1


def test_unknown_top_level_key_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^top level 'platfroms': unknown key \(did you mean platforms\?\)"):
        check_stages({"stages": [{"stage_id": 0}], "platfroms": {}}, gpus="H100-80GB")


def test_real_deploy_keys_are_accepted_and_unmodelled_ones_noted() -> None:
    # The keys vLLM-Omni's own deploy files carry (vllm_omni/deploy/qwen3_omni_moe.yaml).
    # kv_cache_dtype, enable_prefix_caching and mm_processor_kwargs are plan settings the stage's plan
    # applies (test_stages_engine_settings.py, test_mm_settings.py): none is noted as unmodelled.
    doc = {"async_chunk": True, "connectors": {}, "stages": [
        {"stage_id": 0, "devices": "0", "gpu_memory_utilization": 0.5, "max_num_seqs": 64,
         "trust_remote_code": True, "enable_prefix_caching": False, "async_scheduling": False,
         "default_sampling_params": {"temperature": 0.4}, "input_connectors": {},
         "kv_cache_dtype": "fp8", "mm_processor_kwargs": {"max_pixels": 1003520}}]}
    r = check_stages(doc, gpus="H100-80GB")
    assert r.ok
    assert not [n for n in r.notes if "kv_cache_dtype" in n or "enable_prefix_caching" in n]
    assert not [n for n in r.notes if "mm_processor_kwargs" in n]


def test_stage_html_names_physical_gpus_and_marks_the_failing_stage() -> None:
    check = check_stages(EXAMPLES / "qwen3_omni_moe.overcommitted.yaml", gpus="H100-80GB")
    [failed] = [s for s in check.startup if s.fails]
    assert (failed.stage_id, failed.physical_id, failed.device) == (1, 1, "cuda:0")
    html = check._repr_html_()
    # Start-up rows name the physical GPU, the stage's own cuda:N beside it (three read cuda:0).
    for s in check.startup:
        assert f"GPU {s.physical_id} <span" in html and f"({s.device} in the stage)" in html
    # Exactly one "fails here", on stage 1 in GPU 1's key; stage 0 (which starts) is not marked.
    marks = re.findall(r"stage (\d) \([0-9.]+\) <b[^>]*>&#9664; fails here</b>", html)
    assert marks == ["1"], marks
    gpu1 = html[html.index("<b>GPU 1</b>"):]
    assert "GPU 1, cuda:1 inside the stage" in gpu1 and "GPU 1, cuda:0 inside the stage" in gpu1


def test_file_model_on_a_cpu_stage_is_noted_and_an_unreadable_one_named(tmp_path: Path) -> None:
    cpu = check_stages({"stages": [{"stage_id": 0, "devices": "cpu", "model": LLAMA},
                                   {"stage_id": 1, "devices": "0", "gpu_memory_utilization": 0.5}]}, gpus="L40S")
    assert cpu.ok and cpu.plans == []
    assert any("runs on the CPU: no GPU start-up plan" in n for n in cpu.notes)
    missing = tmp_path / "no_such_model"
    with pytest.raises(ValueError, match=r"^stages\[0\] model: "):
        check_stages({"stages": [_llama_stage(model=str(missing))]}, gpus="L40S")
