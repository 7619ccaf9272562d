"""Why a candidate (a torch release, or one of its wheel variants) was rejected: structured values.

A :class:`Rejection` names the rule that stopped the candidate (a :class:`Stage`), the blocking fact
as one sentence, the fix, and the GPU it concerns when there is one. Refusals and trace lines are
made from these values; no decision ever reads a message's text.

>>> r = Rejection(Stage.DRIVER, "CUDA 13.0 needs NVIDIA driver >= 580.65.06", "upgrade the NVIDIA driver")
>>> r.stage > Stage.PYTHON, r.concerns_architecture
(True, False)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Stage(enum.IntEnum):
    """The rules in the order a candidate meets them: a refusal reports the furthest one reached."""

    PYTHON = 1  # the release has no wheels for the environment's Python
    GLIBC = 2  # the release's wheels need a newer glibc
    KERNELS = 3  # no mamba-ssm / causal-conv1d release supports the torch (or the Python)
    CONFIRMED = 4  # the row rests on one unconfirmed source
    TOOLKIT = 5  # the variant's CUDA is older than the kernels accept
    DRIVER = 6  # the driver cannot run the variant's CUDA
    NVCC_ARCH = 7  # the variant's nvcc cannot compile a GPU's architecture
    WHEEL_ARCH = 8  # the wheel carries no code a GPU can run
    ROCM_ARCH = 9  # the ROCm wheel has no kernels for a GPU's gfx target
    MIXED_NODE = 10  # each GPU has a build, but no single build serves them all

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")


ARCHITECTURE_STAGES = (Stage.NVCC_ARCH, Stage.WHEEL_ARCH, Stage.ROCM_ARCH)


@dataclass(frozen=True)
class Rejection:
    stage: Stage
    message: str  # the blocking fact, one sentence without the fix
    fix: str = ""
    gpu: Any = None  # the GPU (decide.context.Gpu) the fact concerns, if one

    @property
    def concerns_architecture(self) -> bool:
        return self.stage in ARCHITECTURE_STAGES


@dataclass(frozen=True)
class Rejected:
    """One candidate a search turned down: the release, the variant (None when the whole release was
    ruled out) and why."""

    release: Any  # knowledge.TorchRelease
    variant: Any  # knowledge.TorchVariant | None
    why: Rejection

    def line(self) -> str:
        """``torch 2.9 cu130: <fact>`` as the trace and refusals print it."""
        tag = f" {self.variant.tag}" if self.variant is not None else ""
        return f"torch {self.release.name}{tag}: {self.why.message}"
