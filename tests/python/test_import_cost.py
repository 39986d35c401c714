"""``import vllm_mem`` runs in every vLLM worker: it must load no NumPy, PyYAML or torch (NumPy
alone costs ~270 ms on a GPU host), and the lazy manifest in ``vllm_mem/__init__.py`` must
agree with each area module's ``__all__``. Time is measured by benchmarks/bench_import.py."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import vllm_mem

_HEAVY = ("numpy", "yaml", "torch", "pandas", "matplotlib", "huggingface_hub")


def _modules_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                         timeout=120)
    modules: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return modules


def test_import_loads_no_heavy_module() -> None:
    loaded = _modules_after("import vllm_mem")
    assert [m for m in _HEAVY if m in loaded] == []
    assert "vllm_mem._C" in loaded  # the probe really imported the package


def test_snapshot_path_loads_no_numpy() -> None:
    # What a worker uses: the drop-in mem_utils names, with the simulated device standing in.
    loaded = _modules_after(
        "from vllm_mem import MemorySnapshot, memory_profiling, format_gib\n"
        "from vllm_mem.testing import SimulatedDevice\n"
        "with SimulatedDevice():\n"
        "    with memory_profiling(MemorySnapshot()) as r:\n"
        "        pass\n"
        "    format_gib(r.non_torch_increase)\n")
    assert [m for m in ("numpy", "yaml", "torch") if m in loaded] == []


def test_numpy_arrives_only_with_an_array_result() -> None:
    loaded = _modules_after("import vllm_mem\nvllm_mem.sweep('meta-llama/Llama-3.1-8B-Instruct', "
                            "gpus='H100-80GB', max_model_len=8192, as_frame=False)")
    assert "numpy" in loaded


def test_manifest_matches_each_module() -> None:
    for module_name, names in vllm_mem._EXPORTS.items():
        module = importlib.import_module(f"vllm_mem.{module_name}")
        assert set(names) <= set(module.__all__), module_name
        for name in set(module.__all__) - set(names):
            # Listed by another module (mem_utils re-exports units.format_gib): the same object.
            assert getattr(vllm_mem, name) is getattr(module, name), (module_name, name)
        for name in names:
            assert getattr(vllm_mem, name) is getattr(module, name), (module_name, name)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        vllm_mem.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
