"""The torch allocator provider is built against one torch. Loaded under another, it could read
c10's statistics at the wrong offsets, so _C must refuse it, say why, and fall back to the
driver's figures. Checked on the CPU with a copy of the real provider patched to claim another
torch release (the provider embeds its build version behind a tag for exactly this)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import vllm_mem._C

PROVIDER = Path(vllm_mem._C.__file__).resolve().parent / "_torch_provider.so"
TAG = b"vllm_mem_built_against_torch="

pytestmark = [
    pytest.mark.skipif(not PROVIDER.exists(), reason="vllm_mem was built without the torch provider"),
]

_PROBE = """
import json, sys
import torch
import vllm_mem._C as C
stats = C.torch_stats(0)
path, loaded, refusal = C.torch_provider_info()
print(json.dumps({"status": stats.status, "detail": stats.detail, "loaded": loaded,
                  "refusal": refusal, "torch": torch.__version__}))
"""


def _probe(provider: Path) -> dict[str, object]:
    env = dict(os.environ, VLLM_MEM_TORCH_PROVIDER=str(provider))
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _built_version(data: bytes) -> bytes:
    start = data.index(TAG) + len(TAG)
    return data[start:data.index(b"\0", start)]


def test_provider_built_against_this_torch_is_used() -> None:
    pytest.importorskip("torch")
    result = _probe(PROVIDER)
    assert result["loaded"] is True, result
    assert result["refusal"] == ""
    # On a CPU torch there is no CUDA allocator: a status, never invented zeros.
    assert result["status"] in ("available", "no_cuda_allocator", "not_initialized"), result


def test_provider_of_another_torch_release_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    data = PROVIDER.read_bytes()
    built = _built_version(data)
    major, minor, rest = built.split(b".", 2)
    # Same length, another minor release: 2.13.0 -> 2.12.0 (or 2.14.0 from x.0).
    other_minor = str(int(minor) - 1 if int(minor) > 0 else int(minor) + 1).encode()
    other = b".".join([major, other_minor.rjust(len(minor), b"0")[-len(minor):], rest])
    assert len(other) == len(built) and other != built
    assert data.count(TAG + built) == 1
    patched = tmp_path / "_torch_provider.so"
    patched.write_bytes(data.replace(TAG + built, TAG + other))
    shutil.copymode(PROVIDER, patched)

    result = _probe(patched)
    assert result["loaded"] is False
    # torch is imported: its figures exist but cannot be read here, which is not "no torch"
    # (issue 19); mem_utils then reads torch.cuda's statistics instead.
    assert result["status"] == "no_provider"
    refusal = str(result["refusal"])
    assert "refused" in refusal and other.decode() in refusal and str(result["torch"]) in refusal
    assert "torch.cuda" in refusal  # says what the snapshot falls back to
    assert result["detail"] == refusal


def test_provider_with_another_abi_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    # A library without the provider's symbols stands for an older provider ABI: refused by name.
    impostor = tmp_path / "_torch_provider.so"
    shutil.copy(Path(vllm_mem._C.__file__).resolve(), impostor)
    result = _probe(impostor)
    assert result["loaded"] is False and result["status"] == "no_provider"
    assert "different ABI" in str(result["refusal"])
