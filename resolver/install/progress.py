"""What an install shows while uv works: wheels installed of the total and their bytes of the total
bytes, then the modules byte-compiled of the total, with an estimate from the last install of the
same environment.

uv says nothing until it is done (90 s for a CPU torch environment on a loaded machine here, most of
it byte-compiling; minutes for a CUDA one), so progress is read from the environment being built: a
wheel counts as installed once its ``*.dist-info`` folder is there (uv writes it last for each wheel),
a module as compiled once its ``__pycache__/<module>.*.pyc`` is.

>>> wheel_key("typing_extensions-4.12.2-py3-none-any.whl"), wheel_key("torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl")
(('typing-extensions', '4.12.2'), ('torch', '2.13.0+cpu'))
>>> dist_info_key("Typing_Extensions-4.12.2.dist-info")
('typing-extensions', '4.12.2')
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import Callable
from urllib.parse import unquote

from resolver.core.names import canonical_name
from resolver.core.ui import Heartbeat, size_text


def wheel_key(file_name: str) -> tuple[str, str]:
    """(canonical name, version) of a wheel file."""
    name, version = unquote(file_name).split("-")[:2]
    return canonical_name(name), version


def dist_info_key(folder: str) -> tuple[str, str]:
    name, _, version = folder[:-len(".dist-info")].rpartition("-")
    return canonical_name(name), version


def _site_packages(prefix: Path) -> list[Path]:
    return [p for p in prefix.glob("lib/python3*/site-packages") if p.is_dir()]


def installed_keys(prefix: Path) -> set[tuple[str, str]]:
    found = set()
    for site in _site_packages(prefix):
        with os.scandir(site) as entries:
            found.update(dist_info_key(e.name) for e in entries if e.name.endswith(".dist-info"))
    return found


class ModuleCount:
    """The modules of a site-packages and how many of them have bytecode: the folders holding ``.py``
    files are found once, then each count lists only their ``__pycache__``."""

    def __init__(self, prefix: Path) -> None:
        self.folders: dict[str, int] = {}  # folder -> .py files in it
        for site in _site_packages(prefix):
            for folder, _, files in os.walk(site):
                count = sum(1 for f in files if f.endswith(".py"))
                if count:
                    self.folders[folder] = count
        self.total = sum(self.folders.values())

    def compiled(self) -> int:
        done = 0
        for folder, count in self.folders.items():
            try:
                names = os.listdir(os.path.join(folder, "__pycache__"))
            except OSError:
                continue
            done += min(count, len({n.split(".", 1)[0] for n in names if n.endswith(".pyc")}))
        return done


class Unpacked:
    """The wheels uv has unpacked into its cache since it started: each lands as one new folder of
    ``archive-v0`` (a wheel unpacked earlier is linked from the cache without one)."""

    def __init__(self, cache: Path | None) -> None:
        self.folder = cache / "archive-v0" if cache is not None else None
        self.before = self._entries()

    def _entries(self) -> set[str]:
        if self.folder is None:
            return set()
        try:
            return set(os.listdir(self.folder))
        except OSError:
            return set()

    def count(self) -> int:
        return len(self._entries() - self.before)


def wheels_heartbeat(progress: Callable[..., None] | None, prefix: Path, wheels: list[Path], *, bytecode: bool,
                     expected_s: float | None, uv_cache: Path | None = None):
    """A :class:`resolver.core.ui.Heartbeat` over ``uv pip install`` of ``wheels`` into ``prefix``: first the
    wheels uv unpacks into its cache (those it has not unpacked before), then the wheels installed of the
    total with their bytes, then the modules byte-compiled of the total."""
    if progress is None or not wheels:
        return nullcontext()
    sizes = {}
    for wheel in wheels:
        try:
            sizes[wheel_key(wheel.name)] = wheel.stat().st_size
        except (OSError, ValueError):
            continue
    total = sum(sizes.values()) or None
    modules: list[ModuleCount] = []
    unpacked = Unpacked(uv_cache)

    def poll() -> tuple:
        present = installed_keys(prefix) & sizes.keys()
        wheels_done = f"{len(present)}/{len(sizes)} wheels"
        if not present:
            new = unpacked.count()
            return 0, None, (f"uv unpacks {len(sizes)} wheels ({size_text(total or 0)}) into its cache first, "
                             f"{new} unpacked so far"), "", "unpack"
        if not (bytecode and len(present) == len(sizes)):
            return sum(sizes[k] for k in present), total, wheels_done, "bytes", "install"
        if not modules:  # every wheel is in: uv byte-compiles now
            modules.append(ModuleCount(prefix))
        return modules[0].compiled(), modules[0].total, f"{wheels_done} in, byte-compiling the modules", "", "compile"

    return Heartbeat(progress, "installing", poll, unit="bytes", expected_s=expected_s,
                     expected_from="the last install")
