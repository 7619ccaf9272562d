"""uv, the PyPI engine (the one pixi itself uses), in one place: its binary, the sources as its flags,
resolving to hashed pins, installing locked wheels.

uv comes with the resolver (the ``uv`` wheel on PyPI carries its binary). It is always run with
``--no-config`` (a uv.toml of the user's does not change a team's lock) and given every source
explicitly: the lock's indexes and wheelhouses, then pip's own configuration
(:mod:`resolver.lock.pipconfig`), since uv does not read pip.conf. ``--index-strategy
unsafe-best-match`` makes uv choose across indexes as pip does.

>>> source_flags(index_url=None, extra_index_urls=("file:///srv/idx",), find_links=("/w",), constraints=(),
...              no_index=False)
['--extra-index-url', 'file:///srv/idx', '--find-links', '/w', '--index-strategy', 'unsafe-best-match']
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from resolver.core.errors import EnvironmentProblem
from resolver.core.fs import read_text_bounded, remove_tree, write_text_atomic
from resolver.tools import proc

RESOLVE_TIMEOUT_S = 1800  # a cold resolve of torch's CUDA build fetches metadata of ~60 wheels
INSTALL_TIMEOUT_S = 3600


_FINDING = threading.Lock()  # uv's own finder reads sysconfig, whose first read is not thread-safe


def binary() -> str:
    """The uv executable: the one the ``uv`` package installed with the resolver, else uv on PATH."""
    with _FINDING:  # lock starts several resolves in threads
        return _find()


def _find() -> str:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise EnvironmentProblem("uv is not installed next to the resolver (it resolves and installs the PyPI part)",
                             fix="reinstall the resolver (`pip install -e .` installs uv), or put uv on PATH")


def source_flags(*, index_url: str | None, extra_index_urls: Sequence[str], find_links: Sequence[str],
                 constraints: Sequence[str], no_index: bool) -> list[str]:
    """Every source as uv flags, in pip's meaning (``--index-url`` replaces PyPI; extras add to it)."""
    flags: list[str] = []
    if no_index:
        flags.append("--no-index")
    elif index_url:
        flags += ["--index-url", index_url]
    if not no_index:
        for url in extra_index_urls:
            flags += ["--extra-index-url", url]
    for link in find_links:
        flags += ["--find-links", link]
    for constraint in constraints:
        flags += ["--constraint", constraint]
    return flags + ["--index-strategy", "unsafe-best-match"]


def environ() -> dict[str, str]:
    """The environment uv runs in: no UV_* setting of the user's changes what is resolved (the cache
    folder excepted), and pip's variables were already translated into flags."""
    keep = {"UV_CACHE_DIR"}
    return {k: v for k, v in os.environ.items() if not k.startswith("UV_") or k in keep} | {"UV_NO_PROGRESS": "1"}


def compile_pins(requirements_file: Path, output: Path, *, python: str, platform: str, flags: Sequence[str]) -> proc.Completed:
    """``uv pip compile`` for one Python and platform, wheels only: exact pins, the sha256 of each pin's
    fitting files, and the source of each (``# from <index>``)."""
    return proc.run([binary(), "pip", "compile", "--no-config", "--quiet", "--generate-hashes",
                     "--emit-index-annotation", "--no-annotate", "--no-header", "--python-version", python,
                     "--python-platform", platform, "--only-binary", ":all:", "--output-file", str(output), *flags,
                     str(requirements_file)], timeout=RESOLVE_TIMEOUT_S, env=environ())


def cache_dir() -> Path | None:
    """The folder uv keeps unpacked wheels in (``UV_CACHE_DIR``, else what ``uv cache dir`` says), for
    progress while uv unpacks; None when uv does not say."""
    if os.environ.get("UV_CACHE_DIR"):
        return Path(os.environ["UV_CACHE_DIR"])
    done = proc.run([binary(), "cache", "dir"], timeout=30, env=environ())
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def install_wheels(python: Path, wheels: Sequence[Path], *, compile_bytecode: bool) -> proc.Completed:
    """``uv pip install`` of exactly ``wheels`` into the environment of ``python``: no resolve, no index,
    hard-linked from uv's cache."""
    cmd = [binary(), "pip", "install", "--no-config", "--quiet", "--python", str(python), "--no-deps", "--no-index",
           "--link-mode", "hardlink"]
    if compile_bytecode:
        cmd.append("--compile-bytecode")
    return proc.run([*cmd, "--", *(str(w) for w in wheels)], timeout=INSTALL_TIMEOUT_S, env=environ())


def uninstall(python: Path, names: Sequence[str]) -> proc.Completed:
    """``uv pip uninstall`` of the distributions ``names`` from the environment of ``python``."""
    return proc.run([binary(), "pip", "uninstall", "--no-config", "--quiet", "--python", str(python), "--",
                     *names], timeout=INSTALL_TIMEOUT_S, env=environ())


@dataclass(frozen=True)
class UvCompile:
    """One ``uv pip compile``, with everything it is given."""

    requirements: tuple[str, ...]
    python: str
    platform: str  # uv's --python-platform
    flags: tuple[str, ...]  # the sources, as uv flags
    preferences: tuple[str, ...] = ()  # "name==version" uv keeps where it can (read from its output file)

    def run(self) -> tuple[proc.Completed, str | None]:
        """(what uv did, the pins it wrote or None), in a temporary folder removed afterwards."""
        folder = Path(tempfile.mkdtemp(prefix="resolver-uv-"))
        try:
            wanted, pinned = folder / "requirements.in", folder / "requirements.txt"
            write_text_atomic(wanted, "".join(f"{r}\n" for r in self.requirements), under=folder)
            if self.preferences:  # an output file there already: uv prefers its pins
                write_text_atomic(pinned, "".join(f"{p}\n" for p in self.preferences), under=folder)
            done = compile_pins(wanted, pinned, python=self.python, platform=self.platform, flags=self.flags)
            return done, (read_text_bounded(pinned, limit=64 << 20, what="uv's pins", under=folder)
                          if done.returncode == 0 and pinned.is_file() else None)
        finally:  # no uv (one sentence from binary()), a full disk, an interrupt: no folder left behind
            with contextlib.suppress(OSError):
                remove_tree(folder)
