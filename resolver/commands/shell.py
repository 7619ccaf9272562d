"""`python -m resolver shell [-e ENV] [--hook]`: enter an environment, as `pixi shell -e ENV` does.

On a terminal it starts your shell ($SHELL) with the environment activated (`exit` leaves it). With stdin
not a terminal it runs the commands read from stdin in that shell, non-interactively, and exits with its
code. `--hook` prints the activation as shell code instead (as `pixi shell-hook`: `eval "$(python -m
resolver shell --hook -e cpu)"`); `--json` prints the activation variables."""

from __future__ import annotations

HELP = "enter an environment (as `pixi shell`); stdin not a terminal: run the commands it holds there"

SH_LIKE = ("bash", "zsh", "sh", "dash", "ksh")


def add_arguments(parser) -> None:
    from resolver.commands.flags import add_env_argument

    add_env_argument(parser, "to enter", default="the project's default, else the only one installed")
    parser.add_argument("--hook", action="store_true",
                        help="print the activation as shell code to eval (as `pixi shell-hook`), start no shell")


def run(args, out) -> int:
    import os
    import shlex
    import sys

    from resolver.install.environment import Environment
    from resolver.project.paths import ProjectPaths
    from resolver.tools import proc

    env = Environment.find(ProjectPaths.discover(), args.env)
    environ = env.activated_environ()
    if args.hook or args.json:
        changed = {k: v for k, v in sorted(environ.items()) if os.environ.get(k) != v and k not in ("SHLVL", "PWD", "OLDPWD")}
        script = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in changed.items())
        out.result({"environment": env.name, "path": str(env.path), "environment_variables": changed,
                    "script": script}, script)
        return 0
    shell = os.environ.get("SHELL") or "/bin/sh"
    name = os.path.basename(shell)
    if name not in SH_LIKE:
        shell, name = "/bin/sh", "sh"
    if not sys.stdin.isatty():
        return proc.attached([shell, "-s"], env=environ)
    out.info(f"entering environment '{env.name}' ({env.path}); `exit` leaves it")
    if name != "bash":
        return proc.attached([shell, "-i"], env=environ)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="resolver-shell-") as folder:
        from resolver.core.fs import write_text_atomic

        rc = os.path.join(folder, "bashrc")
        write_text_atomic(rc, 'if [ -f "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi\n'  # the user's own rc first,
                          f'PS1={shlex.quote(f"({env.name}) ")}"${{PS1-}}"\n', label="shell-rc")  # then the prompt
        return proc.attached([shell, "--rcfile", rc, "-i"], env=environ)
