"""User-facing failures: one sentence, the fix, an exit code by category, a stable id.

Every failure the tool can foresee is raised as a subclass of :class:`ResolverError`; the CLI
prints it as one line on stderr (and as ``{"error", "because", "fix", "id", "category",
"exit_code"}`` on stdout with ``--json``) and exits with its class's code. Each class has a stable
``id`` that docs/errors.md and doctor's signatures refer to; the exit code follows from the class
alone, so an error can never claim one category and exit with another's code.

>>> e = BadInput("pixi.lock is missing", fix="run `python -m resolver lock`")
>>> str(e), e.code, e.id
('pixi.lock is missing. Fix: run `python -m resolver lock`.', <ExitCode.BAD_INPUT: 3>, 'bad-input')
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ExitCode(enum.IntEnum):
    OK = 0
    CHECK_FAILED = 1  # a --check style command found work to do / a verification failed
    REFUSED = 2  # the request cannot be satisfied on this hardware, or the command line is malformed
    BAD_INPUT = 3  # a file, folder, setting or source we were given is missing, unreadable, corrupt or unreachable
    INTEGRITY = 4  # a checksum did not match: something was tampered with or truncated
    BUILD_FAILED = 5  # a compiler or an installer failed
    BUSY = 6  # another resolver holds the project lock
    ENVIRONMENT = 7  # the environment (or this machine's toolchain) is missing or not usable for this step
    UNRECOGNISED = 8  # doctor: the log holds no error it knows (not a finding, not a clean bill)
    INTERNAL = 70  # a bug in the resolver itself
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
    KILLED = 137  # RESOLVER_CRASH_AT: a test's stand-in for kill -9 (128 + SIGKILL), never a real failure
    CLOSED_PIPE = 141  # the reader of our output went away (128 + SIGPIPE, as cat exits)
    TERMINATED = 143  # SIGTERM (128 + SIGTERM)


class ResolverError(Exception):
    """A foreseeable failure; raise one of the subclasses below, never this class itself."""

    code: ClassVar[ExitCode] = ExitCode.INTERNAL
    id: ClassVar[str] = "internal"

    def __init__(self, message: str, *, fix: str | None = None, because: str | None = None) -> None:
        super().__init__(message)
        self.message = message.rstrip(".")
        self.fix = fix.rstrip(".") if fix else None
        self.because = because or self.message

    def __str__(self) -> str:
        return f"{self.message}. Fix: {self.fix}." if self.fix else f"{self.message}."

    def to_json(self) -> dict:
        return {"error": str(self), "because": self.because, "fix": self.fix, "id": self.id,
                "category": self.code.name.lower(), "exit_code": int(self.code)}


class CheckFailed(ResolverError):
    """A check ran and found a problem (verify found a failing check)."""

    code = ExitCode.CHECK_FAILED
    id = "check-failed"


class UsageError(ResolverError):
    """The command line itself is malformed (unknown flag, bad --target spelling)."""

    code = ExitCode.REFUSED
    id = "usage"


class Refusal(ResolverError):
    """The hardware or the request rules out every candidate (``plan`` exits 2)."""

    code = ExitCode.REFUSED
    id = "refused"


class BadInput(ResolverError):
    """A file, folder or setting we were given is missing, unreadable or malformed."""

    code = ExitCode.BAD_INPUT
    id = "bad-input"


class SourceUnreachable(BadInput):
    """A configured channel, index or download cannot be reached (a setting to fix, or a mirror to add)."""

    id = "source-unreachable"


class IntegrityError(ResolverError):
    code = ExitCode.INTEGRITY
    id = "integrity"


class BuildFailed(ResolverError):
    code = ExitCode.BUILD_FAILED
    id = "build-failed"


class Busy(ResolverError):
    code = ExitCode.BUSY
    id = "busy"


class EnvironmentProblem(ResolverError):
    code = ExitCode.ENVIRONMENT
    id = "environment"


class InternalError(ResolverError):
    """A bug in the resolver (or in the data it ships): please report it."""

    code = ExitCode.INTERNAL
    id = "internal"


ALL: tuple[type[ResolverError], ...] = (CheckFailed, UsageError, Refusal, BadInput, SourceUnreachable, IntegrityError,
                                         BuildFailed, Busy, EnvironmentProblem, InternalError)
