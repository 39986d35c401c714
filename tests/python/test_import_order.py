"""vllm_mem imported after numpy and torch, in one process, exercising every path that formats
numbers or builds a report: the segfault of a libstdc++ mix-up shows up exactly there (the first
numeric operator<< after another libstdc++ is loaded), so each path is run once, in a fresh
interpreter, after numpy and torch have loaded theirs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import importlib.util, sys
    import numpy
    numpy.arange(3).sum()
    have_torch = importlib.util.find_spec("torch") is not None
    if have_torch:
        import torch
        torch.arange(3).sum()
    import vllm_mem
    from vllm_mem import units

    spec = vllm_mem.ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    out = []
    out.append(f"{units.format_gib(123456789012)}")
    cap = vllm_mem.kv_cache_capacity(spec, available_bytes=58 * 2**30, max_model_len=8192)
    out.append(str(cap))
    fits = vllm_mem.plan(spec, gpu="H100-80GB", max_model_len=8192)
    out.append(str(fits))
    fails = vllm_mem.plan(spec, gpu="L4", max_model_len=131072)
    out.append(str(fails))
    out.append(str(fails.suggestions))
    out.append(fails._repr_html_())
    out.append(str(fails.to_dict()))
    for example in vllm_mem.stages.bundled_stage_examples():
        report = vllm_mem.check_stages(str(example), gpus="H100-80GB")
        out.append(str(report))
        out.append(report._repr_html_())
    try:
        vllm_mem.kv_cache_capacity(spec, available_bytes=2**20, max_model_len=131072)
    except ValueError as exc:
        out.append(str(exc))
    else:
        raise SystemExit("expected vLLM's 'not enough KV cache memory' error")
    try:
        vllm_mem.ModelSpec.from_hf_config({"model_type": "llama"})
    except ValueError as exc:
        out.append(str(exc))
    text = "\\n".join(out)
    assert "GiB" in text and len(text) > 1000, text[:500]
    print("OK", len(text), "torch" if have_torch else "no-torch")
    """
)


def test_numpy_and_torch_first_then_every_report_path() -> None:
    result = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"rc={result.returncode}\nstdout:{result.stdout}\nstderr:{result.stderr[-4000:]}"
    assert result.stdout.startswith("OK "), result.stdout
