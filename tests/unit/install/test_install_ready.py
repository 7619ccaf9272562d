"""When install calls an environment ready and up to date, and how the commands that run inside one find it:
the ready marker (what install wrote, nothing else), its lock digest, ``Environment.find``'s refusals word
for word, an in-environment helper's failure, and install's own deciding steps (which environment of the
lock, what kind, leftovers of an interrupted run, the pip a fallback seeds, whether the moved environment
runs).

Everything here is a tmp_path project with a hand-written pixi.lock and ready marker: nothing is solved,
fetched or installed, so the install-ready mutation campaign (tests/mutation.py) runs these in process.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from support import projects, records

from resolver.core.errors import BadInput, BuildFailed, EnvironmentProblem
from resolver.core.platforms import host_subdir
from resolver.install import (
    InstallSummary,
    _does_not_run,
    _into_place,
    _remove_leftovers,
    _target,
    environment_digest,
    install_environment,
    locked_environment,
    locked_environment_digest,
    seeded_pip,
)
from resolver.install.environment import READY_MARKER, Answer, Environment, ready_record
from resolver.install.template import EnvBuild
from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact
from resolver.project.paths import ProjectPaths
from resolver.tools.conda import CondaRecord
from resolver.tools.proc import Completed

FORGE = "http://127.0.0.1:9/conda-forge/"  # a port that refuses at once: a slip that fetches fails fast
HOST = LockedPlatform(host_subdir(), host_subdir(), ())
OTHER = LockedPlatform("other", "osx-arm64" if host_subdir() != "osx-arm64" else "linux-64", ())
HERE_PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def record(name: str, version: str, sha256: str | None = "11" * 32, md5: str | None = None,
           subdir: str = HOST.subdir) -> CondaRecord:
    fields = {"build": "h0_0", "build_number": 0, "depends": [], "name": name, "subdir": subdir, "version": version,
              **({"sha256": sha256} if sha256 else {}), **({"md5": md5} if md5 else {})}
    return CondaRecord(name, version, "h0_0", subdir, f"{FORGE}{subdir}/{name}-{version}-h0_0.conda", FORGE,
                       sha256, md5, json.dumps(fields, sort_keys=True))


WHEEL = PypiArtifact("plain", "1", "https://files.example.org/plain-1-py3-none-any.whl", "cd" * 32)
CONDA_ENV = LockedEnv("cpu", HOST, (FORGE,), (record("python", "3.11.7"), record("zlib", "1.3.1", "22" * 32)),
                      (WHEEL,), python="3.11")


def project_with(tmp_path: Path, *envs: LockedEnv) -> ProjectPaths:
    return ProjectPaths(projects.project(tmp_path, "", lock=envs))


def marker(**changes) -> dict:
    data = {"environment": "cpu", "kind": "conda", "python": "3.11", "platform": HOST.subdir,
            "lock_digest": "ab" * 32, "conda": ["python-3.11.7-h0_0"], "pypi": ["plain==1"]}
    data.update(changes)
    return data


def write_marker(folder: Path, data: dict) -> None:
    records.plant(folder / READY_MARKER, data)


def installed(project: ProjectPaths, name: str, kind: str = "conda", python: bool = True) -> Path:
    path = project.env(name)
    if kind == "conda":
        (path / "conda-meta").mkdir(parents=True)
    else:
        path.mkdir(parents=True)
        (path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    if python:
        (path / "bin").mkdir()
        (path / "bin" / "python").write_text("")
    return path


def refusal(error: pytest.ExceptionInfo) -> tuple[str, str | None]:
    return error.value.message, error.value.fix


# ------------------------------------------------------------------------------------------ the ready marker


def test_the_marker_install_writes_reads_back_with_what_was_seeded(tmp_path):
    write_marker(tmp_path, marker(kind="venv", seeded=["pip==24.2"]))
    assert ready_record(tmp_path) == marker(kind="venv", seeded=["pip==24.2"])
    write_marker(tmp_path, marker())
    assert ready_record(tmp_path) == marker()


def test_no_marker_is_no_record(tmp_path):
    assert ready_record(tmp_path) is None


@pytest.mark.parametrize("changes", [
    {"kind": "pip"}, {"lock_digest": "AB" * 32}, {"lock_digest": "ab" * 31}, {"conda": "python-3.11.7-h0_0"},
    {"environment": 3}, {"seeded": "pip==24.2"}, {"command": "rm -rf /"},
], ids=["kind", "digest-case", "digest-length", "conda-not-a-list", "environment-not-text", "seeded-not-a-list",
        "unknown-key"])
def test_a_marker_that_is_not_one_install_wrote_is_refused(tmp_path, changes):
    write_marker(tmp_path, marker(**changes))
    assert ready_record(tmp_path) is None


@pytest.mark.parametrize("key", ["environment", "kind", "python", "platform", "lock_digest", "conda", "pypi"])
def test_a_marker_lacking_a_field_install_writes_is_refused(tmp_path, key):
    data = marker()
    del data[key]
    write_marker(tmp_path, data)
    assert ready_record(tmp_path) is None


@pytest.mark.parametrize("key, longest", [("environment", 64), ("python", 32), ("platform", 64)])
def test_a_markers_names_are_bounded(tmp_path, key, longest):
    write_marker(tmp_path, marker(**{key: "a" * longest}))
    assert ready_record(tmp_path) is not None
    write_marker(tmp_path, marker(**{key: "a" * (longest + 1)}))
    assert ready_record(tmp_path) is None


@pytest.mark.parametrize("key", ["conda", "pypi", "seeded"])
def test_a_markers_package_entries_are_bounded(tmp_path, key):
    write_marker(tmp_path, marker(**{key: ["a" * 1024]}))
    assert ready_record(tmp_path) is not None
    write_marker(tmp_path, marker(**{key: ["a" * 1025]}))
    assert ready_record(tmp_path) is None


def test_a_marker_that_is_a_link_is_not_followed(tmp_path):
    write_marker(tmp_path / "elsewhere", marker())
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / READY_MARKER).symlink_to(tmp_path / "elsewhere" / READY_MARKER)
    assert ready_record(tmp_path / "env") is None


# ------------------------------------------------------------------------------------------ an environment


def test_a_folder_is_a_conda_prefix_or_a_virtual_environment_or_neither(tmp_path):
    conda, venv, both, neither = (tmp_path / n for n in ("conda", "venv", "both", "neither"))
    (conda / "conda-meta").mkdir(parents=True)
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("")
    (both / "conda-meta").mkdir(parents=True)
    (both / "pyvenv.cfg").write_text("")
    neither.mkdir()
    assert [Environment.kind_of(p) for p in (conda, venv, both, neither)] == ["conda", "venv", "venv", None]


def test_a_conda_meta_file_or_a_pyvenv_cfg_folder_makes_no_environment(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "conda-meta").write_text("")
    (tmp_path / "b" / "pyvenv.cfg").mkdir(parents=True)
    assert Environment.kind_of(tmp_path / "a") is None and Environment.kind_of(tmp_path / "b") is None


@pytest.mark.skipif(os.name == "nt", reason="the POSIX layout")
@pytest.mark.parametrize("kind", ["conda", "venv"])
def test_an_environments_python_and_scripts_are_in_bin(tmp_path, kind):
    env = Environment("cpu", tmp_path, kind)
    assert (env.python, env.bin_dir) == (tmp_path / "bin" / "python", tmp_path / "bin")


def test_an_environment_is_ready_once_its_marker_is_there(tmp_path):
    env = Environment("cpu", tmp_path, "conda")
    assert not env.ready
    (tmp_path / READY_MARKER).mkdir()
    assert not env.ready  # a folder in its place is no marker
    (tmp_path / READY_MARKER).rmdir()
    records.unsealed(tmp_path / READY_MARKER, marker())
    assert not env.ready  # a marker that came with the folder (a copy, a clone) is not install's
    write_marker(tmp_path, marker())
    assert env.ready


def test_a_child_in_an_environment_imports_the_resolver_and_not_our_python_home():
    package_parent = str(Path(__import__("resolver").__file__).resolve().parents[1])
    env = Environment("cpu", Path("/nowhere"), "conda")
    merged = env.child_environ({"PYTHONPATH": "/theirs", "PYTHONHOME": "/ours", "KEEP": "1"})
    assert merged == {"PYTHONPATH": f"{package_parent}{os.pathsep}/theirs", "KEEP": "1"}
    assert env.child_environ({}) == {"PYTHONPATH": package_parent}


def test_a_child_inherits_this_process_environment_when_given_none(monkeypatch):
    monkeypatch.setenv("RESOLVER_INHERITED", "yes")
    monkeypatch.setenv("PYTHONHOME", "/ours")
    merged = Environment("cpu", Path("/nowhere"), "conda").child_environ()
    assert merged["RESOLVER_INHERITED"] == "yes" and "PYTHONHOME" not in merged


@pytest.mark.skipif(os.name == "nt", reason="the POSIX activate script")
def test_an_entered_environment_has_what_its_own_activate_script_sets(tmp_path):
    """``run``/``shell`` give a command the variables ``source bin/activate`` gives a shell: read from the
    script itself (what a package's activation adds included), without our PYTHONHOME or the shell's ``_``."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "activate").write_text(
        f'VIRTUAL_ENV="{tmp_path}"\nexport VIRTUAL_ENV\nPATH="$VIRTUAL_ENV/bin:$PATH"\nexport PATH\n'
        'export FROM_A_PACKAGE="set by activate.d"\necho "printed while activating"\n')
    env = Environment("cpu", tmp_path, "venv")
    entered = env.activated_environ({"PATH": "/usr/bin:/bin", "PYTHONHOME": "/ours", "KEEP": "a=b\nc"})
    assert entered["VIRTUAL_ENV"] == str(tmp_path) and entered["FROM_A_PACKAGE"] == "set by activate.d"
    assert entered["PATH"] == f"{tmp_path}/bin:/usr/bin:/bin" and entered["KEEP"] == "a=b\nc"
    assert "PYTHONHOME" not in entered and "_" not in entered and "CONDA_PREFIX" not in entered


@pytest.mark.skipif(os.name == "nt", reason="the POSIX layout")
@pytest.mark.parametrize("script", ["none", "fails", "a link"])
@pytest.mark.parametrize("kind", ["conda", "venv"])
def test_without_a_usable_activate_script_an_entered_environment_is_its_bin_first_and_its_prefix(tmp_path, kind,
                                                                                                  script):
    """No script, one that exits with an error, or a link in its place (never run): the variables every
    activation sets, worked out here."""
    (tmp_path / "bin").mkdir()
    if script == "fails":
        (tmp_path / "bin" / "activate").write_text("export HALF=done\nexit 3\n")
    elif script == "a link":
        target = tmp_path / "elsewhere"
        target.write_text("export FROM_THE_LINK=1\n")
        (tmp_path / "bin" / "activate").symlink_to(target)
    env = Environment("gpu", tmp_path, kind)
    entered = env.activated_environ({"PATH": "/usr/bin", "PYTHONHOME": "/ours", "KEEP": "1"})
    prefix = {"conda": "CONDA_PREFIX", "venv": "VIRTUAL_ENV"}[kind]
    assert entered == {"PATH": f"{tmp_path}/bin:/usr/bin", prefix: str(tmp_path), "CONDA_DEFAULT_ENV": "gpu",
                       "KEEP": "1"}
    assert env.activated_environ({})["PATH"] == f"{tmp_path}/bin"


def test_an_entered_environment_starts_from_this_process_environment_when_given_none(tmp_path, monkeypatch):
    monkeypatch.setenv("RESOLVER_INHERITED", "yes")
    monkeypatch.setenv("PYTHONHOME", "/ours")
    entered = Environment("cpu", tmp_path, "conda").activated_environ()
    assert entered["RESOLVER_INHERITED"] == "yes" and "PYTHONHOME" not in entered


def test_an_environments_python_runs_with_the_resolver_importable(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    env = Environment("cpu", tmp_path, "venv")
    done = env.run_python(["-c", "import resolver, sys; print(resolver.__file__); print(sys.argv[1:])", "x"],
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [__import__("resolver").__file__, "['x']"]
    answer = env.call("resolver.core.inenv_protocol", timeout=60)  # a module that answers nothing
    assert answer.document is None and answer.completed.returncode == 0


# ------------------------------------------------------------------------------------------ Environment.find


def test_find_without_a_name_takes_the_only_environment_installed(tmp_path):
    project = ProjectPaths(tmp_path)
    path = installed(project, "cpu")
    (project.envs / ".gpu.tmp-12").mkdir()  # an interrupted install's folder is no environment
    (project.envs / ".gpu.tmp-12" / "conda-meta").mkdir()
    (project.envs / "half").mkdir()  # neither kind
    assert Environment.find(project) == Environment("cpu", path, "conda")


def test_find_by_name_takes_that_environment_of_its_kind(tmp_path):
    project = ProjectPaths(tmp_path)
    installed(project, "cpu")
    path = installed(project, "fb", kind="venv")
    assert Environment.find(project, "fb") == Environment("fb", path, "venv")


def test_find_without_a_name_takes_the_projects_default_among_several(tmp_path):
    project = ProjectPaths(tmp_path)
    installed(project, "cpu")
    path = installed(project, "gpu")
    (tmp_path / "pixi.toml").write_text('[tool.resolver.upgrade]\ndefault = "gpu"\n')
    assert Environment.find(project) == Environment("gpu", path, "conda")


def test_find_refuses_a_default_that_is_not_installed(tmp_path):
    project = ProjectPaths(tmp_path)
    installed(project, "cpu")
    (tmp_path / "pixi.toml").write_text('[tool.resolver.upgrade]\ndefault = "gpu"\n')
    with pytest.raises(EnvironmentProblem) as error:
        Environment.find(project)
    assert refusal(error) == (
        "the project's default environment 'gpu' (pixi.toml [tool.resolver.upgrade]) is not installed",
        "run `python -m resolver setup` (or `install --env gpu`), or choose another environment with --env")


@pytest.mark.parametrize("has_envs_folder", [False, True])
def test_find_refuses_when_no_environment_is_installed(tmp_path, has_envs_folder):
    project = ProjectPaths(tmp_path)
    if has_envs_folder:
        (project.envs / "Upper" / "conda-meta").mkdir(parents=True)  # not an environment name
        (project.envs / "plain").mkdir()
    with pytest.raises(EnvironmentProblem) as error:
        Environment.find(project)
    assert refusal(error) == (f"no environment is installed in {project.envs}",
                              "run `python -m resolver setup` (or `lock` then `install`)")


def test_find_refuses_to_guess_among_several(tmp_path):
    project = ProjectPaths(tmp_path)
    for name in ("gpu", "cpu", "fb"):
        installed(project, name)
    with pytest.raises(EnvironmentProblem) as error:
        Environment.find(project)
    assert refusal(error) == ("several environments are installed (cpu, fb, gpu)", "choose one with --env, e.g. --env cpu")


def test_find_refuses_a_named_environment_that_is_not_installed(tmp_path):
    project = ProjectPaths(tmp_path)
    installed(project, "cpu")
    (project.envs / "gpu").mkdir()
    with pytest.raises(EnvironmentProblem) as error:
        Environment.find(project, "gpu")
    assert refusal(error) == (f"environment 'gpu' is not installed (no {project.envs / 'gpu'})",
                              "run `python -m resolver install --env gpu`")


def test_find_refuses_an_environment_without_its_python(tmp_path):
    project = ProjectPaths(tmp_path)
    installed(project, "cpu", python=False)
    with pytest.raises(EnvironmentProblem) as error:
        Environment.find(project, "cpu")
    assert refusal(error) == (f"environment 'cpu' at {project.envs / 'cpu'} has no Python",
                              "run `python -m resolver install --env cpu` to repair it")


# ------------------------------------------------------------------------------------------ Answer.failure


def completed(**fields) -> Completed:
    return Completed(("python",), **{"returncode": 1, "stdout": "", **fields})


def test_a_helper_that_timed_out_says_so_in_whole_seconds():
    assert Answer(None, completed(timed_out=True, seconds=29.6, stderr="late")).failure == "no answer within 30 s"


def test_a_helpers_failure_is_the_last_line_it_printed():
    assert Answer(None, completed(stderr="Traceback\n  ImportError: no torch  \n\n  \n")).failure == "ImportError: no torch"
    assert Answer(None, completed(stdout="starting\n  gave up \n")).failure == "gave up"
    assert Answer(None, completed(stderr="on stderr", stdout="on stdout")).failure == "on stderr"


def test_a_silent_helpers_failure_is_its_exit_status():
    assert Answer(None, completed(returncode=3, stderr=" \n")).failure == "exit 3, no output"


def test_a_helpers_failure_is_cut_at_300_characters():
    assert Answer(None, completed(stderr="x" * 400)).failure == "x" * 300


# ------------------------------------------------------------------------------------------ the lock's digest


def test_the_digest_is_of_the_environment_its_platform_and_every_artefact_sorted():
    zlib = record("zlib", "1.3.1", sha256=None, md5="ef" * 16)
    env = LockedEnv("cpu", HOST, (FORGE,), (record("python", "3.11.7"), zlib), (WHEEL,))
    lines = ["cpu", HOST.subdir, *sorted([f"{FORGE}{HOST.subdir}/python-3.11.7-h0_0.conda {'11' * 32}",
                                          f"{FORGE}{HOST.subdir}/zlib-1.3.1-h0_0.conda {'ef' * 16}"]),
             f"{WHEEL.location} {WHEEL.sha256}"]
    # the value is kept from release to release: an environment installed before stays up to date
    assert environment_digest(env) == hashlib.sha256("\n".join(lines).encode()).hexdigest()


def test_the_digest_ignores_the_order_of_the_lock_and_what_install_does_not_use():
    python, zlib = record("python", "3.11.7"), record("zlib", "1.3.1", "22" * 32)
    other = PypiArtifact("other", "2", "https://files.example.org/other-2-py3-none-any.whl", "ee" * 32)
    one = LockedEnv("cpu", HOST, (FORGE,), (python, zlib), (WHEEL, other), python="3.11")
    again = LockedEnv("cpu", LockedPlatform("p1", HOST.subdir, ("__cuda=13",)), ("https://elsewhere.org/",),
                      (zlib, python), (other, WHEEL), indexes=("https://pypi.org/simple",))
    assert environment_digest(one) == environment_digest(again)


def test_the_digest_changes_with_anything_install_uses():
    python, zlib = record("python", "3.11.7"), record("zlib", "1.3.1", "22" * 32)
    base = LockedEnv("cpu", HOST, (FORGE,), (python, zlib), (WHEEL,))
    changed = [
        LockedEnv("gpu", HOST, (FORGE,), (python, zlib), (WHEEL,)),
        LockedEnv("cpu", OTHER, (FORGE,), (python, zlib), (WHEEL,)),
        LockedEnv("cpu", HOST, (FORGE,), (python, record("zlib", "1.3.2", "22" * 32)), (WHEEL,)),
        LockedEnv("cpu", HOST, (FORGE,), (python, record("zlib", "1.3.1", "33" * 32)), (WHEEL,)),
        LockedEnv("cpu", HOST, (FORGE,), (python,), (WHEEL,)),
        LockedEnv("cpu", HOST, (FORGE,), (python, zlib), (PypiArtifact("plain", "1", WHEEL.location, "dd" * 32),)),
        LockedEnv("cpu", HOST, (FORGE,), (python, zlib),
                  (PypiArtifact("plain", "1", WHEEL.location.replace("files", "mirror"), WHEEL.sha256),)),
        LockedEnv("cpu", HOST, (FORGE,), (python, zlib)),
    ]
    digests = {environment_digest(e) for e in [base, *changed]}
    assert len(digests) == 1 + len(changed)


def test_a_packages_md5_counts_only_when_it_has_no_sha256():
    def env(sha256, md5):
        return LockedEnv("cpu", HOST, (FORGE,), (record("zlib", "1.3.1", sha256, md5),))
    assert environment_digest(env("22" * 32, "ef" * 16)) == environment_digest(env("22" * 32, "aa" * 16))
    assert environment_digest(env(None, "ef" * 16)) != environment_digest(env(None, "aa" * 16))


def test_the_locked_digest_is_that_of_the_environment_locked_for_this_machine(tmp_path):
    project = project_with(tmp_path, CONDA_ENV, LockedEnv("cpu", OTHER, (FORGE,), (record("python", "3.11.7",
                                                                                           subdir=OTHER.subdir),)))
    assert locked_environment_digest(project, "cpu") == environment_digest(locked_environment(project, "cpu"))
    assert locked_environment_digest(project, "cpu") == environment_digest(CONDA_ENV)


def test_the_locked_digest_is_empty_when_nothing_is_locked_for_it(tmp_path):
    project = project_with(tmp_path, LockedEnv("cpu", OTHER, (FORGE,), (record("python", "3.11.7",
                                                                               subdir=OTHER.subdir),)))
    assert locked_environment_digest(project, "cpu") == ""
    assert locked_environment_digest(project, "gpu") == ""
    assert locked_environment_digest(ProjectPaths(tmp_path / "no-lock"), "cpu") == ""


# ------------------------------------------------------------------------------------------ which environment


def test_the_only_locked_environment_is_taken_without_a_name(tmp_path):
    project = project_with(tmp_path, CONDA_ENV)
    assert locked_environment(project, None).name == "cpu"
    assert locked_environment(project, "cpu").platform.subdir == HOST.subdir


def test_the_environment_locked_for_this_machine_is_taken(tmp_path):
    other = LockedEnv("cpu", OTHER, (FORGE,), (record("python", "3.11.7", subdir=OTHER.subdir),))
    project = project_with(tmp_path, other, CONDA_ENV)
    assert environment_digest(locked_environment(project, "cpu")) == environment_digest(CONDA_ENV)


def test_a_lock_of_several_environments_needs_a_name(tmp_path):
    project = project_with(tmp_path, CONDA_ENV, LockedEnv("gpu", HOST, (FORGE,), CONDA_ENV.conda))
    with pytest.raises(EnvironmentProblem) as error:
        locked_environment(project, None)
    assert refusal(error) == ("pixi.lock holds several environments (cpu, gpu)", "choose one with --env NAME")


def test_a_lock_of_no_environment_says_to_lock(tmp_path):
    project = project_with(tmp_path)
    with pytest.raises(EnvironmentProblem) as error:
        locked_environment(project, None)
    assert refusal(error) == ("pixi.lock holds no environment", "run `python -m resolver lock`")
    with pytest.raises(EnvironmentProblem) as error:
        locked_environment(project, "cpu")
    assert refusal(error) == ("pixi.lock has no environment 'cpu' (it has: none)",
                              "run `python -m resolver lock --target cpu` first")


def test_an_environment_the_lock_lacks_is_named_with_those_it_has(tmp_path):
    project = project_with(tmp_path, CONDA_ENV, LockedEnv("fb", HOST, (FORGE,), CONDA_ENV.conda))
    with pytest.raises(EnvironmentProblem) as error:
        locked_environment(project, "cuda13")
    assert refusal(error) == ("pixi.lock has no environment 'cuda13' (it has: cpu, fb)",
                              "run `python -m resolver lock --target cuda13` first")


def test_an_environment_locked_for_other_machines_only_is_refused(tmp_path):
    project = project_with(tmp_path, LockedEnv("cpu", OTHER, (FORGE,), (record("python", "3.11.7",
                                                                               subdir=OTHER.subdir),)))
    with pytest.raises(EnvironmentProblem) as error:
        locked_environment(project, "cpu")
    subdir = host_subdir()
    assert refusal(error) == (f"environment 'cpu' is locked for {OTHER.subdir}, not for this machine ({subdir})",
                              f"add this platform: `python -m resolver lock --platform {subdir}` (it adds {subdir} to "
                              "[workspace] platforms of pixi.toml and locks the CPU environment for it too; commit both "
                              "files for your team), then install again")


@pytest.mark.parametrize("gpu", ["platform", "torch", "rocm torch"])
def test_a_gpu_environment_of_other_machines_says_to_plan_one_for_this_machine(tmp_path, gpu):
    cuda = LockedPlatform("cuda", OTHER.subdir, ("__cuda=13",) if gpu == "platform" else ())
    version = {"platform": "2.13.0", "torch": "2.13.0+cu130", "rocm torch": "2.13.0+rocm6.4"}[gpu]
    torch = PypiArtifact("torch", version, "https://x.org/torch.whl", "ab" * 32)
    project = project_with(tmp_path, LockedEnv("cuda13", cuda, (FORGE,), (record("python", "3.11.7",
                                                                                 subdir=OTHER.subdir),), (torch,)))
    with pytest.raises(EnvironmentProblem) as error:
        locked_environment(project, "cuda13")
    assert refusal(error) == (f"environment 'cuda13' is for the GPU machines its plan serves ({OTHER.subdir}), not for "
                              f"this machine ({host_subdir()})",
                              "lock an environment for this machine: `python -m resolver lock --target cuda13` here "
                              "(or `--target cpu`)")


# ------------------------------------------------------------------------------------------ what install makes


def test_an_environment_with_a_conda_python_is_a_conda_prefix_of_its_python(tmp_path):
    target = _target(ProjectPaths(tmp_path), CONDA_ENV)
    assert (target.kind, target.python, target.interpreter) == ("conda", "3.11", None)
    assert (target.final, target.digest, target.env) == (tmp_path / ".resolver" / "envs" / "cpu",
                                                         environment_digest(CONDA_ENV), CONDA_ENV)


def test_a_conda_environment_without_a_locked_python_version_gets_this_ones(tmp_path):
    env = LockedEnv("cpu", HOST, (FORGE,), (record("python", "3.11.7"),))
    assert _target(ProjectPaths(tmp_path), env).python == HERE_PY


def test_a_fallback_is_a_virtual_environment_of_this_machines_interpreter(tmp_path):
    env = LockedEnv("fb", HOST, (), (), (WHEEL,), fallback=True, python=HERE_PY)
    target = _target(ProjectPaths(tmp_path), env)
    assert (target.kind, target.python, target.interpreter) == ("venv", HERE_PY, sys.executable)


def test_a_fallback_of_a_python_this_machine_lacks_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    env = LockedEnv("fb", HOST, (), (), (WHEEL,), fallback=True, python="3.99")
    with pytest.raises(EnvironmentProblem) as error:
        _target(ProjectPaths(tmp_path), env)
    assert refusal(error) == (
        "environment 'fb' is a fallback virtual environment of Python 3.99 and this machine has no python3.99 on PATH",
        "relock where a conda channel answers (the environment then brings its own Python), or install Python 3.99 "
        "(e.g. `pyenv install 3.99`)")


def test_wheels_without_a_conda_python_and_not_marked_a_fallback_are_refused(tmp_path):
    env = LockedEnv("cpu", HOST, (FORGE,), (record("zlib", "1.3.1"),), (WHEEL,))
    with pytest.raises(BadInput) as error:
        _target(ProjectPaths(tmp_path), env)
    assert refusal(error) == (
        "pixi.lock's environment 'cpu' has PyPI packages but no conda python, and is not marked as a fallback (the "
        "lock was edited, or written by an older resolver)", "lock it again: `python -m resolver lock --target cpu`")


def test_conda_packages_alone_without_python_make_a_virtual_environment(tmp_path):
    env = LockedEnv("tools", HOST, (FORGE,), (record("zlib", "1.3.1"),), python=HERE_PY)
    assert _target(ProjectPaths(tmp_path), env).kind == "venv"


def test_a_fallback_holding_its_own_pip_seeds_none(tmp_path):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "pip-23.0.dist-info").mkdir(parents=True)
    (site / "pip-24.2.dist-info").mkdir()
    fallback = LockedEnv("fb", HOST, (), (), (WHEEL,), fallback=True)
    assert seeded_pip(tmp_path, "venv", fallback) == ["pip==24.2"]
    with_pip = LockedEnv("fb", HOST, (), (), (WHEEL, PypiArtifact("pip", "24.2", "https://x.org/pip.whl", "")))
    assert seeded_pip(tmp_path, "venv", with_pip) == []
    assert seeded_pip(tmp_path, "conda", fallback) == []
    assert seeded_pip(tmp_path / "empty", "venv", fallback) == []


def test_an_interrupted_runs_folders_of_that_environment_are_removed(tmp_path):
    project = ProjectPaths(tmp_path)
    stale = [project.envs / ".cpu.tmp-12", project.envs / ".cpu.old-13", project.env_builds / ".cpu-abc.part-14"]
    kept = [project.envs / "cpu", project.envs / ".gpu.tmp-12", project.envs / ".gpu.old-13",
            project.env_builds / ".gpu-abc.part-14", project.env_builds / "cpu-abc-pyc"]
    for folder in stale + kept:
        (folder / "lib").mkdir(parents=True)
        (folder / "lib" / "file").write_text("x")
    _remove_leftovers(project, "cpu")
    assert [f.exists() for f in stale + kept] == [False] * len(stale) + [True] * len(kept)


# ------------------------------------------------------------------------------------------ up to date or not


class Rebuilding(Exception):
    pass


def rebuild_starts(text: str) -> None:
    raise Rebuilding(text)


def test_an_environment_whose_marker_holds_this_locks_digest_is_up_to_date(tmp_path):
    project = project_with(tmp_path, CONDA_ENV)
    write_marker(project.env("cpu"), marker(lock_digest=environment_digest(CONDA_ENV)))
    (project.envs / ".cpu.tmp-99").mkdir()  # an interrupted run's folder goes even when nothing is built
    summary = install_environment(project, "cpu", info=rebuild_starts)
    assert summary == InstallSummary("cpu", project.env("cpu"), "conda", "3.11", HOST.subdir, 2, 1, "up-to-date",
                                     summary.seconds, environment_digest(CONDA_ENV))
    assert 0 <= summary.seconds < 30 and not (project.envs / ".cpu.tmp-99").exists()
    assert install_environment(project, info=rebuild_starts).status == "up-to-date"  # the only one


@pytest.mark.parametrize("bytecode", ["none", "all"])
@pytest.mark.parametrize("ready", ["another lock", "not install's", "none"])
def test_an_environment_whose_marker_names_another_lock_is_built_again(tmp_path, ready, bytecode):
    project = project_with(tmp_path, CONDA_ENV)
    if ready == "another lock":
        write_marker(project.env("cpu"), marker(lock_digest="ab" * 32))
    elif ready == "not install's":
        write_marker(project.env("cpu"), marker(lock_digest=environment_digest(CONDA_ENV), kind="pip"))
    with pytest.raises(Rebuilding) as started:
        install_environment(project, "cpu", info=rebuild_starts, bytecode=bytecode, use_cache=False)
    assert str(started.value) == "checking 3 locked artefacts"


def test_force_builds_an_up_to_date_environment_again(tmp_path):
    project = project_with(tmp_path, CONDA_ENV)
    write_marker(project.env("cpu"), marker(lock_digest=environment_digest(CONDA_ENV)))
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", force=True, info=rebuild_starts, bytecode="none")


def test_an_up_to_date_summary_tells_how_to_enter_it(tmp_path):
    summary = InstallSummary("cpu", tmp_path / "cpu", "conda", "3.11", "linux-64", 2, 1, "up-to-date", 0.12345,
                             "ab" * 32)
    shell = f"source {tmp_path / 'cpu' / 'bin' / 'activate'}"
    assert summary.to_json() == {
        "environment": "cpu", "path": str(tmp_path / "cpu"), "kind": "conda", "python": "3.11",
        "platform": "linux-64", "conda_packages": 2, "pypi_packages": 1, "status": "up-to-date", "seconds": 0.123,
        "lock_digest": "ab" * 32, "built_from": "lock", "bytecode": "", "enter": {"pixi": "pixi shell -e cpu",
                                                                                  "shell": shell},
        "added": [], "removed": [], "changed": [], "kept": [], "removed_by_hand": []}
    fallback = InstallSummary("fb", tmp_path / "fb", "venv", "3.11", "linux-64", 0, 1, "installed", 1.0, "ab" * 32)
    assert fallback.enter == {"pixi": None, "shell": f"source {tmp_path / 'fb' / 'bin' / 'activate'}"}


# ------------------------------------------------------------------------------------------ into place, and running


def test_what_is_made_is_marked_ready_with_what_was_locked_and_moved_into_place(tmp_path):
    project = ProjectPaths(tmp_path)
    target = _target(project, CONDA_ENV)
    installed(project, "cpu")  # an older environment in the way is replaced

    def make(tmp: Path) -> None:
        assert tmp == project.envs / f".cpu.tmp-{os.getpid()}"
        (tmp / "conda-meta").mkdir(parents=True)
    _into_place(project, target, make)
    assert sorted(p.name for p in project.envs.iterdir()) == ["cpu"]
    record = ready_record(project.env("cpu"))
    assert {k: v for k, v in record.items() if k not in ("artifacts", "verify_inputs")} == {
        "environment": "cpu", "kind": "conda", "python": "3.11", "platform": HOST.subdir,
        "lock_digest": environment_digest(CONDA_ENV), "conda": ["python-3.11.7-h0_0", "zlib-1.3.1-h0_0"],
        "pypi": ["plain==1"], "seeded": []}
    # each artefact by its sha256: what a later install compares the new lock with
    assert record["artifacts"] == sorted(f"{'conda' if hasattr(a, 'build') else 'pypi'} {a.name} "
                                         f"{a.version + '-' + a.build if hasattr(a, 'build') else a.version} "
                                         f"{a.sha256 or a.md5 if hasattr(a, 'build') else a.sha256}"
                                         for a in (*CONDA_ENV.conda, *CONDA_ENV.pypi))
    assert [p.name for p in (project.env("cpu") / "bin").iterdir()] == ["mamba-resolver"]  # the launcher alone


def test_a_make_that_fails_leaves_no_half_environment(tmp_path):
    project = ProjectPaths(tmp_path)
    target = _target(project, CONDA_ENV)

    def make(tmp: Path) -> None:
        (tmp / "conda-meta").mkdir(parents=True)
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        _into_place(project, target, make)
    assert list(project.envs.iterdir()) == []


def script(path: Path, body: str) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python").write_text(f"#!/bin/sh\n{body}\n")
    (path / "bin" / "python").chmod(0o755)
    return path


@pytest.mark.skipif(os.name == "nt", reason="a POSIX virtual environment's layout")
def test_an_environment_whose_python_runs_as_itself_runs(tmp_path):
    final = tmp_path / "env"
    (final / "bin").mkdir(parents=True)
    base = Path(sys.base_prefix) / "bin" / f"python{HERE_PY}"
    (final / "bin" / "python").symlink_to(base if base.exists() else Path(sys.executable).resolve())
    (final / "pyvenv.cfg").write_text(f"home = {(final / 'bin' / 'python').resolve().parent}\n")
    assert _does_not_run(final) is None
    (tmp_path / "link").symlink_to(final)  # a linked environment runs as the folder it links to
    assert _does_not_run(tmp_path / "link") is None


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands for the interpreter")
def test_an_environment_whose_python_fails_says_what_it_printed(tmp_path):
    final = script(tmp_path / "env", f"echo {'e' * 250} >&2; exit 1")
    assert _does_not_run(final) == "e" * 200
    assert _does_not_run(script(tmp_path / "quiet", "exit 1")) == "sys.prefix is "
    assert _does_not_run(script(tmp_path / "loud", "echo out; echo err >&2; exit 1")) == "err"


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands for the interpreter")
def test_an_environment_whose_python_is_another_prefix_does_not_run(tmp_path):
    final = script(tmp_path / "env", f"echo {'/elsewhere' * 30}")
    assert _does_not_run(final) == f"sys.prefix is {('/elsewhere' * 30)[:200]}"
    final = script(tmp_path / "also", "echo warning >&2; echo /elsewhere")
    assert _does_not_run(final) == "warning"
    assert _does_not_run(script(tmp_path / "itself", f"echo {tmp_path / 'itself'}")) is None


# ------------------------------------------------------------------------------------------ the cached build


def runnable(folder: Path) -> Path:
    """A folder that runs as a virtual environment of this Python (its interpreter linked, no packages)."""
    (folder / "bin").mkdir(parents=True)
    base = Path(sys.base_prefix) / "bin" / f"python{HERE_PY}"
    (folder / "bin" / "python").symlink_to(base if base.exists() else Path(sys.executable).resolve())
    (folder / "pyvenv.cfg").write_text(f"home = {(folder / 'bin' / 'python').resolve().parent}\n")
    (folder / "conda-meta").mkdir()
    (folder / "conda-meta" / "history").write_text("kept\n")
    return folder


def cached_build(project: ProjectPaths, built: Path) -> EnvBuild:
    cached = EnvBuild(project.env_build("cpu", environment_digest(CONDA_ENV)), project.env("cpu"))
    cached.keep(built)
    assert cached.record() is not None
    return cached


def stop_at(prefix: str, said: list[str]):
    def info(text: str) -> None:
        said.append(text)
        if text.startswith(prefix):
            raise Rebuilding(text)
    return info


@pytest.mark.skipif(os.name == "nt", reason="a POSIX virtual environment's layout")
def test_a_cached_build_of_the_same_lock_is_linked_instead_of_built(tmp_path):
    project = project_with(tmp_path, CONDA_ENV)
    cached = cached_build(project, runnable(tmp_path / "built"))
    said: list[str] = []
    summary = install_environment(project, "cpu", info=stop_at("checking", said), bytecode="all")
    assert (summary.status, summary.built_from, summary.bytecode) == ("installed", "cache", "all")
    assert said == [f"linked the environment from the cache ({cached.folder})"]
    assert (project.env("cpu") / "conda-meta" / "history").read_text() == "kept\n"
    assert ready_record(project.env("cpu"))["lock_digest"] == environment_digest(CONDA_ENV)
    assert sorted(p.name for p in project.envs.iterdir()) == ["cpu"]
    again = install_environment(project, "cpu", info=stop_at("", said), bytecode="all")
    assert again.status == "up-to-date"


@pytest.mark.parametrize("how", [{"bytecode": "none"}, {"bytecode": "all", "use_cache": False}])
def test_a_cached_build_is_not_used_without_bytecode_or_with_the_cache_off(tmp_path, how):
    project = project_with(tmp_path, CONDA_ENV)
    cached = cached_build(project, runnable(tmp_path / "built"))
    said: list[str] = []
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", info=stop_at("checking", said), **how)
    assert said == ["checking 3 locked artefacts"] and cached.record() is not None


def test_force_never_links_the_cached_build_and_drops_it(tmp_path):
    project = project_with(tmp_path, CONDA_ENV)
    cached = cached_build(project, runnable(tmp_path / "built"))
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", force=True, info=stop_at("checking", []), bytecode="all")
    assert not cached.folder.exists()


def test_a_cached_build_whose_files_changed_is_dropped_and_the_lock_built(tmp_path):
    project = project_with(tmp_path, CONDA_ENV)
    cached = cached_build(project, runnable(tmp_path / "built"))
    (cached.folder / "conda-meta" / "history").write_text("edited inside an environment\n")
    said: list[str] = []
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", info=stop_at("checking", said), bytecode="all")
    assert said == ["checking 3 locked artefacts"]
    assert not cached.folder.exists() and list(project.envs.iterdir()) == []


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands for the interpreter")
def test_a_cached_build_that_no_longer_runs_is_dropped_and_the_lock_built(tmp_path):
    project = project_with(tmp_path, CONDA_ENV)
    cached = cached_build(project, script(tmp_path / "built", "exit 1"))
    said: list[str] = []
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", info=stop_at("checking", said), bytecode="all")
    assert said == [f"linked the environment from the cache ({cached.folder})", "checking 3 locked artefacts"]
    assert not cached.folder.exists()
    # the build from the lock failed (here: stopped): what was linked is not taken for up to date next time
    assert ready_record(project.env("cpu")) is None
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", info=stop_at("checking", []), bytecode="all")


# ------------------------------------------------------------------------------------------ the locked artefacts


def stored_env(project: ProjectPaths, tmp_path: Path) -> LockedEnv:
    """CONDA_ENV's kind of lock whose every artefact is in the verified store already (nothing is fetched)."""
    from support.channel_factory import write_wheel
    from support.package_factory import index_json, write_conda

    store, conda = project.verified_store, []
    for name in ("python", "zlib"):
        package = write_conda(tmp_path / "chan", index_json(name, "1.0", subdir=HOST.subdir), [])
        sha = hashlib.sha256(package.read_bytes()).hexdigest()
        rec = record(name, "1.0", sha)
        store.copy_in(package, sha, rec.file_name)
        conda.append(rec)
    wheel = write_wheel(tmp_path / "wheels", "plain", "1", {"plain.py": ""})
    artifact = PypiArtifact("plain", "1", WHEEL.location, hashlib.sha256(wheel.read_bytes()).hexdigest())
    store.copy_in(wheel, artifact.sha256, artifact.file_name)
    return LockedEnv("cpu", HOST, (FORGE,), tuple(conda), (artifact,), python="3.11")


@pytest.mark.parametrize("bytecode, said", [("all", "compiled now (--bytecode all)"),
                                            ("none", "on first import (--bytecode none)")])
def test_every_locked_artefact_is_verified_before_anything_is_built(tmp_path, monkeypatch, bytecode, said):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    project = ProjectPaths(tmp_path / "project")
    env = stored_env(project, tmp_path)
    tmp_path.joinpath("project").mkdir()
    project_with(tmp_path / "project", env)
    seen: list[tuple] = []
    messages: list[str] = []
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", info=stop_at("linking", messages), bytecode=bytecode, use_cache=False,
                            progress=lambda what, done, total, started: seen.append((what, done, total)))
    assert seen == [("verifying the locked files", n, 3) for n in (1, 2, 3)]
    assert messages == ["checking 3 locked artefacts", f"bytecode: {said}", "linking 2 conda packages"]
    assert list(project.envs.iterdir()) == []  # the half-made environment is gone


def test_artefacts_are_verified_without_progress_when_none_is_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    project = ProjectPaths(tmp_path / "project")
    env = stored_env(project, tmp_path)
    tmp_path.joinpath("project").mkdir()
    project_with(tmp_path / "project", env)
    with pytest.raises(Rebuilding):
        install_environment(project, "cpu", info=stop_at("bytecode", []), bytecode="none")


# ------------------------------------------------------------------------------------------ a whole install


def python_package(tmp_path: Path, body: str) -> tuple[CondaRecord, Path]:
    """A conda package ``python`` whose bin/python is a shell script (``body``), and its record: linked by
    rattler in process, it stands for a conda interpreter (nothing is fetched, solved or compiled)."""
    from support.package_factory import index_json, write_conda

    index = index_json("python", "3.11.7", subdir=HOST.subdir)
    path = write_conda(tmp_path / "chan", index, [{"name": "bin/python", "data": f"#!/bin/sh\n{body}\n".encode()}])
    data = path.read_bytes()
    fields = {**index, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    return CondaRecord("python", "3.11.7", "h0_0", HOST.subdir, f"{FORGE}{HOST.subdir}/{path.name}", FORGE,
                       fields["sha256"], None, json.dumps(fields, sort_keys=True)), path


# py-rattler's runtime does not survive a fork: in mutmut's forked children (MUTANT_UNDER_TEST set) a link
# hangs until mutmut's limit, so those runs skip the two tests that link (they run in the suite).
links_in_process = pytest.mark.skipif("bool(os.environ.get('MUTANT_UNDER_TEST'))",  # read as each test runs
                                      reason="rattler cannot link in a forked mutation child")


def lock_of_stored_python(tmp_path: Path, body: str, where: str = "store") -> ProjectPaths:
    """A project locking that package: already in the verified store, or in a local channel of the lock."""
    record_, package = python_package(tmp_path, body)
    project = ProjectPaths(tmp_path / "project")
    channel = FORGE
    if where == "store":
        project.verified_store.copy_in(package, record_.sha256, record_.file_name)
    else:
        channel = (tmp_path / "chan").resolve().as_uri() + "/"
        record_ = CondaRecord(record_.name, record_.version, record_.build, record_.subdir, package.resolve().as_uri(),
                              channel, record_.sha256, None, record_.fields)
    tmp_path.joinpath("project").mkdir()
    if where != "store":  # the channel is one the project declares
        project.manifest.write_text(f'[workspace]\nname = "p"\nchannels = ["{channel}"]\nplatforms = ["{HOST.subdir}"]\n'
                                    '\n[environments]\ncpu = []\n')
    return project_with(tmp_path / "project", LockedEnv("cpu", HOST, (channel,), (record_,), python="3.11"))


@links_in_process
@pytest.mark.skipif(os.name == "nt", reason="a shell script stands for the interpreter")
@pytest.mark.parametrize("bytecode, where", [("all", "store"), ("none", "store"), ("none", "local channel")])
def test_an_environment_is_built_from_the_lock_marked_ready_and_then_up_to_date(tmp_path, monkeypatch, bytecode,
                                                                               where):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    project = lock_of_stored_python(tmp_path, 'cd "$(dirname "$0")/.." && pwd', where)
    said: list[str] = []
    seen: list[tuple] = []
    summary = install_environment(project, "cpu", info=said.append, bytecode=bytecode,
                                  progress=lambda what, done, total, started: seen.append((what, done, total)))
    assert (summary.status, summary.built_from, summary.bytecode, summary.kind) == \
        ("installed", "lock", bytecode, "conda")
    assert said[:3] == ["checking 1 locked artefacts", f"bytecode: {'compiled now' if bytecode == 'all' else 'on first import'} (--bytecode {bytecode})", "linking 1 conda packages"]
    assert ("verifying the locked files", 1, 1) in seen
    final = project.env("cpu")
    assert (final / "bin" / "python").is_file() and sorted(p.name for p in project.envs.iterdir()) == ["cpu"]
    assert ready_record(final)["lock_digest"] == summary.digest == locked_environment_digest(project, "cpu")
    assert Environment.find(project) == Environment("cpu", final, "conda")
    cache = EnvBuild(project.env_build("cpu", summary.digest), final)
    assert (cache.record() is not None) == (bytecode == "all")  # the compiled build is kept for the next install
    assert install_environment(project, info=said.append).status == "up-to-date"


@links_in_process
@pytest.mark.skipif(os.name == "nt", reason="a shell script stands for the interpreter")
def test_an_environment_that_does_not_run_after_the_move_is_a_build_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    project = lock_of_stored_python(tmp_path, "echo no such interpreter >&2; exit 1")
    with pytest.raises(BuildFailed) as error:
        install_environment(project, "cpu", bytecode="none")
    assert refusal(error) == (f"the environment at {project.env('cpu')} does not run after the move (no such "
                              "interpreter)", "run `python -m resolver install --env cpu --force`")


# ------------------------------------------------------------------------------------------ more edges


def test_the_newest_seeded_pip_is_named(tmp_path):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    for version in ("22.0", "23.0", "24.2"):
        (site / f"pip-{version}.dist-info").mkdir(parents=True)
    assert seeded_pip(tmp_path, "venv", LockedEnv("fb", HOST, (), (), (WHEEL,), fallback=True)) == ["pip==24.2"]


def test_a_fallbacks_marker_names_the_pip_its_python_seeded(tmp_path):
    project = ProjectPaths(tmp_path)
    env = LockedEnv("fb", HOST, (), (), (WHEEL,), fallback=True, python=HERE_PY)
    _into_place(project, _target(project, env),
                lambda tmp: (tmp / "lib" / "python3.11" / "site-packages" / "pip-24.2.dist-info").mkdir(parents=True))
    assert ready_record(project.env("fb"))["seeded"] == ["pip==24.2"]
    assert ready_record(project.env("fb"))["kind"] == "venv"


def test_a_make_that_fails_before_making_anything_raises_its_own_error(tmp_path):
    project = ProjectPaths(tmp_path)

    def make(tmp: Path) -> None:
        raise Rebuilding("nothing made")
    with pytest.raises(Rebuilding, match="nothing made"):
        _into_place(project, _target(project, CONDA_ENV), make)


def test_a_leftover_that_cannot_be_removed_does_not_stop_install(tmp_path):
    project = ProjectPaths(tmp_path)
    project.envs.mkdir(parents=True)
    project.env_builds.mkdir(parents=True)
    for link in (project.envs / ".cpu.tmp-1", project.envs / ".cpu.old-2", project.env_builds / ".cpu-ab.part-3"):
        link.symlink_to(tmp_path / "gone")  # rmtree refuses a link
    _remove_leftovers(project, "cpu")


def test_a_wheel_inside_the_project_is_located_from_the_projects_root(tmp_path):
    (tmp_path / "wheels").mkdir()
    inside = PypiArtifact("plain", "1", str(tmp_path / "wheels" / "plain-1-py3-none-any.whl"), "cd" * 32)
    project = project_with(tmp_path, LockedEnv("cpu", HOST, (FORGE,), CONDA_ENV.conda, (inside,), python="3.11"))
    assert "wheels/plain-1-py3-none-any.whl" in project.lockfile.read_text()
    location = locked_environment(project, "cpu").pypi[0].location
    assert location == (tmp_path / "wheels" / "plain-1-py3-none-any.whl").resolve().as_uri()


def test_an_environment_locked_for_two_other_machines_names_both(tmp_path):
    third = LockedPlatform("third", "win-64", ())
    envs = [LockedEnv("cpu", p, (FORGE,), (record("python", "3.11.7", subdir=p.subdir),)) for p in (OTHER, third)]
    if host_subdir() in (OTHER.subdir, third.subdir):
        pytest.skip("this machine is one of them")
    with pytest.raises(EnvironmentProblem) as error:
        locked_environment(project_with(tmp_path, *envs), "cpu")
    assert error.value.message in {f"environment 'cpu' is locked for {a}, {b}, not for this machine ({host_subdir()})"
                                   for a, b in ((OTHER.subdir, "win-64"), ("win-64", OTHER.subdir))}


def test_the_locked_digest_of_one_environment_among_several(tmp_path):
    gpu = LockedEnv("gpu", HOST, (FORGE,), CONDA_ENV.conda)
    project = project_with(tmp_path, CONDA_ENV, gpu)
    assert locked_environment_digest(project, "gpu") == environment_digest(gpu) != environment_digest(CONDA_ENV)


def test_a_child_runs_with_the_variables_it_is_given_and_the_resolver_importable(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    env = Environment("cpu", tmp_path, "venv")
    done = env.run_python(["-c", "import os; print(os.environ['RESOLVER_MARK'], os.environ['PYTHONPATH'])"],
                          timeout=60, env={"RESOLVER_MARK": "given", "PATH": os.environ.get("PATH", "")})
    package_parent = str(Path(__import__("resolver").__file__).resolve().parents[1])
    assert done.stdout.split() == ["given", package_parent], done.stderr


def test_a_helpers_answer_is_its_marked_document(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "helper_answering.py").write_text('print("RESOLVER-JSON {\\"ok\\": true}")\n')
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    answer = Environment("cpu", tmp_path, "venv").call("helper_answering", timeout=60)
    assert answer.document == {"ok": True} and answer.completed.returncode == 0


def test_the_named_environment_of_a_lock_of_several_is_the_one_checked(tmp_path):
    gpu = LockedEnv("gpu", HOST, (FORGE,), CONDA_ENV.conda, python="3.11")
    project = project_with(tmp_path, CONDA_ENV, gpu)
    write_marker(project.env("gpu"), marker(environment="gpu", lock_digest=environment_digest(gpu)))
    summary = install_environment(project, "gpu", info=rebuild_starts)
    assert (summary.environment, summary.status) == ("gpu", "up-to-date")
