"""``install``: one environment from pixi.lock alone, verified, built aside, renamed into place.

* Never re-resolves: the exact conda records and wheel files of the lock, for this machine's subdir.
* Every artefact is found through the mirrors and local folders, copied privately while its sha256 is
  checked, and only that copy is installed (:mod:`.fetch`); a mismatch is an :class:`IntegrityError`
  naming the file.
* Kinds: a conda prefix when the lock has a conda ``python`` (its own interpreter, py-rattler links the
  conda packages; the wheels go in with ``uv pip install --no-deps`` run for that interpreter); otherwise
  the explicit fallback, a virtual environment of this machine's interpreter for the locked Python.
* The environment is built in ``.resolver/envs/.<name>.tmp-<pid>`` with the final path patched into
  its files, the ready marker written, then renamed to ``.resolver/envs/<name>``: an interrupted
  install never leaves a half environment that looks ready, and running it again repairs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from resolver.core.errors import BadInput, BuildFailed, EnvironmentProblem, ResolverError
from resolver.core.fingerprint import fingerprint
from resolver.core.fs import make_folder, mark_tree, remove_file, remove_tree
from resolver.core.model import Target
from resolver.core.names import canonical_name
from resolver.core.platforms import host_subdir
from resolver.core.records import write_record
from resolver.install import identity
from resolver.install.build import build_environment, bytecode_ahead, find_interpreter, swap_into_place
from resolver.install.environment import READY_MARKER, ready_record
from resolver.install.fetch import Finder, manifest_folders, verified_copy
from resolver.install.launcher import write_launcher
from resolver.install.template import EnvBuild
from resolver.lock.lockfile import LockedEnv, read_lock
from resolver.project.paths import ProjectPaths
from resolver.project.sources import Sources
from resolver.tools import proc, uv

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
    built_from: str = "lock"  # "lock" (conda link + uv) | "cache" (hard links of an earlier build) | "difference"
    bytecode: str = ""  # "all" (compiled at install) | "none" (on first import) | "" (nothing was built)
    added: tuple[str, ...] = ()  # "name==version" installed over the environment there was
    removed: tuple[str, ...] = ()  # "name==version" uninstalled from it (by hand ones too, with exact)
    changed: tuple[str, ...] = ()  # "name==version" replaced by another artefact
    kept: tuple[str, ...] = ()  # "name==version" installed by hand, in no lock: left as they are
    removed_by_hand: tuple[str, ...] = ()  # of ``removed``, the ones installed by hand (exact)

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
                "enter": self.enter, "added": list(self.added), "removed": list(self.removed),
                "changed": list(self.changed), "kept": list(self.kept),
                "removed_by_hand": list(self.removed_by_hand)}

    def change_lines(self) -> list[str]:
        """What changed, one line a package, as uv prints it (``+ NAME==V``, ``- NAME==V``, ``~ NAME==V``), then
        the packages installed by hand that were kept."""
        by_hand = set(self.removed_by_hand)
        lines = [f"+ {item}" for item in self.added] + [f"~ {item}" for item in self.changed]
        lines += [f"- {item}" + (" (installed by hand)" if item in by_hand else "") for item in self.removed]
        if self.kept:
            lines.append(f"kept, installed by hand (not in pixi.lock): {', '.join(self.kept)}; `--exact` removes them")
        return lines


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
        have = ", ".join(dict.fromkeys(e.platform.subdir for e in envs[name]))
        if not any(_for_a_gpu(e) for e in envs[name]):
            raise EnvironmentProblem(
                f"environment '{name}' is locked for {have}, not for this machine ({subdir})",
                fix=f"add this platform: `python -m resolver lock --platform {subdir}` (it adds {subdir} to "
                    "[workspace] platforms of pixi.toml and locks the CPU environment for it too; commit both files "
                    "for your team), then install again")
        raise EnvironmentProblem(f"environment '{name}' is for the GPU machines its plan serves ({have}), not for "
                                 f"this machine ({subdir})",
                                 fix=f"lock an environment for this machine: `python -m resolver lock --target "
                                     f"{Target.for_environment(name)}` here (or `--target cpu`)")
    return matching[0]


def _for_a_gpu(env: LockedEnv) -> bool:
    """Whether a locked environment is a GPU one: its platform declares a CUDA driver, or its torch is a
    CUDA or ROCm build."""
    if any(vp.startswith("__cuda") for vp in env.platform.virtual_packages):
        return True
    torch = next((a for a in env.pypi if a.name == "torch"), None)
    local = torch.version.partition("+")[2] if torch is not None else ""
    return local.startswith(("cu", "rocm"))


def environment_digest(env: LockedEnv) -> str:
    """A digest of everything install uses from the lock (same lock content → same digest): the fingerprint
    of its lines (their bytes: the value every ready marker and cached build already carries)."""
    lines = [env.name, env.platform.subdir, *sorted(f"{r.url} {r.sha256 or r.md5}" for r in env.conda),
             *sorted(f"{a.location} {a.sha256}" for a in env.pypi)]
    return fingerprint("\n".join(lines).encode("utf-8"))


def locked_environment_digest(project: ProjectPaths, name: str) -> str:
    """Digest of environment ``name`` in pixi.lock for this machine ("" when it is not locked)."""
    try:
        return environment_digest(locked_environment(project, name))
    except ResolverError:
        return ""


@dataclass(frozen=True)
class _Target:
    """What one install makes: the locked environment, where it goes, its kind and Python."""

    env: LockedEnv
    digest: str
    final: Path
    kind: str  # "conda" | "venv"
    python: str
    interpreter: str | None  # the host Python a venv is made of

    def summary(self, status: str, started: float, built_from: str = "lock", bytecode: str = "",
                **changes: tuple[str, ...]) -> InstallSummary:
        return InstallSummary(self.env.name, self.final, self.kind, self.python, self.env.platform.subdir,
                              len(self.env.conda), len(self.env.pypi), status, time.monotonic() - started,
                              self.digest, built_from, bytecode, **changes)

    def marker(self, folder: Path) -> dict[str, Any]:
        """The ready marker's record of this install, for the environment being made in ``folder``."""
        from resolver.install.incremental import artifact_lines, verify_inputs
        from resolver.project.manifest import DEFAULT_PYPI

        env = self.env
        return {"environment": env.name, "kind": self.kind, "python": self.python, "platform": env.platform.subdir,
                "lock_digest": self.digest, "conda": [f"{r.name}-{r.version}-{r.build}" for r in env.conda],
                "pypi": [f"{a.name}=={a.version}" for a in env.pypi], "seeded": seeded_pip(folder, self.kind, env),
                "artifacts": list(artifact_lines(env)), "verify_inputs": verify_inputs(env, ("torch", *DEFAULT_PYPI))}


def install_environment(project: ProjectPaths, name: str | None = None, *, force: bool = False,
                        use_cache: bool = True, info: Info = lambda text: None,
                        progress: Progress | None = None, sources: Sources | None = None,
                        source_flags: Mapping[str, Any] | None = None, bytecode: str = "auto",
                        exact: bool = False) -> InstallSummary:
    """Install environment ``name`` from pixi.lock into ``.resolver/envs/<name>``.

    ``sources``: where the locked files are found; without it they are read (``source_flags`` over
    pixi.toml's and pyproject.toml's ``[tool.resolver]``) only when files are fetched, so an installed
    environment that matches the lock is answered from the lock alone.
    ``force`` rebuilds even when the installed environment matches the lock, and never reuses a cached
    build (it repairs); ``use_cache=False`` also ignores the cached build of the same lock content.

    An installed environment whose conda packages the lock keeps gets only the difference
    (:mod:`resolver.install.incremental`): the wheels whose sha256 changed, were added or removed; packages
    installed by hand are kept and named, or with ``exact`` uninstalled and named.
    """
    started = time.monotonic()
    target = _target(project, locked_environment(project, name))
    _remove_leftovers(project, target.env.name)  # an interrupted run's, even when up to date
    previous = ready_record(target.final)
    record = None if force else previous
    if record is not None and record.get("lock_digest") == target.digest and not exact:
        _keep_launcher(target.final, project)
        return target.summary("up-to-date", started, kept=_by_hand(target, record))
    ahead, why = bytecode_ahead(bytecode)
    if record is not None:
        done = _difference(project, target, record, exact=exact, ahead=ahead, info=info, progress=progress,
                           sources=lambda: sources or Sources.load(project.root, flags=source_flags), started=started)
        if done is not None:
            return done
    lost = _by_hand(target, previous) if previous is not None and target.final.is_dir() else ()
    if lost:  # a rebuild cannot keep what no lock holds: each one is named, never dropped silently
        info(f"the environment is built again from pixi.lock; installed by hand, not kept: {', '.join(lost)} "
             f"(`python -m resolver add -e {target.env.name} --pypi NAME` keeps a package for good)")
    lost_by_hand = {"removed": lost, "removed_by_hand": lost}
    # The cached build keeps what uv's own cache does not: the compiled bytecode (11-16 s to redo).
    # Without it, uv links from its cache faster (0.8 s for the CPU environment) than we copy links.
    cached = EnvBuild(project.env_build(target.env.name, target.digest), target.final) if ahead and use_cache else None
    if cached is not None and force:
        cached.drop()
    if cached is not None and not force and _linked(project, target, cached, info):
        return target.summary("installed", started, "cache", "all", **lost_by_hand)
    info(f"checking {len(target.env.conda) + len(target.env.pypi)} locked artefacts")
    sources = sources or Sources.load(project.root, flags=source_flags)
    conda_files, wheels = _verified_artefacts(project, target.env, sources, progress)
    info(f"bytecode: {'compiled now' if ahead else 'on first import'} ({why})")
    _into_place(project, target,
                lambda tmp: _built(project, target, conda_files, wheels, tmp, info, ahead, cached, progress))
    failure = _does_not_run(target.final)
    if failure:
        raise BuildFailed(f"the environment at {target.final} does not run after the move ({failure})",
                          fix=f"run `python -m resolver install --env {target.env.name} --force`")
    return target.summary("installed", started, "lock", "all" if ahead else "none", **lost_by_hand)


def _target(project: ProjectPaths, env: LockedEnv) -> _Target:
    has_conda_python = any(r.name == "python" for r in env.conda)
    if env.pypi and not has_conda_python and not env.fallback:
        raise BadInput(f"pixi.lock's environment '{env.name}' has PyPI packages but no conda python, and is not "
                       "marked as a fallback (the lock was edited, or written by an older resolver)",
                       fix=f"lock it again: `python -m resolver lock --target {Target.for_environment(env.name)}`")
    kind = "conda" if has_conda_python else "venv"
    python = env.python or f"{sys.version_info.major}.{sys.version_info.minor}"
    interpreter = None
    if kind == "venv":
        interpreter = find_interpreter(python)
        if interpreter is None:
            raise EnvironmentProblem(f"environment '{env.name}' is a fallback virtual environment of Python {python} "
                                     f"and this machine has no python{python} on PATH",
                                     fix="relock where a conda channel answers (the environment then brings its own "
                                         f"Python), or install Python {python} (e.g. `pyenv install {python}`)")
    return _Target(env, environment_digest(env), project.env(env.name), kind, python, interpreter)


def _remove_leftovers(project: ProjectPaths, name: str) -> None:
    for folder, pattern in ((project.envs, f".{name}.tmp-*"), (project.envs, f".{name}.old-*"),
                            (project.env_builds, f".{name}-*.part-*")):
        for stale in folder.glob(pattern):  # our own temporary names, each reached without a link
            with contextlib.suppress(OSError, BadInput):
                remove_tree(stale)


def _linked(project: ProjectPaths, target: _Target, cached: EnvBuild, info: Info) -> bool:
    """The environment linked from its cached build, in place and running; False (nothing changed) when
    there is no usable cached build (then it is dropped and the environment built from the lock)."""
    record = cached.record()
    if record is None:
        return False  # nothing to link: nothing is made

    def link(tmp: Path) -> None:
        if not cached.link_into(tmp, record):
            raise _NoCachedBuild
        info(f"linked the environment from the cache ({cached.folder})")

    try:
        _into_place(project, target, link)
    except _NoCachedBuild:
        return False
    if _does_not_run(target.final):  # e.g. the interpreter a cached venv points at is gone
        remove_file(target.final / READY_MARKER)  # not ready: should the build from the lock fail, no later
        cached.drop()                           # install may call this environment up to date
        return False
    return True


class _NoCachedBuild(Exception):
    pass


def _verified_artefacts(project: ProjectPaths, env: LockedEnv, sources: Sources,
                        progress: Progress | None) -> tuple[list[Path], list[Path]]:
    """The private, checked copies of every locked conda package and wheel."""
    finder = _finder(project, env, sources)
    store = project.verified_store
    fetched, count, started = 0, len(env.conda) + len(env.pypi), time.monotonic()

    def one_more(path: Path) -> Path:  # files verified of the total: a download's own bytes show while it runs
        nonlocal fetched
        fetched += 1
        if progress is not None:
            progress("verifying the locked files", fetched, count, started)
        return path
    conda_files = [one_more(verified_copy(r.url, r.sha256 or "", store, finder, progress=progress))
                   for r in env.conda]
    wheels = [one_more(verified_copy(a.location, a.sha256, store, finder, name=a.name, progress=progress))
              for a in env.pypi]
    # each file is the package its entry names, before anything is installed (the sha256 alone proves
    # only that it is the file the lock's author pointed at)
    for record, path in zip(env.conda, conda_files):
        identity.check_conda(path, record.name, record.version, record.build, record.subdir)
    for artifact, path in zip(env.pypi, wheels):
        identity.check_wheel(path, artifact.name, artifact.version, artifact.file_name, artifact.requires_dist)
    return conda_files, wheels


def _built(project: ProjectPaths, target: _Target, conda_files: list[Path], wheels: list[Path], tmp: Path,
           info: Info, bytecode: bool, cached: EnvBuild | None, progress: Progress | None = None) -> None:
    build_environment(target.env, target.kind, target.python, target.interpreter, conda_files, wheels, tmp,
                      target.final, project, info, bytecode=bytecode, progress=progress)
    if cached is not None:
        cached.keep(tmp)


def _into_place(project: ProjectPaths, target: _Target, make: Callable[[Path], None]) -> None:
    """``make`` the environment in a temporary folder, mark it ready, rename it into place: an
    interrupted install never leaves a half environment that looks ready."""
    env = target.env
    make_folder(project.envs)
    tmp = project.envs / f".{env.name}.tmp-{os.getpid()}"
    if os.path.islink(tmp) or (os.path.lexists(tmp) and not os.path.isdir(tmp)):
        remove_file(tmp)  # a link or file planted at our temporary name: removed as such, never built through
    try:
        make(tmp)
        write_launcher(tmp, project.root)
        mark_tree(tmp)
        write_record(tmp / READY_MARKER, target.marker(tmp), label="ready-marker", place=target.final / READY_MARKER,
                     strict=True)
        swap_into_place(tmp, target.final)
    except BaseException:
        with contextlib.suppress(OSError, BadInput):
            remove_tree(tmp)
        raise


def _by_hand(target: _Target, record: dict) -> tuple[str, ...]:
    """``name==version`` of each package installed by hand in the environment (in no record of install's,
    owned by no conda package, not a wheel of the lock)."""
    from resolver.install.drift import drift_of

    locked = {canonical_name(a.name) for a in target.env.pypi}
    return tuple(f"{n}=={v}" for n, v in drift_of(target.final, record).added if n not in locked)


def _difference(project: ProjectPaths, target: _Target, record: dict, *, exact: bool, ahead: bool, info: Info,
                progress: Progress | None, sources: Callable[[], Sources], started: float) -> InstallSummary | None:
    """Install the new lock over the environment there is, only what changed (None: it cannot be done so,
    the environment is built again: no artefact record, another kind or platform, conda packages changed)."""
    from resolver.install.drift import drift_of
    from resolver.install.incremental import artifact_lines, diff

    if (not record.get("artifacts") or record.get("kind") != target.kind
            or record.get("platform") != target.env.platform.subdir or not (target.final / "bin" / "python").exists()):
        return None
    difference = diff(record["artifacts"], artifact_lines(target.env))
    if difference.conda_changed:
        return None
    wheels = {canonical_name(a.name): a for a in target.env.pypi}
    old_versions = {canonical_name(line.split(" ")[1]): line.split(" ")[2] for line in record["artifacts"]
                    if line.startswith("pypi ")}
    drift = drift_of(target.final, record)
    by_hand = [(n, v) for n, v in drift.added if n not in wheels]
    restore = [n for n, _, _ in drift.changed] + [n for n, _ in drift.removed] if exact else []
    restore = [n for n in restore if n in wheels and n not in difference.changed]
    uninstall = [*difference.removed, *difference.changed, *restore] + ([n for n, _ in by_hand] if exact else [])
    install = [wheels[n] for n in (*difference.added, *difference.changed, *restore)]
    marker = target.marker(target.final)
    if not uninstall and not install:  # the same artefacts (wherever the lock now says they live)
        if record.get("lock_digest") != target.digest:
            write_record(target.final / READY_MARKER, marker, label="ready-marker", strict=True)
        _keep_launcher(target.final, project)
        return target.summary("up-to-date", started, kept=tuple(f"{n}=={v}" for n, v in by_hand))
    python = target.final / "bin" / "python"
    if install:
        info(f"checking {len(install)} changed locked artefacts")
        finder_sources = sources()
        files = _verified_wheels(project, target.env, finder_sources, install, progress)
    if uninstall:
        info(f"uninstalling {len(uninstall)} packages")
        done = uv.uninstall(python, uninstall)
        if not done.ok:
            raise BuildFailed(f"uninstalling {', '.join(uninstall)} failed ({done.tail()})",
                              fix=f"run `python -m resolver install --env {target.env.name} --force` to rebuild it")
    if install:
        info(f"installing {len(install)} wheels with uv" + (", byte-compiling them" if ahead else ""))
        done = uv.install_wheels(python, files, compile_bytecode=ahead)
        if not done.ok:
            raise BuildFailed(f"installing the locked wheels failed ({done.tail()})",
                              fix=f"run `python -m resolver install --env {target.env.name} --force` to rebuild it")
    write_record(target.final / READY_MARKER, marker, label="ready-marker", strict=True)
    _keep_launcher(target.final, project)
    pin = {n: f"{n}=={a.version}" for n, a in wheels.items()}
    return target.summary("installed", started, "difference", "all" if ahead else "none",
                          added=tuple(pin[n] for n in (*difference.added, *restore)),
                          changed=tuple(pin[n] for n in difference.changed),
                          removed=tuple(f"{n}=={old_versions.get(n, '')}" for n in difference.removed)
                          + (tuple(f"{n}=={v}" for n, v in by_hand) if exact else ()),
                          kept=() if exact else tuple(f"{n}=={v}" for n, v in by_hand),
                          removed_by_hand=tuple(f"{n}=={v}" for n, v in by_hand) if exact else ())


def _verified_wheels(project: ProjectPaths, env: LockedEnv, sources: Sources, wheels: list,
                     progress: Progress | None) -> list[Path]:
    """The private, checked copies of ``wheels`` (locked artefacts of ``env``)."""
    finder = _finder(project, env, sources)
    return [verified_copy(a.location, a.sha256, project.verified_store, finder, name=a.name, progress=progress)
            for a in wheels]


def _finder(project: ProjectPaths, env: LockedEnv, sources: Sources) -> Finder:
    """Where ``env``'s locked files are looked for: the sources, pip's local folders, the environment's
    channels and the folders pixi.toml declares for it."""
    from resolver.lock.pipconfig import read_pip_config

    return Finder(sources, read_pip_config().local_folders, env.channels, manifest_folders(project.root, env.name))


def _keep_launcher(final: Path, project: ProjectPaths) -> None:
    """The launcher of an environment already up to date, written when it is missing or names another
    project or resolver (the project moved; an environment installed before launchers were written)."""
    try:
        write_launcher(final, project.root)
    except (OSError, ResolverError):  # an environment this user cannot write: it still works, without it
        pass


def _does_not_run(final: Path) -> str | None:
    """Why the environment's interpreter does not run as that environment (None: it does)."""
    check = proc.run([str(final / "bin" / "python"), "-c", "import sys; print(sys.prefix)"], timeout=120)
    if check.returncode != 0 or Path(check.stdout.strip()).resolve() != final.resolve():
        return check.stderr.strip()[:200] or f"sys.prefix is {check.stdout.strip()[:200]}"
    return None
