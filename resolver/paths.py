"""Where the resolver keeps things inside a project. One value, no globals.

Layout (all under the project root, the folder holding pixi.toml):

    pixi.toml, pixi.lock         the manifest and the lock a team commits
    .resolver/envs/<name>/       installed environments (conda prefix or virtual environment)
    .resolver/channel/           the local conda channel built kernels go to (indexed; shareable)
    .resolver/cache/             downloads (sdists, wheels, conda packages) and build cache keys
    .resolver/logs/              one log file per run of a long step
    .resolver/state/             content-hash stamps of finished setup steps, the project lock
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def stamps(self) -> Path:
        return self.state_dir / "state"
