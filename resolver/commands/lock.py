"""`python -m resolver lock [--target T ...] [--profile FILE]`: pixi.toml + pixi.lock for the targets."""

from __future__ import annotations

import time
from pathlib import Path

HELP = "resolve environments (conda via py-rattler, PyPI via pip) into pixi.toml + pixi.lock"


def add_arguments(parser) -> None:
    parser.add_argument("--target", "-t", action="append", default=[], metavar="T",
                        help="target to lock (cpu, cudaX.Y, rocmX.Y, auto); repeatable. Default: relock the "
                             "environments locked before, else auto")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="plan for the machine described by this `probe --json` file instead of this one")
    parser.add_argument("--channel", action="append", default=[], metavar="URL_OR_PATH",
                        help="a mirror of the manifest's conda channel (repeatable, in the channels' order); the lock "
                             "records the manifest's channel")
    parser.add_argument("--torch-index", metavar="URL", help="PyTorch wheel index; {variant} becomes cu126, cpu …")
    parser.add_argument("--extra-index-url", action="append", default=[], metavar="URL",
                        help="another PyPI-style index (repeatable)")
    parser.add_argument("--find-links", action="append", default=[], metavar="DIR_OR_URL",
                        help="a local wheelhouse (repeatable)")
    parser.add_argument("--no-conda", action="store_true",
                        help="lock without the conda part; the environment falls back to a virtual environment of "
                             "this machine's Python (pixi cannot install it)")
    parser.add_argument("--no-pypi", action="store_true", help="lock without the PyPI part (conda packages only)")


def plans_for(targets: list[str], profile_file: Path | None, project) -> list:
    """One Plan per target, from ``resolver.planning.plan_for`` (stored plans when no target is given)."""
    from resolver.decide.model import Request, Target

    if not targets:
        from resolver import lock
        from resolver.lock.manifest import Manifest

        if project.manifest.is_file() and profile_file is None:
            stored = [lock.stored_plan(project, name) for name in Manifest.load(project.manifest).environment_names()]
            stored = [p for p in stored if p is not None]
            if stored:
                return stored
        targets = ["auto"]
    parsed = [Target.parse(t) for t in targets]
    from resolver.planning import plan_for

    profile = None
    if profile_file is not None:
        from resolver.probe.profile import HardwareProfile

        profile = HardwareProfile.from_file(profile_file)
    return [plan_for(Request(target=t), profile) for t in parsed]


def run(args, out) -> int:
    from resolver import lock
    from resolver.lock.sources import Sources
    from resolver.paths import ProjectPaths

    project = ProjectPaths.discover()
    started = time.monotonic()
    plans = plans_for(args.target, args.profile, project)
    sources = Sources.load(project.root, flags={
        "conda-channels": args.channel, "torch-index": args.torch_index,
        "extra-index-urls": args.extra_index_url, "find-links": args.find_links})
    from resolver.paths import project_lock

    with project_lock(project.stamps, on_wait=out.info):  # one writer of pixi.toml / pixi.lock at a time
        summary = lock.lock_plans(project, plans, sources=sources, no_conda=args.no_conda, no_pypi=args.no_pypi,
                                  info=out.info)
    data = summary.to_json()
    data["seconds"] = round(time.monotonic() - started, 3)
    lines = [f"wrote {summary.lockfile} ({'pixi.toml updated' if summary.manifest_changed else 'pixi.toml unchanged'})"]
    for env in summary.locked:
        lines.append(f"  {env.name} [{env.platform}]: {env.conda_packages} conda + {env.pypi_packages} PyPI packages"
                     + (f", {env.torch}" if env.torch else ""))
        for url in env.skipped_indexes:
            lines.append(f"    note: {url} could not be reached and was left out")
    lines += [f"  note: {note}" for note in summary.notes]
    if summary.carried_over:
        lines.append(f"  kept unchanged: {', '.join(summary.carried_over)}")
    lines.append("next: python -m resolver install --env " + (summary.locked[0].name if summary.locked else "NAME"))
    out.result(data, "\n".join(lines))
    return 0
