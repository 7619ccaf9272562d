"""`python -m resolver probe [--sysroot DIR | --capture DIR | --from-report FILE|-] [--json]`: what this machine has.

Detection only (resolver/plan/probe/); never imports torch or rattler, so it starts fast.
"""

from __future__ import annotations

HELP = "read this machine (or a captured --sysroot): platform, glibc, Python, NVIDIA/AMD GPUs, toolkits"


def add_arguments(parser) -> None:
    parser.add_argument("--sysroot", metavar="DIR",
                        help="read a captured machine from DIR instead of this one (layout: docs/sysroot.md)")
    parser.add_argument("--capture", metavar="DIR",
                        help="record what the probe reads on this machine into DIR (a new folder), to replay "
                             "with --sysroot or to send with a bug report")
    parser.add_argument("--from-report", metavar="FILE", dest="from_report",
                        help="read what a machine printed (nvidia-smi, rocminfo, amd-smi, rocm-smi, "
                             "/proc/driver/nvidia/version, collect_env; pasted into FILE, or - for standard input) "
                             "instead of this machine; plan from it with `plan --profile`")
    from resolver.plan.probe.overrides import add_gpu_arguments

    add_gpu_arguments(parser)


def _gpu_lines(profile) -> list[str]:
    from resolver.plan.probe.overrides import COMPUTE_CAPABILITY_FLAG, GFX_FLAG, HOW_TO_GET_CC, HOW_TO_GET_GFX

    lines = []
    if profile.nvidia:
        nv = profile.nvidia
        cuda = f"{nv.cuda_driver_version}, derived from the driver version" if nv.cuda_driver_version_derived \
            else (nv.cuda_driver_version or "unknown")
        lines.append(f"NVIDIA driver {nv.driver_version or 'unknown'} (supports CUDA {cuda})")
        lines += [f"  GPU {i}: {g.name}, compute capability {g.compute_capability}"
                  + (f", {g.memory_mib} MiB" if g.memory_mib else "") for i, g in enumerate(nv.gpus)]
        if nv.unidentified_gpus:
            count = len(nv.unidentified_gpus)
            lines.append(f"  {count} NVIDIA GPU{'s' if count > 1 else ''}, model unknown "
                         f"({', '.join(sorted(set(nv.unidentified_gpus)))}): compute capability unknown; "
                         f"{HOW_TO_GET_CC}, then pass it with {COMPUTE_CAPABILITY_FLAG} X.Y")
    if profile.amd:
        missing = "not in the report" if any(s.startswith("report: ") for s in profile.sources) else "not installed"
        lines.append(f"ROCm {profile.amd.rocm_version or missing}"
                     + (f" at {profile.amd.rocm_root}" if profile.amd.rocm_root else ""))
        lines += [f"  GPU {i}: {g.name}, {g.gfx_arch}" for i, g in enumerate(profile.amd.gpus)]
        if profile.amd.unidentified_gpus:
            count = len(profile.amd.unidentified_gpus)
            lines.append(f"  {count} AMD GPU{'s' if count > 1 else ''}, model unknown "
                         f"({', '.join(sorted(set(profile.amd.unidentified_gpus)))}): gfx target unknown; "
                         f"{HOW_TO_GET_GFX}, then pass it with {GFX_FLAG} gfxNNN")
    if not profile.has_gpu and not profile.unidentified:
        lines.append("GPU: none found")
    return lines


def summary(profile) -> str:
    """A short readable report of a profile."""
    host = [f"platform {profile.platform}", f"Python {profile.python}"]
    if profile.glibc:
        host.append(f"glibc {profile.glibc}")
    if profile.wsl:
        host.append("WSL")
    if profile.container:
        host.append("container")
    lines = [", ".join(host)]
    lines += _gpu_lines(profile)
    lines.append(f"CUDA toolkit (nvcc): {profile.cuda_toolkit or 'none'}"
                 + (f"; ROCm toolkit (hipcc HIP): {profile.rocm_toolkit}" if profile.rocm_toolkit else ""))
    if profile.overrides:
        lines.append("overrides: " + ", ".join(f"{k}={v!r}" for k, v in profile.overrides))
    lines += [f"assumed: {sentence}" for _, sentence in profile.assumed]
    lines += [f"note: {n}" for n in profile.notes if n not in dict(profile.assumed).values()]
    return "\n".join(lines)


def run(args, out) -> int:
    from resolver.core.errors import BadInput
    from resolver.plan.probe.overrides import apply_gpu_arguments

    chosen = [flag for flag, value in (("--sysroot", args.sysroot), ("--capture", args.capture),
                                       ("--from-report", args.from_report)) if value]
    if len(chosen) > 1:
        raise BadInput(f"{' and '.join(chosen)} cannot be combined",
                       fix="use one of them")
    if args.from_report:
        from resolver.plan.probe.report import profile_from_report, read_report

        profile = apply_gpu_arguments(profile_from_report(read_report(args.from_report)), args)
        out.result(profile.to_json(), summary(profile))
        return 0
    if args.capture:
        from resolver.plan.probe.capture import capture_machine

        report = capture_machine(args.capture)
        human = (f"captured {report.files} files and {report.commands} tool runs into {report.folder}; "
                 f"replay with `python -m resolver probe --sysroot {report.folder}` "
                 f"{'gives the same profile' if report.replay_matches else 'DIFFERS from the live profile'}")
        out.result(report.to_json(), human)
        return 0
    from resolver.plan.probe import probe_machine

    profile = apply_gpu_arguments(probe_machine(args.sysroot), args)
    out.result(profile.to_json(), summary(profile))
    return 0
