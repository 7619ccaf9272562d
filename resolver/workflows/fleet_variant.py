"""``build --variant KEY``: one of a fleet's kernel variants, built in CI through the chain's install and kernels.

The class's environment is installed from pixi.lock (for CUDA it brings its own nvcc), the package is compiled
for the class's architectures into ``.resolver/channel`` and installed nowhere. It always compiles (never
relocates an upstream wheel): a node's build key must not depend on whether the node can reach that wheel. A
node of the class later computes the same build key from the same locked environment, so it finds exactly
this file in the published channel (:mod:`resolver.fleet.channel`).
"""

from __future__ import annotations

from resolver.core.errors import UsageError
from resolver.fleet import record
from resolver.fleet.ci import fleet_manifest
from resolver.kernels.summary import BuildOptions
from resolver.project.paths import ProjectPaths, project_lock
from resolver.workflows.chain import Chain, ChainOptions


def build_variant(args, out) -> int:
    from resolver.kernels.packages import selected_packages

    project = ProjectPaths.discover()
    manifest = fleet_manifest(project)
    package, stored = record.parse_variant(args.variant, manifest)
    recipes = {p.name: p for p in selected_packages()}
    if package not in recipes:
        raise UsageError(f"--variant {args.variant!r} names package {package!r}, which is not a kernel package",
                         fix=f"use one of {', '.join(recipes)} (see `python -m resolver build --matrix`)")
    if stored.strategy == "none" or not stored.archs:
        raise UsageError(f"class {stored.name} builds no kernels (a {stored.backend} environment)",
                         fix="build the variants `python -m resolver build --matrix` lists")
    build = BuildOptions(recipe_dirs=(recipes[package].recipe_dir,), env_name=stored.name,
                         plan_archs=stored.archs, plan_strategy=stored.strategy,
                         plan_toolkit=stored.toolkit or None, jobs=args.jobs, prebuilt="never", install=False)

    def run_step(name, step):
        if name != "install":
            return step()
        out.info(f"installing environment {stored.name} from pixi.lock")
        # the tasks of one array job share a checkout: one installs the class's environment, the others wait for it
        with project_lock(project.stamps, on_wait=out.info):
            return step()

    chain = Chain(project, None, ChainOptions(steps=("install", "kernels"), build=build), run_step,
                  env_name=stored.name, detail=lambda step: out.info, out=out).run()
    summary = chain.build_summary
    data = summary.to_json()
    data["variant"] = args.variant
    lines = [f"{p.name} {p.version} [{p.build_string}]: {p.status} ({p.seconds:.1f}s) → {p.file}" for p in summary.packages]
    lines.append(f"next: python -m resolver channel publish --to DIR_OR_URL (adds {project.channel}'s packages)")
    out.result(data, "\n".join(lines))
    return 0
