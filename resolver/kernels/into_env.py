"""A built kernel package into its environment: linked from the channel, its modules imported once,
and that check remembered while neither the package nor the environment changes."""

from __future__ import annotations

from pathlib import Path

from resolver.core.errors import BuildFailed
from resolver.core.fingerprint import Memo, fingerprint
from resolver.core.records import ListOf, Text
from resolver.kernels.packages import KernelRecipe
from resolver.project.paths import ProjectPaths

_IMPORTS = ListOf(Text(r"[A-Za-z_][A-Za-z0-9_.]*", 256), 256)


def _inputs(env, package_file: Path) -> str | None:
    """What an import check holds for: the package file's name, the environment's interpreter and torch
    (:func:`~resolver.kernels.envfacts.env_fingerprint`), and the package's install record (relinked:
    checked again). None when the package is not installed there."""
    from resolver.kernels.envfacts import env_fingerprint

    record = env.path / "conda-meta" / (package_file.name[:-len(".conda")] + ".json")
    if not record.is_file():
        return None
    return fingerprint(package_file.name, env_fingerprint(env), record.stat().st_mtime_ns)


def verified(stamp: Path, env, package_file: Path) -> tuple[str, ...] | None:
    """The modules checked earlier, when this exact package is still installed in this unchanged env
    (``stamp``: :meth:`~resolver.project.paths.ProjectPaths.kernel_import_record`, a
    :class:`~resolver.core.fingerprint.Memo` read as untrusted data)."""
    inputs = _inputs(env, package_file)
    imports = None if inputs is None else Memo(stamp, _IMPORTS).recall(inputs)
    return None if imports is None else tuple(imports)


def write_verified(stamp: Path, env, package_file: Path, imports: tuple[str, ...]) -> None:
    inputs = _inputs(env, package_file)
    if inputs is not None:
        Memo(stamp, _IMPORTS, label="kernel-import").keep(inputs, list(imports))


def add_to_environment(project: ProjectPaths, env, package_file: Path) -> None:
    """Link ``package_file`` (in a channel folder: this project's, where built and fetched packages go) into
    the environment, once it is checked: the project's channel is a folder others may write."""
    from resolver.tools.channel_index import channel_record
    from resolver.tools.conda import add_package
    from resolver.tools.package_check import check_package

    check_package(package_file, record=channel_record(package_file), subdir=package_file.parent.name)
    add_package(env.path, package_file, cache_dir=project.package_cache)


def check_imports(env, package: KernelRecipe) -> tuple[str, ...]:
    if not package.imports:
        return ()
    code = "import importlib, sys\ntry:\n    import torch\nexcept ImportError:\n    pass\n" + "".join(
        f"importlib.import_module({name!r})\n" for name in package.imports)
    done = env.run_python(["-c", code], timeout=300)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BuildFailed(f"{package.name} installed but `import {', '.join(package.imports)}` fails in '{env.name}': {tail[:240]}",
                          fix="rebuild against this environment's torch (`python -m resolver build --env "
                              f"{env.name}`); if it persists run `python -m resolver doctor`")
    return package.imports
