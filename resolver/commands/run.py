"""`python -m resolver run [-e ENV] CMD [ARG...]`: run a command inside an environment, as `pixi run -e ENV
CMD` does: the environment's bin first on PATH and its activation variables set; the exit code is the
command's. With --json the command's output is captured and handed back in the document."""

from __future__ import annotations

import argparse

HELP = "run a command inside an environment (as `pixi run -e ENV CMD`); exits with the command's code"


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument

    add_env_argument(parser, "to run in", default="the project's default, else the only one installed")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD",
                        help="the command and its arguments (everything after it is the command's)")


def run(args, out) -> int:
    import shutil
    import time

    from resolver.core.errors import BadInput, UsageError
    from resolver.install.environment import Environment
    from resolver.project.paths import ProjectPaths
    from resolver.tools import proc

    cmd = list(args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd)
    if not cmd:
        raise UsageError("run needs a command to run", fix="e.g. `python -m resolver run -e cpu python -c 'import torch'`")
    env = Environment.find(ProjectPaths.discover(), args.env)
    environ = env.activated_environ()
    program = shutil.which(cmd[0], path=environ.get("PATH"))
    if program is None:
        raise BadInput(f"no command {cmd[0]!r} in environment '{env.name}' nor on PATH",
                       fix="check its spelling, or add the package that brings it "
                           f"(`python -m resolver add -e {env.name} --pypi NAME`)")
    if not args.json:
        return proc.attached([program, *cmd[1:]], env=environ)
    started = time.monotonic()
    done = proc.run([program, *cmd[1:]], timeout=24 * 3600, env=environ)
    out.result({"environment": env.name, "path": str(env.path), "command": cmd, "exit_code": done.returncode,
                "stdout": done.stdout, "stderr": done.stderr, "seconds": round(time.monotonic() - started, 3)}, "")
    return done.returncode
