"""``bench``: how fast an environment runs the model, and (with a second environment) whether two
environments agree.

Measures prompt processing (tokens/s of one forward pass over the prompt) and decoding (tokens/s of
greedy one-token steps) through the environment's library and through our reference, inside the
environment (:mod:`resolver.verify.inenv.verify` in bench mode). Compared with another environment, the same
checkpoint and the same prompt run in both: the logits must agree within the dtype's tolerance, the
generations must be equal, and the speed ratio OTHER/ENV is reported: a migration checked before
and after a change.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from resolver.core.errors import BadInput
from resolver.project.paths import ProjectPaths


@dataclass(frozen=True)
class BenchRequest:
    env: str | None = None  # None: the only environment installed
    model: str | None = None  # None: the tiny generated checkpoint
    compare: str | None = None  # the other environment
    batch: int = 1
    prompt_len: int = 64
    prompt_lens: tuple[int, ...] = ()  # several prompt lengths measured in one run
    new_tokens: int = 16
    repeat: int = 5
    dtype: str = ""  # "" = float32 on CPU, bfloat16 on GPU
    cpu: bool = False

    def inputs(self) -> dict[str, Any]:
        return {"batch": self.batch, "prompt_len": self.prompt_len, "prompt_lens": list(self.prompt_lens),
                "new_tokens": self.new_tokens, "repeat": self.repeat}


def bench(project: ProjectPaths, request: BenchRequest, info: Callable[[str], None] = lambda text: None) -> dict:
    """The bench document: ``model``, ``inputs``, ``runs`` (one per environment), ``compare`` (with a
    second environment), ``ok``."""
    from resolver.install.environment import Environment
    from resolver.verify.in_env import resolve_model

    if min(request.batch, request.prompt_len, request.new_tokens, request.repeat) < 1:
        raise BadInput("--batch, --prompt-len, --new-tokens and --repeat must be at least 1", fix="pass positive numbers")
    model = resolve_model(project, request.model)  # a bad --model is reported before anything else
    env = Environment.find(project, request.env)
    other = Environment.find(project, request.compare) if request.compare else None
    with tempfile.TemporaryDirectory(prefix="resolver-bench-") as tmp:
        dumps = Path(tmp) / "a.f32", Path(tmp) / "b.f32"
        runs = [_run(env, model, request, dumps[0], info)]
        doc: dict[str, Any] = {"model": str(model), "inputs": request.inputs(), "runs": runs}
        if other is not None:
            runs.append(_run(other, model, request, dumps[1], info))
            doc["compare"] = _compare(env.name, other.name, runs, dumps, request.new_tokens)
    doc["ok"] = all(r["ok"] for r in runs) and doc.get("compare", {}).get("numerics", {}).get("ok", True)
    return doc


def _run(env, model: Path, request: BenchRequest, dump: Path, info: Callable[[str], None]) -> dict:
    from resolver.verify import report as rep
    from resolver.verify.in_env import run_in_env

    extra = ["--mode", "bench", "--batch", str(request.batch), "--prompt-len", str(request.prompt_len),
             "--new-tokens", str(request.new_tokens), "--repeat", str(request.repeat), "--dump-logits", str(dump)]
    if request.dtype:
        extra += ["--dtypes", request.dtype]
    if request.cpu:
        extra.append("--cpu")
    lengths = ",".join(str(n) for n in request.prompt_lens)
    if lengths:
        extra += ["--prompt-lens", lengths]
    info(f"benchmarking environment '{env.name}'" + (f" at prompt lengths {lengths}" if lengths else "") + " ...")
    result = run_in_env(env, model, extra)
    doc = rep.document(result.report, env_name=env.name, wall_s=result.wall_s, driver={})
    dtype = next(iter(doc["results"]), None)
    entry = doc["results"].get(dtype, {}) if dtype else {}
    return {"env": env.name, "ok": doc["ok"], "dtype": dtype, "device": (doc.get("device") or {}).get("used"),
            "torch": doc["versions"]["torch"], "library": (doc.get("library") or {}).get("name"),
            "bench": entry.get("bench"), "by_prompt_len": entry.get("bench_by_prompt_len"), "checks": doc["checks"],
            "errors": doc["errors"], "wall_s": doc["timings"]["wall_s"]}


def _compare(env: str, other: str, runs: list[dict], dumps: tuple[Path, Path], new_tokens: int) -> dict:
    from resolver.verify.bench_text import speed_ratio
    from resolver.verify.compare import compare_dumps
    from resolver.verify.inenv.models import TOLERANCE  # plain data; this import pulls no torch

    if runs[0]["dtype"] != runs[1]["dtype"]:
        raise BadInput(f"the two environments ran different dtypes ({runs[0]['dtype']} vs {runs[1]['dtype']})",
                       fix="pass the same --dtype for both, e.g. --dtype float32")
    if dumps[0].is_file() and dumps[1].is_file():
        numerics = compare_dumps(*dumps, tolerance=TOLERANCE.get(runs[0]["dtype"] or "float32", 1e-3))
    else:
        numerics = {"ok": False, "why": "one environment produced no logits (see its errors)"}
    ba, bb = (runs[0].get("bench") or {}).get("library"), (runs[1].get("bench") or {}).get("library")
    ratio = ({"prefill": speed_ratio("prompt", ba, bb, new_tokens), "decode": speed_ratio("decode", ba, bb, new_tokens)}
             if ba and bb else None)  # None: too noisy to mean anything
    return {"env": env, "other": other, "numerics": numerics, "speed_ratio_other_over_env": ratio}
