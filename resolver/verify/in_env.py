"""Run the in-environment verifier and read its report (the resolver side: no torch here)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from resolver.errors import BadInput, EnvironmentProblem
from resolver.install.environment import Environment
from resolver.paths import ProjectPaths


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
    started = time.perf_counter()
    from resolver.kernels.packages import kernel_module_args

    answer = env.call("resolver.inenv.verify", ["--model", str(model), *kernel_module_args(), *extra], timeout=timeout)
    wall = time.perf_counter() - started
    if answer.completed.timed_out:
        raise EnvironmentProblem(f"the check in environment '{env.name}' did not finish within {timeout:.0f} s",
                                 fix=f"run `python -m resolver doctor --env {env.name}` to find what hangs")
    report = answer.document
    if report is None:
        raise EnvironmentProblem(f"the Python of environment '{env.name}' could not run the check ({answer.failure})",
                                 fix=f"run `python -m resolver doctor --env {env.name}`; if torch is missing, "
                                     f"`python -m resolver install --env {env.name}`")
    fatal = report.get("fatal")
    if fatal and ("No module named" in fatal or "torch" in fatal.split(":", 1)[0]):
        missing = fatal.split("No module named", 1)[-1].strip(" '\"") if "No module named" in fatal else "torch"
        raise EnvironmentProblem(f"environment '{env.name}' cannot run the check: {fatal[:300]}",
                                 because=f"{missing} is not importable in {env.path}",
                                 fix=f"run `python -m resolver install --env {env.name} --force`, then "
                                     f"`python -m resolver doctor --env {env.name}`")
    return InEnvResult(env, report, wall, (answer.completed.stderr or "")[-4000:])
