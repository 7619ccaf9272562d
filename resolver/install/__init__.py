"""``install``: one environment from pixi.lock alone, verified, built aside, renamed into place.

* Never re-resolves: the exact conda records and wheel files of the lock, for this machine's subdir.
* Every artefact is found through the mirrors and local folders, copied privately while its sha256 is
  checked, and only that copy is installed (:mod:`.fetch`); a mismatch is an :class:`IntegrityError`
  naming the file.
* Kinds: a conda prefix when the lock has a conda ``python`` (its own interpreter, py-rattler links the
  conda packages; the wheels go in with ``pip install --no-deps`` run for that interpreter); otherwise
  the explicit fallback, a virtual environment of this machine's interpreter for the locked Python.
* The environment is built in ``.resolver/envs/.<name>.tmp-<pid>`` with the final path patched into
  its files, the ready marker written, then renamed to ``.resolver/envs/<name>``: an interrupted
  install never leaves a half environment that looks ready, and running it again repairs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from resolver import proc
from resolver.decide.model import Target
from resolver.errors import BadInput, BuildFailed, EnvironmentProblem, ResolverError
from resolver.install.build import build_environment, bytecode_ahead, find_interpreter, swap_into_place
from resolver.install.environment import READY_MARKER
from resolver.install.fetch import Finder, verified_copy
from resolver.install.template import TEMPLATE_MARKER, link_tree, save_template, template_final, template_ready
from resolver.lock.lockfile import LockedEnv, read_lock
from resolver.lock.sources import Sources
from resolver.paths import ProjectPaths
from resolver.platforms import host_subdir

Info = Callable[[str], None]
Progress = Callable[[str, int, "int | None", float], None]  # Output.progress


@dataclass(frozen=True)
class InstallSummary:
    environment: str
    path: Path
    kind: str  # "conda" | "venv"
    python: str
    platform: str
    conda_packages: int
    pypi_packages: int
    status: str  # "installed" | "up-to-date"
    seconds: float
    digest: str
    built_from: str = "lock"  # "lock" (conda link + uv) | "cache" (hard links of an earlier build)
    bytecode: str = ""  # "all" (compiled at install) | "none" (on first import) | "" (nothing was built)

    @property
    def enter(self) -> dict[str, str | None]:
        """How to enter the environment: with pixi (None for a fallback, which pixi cannot install) and
        without it (its ``bin/activate``: for a conda prefix, what ``pixi shell`` does)."""
        shell = f"source {self.path / 'bin' / 'activate'}"
        return {"pixi": None if self.kind == "venv" else f"pixi shell -e {self.environment}", "shell": shell}

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.environment, "path": str(self.path), "kind": self.kind, "python": self.python,
                "platform": self.platform, "conda_packages": self.conda_packages,
                "pypi_packages": self.pypi_packages, "status": self.status, "seconds": round(self.seconds, 3),
                "lock_digest": self.digest, "built_from": self.built_from, "bytecode": self.bytecode,
                "enter": self.enter}


def seeded_pip(prefix: Path, kind: str, env: LockedEnv) -> list[str]:
    """``pip==X`` when a fallback virtual environment holds the pip its Python seeds (the lock does not
    list it), so doctor does not count it as installed by hand."""
    if kind != "venv" or any(a.name == "pip" for a in env.pypi):
        return []
    found = sorted(prefix.glob("lib/python3*/site-packages/pip-*.dist-info"))
    return [f"pip=={found[-1].name[len('pip-'):-len('.dist-info')]}"] if found else []


def locked_environment(project: ProjectPaths, name: str | None) -> LockedEnv:
    """The locked environment ``name`` for this machine's platform (the only one when ``name`` is None)."""
    envs = read_lock(project.lockfile, project.root)
    if name is None:
        if len(envs) != 1:
            names = ", ".join(sorted(envs)) or "none"
            raise EnvironmentProblem(f"pixi.lock holds several environments ({names})" if envs
                                     else "pixi.lock holds no environment",
                                     fix="choose one with --env NAME" if envs else "run `python -m resolver lock`")
        name = next(iter(envs))
    if name not in envs:
        raise EnvironmentProblem(f"pixi.lock has no environment '{name}' (it has: {', '.join(sorted(envs)) or 'none'})",
                                 fix=f"run `python -m resolver lock --target {Target.for_environment(name)}` first")
    subdir = host_subdir()
    matching = [e for e in envs[name] if e.platform.subdir == subdir]
    if not matching:
        have = ", ".join(e.platform.subdir for e in envs[name])
        raise EnvironmentProblem(f"environment '{name}' is locked for {have}, not for this machine ({subdir})",
                                 fix=f"lock it for {subdir} (`python -m resolver lock --target {Target.for_environment(name)}` on this "
                                     "machine)")
    return matching[0]


def environment_digest(env: LockedEnv) -> str:
    """A digest of everything install uses from the lock (same lock content → same digest)."""
    parts = [env.name, env.platform.subdir, *sorted(f"{r.url} {r.sha256 or r.md5}"
                                                     for r in env.conda),
             *sorted(f"{a.location} {a.sha256}" for a in env.pypi)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def locked_environment_digest(project: ProjectPaths, name: str) -> str:
    """Digest of environment ``name`` in pixi.lock for this machine ("" when it is not locked)."""
    try:
        return environment_digest(locked_environment(project, name))
    except ResolverError:
        return ""


def install_environment(project: ProjectPaths, name: str | None = None, *, force: bool = False,
                        use_cache: bool = True, info: Info = lambda text: None,
                        progress: Progress | None = None, sources: Sources | None = None,
                        bytecode: str = "auto") -> InstallSummary:
    """Install environment ``name`` from pixi.lock into ``.resolver/envs/<name>``.

    ``force`` rebuilds even when the installed environment matches the lock, and never reuses a cached
    build (it repairs); ``use_cache=False`` also ignores the cached build of the same lock content.
    """
    from resolver.lock.pipconfig import read_pip_config

    started = time.monotonic()
    env = locked_environment(project, name)
    digest = environment_digest(env)
    final = project.env(env.name)
    has_conda_python = any(r.name == "python" for r in env.conda)
    if env.pypi and not has_conda_python and not env.fallback:
        raise BadInput(f"pixi.lock's environment '{env.name}' has PyPI packages but no conda python, and is not "
                       "marked as a fallback (the lock was edited, or written by an older resolver)",
                       fix=f"lock it again: `python -m resolver lock --target {Target.for_environment(env.name)}`")
    kind = "conda" if has_conda_python else "venv"
    python = env.python or f"{sys.version_info.major}.{sys.version_info.minor}"
    for folder, pattern in ((project.envs, f".{env.name}.tmp-*"), (project.envs, f".{env.name}.old-*"),
                            (project.cache / "envs", f".{env.name}-*.part-*")):  # an interrupted run's, even when up to date
        for stale in folder.glob(pattern):
            shutil.rmtree(stale, ignore_errors=True)
    marker = final / READY_MARKER
    if not force and marker.is_file():
        try:
            if json.loads(marker.read_text(encoding="utf-8")).get("lock_digest") == digest:
                return InstallSummary(env.name, final, kind, python, env.platform.subdir, len(env.conda),
                                      len(env.pypi), "up-to-date", time.monotonic() - started, digest)
        except (OSError, ValueError):
            pass
    interpreter = None
    if kind == "venv":
        interpreter = find_interpreter(python)
        if interpreter is None:
            raise EnvironmentProblem(f"environment '{env.name}' is a fallback virtual environment of Python {python} "
                                     f"and this machine has no python{python} on PATH",
                                     fix="relock where a conda channel answers (the environment then brings its own "
                                         f"Python), or install Python {python} (e.g. `pyenv install {python}`)")
    info(f"checking {len(env.conda) + len(env.pypi)} locked artefacts")
    finder = Finder(sources or Sources.load(project.root), read_pip_config().local_folders, env.channels)
    store = project.verified
    fetched, count, fetch_started = 0, len(env.conda) + len(env.pypi), time.monotonic()

    def one_more(path: Path) -> Path:  # files verified of the total: a download's own bytes show while it runs
        nonlocal fetched
        fetched += 1
        if progress is not None:
            progress("verifying the locked files", fetched, count, fetch_started)
        return path
    conda_files = [one_more(verified_copy(r.url, r.sha256 or "", store, finder, progress=progress))
                   for r in env.conda]
    wheels = [one_more(verified_copy(a.location, a.sha256, store, finder, name=a.name, progress=progress))
              for a in env.pypi]
    project.envs.mkdir(parents=True, exist_ok=True)
    tmp = project.envs / f".{env.name}.tmp-{os.getpid()}"
    ahead, why = bytecode_ahead(bytecode)
    # The cached build keeps what uv's own cache does not: the compiled bytecode (11-16 s to redo).
    # Without it, uv links from its cache faster (0.8 s for the CPU environment) than we copy links (2.8 s).
    use_cache = use_cache and ahead
    template = project.cache / "envs" / f"{env.name}-{digest[:20]}-pyc"
    if force:
        shutil.rmtree(template, ignore_errors=True)
    # a cached build is used only for the same place: conda files have the prefix baked in
    from_cache = use_cache and not force and template_ready(template) and template_final(template) == str(final)
    try:
        if from_cache:
            info(f"linking the environment from the cache ({template})")
            link_tree(template, tmp)
            (tmp / TEMPLATE_MARKER).unlink()
        else:
            info(f"bytecode: {'compiled now' if ahead else 'on first import'} ({why})")
            build_environment(env, kind, python, interpreter, conda_files, wheels, tmp, final, project, info,
                              bytecode=ahead, progress=progress)
            if use_cache:
                save_template(tmp, template, final)
        (tmp / READY_MARKER).write_text(json.dumps({
            "environment": env.name, "kind": kind, "python": python, "platform": env.platform.subdir,
            "lock_digest": digest, "conda": [f"{r.name}-{r.version}-{r.build}" for r in env.conda],
            "pypi": [f"{a.name}=={a.version}" for a in env.pypi], "seeded": seeded_pip(tmp, kind, env)},
            indent=2, sort_keys=True) + "\n", encoding="utf-8")
        swap_into_place(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    check = proc.run([str(final / "bin" / "python"), "-c", "import sys; print(sys.prefix)"], timeout=120)
    if check.returncode != 0 or Path(check.stdout.strip()).resolve() != final.resolve():
        if from_cache:  # e.g. the interpreter the cached venv points at is gone: drop it, build afresh
            shutil.rmtree(template, ignore_errors=True)
            return install_environment(project, env.name, force=True, use_cache=use_cache, info=info,
                                       progress=progress, sources=sources, bytecode=bytecode)
        raise BuildFailed(f"the environment at {final} does not run after the move ({check.stderr.strip()[:200]})",
                          fix=f"run `python -m resolver install --env {env.name} --force`")
    return InstallSummary(env.name, final, kind, python, env.platform.subdir, len(env.conda), len(env.pypi),
                          "installed", time.monotonic() - started, digest, "cache" if from_cache else "lock",
                          "all" if ahead else "none")
