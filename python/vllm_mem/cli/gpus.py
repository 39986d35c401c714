"""`vllm-mem gpus` (not yet implemented)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: "argparse._SubParsersAction[Any]") -> None:
    pass
