"""probe: read a machine (or a captured sysroot) into a :class:`resolver.profile.HardwareProfile`.

Detection only: no decisions, no torch, no rattler. One module per source of truth:
``nvidia`` (NVML, nvidia-smi, /proc), ``amd`` (ROCm root, rocminfo, amd-smi, KFD), ``host``
(platform, glibc, WSL, container), ``toolkits`` (nvcc, hipcc), ``overrides`` (CONDA_OVERRIDE_*),
``sysroot`` (replay a captured machine), ``capture`` (record this one).

>>> from resolver.probe import probe_machine
>>> probe_machine().python.major >= 3
True
"""

from resolver.probe.machine import probe_machine

__all__ = ["probe_machine"]
