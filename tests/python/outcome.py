"""What a call gave, in a form two paths can be compared by: its result's ``to_dict()``, or the
error it raised as ``(type, message, field)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return call().to_dict()
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return (type(exc), str(exc), getattr(exc, "field", None))
