"""`python -m resolver channel publish --to DIR_OR_URL [--from DIR]`: add built kernel packages to a fleet's
shared channel and re-index it (docs/fleet.md)."""

from __future__ import annotations

HELP = "publish built kernel packages to a shared conda channel (a folder a web server or object store serves)"


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("publish",), help="publish: add packages to the channel and re-index it")
    parser.add_argument("--to", required=True, metavar="DIR_OR_URL",
                        help="the shared channel: a folder (or file:// URL) that a web server or object store serves")
    parser.add_argument("--from", dest="source", metavar="DIR",
                        help="the channel folder holding the built packages (default: this project's .resolver/channel; "
                             "in CI, the folder the build jobs' artefacts were downloaded into)")


def run(args, out) -> int:
    from pathlib import Path

    from resolver.fleet.channel import publish
    from resolver.project.paths import ProjectPaths

    source = Path(args.source).resolve() if args.source else ProjectPaths.discover().channel
    report = publish(source, args.to)
    lines = [f"published to {report.channel}: {len(report.added)} added, {len(report.kept)} already there"
             + (f", {len(report.replaced)} replaced (files no publish had put there)" if report.replaced else "")]
    lines += [f"  + {name}" for name in report.added] + [f"  = {name}" for name in report.kept]
    lines += [f"  ! {name}" for name in report.replaced]
    out.result(report.to_json(), "\n".join(lines))
    return 0
