"""Every cross-table check of resolver/plan/knowledge/consistency.py, one violation each: the shipped tables
with one row changed must give exactly the sentence that names it (and the shipped tables none)."""

from __future__ import annotations

from dataclasses import replace

from resolver.core.versions import ComputeCapability, DottedVersion, GfxArch
from resolver.plan.knowledge import Knowledge
from resolver.plan.knowledge.consistency import problems

K = Knowledge.load()
V = DottedVersion.parse


def release(name: str):
    return next(r for r in K.releases if r.name == name)


def with_release(name: str, **changes) -> Knowledge:
    return replace(K, releases=tuple(r._replace(**changes) if r.name == name else r for r in K.releases))


def with_variant(name: str, tag: str, **changes) -> Knowledge:
    rel = release(name)
    variants = tuple(v._replace(**changes) if v.tag == tag else v for v in rel.variants)
    return with_release(name, variants=variants)


def found(k: Knowledge) -> list[str]:
    return [p for p in problems(k) if p not in problems(K)]


def test_the_shipped_tables_are_sound():
    assert problems(K) == []


def test_releases_out_of_order_or_repeated():
    assert "torch.toml: releases are not in ascending order or repeat" in \
        found(replace(K, releases=tuple(reversed(K.releases))))
    assert "torch.toml: releases are not in ascending order or repeat" in \
        found(replace(K, releases=K.releases + K.releases[-1:]))


def test_latest_of_another_line():
    assert found(with_release("2.9", latest="2.10.0")) == ["torch 2.9: latest 2.10.0 is not a 2.9.x release"]


def test_a_release_without_cpu():
    rel = release("2.9")
    assert found(with_release("2.9", variants=tuple(v for v in rel.variants if v.tag != "cpu"))) == \
        ["torch 2.9: no cpu variant"]


def test_a_variant_twice_for_a_platform():
    rel = release("2.9")
    cpu = next(v for v in rel.variants if v.tag == "cpu")
    assert f"torch 2.9: variant cpu listed twice for {cpu.platforms[0]}" in \
        found(with_release("2.9", variants=rel.variants + (cpu,)))


def test_a_gpu_variant_without_archs():
    tag = next(v.tag for v in release("2.9").variants if v.backend == "cuda")
    assert f"torch 2.9 {tag}: no arch list" in found(with_variant("2.9", tag, archs=(), ptx=()))


def test_cuda_variant_archs_must_be_known_and_buildable():
    variant = next(v for v in release("2.9").variants if v.backend == "cuda")
    assert f"torch 2.9 {variant.tag}: 4.2 is not in cuda.toml [[arch]]" in \
        found(with_variant("2.9", variant.tag, archs=variant.archs + ("4.2",)))
    unbuildable = next(a.compute_capability for a in K.archs if not K.nvcc_can_build(variant.version, a.compute_capability))
    assert f"torch 2.9 {variant.tag}: CUDA {variant.version} cannot build {unbuildable.sm}" in \
        found(with_variant("2.9", variant.tag, archs=variant.archs + (str(unbuildable),)))


def test_ptx_without_its_cubin():
    variant = next(v for v in release("2.9").variants if v.backend == "cuda")
    extra = next(str(a.compute_capability) for a in K.archs if str(a.compute_capability) not in variant.archs
                 and K.nvcc_can_build(variant.version, a.compute_capability))
    assert found(with_variant("2.9", variant.tag, ptx=variant.ptx + (extra,))) == \
        [f"torch 2.9 {variant.tag}: PTX {extra} without its cubin"]


def test_cuda_variants_need_floors():
    variant = next(v for v in release("2.9").variants if v.backend == "cuda")
    major = variant.version.major
    assert f"torch 2.9 {variant.tag}: no driver floor for CUDA {major}" in \
        found(replace(K, mvc_floors=tuple(f for f in K.mvc_floors if f.cuda_major != major)))
    mm = variant.version.truncate(2)
    assert f"torch 2.9 {variant.tag}: no toolkit row for CUDA {variant.version}" in \
        found(replace(K, toolkits=tuple(t for t in K.toolkits if t.version.truncate(2) != mm)))


def test_rocm_variant_gfx_must_name_a_gpu():
    rel = next(r for r in K.releases if any(v.backend == "rocm" for v in r.variants))
    variant = next(v for v in rel.variants if v.backend == "rocm")
    assert found(with_variant(rel.name, variant.tag, archs=variant.archs + ("gfx1234",))) == \
        [f"torch {rel.name} {variant.tag}: gfx1234 names no GPU in gpus.toml"]
    assert found(with_variant(rel.name, variant.tag, archs=variant.archs + ("gfx1151",))) == []  # an APU target


def test_glibc_floors_never_go_down():
    later = K.releases[-1]
    assert found(with_release(later.name, glibc_min=V("2.17"))) == \
        [f"torch {later.name}: glibc floor 2.17 is below {K.releases[-2].name}'s"]


def test_driver_floors_rise_with_the_cuda_major():
    floors = sorted(K.mvc_floors, key=lambda f: f.cuda_major)
    lowered = tuple(f._replace(linux=floors[0].linux) if f == floors[1] else f for f in K.mvc_floors)
    assert f"cuda.toml: minor-version floor of CUDA {floors[1].cuda_major} is not above CUDA {floors[0].cuda_major}'s" \
        in found(replace(K, mvc_floors=lowered))


def test_toolkit_floors_rise_with_the_toolkit():
    toolkits = sorted(K.toolkits, key=lambda t: t.version)
    last = toolkits[-1]
    lowered = tuple(t._replace(linux=toolkits[-2].linux.__class__((1,))) if t == last else t for t in K.toolkits)
    result = found(replace(K, toolkits=lowered))
    assert f"cuda.toml: toolkit {last.version} needs an older driver than {toolkits[-2].version}" in result
    assert any(p.startswith(f"cuda.toml: toolkit {last.version} floor 1 is below its major's minor-version floor")
               for p in result)


def test_toolkits_before_minor_version_compatibility_are_exempt():
    row = next(f for f in K.mvc_floors if f.applies_from is not None)
    early = next(t for t in K.toolkits if t.version.major == row.cuda_major and t.version < row.applies_from)
    lowered = tuple(t._replace(linux=V("1")) if t == early else t for t in K.toolkits)
    assert not any("below its major's minor-version floor" in p for p in found(replace(K, toolkits=lowered)))


def test_arch_last_before_first():
    arch = next(a for a in K.archs if a.last is not None)
    changed = tuple(a._replace(last=V("1.0")) if a == arch else a for a in K.archs)
    assert f"cuda.toml: sm {arch.compute_capability} last 1.0 before first {arch.first}" in found(replace(K, archs=changed))


def test_gpu_models_with_unknown_capabilities_or_twice():
    model = K.nvidia_models[0]
    odd = model._replace(compute_capability=ComputeCapability(4, 2))
    assert f"gpus.toml: {model.names[0]} has compute capability 4.2, unknown to cuda.toml" in \
        found(replace(K, nvidia_models=K.nvidia_models[1:] + (odd,)))
    twice = K.amd_models[0]._replace(gfx=GfxArch.parse("gfx90a"))
    assert f"gpus.toml: {K.amd_models[0].names[0].lower()!r} is listed twice" in \
        found(replace(K, amd_models=K.amd_models + (twice,)))


def test_kernel_releases_must_name_known_packages_and_torches():
    kernel = K.kernel_releases[0]
    assert "mamba.toml: release of unknown package flash-attn" in \
        found(replace(K, kernel_releases=K.kernel_releases + (kernel._replace(package="flash-attn"),)))
    assert f"mamba.toml: {kernel.package} {kernel.version} names torch 1.13, not in torch.toml" in \
        found(replace(K, kernel_releases=(kernel._replace(torch_min=V("1.13")),) + K.kernel_releases[1:]))
    assert f"mamba.toml: {kernel.package} {kernel.version} names torch 9.9.1, not in torch.toml" in \
        found(replace(K, kernel_releases=(kernel._replace(torch_max=V("9.9.1")),) + K.kernel_releases[1:]))


def test_kernel_wheel_archs_must_be_known():
    kernel = next(k for k in K.kernel_releases if k.wheel_archs)
    major, archs = kernel.wheel_archs[0]
    changed = kernel._replace(wheel_archs=((major, archs + ("4.2",)),) + kernel.wheel_archs[1:])
    assert found(replace(K, kernel_releases=tuple(changed if k == kernel else k for k in K.kernel_releases))) == \
        [f"mamba.toml: {kernel.package} {kernel.version} cu{major} wheels list 4.2, unknown to cuda.toml"]


def test_wheel_rows_need_their_release_and_torch():
    wheels = K.wheels[0]
    assert f"mamba.toml: wheels for {wheels.package} 0.0.1, which has no [[release]] row" in \
        found(replace(K, wheels=K.wheels + (wheels._replace(version="0.0.1"),)))
    assert "mamba.toml: wheels for torch 9.9, not in torch.toml" in \
        found(replace(K, wheels=K.wheels + (wheels._replace(torch=("9.9",)),)))


def test_every_torch_needs_a_kernel_release_of_each_package():
    package = K.kernel_packages[0].name
    kept = tuple(k for k in K.kernel_releases if k.package != package)
    result = found(replace(K, kernel_releases=kept))
    assert all(f"mamba.toml: no {package} release covers torch {r.name}" in result for r in K.releases
               if r.version >= V("2.0"))
    assert not any(f"covers torch {r.name}" in p for r in K.releases if r.version < V("2.0") for p in result)


def test_header_fix_ranges_are_not_empty():
    fix = K.header_fixes[0]
    assert found(replace(K, header_fixes=(fix._replace(rocm_below=fix.rocm_min),))) == \
        [f"rocm.toml: {fix.id} range is empty"]


def test_conda_forge_builds_name_known_torches_and_cudas():
    build = K.conda_forge.builds[0]
    conda = K.conda_forge
    assert "conda_forge.toml: pytorch 9.9.0 is not in torch.toml" in \
        found(replace(K, conda_forge=conda._replace(builds=conda.builds + (build._replace(version="9.9.0"),))))
    assert "conda_forge.toml: no arch list for CUDA 99.0" in \
        found(replace(K, conda_forge=conda._replace(builds=conda.builds + (build._replace(cuda=(V("99.0"),)),))))


def test_problems_is_what_knowledge_reports():
    broken = with_release("2.9", latest="2.10.0")
    assert broken.problems() == problems(broken) != []


def test_a_toolkit_from_the_first_release_minor_version_compatibility_covers_is_held_to_its_floor():
    row = next(f for f in K.mvc_floors if f.applies_from is not None)
    first = next(t for t in K.toolkits if t.version == row.applies_from)
    lowered = tuple(t._replace(linux=V("1")) if t == first else t for t in K.toolkits)
    assert f"cuda.toml: toolkit {first.version} floor 1 is below its major's minor-version floor {row.linux}" in \
        found(replace(K, toolkits=lowered))


def test_an_arch_of_a_single_toolkit_release_is_sound():
    arch = next(a for a in K.archs if a.last is not None)
    changed = tuple(a._replace(last=a.first) if a == arch else a for a in K.archs)
    assert found(replace(K, archs=changed)) == []


def test_api_changes_must_name_a_kernel_package_and_a_known_torch():
    change = K.api_changes[0]
    assert found(replace(K, api_changes=(change._replace(package="flash-attn"),) + K.api_changes[1:])) == \
        [f"mamba.toml: api_change {change.id} names flash-attn, not a kernel [[package]]"]
    assert found(replace(K, api_changes=(change._replace(torch=V("1.13")),) + K.api_changes[1:])) == \
        [f"mamba.toml: api_change {change.id} names torch 1.13, not in torch.toml"]


def test_an_id_used_twice_is_reported_once():
    change, bad = K.api_changes[0], K.known_bad[0]
    assert found(replace(K, known_bad=K.known_bad + (bad._replace(id=change.id),))) == \
        [f"mamba.toml: id {change.id} is used twice"]
    assert found(replace(K, api_changes=K.api_changes + (change,), known_bad=K.known_bad + (bad,))) == \
        sorted([f"mamba.toml: id {change.id} is used twice", f"mamba.toml: id {bad.id} is used twice"])
