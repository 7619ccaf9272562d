"""``setup``: probe → plan → lock (if stale) → install → patch → build → verify, resumable.

Every step is skipped when its inputs hash matches the stamp left by its last success
(:mod:`resolver.workflows.steps`), so a second run is near-instant. A plan for hardware that is not here
(``--target rocm6.0`` on a laptop, or a ``--profile`` of another machine) stops after the lock and
says what remains to be done on the target machine.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from resolver.core.errors import EnvironmentProblem, ResolverError
from resolver.core.model import Plan, Request
from resolver.core.ui import Output
from resolver.install.environment import Environment
from resolver.plan.probe.profile import HardwareProfile
from resolver.project.paths import ProjectPaths
from resolver.workflows.chain import Chain, ChainOptions, step_names
from resolver.workflows.steps import (
    Caveat,
    Stamps,
    StepLog,
    StepReport,
    append_to_log,
    jsonable,
    project_lock,
)

NAMES = {"kernels": "build"}  # the chain's steps as setup's step list names them
STEPS = ("probe", "plan", "lock", *step_names(NAMES))


@dataclass(frozen=True)
class SetupOptions:
    request: Request = Request()
    profile_file: Path | None = None
    dry_run: bool = False
    wait: bool = True
    force: bool = False  # ignore stamps and run every step
    kernel_channel: str | None = None  # a fleet's shared kernel channel (--kernel-channel)
    sources: tuple[tuple[str, Any], ...] = ()  # --channel, --torch-index, … as Sources.load(flags=) takes them


@dataclass
class SetupResult:
    plan: Plan | None = None
    environment: Path | None = None
    verify: dict[str, Any] | None = None
    remaining: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. the environment is a fallback pixi cannot install
    steps: list[StepReport] = field(default_factory=list)
    log_file: Path | None = None

    @property
    def complete(self) -> bool:
        return not self.remaining and all(s.status != "failed" for s in self.steps)

    @property
    def caveats(self) -> list[tuple[str, Caveat]]:
        """(step, caveat) of every step, in step order, each caveat once."""
        seen: dict[Caveat, str] = {}
        for step in self.steps:
            for caveat in step.caveats:
                seen.setdefault(caveat, step.name)
        return [(step, caveat) for caveat, step in seen.items()]


class Setup:
    """One run of the pipeline for one project; holds no state beyond the run."""

    def __init__(self, project: ProjectPaths, options: SetupOptions, log: StepLog, out: Output) -> None:
        self.project = project
        self.options = options
        self.log = log
        self.out = out
        self.stamps = Stamps(project.step_stamps)
        self.kernel_channel: str | None = None  # a fleet node's: kernels are fetched from it, not compiled
        self.fleet_class: str | None = None  # the fleet class this node set up, when pixi.toml records a fleet
        self.result = SetupResult(steps=log.reports, log_file=log.log_file)

    # -- the run ------------------------------------------------------------------------------
    def run(self) -> SetupResult:
        profile = self._probe()
        plan = self._plan(profile)
        self.result.plan = plan
        here = plan.runnable_here and self.options.profile_file is None
        self._lock(plan)
        if not here:
            for name in step_names(NAMES):
                self.log.add(StepReport(name, "deferred", "runs on the target machine"))
            self.result.remaining = self._remaining_on_target(plan)
            return self.result
        self._check_fallback(plan, profile)
        chain = Chain(self.project, plan, ChainOptions(
            dry_run=self.options.dry_run, force=self.options.force, stamps=self.stamps,
            relock_pending=self._would_run("lock"), kernel_channel=self.kernel_channel, sources=self._sources),
            self._record, detail=self._detail, out=self.out)
        chain.run()
        self.result.environment = chain.env.path if chain.env else None
        self.result.verify = chain.verify_report
        return self.result

    def _record(self, name: str, step) -> StepReport:
        return self.log.timed(NAMES.get(name, name), lambda: step().parts())

    # -- steps --------------------------------------------------------------------------------
    def _probe(self) -> HardwareProfile:
        def action():
            if self.options.profile_file is not None:
                profile = HardwareProfile.from_file(self.options.profile_file)
                return "done", f"read {self.options.profile_file} (another machine)", profile
            from resolver.plan.probe import probe_machine

            profile = probe_machine()
            return "done", describe_profile(profile), profile
        return self.log.timed("probe", action).result

    def _plan(self, profile: HardwareProfile) -> Plan:
        def action():
            from resolver.plan.planning import plan_of

            request, chosen = self.options.request, None
            if self.options.profile_file is None and request == Request():
                from resolver.project.pixi_toml import default_choice

                chosen = default_choice(self.project)  # pixi.toml names the default environment and its request
                request = chosen.request() if chosen is not None else request
            plan = plan_of(profile, request)
            fleet = ""
            if chosen is not None and chosen.environment != plan.env_name:
                plan = replace(plan, environment=chosen.environment)
                fleet = f"the project's default environment {chosen.environment}"
            elif chosen is None and self.options.profile_file is None and request.target.backend == "auto":
                from resolver.workflows.fleet_node import join_fleet

                plan, self.kernel_channel, fleet = join_fleet(self.project, plan, profile,
                                                                  self.options.kernel_channel)
                self.fleet_class = plan.env_name if fleet else None
            if self._builds_here(plan) and plan.kernels.toolkit_source == "missing":  # a fleet node too: it names
                raise missing_compiler(plan, profile)  # its variants by the compiler's version
            from resolver.workflows.setup.caveats import plan_caveats

            return "done", f"torch {plan.torch.version} ({_variant_words(plan)}), kernels: {plan.kernels.strategy}" \
                + (f"; {fleet}" if fleet else ""), plan, plan_caveats(plan)
        return self.log.timed("plan", action).result

    def _sources(self):
        from resolver.project.sources import Sources

        return Sources.load(self.project.root, flags=dict(self.options.sources))

    def _lock(self, plan: Plan) -> None:
        from resolver import lock as locking
        from resolver.lock import current
        from resolver.workflows.setup.caveats import lock_caveats

        def action():
            reasons = () if self.options.force else \
                current.lock_status(self.project, [plan], remember=not self.options.dry_run).about(plan.env_name)
            if not self.options.force and not reasons:
                return "skipped", f"pixi.lock is current for {plan.env_name}", None, lock_caveats(self.project, plan)
            why = f"{reasons[0].sentence}" + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else "") \
                if reasons else "--force"
            if self.fleet_class:  # a node never relocks the fleet's shared lock on its own
                from resolver.core.errors import BadInput

                raise BadInput(f"pixi.lock does not hold fleet class {plan.env_name} as this node plans it ({why})",
                               fix="lock the fleet again (`python -m resolver lock --fleet DIR`) and share pixi.toml "
                                   "and pixi.lock")
            if self.options.dry_run:
                return "would-run", f"relock: {why}", None
            self._detail("lock")(f"pixi.lock is stale: {why}")
            summary = locking.lock_plans(self.project, [plan], sources=self._sources(), info=self._detail("lock"))
            detail = f"locked environment {plan.env_name} into pixi.lock ({why})"
            if summary.added:
                detail += f"; added to pixi.toml: {', '.join(summary.added)}"
            if summary.carried_over:
                detail += f"; kept as they were: {', '.join(summary.carried_over)}"
            return "done", detail, jsonable(dataclasses.replace(summary, reasons=reasons)), \
                lock_caveats(self.project, plan, summary.notes)
        self.log.timed("lock", action)

    def _check_fallback(self, plan: Plan, profile: HardwareProfile) -> None:
        """A fallback environment (no conda channel answered) is said in the summary; it brings no CUDA
        toolkit, so its kernels need this machine's: refused now, before the install, when there is none."""
        from resolver import install as installing

        try:
            locked = installing.locked_environment(self.project, plan.env_name)
        except ResolverError:
            return  # a dry run before the first lock
        if not locked.fallback:
            return
        self.result.notes.append(locked.fallback_note)
        if self._builds_here(plan) and plan.kernels.toolkit_source == "environment":
            have = profile.cuda_toolkit
            cuda = plan.backend_version
            if have is None or cuda is None or have.major != cuda.major:
                raise missing_compiler(plan, profile, because=f"environment {plan.env_name} is a fallback without "
                                                              "its own CUDA toolkit (no conda channel answered)")

    def _would_run(self, step: str) -> bool:
        return any(s.name == step and s.status == "would-run" for s in self.result.steps)

    def _builds_here(self, plan: Plan) -> bool:
        return plan.runnable_here and self.options.profile_file is None and plan.kernels.strategy != "none"

    def _detail(self, step: str):
        """Lines a long step prints while it works, indented under the step list."""
        return lambda text: self.out.info(f"      {step}: {text.strip()}")

    def _remaining_on_target(self, plan: Plan) -> list[str]:
        todo = [f"copy this project (pixi.toml, pixi.lock) to the {plan.backend} machine",
                f"run `python -m resolver setup --target {plan.target}` (or `pixi run setup`) there: it installs "
                f"environment {plan.env_name} from pixi.lock"]
        if plan.patches:
            todo.append("it applies " + ", ".join(p.id for p in plan.patches) + " into an overlay (no root needed)")
        if plan.kernels.strategy != "none":
            todo.append(f"it builds causal-conv1d and mamba-ssm for {', '.join(plan.kernels.arch_list) or 'the GPUs there'}")
        todo.append("and verifies a Mamba model against the reference implementation")
        return todo


def missing_compiler(plan: Plan, profile: HardwareProfile, because: str | None = None) -> EnvironmentProblem:
    """The kernels cannot be built here: said before anything is installed."""
    name, version = (plan.kernels.toolkit or "nvcc ?").split(" ", 1)
    major = version.split(".")[0]
    have = profile.cuda_toolkit if name == "nvcc" else profile.rocm_toolkit
    other = f", or plan for the {name} you have with --target {plan.backend}{have.major}" if have else ""
    home = "CUDA_HOME" if name == "nvcc" else "ROCM_PATH"
    channel = ("make a conda channel reachable (a conda-forge mirror: --channel DIR or [tool.resolver] conda-channels) "
               "so the environment brings its own nvcc, or ") if because else ""
    return EnvironmentProblem(
        (f"{because}: " if because else "")
        + f"the kernels need {name} {major}.x to match torch {plan.torch.version}+{plan.torch.variant}, and this machine "
        f"has {f'{name} {have}' if have else f'no {name}'}",
        fix=f"{channel}install the {'CUDA' if name == 'nvcc' else 'ROCm'} {major} toolkit (or point {home} at one){other}")


def describe_profile(profile: HardwareProfile) -> str:
    parts = []
    if profile.nvidia and profile.nvidia.gpus:
        names = sorted({f"{g.name} (sm_{g.compute_capability.major}{g.compute_capability.minor})" for g in profile.nvidia.gpus})
        parts.append(f"NVIDIA driver {profile.nvidia.driver_version}: {', '.join(names)}")
    if profile.amd and profile.amd.gpus:
        names = sorted({f"{g.name} ({g.gfx_arch})" for g in profile.amd.gpus})
        parts.append(f"ROCm {profile.amd.rocm_version}: {', '.join(names)}")
    if not parts:
        parts.append("no GPU")
    if profile.cuda_toolkit:
        parts.append(f"CUDA toolkit {profile.cuda_toolkit}")
    parts.append(f"{profile.platform}, glibc {profile.glibc or 'n/a'}, Python {profile.python}")
    return "; ".join(parts)


def _variant_words(plan: Plan) -> str:
    """The build of torch in words that do not repeat the backend ("cpu build", "cu130 build")."""
    return f"{plan.torch.variant} build"


def run_setup(project: ProjectPaths, options: SetupOptions, *, quiet: bool = False, json_mode: bool = False,
              on_wait=None) -> SetupResult:
    """Run the whole pipeline under the project lock; progress lines go to stderr under ``json_mode``.

    A dry run writes nothing at all: no log file, no project lock file, no stamps (it still waits
    for a run in progress, so what it reports is not half-written)."""
    log_file = None
    if not options.dry_run:
        from resolver.core.fs import new_log
        from resolver.core.names import printable

        # a new file (a name taken by anything, a link someone planted included, gets -2, -3, ...)
        log_file = new_log(project.logs / f"setup-{time.strftime('%Y%m%d-%H%M%S')}.log")
        append_to_log(log_file, f"mamba-resolver setup in {printable(str(project.root))}\n"
                                f"(started {time.strftime('%Y-%m-%d %H:%M:%S')})")
    log = StepLog(quiet=quiet, to_stderr=json_mode, log_file=log_file)
    out = Output(json_mode=json_mode, quiet=quiet, log_file=log_file)
    try:
        with project_lock(project.stamps, wait=options.wait, on_wait=on_wait, read_only=options.dry_run):
            return Setup(project, options, log, out).run()
    except ResolverError as exc:  # the command prints it once; the log keeps it with the steps
        append_to_log(log_file, f"error: {exc}")
        raise
    except KeyboardInterrupt:
        append_to_log(log_file, "interrupted")
        raise


def summary_text(result: SetupResult, *, dry_run: bool = False) -> str:
    """The closing paragraph a person reads: what was chosen and why, where it is and how to live in it
    (enter it, add a package so pixi.lock follows), every caveat again with its fix, what verify found."""
    lines = [""]
    plan = result.plan
    if plan is not None:
        lines.append(plan.summary or f"Chose torch {plan.torch.version} ({plan.torch.variant}).")
    if result.environment is not None:
        lines += environment_lines(result.environment)
    if result.verify:
        lines.append(f"verify: {result.verify.get('summary', 'passed' if result.verify.get('ok') else 'failed')}")
    if result.remaining:
        lines.append("Prepared here; to finish on the target machine:")
        lines.extend(f"  - {item}" for item in result.remaining)
    caveats = result.caveats
    if caveats:
        lines.append(f"{len(caveats)} caveat{'s' if len(caveats) > 1 else ''}:")
        for step, caveat in caveats:
            lines.append(f"  ! {step}: {caveat.text}")
            if caveat.fix:
                lines.append(f"    Fix: {caveat.fix}")
    if dry_run:
        would = [s.name for s in result.steps if s.status == "would-run"]
        lines.append("dry run: nothing was changed; " + (f"a real run would run {', '.join(would)}." if would else
                                                         "everything is current, a real run would skip every step."))
    if result.log_file:
        lines.append(f"Log: {result.log_file} (everything shown above)")
    return "\n".join(lines)


def environment_lines(path: Path) -> list[str]:
    """Where the environment is, how to enter it, how to add a package so that pixi.lock follows, and
    what a pip install by hand leads to."""
    name = path.name
    conda = Environment.kind_of(path) == "conda"
    lines = [f"Environment: {path}",
             f"Enter it with: source {path / 'bin' / 'activate'}" + (f"   (or, with pixi: pixi shell -e {name})"
                                                                      if conda else "")]
    lines.append(f"Add a package so pixi.lock follows: `python -m resolver add -e {name} --pypi NAME` (only the "
                 f"difference is installed), or NAME = \"*\" under [feature.{name}.pypi-dependencies] in pixi.toml, "
                 "then `python -m resolver setup`")
    lines.append(f"A package pip-installed by hand is in no teammate's environment: `python -m resolver doctor --env "
                 f"{name}` names each one")
    return lines
