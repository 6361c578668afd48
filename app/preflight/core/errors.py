"""Errors a user can act on.

Every failure that can reach a user is a :class:`PreflightError`: a one-line message
saying what happened plus a hint saying what to do. The faces print ``str(err)`` (CLI)
or show it in a dialog (window); they never show a traceback.
"""

from __future__ import annotations


class PreflightError(Exception):
    """Base class: ``message`` says what happened, ``hint`` what to do about it.

    ``fix`` names the remedy when it is done differently in each face ("set-key": the
    provider's key, for provider ``subject``; "question": type the question). The hint
    then says it in neutral words; :func:`preflight.app.presentation.error_text` words it
    for the face showing it (a menu path in the window, a command in the CLI)."""

    exit_code = 2

    def __init__(self, message: str, hint: str = "", *, fix: str | None = None,
                 subject: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.fix = fix
        self.subject = subject

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip() if self.hint else self.message


class InputError(PreflightError):
    """The document cannot be read or is not usable text."""


class ModelUnavailableError(PreflightError):
    """A model file is missing, corrupt or cannot be loaded."""

    exit_code = 3


class ConfigError(PreflightError):
    """Settings, vault or provider configuration is invalid."""


class ProviderError(PreflightError):
    """The cloud provider refused or failed a request."""

    exit_code = 4


class Cancelled(PreflightError):
    """The user stopped the operation."""

    exit_code = 130

    def __init__(self, message: str = "Stopped.", hint: str = "") -> None:
        super().__init__(message, hint)
