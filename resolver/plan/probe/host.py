"""The host around the GPUs: conda subdir, glibc, Python, WSL, container, CPUs, memory.

>>> conda_subdir("Linux", "x86_64"), conda_subdir("Darwin", "arm64"), conda_subdir("Windows", "AMD64")
('linux-64', 'osx-arm64', 'win-64')
>>> parse_ldd_version("ldd (Ubuntu GLIBC 2.35-0ubuntu3.6) 2.35\\nCopyright (C) 2022")
'2.35'
"""

from __future__ import annotations

import re

from resolver.core.platforms import subdir_for
from resolver.plan.probe.findings import Findings
from resolver.plan.probe.system import System

_CONTAINER_CGROUP = re.compile(r"docker|kubepods|containerd|libpod|lxc|/ecs/|garden", re.IGNORECASE)


def conda_subdir(system_name: str, machine: str) -> str | None:
    """The conda platform (subdir) for ``uname``'s system and machine, or None when conda has none."""
    return subdir_for(system_name, machine)


def parse_ldd_version(text: str) -> str | None:
    """The glibc version from ``ldd --version``'s first line (None for musl, which prints no version there)."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    if "glibc" not in first.lower() and "gnu libc" not in first.lower():
        return None
    match = re.search(r"(?<!\d)(\d+\.\d+)\s*$", first)  # starts only where a run of digits does: linear
    return match.group(1) if match else None


def glibc(system: System, findings: Findings) -> str | None:
    """glibc from the C library itself, else ``ldd --version``, else a ``libc-X.Y.so`` file name."""
    version, where = system.glibc_version()
    if version:
        findings.source(f"glibc: {where}")
        return version
    result = system.run(["ldd", "--version"])
    if result is not None:
        found = parse_ldd_version(result.stdout or result.stderr)
        if found:
            findings.source("glibc: ldd --version")
            return found
        findings.note(f"glibc: `ldd --version` names no glibc ({(result.stdout or result.stderr).strip()[:60]!r})")
    for pattern in ("/lib*/libc-*.so", "/lib*/*-linux-gnu/libc-*.so", "/usr/lib*/libc-*.so"):
        for path in system.glob(pattern):
            match = re.search(r"libc-(\d+\.\d+)\.so$", path)
            if match:
                findings.source(f"glibc: {path}")
                return match.group(1)
    findings.note(f"glibc: not found ({where}; no `ldd --version`, no libc-X.Y.so)")
    return None


def is_wsl(system: System) -> bool:
    text = system.read("/proc/version") or ""
    return "microsoft" in text.lower() or bool(system.environ.get("WSL_DISTRO_NAME")) or system.exists("/dev/dxg")


def container(system: System) -> str | None:
    """What marks this as a container (``/.dockerenv``, ``/run/.containerenv``, a container cgroup), or None."""
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if system.exists(marker):
            return marker
    if system.environ.get("container"):
        return f"environment variable container={system.environ['container']}"
    cgroup = system.read("/proc/1/cgroup") or ""
    if _CONTAINER_CGROUP.search(cgroup):
        return "/proc/1/cgroup"
    return None


def memory_available_mib(system: System) -> int | None:
    """``MemAvailable`` from /proc/meminfo (Linux only)."""
    match = re.search(r"^MemAvailable:[ \t]+(\d{1,15})[ \t]*kB", system.read("/proc/meminfo") or "", re.MULTILINE)
    return int(match.group(1)) // 1024 if match else None


def cpu_count(system: System) -> int | None:
    count = system.cpu_count()
    if count:
        return count
    cpuinfo = system.read("/proc/cpuinfo") or ""
    return len(re.findall(r"^processor\s*:", cpuinfo, re.MULTILINE)) or None
