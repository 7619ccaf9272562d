"""ROCm header fixes without root: the registry (``patches/``), the transformation, the overlay,
in-place application with backup + record, and revert.

The workflows' chain runs :func:`ensure_overlay` and asks :func:`overlay_include_dir` for the folder it hands the
kernel build to put first on the include path; ``python -m resolver patch`` runs :func:`run_patches`.
"""

from __future__ import annotations

from resolver.patch.engine import (
                                      PatchOutcome,
                                      PatchReport,
                                      PatchRequest,
                                      ensure_overlay,
                                      overlay_include_dir,
                                      refusal_of,
                                      run_patches,
)
from resolver.patch.overlay import default_overlay
from resolver.patch.registry import PatchSpec, Registry, load_registry
from resolver.patch.transform import Change, add_static_inline

__all__ = ["PatchOutcome", "PatchReport", "PatchRequest", "ensure_overlay", "overlay_include_dir", "refusal_of",
           "run_patches", "default_overlay", "PatchSpec", "Registry", "load_registry", "Change", "add_static_inline"]
