"""The knowledge base: sourced TOML tables in ``resolver/plan/knowledge/data/`` read into frozen values.

Everything ``decide`` knows about PyTorch wheels, CUDA drivers and toolkits, GPU architectures, the
Mamba kernel packages, ROCm header fixes and conda-forge lives in those tables, one row per fact,
each with its ``source`` (and ``confirmed = false`` where only one secondary source backs it).
Adding a PyTorch release is a data edit: a ``[[release]]`` block in ``torch.toml``.

* :mod:`~resolver.plan.knowledge.rows`: the row types;
* :mod:`~resolver.plan.knowledge.load`: reading and validating the tables (``Knowledge.load()``; a few
  milliseconds: the parsed TOML is kept as JSON in the user's cache folder, keyed by the tables'
  bytes); callers that plan many times keep the instance. There is no module-level state;
* :mod:`~resolver.plan.knowledge.query`: :class:`Knowledge` and its questions;
* :mod:`~resolver.plan.knowledge.consistency`: the cross-table checks (``Knowledge.problems()``).
"""

from __future__ import annotations

from resolver.core.versions import driver_text
from resolver.plan.knowledge.load import DATA_DIR, TABLE_FILES, KnowledgeError
from resolver.plan.knowledge.query import Knowledge
from resolver.plan.knowledge.rows import (
                                     AmdModel,
                                     ApiChange,
                                     ArchSupport,
                                     BuildFix,
                                     CondaForge,
                                     CondaForgeBuild,
                                     DriverFloor,
                                     HeaderFix,
                                     KernelRelease,
                                     KnownBad,
                                     NvidiaModel,
                                     OfficialGfx,
                                     ToolkitFloor,
                                     TorchRelease,
                                     TorchVariant,
                                     UpstreamKernel,
                                     WheelSet,
)

__all__ = ["Knowledge", "KnowledgeError", "DATA_DIR", "TABLE_FILES", "driver_text", "AmdModel", "ApiChange",
           "ArchSupport", "BuildFix", "CondaForge", "CondaForgeBuild", "DriverFloor", "HeaderFix", "KernelRelease",
           "KnownBad", "NvidiaModel", "OfficialGfx", "ToolkitFloor", "TorchRelease", "TorchVariant", "UpstreamKernel", "WheelSet"]
