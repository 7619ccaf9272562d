"""Cross-table checks: what one table says must agree with the others (run by the tests, and on demand).

Each finding is one sentence naming the file and the rows; an empty list means the data is sound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolver.core.versions import ComputeCapability, DottedVersion, GfxArch

if TYPE_CHECKING:
    from resolver.plan.knowledge.query import Knowledge  # noqa: F401

# gfx targets compiled into PyTorch wheels that name no single retail product we list (APUs).
_GFX_WITHOUT_PRODUCT = ("gfx1150", "gfx1151")
# Wheel rows for releases we do not plan with (kept as facts).
_WHEEL_ONLY_RELEASES: tuple[tuple[str, str], ...] = ()


def problems(self: Knowledge) -> list[str]:
    """Internal inconsistencies between the tables (empty when the data is sound)."""
    found: list[str] = []
    known_ccs = {a.compute_capability for a in self.archs}
    versions = [r.version for r in self.releases]
    if versions != sorted(versions) or len(set(versions)) != len(versions):
        found.append("torch.toml: releases are not in ascending order or repeat")
    for release in self.releases:
        if not DottedVersion.parse(release.latest).truncate(2) == release.version:
            found.append(f"torch {release.name}: latest {release.latest} is not a {release.name}.x release")
        if not any(v.tag == "cpu" for v in release.variants):
            found.append(f"torch {release.name}: no cpu variant")
        seen = set()
        for variant in release.variants:
            for platform in variant.platforms:
                if (variant.tag, platform) in seen:
                    found.append(f"torch {release.name}: variant {variant.tag} listed twice for {platform}")
                seen.add((variant.tag, platform))
            if variant.backend != "cpu" and not variant.archs:
                found.append(f"torch {release.name} {variant.tag}: no arch list")
            if variant.backend == "cuda":
                for cc in variant.cubins + variant.ptx_targets:
                    if cc not in known_ccs:
                        found.append(f"torch {release.name} {variant.tag}: {cc} is not in cuda.toml [[arch]]")
                    elif not self.nvcc_can_build(variant.version, cc):
                        found.append(f"torch {release.name} {variant.tag}: CUDA {variant.version} cannot build {cc.sm}")
                for cc in variant.ptx_targets:
                    if cc not in variant.cubins:
                        found.append(f"torch {release.name} {variant.tag}: PTX {cc} without its cubin")
                if self.mvc_floor(variant.version.major) is None:
                    found.append(f"torch {release.name} {variant.tag}: no driver floor for CUDA {variant.version.major}")
                if self.toolkit_floor(variant.version) is None:
                    found.append(f"torch {release.name} {variant.tag}: no toolkit row for CUDA {variant.version}")
            if variant.backend == "rocm":
                for gfx in variant.archs:
                    if not any(GfxArch.parse(gfx) == m.gfx for m in self.amd_models) and gfx not in _GFX_WITHOUT_PRODUCT:
                        found.append(f"torch {release.name} {variant.tag}: {gfx} names no GPU in gpus.toml")
    for earlier, later in zip(self.releases, self.releases[1:]):
        if later.glibc_min < earlier.glibc_min:
            found.append(f"torch {later.name}: glibc floor {later.glibc_min} is below {earlier.name}'s")
    floors = sorted(self.mvc_floors, key=lambda f: f.cuda_major)
    for lower, higher in zip(floors, floors[1:]):
        if not lower.linux < higher.linux:
            found.append(f"cuda.toml: minor-version floor of CUDA {higher.cuda_major} is not above CUDA {lower.cuda_major}'s")
    toolkits = sorted(self.toolkits, key=lambda t: t.version)
    for lower, higher in zip(toolkits, toolkits[1:]):
        if higher.linux < lower.linux:
            found.append(f"cuda.toml: toolkit {higher.version} needs an older driver than {lower.version}")
    for toolkit in self.toolkits:
        floor = self.mvc_floor(toolkit.version.major)
        row = next((f for f in self.mvc_floors if f.cuda_major == toolkit.version.major), None)
        if row is not None and row.applies_from is not None and toolkit.version < row.applies_from:
            continue
        if floor is not None and toolkit.linux < floor:
            found.append(f"cuda.toml: toolkit {toolkit.version} floor {toolkit.linux} is below its major's "
                         f"minor-version floor {floor}")
    for arch in self.archs:
        if arch.last is not None and arch.last < arch.first:
            found.append(f"cuda.toml: sm {arch.compute_capability} last {arch.last} before first {arch.first}")
    for model in self.nvidia_models:
        if model.compute_capability not in known_ccs:
            found.append(f"gpus.toml: {model.names[0]} has compute capability {model.compute_capability}, "
                         "unknown to cuda.toml")
    names = [n.lower() for m in self.nvidia_models + self.amd_models for n in m.names]  # type: ignore[operator]
    for name in set(names):
        if names.count(name) > 1:
            found.append(f"gpus.toml: {name!r} is listed twice")
    release_names = {r.name for r in self.releases}
    for kernel in self.kernel_releases:
        if kernel.package not in {p.name for p in self.kernel_packages}:
            found.append(f"mamba.toml: release of unknown package {kernel.package}")
        for bound in (kernel.torch_min, kernel.torch_max):
            if bound is not None and str(bound.truncate(2)) not in release_names:
                found.append(f"mamba.toml: {kernel.package} {kernel.version} names torch {bound}, not in torch.toml")
    for kernel in self.kernel_releases:
        for major, archs in kernel.wheel_archs:
            for arch in archs:
                if ComputeCapability.parse(arch) not in known_ccs:
                    found.append(f"mamba.toml: {kernel.package} {kernel.version} cu{major} wheels list {arch}, "
                                 "unknown to cuda.toml")
    for wheels in self.wheels:
        if not any(k.package == wheels.package and k.version == wheels.version for k in self.kernel_releases) and \
                (wheels.package, wheels.version) not in _WHEEL_ONLY_RELEASES:
            found.append(f"mamba.toml: wheels for {wheels.package} {wheels.version}, which has no [[release]] row")
        for torch in wheels.torch:
            if torch not in release_names:
                found.append(f"mamba.toml: wheels for torch {torch}, not in torch.toml")
    for release in self.releases:
        for package in self.kernel_packages:
            if release.version >= DottedVersion.parse("2.0") and not any(
                    k.package == package.name and k.supports_torch(release.version) for k in self.kernel_releases):
                found.append(f"mamba.toml: no {package.name} release covers torch {release.name}")
    for fix in self.header_fixes:
        if not fix.rocm_min < fix.rocm_below:
            found.append(f"rocm.toml: {fix.id} range is empty")
    for build in self.conda_forge.builds:
        if str(DottedVersion.parse(build.version).truncate(2)) not in release_names:
            found.append(f"conda_forge.toml: pytorch {build.version} is not in torch.toml")
        for cuda in build.cuda:
            if self.conda_forge.archs_of(cuda) is None:
                found.append(f"conda_forge.toml: no arch list for CUDA {cuda}")
    packages = {p.name for p in self.kernel_packages}
    for change in self.api_changes:
        if change.package not in packages:
            found.append(f"mamba.toml: api_change {change.id} names {change.package}, not a kernel [[package]]")
        if str(change.torch) not in release_names:
            found.append(f"mamba.toml: api_change {change.id} names torch {change.torch}, not in torch.toml")
    ids = [row.id for row in (*self.api_changes, *self.known_bad)]
    for repeated in sorted({i for i in ids if ids.count(i) > 1}):
        found.append(f"mamba.toml: id {repeated} is used twice")
    return found
