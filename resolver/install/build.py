"""Building one environment in its temporary folder: the conda prefix (or the fallback virtual
environment), the locked conda packages linked, the locked wheels installed, bytecode, final paths."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Callable

from resolver.core.errors import BadInput, BuildFailed
from resolver.core.fs import TREE_MARK, is_marked_tree, make_folder, read_bytes_bounded, remove_tree, write_atomic
from resolver.core.fs import rename as fs_rename
from resolver.install.environment import READY_MARKER
from resolver.lock.lockfile import LockedEnv
from resolver.project.paths import ProjectPaths
from resolver.tools import conda, proc, uv

Info = Callable[[str], None]


def build_environment(env: LockedEnv, kind: str, python: str, interpreter: str | None, conda_files: list[Path],
                      wheels: list[Path], tmp: Path, final: Path, project: ProjectPaths, info: Info,
                      bytecode: bool = False, progress: Callable[..., None] | None = None) -> None:
    """Build the environment in ``tmp`` for its place ``final``. A fallback virtual environment gets the
    pip its Python seeds, as ``python -m venv`` would (the ready marker says so: it is not in the lock)."""
    if kind == "venv":
        info(f"creating a virtual environment of Python {python}")
        # --prompt: its activate script names the environment, not the temporary folder it is built in
        _run([interpreter, "-m", "venv", "--without-pip", "--prompt", env.name, str(tmp)],
             "creating the virtual environment")
        pip = bundled_pip(interpreter) if not any(w.name.startswith("pip-") for w in wheels) else None
        seeded = 0
        if pip is not None:  # what `python -m venv` seeds, installed with the wheels (ensurepip alone takes 4-16 s)
            wheels, seeded = [*wheels, pip], 1
    else:
        seeded = 0
        make_folder(tmp)
    if env.conda:
        info(f"linking {len(env.conda)} conda packages")
        _link_conda(project, env, conda_files, tmp, final)
        write_activate(tmp, final, env.name)
    if wheels:
        import time

        from resolver.install.progress import wheels_heartbeat
        from resolver.project.timings import Timings
        from resolver.tools.package_check import check_wheel

        for wheel in wheels:  # bounded before the installer extracts anything
            check_wheel(wheel)
        info(f"installing {len(wheels) - seeded} locked wheels" + (" and the pip its Python bundles" if seeded else "")
             + " with uv" + (", byte-compiling them" if bytecode else ""))
        timings, key = Timings(project.timings), f"install {env.name} wheels bytecode={bytecode}"
        started = time.monotonic()
        with wheels_heartbeat(progress, tmp, wheels, bytecode=bytecode, expected_s=timings.expected(key),
                              uv_cache=uv.cache_dir() if progress is not None else None):
            done = uv.install_wheels(tmp / "bin" / "python", wheels, compile_bytecode=bytecode)
        if done.ok:
            timings.record(key, time.monotonic() - started)
        if not done.ok:
            raise BuildFailed(f"installing the locked wheels failed ({done.tail()})",
                              fix="read the message above; run install again to retry")
    _retarget(tmp, final)


def bundled_pip(interpreter: str) -> Path | None:
    """The pip wheel ``interpreter``'s ensurepip carries (what ``python -m venv`` installs), or None
    (a Python built without ensurepip, as some distributions ship it)."""
    done = proc.run([interpreter, "-c", "import ensurepip, os; print(os.path.dirname(ensurepip.__file__))"],
                    timeout=60)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    found = sorted(Path(done.stdout.strip(), "_bundled").glob("pip-*-py3-none-any.whl"))
    return found[-1] if found else None


ACTIVATE = """\
# The environment {name} (a conda prefix made by mamba-resolver from pixi.lock), for shells without pixi:
#   source {shown}/bin/activate      and to leave it:   deactivate
# It does what `pixi shell -e {name}` does: the prefix first on PATH, its activation scripts run.
if [ -n "${{_RESOLVER_OLD_PATH+set}}" ]; then deactivate; fi
_RESOLVER_OLD_PATH="$PATH"
_RESOLVER_OLD_PS1="${{PS1-}}"
_RESOLVER_OLD_CONDA_PREFIX="${{CONDA_PREFIX-}}"
export CONDA_PREFIX={prefix}
export CONDA_DEFAULT_ENV="{name}"
export PATH="$CONDA_PREFIX/bin:$PATH"
for _resolver_script in "$CONDA_PREFIX"/etc/conda/activate.d/*.sh; do
    if [ -e "$_resolver_script" ]; then . "$_resolver_script"; fi
done
unset _resolver_script
if [ -z "${{VIRTUAL_ENV_DISABLE_PROMPT-}}" ]; then PS1="({name}) ${{PS1-}}"; fi
deactivate () {{
    for _resolver_script in "$CONDA_PREFIX"/etc/conda/deactivate.d/*.sh; do
        if [ -e "$_resolver_script" ]; then . "$_resolver_script"; fi
    done
    unset _resolver_script
    PATH="$_RESOLVER_OLD_PATH"; export PATH
    PS1="$_RESOLVER_OLD_PS1"
    if [ -n "$_RESOLVER_OLD_CONDA_PREFIX" ]; then CONDA_PREFIX="$_RESOLVER_OLD_CONDA_PREFIX"; export CONDA_PREFIX
    else unset CONDA_PREFIX; fi
    unset CONDA_DEFAULT_ENV _RESOLVER_OLD_PATH _RESOLVER_OLD_PS1 _RESOLVER_OLD_CONDA_PREFIX
    unset -f deactivate
    hash -r 2>/dev/null || true
}}
hash -r 2>/dev/null || true
"""


def write_activate(prefix: Path, final: Path, name: str) -> None:
    """``bin/activate`` for a conda prefix (sh, bash, zsh), unless a package brought one (conda's own):
    one way to enter every environment, ``source <env>/bin/activate``, with the prompt naming it."""
    script = prefix / "bin" / "activate"
    if script.exists() or script.is_symlink():
        return
    import shlex

    from resolver.core.fs import write_text_atomic
    from resolver.core.names import printable

    write_text_atomic(script, ACTIVATE.format(name=name, prefix=shlex.quote(str(final)), shown=printable(str(final))),
                      label="activate")


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
        data = read_bytes_bounded(path, limit=64 << 20, what="the script")
        if old_bytes not in data or b"\0" in data[:4096]:
            continue
        write_atomic(path, data.replace(old_bytes, new), mode=path.stat().st_mode & 0o7777, label="retarget")


# what only an environment holds: the resolver's marks, or the installers' own records (conda-meta, pyvenv.cfg)
ENV_MARKS = (TREE_MARK, READY_MARKER, "conda-meta", "pyvenv.cfg")


def swap_into_place(tmp: Path, final: Path) -> None:
    """Put the environment built at ``tmp`` in place of ``final``: the old one is renamed aside, then removed,
    only when the resolver made it (its ready marker or the resolver's mark) and reached without a link. An
    environment folder that is a link the user made (an environment kept elsewhere) is never replaced."""
    if final.is_symlink():
        raise BadInput(f"the environment {final} is a symbolic link (to {os.readlink(final)}); install does not "
                       "replace an environment through a link",
                       fix=f"remove the link {final} (what it points to stays), then run install again")
    old = None
    if final.exists():
        if not is_marked_tree(final, marks=ENV_MARKS):
            raise BadInput(f"{final} is not an environment the resolver made; install does not replace it",
                           fix=f"move {final} aside, then run install again")
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        fs_rename(final, old)
    fs_rename(tmp, final)
    if old is not None:
        with contextlib.suppress(OSError, BadInput):
            remove_tree(old, made_by_us=True, marks=ENV_MARKS)
