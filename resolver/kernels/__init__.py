"""build: the Mamba kernels from rattler-build recipes (``recipes/``), for the GPUs present, cached per variant.

The workflows' chain (:mod:`resolver.workflows.chain`) drives :func:`resolver.kernels.driver.build`, handing
it the ROCm header overlay the patch stage made for :func:`resolver.kernels.driver.rocm_root`. See docs/build.md. Importing this package imports nothing heavy.
"""

from __future__ import annotations

from typing import Any


def build_for_plan(project, plan, env, out=None, *, fleet_channel: str | None = None,
                   fetch_variant=None, rocm_overlay=None) -> dict[str, Any]:
    """Build and install what ``plan.kernels`` asks for into ``env`` (progress lines through ``out``);
    the summary's JSON form. On a fleet's node, ``fleet_channel`` is where the variants come from and
    ``fetch_variant`` how (see :class:`~resolver.kernels.summary.BuildOptions`); ``rocm_overlay`` the header
    overlay's include folder (None: none)."""
    from resolver.kernels.driver import build_for_plan as run

    return run(project, plan, env, out, fleet_channel=fleet_channel, fetch_variant=fetch_variant,
               rocm_overlay=rocm_overlay)
