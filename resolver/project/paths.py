"""Where the resolver keeps things: inside a project, and in the user's cache. One value, no globals.

Layout (all under the project root, the folder holding pixi.toml):

    pixi.toml, pixi.lock         the manifest and the lock a team commits
    .resolver/envs/<name>/       installed environments (conda prefix or virtual environment)
    .resolver/channel/           the local conda channel built kernels go to (indexed; shareable)
    .resolver/overlay/rocm-<v>/  fixed ROCm headers, put first on the include path of kernel builds
    .resolver/cache/             downloads (sdists, wheels), what the lock found out, cached builds
    .resolver/logs/              one log file per run of a long step
    .resolver/state/             content-hash stamps of finished setup steps, the plans, an upgrade's state,
                                 the inputs pixi.lock was last found current for, the project lock
    .resolver/reports/           reports written for people (upgrades)

and in the user's cache (``~/.cache/mamba-resolver``): verified artefacts by sha256, unpacked conda
packages, remembered plans, the answers of toolkit binaries.

Every cache and state file is named here, once, and read back through
:func:`resolver.core.records.read_record` (regular files only, bounded, of a declared shape):
:data:`RECORD_KINDS` lists them all.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from resolver.core.errors import Busy
from resolver.core.seal import user_cache_dir  # where the seal's key lives too: the ground floor's

MANIFEST_LIMIT = 4 << 20  # a pixi.toml larger than 4 MiB is not one a person wrote
LOCK_LIMIT = 256 << 20  # a pixi.lock of every CUDA build for three platforms is a few MB


@dataclass(frozen=True)
class ProjectPaths:
    root: Path

    def __post_init__(self) -> None:
        # every path below the project is reached through the door (no link on the way), except inside an
        # installed environment, which is a tree of its own (its folder may be a link the user made)
        from resolver.core.fs import register_root

        register_root(self.root, what="the project", own_trees=ENV_TREES)

    @classmethod
    def discover(cls, start: str | Path | None = None) -> "ProjectPaths":
        """The nearest folder at or above ``start`` (default: cwd) holding pixi.toml; else the project of
        the environment the user is in (``RESOLVER_ENV_PROJECT``, set by its ``bin/mamba-resolver``:
        :mod:`resolver.install.launcher`), when it still holds a pixi.toml; else ``start``.

        ``RESOLVER_PROJECT`` overrides the search.
        """
        override = os.environ.get("RESOLVER_PROJECT")
        if override:
            return cls(Path(override).resolve())
        here = Path(start or os.getcwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / "pixi.toml").is_file():
                return cls(folder)
        entered = os.environ.get("RESOLVER_ENV_PROJECT")
        if entered and os.path.isabs(entered) and (Path(entered) / "pixi.toml").is_file():
            return cls(Path(entered).resolve())
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
        from resolver.core.names import check_env_name

        return self.envs / check_env_name(name)

    @property
    def channel(self) -> Path:
        return self.state_dir / "channel"

    def overlay(self, rocm_version: str | None) -> Path:
        """The header overlay of one ROCm version (:mod:`resolver.patch`); its record is ``RECORD_NAME`` inside."""
        return self.state_dir / "overlay" / f"rocm-{rocm_version or 'unknown'}"

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
    def verified_store(self):
        """The store at :attr:`verified` (:class:`resolver.tools.store.VerifiedStore`: its layout, its checks)."""
        from resolver.tools.store import VerifiedStore

        return VerifiedStore(self.verified)

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

    # ---- caches: a pure speed-up; deleting any of them changes no result
    @property
    def pypi_files(self) -> Path:
        """Where each PyPI file uv pinned was found (its URL and file name), by sha256."""
        return self.cache / "pypi" / "files.json"

    @property
    def pypi_requires(self) -> Path:
        """``requires_dist`` / ``requires_python`` of each locked wheel, by sha256."""
        return self.cache / "pypi" / "metadata" / "requires.json"

    @property
    def canonical_urls(self) -> Path:
        """PyPI's address of a file found elsewhere, by sha256."""
        return self.cache / "canonical-urls.json"

    @property
    def canonical_misses(self) -> Path:
        """When PyPI last did not have a file, by sha256."""
        return self.cache / "canonical-misses.json"

    @property
    def timings(self) -> Path:
        """How long each long piece of work took last time (a kernel package's build, an environment's
        wheels), for progress estimates."""
        return self.cache / "timings.json"

    @property
    def env_builds(self) -> Path:
        """Finished environments kept as hard links (:mod:`resolver.install.template`)."""
        return self.cache / "envs"

    def env_build(self, env_name: str, lock_digest: str) -> Path:
        from resolver.core.names import check_env_name

        return self.env_builds / f"{check_env_name(env_name)}-{lock_digest[:20]}-pyc"

    @property
    def kernel_builds(self) -> Path:
        return self.cache / "build"

    def kernel_work_dir(self, package: str, key_digest: str) -> Path:
        return self.kernel_builds / f"{package}-{key_digest[:12]}"

    def kernel_import_record(self, env_name: str, package: str) -> Path:
        """The modules a kernel package imported in an environment, checked once per install of it."""
        return self.kernel_builds / f"imported-{env_name}-{package}.json"

    def env_facts_record(self, env_name: str) -> Path:
        """What an environment's Python said about itself and its torch."""
        return self.kernel_builds / f"envfacts-{env_name}.json"

    @property
    def upstream_wheels(self) -> Path:
        return self.cache / "wheels"

    @property
    def sdists(self) -> Path:
        return self.cache / "sdists"

    @property
    def verify_models(self) -> Path:
        """The generated checkpoints verify runs (rewritten whenever their bytes are not the generated ones)."""
        return self.cache

    # ---- state: what was done in this checkout (local; never committed)
    @property
    def plans(self) -> Path:
        return self.stamps / "plans"

    def plan_record(self, env_name: str) -> Path:
        """The plan an environment was locked from, with the conda python locked per platform."""
        from resolver.core.names import check_env_name

        return self.plans / f"{check_env_name(env_name)}.json"

    @property
    def lock_check_stamp(self) -> Path:
        """The digest of the inputs (pixi.toml, pixi.lock, the plans) pixi.lock was last found to satisfy."""
        return self.stamps / "lock-check.json"

    @property
    def step_stamps(self) -> Path:
        """setup's record per finished step: the hash of its inputs and its result."""
        return self.stamps / "steps"

    @property
    def sources_record(self) -> Path:
        """The sources flags and variables set for the last lock here."""
        return self.stamps / "sources.json"

    @property
    def upgrade_state(self) -> Path:
        """Where an upgrade stands (what was asked, the candidate, its stage, the proof and its inputs)."""
        return self.stamps / "upgrade.json"

    @property
    def reports(self) -> Path:
        """Reports written for people (an upgrade's Markdown and JSON)."""
        return self.state_dir / "reports"

    @property
    def patch_records(self) -> Path:
        """Headers patched in place (with their backups' sha256)."""
        return self.stamps / "patches"


# Every kind of cache and state file, and the reader that checks it (tests plant a crafted one of each).
RECORD_KINDS = {
    "pypi-files": "ProjectPaths.pypi_files (resolver.lock.pypi)",
    "pypi-requires": "ProjectPaths.pypi_requires (resolver.lock.pypi)",
    "canonical-urls": "ProjectPaths.canonical_urls (resolver.lock.canonical)",
    "canonical-misses": "ProjectPaths.canonical_misses (resolver.lock.canonical)",
    "env-build": "ProjectPaths.env_build(...)/.resolver-template.json (resolver.install.template)",
    "ready-marker": ".resolver/envs/<name>/resolver-ready.json (resolver.install.environment)",
    "kernel-import": "ProjectPaths.kernel_import_record (resolver.kernels.into_env)",
    "env-facts": "ProjectPaths.env_facts_record (resolver.kernels.envfacts)",
    "verify-model": "ProjectPaths.verify_models/verify-model-<key> (resolver.verify.checkpoint)",
    "plan-record": "ProjectPaths.plan_record (resolver.plan.locked)",
    "lock-check": "ProjectPaths.lock_check_stamp (resolver.lock.current)",
    "upgrade-state": "ProjectPaths.upgrade_state (resolver.workflows.upgrade.journey)",
    "step-stamp": "ProjectPaths.step_stamps/<step>.json (resolver.workflows.steps)",
    "sources": "ProjectPaths.sources_record (resolver.project.sources)",
    "patch-record": "ProjectPaths.patch_records/<id>-in-place-<key>.json (resolver.patch.engine)",
    "overlay-record": "ProjectPaths.overlay(<version>)/resolver-overlay.json (resolver.patch.engine)",
    "verified-record": "ProjectPaths.verified/<sha256[:2]>/<sha256>/.verified (resolver.tools.store)",
    "plan-memo": "plan_memos()/<key>.json (resolver.plan.planning)",
    "tool-answers": "tool_answers() (resolver.plan.probe.system)",
    "timings": "ProjectPaths.timings (resolver.project.timings)",
}


@contextlib.contextmanager
def project_lock(state_dir: Path, *, wait: bool = True, on_wait: Callable[[str], None] | None = None,
                 read_only: bool = False) -> Iterator[None]:
    """Hold an exclusive lock on the project (``.resolver/state/project.lock``) for a whole run.

    A second concurrent run waits (saying so once) or, with ``wait=False``, fails with :class:`Busy`.
    The lock is an OS file lock, so a killed holder releases it automatically. ``read_only`` (a dry
    run) writes nothing: it waits for a run that holds the lock but neither creates the file nor
    records itself in it.
    """
    from resolver.core.fs import open_no_follow

    path = state_dir / "project.lock"
    if read_only and not path.is_file():
        yield  # no run has ever held this project: nothing to wait for, nothing to create
        return
    # never through a link: a project folder can be shared, and the holder writes its pid here
    fd = open_no_follow(path, os.O_RDONLY if read_only else os.O_RDWR | os.O_CREAT, what="the project lock file")
    handle = os.fdopen(fd, "r" if read_only else "r+", encoding="utf-8")
    try:
        if os.name == "nt":  # pragma: no cover - msvcrt locking on Windows
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = handle.read(200).strip() or "another resolver"
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
        from resolver.core.errors import BadInput
        from resolver.core.fs import make_folder

        try:
            make_folder(base / name)
            if os.access(base / name, os.W_OK):
                return base / name
        except (OSError, BadInput):
            pass
    return project.cache / name


def plan_memos() -> Path | None:
    """Remembered plans, keyed by the content of their inputs (:mod:`resolver.plan.planning`)."""
    base = user_cache_dir()
    return None if base is None else base / "plans"


def tool_answers() -> Path | None:
    """What toolkit binaries (nvcc, hipcc) said about themselves, keyed by what each binary really is."""
    base = user_cache_dir()
    return None if base is None else base / "tool-answers.json"


ENV_TREES = ((".resolver", "envs", "*"),)  # the installed environments: trees of their own below the project
