"""Building one environment in its temporary folder: the conda prefix (or the fallback virtual
environment), the locked conda packages linked, the locked wheels installed, bytecode, final paths."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

from resolver import conda, proc, uv
from resolver.errors import BuildFailed
from resolver.lock.lockfile import LockedEnv
from resolver.paths import ProjectPaths

Info = Callable[[str], None]


def build_environment(env: LockedEnv, kind: str, python: str, interpreter: str | None, conda_files: list[Path],
                      wheels: list[Path], tmp: Path, final: Path, project: ProjectPaths, info: Info,
                      bytecode: bool = False) -> None:
    if kind == "venv":
        info(f"creating a virtual environment of Python {python}")
        _run([interpreter, "-m", "venv", "--without-pip", str(tmp)], "creating the virtual environment")
    else:
        tmp.mkdir(parents=True)
    if env.conda:
        info(f"linking {len(env.conda)} conda packages")
        _link_conda(project, env, conda_files, tmp, final)
    if wheels:
        info(f"installing {len(wheels)} wheels with uv" + (" and byte-compiling them" if bytecode else ""))
        done = uv.install_wheels(tmp / "bin" / "python", wheels, compile_bytecode=bytecode)
        if not done.ok:
            raise BuildFailed(f"installing the locked wheels failed ({done.tail()})",
                              fix="read the message above; run install again to retry")
    _retarget(tmp, final)


def bytecode_ahead(choice: str = "auto", environ: dict[str, str] | None = None) -> tuple[bool, str]:
    """Whether install compiles every module to bytecode, and why (docs/lock-install.md, "Byte-compiling").

    Measured here on the CPU environment (torch 2.13 + transformers; importing them and running a tiny
    Mamba model): compiling all of site-packages with uv costs 11-16 s at install; the run then takes
    4.2 s. Without it the first run takes 9.2 s and writes the bytecode of what it imported, so later
    runs take ~4.5 s, unless PYTHONDONTWRITEBYTECODE is set (common in container images): then every run
    takes 9.2 s. So ``auto`` compiles ahead exactly when Python would not keep what it compiles.
    """
    import os

    if choice in ("all", "none"):
        return choice == "all", f"--bytecode {choice}"
    environ = os.environ if environ is None else environ
    if environ.get("PYTHONDONTWRITEBYTECODE"):
        return True, "PYTHONDONTWRITEBYTECODE is set: Python would recompile at every start (9 s instead of 4 s)"
    return False, "Python writes the bytecode of what the first run imports (once, ~5 s) instead of all of it now (11-16 s)"


def find_interpreter(python: str) -> str | None:
    """An interpreter of this host for Python ``X.Y`` (a fallback environment's): the running one, else
    ``pythonX.Y`` on PATH."""
    import sys

    if f"{sys.version_info.major}.{sys.version_info.minor}" == python:
        return sys.executable
    return shutil.which(f"python{python}")


def _link_conda(project: ProjectPaths, env: LockedEnv, files: list[Path], prefix: Path, final: Path) -> None:
    conda.link(conda.records_for_files(list(env.conda), files), prefix, platform=env.platform.subdir,
               cache_dir=project.package_cache, final=final, what=f"the conda packages of '{env.name}'")


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
