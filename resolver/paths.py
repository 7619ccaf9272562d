"""Where the resolver keeps things inside a project. One value, no globals.

Layout (all under the project root, the folder holding pixi.toml):

    pixi.toml, pixi.lock         the manifest and the lock a team commits
    .resolver/envs/<name>/       installed environments (conda prefix or virtual environment)
    .resolver/channel/           the local conda channel built kernels go to (indexed; shareable)
    .resolver/cache/             downloads (sdists, wheels, conda packages) and build cache keys
    .resolver/logs/              one log file per run of a long step
    .resolver/state/             content-hash stamps of finished setup steps, the project lock, the
                                 plans behind the lock, the inputs pixi.lock was last found current for
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from resolver.errors import Busy


@dataclass(frozen=True)
class ProjectPaths:
    root: Path

    @classmethod
    def discover(cls, start: str | Path | None = None) -> "ProjectPaths":
        """The nearest folder at or above ``start`` (default: cwd) holding pixi.toml; else ``start``.

        ``RESOLVER_PROJECT`` overrides the search.
        """
        override = os.environ.get("RESOLVER_PROJECT")
        if override:
            return cls(Path(override).resolve())
        here = Path(start or os.getcwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / "pixi.toml").is_file():
                return cls(folder)
        return cls(here)

    @property
    def manifest(self) -> Path:
        return self.root / "pixi.toml"

    @property
    def lockfile(self) -> Path:
        return self.root / "pixi.lock"

    @property
    def state_dir(self) -> Path:
        return self.root / ".resolver"

    @property
    def envs(self) -> Path:
        return self.state_dir / "envs"

    def env(self, name: str) -> Path:
        """``.resolver/envs/<name>``; the last guard on names from files and flags: a name that is not a
        valid environment name (``..``, ``a/b``, ``./../../docs``) is refused before any path is made, so
        the path is always one folder directly under ``envs``. (That folder may be a link the user made
        to an environment elsewhere: a place chosen by the owner of the project, not by a shared file.)"""
        from resolver.names import check_env_name

        return self.envs / check_env_name(name)

    @property
    def channel(self) -> Path:
        return self.state_dir / "channel"

    @property
    def cache(self) -> Path:
        return self.state_dir / "cache"

    @property
    def verified(self) -> Path:
        """Verified artefacts by sha256, shared by every project of this user (the user's cache): a file
        is downloaded and checked once per machine, and uv, which keys its extraction of a local wheel
        by the wheel's path, extracts it once. The project's cache where the user's is not writable."""
        return _shared_store(self, "verified")

    @property
    def package_cache(self) -> Path:
        """rattler's cache of unpacked conda packages, shared the same way."""
        return _shared_store(self, "rattler")

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def stamps(self) -> Path:
        return self.state_dir / "state"

    @property
    def lock_check_stamp(self) -> Path:
        """The digest of the inputs (pixi.toml, pixi.lock, the plans) pixi.lock was last found to satisfy."""
        return self.stamps / "lock-check.json"


@contextlib.contextmanager
def project_lock(state_dir: Path, *, wait: bool = True, on_wait: Callable[[str], None] | None = None,
                 read_only: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on the project (``.resolver/state/project.lock``) for a whole run.

    A second concurrent run waits (saying so once) or, with ``wait=False``, fails with :class:`Busy`.
    The lock is an OS file lock, so a killed holder releases it automatically. ``read_only`` (a dry
    run) writes nothing: it waits for a run that holds the lock but neither creates the file nor
    records itself in it.
    """
    path = state_dir / "project.lock"
    if read_only and not path.is_file():
        yield  # no run has ever held this project: nothing to wait for, nothing to create
        return
    if not read_only:
        state_dir.mkdir(parents=True, exist_ok=True)
    handle = open(path, "r" if read_only else "a+", encoding="utf-8")
    try:
        if os.name == "nt":  # pragma: no cover - msvcrt locking on Windows
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = path.read_text(encoding="utf-8").strip() or "another resolver"
                if not wait:
                    raise Busy(f"another resolver run holds the project ({holder})",
                               fix="wait for it to finish, or run again without --no-wait to queue behind it") from None
                if on_wait:
                    on_wait(f"waiting for another resolver run to finish ({holder}) ...")
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        if not read_only:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}, started {time.strftime('%H:%M:%S')}")
            handle.flush()
        yield
    finally:
        handle.close()


def _shared_store(project: ProjectPaths, name: str) -> Path:
    base = user_cache_dir()
    if base is not None:
        try:
            (base / name).mkdir(parents=True, exist_ok=True)
            if os.access(base / name, os.W_OK):
                return base / name
        except OSError:
            pass
    return project.cache / name


def user_cache_dir() -> Path | None:
    """The resolver's folder in the user's cache (``$XDG_CACHE_HOME/mamba-resolver``, ``~/.cache/…``):
    what is worth keeping across projects (verified artefacts, unpacked conda packages, parsed knowledge
    tables, remembered plans, the answers of toolkit binaries)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not base or base.startswith("~"):
        return None
    return Path(base) / "mamba-resolver"
