"""``install``: one environment from pixi.lock alone, verified, built aside, renamed into place.

* Never re-resolves: the exact conda records and wheel files of the lock, for this machine's subdir.
* Every artefact's sha256 is checked before anything is linked or installed; a mismatch is an
  :class:`IntegrityError` naming the file. Remote artefacts are downloaded once into
  ``.resolver/cache`` and reused while their hash holds; local ones (wheelhouses, file channels)
  are read in place.
* Kinds: a conda prefix when the lock has a conda ``python``; otherwise a virtual environment of
  the host's interpreter for the locked Python (the ``cpXY`` tag of the wheels), python-less conda
  packages linked into it, the wheels installed with ``pip install --no-deps`` of the locked files.
* The environment is built in ``.resolver/envs/.<name>.tmp-<pid>`` with the final path patched into
  its files, the ready marker written, then renamed to ``.resolver/envs/<name>``: an interrupted
  install never leaves a half environment that looks ready, and running it again repairs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from resolver import conda, proc
from resolver.errors import (
    BuildFailed,
    EnvironmentProblem,
    IntegrityError,
    ResolverError,
)
from resolver.fs import sha256_of
from resolver.install.environment import READY_MARKER
from resolver.install.fetch import fetch
from resolver.lock.lockfile import LockedEnv, PypiArtifact, read_lock
from resolver.lock.pypi import find_interpreter
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
    built_from: str = "lock"  # "lock" (venv + conda link + pip) | "cache" (hard links of an earlier build)

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.environment, "path": str(self.path), "kind": self.kind, "python": self.python,
                "platform": self.platform, "conda_packages": self.conda_packages,
                "pypi_packages": self.pypi_packages, "status": self.status, "seconds": round(self.seconds, 3),
                "lock_digest": self.digest, "built_from": self.built_from}


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
                                 fix=f"run `python -m resolver lock --target <target for {name}>` first")
    subdir = host_subdir()
    matching = [e for e in envs[name] if e.platform.subdir == subdir]
    if not matching:
        have = ", ".join(e.platform.subdir for e in envs[name])
        raise EnvironmentProblem(f"environment '{name}' is locked for {have}, not for this machine ({subdir})",
                                 fix=f"lock it for {subdir} (`python -m resolver lock --target ...` on this machine)")
    return matching[0]


def environment_digest(env: LockedEnv) -> str:
    """A digest of everything install uses from the lock (same lock content → same digest)."""
    parts = [env.name, env.platform.subdir, *sorted(f"{r.url} {r.sha256.hex() if r.sha256 else r.md5.hex()}"
                                                     for r in env.conda),
             *sorted(f"{a.location} {a.sha256}" for a in env.pypi)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def locked_environment_digest(project: ProjectPaths, name: str) -> str:
    """Digest of environment ``name`` in pixi.lock for this machine ("" when it is not locked)."""
    try:
        return environment_digest(locked_environment(project, name))
    except ResolverError:
        return ""


def python_of(env: LockedEnv) -> str | None:
    """The environment's Python ``X.Y``: the conda python's, else the wheels' ``cpXY`` tag."""
    for record in env.conda:
        if record.name.normalized == "python":
            return ".".join(str(record.version).split(".")[:2])
    found = sorted({f"{m.group(1)}.{m.group(2)}" for a in env.pypi
                    for m in [re.search(r"-cp(\d)(\d+)-", a.file_name)] if m})
    return found[0] if len(found) == 1 else None


def install_environment(project: ProjectPaths, name: str | None = None, *, force: bool = False,
                        use_cache: bool = True, info: Info = lambda text: None,
                        progress: Progress | None = None) -> InstallSummary:
    """Install environment ``name`` from pixi.lock into ``.resolver/envs/<name>``.

    ``force`` rebuilds even when the installed environment matches the lock; ``use_cache=False``
    also ignores the cached build of the same lock content (runs pip again).
    """
    started = time.monotonic()
    env = locked_environment(project, name)
    digest = environment_digest(env)
    final = project.env(env.name)
    has_conda_python = any(r.name.normalized == "python" for r in env.conda)
    kind = "conda" if has_conda_python else "venv"
    python = python_of(env) or f"{sys.version_info.major}.{sys.version_info.minor}"
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
            raise EnvironmentProblem(f"environment '{env.name}' needs Python {python} and this machine has no "
                                     f"python{python} on PATH",
                                     fix=f"install Python {python} (e.g. `pyenv install {python}`) or add a conda "
                                         f"python to the environment's [dependencies]")
    info(f"checking {len(env.conda) + len(env.pypi)} locked artefacts")
    conda_files = [_verified_conda(project, record, progress) for record in env.conda]
    wheels = [_verified_wheel(project, art, progress) for art in env.pypi]
    project.envs.mkdir(parents=True, exist_ok=True)
    for pattern in (f".{env.name}.tmp-*", f".{env.name}.old-*"):  # left by an interrupted run
        for stale in project.envs.glob(pattern):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = project.envs / f".{env.name}.tmp-{os.getpid()}"
    template = project.cache / "envs" / f"{env.name}-{digest[:20]}"
    # a cached build is used only for the same place: conda files have the prefix baked in
    from_cache = use_cache and _template_ready(template) and _template_final(template) == str(final)
    try:
        if from_cache:
            info(f"linking the environment from the cache ({template})")
            _link_tree(template, tmp)
            (tmp / TEMPLATE_MARKER).unlink()
        else:
            _build(env, kind, python, interpreter, conda_files, wheels, tmp, final, project, info)
            if use_cache:
                _save_template(tmp, template, final)
        (tmp / READY_MARKER).write_text(json.dumps({
            "environment": env.name, "kind": kind, "python": python, "platform": env.platform.subdir,
            "lock_digest": digest, "conda": [f"{r.name.normalized}-{r.version}-{r.build}" for r in env.conda],
            "pypi": [f"{a.name}=={a.version}" for a in env.pypi]}, indent=2, sort_keys=True) + "\n",
            encoding="utf-8")
        _swap_into_place(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    check = proc.run([str(final / "bin" / "python"), "-c", "import sys; print(sys.prefix)"], timeout=120)
    if check.returncode != 0 or Path(check.stdout.strip()).resolve() != final.resolve():
        if from_cache:  # e.g. the interpreter the cached venv points at is gone: drop it, build afresh
            shutil.rmtree(template, ignore_errors=True)
            return install_environment(project, env.name, force=True, use_cache=use_cache, info=info,
                                       progress=progress)
        raise BuildFailed(f"the environment at {final} does not run after the move ({check.stderr.strip()[:200]})",
                          fix=f"run `python -m resolver install --env {env.name} --force`")
    return InstallSummary(env.name, final, kind, python, env.platform.subdir, len(env.conda), len(env.pypi),
                          "installed", time.monotonic() - started, digest, "cache" if from_cache else "lock")


TEMPLATE_MARKER = ".resolver-template.json"


def _build(env: LockedEnv, kind: str, python: str, interpreter: str | None, conda_files: list[Path],
           wheels: list[Path], tmp: Path, final: Path, project: ProjectPaths, info: Info) -> None:
    seed: list[Path] = []
    if kind == "venv":
        info(f"creating a virtual environment of Python {python}")
        seed = _venv(interpreter, tmp, locked_pip=any(a.name == "pip" for a in env.pypi))
    else:
        tmp.mkdir(parents=True)
    if env.conda:
        info(f"linking {len(env.conda)} conda packages")
        _link_conda(project, env, conda_files, tmp, final)
    if wheels or seed:
        info(f"installing {len(wheels)} wheels with pip --no-deps")
        _run([*_pip_for(tmp / "bin" / "python"), "install", "--no-deps", "--no-index", "--no-compile",
              "--disable-pip-version-check", "--no-warn-script-location", "--quiet",
              *[str(w) for w in [*seed, *wheels]]], "installing the locked wheels")
        # Byte-compile on every core (pip compiles one file at a time). Without .pyc files, machines that set
        # PYTHONDONTWRITEBYTECODE recompile torch + transformers at every start (11 s instead of 4.5 s).
        # They stay valid after the rename: the loader checks mtime/size and rewrites co_filename.
        # Best effort, as pip's own compile step: a file written for a newer Python fails and is skipped.
        info("byte-compiling")
        proc.run([str(tmp / "bin" / "python"), "-m", "compileall", "-q", "-j", "0", *_site_packages(tmp)],
                 timeout=1800)
    _retarget(tmp, final)


def _site_packages(prefix: Path) -> list[str]:
    return [str(p) for p in sorted(prefix.glob("lib/python3*/site-packages")) + sorted(prefix.glob("Lib/site-packages"))]


def _venv(interpreter: str, tmp: Path, *, locked_pip: bool) -> list[Path]:
    """Create the venv; returns the pip wheel to seed it with (ensurepip's bundled one), if any.

    ``venv --without-pip`` plus pip's wheel installed with the other wheels is several seconds
    faster than ``venv`` running ensurepip; interpreters without the bundled wheel use ensurepip.
    """
    bundled = None if locked_pip else _bundled_pip(interpreter)
    if bundled is None and not locked_pip:
        _run([interpreter, "-m", "venv", str(tmp)], "creating the virtual environment")
        return []
    _run([interpreter, "-m", "venv", "--without-pip", str(tmp)], "creating the virtual environment")
    return [bundled] if bundled else []


def _bundled_pip(interpreter: str) -> Path | None:
    done = proc.run([interpreter, "-c", "import ensurepip, os; print(os.path.dirname(ensurepip.__file__))"], timeout=120)
    if done.returncode != 0:
        return None
    found = sorted(Path(done.stdout.strip(), "_bundled").glob("pip-*.whl"))
    return found[-1] if found else None


def _pip_for(python: Path) -> list[str]:
    """pip acting on ``python``'s environment: this interpreter's pip via ``--python`` when it has one
    (the environment may have no pip yet), else the environment's own."""
    import importlib.util

    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip", "--python", str(python)]
    return [str(python), "-m", "pip"]


def _template_ready(template: Path) -> bool:
    return (template / TEMPLATE_MARKER).is_file()


def _template_final(template: Path) -> str | None:
    try:
        return json.loads((template / TEMPLATE_MARKER).read_text(encoding="utf-8")).get("final")
    except (OSError, ValueError):
        return None


def _save_template(tmp: Path, template: Path, final: Path) -> None:
    """Keep a hard-linked copy of a freshly built environment: the next install of the same lock
    content links it instead of running pip again (files are shared like conda's package cache;
    every write we make replaces a file rather than editing it in place)."""
    for stale in template.parent.glob(f".{template.name}.part-*"):
        shutil.rmtree(stale, ignore_errors=True)
    part = template.with_name(f".{template.name}.part-{os.getpid()}")
    try:
        _link_tree(tmp, part)
        (part / TEMPLATE_MARKER).write_text(json.dumps({"final": str(final)}) + "\n", encoding="utf-8")
        shutil.rmtree(template, ignore_errors=True)
        part.rename(template)
    except OSError:  # a cache is an optimisation: never fail the install for it
        shutil.rmtree(part, ignore_errors=True)


def _link_tree(source: Path, target: Path) -> None:
    """Recreate ``source`` at ``target`` with hard links (symlinks copied as symlinks)."""
    for folder, dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in dirs + files:
            src = Path(folder) / name
            if src.is_symlink():
                os.symlink(os.readlink(src), target / rel / name)
        for name in files:
            src = Path(folder) / name
            if not src.is_symlink():
                try:
                    os.link(src, target / rel / name)
                except OSError:
                    shutil.copy2(src, target / rel / name)


def _verify(path: Path, expected: str, what: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise IntegrityError(f"{path.name} does not match pixi.lock (sha256 {actual[:12]}… instead of "
                             f"{expected[:12]}…, file {path})",
                             fix="restore the original file (or delete it from the cache) and install again; "
                                 "if the source really changed, relock with `python -m resolver lock`")


def _verified_conda(project: ProjectPaths, record: Any, progress: Progress | None = None) -> Path:
    path = fetch(record.url, project.cache / "conda", record.sha256.hex() if record.sha256 else None, progress)
    if record.sha256:
        _verify(path, record.sha256.hex(), "conda package")
    else:
        actual = hashlib.md5(path.read_bytes()).hexdigest()
        if record.md5 and actual != record.md5.hex():
            raise IntegrityError(f"{path.name} does not match pixi.lock (md5 differs, file {path})",
                                 fix="restore the original file and install again")
    return path


def _verified_wheel(project: ProjectPaths, art: PypiArtifact, progress: Progress | None = None) -> Path:
    if not art.sha256:
        raise IntegrityError(f"pixi.lock records no sha256 for {art.file_name}",
                             fix="relock with `python -m resolver lock` (it records one for every wheel)")
    path = fetch(art.location, project.cache / "pypi", art.sha256, progress)
    _verify(path, art.sha256, "wheel")
    return path


def _link_conda(project: ProjectPaths, env: LockedEnv, files: list[Path], prefix: Path, final: Path) -> None:
    conda.link(conda.records_for_files(list(env.conda), files), prefix, platform=env.platform.subdir,
               cache_dir=project.cache / "rattler", final=final, what=f"the conda packages of '{env.name}'")


def _run(cmd: list[str], what: str) -> None:
    proc.run_checked(cmd, timeout=3600, what=what, env=dict(os.environ, PIP_NO_INPUT="1"),
                     fix="read the message above; run install again to retry")


def _retarget(tmp: Path, final: Path, *, old: Path | None = None) -> None:
    """Write the final path wherever the build path (``old``, default ``tmp``) was baked in
    (scripts, activate, pyvenv.cfg). Files are replaced, never edited in place (they may be hard links)."""
    old_bytes, new = str(old or tmp).encode(), str(final).encode()
    if old_bytes == new:
        return
    candidates = [tmp / "pyvenv.cfg"]
    bin_dir = tmp / "bin"
    if bin_dir.is_dir():
        candidates += [p for p in bin_dir.iterdir() if p.is_file() and not p.is_symlink()]
    for path in candidates:
        if not path.is_file():
            continue
        data = path.read_bytes()
        if old_bytes not in data or b"\0" in data[:4096]:
            continue
        mode = path.stat().st_mode
        fresh = path.with_name(f".{path.name}.retarget")
        fresh.write_bytes(data.replace(old_bytes, new))
        os.chmod(fresh, mode)
        fresh.replace(path)


def _swap_into_place(tmp: Path, final: Path) -> None:
    old = None
    if final.exists() or final.is_symlink():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        final.rename(old)
    tmp.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
