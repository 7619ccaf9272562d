"""Whether pixi.lock still satisfies pixi.toml and the plans, and why not: one test per reason.

Each case is a real pixi.toml and a real pixi.lock (written by the lock's own writer from records made
here, read back by its reader), changed in one way, as pixi's own satisfiability tests do
(tests/data/non-satisfiability/<case>/). Nothing is solved and nothing is fetched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import cli, projects, records
from support.channel_factory import ChannelServer

from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource
from resolver.lock import current, reasons, staleness
from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact, read_lock
from resolver.plan import locked
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths
from resolver.tools.conda import CondaRecord

FORGE = "https://conda.anaconda.org/conda-forge/"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
MANIFEST = """\
[workspace]
name = "stale"
channels = ["conda-forge"]
platforms = ["linux-64"]

[feature.cpu]
platforms = ["linux-64"]

[feature.cpu.dependencies]
python = "3.11.*"
zlib = ">=1.2"

[feature.cpu.pypi-dependencies]
torch = { version = "==2.13.0+cpu", index = "https://download.pytorch.org/whl/cpu" }
numpy = "*"

[environments]
cpu = { features = ["cpu"], solve-group = "cpu", no-default-feature = true }
"""


def record(name: str, version: str, depends: tuple[str, ...] = (), subdir: str = "linux-64") -> CondaRecord:
    file_name = f"{name}-{version}-h0_0.conda"
    fields = {"build": "h0_0", "build_number": 0, "depends": list(depends), "name": name, "subdir": subdir,
              "version": version}
    return CondaRecord(name, version, "h0_0", subdir, f"{FORGE}{subdir}/{file_name}", FORGE, None, None,
                       json.dumps(fields, sort_keys=True))


def wheel(name: str, version: str, requires: tuple[str, ...] = (), index: str | None = None) -> PypiArtifact:
    file_name = f"{name}-{version}-py3-none-any.whl".replace("+", "%2B")
    return PypiArtifact(name, version, f"https://files.example.org/{file_name}", "ab" * 32, requires, ">=3.10",
                        index=index)


LINUX_64 = LockedPlatform("linux-64", "linux-64", ())


def cpu_env(platform: LockedPlatform = LINUX_64, *, conda=None, pypi=None, channels=(FORGE,),
            indexes=("https://pypi.org/simple",), fallback: bool = False) -> LockedEnv:
    conda = (record("python", "3.11.7", ("zlib >=1.2.13",)), record("zlib", "1.3.1")) if conda is None else conda
    pypi = (wheel("torch", "2.13.0+cpu", ("filelock", "numpy ; extra == \"opt\"", "typing-extensions>=4 ; "
                                          "python_version < \"3.12\""), TORCH_INDEX),
            wheel("numpy", "2.1.0"), wheel("filelock", "3.16.0"), wheel("typing-extensions", "4.12.2")) \
        if pypi is None else pypi
    return LockedEnv("cpu", platform, channels, conda, pypi, indexes, fallback=fallback, python="3.11")


def project(tmp_path: Path, manifest: str = MANIFEST, envs: list[LockedEnv] | None = None) -> ProjectPaths:
    """A project whose pixi.lock holds ``envs`` (default: the cpu environment) and the empty default one."""
    envs = [*([cpu_env()] if envs is None else envs), LockedEnv("default", LockedPlatform("linux-64", "linux-64", ()),
                                                                  (FORGE,))]
    return ProjectPaths(projects.project(tmp_path, manifest, lock=envs))


def cpu_plan(python: str = "3.11", torch: str = "2.13.0", platform: str = "linux-64") -> Plan:
    return Plan(backend="cpu", backend_version=None, python=python, platform=platform, target="cpu",
                torch=TorchChoice(torch, "cpu", TorchSource("pypi-index", TORCH_INDEX), local_version="cpu"),
                kernels=KernelChoice("none"), glibc="2.28", conda_packages=(("python", f"{python}.*"),))


def found(paths: ProjectPaths, plans=()) -> list[reasons.Reason]:
    return list(current.lock_status(paths, list(plans)).reasons)


def only(paths: ProjectPaths, kind: type, plans=()) -> reasons.Reason:
    found_here = found(paths, plans)
    assert [type(r) for r in found_here] == [kind], [r.sentence for r in found_here]
    return found_here[0]


# ------------------------------------------------------------------------------------ current
def test_a_lock_of_the_manifest_and_the_plan_is_current(tmp_path):
    paths = project(tmp_path)
    status = current.lock_status(paths, [cpu_plan()])
    assert status.current and status.to_json() == {"current": True, "reasons": []}
    assert current.lock_status(paths).current  # no plan: pixi.toml against pixi.lock only


def test_pixi_toml_order_and_spelling_do_not_make_a_lock_stale(tmp_path):
    spelled = MANIFEST.replace('numpy = "*"', 'NumPy = "*"').replace('zlib = ">=1.2"\n', "") \
        .replace('python = "3.11.*"', 'zlib = ">=1.2"\npython = "3.11.*"')
    assert current.lock_status(project(tmp_path, spelled), [cpu_plan()]).current


# ------------------------------------------------------------------------------- one per reason
def test_no_lock(tmp_path):
    paths = project(tmp_path)
    paths.lockfile.unlink()
    assert only(paths, reasons.LockMissing).sentence == "pixi.lock does not exist"


def test_an_unreadable_lock(tmp_path):
    paths = project(tmp_path)
    paths.lockfile.write_text("version: 7\nenvironments: [\n")
    reason = only(paths, reasons.LockUnreadable)
    assert reason.sentence.startswith("pixi.lock cannot be read (") and reason.environment is None


def test_environment_missing(tmp_path):
    manifest = MANIFEST.replace("[environments]\n", "[feature.gpu.dependencies]\npython = \"3.11.*\"\n\n"
                                                    "[environments]\ngpu = [\"gpu\"]\n")
    reason = only(project(tmp_path, manifest), reasons.EnvironmentMissing)
    assert (reason.environment, reason.sentence) == ("gpu", "environment gpu is not in pixi.lock")


def test_environment_removed(tmp_path):
    envs = [cpu_env(), LockedEnv("old", LockedPlatform("linux-64", "linux-64", ()), (FORGE,), (record("zlib", "1.3.1"),))]
    reason = only(project(tmp_path, envs=envs), reasons.EnvironmentRemoved)
    assert reason.sentence == "pixi.lock holds environment old, which pixi.toml no longer declares"


def test_environment_a_plan_adds(tmp_path):
    plan = Plan(backend="cuda", backend_version="13.0", python="3.11", platform="linux-64", target="cuda13.0",
                torch=TorchChoice("2.13.0", "cu130", TorchSource("pypi-index", "https://download.pytorch.org/whl/cu130"),
                                  local_version="cu130"),
                kernels=KernelChoice("build", ("9.0",)), glibc="2.28", cuda_driver="13.0",
                conda_packages=(("python", "3.11.*"),))
    reason = only(project(tmp_path), reasons.EnvironmentNotDeclared, [plan])
    assert reason.sentence == "pixi.toml has no environment cuda13 yet (the plan for cuda13.0 adds it)"


def test_platform_added(tmp_path):
    manifest = MANIFEST.replace('platforms = ["linux-64"]', 'platforms = ["linux-64", "linux-aarch64"]')
    reason = only(project(tmp_path, manifest), reasons.PlatformAdded)
    assert (reason.environment, reason.platform) == ("cpu", "linux-aarch64")
    assert reason.sentence == "environment cpu is not locked for platform linux-aarch64"


def test_a_plan_for_a_platform_the_environment_does_not_list(tmp_path):
    reason = only(project(tmp_path), reasons.PlatformAdded, [cpu_plan(platform="linux-aarch64")])
    assert reason.platform == "linux-aarch64" and "pixi.toml does not list for it" in reason.sentence


def test_platform_removed(tmp_path):
    envs = [cpu_env(), cpu_env(LockedPlatform("linux-aarch64", "linux-aarch64", ()),
                               conda=(record("python", "3.11.7", subdir="linux-aarch64"),
                                      record("zlib", "1.3.1", subdir="linux-aarch64")))]
    reason = only(project(tmp_path, envs=envs), reasons.PlatformRemoved)
    assert reason.sentence == "pixi.lock holds environment cpu for platform linux-aarch64, which pixi.toml no longer " \
                              "lists for it"


def test_platform_changed(tmp_path):
    """pixi.toml's platform now declares a glibc the lock's platform of that name was not solved with."""
    glibc = '{ name = "linux-64-glibc", platform = "linux-64", glibc = "2.35" }'
    declared = MANIFEST.replace('platforms = ["linux-64"]\n\n[feature', f'platforms = [{glibc}]\n\n[feature', 1) \
        .replace('[feature.cpu]\nplatforms = ["linux-64"]', '[feature.cpu]\nplatforms = ["linux-64-glibc"]')
    was = LockedPlatform("linux-64-glibc", "linux-64", ("__glibc=2.31", "__unix=0=0", "__linux=4.18",
                                                       "__archspec=0=x86_64"))
    reason = only(project(tmp_path, declared, [cpu_env(was)]), reasons.PlatformChanged)
    assert reason.platform == "linux-64-glibc" and "__glibc=2.35" in reason.wanted_virtual_packages
    assert reason.sentence.startswith("platform linux-64-glibc declares [__glibc=2.35") and \
        "but pixi.lock was solved with [__glibc=2.31" in reason.sentence


def test_channels_changed(tmp_path):
    manifest = MANIFEST.replace('channels = ["conda-forge"]', 'channels = ["conda-forge", "bioconda"]')
    reason = only(project(tmp_path, manifest), reasons.ChannelsChanged)
    assert reason.sentence == ("the channels of environment cpu were extended: https://conda.anaconda.org/conda-forge/, "
                               "https://conda.anaconda.org/bioconda/ in pixi.toml, "
                               "https://conda.anaconda.org/conda-forge/ in pixi.lock")


def test_indexes_changed_without_their_credentials_in_the_sentence(tmp_path):
    manifest = MANIFEST.replace("[environments]", '[feature.cpu.pypi-options]\n'
                                                  'extra-index-urls = ["https://user:secret@idx.example/simple"]\n\n'
                                                  "[environments]")
    reason = only(project(tmp_path, manifest), reasons.IndexesChanged)
    assert reason.wanted == ("https://pypi.org/simple", "https://user:secret@idx.example/simple")
    assert "secret" not in reason.sentence and "https://idx.example/simple" in reason.sentence
    assert "secret" not in json.dumps(reason.to_json()) and "https://idx.example/simple" in reason.to_json()["wanted"]


def test_conda_dependency_changed(tmp_path):
    reason = only(project(tmp_path, MANIFEST.replace('zlib = ">=1.2"', 'zlib = ">=1.4"')), reasons.DependencyChanged)
    assert (reason.ecosystem, reason.package, reason.wanted, reason.found) == ("conda", "zlib", ">=1.4", "1.3.1")
    assert reason.sentence == "pixi.toml asks for conda package zlib >=1.4 in environment cpu, but pixi.lock has " \
                              "zlib 1.3.1 (linux-64)"


def test_conda_dependency_added(tmp_path):
    reason = only(project(tmp_path, MANIFEST.replace('zlib = ">=1.2"', 'zlib = ">=1.2"\ncuda-nvcc = "*"')),
                  reasons.DependencyChanged)
    assert reason.found is None and reason.sentence.endswith("but pixi.lock has no conda package cuda-nvcc (linux-64)")


def test_pypi_dependency_changed(tmp_path):
    reason = only(project(tmp_path, MANIFEST.replace('numpy = "*"', 'numpy = ">=2.2"')), reasons.DependencyChanged)
    assert (reason.ecosystem, reason.package, reason.found) == ("pypi", "numpy", "2.1.0")
    assert reason.sentence == "pixi.toml asks for PyPI package numpy >=2.2 in environment cpu, but pixi.lock has " \
                              "numpy 2.1.0 (linux-64)"


def test_pypi_dependency_added(tmp_path):
    reason = only(project(tmp_path, MANIFEST.replace('numpy = "*"', 'numpy = "*"\neinops = "*"')),
                  reasons.DependencyChanged)
    assert reason.package == "einops" and reason.found is None


def test_torch_build_differs_from_the_lock(tmp_path):
    reason = only(project(tmp_path, MANIFEST.replace("==2.13.0+cpu", "==2.14.0+cpu")), reasons.TorchBuildChanged)
    assert reason.sentence == "environment cpu asks for torch ==2.14.0+cpu, but pixi.lock has torch 2.13.0+cpu (linux-64)"


def test_torch_build_the_plan_wants_differs_from_pixi_toml(tmp_path):
    reason = only(project(tmp_path), reasons.TorchBuildChanged, [cpu_plan(torch="2.14.0")])
    assert reason.found_in == "pixi.toml" and reason.platform is None
    assert reason.sentence == f"the plan wants torch==2.14.0+cpu from {TORCH_INDEX} for environment cpu, but " \
                              f"pixi.toml pins torch ==2.13.0+cpu from {TORCH_INDEX}"


def test_python_differs_from_the_lock(tmp_path):
    reason = only(project(tmp_path, MANIFEST.replace('python = "3.11.*"', 'python = "3.12.*"')),
                  reasons.PythonChanged)
    assert reason.sentence == "environment cpu asks for python 3.12.*, but pixi.lock has Python 3.11.7 (linux-64)"


def test_python_the_plan_wants_differs_from_pixi_toml(tmp_path):
    reason = only(project(tmp_path), reasons.PythonChanged, [cpu_plan(python="3.12")])
    assert reason.sentence == "the plan wants Python 3.12 for environment cpu, but pixi.toml pins python 3.11.*"


def test_pypi_packages_nothing_requires_any_more(tmp_path):
    """numpy is torch's only under an extra nobody asks for: removed from pixi.toml, it is left over."""
    reason = only(project(tmp_path, MANIFEST.replace('numpy = "*"\n', "")), reasons.PackagesNotRequired)
    assert (reason.ecosystem, reason.packages) == ("pypi", ("numpy",))
    assert reason.sentence == "pixi.lock holds PyPI packages that nothing in environment cpu requires any more " \
                              "(linux-64): numpy"


def test_pypi_requirements_follow_markers_of_the_locked_python(tmp_path):
    """typing-extensions is torch's only below Python 3.12: with the lock's 3.11 it is required."""
    envs = [cpu_env(pypi=(wheel("torch", "2.13.0+cpu", ("typing-extensions ; python_version >= \"3.12\"",),
                                TORCH_INDEX), wheel("numpy", "2.1.0"), wheel("typing-extensions", "4.12.2")))]
    reason = only(project(tmp_path, envs=envs), reasons.PackagesNotRequired)
    assert reason.packages == ("typing-extensions",)


def test_conda_packages_nothing_requires_any_more(tmp_path):
    envs = [cpu_env(conda=(record("python", "3.11.7", ("zlib >=1.2.13",)), record("zlib", "1.3.1"),
                           record("cuda-nvcc", "13.0.88")))]
    reason = only(project(tmp_path, envs=envs), reasons.PackagesNotRequired)
    assert (reason.ecosystem, reason.packages) == ("conda", ("cuda-nvcc",))


def test_a_fallback_environment_is_held_to_its_python_pin(tmp_path):
    envs = [cpu_env(conda=(), fallback=True)]
    assert current.lock_status(project(tmp_path, envs=envs), [cpu_plan()]).current
    reason = only(project(tmp_path, MANIFEST.replace('python = "3.11.*"', 'python = "3.12.*"'), envs),
                  reasons.PythonChanged)
    assert reason.found == "3.11"


def test_a_lock_without_its_pypi_part_satisfies_only_a_no_pypi_lock(tmp_path):
    paths = project(tmp_path, envs=[cpu_env(pypi=())])
    assert sorted(r.kind for r in found(paths)) == ["dependency-changed", "torch-build-changed"]
    assert current.lock_status(paths, pypi=False).current  # what `lock --no-pypi` (and --check --no-pypi) asks


def test_every_reason_says_which_environment_and_serialises(tmp_path):
    manifest = MANIFEST.replace('numpy = "*"', 'numpy = ">=2.2"').replace('python = "3.11.*"', 'python = "3.12.*"')
    status = current.lock_status(project(tmp_path, manifest), [cpu_plan()])
    kinds = [r["kind"] for r in json.loads(json.dumps(status.to_json()))["reasons"]]
    assert kinds == ["python-changed", "python-changed", "dependency-changed"]
    assert status.stale_environments() == ("cpu",)
    assert not status.fits("cpu", "linux-64") and status.fits("default", "linux-64")


def test_the_check_reads_what_it_is_given_and_solves_nothing(tmp_path):
    """The function itself: a parsed lock, a manifest, plans (what a fleet relock carries over with)."""
    paths = project(tmp_path)
    parsed = read_lock(paths.lockfile, paths.root)
    manifest = Manifest.load(paths.manifest)
    assert staleness.check(parsed, manifest, [cpu_plan()]).current
    assert [r.kind for r in staleness.check(None, manifest).reasons] == ["lock-missing"]


# ------------------------------------------------------------------------ remembered answers
def test_a_current_answer_is_remembered_by_its_inputs_only(tmp_path):
    paths = project(tmp_path)
    assert current.lock_status(paths, remember=True).current
    stamp = records.read(paths.lock_check_stamp)
    assert stamp == {"inputs_digest": stamp["inputs_digest"], "value": True} and len(stamp["inputs_digest"]) == 64
    paths.manifest.write_text(MANIFEST.replace('numpy = "*"', 'numpy = ">=2.2"'))  # the stamp no longer applies
    assert not current.lock_status(paths, remember=True).current
    paths.manifest.write_text(MANIFEST)
    assert current.lock_status(paths).current


def test_a_stamp_others_could_have_written_is_not_taken(tmp_path):
    paths = project(tmp_path)
    assert current.lock_status(paths, remember=True).current
    stamp = paths.lock_check_stamp.read_bytes()
    paths.manifest.write_text(MANIFEST.replace('numpy = "*"', 'numpy = ">=2.2"'))
    # a stamp claiming the edited inputs are current: taken only from a file no one else can write
    from resolver.lock.current import _inputs_digest

    records.plant(paths.lock_check_stamp, {"inputs_digest": _inputs_digest(paths, None), "value": True})
    os.chmod(paths.lock_check_stamp, 0o666)
    assert not current.lock_status(paths).current
    os.chmod(paths.lock_check_stamp, 0o644)
    paths.lock_check_stamp.unlink()
    os.symlink(tmp_path / "elsewhere.json", paths.lock_check_stamp)
    (tmp_path / "elsewhere.json").write_bytes(stamp)
    assert not current.lock_status(paths).current


# ----------------------------------------------------------------------------------- the CLI
def test_lock_check_exits_0_when_current_and_1_with_the_reason_when_stale(tmp_path):
    paths = project(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = cli.run("lock", "--check", "--json", project=paths.root)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["current"] is True and data["reasons"] == []
    paths.manifest.write_text(MANIFEST.replace('numpy = "*"', 'numpy = ">=2.2"'))
    done = cli.run("lock", "--check", project=paths.root)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "pixi.toml asks for PyPI package numpy >=2.2 in environment cpu, but pixi.lock has numpy 2.1.0" in done.stdout
    data = json.loads(cli.run("lock", "--check", "--json", project=paths.root).stdout)
    assert data["current"] is False and [r["kind"] for r in data["reasons"]] == ["dependency-changed"]
    assert data["reasons"][0]["environment"] == "cpu" and data["reasons"][0]["package"] == "numpy"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # it wrote nothing, solved nothing


def test_a_no_op_lock_answers_without_rattler_or_tomlkit(tmp_path):
    """An unchanged project: `lock` says so from the remembered answer, loading neither py-rattler nor
    tomlkit (most of what a full check costs), nor the lock's parser, the upgrade record, the version types
    or `secrets` (milliseconds each of a command that must stay within 3x of starting Python)."""
    paths = project(tmp_path)
    locked.save(paths, cpu_plan(), Manifest.load(paths.manifest))  # what an earlier lock of --target cpu left
    done = cli.run("lock", "--json", project=paths.root)  # a full check of the stored plan: current, remembered
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "up-to-date"
    probe = ("import sys; from resolver.cli import main; code = main(['lock', '--json']); "
             "print({'code': code, 'loaded': sorted({'rattler', 'tomlkit', 'packaging', 'resolver.lock.lockfile', "
             "'resolver.project.upgrade_record', 'resolver.core.versions', 'secrets'} & set(sys.modules))})")
    env = dict(os.environ, RESOLVER_PROJECT=str(paths.root))
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.rstrip().endswith("{'code': 0, 'loaded': []}"), done.stdout + done.stderr
    assert '"status": "up-to-date"' in done.stdout


# ----------------------------------------------------------------------------------- setup
def test_setup_says_why_it_relocks(tmp_path):
    """setup's lock step skips a current lock and names the reason of a stale one (a dry run: nothing solved)."""
    from resolver.core.ui import Output
    from resolver.workflows.setup import Setup, SetupOptions
    from resolver.workflows.steps import StepLog

    paths = project(tmp_path)

    def lock_step() -> tuple[str, str]:
        log = StepLog(quiet=True)
        Setup(paths, SetupOptions(dry_run=True), log, Output(quiet=True))._lock(cpu_plan())
        return log.reports[-1].status, log.reports[-1].detail

    assert lock_step() == ("skipped", "pixi.lock is current for cpu")
    paths.manifest.write_text(MANIFEST.replace('numpy = "*"', 'numpy = ">=2.2"'))
    assert lock_step() == ("would-run", "relock: pixi.toml asks for PyPI package numpy >=2.2 in environment cpu, but "
                                        "pixi.lock has numpy 2.1.0 (linux-64)")
    paths.lockfile.unlink()
    assert lock_step() == ("would-run", "relock: pixi.lock does not exist")


# ------------------------------------------------------------------------------------ sources
def test_a_path_of_this_machine_that_a_mirror_now_maps_is_stale(tmp_path, monkeypatch):
    """The sources are part of staleness: a wheel recorded at a path of this machine is current while no
    source maps it; once [tool.resolver.mirrors] maps that folder to its canonical index, a lock records the
    canonical address, so the lock is stale, and says which file and which address."""
    import dataclasses

    from resolver.project.sources import Sources

    env = cpu_env()
    local = "file:///srv/wheels/torch-2.13.0%2Bcpu-py3-none-any.whl"
    env = dataclasses.replace(env, pypi=tuple(dataclasses.replace(a, location=local) if a.name == "torch" else a
                                              for a in env.pypi))
    paths = project(tmp_path, envs=[env])
    lock, manifest = read_lock(paths.lockfile, paths.root), Manifest.load(paths.manifest)
    assert staleness.check(lock, manifest, sources=Sources()).current
    mirrored = Sources(mirrors=((TORCH_INDEX, "/srv/wheels"),))
    (reason,) = staleness.check(lock, manifest, sources=mirrored).reasons
    assert isinstance(reason, reasons.LocationNotCanonical) and reason.package == "torch"
    assert reason.canonical == f"{TORCH_INDEX}/torch-2.13.0%2Bcpu-py3-none-any.whl"
    assert "[tool.resolver.mirrors] now maps to" in reason.sentence
    assert staleness.check(lock, manifest, sources=mirrored, pypi=False).current  # --no-pypi holds no wheel
    # through lock_status: the mirrors entry in pixi.toml makes the remembered "current" answer not apply
    assert current.lock_status(paths, remember=True).current
    paths.manifest.write_text(MANIFEST + f'\n[tool.resolver.mirrors]\n"{TORCH_INDEX}" = "/srv/wheels"\n')
    assert [r.kind for r in current.lock_status(paths).reasons] == ["location-not-canonical"]


def test_a_remembered_answer_holds_only_for_the_same_sources(tmp_path, monkeypatch):
    """Sources set outside pixi.toml (an environment variable, what the last lock here was told) are inputs
    of the check too: the answer remembered under other sources is not taken."""
    from resolver.lock.current import _inputs_digest

    paths = project(tmp_path)
    monkeypatch.delenv("RESOLVER_FIND_LINKS", raising=False)
    before = _inputs_digest(paths, None)
    monkeypatch.setenv("RESOLVER_FIND_LINKS", "/srv/other-wheels")
    assert _inputs_digest(paths, None) != before


def test_a_package_only_the_locks_own_requires_dist_reaches_is_not_required(tmp_path):
    """pixi.lock claims numpy requires ``evil`` (and locks evil): where this user's resolver read numpy's own
    metadata (the sealed record a lock keeps, by the wheel's sha256), that is what the check follows, and
    evil is required by nothing; a record of that metadata that came with the checkout is no record."""
    import dataclasses

    base = cpu_env()
    numpy_sha, evil_sha = "01" * 32, "02" * 32
    pypi = tuple(dataclasses.replace(a, sha256=numpy_sha, requires_dist=("evil",)) if a.name == "numpy" else a
                 for a in base.pypi) + (dataclasses.replace(wheel("evil", "1.0"), sha256=evil_sha),)
    paths = project(tmp_path, envs=[dataclasses.replace(base, pypi=pypi)])
    assert current.lock_status(paths).current  # no record, no copy, no index that answers: the claim is all there is
    honest = {numpy_sha: {"requires_dist": [], "requires_python": ">=3.10"}}
    records.unsealed(paths.pypi_requires, honest)  # as a clone would bring it: not this user's reading
    assert current.lock_status(paths).current
    records.plant(paths.pypi_requires, honest)  # what a lock here read from numpy's METADATA
    reason = only(paths, reasons.PackagesNotRequired)
    assert reason.packages == ("evil",) and reason.ecosystem == "pypi"
    done = cli.run("lock", "--check", project=paths.root)
    assert done.returncode == 1 and "evil" in done.stdout


def _fresh_clone_claiming(tmp_path: Path, location: str, wheels: dict[str, Path]) -> ProjectPaths:
    """A checkout as a clone brings it (no record of any reading here): pixi.lock claims that ``base``
    requires ``evil``, and locks both; base's own METADATA requires nothing."""
    from resolver.core.fs import sha256_of

    pypi = (PypiArtifact("base", "1.0", location.format(file=wheels["base"].name), sha256_of(wheels["base"]),
                         ("evil",), ">=3.10"),
            PypiArtifact("evil", "1.0", location.format(file=wheels["evil"].name), sha256_of(wheels["evil"]), (),
                         ">=3.10"))
    manifest = MANIFEST.replace('numpy = "*"', 'base = "*"').replace(
        'torch = { version = "==2.13.0+cpu", index = "https://download.pytorch.org/whl/cpu" }\n', "")
    return project(tmp_path, manifest, envs=[cpu_env(pypi=pypi)])


def _wheels(folder: Path) -> dict[str, Path]:
    from support.channel_factory import write_wheel

    return {name: write_wheel(folder, name, "1.0", {f"{name}/__init__.py": f"FROM = {str(folder)!r}\n"})
            for name in ("base", "evil")}


def test_in_a_fresh_clone_the_check_follows_a_local_wheels_own_metadata_not_the_locks_claim(tmp_path):
    wheels = _wheels(tmp_path / "wheels")
    paths = _fresh_clone_claiming(tmp_path / "clone", "file://" + str(tmp_path / "wheels") + "/{file}", wheels)
    reason = only(paths, reasons.PackagesNotRequired)
    assert reason.packages == ("evil",)
    done = cli.run("lock", "--check", project=paths.root)
    assert done.returncode == 1 and "evil" in done.stdout


def test_a_local_file_that_is_not_the_locked_one_is_not_read_for_its_requirements(tmp_path):
    wheels = _wheels(tmp_path / "wheels")
    paths = _fresh_clone_claiming(tmp_path / "clone", "file://" + str(tmp_path / "wheels") + "/{file}", wheels)
    wheels["base"].write_bytes(wheels["base"].read_bytes() + b"\n")  # no longer the file whose sha256 is locked
    assert current.lock_status(paths).current  # its claim stands: nothing here is the locked file's own word


def _metadata_files(wheels: dict[str, Path], name_of: dict[str, str] | None = None) -> None:
    import zipfile

    for name, path in wheels.items():
        with zipfile.ZipFile(path) as archive:
            text = archive.read(f"{name}-1.0.dist-info/METADATA").decode()
        if name_of and name in name_of:
            text = text.replace(f"Name: {name}", f"Name: {name_of[name]}")
        (path.parent / (path.name + ".metadata")).write_text(text)


def test_in_a_fresh_clone_the_check_reads_the_indexs_pep_658_metadata_of_a_remote_wheel(tmp_path):
    wheels = _wheels(tmp_path / "served")
    _metadata_files(wheels)
    index = ChannelServer(tmp_path / "served")
    try:
        paths = _fresh_clone_claiming(tmp_path / "clone", index.url + "{file}", wheels)
        assert only(paths, reasons.PackagesNotRequired).packages == ("evil",)
    finally:
        index.close()
    assert not paths.pypi_requires.exists()  # a check writes no record of what it read


def test_metadata_that_names_another_package_is_not_followed(tmp_path):
    wheels = _wheels(tmp_path / "served")
    _metadata_files(wheels, {"base": "other"})
    index = ChannelServer(tmp_path / "served")
    try:
        paths = _fresh_clone_claiming(tmp_path / "clone", index.url + "{file}", wheels)
        assert current.lock_status(paths).current  # not base's metadata: the claim stands, install checks the file
    finally:
        index.close()


def test_in_a_fresh_clone_the_check_reads_a_wheel_install_verified_before(tmp_path):
    """The index does not answer (offline), but the verified store holds the locked file (install fetched
    and checked it for another checkout of this user's): its own metadata is read there."""
    wheels = _wheels(tmp_path / "wheels")
    paths = _fresh_clone_claiming(tmp_path / "clone", "https://files.example.org/{file}", wheels)
    assert current.lock_status(paths).current  # nothing answers for base yet
    from resolver.core.fs import sha256_of

    paths.verified_store.put(wheels["base"].as_uri(), sha256_of(wheels["base"]), wheels["base"].name)
    assert only(paths, reasons.PackagesNotRequired).packages == ("evil",)
