"""py-rattler, safely: one import point, the target machine's virtual packages, and a coroutine runner.

py-rattler 0.28 can abort at interpreter exit after a solve/index/install (a tokio worker thread
touching Python while it finalises; ../shared/notes/py-rattler.md §0.1). :func:`rattler` imports it
and registers a short sleep at exit, the workaround measured to remove the crash, so in-process
callers (tests, benchmarks, other tools) are safe too; the CLI additionally leaves via ``os._exit``.

>>> [str(v) for v in target_virtual_packages("linux-64", glibc="2.35", cuda="12.8")]  # doctest: +SKIP
['__unix=0=0', '__linux=4.18=0', '__glibc=2.35=0', '__archspec=1=x86_64', '__cuda=12.8=0']
"""

from __future__ import annotations

import asyncio
import atexit
import sys
import time
from typing import Any, Coroutine

from resolver.platforms import PLATFORMS

DEFAULT_LINUX = "4.18"  # pixi's default __linux for a bare linux platform
DEFAULT_GLIBC = "2.28"  # pixi's default __glibc (docs/workspace/system_requirements.md)
DEFAULT_OSX = "11.0"


def rattler() -> Any:
    """Import py-rattler once per process, with the exit-crash workaround registered."""
    already = "rattler" in sys.modules
    import rattler as module

    if not already or not getattr(module, "_resolver_exit_guard", False):
        atexit.register(time.sleep, 0.2)
        module._resolver_exit_guard = True
    return module


def run(coro: Coroutine) -> Any:
    """Run one py-rattler coroutine to completion from synchronous code."""
    return asyncio.run(coro)


def virtual_package_strings(platform: str, *, glibc: str | None = None, cuda: str | None = None,
                            linux: str | None = None) -> list[str]:
    """The target machine's virtual packages as ``name=version=build`` strings (what pixi.lock records).

    >>> virtual_package_strings("linux-64", glibc="2.35", cuda="12.8")
    ['__archspec=1=x86_64', '__cuda=12.8=0', '__glibc=2.35=0', '__linux=4.18=0', '__unix=0=0']
    >>> virtual_package_strings("osx-arm64")
    ['__archspec=1=m1', '__osx=11.0=0', '__unix=0=0']
    """
    out = [f"__archspec=1={PLATFORMS[platform].archspec}"]
    if platform.startswith("linux"):
        out += [f"__glibc={glibc or DEFAULT_GLIBC}=0", f"__linux={linux or DEFAULT_LINUX}=0", "__unix=0=0"]
        if cuda:
            out.append(f"__cuda={cuda}=0")
    elif platform.startswith("osx"):
        out += [f"__osx={DEFAULT_OSX}=0", "__unix=0=0"]
    elif platform.startswith("win"):
        out.append("__win=0=0")
    return sorted(out)


def target_virtual_packages(strings: list[str]) -> list[Any]:
    """``GenericVirtualPackage`` objects for :func:`virtual_package_strings` output (imports rattler)."""
    r = rattler()
    from rattler.package import BuildString

    result = []
    for text in strings:
        name, version, build = (text.split("=") + ["0", "0"])[:3]
        result.append(r.GenericVirtualPackage(r.PackageName(name), r.Version(version), BuildString(build)))
    return result
