"""The exceptions and the warning category of aimtheory."""
from __future__ import annotations

from typing import Any


class EngineNotFound(FileNotFoundError):
    """No `aim` engine binary was found; the message says where it was looked for."""


class EngineError(RuntimeError):
    """The engine exited with a status other than 0, 1, 2 or 130, or a build failed.

    .status is the exit status, .stderr the engine's stderr text (progress lines removed).
    """

    def __init__(self, message: str, status: int | None = None, stderr: str = "", argv: list[str] | None = None):
        super().__init__(message)
        self.status = status
        self.stderr = stderr
        self.argv = argv


class BadInput(ValueError):
    """The engine refused its input (exit status 2) and wrote nothing; the message is the engine's."""

    def __init__(self, message: str, stderr: str = "", argv: list[str] | None = None):
        super().__init__(message)
        self.stderr = stderr
        self.argv = argv


class Interrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C). .result is the partial Result of the rows finished, or None."""

    def __init__(self, message: str, result: Any = None):
        super().__init__(message)
        self.result = result


class Timeout(TimeoutError):
    """The run passed its timeout and was stopped. .result is the partial Result of the rows finished, or None."""

    def __init__(self, message: str, result: Any = None):
        super().__init__(message)
        self.result = result


class RunWarning(UserWarning):
    """A warning of the engine (its `warning:` lines), or a run whose points did not all converge."""
