"""The upgrade journey: plan → lock beside → install → kernels → prove → report → (promote).

Each step is safe to interrupt and to run again: the lock is written as a pair only after the new
environment resolved (and only when the current environment's entries in pixi.lock come out byte for
byte as they were: otherwise both files are put back); the install builds aside and renames into
place; the kernel build is cached by its build key; the proof reads the environments and writes only
its report. Running ``upgrade`` again with the same request resumes where it stopped. The current
environment's folder is never written to, and its entries in pixi.toml and pixi.lock stay as they
are; promotion only changes which environment pixi.toml names as the default.

``.resolver/state/upgrade.json`` remembers the pending step (what was asked, how far it got, the
proof's verdict and what it was made from), so ``upgrade --promote`` alone finishes and promotes it,
reusing a passed proof when nothing it was made from changed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from resolver.core.errors import BadInput, EnvironmentProblem, IntegrityError, Refusal, UsageError
from resolver.core.fs import read_bytes_bounded, write_atomic
from resolver.core.names import canonical_name
from resolver.core.records import write_record
from resolver.core.ui import Output
from resolver.install.environment import READY_MARKER, Environment
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile
from resolver.project.manifest import Carry, Dependency, Manifest
from resolver.project.paths import MANIFEST_LIMIT, ProjectPaths, project_lock
from resolver.project.pixi_toml import read_pixi_toml
from resolver.project.upgrade_record import UpgradeRecord
from resolver.workflows.chain import Chain
from resolver.workflows.upgrade.proof import Proof, ProofOptions, prove
from resolver.workflows.upgrade.risks import Risk
from resolver.workflows.upgrade.step import UpgradeStep, Wanted, plan_step


@dataclass(frozen=True)
class UpgradeOptions:
    wanted: Wanted = Wanted()
    proof: ProofOptions = ProofOptions()
    profile_file: Path | None = None
    promote: bool = False
    plan_only: bool = False
    report_dir: Path | None = None
    wait: bool = True
    source_flags: dict[str, Any] = field(default_factory=dict)  # lock's --channel, --torch-index, ...
    allow_removal: tuple[str, ...] = ()  # the user's dependencies --promote may leave behind


@dataclass
class UpgradeResult:
    step: UpgradeStep | None = None
    stage: str = "planned"  # up-to-date | planned | locked | proven | failed | promoted
    lock: dict[str, Any] | None = None
    install: dict[str, Any] | None = None
    kernels: dict[str, Any] | None = None
    proof: Proof | None = None
    proof_reused: bool = False
    promoted: bool = False
    record: UpgradeRecord = field(default_factory=UpgradeRecord)
    remaining: list[str] = field(default_factory=list)
    report_files: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    carried: tuple[Dependency, ...] = ()  # the user's dependencies the new environment has
    removed: dict[str, str] = field(default_factory=dict)  # those that cannot come along: name -> why
    blocked: tuple[str, ...] = ()  # removals that kept --promote from switching (no --allow-removal)

    @property
    def ok(self) -> bool:
        return (self.proof is None or self.proof.ok) and not self.blocked

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "ok": self.ok, "promoted": self.promoted,
                "step": self.step.to_json() if self.step else None, "lock": self.lock, "install": self.install,
                "kernels": self.kernels, "proof": self.proof.to_json() if self.proof else None,
                "proof_reused": self.proof_reused, "record": self.record.to_json(), "remaining": self.remaining,
                "report": self.report_files, "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "dependencies": {"carried": [d.to_json() for d in self.carried],
                                 "removed": [{"name": n, "why": w} for n, w in sorted(self.removed.items())],
                                 "blocked": list(self.blocked)}}


def run_upgrade(project: ProjectPaths, options: UpgradeOptions, out: Output) -> UpgradeResult:
    """The whole journey. The step is planned first with the project lock only waited for (a refusal, a plan-only
    run or nothing to upgrade writes nothing, not even the lock file), then again under the lock before anything
    is written (what another run changed meanwhile counts)."""
    journey = _Journey(project, options, out)
    with project_lock(project.stamps, wait=options.wait, on_wait=out.info, read_only=True):
        journey.plan()
    if options.plan_only or journey.result.stage == "up-to-date":
        return journey.result
    with project_lock(project.stamps, wait=options.wait, on_wait=out.info):
        journey.plan()
        return journey.run()


class _Journey:
    def __init__(self, project: ProjectPaths, options: UpgradeOptions, out: Output) -> None:
        self.project, self.options, self.out = project, options, out
        self.result = UpgradeResult()
        self.state_path = project.upgrade_state
        self.profile: HardwareProfile | None = None  # probed once, planned twice (see run_upgrade)

    def plan(self) -> UpgradeStep:
        started = time.monotonic()
        self.knowledge = Knowledge.load()
        self.wanted = self._wanted()
        self.profile = self.profile or self._profile()
        step = plan_step(self.project, self.wanted, self.profile, here=self.options.profile_file is None,
                         knowledge=self.knowledge)
        self.result.step = step
        self.result.seconds["plan"] = time.monotonic() - started
        self.result.record = read_pixi_toml(self.project.manifest).tool.upgrade
        if step.up_to_date:
            self.result.stage = "up-to-date"
        return step

    def run(self) -> UpgradeResult:
        from resolver.workflows.upgrade.report import write_reports

        options, step, wanted, knowledge = self.options, self.result.step, self.wanted, self.knowledge
        here = options.profile_file is None
        old_env = self._current_installed(step) if here else None
        previous = self._read_state()  # before this run's first save: a passed proof it holds may be reused
        self._save_state(wanted, step, "planned")
        self._timed("lock", lambda: self._lock(step, previous))
        step = self.result.step  # with the risks the lock found (a dependency that cannot come along)
        self._save_state(wanted, step, "locked")
        if not here:
            self.result.stage = "locked"
            self.result.remaining = _remaining_on_target(step)
            self.result.report_files = write_reports(self.project, self.result, options)
            return self.result
        env = self._ready(step)
        proof_inputs = self._proof_inputs(step, options.proof)
        if previous.get("proof_inputs") == proof_inputs and previous.get("proof") and previous["proof"].get("ok"):
            self.result.proof = _proof_from_json(previous["proof"])
            self.result.proof_reused = True
            self.out.info(f"the proof of '{step.new.environment}' passed earlier and nothing it was made from has "
                          "changed: reused")
        else:
            self.result.proof = self._timed("proof", lambda: prove(
                self.project, old_env, env, _expected_archs(step), options.proof, knowledge, info=self.out.info,
                dependencies=self.result.carried))
        proof = self.result.proof
        self.result.stage = "proven" if proof.ok else "failed"
        self._save_state(wanted, step, self.result.stage, proof=proof, proof_inputs=proof_inputs)
        allowed = {canonical_name(n) for n in options.allow_removal}
        if options.promote and proof.ok:
            self.result.blocked = tuple(n for n in sorted(self.result.removed) if canonical_name(n) not in allowed)
        if options.promote and proof.ok and not self.result.blocked:
            self.result.record = promote(self.project, step.new.environment, expect_candidate=True)
            self.result.promoted = True
            self.result.stage = "promoted"
            self._save_state(wanted, step, "promoted", proof=proof, proof_inputs=proof_inputs)
        self.result.report_files = write_reports(self.project, self.result, options)
        return self.result

    # -- the steps --------------------------------------------------------------------------------
    def _wanted(self) -> Wanted:
        """The flags; ``--promote`` alone finishes the pending upgrade (the state file's request)."""
        wanted = self.options.wanted
        if wanted != Wanted() and wanted != Wanted(env=wanted.env):
            return wanted
        pending = self._read_state()
        if self.options.promote:
            if pending.get("stage") == "promoted" or not pending.get("wanted"):
                raise UsageError("there is no pending upgrade to promote",
                                 fix="upgrade first (`python -m resolver upgrade --torch X.Y` or --target T), or "
                                     "name one: `python -m resolver upgrade --torch X.Y --promote`")
            try:
                return Wanted(**pending["wanted"])
            except TypeError:
                raise BadInput(f"{self.state_path} is not an upgrade state this resolver wrote",
                               fix="delete it and run the upgrade again with its flags") from None
        return wanted

    def _profile(self) -> HardwareProfile:
        if self.options.profile_file is not None:
            return HardwareProfile.from_file(self.options.profile_file)
        from resolver.plan.planning import probe_here

        return probe_here()

    def _current_installed(self, step: UpgradeStep) -> Environment:
        """The current environment must be here to prove the new one against it: said before anything is built."""
        name = step.current.environment
        if Environment.kind_of(self.project.env(name)) is None:
            raise EnvironmentProblem(f"the current environment '{name}' is not installed here, so the new one cannot "
                                     "be proven against it",
                                     fix=f"install it first (`python -m resolver install --env {name}`), then run the "
                                         "upgrade again")
        return Environment.find(self.project, name)

    def _lock(self, step: UpgradeStep, previous: dict[str, Any]) -> None:
        from resolver.lock.current import holds
        from resolver.lock.lockfile import read_lock
        from resolver.project.paths import LOCK_LIMIT
        from resolver.project.sources import Sources
        from resolver.workflows.upgrade.lockdiff import entries_unchanged, lock_diff

        project, current, new = self.project, step.current.environment, step.new.environment
        manifest = Manifest.load(project.manifest)
        old = manifest.tool.upgrade
        record = replace(old.with_choice(old.choice(current) or step.current.choice).with_choice(step.new.choice),
                         default=old.default or current,
                         candidate=new if new != (old.default or current) else old.candidate)
        owned = _owned(step)
        users = manifest.user_dependencies(current, owned)
        has = {d.key for d in manifest.user_dependencies(new, owned)} if new in manifest.environment_names() else set()
        earlier = previous.get("removed") if previous.get("candidate") == new else None
        earlier = {str(k): str(v) for k, v in earlier.items()} if isinstance(earlier, dict) else {}
        missing = [d for d in users if d.key not in has]
        before_lock = read_bytes_bounded(project.lockfile, limit=LOCK_LIMIT, what="pixi.lock") \
            if project.lockfile.is_file() else b""
        before_manifest = read_bytes_bounded(project.manifest, limit=MANIFEST_LIMIT, what="pixi.toml")
        status = "locked"
        if holds(project, step.new.plan) and all(d.name in earlier for d in missing):
            status = "current"
            self.result.removed = {d.name: earlier[d.name] for d in missing}
            if record != old:
                record.write(manifest)
                manifest.save()
            self.out.info(f"pixi.lock already holds '{new}' as planned")
        else:
            self.out.info(f"locking '{new}' beside '{current}' (pixi.toml and pixi.lock; '{current}' stays as it is)"
                          + (f", with your {len(users)} dependenc{'y' if len(users) == 1 else 'ies'} of '{current}'"
                             if users else ""))
            sources = Sources.load(project.root, flags=self.options.source_flags)
            self.result.removed = self._lock_carrying(step, record, users, owned, sources)
        self.result.carried = tuple(d for d in users if d.name not in self.result.removed)
        if self.result.removed:
            self.result.step = step = replace(step, risks=step.risks + tuple(
                Risk("removal", "warning", f"your dependency {name} cannot come along into '{new}' ({why}): the new "
                     f"environment is locked without it, and `--promote` switches only with --allow-removal {name}",
                     f"pixi.toml [feature] of '{current}'; the resolver of pixi.lock") for name, why in
                sorted(self.result.removed.items())))
        after = read_bytes_bounded(project.lockfile, limit=LOCK_LIMIT, what="pixi.lock")
        if not entries_unchanged(before_lock.decode("utf-8", "replace"), after.decode("utf-8", "replace"), current):
            write_atomic(project.lockfile, before_lock, label="lock")
            write_atomic(project.manifest, before_manifest, label="manifest")
            raise IntegrityError(f"locking '{new}' would have rewritten the entries of '{current}' in pixi.lock; "
                                 "pixi.toml and pixi.lock are put back as they were",
                                 fix=f"lock '{current}' again on its own first (`python -m resolver lock --target "
                                     f"{step.current.choice.target}`), then run the upgrade again")
        locked = read_lock(project.lockfile, project.root)
        subdir = step.new.plan.platform

        def entry(name: str):
            return next((e for e in locked.get(name, []) if e.platform.subdir == subdir), None)

        old_entry, new_entry = entry(current), entry(new)
        diff = lock_diff(old_entry, new_entry) if old_entry is not None and new_entry is not None else None
        gone = [m for m in (diff.removed if diff else ()) if canonical_name(m.name) not in
                {canonical_name(n) for n in self.result.removed}]
        if gone:  # packages the current environment has and the new one does not: a risk, not an aside
            self.result.step = replace(self.result.step, risks=self.result.step.risks + (Risk(
                "removal", "note", f"{len(gone)} package{'s' if len(gone) != 1 else ''} of '{current}' "
                f"{'are' if len(gone) != 1 else 'is'} not in '{new}': {', '.join(f'{m.name} {m.before}' for m in gone)} "
                "(nothing you declared requires them there): code that imports them directly breaks",
                "pixi.lock: the two environments' entries"),))
        self.result.record = read_pixi_toml(project.manifest).tool.upgrade
        self.result.lock = {"status": status, "environment": new, "current_entries_unchanged": True,
                            "diff": diff.to_json() if diff else None,
                            "manifest_changed": before_manifest != read_bytes_bounded(
                                project.manifest, limit=MANIFEST_LIMIT, what="pixi.toml"),
                            "lock_changed": before_lock != after}

    def _lock_carrying(self, step: UpgradeStep, record: UpgradeRecord, users: tuple[Dependency, ...],
                       owned: frozenset[str], sources) -> dict[str, str]:
        """Lock the new environment with every dependency of the user's; when that does not resolve, find the ones
        that cannot come along (each added alone to what does), lock without them and return them (name -> why)."""
        from resolver import lock

        project, current, new, plan = self.project, step.current.environment, step.new.environment, step.new.plan

        def locked(leave_out) -> None:
            lock.lock_plans(project, [plan], sources=sources, info=self.out.info, edit=record.write,
                            carry={new: Carry(current, owned, frozenset(leave_out))})

        try:
            locked(())
            return {}
        except BadInput as first:
            if not users:
                raise
            blocking = self._blocking(step, record, users, owned, sources)
            if not blocking:
                raise first from None
        self.out.info("cannot come along: " + "; ".join(f"{n} ({why})" for n, why in sorted(blocking.items())))
        locked(blocking)
        return blocking

    def _blocking(self, step: UpgradeStep, record: UpgradeRecord, users: tuple[Dependency, ...],
                  owned: frozenset[str], sources) -> dict[str, str]:
        """The user's dependencies the new environment does not resolve with, each tried alone on top of those
        that do ({} when the plan does not resolve even without them: they are not the cause)."""
        from resolver.lock.resolving import resolves

        project, current, new = self.project, step.current.environment, step.new.environment
        names = list(dict.fromkeys(d.name for d in users))

        def why_not(leave_out: list[str]) -> str | None:
            manifest = Manifest.load(project.manifest)
            record.write(manifest)
            manifest.ensure_environment(step.new.plan, (), Carry(current, owned, frozenset(leave_out)))
            return resolves(project, manifest, new, sources=sources)

        self.out.info(f"'{new}' does not resolve with all your dependencies of '{current}': trying them one by one ...")
        if why_not(names) is not None:
            return {}
        kept: list[str] = []
        blocking: dict[str, str] = {}
        for name in names:
            why = why_not([n for n in names if n not in kept and n != name] + list(blocking))
            if why is None:
                kept.append(name)
            else:
                blocking[name] = why
        return blocking

    def _ready(self, step: UpgradeStep) -> Environment:
        """Install, patch and build the kernels of the new environment; its proof is the upgrade's verify."""
        from resolver.project.sources import Sources
        from resolver.workflows.chain import ChainOptions

        options = ChainOptions(steps=("install", "patch", "kernels"),
                               sources=lambda: Sources.load(self.project.root, flags=self.options.source_flags))
        chain = Chain(self.project, step.new.plan, options, lambda name, run: self._step(step, chain, name, run),
                      env_name=step.new.environment, detail=lambda name: self.out.info, out=self.out)
        return chain.run().env

    def _step(self, step: UpgradeStep, chain: Chain, name: str, run) -> None:
        """One step of the chain, timed: the patch counts with the kernels, which are said before they build."""
        plan = step.new.plan
        if name == "kernels" and plan.kernels.strategy != "none":
            self.out.info(f"kernels for {', '.join(plan.kernels.arch_list)} into '{step.new.environment}' "
                          "(cached by build key) ...")
        outcome = self._timed("kernels" if name == "patch" else name, run)
        if name == "install":
            self.result.install = outcome.result
        elif name == "kernels":
            self.result.kernels = chain.build_summary.to_json() if outcome.status == "done" else \
                {"status": "not-needed", "why": "a CPU plan: the reference path needs no kernels"}

    def _timed(self, name: str, action):
        started = time.monotonic()
        try:
            return action()
        finally:
            self.result.seconds[name] = self.result.seconds.get(name, 0.0) + time.monotonic() - started

    # -- state --------------------------------------------------------------------------------
    def _proof_inputs(self, step: UpgradeStep, options: ProofOptions) -> str:
        from resolver.core.fingerprint import fingerprint

        channel = sorted(self.project.channel.glob("*/repodata.json"))
        envs = [self.project.env(step.current.environment), self.project.env(step.new.environment)]
        return fingerprint(step.current.environment, step.new.environment, *(env / READY_MARKER for env in envs),
                           [_site_listing(env) for env in envs], *channel, options.to_json(), _expected_archs(step))

    def _read_state(self) -> dict[str, Any]:
        """The state an earlier run saved ({} when there is none, or none this user's resolver wrote)."""
        from resolver.core.records import Fields, Number, OfType, Text, optional, read_record

        env = Text(r"[a-z0-9-]{1,64}", 64)
        shape = Fields({"wanted": OfType(dict), "current": env, "candidate": env, "stage": Text(r"[a-z-]{1,32}", 32),
                        "at": Number(), "proof": optional(OfType(dict)), "proof_inputs": optional(Text(r"[0-9a-f]{64}"))},
                       {"removed": OfType(dict)})  # a state an earlier release wrote has no "removed"
        return read_record(self.state_path, shape, limit=16 << 20) or {}

    def _save_state(self, wanted: Wanted, step: UpgradeStep, stage: str, *, proof: Proof | None = None,
                    proof_inputs: str | None = None) -> None:
        write_record(self.state_path, {
            "wanted": {**wanted.to_json(), "env": step.current.environment}, "current": step.current.environment,
            "candidate": step.new.environment, "stage": stage, "at": time.time(),
            "proof": proof.to_json() if proof else None, "proof_inputs": proof_inputs,
            "removed": dict(self.result.removed)}, label=f"upgrade-{stage}", strict=True)


def _site_listing(env: Path) -> list[tuple[str, int]]:
    """What sits in the environment's site-packages: a package installed or removed after the install (its
    .dist-info, named and timed), or a startup hook (.pth, any file, timed), changes it, and a proof made before
    is not reused. Bytecode is left out: the first import of a package writes its ``__pycache__`` (which also
    touches the package folder's mtime), and running the proof must not make the proof stale."""
    found = []
    for site in sorted(env.glob("lib/python3*/site-packages")):
        try:
            for entry in os.scandir(site):
                if entry.name == "__pycache__":
                    continue
                timed = not entry.is_dir(follow_symlinks=False) or entry.name.endswith((".dist-info", ".egg-info"))
                found.append((entry.name, entry.stat(follow_symlinks=False).st_mtime_ns if timed else 0))
        except OSError:
            continue
    return sorted(found)


def _owned(step: UpgradeStep) -> frozenset[str]:
    """What the resolver writes for a plan, in both environments: torch, python and the plans' conda packages; the
    rest of an environment's dependencies are the user's, and the new environment takes them as they are."""
    return frozenset({"torch", "python", *(n for n, _ in step.current.plan.conda_packages),
                      *(n for n, _ in step.new.plan.conda_packages)})


def _expected_archs(step: UpgradeStep) -> tuple[str, ...]:
    kernels = step.new.plan.kernels
    return tuple(kernels.arch_list) if kernels.strategy != "none" else ()


def _proof_from_json(data: dict[str, Any]) -> Proof:
    from resolver.workflows.upgrade.proof import ProofCheck

    checks = tuple(ProofCheck(c["name"], c["status"], c["detail"],
                              {k: v for k, v in c.items() if k not in ("name", "status", "detail")})
                   for c in data.get("checks", []))
    return Proof(checks, data.get("numerics", {}), data.get("speed", {}), data.get("warnings", {}),
                 data.get("runs", {}))


def _remaining_on_target(step: UpgradeStep) -> list[str]:
    new = step.new
    return [f"commit pixi.toml and pixi.lock (environment '{new.environment}' beside '{step.current.environment}')",
            f"on the machine the plan is for, run `python -m resolver upgrade --env {step.current.environment}"
            + (f" --target {new.choice.target}" if new.choice.target != "auto" else "")
            + (f" --torch {new.choice.torch}" if new.choice.torch else "") + "`: it installs the new environment "
            "from pixi.lock, builds its kernels, proves it against the current one and reports",
            "promote it there with `--promote` when the proof passes"]


# -- promotion --------------------------------------------------------------------------------------
def promote(project: ProjectPaths, name: str, *, expect_candidate: bool = False) -> UpgradeRecord:
    """Make ``name`` the project's default (one atomic write of pixi.toml), keeping the old default as ``previous``.
    The caller holds the project lock."""
    manifest = Manifest.load(project.manifest)
    record = manifest.tool.upgrade
    if name not in manifest.environment_names():
        raise UsageError(f"pixi.toml has no environment '{name}' to promote", fix="run the upgrade first")
    if expect_candidate and record.candidate not in (None, name):
        raise Refusal(f"pixi.toml names '{record.candidate}' as the upgrade candidate, not '{name}'",
                      fix="run the upgrade again for the candidate you mean")
    if record.default == name:
        return record
    new = replace(record, default=name, previous=record.default, candidate=None)
    new.write(manifest)
    manifest.save()
    return new


def rollback(project: ProjectPaths, *, to: str | None = None, wait: bool = True,
             on_wait=None) -> tuple[UpgradeRecord, UpgradeRecord]:
    """Make the environment that was the default before the last promotion the default again (``to``: the one
    named). The record then names no previous default: a second ``rollback`` finds nothing to roll back and
    never switches forward again. Returns (before, after); ``after == before`` when there was nothing to do."""
    with project_lock(project.stamps, wait=wait, on_wait=on_wait):
        if not project.manifest.is_file():
            raise BadInput(f"{project.manifest} does not exist", fix="run the command in the project folder")
        manifest = Manifest.load(project.manifest)
        record = manifest.tool.upgrade
        names = [n for n in manifest.environment_names() if n != "default"]
        if to is not None and to not in names:
            raise UsageError(f"no environment '{to}'; pixi.toml has: {', '.join(names) or 'none'}",
                             fix=f"name one of them: `python -m resolver rollback --to {names[0] if names else 'ENV'}`")
        wanted = to or record.previous
        if wanted is None or wanted == record.default:
            return record, record
        if wanted not in names:
            raise BadInput(f"the previous default '{wanted}' is no longer in pixi.toml",
                           fix="restore its feature and environment in pixi.toml (from version control), or name "
                               f"another: `python -m resolver rollback --to {names[0] if names else 'default'}`")
        after = replace(record, default=wanted, previous=None,
                        candidate=None if record.candidate == wanted else record.candidate)
        after.write(manifest)
        manifest.save()
        return record, after
