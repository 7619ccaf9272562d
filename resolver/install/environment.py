"""An installed environment: where it is, what kind it is, which Python runs it.

Environments live in ``.resolver/envs/<name>``; ``install`` makes them, ``build``/``verify``/``doctor``
run inside them. Two kinds exist: a conda prefix (``conda-meta/`` present, python from a channel)
and a virtual environment (``pyvenv.cfg`` present, the host interpreter of the planned Python).

>>> Environment.kind_of(Path("/nonexistent"))
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from resolver.core.errors import EnvironmentProblem
from resolver.core.names import is_env_name
from resolver.core.records import SHA256, Fields, ListOf, Text, read_record
from resolver.project.paths import ProjectPaths
from resolver.tools import proc
from resolver.tools.proc import Completed

READY_MARKER = "resolver-ready.json"  # written last by install (content: what was installed); absent = not ready
_READY = Fields({"environment": Text(max_len=64), "kind": Text("conda|venv"), "python": Text(max_len=32),
                 "platform": Text(max_len=64), "lock_digest": SHA256, "conda": ListOf(Text(max_len=1024)),
                 "pypi": ListOf(Text(max_len=1024))},
                {"seeded": ListOf(Text(max_len=1024)),  # what install added beyond the lock (a fallback's pip)
                 # each artefact installed, "KIND NAME VERSION SHA256" (resolver.install.incremental), and the
                 # fingerprint of those verify checks
                 "artifacts": ListOf(Text(max_len=1024)), "verify_inputs": SHA256})


def ready_record(folder: Path) -> dict | None:
    """What install wrote into ``folder``'s ready marker (None: no marker, or not one install wrote)."""
    return read_record(folder / READY_MARKER, _READY)


@dataclass(frozen=True)
class Environment:
    name: str
    path: Path
    kind: str  # "conda" | "venv"

    @staticmethod
    def kind_of(path: Path) -> str | None:
        if (path / "conda-meta").is_dir() and not (path / "pyvenv.cfg").is_file():
            return "conda"
        if (path / "pyvenv.cfg").is_file():
            return "venv"
        return None

    @property
    def python(self) -> Path:
        if os.name == "nt":
            return self.path / ("python.exe" if self.kind == "conda" else "Scripts/python.exe")
        return self.path / "bin" / "python"

    @property
    def bin_dir(self) -> Path:
        return self.path / ("Scripts" if os.name == "nt" and self.kind == "venv" else "bin")

    @property
    def ready(self) -> bool:
        """Whether install finished this environment here (its marker is one install wrote and sealed)."""
        return ready_record(self.path) is not None

    def child_environ(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The variables a child in this environment runs with: the resolver package importable (for the
        in-environment helpers), no PYTHONHOME of ours."""
        merged = dict(os.environ if env is None else env)
        package_parent = str(Path(__file__).resolve().parents[2])  # the folder holding the resolver package
        merged["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, merged.get("PYTHONPATH")) if p)
        merged.pop("PYTHONHOME", None)
        return merged

    def activated_environ(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The variables a shell has once it entered this environment (``source bin/activate``: its bin first on
        PATH, ``CONDA_PREFIX`` or ``VIRTUAL_ENV``, what the packages' ``etc/conda/activate.d`` scripts set), as
        ``pixi shell`` gives them; worked out by running the environment's own activate script in ``sh``."""
        base = dict(os.environ if env is None else env)
        base.pop("PYTHONHOME", None)
        script = self.bin_dir / "activate"
        if script.is_file() and not script.is_symlink():
            done = proc.run(["sh", "-c", '. "$1" >/dev/null 2>&1; exec env -0', "sh", str(script)], timeout=60,
                            env=base, reap=False)
            if done.returncode == 0 and "\0" in done.stdout:
                pairs = (item.partition("=") for item in done.stdout.split("\0") if "=" in item)
                return {key: value for key, _, value in pairs if key and key != "_"}
        base["PATH"] = os.pathsep.join(p for p in (str(self.bin_dir), base.get("PATH")) if p)
        base["CONDA_PREFIX" if self.kind == "conda" else "VIRTUAL_ENV"] = str(self.path)
        base["CONDA_DEFAULT_ENV"] = self.name
        return base

    def run_python(self, args: list[str], *, timeout: float, env: Mapping[str, str] | None = None) -> Completed:
        """Run this environment's Python (through the process gateway) with the resolver importable."""
        return proc.run([str(self.python), *args], timeout=timeout, env=self.child_environ(env))

    def call(self, module: str, args: list[str] = (), *, timeout: float) -> "Answer":
        """Run ``python -m module args`` here and read its answer (resolver.core.inenv_protocol)."""
        from resolver.core.inenv_protocol import parse

        done = self.run_python(["-m", module, *args], timeout=timeout)
        return Answer(parse(done.stdout), done)

    @classmethod
    def find(cls, project: ProjectPaths, name: str | None = None) -> "Environment":
        """The named environment, else the project's default (pixi.toml ``[tool.resolver.upgrade]``), else the
        only one there is; one clear error otherwise."""
        if name is None:
            from resolver.project.pixi_toml import default_environment

            name = default_environment(project)
            if name is not None and cls.kind_of(project.env(name)) is None:
                raise EnvironmentProblem(f"the project's default environment '{name}' (pixi.toml "
                                         "[tool.resolver.upgrade]) is not installed",
                                         fix=f"run `python -m resolver setup` (or `install --env {name}`), or choose "
                                             "another environment with --env")
        if name is None:
            names = sorted(p.name for p in project.envs.iterdir() if is_env_name(p.name) and cls.kind_of(p)) \
                if project.envs.is_dir() else []
            if len(names) == 1:
                name = names[0]
            elif not names:
                raise EnvironmentProblem(f"no environment is installed in {project.envs}",
                                         fix="run `python -m resolver setup` (or `lock` then `install`)")
            else:
                raise EnvironmentProblem(f"several environments are installed ({', '.join(names)})",
                                         fix=f"choose one with --env, e.g. --env {names[0]}")
        path = project.env(name)
        kind = cls.kind_of(path)
        if kind is None:
            raise EnvironmentProblem(f"environment '{name}' is not installed (no {path})",
                                     fix=f"run `python -m resolver install --env {name}`")
        env = cls(name, path, kind)
        if not env.python.exists():
            raise EnvironmentProblem(f"environment '{name}' at {path} has no Python",
                                     fix=f"run `python -m resolver install --env {name}` to repair it")
        return env


@dataclass(frozen=True)
class Answer:
    """What an in-environment helper handed back: its document (None when it gave none) and the run."""

    document: dict | None
    completed: Completed

    @property
    def failure(self) -> str:
        """Why there is no document, in a few words (the last line the child printed)."""
        if self.completed.timed_out:
            return f"no answer within {self.completed.seconds:.0f} s"
        lines = [line.strip() for line in (self.completed.stderr or self.completed.stdout).splitlines() if line.strip()]
        return (lines[-1] if lines else f"exit {self.completed.returncode}, no output")[:300]
