"""The GPU catalog: total memory as CUDA / ROCm report it, with tolerant name lookup."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _C
from . import _limits as L
from . import _validate as V
from .units import GiB_bytes

__all__ = ["GpuInfo", "close_gpu_matches", "gpu_catalog", "lookup_gpu"]


@dataclass(frozen=True)
class GpuInfo:
    """One GPU model of the catalog.

    Attributes
    ----------
    name : str
        Canonical catalog key, e.g. ``"H100-80GB"``.
    device_name : str
        What ``torch.cuda.get_device_name()`` prints.
    vendor : str
        ``"nvidia"`` or ``"amd"``.
    memory_type : str
        ``"HBM3"``, ``"GDDR6"``, ...
    nominal_memory_gb : int
        The marketing capacity.
    total_memory_bytes : int
        Total memory as the runtime reports it (``cudaMemGetInfo``): what vLLM's
        ``gpu_memory_utilization`` multiplies.
    figure_source : str
        ``"measured"`` (byte-exact), ``"reported_mib"``, ``"reported_gib"`` or ``"estimated"``.
    figure_uncertainty_bytes : int
        The +- bound the source implies.
    source_note : str
        Where the figure comes from, or the estimation rule.
    aliases : tuple of str
        Other accepted spellings (matching is case- and punctuation-insensitive).
    compute_capability : str
        NVIDIA's compute capability (``"9.0"``); ``""`` for AMD.
    supports_bfloat16 : bool
        False below compute capability 8.0 (V100, T4): vLLM serves bfloat16 checkpoints there
        as float16.
    sm_count : int
        Streaming multiprocessors (AMD: compute units), what ``multi_processor_count`` reports:
        the rows of vLLM's Triton top-k/top-p sampler buffer in the profile run.
    sm_source : str
        The published specification (or measured property) ``sm_count`` comes from.
    """

    name: str
    device_name: str
    vendor: str
    memory_type: str
    nominal_memory_gb: int
    total_memory_bytes: int
    figure_source: str
    figure_uncertainty_bytes: int
    source_note: str
    aliases: tuple[str, ...]
    compute_capability: str = ""
    supports_bfloat16: bool = True
    sm_count: int = 0
    sm_source: str = ""

    @property
    def total_memory_gib(self) -> float:
        """``total_memory_bytes / 2**30``."""
        return self.total_memory_bytes / GiB_bytes

    @classmethod
    def _from_dict(cls, d: dict[str, Any]) -> GpuInfo:
        return cls(**{**d, "aliases": tuple(d["aliases"])})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return {
            "name": self.name, "device_name": self.device_name, "vendor": self.vendor,
            "memory_type": self.memory_type, "nominal_memory_gb": self.nominal_memory_gb,
            "total_memory_bytes": self.total_memory_bytes,
            "total_memory_gib": round(self.total_memory_gib, 2),
            "figure_source": self.figure_source,
            "figure_uncertainty_bytes": self.figure_uncertainty_bytes,
            "source_note": self.source_note, "aliases": list(self.aliases),
            "compute_capability": self.compute_capability or None, "supports_bfloat16": self.supports_bfloat16,
            "sm_count": self.sm_count, "sm_source": self.sm_source,
        }


def gpu_catalog() -> list[GpuInfo]:
    """Every catalog entry, NVIDIA first."""
    return [GpuInfo._from_dict(d) for d in _C.gpu_catalog()]


def lookup_gpu(name: str) -> GpuInfo:
    """The entry for ``name`` in any common spelling (``"H100-80GB"``, ``"h100"``,
    ``"NVIDIA H100 80GB HBM3"``, ``"rtx-4090"``, ``"MI300X"``).

    Raises
    ------
    ValueError
        ``gpu: unknown GPU ...`` listing the close matches, or naming the variants of an
        ambiguous bare name such as ``"A100"``.
    """
    return GpuInfo._from_dict(_C.lookup_gpu(V.text(name, "gpu", max_chars=L.MAX_GPU_NAME_CHARS,
                                                   what="a catalog GPU name (see `vllm-mem gpus`)")))


def close_gpu_matches(name: str, limit: int = 5) -> list[str]:
    """Up to ``limit`` catalog names closest to ``name``."""
    checked = V.text(name, "name", max_chars=L.MAX_GPU_NAME_CHARS, what="a GPU name")
    return list(_C.close_gpu_matches(checked, V.integer(limit, "limit", low=0, high=1000)))
