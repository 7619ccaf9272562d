"""The stage chain, written once: install → patch → kernels → verify.

Every workflow that makes an environment ready runs these steps, in this order, through :class:`Chain`:
``setup`` runs all four with its skip stamps and its step list (a fleet node is a setup whose kernels come
from the fleet's channel), ``upgrade`` runs install, patch and kernels into the new environment (its proof
takes verify's place), and a fleet's CI build of one kernel variant runs install and kernels. A workflow
says which steps it runs and hands in ``record``, how a step is timed and shown (setup's step log,
upgrade's timings); what each step runs, and when it is skipped, is here.

The patch stage makes the ROCm header overlay (:func:`apply_patches`, its one caller); the kernel build
only receives the overlay's path (:func:`overlay_for_build`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from resolver.core.errors import CheckFailed, EnvironmentProblem
from resolver.core.fingerprint import fingerprint
from resolver.core.model import Plan
from resolver.install.environment import READY_MARKER, Environment, ready_record
from resolver.kernels.summary import BuildOptions
from resolver.project.paths import ProjectPaths
from resolver.workflows.steps import Caveat, Stamps, jsonable

STEPS = ("install", "patch", "kernels", "verify")


@dataclass(frozen=True)
class Outcome:
    """How a step ended: done | skipped | not-needed | would-run, in words, with what it made and what it leaves
    wrong although it succeeded."""

    status: str
    detail: str
    result: Any = None
    caveats: tuple[Caveat, ...] = ()

    def parts(self) -> tuple:
        return self.status, self.detail, self.result, self.caveats


@dataclass(frozen=True)
class ChainOptions:
    """What a workflow asks of the chain."""

    steps: tuple[str, ...] = STEPS  # run in the chain's order whatever order they are named in
    dry_run: bool = False  # say what would run; write nothing
    force: bool = False  # ignore the stamps
    stamps: Stamps | None = None  # skip records of install and verify (setup's); None: both always run
    relock_pending: bool = False  # a dry run whose lock step would relock: the install follows the new lock
    kernel_channel: str | None = None  # a fleet node's: kernels are fetched from it, not compiled
    build: BuildOptions | None = None  # the kernel build when there is no plan (a fleet class's variant)
    sources: Callable[[], Any] | None = field(default=None, compare=False)  # the install's Sources, loaded when needed


Record = Callable[[str, Callable[[], Outcome]], Any]


class Chain:
    """One run of the chain for one environment (``plan``'s, or ``env_name`` when there is no plan)."""

    def __init__(self, project: ProjectPaths, plan: Plan | None, options: ChainOptions, record: Record, *,
                 env_name: str | None = None, detail: Callable[[str], Callable[[str], None]] | None = None,
                 out=None) -> None:
        self.project, self.plan, self.options, self.out = project, plan, options, out
        self.env_name = env_name or plan.env_name
        self._record = record
        self._detail = detail or (lambda step: lambda text: None)
        self.env: Environment | None = None
        self.statuses: dict[str, str] = {}
        self.kernel_modules: tuple[str, ...] = ()  # what the build installed, for verify to load
        self.build_summary = None  # the kernel build's BuildSummary, when it ran
        self.verify_report: dict[str, Any] | None = None

    def run(self) -> Chain:
        for name in STEPS:
            if name in self.options.steps:
                self._record(name, self._noted(name))
                if name == "install":
                    self.env = self._environment()
        return self

    def _noted(self, name: str) -> Callable[[], Outcome]:
        step = getattr(self, f"_{name}")

        def run() -> Outcome:
            outcome = step()
            self.statuses[name] = outcome.status
            return outcome
        return run

    def _environment(self) -> Environment | None:
        if self.options.dry_run and ready_record(self.project.env(self.env_name)) is None:
            return None
        return Environment.find(self.project, self.env_name)

    # -- the steps ----------------------------------------------------------------------------
    def _install(self) -> Outcome:
        from resolver import install as installing

        name, options, stamps = self.env_name, self.options, self.options.stamps
        env_path = self.project.env(name)
        if options.dry_run and options.relock_pending:
            return Outcome("would-run", f"after the new lock, if it changes environment {name}")
        if stamps is not None:
            inputs = fingerprint(installing.locked_environment_digest(self.project, name), READY_MARKER,
                            env_path / READY_MARKER)
            if not options.force and ready_record(env_path) is not None and stamps.is_current("install", inputs):
                return Outcome("skipped", f"{env_path} matches pixi.lock")
        if options.dry_run:
            return Outcome("would-run", f"environment {name} is missing or differs from pixi.lock")
        summary = installing.install_environment(self.project, name, info=self._detail("install"),
                                                 progress=self.out.progress if self.out else None,
                                                 sources=options.sources() if options.sources else None)
        if stamps is not None:
            stamps.write("install", fingerprint(installing.locked_environment_digest(self.project, name), READY_MARKER,
                                           env_path / READY_MARKER), jsonable(summary))
        return Outcome("done", f"installed {name} at {env_path}", jsonable(summary))

    def _patch(self) -> Outcome:
        plan = self.plan
        if not plan.patches:
            return Outcome("not-needed", _patch_reason(plan))
        ids = ", ".join(p.id for p in plan.patches)
        if self.options.dry_run:
            return Outcome("would-run", f"apply {ids} into the overlay")
        report = apply_patches(self.project)
        return Outcome("done", f"{ids}: {report.get('status', 'applied')}", report)

    def _kernels(self) -> Outcome:
        from resolver.kernels.driver import build, options_for_plan

        plan = self.plan
        if plan is not None and plan.kernels.strategy == "none":
            return Outcome("not-needed", "CPU plan: the reference path needs no kernels")
        if self.options.dry_run:
            return Outcome("would-run", f"{plan.kernels.strategy} kernels for {', '.join(plan.kernels.arch_list)}")
        if plan is None:
            options = self.options.build
        else:
            fetch = None
            if self.options.kernel_channel:
                from functools import partial

                from resolver.fleet.channel import fetch_package

                fetch = partial(fetch_package, self.options.kernel_channel)
            options = options_for_plan(plan, self.env.name if self.env is not None else self.env_name,
                                       fleet_channel=self.options.kernel_channel, fetch_variant=fetch)
        if plan is None or plan.backend == "rocm":
            options = _with_overlay(self.project, options)
        self.build_summary = build(self.project, options, self.out)
        summary = self.build_summary.to_json()
        packages = summary.get("packages", ())
        self.kernel_modules = tuple(m for p in packages for m in p.get("imports_ok", ()))
        compiled = sum(1 for p in packages if p.get("status") == "built")
        archs = ", ".join(plan.kernels.arch_list) if plan is not None else ", ".join(options.plan_archs)
        strategy = plan.kernels.strategy if plan is not None else options.plan_strategy
        return Outcome("done", f"kernels for {archs} ({strategy}; {compiled} compiled, "
                               f"{len(packages) - compiled} from the channel)",
                       jsonable(summary), tuple(Caveat.from_note(w) for w in summary.get("warnings", ())))

    def _verify(self) -> Outcome:
        plan, options, stamps = self.plan, self.options, self.options.stamps
        inputs = fingerprint(verified_inputs(self.project.env(plan.env_name)), channel_digest(self.project.channel),
                             plan.kernels.to_json(), self.kernel_modules)
        if options.dry_run and self.statuses.get("install") == "would-run":
            return Outcome("would-run", "after the new install: load a Mamba checkpoint and compare against the reference")
        if stamps is not None and not options.force and stamps.is_current("verify", inputs):
            self.verify_report = (stamps.read("verify") or {}).get("result")
            return Outcome("skipped", "verified earlier with the same environment and kernels", self.verify_report)
        if options.dry_run:
            return Outcome("would-run", "load a Mamba checkpoint and compare against the reference")
        from resolver.verify.inenv.answers import VerifyReport

        report = verify_environment(self.project, self.env,
                                    expect_archs=plan.kernels.arch_list if self.kernel_modules else ())
        self.verify_report = report
        verdict = VerifyReport.from_json(report)  # the `verify --json` document, read for ok and summary
        if not verdict.ok:
            raise CheckFailed(f"verify found problems: {verdict.summary or 'see the report'}",
                              fix=f"run `python -m resolver doctor --env {plan.env_name}`")
        if stamps is not None:
            stamps.write("verify", inputs, report)
        return Outcome("done", verdict.summary or "passed", report)


def step_names(rename: dict[str, str] | None = None) -> tuple[str, ...]:
    """The chain's steps in order, under the names a workflow shows them by."""
    return tuple((rename or {}).get(name, name) for name in STEPS)


def build_kernels(project: ProjectPaths, options: BuildOptions, out=None):
    """The patch and kernels steps for a build that has no plan (``python -m resolver build``): the header
    overlay for the ROCm the build compiles against, then the build with its path; the BuildSummary."""
    from resolver.kernels.driver import build

    return build(project, _with_overlay(project, options), out)


def apply_patches(project: ProjectPaths, rocm_root: Path | None = None) -> dict[str, Any]:
    """Every needed header fix into the default overlay for ``rocm_root`` (None: this machine's ROCm); the
    patch report's JSON form. The one place the chain makes the overlay."""
    from resolver import patch as patching

    return patching.ensure_overlay(project, rocm_root=rocm_root)


def overlay_for_build(project: ProjectPaths, env_name: str | None) -> Path | None:
    """The overlay's include folder for the ROCm a build into ``env_name`` compiles against (see
    :func:`overlay_at`); None on CUDA."""
    from resolver.kernels.driver import rocm_root

    root = rocm_root(project, env_name)
    return overlay_at(project, root) if root is not None else None


def overlay_at(project: ProjectPaths, root: Path) -> Path | None:
    """The overlay's include folder for the ROCm at ``root``, made first when a needed one is missing; None
    where the headers need no fix."""
    from resolver import patch as patching

    try:
        return patching.overlay_include_dir(project, root)
    except EnvironmentProblem:
        apply_patches(project, root)
        return patching.overlay_include_dir(project, root)


def _with_overlay(project: ProjectPaths, options: BuildOptions) -> BuildOptions:
    if options.rocm_overlay:
        return options
    from dataclasses import replace

    return replace(options, rocm_overlay=overlay_for_build(project, options.env_name))


def verified_inputs(env_path: Path) -> Any:
    """What of an installed environment verify checks: the fingerprint install recorded of torch, what verify
    loads a model with and everything they require (a package the user added is not part of it), else the
    whole ready marker."""
    from resolver.install.environment import ready_record

    record = ready_record(env_path) or {}
    return record.get("verify_inputs") or (env_path / READY_MARKER)


def channel_digest(channel: Path) -> str:
    """What the local kernel channel holds, cheaply: its indexes list every package with its sha256,
    so hashing them stands for hashing the packages (tens of MB) on every warm run."""
    return fingerprint(*sorted(channel.glob("*/repodata.json")))


def verify_environment(project: ProjectPaths, env: Environment, *, expect_archs: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run ``verify`` on the default checkpoint inside ``env``: the kernel modules must load and carry
    exactly ``expect_archs``; its JSON document (with doctor's diagnoses of what failed) plus a one-line summary."""
    from resolver.doctor.verify_diagnoses import diagnoses
    from resolver.verify import report as rep
    from resolver.verify.in_env import resolve_model, run_in_env

    extra = ["--expect-archs", ",".join(expect_archs)] if expect_archs else []
    result = run_in_env(env, resolve_model(project, None), extra)
    report = result.report
    doc = rep.document(report, env_name=env.name, wall_s=result.wall_s, driver=rep.host_driver(),
                       diagnoses=diagnoses(report, env.name))
    passed = len(report.with_status("pass"))
    skipped = len(report.with_status("skip"))
    failed = [c.name for c in report.with_status("fail")]
    library = (report.library or {}).get("name", "no library")
    path = "kernels" if (report.library or {}).get("uses_kernels") else "reference path, no kernels"
    doc["summary"] = (f"{passed} checks passed" + (f", {skipped} skipped (cannot run here)" if skipped else "")
                      + f" through {library} and our reference ({path}) in {doc['timings']['wall_s']:.1f} s"
                      + (f"; failed: {', '.join(failed)}" if failed else ""))
    return doc


def _patch_reason(plan: Plan) -> str:
    if plan.backend != "rocm":
        return f"no ROCm header fix applies to a {plan.backend} plan"
    return f"ROCm {plan.backend_version} needs no header fix"
