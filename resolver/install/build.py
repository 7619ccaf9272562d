"""Building one environment in its temporary folder: the conda prefix (or the fallback virtual
environment), the locked conda packages linked, the locked wheels installed, bytecode, final paths."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Callable

from resolver import conda, proc
from resolver.lock.lockfile import LockedEnv
from resolver.paths import ProjectPaths

Info = Callable[[str], None]


def build_environment(env: LockedEnv, kind: str, python: str, interpreter: str | None, conda_files: list[Path],
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


def swap_into_place(tmp: Path, final: Path) -> None:
    old = None
    if final.exists() or final.is_symlink():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        final.rename(old)
    tmp.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
