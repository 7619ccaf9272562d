"""A machine double: the GPUs of a captured machine, everything else from this one.

``RESOLVER_SYSROOT=DIR`` (or ``setup --sysroot DIR``) makes every command see the NVIDIA/AMD GPUs,
their drivers and the ROCm installation captured in ``DIR`` (docs/sysroot.md), while the host facts
(platform, glibc, Python, compilers, CPUs, memory, containers) are this machine's, because the lock,
install, kernel build and verify really run here. That is how a user's machine is reproduced from
their capture, and how the GPU journey is tested where there is no GPU: a double replaces hardware,
nothing else. ``probe --sysroot DIR`` differs on purpose: it replays the whole captured machine.
The double is read by :func:`resolver.plan.probe.machine.probe_double`; this module names it.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> _ = open(os.path.join(folder, "_meta.toml"), "w").write('system = "Linux"\\nmachine = "x86_64"\\npython = "3.9.1"\\n')
>>> from resolver.plan.probe.machine import probe_double
>>> double = probe_double(folder, environ={"PATH": "/nonexistent"})
>>> double.nvidia is None, str(double.python) != "3.9.1"
(True, True)
"""

from __future__ import annotations

from typing import Mapping

SYSROOT_VAR = "RESOLVER_SYSROOT"


def sysroot_from_environ(environ: Mapping[str, str]) -> str | None:
    """The double's folder named by ``RESOLVER_SYSROOT``, or None when unset or empty."""
    value = environ.get(SYSROOT_VAR, "").strip()
    return value or None
