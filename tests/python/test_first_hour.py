"""What a new user meets in the first hour (issue 18 items 6, 7, 8): one size parser, flags in
CLI errors, suggestions that help, the vision-encoder caveat, hints, help text, whole example
descriptions, docs that cite only the repository."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import vllm_mem
from vllm_mem import units
from vllm_mem.cli import build_parser
from vllm_mem.cli.options import api_words_to_flags
from vllm_mem.pytest_plugin import parse_size as plugin_parse_size

# The release these figures were written for: 0.21, the last whose V1 model runner serves every dense
# model with its CUDA-graph estimate in the KV budget (0.21; 0.22-0.24 give Model Runner V2 to listed
# architectures, Llama from 0.23); from 0.25 Model Runner V2 serves
# dense models and budgets no graphs (vllm_versions.json "model_runner"), which the newest profile
# would apply.
V1_GRAPHS = "0.21"

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GIB = 1 << 30
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vllm_mem.cli", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def _error_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    return r.stderr


# ---- one size parser ---------------------------------------------------------------------------

def test_80gb_is_refused_with_both_readings_never_74_51_gib() -> None:
    # Before: --gpu 80GB planned a 74.51 GiB GPU and said "as CUDA reports it".
    line = _error_line(_cli("plan", LLAMA, "--gpu", "80GB"))
    assert "'80GB' is ambiguous: 80 x 10**9 bytes is 74.51 GiB" in line
    for gpu in ("H100-80GB", "A100-80GB"):
        assert f"{gpu} {round(vllm_mem.lookup_gpu(gpu).total_memory_gib, 2)} GiB" in line
    assert "(estimated)" in line  # A100-PCIe-80GB's total is a catalog estimate


def test_gb_naming_one_catalog_gpu_plans_that_gpu() -> None:
    r = _cli("plan", LLAMA, "--gpu", "40GB", "--max-model-len", "8192", "--json")
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    assert out["gpu"] == "A100-40GB"
    assert out["inputs"]["total_memory_bytes"] == vllm_mem.lookup_gpu("A100-40GB").total_memory_bytes


def test_binary_sizes_are_exact_and_misspellings_refused() -> None:
    r = _cli("plan", LLAMA, "--gpu", "80GiB", "--max-model-len", "8192", "--json")
    assert json.loads(r.stdout)["inputs"]["total_memory_bytes"] == 80 * GIB
    line = _error_line(_cli("plan", LLAMA, "--gpu", "512MB"))
    assert "'512MB' is ambiguous: 512 MB is 512 x 10**6 bytes, or 512 MiB; no catalog GPU" in line
    line = _error_line(_cli("plan", LLAMA, "--gpu", "33GB"))  # no GPU is sold as 33 GB
    assert "33 x 10**9 bytes is 30.73 GiB, or 33 GiB" in line and "exact size such as 33GiB" in line
    line = _error_line(_cli("plan", LLAMA, "--gpu", "80gib"))
    assert "--gpu: '80gib' has unit 'gib'" in line and "did you mean 'GiB'" in line


def test_the_plugin_and_the_cli_share_the_parser() -> None:
    for text in ("2 GiB", "512MiB", "1.5 GiB", "0 B"):
        assert plugin_parse_size(text) == units.parse_size(text)
    for text in ("80GB", "2G", "512 mib"):
        with pytest.raises(ValueError) as plugin:
            plugin_parse_size(text, "limit")
        with pytest.raises(ValueError) as shared:
            units.parse_size(text, "limit")
        assert str(plugin.value) == str(shared.value)
    with pytest.raises(ValueError, match=r"read two ways \(80 x 10\*\*9 bytes = 74.51 GiB, or 80 GiB = "
                                         r"85899345920 bytes\)"):
        units.parse_size("80GB", "limit")


def test_estimated_catalog_totals_say_so() -> None:
    est = str(vllm_mem.plan(LLAMA, gpu="L40", max_model_len=8192))
    assert "L40 (44.52 GiB each, estimated)" in est
    [row] = [line for line in est.splitlines() if line.strip().startswith("total memory")]
    assert "estimated, +-" in row and "cudaMemGetInfo" not in row
    measured = str(vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192))
    assert "as CUDA reports it" in measured and "cudaMemGetInfo total (catalog: measured)" in measured
    given = str(vllm_mem.plan(LLAMA, total_memory_bytes=80 * GIB, max_model_len=8192))
    assert "(80.0 GiB each, as given)" in given and "as CUDA reports it" not in given
    # The same in JSON and in the notebook title.
    figures = {gpu: vllm_mem.plan(LLAMA, gpu=gpu, max_model_len=8192) for gpu in ("L40", "H100-80GB")}
    assert figures["L40"].to_dict()["inputs"]["total_memory_figure"] == "estimated"
    assert figures["H100-80GB"].to_dict()["inputs"]["total_memory_figure"] == "measured"
    assert "(44.52 GiB, estimated)" in figures["L40"]._repr_html_()
    assert "(79.19 GiB)" in figures["H100-80GB"]._repr_html_()
    assert vllm_mem.plan(LLAMA, total_memory_bytes=80 * GIB, max_model_len=8192).to_dict()["inputs"][
        "total_memory_figure"] == "given"


# ---- CLI errors name flags --------------------------------------------------------------------

def test_cli_errors_name_flags_not_python_keywords(tmp_path: Path) -> None:
    line = _error_line(_cli("plan", LLAMA, "--gpu", "H100-90GB"))
    assert "give --total-memory-gib for a GPU not in the catalog" in line and "total_memory_bytes" not in line
    line = _error_line(_cli("stages", "qwen3_omni_moe", "--gpu", "H100-90GB"))
    assert "give --gpu with its size (80GiB)" in line and "total_memory_bytes" not in line
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "zzz_unknown", "hidden_size": 64, "num_attention_heads": 8,
                                  "num_hidden_layers": 2, "vocab_size": 10}))
    line = _error_line(_cli("plan", str(config), "--gpu", "H100"))
    assert "--allow-unknown" in line and "allow_unknown" not in line and "vllm_mem." not in line


def test_api_keywords_become_the_flags_of_the_command() -> None:
    args = build_parser().parse_args(["plan", LLAMA, "--gpu", "H100"])
    fields = args._cli_fields
    assert api_words_to_flags("x has no safetensors checkpoint: use weights_source='config'", fields) == \
        "x has no safetensors checkpoint: use --weights-source config"
    assert api_words_to_flags("allow_unknown=True (--allow-unknown) sizes it", fields) == "--allow-unknown sizes it"
    assert api_words_to_flags("keep some_keyword=True as is", fields) == "keep some_keyword=True as is"


@pytest.mark.parametrize("typed", [["--tp", "2"], ["--tp=2"]])
def test_tp_gets_a_hint(typed: list[str]) -> None:
    line = _error_line(_cli("plan", LLAMA, "--gpu", "H100", *typed))
    assert line.rstrip().endswith("did you mean --tensor-parallel-size / -tp?")


def test_help_texts_have_no_restructuredtext_markup() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        text = p.format_help()
        assert "`" not in text and ":func:" not in text, name
    assert "`" not in parser.format_help()


def test_list_examples_prints_whole_descriptions() -> None:
    r = _cli("stages", "--list-examples", "--json")
    rows = {row["name"]: row["summary"] for row in json.loads(r.stdout)}
    # Before: the first comment line only, cut mid-sentence ("... which stage 0's").
    assert rows["qwen3_omni_moe.overcommitted"].endswith("says what to lower or move.")
    assert all(s.endswith(".") for s in rows.values()), rows
    text = _cli("stages", "--list-examples").stdout
    assert "says what to lower or move." in text and "`" not in text


# ---- suggestions, caveats ------------------------------------------------------------------------

def test_70b_on_four_a100_40gb_suggests_context_and_budget_and_nothing_empty() -> None:
    plan = vllm_mem.plan("meta-llama/Llama-3.1-70B-Instruct", gpu="A100-40GB", vllm_version=V1_GRAPHS,
                         tensor_parallel_size=4)
    assert not plan.fits
    settings = [s.setting for s in plan.suggestions]
    assert any("--max-model-len" in s for s in settings), settings
    assert any("--gpu-memory-utilization" in s for s in settings), settings
    # Before: "--kv-cache-dtype fp8 (frees 0.00 GiB)" was listed.
    assert all(s.fits_after or s.bytes_freed >= GIB // 100 for s in plan.suggestions), plan.suggestions
    [combo] = [s for s in plan.suggestions if "--max-model-len" in s.setting]
    assert combo.fits_after
    length = int(re.search(r"--max-model-len (\d+)", combo.setting)[1])
    util = float(re.search(r"--gpu-memory-utilization ([0-9.]+)", combo.setting)[1])
    assert vllm_mem.plan("meta-llama/Llama-3.1-70B-Instruct", gpu="A100-40GB", vllm_version=V1_GRAPHS,
                         tensor_parallel_size=4,
                         gpu_memory_utilization=util, max_model_len=length).fits
    assert "frees 0.00 GiB" not in str(plan)


def test_vision_language_plan_carries_the_encoder_profiling_caveat() -> None:
    # A Pixtral tower under the LLaVA wrapper (Pixtral-12B's Hugging Face layout) has no dummy-item rule
    # yet (Qwen2.5-VL, Llama-4-Scout and then Kimi-VL, this test's models until their processors got one,
    # now plan the encoder run: test_multimodal_profile_processors.py). Built from Mistral-Small-3.1's
    # collected config in tests/data, its wrapper swapped for LLaVA's.
    assert vllm_mem.plan("Qwen/Qwen2.5-VL-7B-Instruct", gpu="H100-80GB", max_model_len=8192).to_dict()["caveats"] == []
    scout = vllm_mem.plan("meta-llama/Llama-4-Scout-17B-16E-Instruct", gpu="H100-80GB", tensor_parallel_size=4,
                          max_model_len=8192)
    assert scout.fits and scout.to_dict()["caveats"] == []
    configs = json.loads((ROOT / "tests" / "data" / "multimodal_configs.json").read_text())
    kimi = vllm_mem.plan(configs["moonshotai/Kimi-VL-A3B-Instruct"]["config"], gpu="H100-80GB", max_model_len=8192)
    assert kimi.fits and kimi.to_dict()["caveats"] == []
    pixtral_llava = {
        **configs["mistralai/Mistral-Small-3.1-24B-Instruct-2503"]["config"],
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
    }
    plan = vllm_mem.plan(pixtral_llava, gpu="H100-80GB", max_model_len=8192)
    assert plan.fits
    [caveat] = plan.to_dict()["caveats"]
    assert "image encoder" in caveat and "not modelled" in caveat
    assert f"caveat: {caveat}" in str(plan)
    assert "Caveat:" in plan._repr_html_() and "image encoder" in plan._repr_html_()
    text_only = vllm_mem.plan(LLAMA, gpu="H100-80GB", max_model_len=8192)
    assert text_only.to_dict()["caveats"] == [] and "caveat:" not in str(text_only)


# ---- docs cite the repository only ---------------------------------------------------------------

def test_docs_and_sources_cite_only_the_repository() -> None:
    offenders = []
    for folder in ("docs", "python", "csrc"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".md", ".py", ".cc", ".h", ".json", ".yaml", ".pyi") or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for pattern in ("../shared/", "shared/reference", "shared/data", "seed guide", "the seed's",
                            "vllm-memory-internals.md"):
                if pattern in text:
                    offenders.append(f"{path.relative_to(ROOT)}: {pattern}")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    offenders += [f"README.md: {p}" for p in ("../shared/", "seed guide") if p in readme]
    assert offenders == []
