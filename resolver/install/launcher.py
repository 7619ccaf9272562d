"""``bin/mamba-resolver`` in every environment install makes: the resolver that installed it, run by its
own Python, for the environment's project.

An environment holds the user's packages, not the resolver's (py-rattler, uv, ...): inside it, once
entered (``source <env>/bin/activate``, ``pixi shell``), ``python`` is the environment's and cannot run
the resolver. The launcher, on PATH there through the environment's ``bin``, runs the interpreter that
installed the environment instead, with the resolver's package found first, and names the project
(``RESOLVER_ENV_PROJECT``): ``mamba-resolver doctor`` works from any folder. A pixi.toml at or above the
working folder still comes first, and ``RESOLVER_PROJECT`` before both
(:meth:`resolver.project.paths.ProjectPaths.discover`).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from resolver.core.errors import ResolverError
from resolver.core.fs import make_folder, read_bytes_bounded, write_atomic

NAME = "mamba-resolver"
PROJECT_VARIABLE = "RESOLVER_ENV_PROJECT"

_TEMPLATE = """\
#!/bin/sh
# {name}: the resolver that installed this environment, run by its own Python, for its project
# {shown_project}. A pixi.toml at or above the working folder comes first (RESOLVER_PROJECT before both).
if [ ! -x {python} ]; then
    echo "error: the Python that installed this environment ({shown_python}) is gone. Fix: run the resolver \
from its own environment ('python -m resolver install --force' writes this launcher again)" >&2
    exit 3
fi
{variable}=${{{variable}:-{project}}}
export {variable}
exec {python} -c {code} "$@"
"""


def launcher_text(project: Path, python: str | None = None, package_parent: Path | None = None) -> str:
    """The launcher's text: ``python`` (default: this process's interpreter) runs the resolver's
    package found under ``package_parent`` (default: where this one was imported from) for ``project``."""
    from resolver.core.names import printable

    python = python or sys.executable
    parent = package_parent or Path(__file__).resolve().parents[2]
    code = f"import sys; sys.path.insert(0, {str(parent)!r}); from resolver.cli import entry; entry()"
    return _TEMPLATE.format(name=NAME, python=shlex.quote(python), project=shlex.quote(str(project)),
                            shown_project=printable(str(project)), shown_python=printable(python).replace('"', "'"),
                            variable=PROJECT_VARIABLE, code=shlex.quote(code))


def write_launcher(prefix: Path, project: Path) -> Path | None:
    """Write ``bin/mamba-resolver`` into the environment at ``prefix`` (being built, or in place) unless it
    already says the same; None where environments have no POSIX shell (Windows)."""
    if os.name != "posix":
        return None
    path = prefix / "bin" / NAME
    text = launcher_text(project)
    try:
        if read_bytes_bounded(path, limit=64 << 10, what="the launcher", follow_symlinks=False) == text.encode("utf-8"):
            return path
    except (OSError, ResolverError):
        pass  # missing, or not a regular file of ours: written anew below
    make_folder(path.parent)
    write_atomic(path, text.encode("utf-8"), mode=0o755, label="launcher")  # replaced, never edited in place
    return path
