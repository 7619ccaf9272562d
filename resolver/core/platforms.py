"""Conda platforms (subdirs): the one table of what each is called by uname, archspec and wheel tags.

>>> subdir_for("Linux", "x86_64"), subdir_for("Darwin", "arm64"), subdir_for("Windows", "AMD64")
('linux-64', 'osx-arm64', 'win-64')
>>> PLATFORMS["linux-aarch64"].wheel_machine, PLATFORMS["osx-arm64"].archspec
('aarch64', 'm1')
>>> wheel_platform_tags("linux-64", "2.28")[:2]
['manylinux_2_28_x86_64', 'manylinux_2_27_x86_64']
>>> uv_platform("linux-64", "2.30"), uv_platform("linux-aarch64", "2.35"), uv_platform("osx-arm64", None)
('x86_64-manylinux_2_28', 'aarch64-manylinux_2_35', 'aarch64-apple-darwin')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from resolver.core.versions import major_minor


@dataclass(frozen=True)
class Platform:
    subdir: str  # conda's name: linux-64
    os: str  # linux | osx | win (emscripten | wasi | zos: subdirs a pixi workspace may declare)
    uname: tuple[tuple[str, str], ...]  # (system, machine) spellings of os.uname() / platform, lowercased
    archspec: str  # the __archspec virtual package's build string
    wheel_machine: str  # the machine part of wheel platform tags: x86_64, aarch64, arm64, amd64


PLATFORMS: dict[str, Platform] = {p.subdir: p for p in (
    Platform("linux-64", "linux", (("linux", "x86_64"), ("linux", "amd64")), "x86_64", "x86_64"),
    Platform("linux-aarch64", "linux", (("linux", "aarch64"), ("linux", "arm64")), "aarch64", "aarch64"),
    Platform("linux-ppc64le", "linux", (("linux", "ppc64le"),), "ppc64le", "ppc64le"),
    Platform("osx-64", "osx", (("darwin", "x86_64"),), "x86_64", "x86_64"),
    Platform("osx-arm64", "osx", (("darwin", "arm64"),), "m1", "arm64"),
    Platform("win-64", "win", (("windows", "amd64"), ("windows", "x86_64"), ("win32", "amd64")), "x86_64", "amd64"),
    Platform("win-arm64", "win", (("windows", "arm64"),), "aarch64", "arm64"),
)}
KNOWN = tuple(PLATFORMS)  # the machines the resolver probes, plans and locks for
# What a workspace the resolver starts lists, so that a mixed team (Linux, Apple silicon, Windows) shares one
# CPU environment: pixi users expect an environment for every platform of the workspace. A new CPU environment
# is locked for each; one its channels or indexes cannot serve is left out, with a note.
TEAM_PLATFORMS = ("linux-64", "osx-arm64", "win-64")
# The other subdirs a pixi workspace may declare (pixi_manifest's TomlPlatform): the resolver keeps
# their locked environments and never locks them itself; archspec as rattler's Archspec::from_platform
# ("" where rattler names none).
PLATFORMS.update({p.subdir: p for p in (
    Platform("linux-32", "linux", (), "x86", "i686"),
    Platform("linux-armv6l", "linux", (), "aarch64", "armv6l"),
    Platform("linux-armv7l", "linux", (), "aarch64", "armv7l"),
    Platform("linux-ppc64", "linux", (), "ppc64", "ppc64"),
    Platform("linux-s390x", "linux", (), "s390x", "s390x"),
    Platform("linux-riscv32", "linux", (), "riscv32", "riscv32"),
    Platform("linux-riscv64", "linux", (), "riscv64", "riscv64"),
    Platform("win-32", "win", (), "x86", "win32"),
    Platform("emscripten-wasm32", "emscripten", (), "", "wasm32"),
    Platform("wasi-wasm32", "wasi", (), "", "wasm32"),
    Platform("zos-z", "zos", (), "", "s390x"),
)})


def subdir_for(system: str, machine: str) -> str | None:
    """The subdir for ``uname``'s system and machine (any case), or None when conda has none."""
    key = (system.lower(), machine.lower())
    return next((p.subdir for p in PLATFORMS.values() if key in p.uname), None)


def host_subdir() -> str:
    """This machine's subdir (``linux-64`` when conda has no name for it)."""
    import os
    import platform

    system, machine = (os.uname().sysname, os.uname().machine) if hasattr(os, "uname") else \
        (platform.system(), platform.machine())
    return subdir_for(system, machine) or "linux-64"


def wheel_platform_tags(subdir: str, glibc: str | None) -> list[str]:
    """Wheel platform tags a machine of ``subdir`` (and ``glibc``, default pixi's 2.28) accepts, best first."""
    platform = PLATFORMS[subdir]
    arch = platform.wheel_machine
    if platform.os == "linux":
        top = int((glibc or "2.28").split(".")[1])
        return [f"manylinux_2_{minor}_{arch}" for minor in range(top, 16, -1)] + [
            f"manylinux2014_{arch}", f"manylinux_2_12_{arch}", f"manylinux2010_{arch}", f"manylinux_2_5_{arch}",
            f"manylinux1_{arch}", f"linux_{arch}"]
    if platform.os == "osx":
        modern = [f"macosx_{major}_0_{kind}" for major in range(15, 10, -1) for kind in (arch, "universal2")]
        legacy = [f"macosx_10_{minor}_{kind}" for minor in range(15, 8, -1) for kind in ("x86_64", "universal2")]
        return modern + (legacy if arch == "x86_64" else [])
    return [f"win_{arch}"]


def wheel_rank(file_name: str, python: str, subdir: str, glibc: str | None) -> int | None:
    """How well a wheel fits Python ``X.Y`` on a ``subdir`` machine (lower is better, pip's and uv's
    preference: the most specific platform, then the most specific interpreter), or None when it does not.

    >>> wheel_rank("numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", "3.11", "linux-64", "2.28")
    0
    >>> wheel_rank("numpy-2.4.6-cp312-cp312-manylinux_2_28_x86_64.whl", "3.11", "linux-64", "2.28") is None
    True
    >>> wheel_rank("einops-0.8.2-py3-none-any.whl", "3.11", "osx-arm64", None) is not None
    True
    """
    parts = file_name[:-len(".whl")].split("-") if file_name.endswith(".whl") else []
    if len(parts) < 5:
        return None
    interpreters, abis, platforms = (p.split(".") for p in parts[-3:])
    ranked_interpreters, tag_rank = _wheel_ranking(python, subdir, glibc)
    interpreter_rank = next((i for i, (interp, abi) in enumerate(ranked_interpreters)
                             if interp in interpreters and abi in abis), None)
    platform_rank = min((tag_rank[tag] for tag in platforms if tag in tag_rank), default=None)
    if interpreter_rank is None or platform_rank is None:
        return None
    return platform_rank * 100 + interpreter_rank


@functools.lru_cache(maxsize=64)
def _wheel_ranking(python: str, subdir: str, glibc: str | None) -> tuple[tuple[tuple[str, str], ...], dict[str, int]]:
    """(interpreter and ABI tags best first, platform tag → rank) for :func:`wheel_rank`: a lock ranks
    hundreds of file names for the same target."""
    major, minor = (int(x) for x in major_minor(python).split("."))
    ranked_interpreters = ((f"cp{major}{minor}", f"cp{major}{minor}"), (f"cp{major}{minor}", "abi3"),
                           *((f"cp{major}{m}", "abi3") for m in range(minor - 1, 1, -1)),
                           (f"cp{major}{minor}", "none"), (f"py{major}{minor}", "none"), (f"py{major}", "none"))
    tags = wheel_platform_tags(subdir, glibc) + ["any"]
    return ranked_interpreters, {tag: rank for rank, tag in reversed(list(enumerate(tags)))}


# The glibc floors uv 0.13's --python-platform names (`uv pip compile --help`); others fall to the one below.
_UV_MANYLINUX = (17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40)
_UV_OTHERS = {"osx-64": "x86_64-apple-darwin", "osx-arm64": "aarch64-apple-darwin", "win-64": "x86_64-pc-windows-msvc",
              "win-arm64": "aarch64-pc-windows-msvc", "linux-ppc64le": "linux"}


def uv_platform(subdir: str, glibc: str | None) -> str:
    """uv's ``--python-platform`` for a machine of ``subdir`` with ``glibc`` (pixi's default 2.28)."""
    if subdir in _UV_OTHERS:
        return _UV_OTHERS[subdir]
    minor = int((glibc or "2.28").split(".")[1])
    chosen = max((m for m in _UV_MANYLINUX if m <= minor), default=17)
    return f"{PLATFORMS[subdir].wheel_machine}-manylinux_2_{chosen}"
