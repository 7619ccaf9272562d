"""The machine as the probe sees it: files, globs, tool runs, environment, uname.

Every detector reads through a :class:`System`, never through ``open`` or ``subprocess``
directly, so the same code reads the live machine (:class:`LiveSystem`) or a captured one
(:class:`resolver.plan.probe.sysroot.SysrootSystem`) and nothing live leaks into a replay.

>>> live = LiveSystem(environ={"PATH": "/nonexistent"})
>>> live.run(["nvidia-smi"]) is None   # not on that PATH: the tool is "not installed"
True
>>> live.read("/no/such/file") is None
True
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Mapping, Protocol

# the process gateway, glob and platform are imported where they are used: probe start-up time matters
# (``probe``/``plan`` must start within a few times a bare ``python -c pass``).

# A hung driver can make nvidia-smi block for minutes; the probe must stay fast and never hang.
TOOL_TIMEOUT_S = 15.0
# What a tool may print (nvidia-smi -q on eight GPUs is ~100 kB): a tool that floods is stopped, not read.
TOOL_OUTPUT_LIMIT = 4 << 20


@dataclass(frozen=True)
class CommandResult:
    """What one tool run printed. ``exit_code`` 124 with ``timed_out`` when it ran past the limit."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False
    overflowed: bool = False  # printed more than TOOL_OUTPUT_LIMIT: stopped, its output dropped

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.overflowed

    def describe(self) -> str:
        """One line for a note: ``nvidia-smi exited 9: NVIDIA-SMI has failed ...``."""
        if self.timed_out:
            return f"`{' '.join(self.argv)}` did not answer within {TOOL_TIMEOUT_S:.0f} s"
        if self.overflowed:
            return f"`{' '.join(self.argv)}` printed more than {TOOL_OUTPUT_LIMIT >> 20} MiB and was stopped"
        detail = (self.stderr.strip() or self.stdout.strip()).splitlines()
        tail = f": {detail[0][:160]}" if detail else ""
        return f"`{' '.join(self.argv)}` exited {self.exit_code}{tail}"


class System(Protocol):
    """What detectors may ask of a machine. Paths are absolute paths *on that machine*."""

    environ: Mapping[str, str]
    live: bool  # True only for this machine: NVML and other in-process libraries are allowed

    def read(self, path: str) -> str | None:
        """The text of a file, or None when it is missing or unreadable."""

    def exists(self, path: str) -> bool: ...

    def glob(self, pattern: str) -> list[str]:
        """Sorted absolute paths matching ``pattern`` (shell glob)."""

    def run(self, argv: list[str]) -> CommandResult | None:
        """Run a tool; None when it is not installed. A bare ``argv[0]`` is looked up on PATH."""

    def uname(self) -> tuple[str, str]:
        """``(system, machine)`` as ``platform.system()`` / ``platform.machine()`` print them."""

    def python_version(self) -> str: ...

    def glibc_version(self) -> tuple[str | None, str]:
        """``(version or None, where it came from)`` when the machine itself can say; else ``(None, why)``."""

    def cpu_count(self) -> int | None: ...


class LiveSystem:
    """This machine. ``environ`` defaults to the process environment."""

    live = True

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ: Mapping[str, str] = dict(os.environ if environ is None else environ)

    def read(self, path: str) -> str | None:
        from resolver.core.errors import BadInput
        from resolver.core.fs import read_text_bounded

        try:  # never a FIFO or device, never more than 16 MiB: a None like any unreadable file
            return read_text_bounded(path, limit=16 << 20, what="file")
        except BadInput:
            return None

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def glob(self, pattern: str) -> list[str]:
        import glob

        return sorted(glob.glob(pattern))

    def _resolve(self, tool: str) -> str | None:
        """The executable for ``tool``: an explicit path, or the first match on PATH (like ``which``)."""
        names = [tool] + ([tool + ".exe"] if os.name == "nt" else [])
        if os.sep in tool or "/" in tool:
            return next((n for n in names if _executable(n)), None)
        for folder in self.environ.get("PATH", os.defpath).split(os.pathsep):
            for name in names:
                candidate = os.path.join(folder or ".", name)
                if _executable(candidate):
                    return candidate
        return None

    def run(self, argv: list[str]) -> CommandResult | None:
        exe = self._resolve(argv[0])
        if exe is None:
            return None
        key = _answer_key(exe, argv, self.environ)
        known = _answers().get(key) if key is not None and _answers() is not None else None
        if known is not None:
            code, stdout, stderr = known
            return CommandResult(tuple(argv), code, stdout, stderr)
        from resolver.tools import proc

        done = proc.run([exe, *argv[1:]], timeout=TOOL_TIMEOUT_S, env=self.environ, limit=TOOL_OUTPUT_LIMIT,
                        reap=False)
        if done.overflowed:  # nothing of a flood is parsed
            return CommandResult(tuple(argv), done.returncode, "", "", overflowed=True)
        if key is not None and done.returncode == 0 and not done.timed_out:
            _remember(key, (done.returncode, done.stdout, done.stderr))
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr, timed_out=done.timed_out)

    def uname(self) -> tuple[str, str]:
        if hasattr(os, "uname"):
            info = os.uname()
            return info.sysname, info.machine
        import platform  # Windows: no os.uname

        return platform.system(), platform.machine()

    def python_version(self) -> str:
        return ".".join(str(p) for p in sys.version_info[:3])

    def glibc_version(self) -> tuple[str | None, str]:
        try:
            text = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; what gnu_get_libc_version() returns
        except (AttributeError, ValueError, OSError):
            text = None
        if text and text.startswith("glibc "):
            return text.split()[1], "confstr(CS_GNU_LIBC_VERSION)"
        return None, "the C library does not report a glibc version"

    def cpu_count(self) -> int | None:
        try:
            return len(os.sched_getaffinity(0))  # honours taskset/cgroup cpusets, unlike os.cpu_count()
        except (AttributeError, OSError):
            return os.cpu_count()


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


# What a compiler says about itself depends on what the binary really is (:mod:`.tool_identity`: the real
# file behind links and wrapper scripts, and the toolkit variables): ``nvcc --version`` and ``--dryrun``,
# ``hipcc --version`` are remembered by the fingerprint of that identity and the arguments (asking nvcc
# costs 30-50 ms, more than the rest of `plan`; benchmarks/memo_savings.py).
_CACHEABLE = {("nvcc", "--version"), ("nvcc", "--dryrun"), ("hipcc", "--version")}
_ANSWERS = []  # the one RecordMap of this process, made on first use


def _answer_key(exe: str, argv: list[str], environ: Mapping[str, str]) -> str | None:
    if (os.path.basename(argv[0]), argv[1] if len(argv) > 1 else "") not in _CACHEABLE:
        return None
    from resolver.core.fingerprint import fingerprint
    from resolver.plan.probe.tool_identity import tool_identity

    try:
        return fingerprint(tool_identity(exe, environ), argv[1:])
    except OSError:
        return None


def _answers():
    """What toolkit binaries answered (:func:`resolver.project.paths.tool_answers`; a record read as untrusted data)."""
    if not _ANSWERS:
        from resolver.core.records import Integer, RecordMap, Row, Text
        from resolver.project.paths import tool_answers

        path = tool_answers()
        answer = Row(Integer(), Text(max_len=1 << 20), Text(max_len=1 << 20))
        _ANSWERS.append(None if path is None else RecordMap(path, answer, keep=64, limit=8 << 20))
    return _ANSWERS[0]


def _remember(key: str, answer: tuple) -> None:
    answers = _answers()
    if answers is not None:
        answers.put(key, list(answer))
        answers.save()
