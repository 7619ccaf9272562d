"""uv, the PyPI engine (the one pixi itself uses), in one place: its binary, the sources as its flags,
resolving to hashed pins, installing locked wheels.

uv comes with the resolver (the ``uv`` wheel on PyPI carries its binary). It is always run with
``--no-config`` (a uv.toml of the user's does not change a team's lock) and given every source
explicitly: the lock's indexes and wheelhouses, then pip's own configuration
(:mod:`resolver.lock.pipconfig`), since uv does not read pip.conf. ``--index-strategy
unsafe-best-match`` makes uv choose across indexes as pip does.

>>> source_flags(index_url=None, extra_index_urls=("file:///srv/idx",), find_links=("/w",), constraints=(),
...              no_index=False)
['--extra-index-url', 'file:///srv/idx', '--find-links', '/w', '--index-strategy', 'unsafe-best-match']
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from resolver import proc
from resolver.errors import EnvironmentProblem, ResolverError
from resolver.fs import write_atomic

RESOLVE_TIMEOUT_S = 1800  # a cold resolve of torch's CUDA build fetches metadata of ~60 wheels
INSTALL_TIMEOUT_S = 3600


_FINDING = threading.Lock()  # uv's own finder reads sysconfig, whose first read is not thread-safe


def binary() -> str:
    """The uv executable: the one the ``uv`` package installed with the resolver, else uv on PATH."""
    with _FINDING:  # lock starts several resolves in threads
        return _find()


def _find() -> str:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise EnvironmentProblem("uv is not installed next to the resolver (it resolves and installs the PyPI part)",
                             fix="reinstall the resolver (`pip install -e .` installs uv), or put uv on PATH")


def source_flags(*, index_url: str | None, extra_index_urls: Sequence[str], find_links: Sequence[str],
                 constraints: Sequence[str], no_index: bool) -> list[str]:
    """Every source as uv flags, in pip's meaning (``--index-url`` replaces PyPI; extras add to it)."""
    flags: list[str] = []
    if no_index:
        flags.append("--no-index")
    elif index_url:
        flags += ["--index-url", index_url]
    if not no_index:
        for url in extra_index_urls:
            flags += ["--extra-index-url", url]
    for link in find_links:
        flags += ["--find-links", link]
    for constraint in constraints:
        flags += ["--constraint", constraint]
    return flags + ["--index-strategy", "unsafe-best-match"]


def environ() -> dict[str, str]:
    """The environment uv runs in: no UV_* setting of the user's changes what is resolved (the cache
    folder excepted), and pip's variables were already translated into flags."""
    keep = {"UV_CACHE_DIR"}
    return {k: v for k, v in os.environ.items() if not k.startswith("UV_") or k in keep} | {"UV_NO_PROGRESS": "1"}


def compile_pins(requirements_file: Path, output: Path, *, python: str, platform: str, flags: Sequence[str]) -> proc.Completed:
    """``uv pip compile`` for one Python and platform, wheels only: exact pins, the sha256 of each pin's
    fitting files, and the source of each (``# from <index>``)."""
    return start_compile(requirements_file, output, python=python, platform=platform,
                         flags=flags).result(RESOLVE_TIMEOUT_S)


def start_compile(requirements_file: Path, output: Path, *, python: str, platform: str,
                  flags: Sequence[str]) -> proc.Running:
    """:func:`compile_pins`, started: it runs while the caller goes on."""
    return proc.start([binary(), "pip", "compile", "--no-config", "--quiet", "--generate-hashes",
                       "--emit-index-annotation", "--no-annotate", "--no-header", "--python-version", python,
                       "--python-platform", platform, "--only-binary", ":all:", "--output-file", str(output), *flags,
                       str(requirements_file)], env=environ())


def cache_dir() -> Path | None:
    """The folder uv keeps unpacked wheels in (``UV_CACHE_DIR``, else what ``uv cache dir`` says), for
    progress while uv unpacks; None when uv does not say."""
    if os.environ.get("UV_CACHE_DIR"):
        return Path(os.environ["UV_CACHE_DIR"])
    done = proc.run([binary(), "cache", "dir"], timeout=30, env=environ())
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def install_wheels(python: Path, wheels: Sequence[Path], *, compile_bytecode: bool) -> proc.Completed:
    """``uv pip install`` of exactly ``wheels`` into the environment of ``python``: no resolve, no index,
    hard-linked from uv's cache."""
    cmd = [binary(), "pip", "install", "--no-config", "--quiet", "--python", str(python), "--no-deps", "--no-index",
           "--link-mode", "hardlink"]
    if compile_bytecode:
        cmd.append("--compile-bytecode")
    return proc.run([*cmd, "--", *(str(w) for w in wheels)], timeout=INSTALL_TIMEOUT_S, env=environ())


@dataclass(frozen=True)
class UvCompile:
    """One ``uv pip compile``, with everything it is given: equal values are the same resolve."""

    requirements: tuple[str, ...]
    python: str
    platform: str  # uv's --python-platform
    flags: tuple[str, ...]  # the sources, as uv flags
    uv_cache: str | None  # UV_CACHE_DIR: another cache may hold other index pages

    def start(self) -> _CompileRun:
        folder = Path(tempfile.mkdtemp(prefix="resolver-uv-"))
        try:
            wanted = folder / "requirements.in"
            wanted.write_text("".join(f"{r}\n" for r in self.requirements), encoding="utf-8")
            return _CompileRun(folder, start_compile(wanted, folder / "requirements.txt", python=self.python,
                                                        platform=self.platform, flags=self.flags))
        except BaseException:  # no uv (one sentence from binary()), a full disk: no folder left behind
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def to_json(self) -> dict:
        return {"requirements": list(self.requirements), "python": self.python, "platform": self.platform,
                "flags": list(self.flags), "uv_cache": self.uv_cache}

    @classmethod
    def from_json(cls, data: dict) -> UvCompile:
        return cls(tuple(map(str, data["requirements"])), str(data["python"]), str(data["platform"]),
                   tuple(map(str, data["flags"])), None if data.get("uv_cache") is None else str(data["uv_cache"]))


class _CompileRun:
    """A started ``uv pip compile`` and the folder of its input and output."""

    def __init__(self, folder: Path, running) -> None:
        self.folder, self.running, self.started = folder, running, time.monotonic()

    def finish(self):
        """(what uv did, the pins it wrote or None); the folder is removed."""
        try:
            done = self.running.result(RESOLVE_TIMEOUT_S)
            output = self.folder / "requirements.txt"
            return done, (output.read_text(encoding="utf-8") if done.returncode == 0 and output.is_file() else None)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def cancel(self) -> None:
        try:
            self.running.cancel()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


class Speculation:
    """PyPI resolves started before a lock knows its exact inputs.

    A re-lock of the same targets almost always gives uv exactly what the last one did, and what comes
    before uv in a lock (planning, reading the manifest and the old lock, checking that remote indexes
    answer) takes a third of uv's own time. So ``lock`` starts uv at once with the inputs the last lock
    of the same request had (kept in the PyPI cache); :func:`resolver.lock.pypi.resolve` takes such a
    run only when its inputs are equal to the ones it computed, else it starts its own and the guess is
    stopped. A guess older than :attr:`FRESH_S` is not taken (the lock waited for another one)."""

    FILE = "last-resolves.json"
    KEEP = 16  # requests remembered
    FRESH_S = 60.0

    def __init__(self, cache: Path, key: str) -> None:
        self.file, self.key = cache / self.FILE, key
        self._runs: list[tuple[str, UvCompile, _CompileRun]] = []
        self._ran: dict[str, UvCompile] = {}
        self._lock = threading.Lock()

    @classmethod
    def start(cls, cache: Path, key: str) -> Speculation:
        """The resolves the last lock of ``key`` ran, started again."""
        speculation = cls(cache, key)
        for label, job in speculation._remembered().get(key, {}).items():
            try:
                speculation._runs.append((label, job, job.start()))
            except (OSError, ResolverError):  # no uv, no temp folder: the lock runs its own and says why
                break
        return speculation

    def take(self, job: UvCompile, label: str) -> _CompileRun | None:
        """The run started for exactly ``job``, if any; a guess for ``label`` that missed is stopped."""
        with self._lock:
            taken = next((entry for entry in self._runs if entry[1] == job), None)
            missed = [entry for entry in self._runs if entry is not taken and entry[0] == label]
            self._runs = [entry for entry in self._runs if entry is not taken and entry not in missed]
        for _, _, run in missed:
            run.cancel()
        if taken is not None and time.monotonic() - taken[2].started > self.FRESH_S:
            taken[2].cancel()
            return None
        return taken[2] if taken is not None else None

    def ran(self, job: UvCompile, label: str) -> None:
        with self._lock:
            self._ran[label] = job

    def finish(self, *, remember: bool) -> None:
        """Stop the guesses nobody took; with ``remember``, keep what this lock ran for the next one."""
        with self._lock:
            left, self._runs = self._runs, []
        for _, _, run in left:
            run.cancel()
        if remember and self._ran:
            known = {k: v for k, v in self._remembered().items() if k != self.key}
            known[self.key] = dict(self._ran)
            kept = dict(list(known.items())[-self.KEEP:])
            data = {k: {label: job.to_json() for label, job in jobs.items()} for k, jobs in kept.items()}
            try:  # insertion order is age: the oldest request is dropped first
                write_atomic(self.file, (json.dumps(data, indent=1) + "\n").encode(), label="cache")
            except OSError:  # a cache is an optimisation
                pass

    def _remembered(self) -> dict[str, dict[str, UvCompile]]:
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
            return {str(k): {str(label): UvCompile.from_json(job) for label, job in jobs.items()}
                    for k, jobs in data.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}
