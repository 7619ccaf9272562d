"""Run the in-environment verifier and read its report (the resolver side: no torch here).

>>> parse_output("noise\\nRESOLVER-JSON {\\"ok\\": true}\\n")
{'ok': True}
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from resolver.environment import Environment
from resolver.errors import BadInput, EnvironmentProblem
from resolver.paths import ProjectPaths

MARKER = "RESOLVER-JSON "


def parse_output(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER):])
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class InEnvResult:
    env: Environment
    report: dict
    wall_s: float
    stderr_tail: str


def resolve_model(project: ProjectPaths, model: str | None) -> Path:
    """``--model DIR`` checked for config.json + *.safetensors, or the cached tiny checkpoint."""
    from resolver.verify.checkpoint import default_checkpoint

    if not model:
        return default_checkpoint(project.cache)
    folder = Path(model).expanduser().resolve()
    if not folder.is_dir():
        raise BadInput(f"--model {model} is not a folder", fix="pass a folder holding config.json and model.safetensors")
    if not (folder / "config.json").is_file() or not (list(folder.glob("*.safetensors"))
                                                       or (folder / "pytorch_model.bin").is_file()):
        raise BadInput(f"--model {model} has no config.json with *.safetensors or pytorch_model.bin",
                            fix="save the model with `save_pretrained(...)` or omit --model to use the built-in "
                                "tiny checkpoint")
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInput(f"{folder / 'config.json'} is not valid JSON ({exc})",
                            fix="restore the file from the model's source") from exc
    return folder


def run_in_env(env: Environment, model: Path, extra: list[str], *, timeout: float = 1800) -> InEnvResult:
    args = ["-m", "resolver.inenv.verify", "--model", str(model), *extra]
    started = time.perf_counter()
    try:
        proc = env.run_python(args, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentProblem(f"the check in environment '{env.name}' did not finish within {timeout:.0f} s",
                                 fix=f"run `python -m resolver doctor --env {env.name}` to find what hangs") from exc
    wall = time.perf_counter() - started
    report = parse_output(proc.stdout)
    if report is None:
        tail = (proc.stderr or "")[-2000:]
        last = next((line for line in reversed(tail.splitlines()) if line.strip()), "no output")
        raise EnvironmentProblem(f"the Python of environment '{env.name}' could not run the check ({last.strip()[:300]})",
                                 fix=f"run `python -m resolver doctor --env {env.name}`; if torch is missing, "
                                     f"`python -m resolver install --env {env.name}`")
    fatal = report.get("fatal")
    if fatal and ("No module named" in fatal or "torch" in fatal.split(":", 1)[0]):
        missing = fatal.split("No module named", 1)[-1].strip(" '\"") if "No module named" in fatal else "torch"
        raise EnvironmentProblem(f"environment '{env.name}' cannot run the check: {fatal[:300]}",
                                 because=f"{missing} is not importable in {env.path}",
                                 fix=f"run `python -m resolver install --env {env.name} --force`, then "
                                     f"`python -m resolver doctor --env {env.name}`")
    return InEnvResult(env, report, wall, (proc.stderr or "")[-4000:])
