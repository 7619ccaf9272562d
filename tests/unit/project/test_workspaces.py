"""Joining a workspace pixi wrote: real pixi.toml + pixi.lock pairs from pixi's own examples and docs
(tests/data/workspaces/<name>/, each with its SOURCE.md) get the resolver's environment added by
``lock --target cpu`` (and ``--target cuda13.0`` on the GPU double), and every environment of theirs
stays as pixi locked it: the same packages, the same fields, the same bytes where pixi would write the
same, and no solve of theirs run (every conda solve and PyPI resolve is counted).

"As pixi would write it": a version 7 lock as it is; an older one as rattler converts it (pixi writes
version 7 at its next save), which is also what the resolver does. conda-forge cannot be reached here:
the toolchain channel stands in for it, through a mirror whose python declares the glibc floor
conda-forge's does (2.28; the workspaces' linux-64 is pixi's default platform), torch comes from this
machine's wheelhouse (pip's configuration), mapped to its canonical index.
"""

from __future__ import annotations

import difflib
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from support import DATA, TESTS, cli
from support import pixi_rules as rules
from support.projects import torch_cpu_mirror

from resolver import lock
from resolver.core.errors import BadInput
from resolver.core.model import KernelChoice, Plan, Request, Target, TorchChoice, TorchSource
from resolver.lock import resolving
from resolver.lock.lockfile import RawLock
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths
from resolver.project.sources import Sources
from resolver.tools.conda import canonical_lock_text

HERE = TESTS
WORKSPACES = sorted(p.name for p in (DATA / "workspaces").iterdir() if (p / "pixi.lock").is_file())
DOUBLES = DATA / "doubles"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def cpu_plan() -> Plan:
    return Plan(backend="cpu", backend_version=None, python=PY, platform="linux-64", target="cpu",
                torch=TorchChoice("2.13.0", "cpu", TorchSource("pypi-index", "https://download.pytorch.org/whl/cpu"),
                                  local_version="cpu"),
                kernels=KernelChoice("none"), glibc="2.36", conda_packages=(("python", f"{PY}.*"),))


@pytest.fixture(scope="module")
def conda_forge(conda_channel, tmp_path_factory) -> Path:
    """The toolchain channel as a conda-forge mirror: the same packages, its python's repodata entry
    declaring ``__glibc >=2.28`` as conda-forge's pythons do (repodata patched as conda-forge patches
    its own); nothing here installs from it."""
    mirror = tmp_path_factory.mktemp("conda-forge-mirror")
    for subdir in ("linux-64", "noarch"):
        (mirror / subdir).mkdir()
        data = json.loads((conda_channel / subdir / "repodata.json").read_text())
        for record in data.get("packages.conda", {}).values():
            record["depends"] = [d if not d.startswith("__glibc >=") else "__glibc >=2.28,<3.0.a0"
                                 for d in record.get("depends", [])]
        (mirror / subdir / "repodata.json").write_text(json.dumps(data))
        for package in (conda_channel / subdir).glob("*.conda"):
            (mirror / subdir / package.name).symlink_to(package)
    return mirror


class Counted:
    """Every conda solve and PyPI resolve of a lock, by the environment it is for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.conda: list[list[str]] = []
        self.pypi: list[str] = []
        solve, resolve = lock.solve, lock._resolve_pypi

        def counted_solve(channels, specs, platform, virtual_packages):
            self.conda.append(list(specs))
            return solve(channels, specs, platform, virtual_packages)

        def counted_resolve(settings, spec, *args, **kwargs):
            self.pypi.append(spec.name)
            return resolve(settings, spec, *args, **kwargs)

        monkeypatch.setattr(resolving, "solve", counted_solve)
        monkeypatch.setattr(resolving, "_resolve_pypi", counted_resolve)


def other_machines(manifest: str) -> set[str]:
    """Besides this one, the machines of a workspace a new CPU environment is tried for: the subdirs of its
    platforms that declare no CUDA, of those the resolver locks for."""
    from resolver.core.platforms import KNOWN

    platforms = Manifest.parse(manifest).platforms().values()
    return {p.subdir for p in platforms if p.cuda is None and p.subdir in KNOWN} - {"linux-64"}


def sources_for(root: Path, conda_forge: Path) -> Sources:
    torch = torch_cpu_mirror()
    if torch is None:
        pytest.skip("pip's configuration here has no local torch 2.13.0+cpu wheelhouse")
    base = Sources.load(root, flags={"conda-channels": [str(conda_forge)]})
    return Sources(conda_channels=base.conda_channels, mirrors=(("https://download.pytorch.org/whl/cpu", str(torch)),))


def copy_workspace(name: str, into: Path) -> ProjectPaths:
    into.mkdir(parents=True)
    for file in ("pixi.toml", "pixi.lock"):
        shutil.copy(DATA / "workspaces" / name / file, into / file)
    return ProjectPaths(into)


def as_pixi_writes(text: str) -> RawLock:
    """The lock as pixi writes it next: version 7 as it is, an older one as rattler converts it."""
    return RawLock.parse(text if text.startswith("version: 7\n") else canonical_lock_text(text))


def removed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line.startswith("- ")]


def assert_kept(original: RawLock, result: RawLock, ours: str) -> None:
    """Every environment of the original, on every platform, holds the same entries, byte for byte."""
    assert set(result.envs) == set(original.envs) | {ours}
    for name, env in original.envs.items():
        assert result.envs[name].head == env.head, name
        assert result.envs[name].packages == env.packages, name
        for selected in env.packages.values():
            for key in original.reachable(k for k, _ in selected):
                assert result.packages[key] == original.packages[key], key
    assert result.envs[ours].packages  # and ours is there


@pytest.mark.parametrize("name", WORKSPACES)
def test_a_lock_cut_into_rattlers_blocks_joins_back_to_the_same_bytes(name):
    text = (DATA / "workspaces" / name / "pixi.lock").read_text()
    written = text if text.startswith("version: 7\n") else canonical_lock_text(text)
    assert RawLock.parse(written).text() == written
    if text.startswith("version: 7\n"):  # what pixi wrote is what rattler writes here too
        assert canonical_lock_text(text) == text


@pytest.mark.parametrize("name", WORKSPACES)
def test_lock_cpu_adds_our_environment_and_keeps_theirs_as_pixi_locked_them(name, tmp_path, conda_forge, monkeypatch):
    project = copy_workspace(name, tmp_path / name)
    manifest_before, lock_before = project.manifest.read_text(), project.lockfile.read_text()
    counted = Counted(monkeypatch)
    summary = lock.lock_plans(project, [cpu_plan()], sources=sources_for(project.root, conda_forge))
    # no solve of theirs: ours on each machine the workspace lists (a new CPU environment serves the team), and
    # one PyPI resolve: the local channel has a python for linux-64 alone, so the others are left out with a note
    others = other_machines(manifest_before)
    assert counted.conda == [[f"python {PY}.*"]] * (1 + len(others)) and counted.pypi == ["cpu"]
    named = Manifest.parse(manifest_before).platforms()
    assert {named[n.split(" (")[0].rsplit(" ", 1)[1]].subdir for n in summary.notes
            if n.startswith("environment cpu is not locked for ")} == others
    assert [e.name for e in summary.locked] == ["cpu"]
    assert set(summary.carried_over) == set(yaml.safe_load(lock_before)["environments"])
    assert summary.added == ("environment cpu (its own feature cpu, no default feature)",)
    # pixi.toml: ours added, nothing of theirs removed or changed
    assert removed_lines(manifest_before, project.manifest.read_text()) == []
    # pixi.lock: their environments as pixi wrote them (what pixi writes next, for a version 6 lock)
    lock_after = project.lockfile.read_text()
    original, result = as_pixi_writes(lock_before), RawLock.parse(lock_after)
    assert_kept(original, result, "cpu")
    if lock_before.startswith("version: 7\n"):
        assert removed_lines(lock_before, lock_after) == []  # every line pixi wrote is still there, in order
        assert all(result.platforms[p] == original.platforms[p] for p in original.platforms)
    ws = rules.Workspace.read(project.manifest.read_text(), lock_after, project.root)
    assert rules.every_environment(ws) == [] and rules.virtual_packages(ws) == [] and rules.channels(ws) == []
    # a relock changes nothing (ours is locked again, theirs kept again)
    lock.lock_plans(project, [cpu_plan()], sources=sources_for(project.root, conda_forge))
    assert project.lockfile.read_text() == lock_after


def test_lock_cuda13_on_the_gpu_double_keeps_their_named_cuda_platforms(tmp_path, conda_forge, monkeypatch):
    """multi-machine declares CUDA 12 platforms (p1, p2 in its lock); the H100 double's plan wants CUDA
    13.0, and a new CUDA 13 platform would be taken by their default environment too (its features name
    no platforms): ours is locked on their linux-64, their locked environments stay byte for byte."""
    from resolver.plan.planning import plan_for

    monkeypatch.setenv("RESOLVER_SYSROOT", str(DOUBLES / "h100-1x-driver580"))
    plan = plan_for(Request(target=Target.parse("cuda13.0")))
    assert plan.backend == "cuda" and str(plan.backend_version) == "13.0"
    project = copy_workspace("multi-machine", tmp_path / "multi-machine")
    manifest_before, lock_before = project.manifest.read_text(), project.lockfile.read_text()
    counted = Counted(monkeypatch)
    sources = Sources.load(project.root, flags={"conda-channels": [str(conda_forge)]})
    summary = lock.lock_plans(project, [plan], sources=sources)
    assert counted.pypi == [plan.env_name] and len(counted.conda) == 1 and "cuda-nvcc" in " ".join(counted.conda[0])
    assert any("would also be added to default" in note for note in summary.notes)
    assert removed_lines(manifest_before, project.manifest.read_text()) == []
    assert 'platforms = ["linux-64"]' in project.manifest.read_text().split(f"[feature.{plan.env_name}]")[1]
    lock_after = project.lockfile.read_text()
    assert removed_lines(lock_before, lock_after) == []
    assert_kept(RawLock.parse(lock_before), RawLock.parse(lock_after), plan.env_name)
    assert "torch-2.14.1-" in lock_after and "/cuda-nvcc-13.0" in lock_after
    from resolver.lock.current import lock_status

    assert lock_status(project, [plan]).about(plan.env_name) == ()  # where its lock put it: current, not stale


def test_a_relock_after_pixi_renamed_nothing_matches_platforms_by_identity(tmp_path, conda_forge, monkeypatch):
    """A user renames a named platform in pixi.toml: pixi's lock still calls it p2 (its identity is the
    same), so their environment is kept without a solve, under the alias pixi would write."""
    project = copy_workspace("multi-machine", tmp_path / "renamed")
    text = project.manifest.read_text().replace('name = "cuda-linux-64"', 'name = "gpu-box"')
    project.manifest.write_text(text)
    counted = Counted(monkeypatch)
    lock.lock_plans(project, [cpu_plan()], sources=sources_for(project.root, conda_forge))
    assert counted.pypi == ["cpu"]
    assert_kept(RawLock.parse((DATA / "workspaces" / "multi-machine" / "pixi.lock").read_text()),
                RawLock.parse(project.lockfile.read_text()), "cpu")


def test_their_changed_environment_that_we_cannot_lock_leaves_both_files_untouched(tmp_path, conda_forge, monkeypatch):
    """pixi-source-deps takes PyPI packages from git; its user bumps one: that environment must be locked
    again, which pixi does (the resolver does not build from sources): one sentence, exit 3, nothing written."""
    project = copy_workspace("pypi-source-deps", tmp_path / "changed")
    project.manifest.write_text(project.manifest.read_text().replace('rich = "~=13.7"', 'rich = "~=14.1"'))
    before = {f: (project.root / f).read_bytes() for f in ("pixi.toml", "pixi.lock")}
    counted = Counted(monkeypatch)
    with pytest.raises(BadInput) as caught:
        lock.lock_plans(project, [cpu_plan()], sources=sources_for(project.root, conda_forge))
    assert int(caught.value.code) == 3
    message = caught.value.message
    assert message.startswith("environment default (") and "(rich~=14.1 is not the locked rich 13.9.4)" in message
    assert "it takes click from a URL, which the resolver does not lock" in message and "pixi.toml and pixi.lock are left as they were" in message
    assert caught.value.fix.startswith("run `pixi lock`")
    assert counted.conda == [] and counted.pypi == []
    assert {f: (project.root / f).read_bytes() for f in before} == before


def test_a_lock_laid_out_otherwise_is_kept_as_pixi_writes_it_next(tmp_path, conda_forge):
    """Valid for rattler but not laid out as rattler writes it (flow style, as another YAML writer might):
    their environments are read as rattler reads them and written as pixi would write them next."""
    project = copy_workspace("multi-machine", tmp_path / "flow")
    data = yaml.safe_load(project.lockfile.read_text())
    project.lockfile.write_text(yaml.safe_dump(data, default_flow_style=True, width=10 ** 6))
    next_by_pixi = RawLock.parse(canonical_lock_text(project.lockfile.read_text()))
    lock.lock_plans(project, [cpu_plan()], sources=sources_for(project.root, conda_forge))
    assert_kept(next_by_pixi, RawLock.parse(project.lockfile.read_text()), "cpu")


def test_the_cli_says_what_it_added_to_an_existing_workspace(tmp_path, conda_forge):

    project = copy_workspace("solve-groups", tmp_path / "cli")
    torch = torch_cpu_mirror()
    if torch is None:
        pytest.skip("pip's configuration here has no local torch 2.13.0+cpu wheelhouse")
    done = cli.run("lock", "--target", "cpu", project=project.root, env={"RESOLVER_CONDA_CHANNELS": str(conda_forge)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "added to pixi.toml: environment cpu (its own feature cpu, no default feature)" in done.stdout
    assert "kept unchanged: default, max-py310, min-py38" in done.stdout
