"""Getting a plan, in one place: probe this machine then decide, or take the plan an environment was
locked from; and keeping those locked plans. Commands only render what this module hands them, and
:mod:`resolver.plan.decide` stays a pure function of its inputs.

Because deciding is pure, its answer is remembered (:class:`PlanMemo`, in the user's cache): the same
profile, request and resolver give the same plan, so a second ``plan`` on a machine takes the
remembered one without importing the decision stage (the import is most of ``plan``'s time). The
key holds every input decide reads: the profile (less the fields listed in ``NOT_DECIDED_ON``, which
vary from run to run and which decide never reads: a fact ``tests/test_decide.py`` checks), the
request, the Python running it, and every file of the installed resolver package (its code and its
knowledge tables) by its size and times, so any edit to either is a new key. The record is a
:class:`~resolver.core.fingerprint.Memo`, keyed by :func:`~resolver.core.fingerprint.fingerprint`.

>>> from resolver.core.model import Request, Target
>>> plan_for(Request(Target.parse("cpu"))).backend
'cpu'
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resolver.core.model import Plan, Request
    from resolver.plan.probe.profile import HardwareProfile
    from resolver.project.paths import ProjectPaths

NOT_DECIDED_ON = ("memory_available_mib",)  # changes from run to run; decide never reads it
_KEPT = 64  # remembered plans per user
PACKAGE = Path(__file__).resolve().parents[1]  # the whole resolver package


# ------------------------------------------------------------------------------------ a plan here


def plan_for(request: Request, profile: HardwareProfile | None = None) -> Plan:
    """The plan for ``profile`` (default: this machine, as the probe reads it, machine doubles included);
    raises the :class:`~resolver.core.errors.Refusal` when there is none."""
    from resolver.core.model import Plan

    profile = profile if profile is not None else probe_here()
    memo = PlanMemo(profile, str(request.target), str(request.python) if request.python else None)
    known = memo.recall()
    if known is not None:
        try:
            return Plan.from_json(known)
        except (ValueError, TypeError, KeyError):
            pass
    plan = _decide(profile, request)
    memo.keep(plan.to_json())
    return plan


def plan_document(profile: HardwareProfile | None, target: str, python: str | None) -> dict[str, Any]:
    """The plan for a target and Python given as the user typed them, in its JSON form (what ``plan``
    prints and renders): remembered ones are taken without importing the decision stage at all."""
    profile = profile if profile is not None else probe_here()
    memo = PlanMemo(profile, target, python)
    known = memo.recall()
    if known is None:
        known = _decide(profile, request_of(target, python)).to_json()
        memo.keep(known)
    return known


def request_of(target: str, python: str | None) -> Request:
    """The request for ``--target`` and ``--python`` as typed; one sentence when either is not one."""
    from resolver.core.errors import BadInput
    from resolver.core.model import Request, Target
    from resolver.core.versions import DottedVersion

    parsed = Target.parse(target)
    version = None
    if python is not None:
        try:
            version = DottedVersion.parse(python)
        except ValueError:
            version = None
        if version is None or len(version.parts) < 2 or version.major != 3:
            raise BadInput(f"--python {python!r} is not a Python version", fix="write it as X.Y, e.g. --python 3.11")
    return Request(target=parsed, python=version)


def _decide(profile: HardwareProfile, request: Request) -> Plan:
    from resolver.plan.decide import decide
    from resolver.plan.knowledge import Knowledge

    outcome = decide(profile, request, Knowledge.load())
    if outcome.plan is None:
        raise outcome.refusal
    return outcome.plan


def probe_here() -> HardwareProfile:
    from resolver.plan.probe import probe_machine

    return probe_machine()


def plans_for(project: ProjectPaths, targets: list[str], profile_file: Path | None = None, *,
              compute_capability: str | None = None, gfx: str | None = None) -> list[Plan]:
    """One plan per target (for this machine, or the machine ``profile_file`` describes, with the GPU
    architecture the user states applied); without targets and without a stated architecture, the plans
    the project's environments were locked from, else this machine's ``auto`` plan."""
    from resolver.core.model import Request, Target

    if not targets and not (compute_capability or gfx):
        if project.manifest.is_file() and profile_file is None:
            from resolver.project.manifest import Manifest

            stored = [stored_plan(project, name) for name in Manifest.load(project.manifest).environment_names()]
            stored = [p for p in stored if p is not None]
            if stored:
                return stored
    parsed = [Target.parse(t) for t in targets or ["auto"]]
    profile = None
    if profile_file is not None:
        from resolver.plan.probe.profile import HardwareProfile

        profile = HardwareProfile.from_file(profile_file)
    if compute_capability or gfx:
        from resolver.plan.probe.overrides import apply_gpu_overrides

        profile = apply_gpu_overrides(profile or probe_here(), compute_capability, gfx)
    return [plan_for(Request(target=t), profile) for t in parsed]


class PlanMemo:
    """The plan decided for one set of inputs, kept in the user's cache: a
    :class:`~resolver.core.fingerprint.Memo` whose value is ``Plan.to_json()``, checked against
    :func:`plan_shape`, in a file named by the inputs' fingerprint."""

    def __init__(self, profile: HardwareProfile, target: str, python: str | None) -> None:
        from resolver import __version__
        from resolver.core.fingerprint import fingerprint
        from resolver.project.paths import plan_memos

        decided_on = {k: v for k, v in profile.to_json().items() if k not in NOT_DECIDED_ON}
        self.inputs = fingerprint(__version__, sys.version, decided_on, [target, python], package_digest())
        folder = plan_memos()
        self.file = None if folder is None else folder / f"{self.inputs[:32]}.json"

    def _memo(self):
        from resolver.core.fingerprint import Memo

        return Memo(self.file, plan_shape(), label="plan-memo", limit=4 << 20)

    def recall(self) -> dict[str, Any] | None:
        """The remembered plan's JSON form, or None (never remembered, remembered for other inputs, or not a
        record of a plan)."""
        return self._memo().recall(self.inputs)

    def keep(self, plan: dict[str, Any]) -> None:
        if self.file is None or not self._memo().keep(self.inputs, plan, in_order=True):  # the plan's own key order
            return  # a read-only cache: decide every time
        try:
            kept = sorted(self.file.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[_KEPT:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass


def plan_shape():
    """The shape of :meth:`resolver.core.model.Plan.to_json`, for a plan read back from a record."""
    from resolver.core.records import Fields, Flag, ListOf, MapOf, Text, optional

    text, long = Text(max_len=4096), Text(max_len=1 << 16)
    return Fields({
        "backend": Text("cpu|cuda|rocm"), "backend_version": optional(text), "python": Text(r"3\.\d+", 8),
        "platform": text, "target": text, "environment": Text(r"[a-z0-9-]{1,64}", 64),
        "torch": Fields({"version": text, "variant": text, "source": Fields({"kind": text, "url": text}),
                         "conda": optional(Fields({"channel": text, "spec": text})), "cxx11_abi": Flag(),
                         "requirement": text}),
        "kernels": Fields({"strategy": Text("build|prebuilt|none"), "arch_list": ListOf(text, 256),
                           "packages": MapOf(text), "toolkit": optional(text), "toolkit_source": optional(text),
                           "prebuilt_wheels": MapOf(text)}),
        "patches": ListOf(Fields({"id": text, "file": text}), 256), "warnings": ListOf(long, 1024),
        "trace": ListOf(Fields({"rule": text, "result": long, "because": long}), 4096),
        "glibc": optional(text), "cuda_driver": optional(text), "runnable_here": Flag(), "summary": long,
        "conda_packages": MapOf(text)})


def package_digest() -> str:
    """A key of the installed resolver package: the fingerprint of every file below it (code, knowledge
    tables), each by its relative path, size, mtime and ctime: an edit, a copy or a reinstall changes it
    (stat only: hashing the package's 1.5 MB would cost 20 ms, a third of a remembered `plan`)."""
    from resolver.core.fingerprint import fingerprint

    files = []
    stack = [str(PACKAGE)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as found:
            entries = sorted(found, key=lambda e: e.name)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    stack.append(entry.path)
            elif entry.name.endswith((".py", ".toml")):
                info = entry.stat(follow_symlinks=False)
                files.append([entry.path[len(str(PACKAGE)):], info.st_size, info.st_mtime_ns, info.st_ctime_ns])
    return fingerprint(files)


# ------------------------------------------------------------------------------ the locked plans


def plan_key(plan: Plan) -> dict[str, Any]:
    """What in a plan decides the lock (trace, warnings and kernels do not)."""
    return {"environment": plan.env_name, "platform": plan.platform, "python": plan.python,
            "torch": plan.torch.requirement, "index": plan.torch.source.url,
            "conda": dict(plan.conda_packages), "cuda": plan.backend_version if plan.backend == "cuda" else None}


def manifest_env_digest(manifest, name: str) -> str:
    """A digest of environment ``name``'s section of pixi.toml (a :class:`~resolver.project.manifest.Manifest`)."""
    from resolver.core.fingerprint import fingerprint

    spec = manifest.environment(name)
    return fingerprint(spec.channels, [p.entry() for p in spec.platforms], spec.conda, spec.pypi, spec.index_url,
                       spec.extra_index_urls, spec.find_links)


def save_plan(project: ProjectPaths, plan: Plan, manifest, pythons: dict[str, str] | None = None) -> Path:
    """Keep the plan behind an environment, the pixi.toml section it was locked with, and (``pythons``)
    the conda python locked per platform."""
    from resolver.core.fs import write_json_atomic

    path = project.plan_record(plan.env_name)
    write_json_atomic(path, {"plan": plan.to_json(), "key": plan_key(plan), "pythons": pythons or {},
                             "manifest_env": manifest_env_digest(manifest, plan.env_name)}, label="plan")
    return path


def locked_plan_record(project: ProjectPaths, env_name: str) -> dict[str, Any] | None:
    """What :func:`save_plan` kept for ``env_name`` (``plan``, ``key``, ``pythons``, ``manifest_env``), or
    None when there is no such record."""
    from resolver.core.records import Fields, MapOf, OfType, Text, read_record

    shape = Fields({"plan": plan_shape(), "key": OfType(dict), "pythons": MapOf(Text(r"\d+(\.\d+)*", 32), Text(max_len=64)),
                    "manifest_env": Text(r"[0-9a-f]{64}", 64)})
    return read_record(project.plan_record(env_name), shape, limit=4 << 20)


def stored_plan(project: ProjectPaths, env_name: str) -> Plan | None:
    """The plan environment ``env_name`` was locked from here, or None."""
    from resolver.core.errors import ResolverError
    from resolver.core.model import Plan

    record = locked_plan_record(project, env_name)
    try:
        return Plan.from_json(record["plan"]) if record is not None else None
    except (ResolverError, KeyError, TypeError, ValueError, AttributeError):
        return None


def stored_pythons(project: ProjectPaths, names: list[str]) -> dict[tuple[str, str], str]:
    """(environment, platform) -> the conda python the last lock of it solved (kept with its plan)."""
    found = {}
    for name in names:
        record = locked_plan_record(project, name)
        if record is not None:
            found.update({(name, platform): python for platform, python in record["pythons"].items()})
    return found
