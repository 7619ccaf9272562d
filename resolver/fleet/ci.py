"""``build --matrix``: the fleet's kernel variants, each to be built once in CI (``build --variant KEY``,
:mod:`resolver.workflows.fleet_variant`).

The matrix lists, for every class of pixi.toml's fleet whose plan builds kernels, one entry per kernel
package (GitHub Actions ``strategy.matrix.include``). ``--variant KEY`` builds one entry on any machine
with the toolkit: it installs the class's environment from pixi.lock (which, for CUDA, brings its own
nvcc), compiles the package for the class's architectures into ``.resolver/channel`` and installs it
nowhere. It always compiles (never relocates an upstream wheel): a node's build key must not depend on
whether the node can reach that wheel. A node of the class later computes the same build key from the same locked environment, so it
finds exactly this file in the published channel (resolver.fleet.channel).
"""

from __future__ import annotations

import json

from resolver.core.errors import BadInput, UsageError
from resolver.fleet import record
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths
from resolver.project.pixi_toml import read_pixi_toml


def fleet_manifest(project: ProjectPaths) -> Manifest:
    if not project.manifest.is_file():
        raise BadInput(f"{project.manifest} does not exist",
                       fix="run the command in the fleet's project (after `python -m resolver lock --fleet DIR`)")
    manifest = Manifest.view(read_pixi_toml(project.manifest))
    if not record.read_classes(manifest):
        raise UsageError(f"{project.manifest} records no fleet",
                         fix="lock one first: `python -m resolver lock --fleet DIR` (a folder of `probe --json` files)")
    return manifest


def package_names() -> list[str]:
    """The kernel packages in build order (the recipes RESOLVER_KERNEL_RECIPES names, when set)."""
    from resolver.core.names import is_pypi_name, printable
    from resolver.kernels.packages import configured_recipe_dirs, known_packages, selected_packages

    names = [p.name for p in selected_packages()] if configured_recipe_dirs() else list(known_packages())
    for name in names:  # each becomes part of a variant key in the CI files: a package name, nothing else
        if not is_pypi_name(name):
            raise BadInput(f"kernel package name {printable(repr(name))} is not a package name (letters, digits, "
                           "'.', '_' and '-')", fix="correct the name in the recipe RESOLVER_KERNEL_RECIPES names")
    return names


def run_fleet(args, out) -> int:
    """``build --matrix`` (``--variant`` with it is refused)."""
    project = ProjectPaths.discover()
    if args.matrix and args.variant:
        raise UsageError("--matrix and --variant do not go together", fix="list with --matrix, then build one --variant")
    manifest = fleet_manifest(project)
    if args.matrix and args.format:
        from resolver.fleet.engines import FILES, render

        entries = record.matrix(manifest, package_names())
        text = render(args.format, entries, record.kernel_channel(manifest))
        out.result({"format": args.format, "file": FILES[args.format], "variants": [e["variant"] for e in entries],
                    "text": text}, text.rstrip("\n"))
        return 0
    entries = record.matrix(manifest, package_names())
    data = {"include": entries}
    human = json.dumps(data, indent=None) if not out.quiet else ""
    lines = [f"{len(entries)} kernel variant(s) to build, each once:"]
    lines += [f"  {e['variant']:<48} {e['archs']:<24} runs-on {e['runs-on']}" for e in entries]
    lines += ["", "matrix (for strategy.matrix in GitHub Actions; `--json` prints it alone):", human]
    out.result(data, "\n".join(lines), versioned=False)  # GitHub reads every key of it as a matrix dimension
    return 0
