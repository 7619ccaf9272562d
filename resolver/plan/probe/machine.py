"""``probe_machine``: read the machine (or a sysroot) into a :class:`HardwareProfile`. Detection only.

>>> profile = probe_machine(environ={"PATH": "/nonexistent"})
>>> profile.platform in ("linux-64", "linux-aarch64", "osx-arm64", "osx-64", "win-64")
True
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from resolver.core.errors import BadInput
from resolver.core.versions import DottedVersion
from resolver.plan.probe import host, overrides, toolkits
from resolver.plan.probe.amd import detect_amd
from resolver.plan.probe.findings import Findings
from resolver.plan.probe.nvidia import detect_nvidia
from resolver.plan.probe.profile import HardwareProfile, NvidiaInfo
from resolver.plan.probe.system import LiveSystem, System


def make_system(sysroot: str | Path | None = None, environ: Mapping[str, str] | None = None) -> System:
    """The live machine, or the captured one in ``sysroot`` (with ``environ`` laid over its own)."""
    if sysroot is None:
        return LiveSystem(environ)
    from resolver.plan.probe.sysroot import SysrootSystem

    return SysrootSystem(sysroot, environ)


def probe_machine(sysroot: str | Path | None = None, environ: Mapping[str, str] | None = None,
                  *, system: System | None = None) -> HardwareProfile:
    """Everything the planner needs to know about a machine; never imports torch.

    ``sysroot``: a captured machine (docs/sysroot.md); nothing live is read then.
    ``environ``: the environment to use (default: the process's, or the sysroot's ``[environ]``).
    ``system``: an already built :class:`System` (used by ``--capture`` to record a live probe).
    Without ``sysroot`` or ``system``, ``RESOLVER_SYSROOT`` names a machine double
    (:mod:`resolver.plan.probe.double`): that capture's GPUs on this machine.
    """
    if sysroot is None and system is None:
        from resolver.plan.probe.double import sysroot_from_environ

        double = sysroot_from_environ(os.environ if environ is None else environ)
        if double is not None:
            return probe_double(double, environ)
    system = system or make_system(sysroot, environ)
    findings = Findings()
    profile = read_machine(system, findings)
    profile = apply_overrides(profile, system.environ, findings)
    return replace(profile, notes=findings.notes, sources=findings.sources)


def read_machine(system: System, findings: Findings, *, hardware: System | None = None) -> HardwareProfile:
    """The profile of ``system``, before overrides; ``hardware``, when given, answers for the GPUs,
    their drivers and ROCm instead (a machine double)."""
    gpus = hardware or system
    name, machine = system.uname()
    platform = host.conda_subdir(name, machine)
    if platform is None:
        raise BadInput(f"no conda platform for {name} {machine}",
                       fix="run on linux-64, linux-aarch64, linux-ppc64le, osx-64, osx-arm64 or win-64")
    python = DottedVersion.parse(system.python_version())
    is_linux = platform.startswith("linux")
    glibc = host.glibc(system, findings) if is_linux else None
    nvidia = detect_nvidia(gpus, findings) if platform.split("-")[0] in ("linux", "win") else None
    amd = detect_amd(gpus, findings) if is_linux else None
    cuda_toolkit = toolkits.cuda_toolkit(system, findings) if not platform.startswith("osx") else None
    rocm_toolkit = toolkits.rocm_toolkit(system, findings, amd.rocm_root if amd else None) if is_linux else None
    container = host.container(system) if is_linux else None
    if container:
        findings.source(f"container: {container}")
    return HardwareProfile(
        platform=platform,
        python=python,
        glibc=DottedVersion.parse(glibc) if glibc else None,
        nvidia=nvidia,
        amd=amd,
        cuda_toolkit=DottedVersion.parse(cuda_toolkit) if cuda_toolkit else None,
        rocm_toolkit=DottedVersion.parse(rocm_toolkit) if rocm_toolkit else None,
        wsl=is_linux and host.is_wsl(gpus),
        container=container is not None,
        cpu_count=host.cpu_count(system),
        memory_available_mib=host.memory_available_mib(system) if is_linux else None,
    )


def apply_overrides(profile: HardwareProfile, environ: Mapping[str, str], findings: Findings) -> HardwareProfile:
    """Apply ``CONDA_OVERRIDE_CUDA`` / ``CONDA_OVERRIDE_GLIBC`` as conda and pixi do.

    CUDA: a version sets ``nvidia.cuda_driver_version`` (creating a GPU-less NVIDIA entry when none
    was found, as conda's ``__cuda`` appears on any machine); "" means no CUDA driver (``nvidia`` null).
    """
    applied: list[tuple[str, str]] = []
    cuda = overrides.cuda_override(environ)
    if cuda is not None:
        (value,) = cuda
        applied.append((overrides.CUDA, value))
        if not value:
            if profile.nvidia is not None:
                hidden = ", ".join(g.name for g in profile.nvidia.gpus) or "no GPU"
                findings.note(f"{overrides.CUDA}='' hides the detected NVIDIA driver ({hidden})")
            profile = replace(profile, nvidia=None)
        else:
            base = profile.nvidia or NvidiaInfo(driver_version=None)
            profile = replace(profile, nvidia=replace(base, cuda_driver_version=DottedVersion.parse(value),
                                                      sources=base.sources + (overrides.CUDA,)))
    glibc = overrides.glibc_override(environ)
    if glibc is not None:
        (value,) = glibc
        applied.append((overrides.GLIBC, value))
        profile = replace(profile, glibc=DottedVersion.parse(value) if value else None)
        findings.source(f"glibc: {overrides.GLIBC}")
    return replace(profile, overrides=tuple(sorted(applied))) if applied else profile


def probe_double(sysroot: str | Path, environ: Mapping[str, str] | None = None) -> HardwareProfile:
    """This machine with the GPUs, drivers and ROCm of the captured machine in ``sysroot``."""
    from resolver.plan.probe.double import SYSROOT_VAR
    from resolver.plan.probe.sysroot import SysrootSystem

    folder = Path(sysroot)
    if not folder.is_dir():
        raise BadInput(f"{SYSROOT_VAR}={sysroot} is not a folder",
                       fix=f"point {SYSROOT_VAR} (or --sysroot) at a folder made by `python -m resolver probe "
                           "--capture DIR`, or unset it to use this machine's own GPUs")
    live = LiveSystem(environ)
    findings = Findings()
    findings.note(f"machine double: the GPUs, drivers and ROCm are those captured in {folder}; "
                  "everything else is this machine")
    profile = read_machine(live, findings, hardware=SysrootSystem(folder))
    profile = apply_overrides(profile, live.environ, findings)
    where = f"sysroot {folder}"
    return replace(profile, notes=findings.notes,
                   nvidia=profile.nvidia and replace(profile.nvidia, sources=_tag(profile.nvidia.sources, where)),
                   amd=profile.amd and replace(profile.amd, sources=_tag(profile.amd.sources, where)),
                   sources=findings.sources + (f"GPUs, drivers and ROCm: {where} (a machine double)",))


def _tag(sources: tuple[str, ...], where: str) -> tuple[str, ...]:
    return tuple(f"{where}: {s}" for s in sources)
