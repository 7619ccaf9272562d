"""Run the in-environment verifier and read its report (the resolver side: no torch here)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from resolver.core.errors import BadInput, EnvironmentProblem
from resolver.install.environment import Environment
from resolver.project.paths import ProjectPaths
from resolver.verify.inenv.answers import VerifyReport


@dataclass(frozen=True)
class InEnvResult:
    env: Environment
    report: VerifyReport
    wall_s: float
    stderr_tail: str


def resolve_model(project: ProjectPaths, model: str | None) -> Path:
    """``--model DIR`` checked for config.json + *.safetensors, or the cached tiny checkpoint."""
    from resolver.verify.checkpoint import default_checkpoint

    if not model:
        return default_checkpoint(project.verify_models)
    folder = Path(model).expanduser().resolve()
    if not folder.is_dir():
        raise BadInput(f"--model {model} is not a folder", fix="pass a folder holding config.json and model.safetensors")
    if not (folder / "config.json").is_file() or not (list(folder.glob("*.safetensors"))
                                                       or (folder / "pytorch_model.bin").is_file()):
        raise BadInput(f"--model {model} has no config.json with *.safetensors or pytorch_model.bin",
                            fix="save the model with `save_pretrained(...)` or omit --model to use the built-in "
                                "tiny checkpoint")
    check_model_config(folder)
    return folder


CONFIG_LIMIT = 4 << 20  # a config.json is a few kB
_DIMENSIONS = {"num_hidden_layers": 4096, "n_layer": 4096, "hidden_size": 1 << 16, "d_model": 1 << 16,
               "vocab_size": 1 << 22, "state_size": 4096, "d_state": 4096, "conv_kernel": 256, "d_conv": 256,
               "expand": 64, "time_step_rank": 1 << 16, "dt_rank": 1 << 16, "intermediate_size": 1 << 20}


def check_model_config(folder: Path) -> dict:
    """The checkpoint's config.json, read bounded and checked before any process builds a model from it:
    every dimension a whole number within reason, and the model it describes no larger than its weight
    files can hold (``num_hidden_layers = 1e8`` would otherwise allocate until memory runs out)."""
    from resolver.core.fs import parse_json, read_bytes_bounded

    path = folder / "config.json"
    fix = "use the config.json that came with the model's weights"
    cfg = parse_json(read_bytes_bounded(path, limit=CONFIG_LIMIT, what="the model's config", fix=fix),
                     what=str(path), fix=fix)
    if not isinstance(cfg, dict):
        raise BadInput(f"{path} is not a JSON object", fix=fix)
    ssm = cfg.get("ssm_cfg") if isinstance(cfg.get("ssm_cfg"), dict) else {}
    dims: dict[str, int] = {}
    for table in (cfg, ssm):
        for key, cap in _DIMENSIONS.items():
            value = table.get(key)
            if value is None or value == "auto":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
                raise BadInput(f"{path}: {key} = {str(value)[:40]} is not a whole number from 1 to {cap}", fix=fix)
            dims[key] = value
    d = dims.get("hidden_size") or dims.get("d_model")
    layers = dims.get("num_hidden_layers") or dims.get("n_layer")
    vocab = dims.get("vocab_size")
    if d and layers and vocab:
        inner = (dims.get("expand") or 2) * d
        state = dims.get("state_size") or dims.get("d_state") or 16
        rank = dims.get("time_step_rank") or dims.get("dt_rank") or -(-d // 16)
        per_layer = inner * (2 * d + (dims.get("conv_kernel") or dims.get("d_conv") or 4) + 2 * rank + 3 * state + d)
        params = vocab * d + layers * per_layer
        weights = sum(p.stat().st_size for p in [*folder.glob("*.safetensors"), folder / "pytorch_model.bin"]
                      if p.is_file())
        if params > 4 * weights + (1 << 20):  # even at a quarter byte per parameter the files could not hold it
            raise BadInput(f"{path} describes a model of about {params / 1e6:,.0f} M parameters, but its weight "
                           f"files hold only {weights / (1 << 20):,.1f} MiB", fix=fix)
    return cfg


def run_in_env(env: Environment, model: Path, extra: list[str], *, timeout: float = 1800) -> InEnvResult:
    started = time.perf_counter()
    from resolver.kernels.packages import kernel_module_args

    answer = env.call("resolver.verify.inenv.verify", ["--model", str(model), *kernel_module_args(), *extra], timeout=timeout)
    wall = time.perf_counter() - started
    if answer.completed.timed_out:
        raise EnvironmentProblem(f"the check in environment '{env.name}' did not finish within {timeout:.0f} s",
                                 fix=f"run `python -m resolver doctor --env {env.name}` to find what hangs")
    if answer.document is None:
        raise EnvironmentProblem(f"the Python of environment '{env.name}' could not run the check ({answer.failure})",
                                 fix=f"run `python -m resolver doctor --env {env.name}`; if torch is missing, "
                                     f"`python -m resolver install --env {env.name}`")
    report = VerifyReport.from_json(answer.document)
    fatal = report.fatal
    if fatal and ("No module named" in fatal or "torch" in fatal.split(":", 1)[0]):
        missing = fatal.split("No module named", 1)[-1].strip(" '\"") if "No module named" in fatal else "torch"
        raise EnvironmentProblem(f"environment '{env.name}' cannot run the check: {fatal[:300]}",
                                 because=f"{missing} is not importable in {env.path}",
                                 fix=f"run `python -m resolver install --env {env.name} --force`, then "
                                     f"`python -m resolver doctor --env {env.name}`")
    return InEnvResult(env, report, wall, (answer.completed.stderr or "")[-4000:])
