#!/usr/bin/env bash
# CI stage: the toolchain that once crashed users' processes. Some GPU hosts' default g++ has only
# a static libstdc++, so _C carried its own copy; exported, those symbols mixed with the copy that
# numpy or torch loads and the process segfaulted at the first formatted number. This builds _C
# and the torch provider with -static-libstdc++ and runs, against that build, the export check
# and the numpy-and-torch-first test of every report path.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/dev_build.sh static-libstdcxx -DVLLM_MEM_STATIC_LIBSTDCXX=ON -DVLLM_MEM_BUILD_CXX_TESTS=OFF
site=build/dev-static-libstdcxx/site
so=$(ls "$site"/vllm_mem/_C*.so)
# Evidence that the build really linked libstdc++ in: no libstdc++.so.6 among its needs.
if readelf -d "$so" | grep -q 'libstdc++'; then
  echo "ci_static_libstdcxx.sh: $so still needs libstdc++.so; the static build did not happen" >&2
  exit 1
fi
PYTHONPATH=$site python3 -m pytest -q -p no:cacheprovider -c pyproject.toml --rootdir . \
  tests/python/test_symbols.py tests/python/test_import_order.py tests/python/test_torch_provider.py
echo "static-libstdc++ stage: $((SECONDS - start)) s"
