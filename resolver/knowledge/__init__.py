"""The knowledge base: sourced TOML tables in ``resolver/knowledge/data/`` read into frozen values.

Everything ``decide`` knows about PyTorch wheels, CUDA drivers and toolkits, GPU architectures, the
Mamba kernel packages, ROCm header fixes and conda-forge lives in those tables, one row per fact,
each with its ``source`` (and ``confirmed = false`` where only one secondary source backs it).
Adding a PyTorch release is a data edit: a ``[[release]]`` block in ``torch.toml``.

* :mod:`~resolver.knowledge.rows`: the row types;
* :mod:`~resolver.knowledge.load`: reading and validating the tables (``Knowledge.load()``; a few
  milliseconds: the parsed TOML is kept as JSON in the user's cache folder, keyed by the tables'
  bytes); callers that plan many times keep the instance. There is no module-level state;
* :mod:`~resolver.knowledge.query`: :class:`Knowledge` and its questions;
* :mod:`~resolver.knowledge.consistency`: the cross-table checks (``Knowledge.problems()``).
"""

from __future__ import annotations

from resolver.knowledge.load import DATA_DIR, TABLE_FILES, KnowledgeError
from resolver.knowledge.query import Knowledge
from resolver.knowledge.rows import (
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
from resolver.versions import driver_text

__all__ = ["Knowledge", "KnowledgeError", "DATA_DIR", "TABLE_FILES", "driver_text", "AmdModel", "ApiChange",
           "ArchSupport", "BuildFix", "CondaForge", "CondaForgeBuild", "DriverFloor", "HeaderFix", "KernelRelease",
           "KnownBad", "NvidiaModel", "OfficialGfx", "ToolkitFloor", "TorchRelease", "TorchVariant", "UpstreamKernel", "WheelSet"]
