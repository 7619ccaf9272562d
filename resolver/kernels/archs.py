"""Which GPU architectures a kernel build compiles for.

Upstream setup.py files compile every architecture their nvcc knows (nine with CUDA 13); the
resolver compiles for the GPUs present (or what ``--arch`` says) and drops architectures a package
is known to miscompile (``avoid_arch`` build fixes in the knowledge base's mamba.toml).

>>> parse_arch_list("8.6, sm_90", backend="cuda")
('8.6', '9.0')
>>> upstream_default_archs("13.0")
('7.5', '8.0', '8.7', '9.0', '10.0', '12.0', '10.3', '11.0', '12.1')
>>> parse_arch_list("gfx942,gfx90a", backend="rocm")
('gfx90a', 'gfx942')
"""

from __future__ import annotations

from resolver.core.errors import BadInput
from resolver.core.versions import ComputeCapability, DottedVersion, GfxArch
from resolver.plan.knowledge import BuildFix

# setup.py of causal-conv1d 1.7.0 and mamba-ssm 2.3.2.post1 (identical lists), in their order:
# (first nvcc version that gets it, architectures added)
_UPSTREAM_CUDA = (
    ("0", ("7.5", "8.0", "8.7")),
    ("11.8", ("9.0",)),
    ("12.8", ("10.0", "12.0")),
    ("13.0", ("10.3", "11.0", "12.1")),
)
# ROCm: upstream has no list; it passes --offload-arch=$HIP_ARCHITECTURES, default "native" (the GPUs
# present), so "all" has no upstream meaning there.


def upstream_default_archs(toolkit: str) -> tuple[str, ...]:
    """The architectures upstream compiles with this nvcc version (what ``--arch all`` means)."""
    version = DottedVersion.parse(toolkit)
    archs: list[str] = []
    for first, added in _UPSTREAM_CUDA:
        if version >= DottedVersion.parse(first):
            archs += added
    return tuple(archs)


def parse_arch_list(text: str, *, backend: str, toolkit: str | None = None) -> tuple[str, ...]:
    """``--arch`` text → normalised names (``"9.0"``; ``"gfx90a"``), sorted, duplicates removed.

    ``all`` gives the upstream default list for the toolkit.
    """
    cleaned = text.strip().lower()
    if cleaned == "all":
        if backend == "rocm":
            raise BadInput("--arch all has no meaning on ROCm (upstream compiles for the GPUs present)",
                           fix="name the gfx targets, e.g. --arch gfx90a,gfx942")
        if not toolkit:
            raise BadInput("--arch all needs the CUDA toolkit version", fix="put nvcc on PATH or set CUDA_HOME")
        return upstream_default_archs(toolkit)
    names: list[str] = []
    for part in (p.strip() for p in cleaned.replace(";", ",").replace(" ", ",").split(",")):
        if not part:
            continue
        try:
            if backend == "rocm":
                names.append(GfxArch.parse(part).name)
            else:
                names.append(str(ComputeCapability.parse(part)))
        except ValueError:
            example = "gfx90a,gfx942" if backend == "rocm" else "8.6,9.0"
            raise BadInput(f"--arch {text!r}: {part!r} is not a {'gfx architecture' if backend == 'rocm' else 'compute capability'}",
                           fix=f"give a comma-separated list such as {example}, or 'all'") from None
    if not names:
        raise BadInput("--arch is empty", fix="give a list such as 8.6,9.0, or 'all'")
    if backend == "rocm":
        return tuple(sorted(set(names)))
    return tuple(str(c) for c in sorted({ComputeCapability.parse(n) for n in names}))


def check_arch_syntax(text: str) -> None:
    """Reject an ``--arch`` value that is neither ``all`` nor a list of compute capabilities / gfx names,
    before anything slow happens (the backend, which decides the kind, is known only later).

    >>> check_arch_syntax("8.6,gfx90a")
    """
    if text.strip().lower() == "all":
        return
    parts = [p for p in text.replace(";", ",").replace(" ", ",").split(",") if p.strip()]
    if not parts:
        raise BadInput("--arch is empty", fix="give a list such as 8.6,9.0, or 'all'")
    for part in parts:
        try:
            ComputeCapability.parse(part.strip())
        except ValueError:
            try:
                GfxArch.parse(part.strip())
            except ValueError:
                raise BadInput(f"--arch {text!r}: {part.strip()!r} is neither a compute capability nor a gfx "
                               "architecture", fix="give a list such as 8.6,9.0 (CUDA) or gfx90a (ROCm), or 'all'") from None


def apply_rules(archs: tuple[str, ...], rules: tuple[BuildFix, ...], toolkit: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(kept, dropped-with-reason) for one package; ``rules`` are its ``avoid_arch`` build fixes (mamba.toml).

    >>> from resolver.plan.knowledge import Knowledge
    >>> rules = Knowledge.load().fixes_for("causal-conv1d")
    >>> apply_rules(("9.0", "10.3"), rules, "13.0")
    (('9.0',), ('sm_103 with nvcc 13.0 (Dao-AILab/causal-conv1d issue #105 (nvcc 13 miscompiles sm_103))',))
    """
    if not toolkit:
        return archs, ()
    nvcc = DottedVersion.parse(toolkit)
    kept, dropped = [], []
    for arch in archs:
        rule = next((r for r in rules if r.avoid_arch == arch and r.holds_for_nvcc(nvcc)), None)
        if rule:
            dropped.append(f"sm_{arch.replace('.', '')} with nvcc {toolkit} ({rule.source.split(';')[0]})")
        else:
            kept.append(arch)
    return tuple(kept), tuple(dropped)
