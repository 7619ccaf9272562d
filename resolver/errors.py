"""User-facing failures: one sentence, the fix, an exit code by category.

Every failure the tool can foresee is raised as a :class:`ResolverError`; the CLI prints it as one
line on stderr (and as ``{"error": ..., "because": ..., "fix": ...}`` on stdout with ``--json``)
and exits with the category's code. Nothing foreseeable ever reaches the user as a traceback.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    CHECK_FAILED = 1  # a --check style command found work to do / a verification failed
    REFUSED = 2  # the request cannot be satisfied on this hardware or is malformed
    BAD_INPUT = 3  # a file or folder we were given is missing, unreadable or corrupt
    INTEGRITY = 4  # a checksum did not match: something was tampered with or truncated
    BUILD_FAILED = 5  # a compiler or an installer failed
    BUSY = 6  # another resolver holds the project lock
    ENVIRONMENT = 7  # the environment is missing or not usable for this step
    INTERRUPTED = 130
    INTERNAL = 70  # a bug in the resolver itself


class ResolverError(Exception):
    """A foreseeable failure.

    >>> e = ResolverError("pixi.lock is missing", fix="run `python -m resolver lock`")
    >>> str(e)
    'pixi.lock is missing. Fix: run `python -m resolver lock`.'
    """

    code: ExitCode = ExitCode.BAD_INPUT

    def __init__(self, message: str, *, fix: str | None = None, because: str | None = None,
                 code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message.rstrip(".")
        self.fix = fix.rstrip(".") if fix else None
        self.because = because or self.message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.message}. Fix: {self.fix}." if self.fix else f"{self.message}."

    def to_json(self) -> dict:
        return {"error": str(self), "because": self.because, "fix": self.fix,
                "category": self.code.name.lower(), "exit_code": int(self.code)}


class Refusal(ResolverError):
    """The hardware or the request rules out every candidate (``plan`` exits 2)."""

    code = ExitCode.REFUSED


class BadInput(ResolverError):
    code = ExitCode.BAD_INPUT


class IntegrityError(ResolverError):
    code = ExitCode.INTEGRITY


class BuildFailed(ResolverError):
    code = ExitCode.BUILD_FAILED


class EnvironmentProblem(ResolverError):
    code = ExitCode.ENVIRONMENT


class Busy(ResolverError):
    code = ExitCode.BUSY
