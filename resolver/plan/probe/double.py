"""A machine double: the GPUs of a captured machine, everything else from this one.

``RESOLVER_SYSROOT=DIR`` (or ``setup --sysroot DIR``) makes every command see the NVIDIA/AMD GPUs,
their drivers and the ROCm installation captured in ``DIR`` (docs/sysroot.md), while the host facts
(platform, glibc, Python, compilers, CPUs, memory, containers) are this machine's, because the lock,
install, kernel build and verify really run here. That is how a user's machine is reproduced from
their capture, and how the GPU journey is tested where there is no GPU: a double replaces hardware,
nothing else. ``probe --sysroot DIR`` differs on purpose: it replays the whole captured machine.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> _ = open(os.path.join(folder, "_meta.toml"), "w").write('system = "Linux"\\nmachine = "x86_64"\\npython = "3.9.1"\\n')
>>> double = probe_double(folder, environ={"PATH": "/nonexistent"})
>>> double.nvidia is None, str(double.python) != "3.9.1"
(True, True)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Mapping

from resolver.core.errors import BadInput
from resolver.plan.probe.profile import HardwareProfile

SYSROOT_VAR = "RESOLVER_SYSROOT"


def sysroot_from_environ(environ: Mapping[str, str]) -> str | None:
    """The double's folder named by ``RESOLVER_SYSROOT``, or None when unset or empty."""
    value = environ.get(SYSROOT_VAR, "").strip()
    return value or None


def probe_double(sysroot: str | Path, environ: Mapping[str, str] | None = None) -> HardwareProfile:
    """This machine with the GPUs, drivers and ROCm of the captured machine in ``sysroot``."""
    from resolver.plan.probe.findings import Findings
    from resolver.plan.probe.machine import apply_overrides, read_machine
    from resolver.plan.probe.sysroot import SysrootSystem
    from resolver.plan.probe.system import LiveSystem

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
