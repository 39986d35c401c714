#!/usr/bin/env bash
# What the notebook side needs (docs/notebooks.md): Chromium from Debian's packages, for the
# browser test that screenshots every HTML repr (tests/python/test_display_browser.py), and the
# Python packages that run docs/sizing.ipynb and its test (matplotlib, pandas, nbclient,
# nbformat, ipykernel: the `notebook` extra, without vllm_mem itself).
#
#   bash scripts/setup_notebook.sh
#
# Idempotent: skips what is already there. Needs root or sudo for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

sudo_if_needed() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo -n "$@"; fi; }

if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "== installing Chromium (Debian chromium) for the headless screenshot test"
  # Optional: without it the browser test skips with its reason; the notebook itself needs none.
  if ! { command -v apt-get >/dev/null && { sudo_if_needed apt-get update -qq >/dev/null 2>&1; \
      sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      chromium fonts-dejavu-core >/dev/null 2>&1; }; }; then
    echo "== skipped: Chromium (apt chromium): the headless screenshot test will skip"
  fi
fi

if ! "$PYTHON" -c "import matplotlib, pandas, nbclient, nbformat, ipykernel" 2>/dev/null; then
  echo "== installing the notebook's Python packages (matplotlib, pandas, nbclient, nbformat, ipykernel)"
  "$PYTHON" -m pip install -q --disable-pip-version-check \
    "matplotlib>=3.5" "pandas>=1.5" "nbclient>=0.7" "nbformat>=5" "ipykernel>=6"
fi
# nbclient starts the notebook's kernel by name: register this interpreter as python3 if no
# kernel spec is installed (pip's ipykernel usually ships one).
if ! "$PYTHON" -c "import sys; from jupyter_client.kernelspec import KernelSpecManager as K; \
sys.exit(0 if 'python3' in K().find_kernel_specs() else 1)" 2>/dev/null; then
  "$PYTHON" -m ipykernel install --user --name python3 >/dev/null
fi
echo "== notebook setup done: $(command -v chromium || command -v chromium-browser || echo no Chromium); \
matplotlib $("$PYTHON" -c 'import matplotlib; print(matplotlib.__version__)')"
