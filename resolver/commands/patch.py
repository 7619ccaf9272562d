"""`python -m resolver patch`: fix ROCm 6.0's bf16 header into an overlay (default) or in place."""

from __future__ import annotations

import sys
from pathlib import Path

HELP = "fix ROCm headers (6.0 bf16) into an overlay the build puts first; --in-place/--revert/--check"


def add_arguments(parser) -> None:
    parser.add_argument("--rocm-root", metavar="DIR", type=Path,
                        help="the ROCm installation (default: $ROCM_PATH, $ROCM_HOME, /opt/rocm)")
    parser.add_argument("--overlay", metavar="DIR", type=Path,
                        help="where fixed headers go (default: .resolver/overlay/rocm-<version>)")
    parser.add_argument("--in-place", action="store_true",
                        help="edit the ROCm header itself, keeping a backup and a record (needs write access)")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 0 when nothing is needed or the fix is in place, 1 when needed")
    parser.add_argument("--revert", action="store_true",
                        help="undo: remove the overlay copy, or with --in-place restore the original byte for byte")
    parser.add_argument("--dry-run", action="store_true", help="say what would be written; write nothing")
    parser.add_argument("--force", action="store_true",
                        help="apply the structural fix to a header whose checksum is unknown, reporting every change")
    parser.add_argument("--id", dest="patch_ids", action="append", default=[], metavar="PATCH",
                        help="only this patch (repeatable; default: every patch in patches/)")


def run(args, out) -> int:
    from resolver.core.errors import ExitCode, Refusal
    from resolver.patch import PatchRequest, refusal_of, run_patches
    from resolver.project.paths import ProjectPaths

    if args.check and args.revert:
        raise Refusal("--check and --revert cannot be combined", fix="use --revert --dry-run to see what a revert would do")
    request = PatchRequest(rocm_root=args.rocm_root, overlay=args.overlay, in_place=args.in_place, check=args.check,
                           revert=args.revert, dry_run=args.dry_run, force=args.force, patch_ids=tuple(args.patch_ids))
    report = run_patches(ProjectPaths.discover(), request)
    data = report.to_json()
    refusal = refusal_of(report)
    if refusal is not None:
        data.update(refusal.to_json())
        out.result(data)
        from resolver.core.names import printable

        print(f"error: {printable(str(refusal))}", file=sys.stderr)
        return int(ExitCode.REFUSED)
    out.result(data, _human(report))
    if args.check:
        return int(ExitCode.CHECK_FAILED) if report.status == "needed" else int(ExitCode.OK)
    return int(ExitCode.OK)


def _human(report) -> str:
    lines = []
    if report.rocm is not None:
        version = f"ROCm {report.rocm.version}" if report.rocm.version else "ROCm (version unknown)"
        lines.append(f"{version} at {report.rocm.path}")
    for outcome in report.outcomes:
        lines.append(f"{outcome.patch_id}: {outcome.status}: {outcome.message}")
        for change in (outcome.changes if outcome.status in ("applied", "needed") else ()):
            lines.append(f"  line {change.line}: {change.function}: {change.after.strip()}")
        if outcome.fix and outcome.status == "needed":
            lines.append(f"  fix: {outcome.fix}")
    if report.include_dir is not None:
        lines.append(f"build with -I{report.include_dir} first on the include path (the build stage does this)")
    return "\n".join(lines)
