"""``CONDA_OVERRIDE_CUDA`` and ``CONDA_OVERRIDE_GLIBC``, honoured the way conda and pixi honour them.

A value replaces what was detected; an empty value means "there is none" (conda then drops the
``__cuda`` / ``__glibc`` virtual package). Applied overrides are recorded in the profile.

>>> cuda_override({"CONDA_OVERRIDE_CUDA": "12.4"}), cuda_override({"CONDA_OVERRIDE_CUDA": ""}), cuda_override({})
(('12.4',), ('',), None)
>>> glibc_override({"CONDA_OVERRIDE_GLIBC": "2.x"})
Traceback (most recent call last):
...
resolver.core.errors.BadInput: CONDA_OVERRIDE_GLIBC='2.x' is not a version. Fix: set CONDA_OVERRIDE_GLIBC to a version such as 2.28, or to an empty string for none.
"""

from __future__ import annotations

import re
from typing import Mapping

from resolver.core.errors import BadInput
from resolver.core.names import printable

CUDA = "CONDA_OVERRIDE_CUDA"
GLIBC = "CONDA_OVERRIDE_GLIBC"
_VERSION = re.compile(r"^\d+(\.\d+)*$")


def _override(environ: Mapping[str, str], name: str) -> tuple[str] | None:
    """``(value,)`` when the variable is set (even to ""), else None. A non-version value is refused."""
    if name not in environ:
        return None
    value = environ[name].strip()
    if value and not _VERSION.match(value):  # the whole value: "2.x" is not read as "2"
        example = "2.28" if name == GLIBC else "12.4"
        raise BadInput(f"{name}={printable(repr(value))} is not a version",
                       fix=f"set {name} to a version such as {example}, or to an empty string for none")
    return (value,)


def cuda_override(environ: Mapping[str, str]) -> tuple[str] | None:
    return _override(environ, CUDA)


def glibc_override(environ: Mapping[str, str]) -> tuple[str] | None:
    return _override(environ, GLIBC)


# ------------------------------------------------------------------- a GPU the tables cannot place

COMPUTE_CAPABILITY_FLAG = "--compute-capability"
GFX_FLAG = "--gfx"
HOW_TO_GET_CC = "`nvidia-smi --query-gpu=name,compute_cap --format=csv` prints it"
HOW_TO_GET_GFX = "`rocminfo | grep gfx` prints it"


def add_gpu_arguments(parser) -> None:
    """``--compute-capability X.Y`` and ``--gfx gfxNNN``: the architecture of a GPU the tables cannot place."""
    parser.add_argument(COMPUTE_CAPABILITY_FLAG, dest="compute_capability", metavar="X.Y", default=None,
                        help="the compute capability of this machine's NVIDIA GPUs, when the probe cannot tell it "
                             f"({HOW_TO_GET_CC})")
    parser.add_argument(GFX_FLAG, dest="gfx", metavar="gfxNNN", default=None,
                        help=f"the gfx target of this machine's AMD GPUs, when the probe cannot tell it ({HOW_TO_GET_GFX})")


def apply_gpu_arguments(profile, args):
    """The profile with ``--compute-capability`` / ``--gfx`` applied (unchanged when neither was given)."""
    return apply_gpu_overrides(profile, getattr(args, "compute_capability", None), getattr(args, "gfx", None))


def apply_gpu_overrides(profile, compute_capability: str | None = None, gfx: str | None = None):
    """Give GPUs the probe could not place the architecture the user states.

    The GPUs the probe left unidentified take it; when every GPU was placed, the stated architecture
    replaces theirs (the user knows better than a table); a machine where no GPU of that vendor was
    seen gets one GPU of it. The override is recorded in ``profile.overrides``.

    >>> from resolver.plan.probe.profile import HardwareProfile, NvidiaInfo
    >>> from resolver.core.versions import DottedVersion
    >>> p = HardwareProfile("linux-64", DottedVersion.parse("3.12"),
    ...                     nvidia=NvidiaInfo(DottedVersion.parse("570.144"), unidentified_gpus=("NVIDIA GeForce ...",)))
    >>> q = apply_gpu_overrides(p, "8.9")
    >>> [(g.name, str(g.compute_capability)) for g in q.nvidia.gpus], q.nvidia.unidentified_gpus, dict(q.overrides)
    ([('NVIDIA GeForce ...', '8.9')], (), {'--compute-capability': '8.9'})
    """
    from dataclasses import replace

    from resolver.core.versions import ComputeCapability, GfxArch
    from resolver.plan.probe.profile import AmdGpu, AmdInfo, NvidiaGpu, NvidiaInfo

    applied = list(profile.overrides)
    if compute_capability:
        try:
            cc = ComputeCapability.parse(compute_capability)
        except ValueError:
            raise BadInput(f"{COMPUTE_CAPABILITY_FLAG} {printable(repr(compute_capability))} is not a compute capability",
                           fix=f"write it as major.minor, e.g. {COMPUTE_CAPABILITY_FLAG} 8.6 ({HOW_TO_GET_CC})") from None
        nv = profile.nvidia or NvidiaInfo(driver_version=None)
        if nv.unidentified_gpus:
            gpus = nv.gpus + tuple(NvidiaGpu(n, cc) for n in nv.unidentified_gpus)
        else:
            gpus = tuple(NvidiaGpu(g.name, cc, g.memory_mib, g.uuid) for g in nv.gpus) or (NvidiaGpu("NVIDIA GPU", cc),)
        profile = replace(profile, nvidia=replace(nv, gpus=gpus, unidentified_gpus=(),
                                                  sources=nv.sources + (COMPUTE_CAPABILITY_FLAG,)))
        applied.append((COMPUTE_CAPABILITY_FLAG, str(cc)))
    if gfx:
        try:
            target = GfxArch.parse(gfx)
        except ValueError:
            raise BadInput(f"{GFX_FLAG} {printable(repr(gfx))} is not a gfx target",
                           fix=f"write it as gfx followed by 3-4 hex digits, e.g. {GFX_FLAG} gfx90a ({HOW_TO_GET_GFX})") from None
        amd = profile.amd or AmdInfo(rocm_version=None)
        if amd.unidentified_gpus:
            gpus_amd = amd.gpus + tuple(AmdGpu(n, target) for n in amd.unidentified_gpus)
        else:
            gpus_amd = tuple(AmdGpu(g.name, target) for g in amd.gpus) or (AmdGpu(f"AMD GPU ({target})", target),)
        profile = replace(profile, amd=replace(amd, gpus=gpus_amd, unidentified_gpus=(), sources=amd.sources + (GFX_FLAG,)))
        applied.append((GFX_FLAG, str(target)))
    return replace(profile, overrides=tuple(sorted(dict(applied).items()))) if applied != list(profile.overrides) else profile
