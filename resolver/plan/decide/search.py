"""The one search every backend plans with: torch releases newest first, inside each its wheel
variants newest toolkit first; the first candidate every rule accepts wins, and every candidate
turned down is kept (as :class:`Rejected`) for the trace and the refusal.

>>> from resolver.plan.decide.context import Context
>>> from resolver.core.model import Request
>>> from resolver.plan.knowledge import Knowledge
>>> from resolver.plan.probe.profile import HardwareProfile
>>> cpu = HardwareProfile.from_json({"platform": "linux-64", "glibc": "2.36", "python": "3.11.7",
...                                  "nvidia": None, "amd": None, "cuda_toolkit": None})
>>> ctx = Context(cpu, Request(), Knowledge.load(), cpu.python.truncate(2))
>>> found, rejected = newest_first(ctx, "cpu", release_rule=lambda r: None, variant_rule=lambda r, v: None)
>>> found.release.name == Knowledge.load().releases[-1].name, rejected
(True, [])
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from resolver.plan.decide.context import Context
from resolver.plan.decide.rejection import Rejected, Rejection
from resolver.plan.knowledge import TorchRelease, TorchVariant


class Candidate(NamedTuple):
    release: TorchRelease
    variant: TorchVariant


def newest_first(ctx: Context, backend: str, *, release_rule: Callable[[TorchRelease], Rejection | None],
                 variant_rule: Callable[[TorchRelease, TorchVariant], Rejection | None],
                 variant_filter: Callable[[TorchVariant], bool] = lambda variant: True,
                 ) -> tuple[Candidate | None, list[Rejected]]:
    """The newest (release, variant) of ``backend`` for this platform that both rules accept (of the
    requested torch release only, when the request names one)."""
    rejected: list[Rejected] = []
    wanted = ctx.request.torch
    for release in ctx.k.releases_newest_first():
        if wanted is not None and release.version != wanted.truncate(2):
            continue
        variants = [v for v in release.variants_for(ctx.profile.platform, backend) if variant_filter(v)]
        if not variants:
            continue
        why = release_rule(release)
        if why is not None:
            rejected.append(Rejected(release, None, why))
            continue
        for variant in variants:
            why = variant_rule(release, variant)
            if why is None:
                return Candidate(release, variant), rejected
            rejected.append(Rejected(release, variant, why))
    return None, rejected
