"""`python -m resolver doctor [--env NAME] [--log FILE|-] [--json]`: what is wrong, and the exact fix.

Without --log: checks the environment (torch imports; torch's CUDA/HIP vs the driver; each GPU vs
torch's and the kernels' architectures; the kernel extensions' ABI; the ROCm 6.0 header; build
tools; pixi.lock vs what is installed). With --log: matches the log against known error signatures
from real upstream reports (resolver/doctor/signatures.toml) and prints the cause and the fix
command for this project's environment (or, for a log from a Python outside the project, what to
run on that machine); add --env to check the environment as well. The work is the doctor stage's
(resolver/doctor/run.py); this module reads the command line.

Exit 0 when nothing is wrong; 1 when a check failed or a known error was found in the log; 8 when
the log holds no error doctor knows (its last lines and the next step are shown).
"""

from __future__ import annotations

HELP = "diagnose an environment and/or an error log: the cause and the exact fix command"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument

    add_env_argument(parser, "to check")
    parser.add_argument("--log", metavar="FILE", help="a log to diagnose; - reads stdin")
    parser.add_argument("--extension", metavar="MODULE", action="append", default=[],
                        help="also check that this compiled extension module loads (repeatable)")
    parser.add_argument("--sysroot", metavar="DIR",
                        help="judge the environment against a captured machine (`probe --capture`) instead of this one")


def run(args, out) -> int:
    from resolver.doctor.run import DoctorRequest, diagnose
    from resolver.project.paths import ProjectPaths

    result = diagnose(ProjectPaths.discover(), DoctorRequest(env=args.env, log=args.log, extensions=tuple(args.extension),
                                                             sysroot=args.sysroot), info=out.info)
    out.result(result.document, result.human)
    return result.exit_code
