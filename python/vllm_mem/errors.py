"""Typed errors: what every entry point raises for input it refuses.

Each is a subclass of the built-in exception vLLM itself raises in the same place, so code that
catches ``ValueError`` / ``TypeError`` / ``NotImplementedError`` keeps working; ``.field`` names
the argument, config key or setting at fault (``"max_model_len"``,
``"speculative_config.num_speculative_tokens"``, ``"config.json: rope_scaling.rope_type"``), so a
caller maps it to its own vocabulary without reading the message. The C++ core's
``InvalidArgument`` (which carries its field) arrives as :class:`InvalidArgumentError` with that
field; the CLI maps ``.field`` to the flag the user typed.

This module imports nothing: ``_C``'s exception translator imports it while the package may still
be initialising.
"""

from __future__ import annotations

__all__ = ["InvalidArgumentError", "InvalidArgumentTypeError", "NotModelledError"]


class InvalidArgumentError(ValueError):
    """A value vllm_mem refuses: out of range, unknown name, inconsistent settings, unreadable
    file. ``field`` is the argument or config key at fault (``None`` when no single one is)."""

    field: str | None

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[type, tuple[str, str | None]]:  # picklable across processes
        return (type(self), (str(self), self.field))


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """The wrong kind of value (a string where a count goes, ``None`` where a name is required).
    Both a ``TypeError``, as Python raises for it, and an :class:`InvalidArgumentError`."""


class NotModelledError(NotImplementedError):
    """A valid request vllm_mem has no exact rules for (a model family, a setting, a release);
    never answered with a guess. ``field`` names the setting when one is at fault."""

    field: str | None

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[type, tuple[str, str | None]]:
        return (type(self), (str(self), self.field))
