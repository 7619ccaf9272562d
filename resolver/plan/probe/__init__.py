"""probe: read a machine (or a captured sysroot) into a :class:`resolver.plan.probe.profile.HardwareProfile`.

Detection only: no decisions, no torch, no rattler. One module per source of truth:
``nvidia`` (NVML, nvidia-smi, /proc), ``amd`` (ROCm root, rocminfo, amd-smi, KFD), ``host``
(platform, glibc, WSL, container), ``toolkits`` (nvcc, hipcc: the one finder the kernel build uses
too), ``overrides`` (CONDA_OVERRIDE_*), ``sysroot`` (replay a captured machine), ``double`` (a
captured machine's GPUs on this one), ``capture`` (record this one); ``profile`` is the result type.

>>> from resolver.plan.probe import probe_machine
>>> probe_machine().python.major >= 3
True
"""

from __future__ import annotations

__all__ = ["probe_machine"]


def __getattr__(name: str):
    # imported on first use: ``resolver.plan.probe.profile`` alone must not pay for every detector
    if name == "probe_machine":
        from resolver.plan.probe.machine import probe_machine

        return probe_machine
    raise AttributeError(name)
