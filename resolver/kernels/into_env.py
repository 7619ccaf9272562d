"""A built kernel package into its environment: linked from the channel, its modules imported once,
and that check remembered while neither the package nor the environment changes."""

from __future__ import annotations

from pathlib import Path

from resolver.core.errors import BuildFailed
from resolver.core.records import SHA256, Fields, Integer, ListOf, Text, read_record, write_record
from resolver.kernels.packages import KernelRecipe
from resolver.project.paths import ProjectPaths

_RECORD = Fields({"package": Text(r"[^/\\\s]+\.conda", 512), "env": SHA256, "record_mtime": Integer(),
                  "imports": ListOf(Text(r"[A-Za-z_][A-Za-z0-9_.]*", 256), 256)})


def verified(stamp: Path, env, package_file: Path) -> tuple[str, ...] | None:
    """The modules checked earlier, when this exact package is still installed in this unchanged env
    (``stamp``: :meth:`~resolver.project.paths.ProjectPaths.kernel_import_record`, read as untrusted data)."""

    from resolver.kernels.envfacts import fingerprint

    record = env.path / "conda-meta" / (package_file.name[:-len(".conda")] + ".json")
    if not record.is_file():
        return None
    data = read_record(stamp, _RECORD)
    if data is None or data["package"] != package_file.name or data["env"] != fingerprint(env) \
            or data["record_mtime"] != record.stat().st_mtime_ns:
        return None
    return tuple(data["imports"])


def write_verified(stamp: Path, env, package_file: Path, imports: tuple[str, ...]) -> None:

    from resolver.kernels.envfacts import fingerprint

    record = env.path / "conda-meta" / (package_file.name[:-len(".conda")] + ".json")
    if record.is_file():
        write_record(stamp, {"package": package_file.name, "env": fingerprint(env),
                             "record_mtime": record.stat().st_mtime_ns, "imports": list(imports)}, label="kernel-import")


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
