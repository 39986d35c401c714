"""docs/sizing.ipynb runs top to bottom on the CPU (nbclient, a fresh kernel) and shows what it
promises: a vllm_mem block for each result, matplotlib figures for the plots, no error.

Skipped cleanly without nbclient / nbformat / ipykernel / matplotlib / pandas (``bash
scripts/setup_notebook.sh`` installs them)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

for _module in ("nbclient", "nbformat", "ipykernel", "matplotlib", "pandas"):
    pytest.importorskip(_module, reason=f"{_module} runs docs/sizing.ipynb (bash scripts/setup_notebook.sh)")

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "sizing.ipynb"


@pytest.fixture(scope="module")
def executed() -> Any:
    # The kernel imports the vllm_mem this test imports (an installed one, or a dev build's site folder).
    # Not resolved: a dev build's site folder holds symlinks into python/, which has no _C.
    site = os.path.dirname(os.path.dirname(os.path.abspath(vllm_mem.__file__)))
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [site,
                                                       os.environ.get("PYTHONPATH")])),
           "JUPYTER_PLATFORM_DIRS": "1", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb


def _outputs(nb: Any, source_start: str) -> list[Any]:
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(source_start)]
    assert len(cells) == 1, source_start
    return list(cells[0].outputs)


def _html(nb: Any, source_start: str) -> str:
    htmls = [o["data"]["text/html"] for o in _outputs(nb, source_start) if "text/html" in o.get("data", {})]
    assert htmls, f"no HTML output from the cell starting {source_start!r}"
    return str(htmls[-1])


def test_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


def test_runs_top_to_bottom_without_error(executed: Any) -> None:
    for cell in executed.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source[:60]
            assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"], \
                cell.source[:60]


def test_each_result_shows_its_block(executed: Any) -> None:
    assert "Llama-3.1-8B-Instruct" in _html(executed, "spec = ")
    fitting = _html(executed, "plan = ")
    assert "class='vllm-mem'" in fitting and "2&times; L4" in fitting and ">fits<" in fitting
    failing = _html(executed, "too_long = ")
    assert "Fails at the max_model_len check" in failing and "Change this:" in failing
    assert "GPU KV cache size" in _html(executed, "plan.kv_cache")
    assert "settings fit" in _html(executed, "display.SweepView")
    profile = _html(executed, "from vllm_mem.testing import SimulatedDevice")
    assert "transient non-torch" in profile and "<polyline" in profile
    assert "MemorySnapshot difference" in _html(executed, "after - baseline")
    assert "over-committed" in _html(executed, "overcommitted = ")
    assert "Rank plans" in _html(executed, "vllm_mem.plan_ranks(")


def test_plots_are_figures(executed: Any) -> None:
    for start in ("fig, ax = plan.plot()", "fig, ax = display.plot_sweep(", "fig, (driver, allocator)"):
        images = [o for o in _outputs(executed, start) if "image/png" in o.get("data", {})]
        assert len(images) == 1, start
