"""The build pipeline end to end on a tiny CUDA extension of our own (tests/data/fixtures/tiny-ext):
recipe → py-rattler-build → local channel (indexed) → install into an environment → import.

It goes through exactly the machinery the Mamba kernels use (driver, runner, recipes/common/build_ext.py
with its flag fixes, install, import check); the extension is torch-free so CI needs no torch, and
it compiles with nvcc when there is one, else as host C++. A few seconds per build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import DATA, cli, projects

from resolver.core.errors import BuildFailed
from resolver.kernels.driver import BuildOptions, build
from resolver.project.paths import ProjectPaths

TINY = DATA / "fixtures" / "tiny-ext"
HAS_NVCC = shutil.which("nvcc") is not None or bool(os.environ.get("CUDA_HOME"))


def _make_venv(path: Path) -> None:
    """A virtual environment of this interpreter's Python with setuptools (the fixture's setup.py needs it):
    the base Python's, else the one this test process imports (through a .pth file)."""
    import importlib.util

    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", "--system-site-packages", str(path)], check=True)
    python = str(path / "bin" / "python")
    if subprocess.run([python, "-c", "import setuptools"], capture_output=True).returncode != 0:
        spec = importlib.util.find_spec("setuptools")
        if spec is None or not spec.origin:
            pytest.skip("no setuptools anywhere to build the fixture with")
        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        Path(site, "resolver-test-setuptools.pth").write_text(str(Path(spec.origin).parent.parent) + "\n")
        assert subprocess.run([python, "-c", "import setuptools"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> ProjectPaths:
    root = tmp_path_factory.mktemp("a project")  # a space in every path: quoting is tested too
    paths = ProjectPaths(projects.project(root, "[workspace]\nname = 'pipeline-test'\n"))
    _make_venv(paths.env("ci"))
    return paths


def _options(**kw) -> BuildOptions:
    return BuildOptions(recipe_dirs=(TINY / "recipe",), env_name="ci", **kw)


def _run_in_env(project: ProjectPaths, code: str) -> str:
    done = subprocess.run([str(project.env("ci") / "bin" / "python"), "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module", autouse=True)
def first_build(project):
    """The first build of the project (arch 7.5), before any other test of the module builds in it: the
    later tests' "cached" means this one, whatever order they run in."""
    return build(project, _options(arch="7.5"))


def test_recipe_to_channel_to_install_to_import(project, first_build):
    package = first_build.packages[0]
    assert package.status == "built"
    conda = Path(package.file)
    assert conda.is_file() and conda.parent == project.channel / "linux-64"
    repodata = json.loads((project.channel / "linux-64" / "repodata.json").read_text())
    assert conda.name in repodata["packages.conda"]
    assert (project.channel / "noarch" / "repodata.json").is_file()
    # the build string names the variant
    assert f"py{sys.version_info[0]}{sys.version_info[1]}" in package.build_string
    assert ("sm75" in package.build_string) == HAS_NVCC
    # installed: conda metadata in the env, the module imports and works
    assert list((project.env("ci") / "conda-meta").glob("tiny-ext-0.1.0-*.json"))
    assert package.imports_ok == ("tiny_ext_cuda", "tiny_ext")
    assert _run_in_env(project, "import tiny_ext; print(tiny_ext.add(2, 3))") == "5"
    compiled_with = _run_in_env(project, "import tiny_ext_cuda; print(tiny_ext_cuda.compiled_with())")
    assert compiled_with == ("nvcc" if HAS_NVCC else "host")
    # progress came from ninja-style lines: 2 sources + 1 link
    assert package.units == (3, 3)
    log = Path(package.log).read_text()
    if HAS_NVCC:  # our fixes reached the compiler: one gencode for the requested arch, C++ std untouched (no torch)
        assert "arch=compute_75,code=sm_75" in log and "compute_80" not in log
        assert "--threads 1" in log or "--threads 2" in log


def test_identical_request_compiles_nothing(project, first_build):
    logs_before = set(project.logs.glob("build-*.log"))
    summary = build(project, _options(arch="7.5"))
    assert [p.status for p in summary.packages] == ["cached"]
    assert summary.to_json()["compiled"] == 0
    assert set(project.logs.glob("build-*.log")) == logs_before


@pytest.mark.skipif(not HAS_NVCC, reason="architectures only matter with nvcc")
def test_another_arch_is_another_variant_side_by_side(project):
    first = build(project, _options(arch="7.5")).packages[0]
    second = build(project, _options(arch="8.0,7.5")).packages[0]
    assert second.status == "built" and second.build_string != first.build_string
    assert "sm75sm80" in second.build_string
    assert Path(first.file).is_file() and Path(second.file).is_file()
    # only the newest build of a name stays installed
    assert len(list((project.env("ci") / "conda-meta").glob("tiny-ext-*.json"))) == 1


def test_compiler_error_is_one_sentence_with_the_first_error_and_the_log(project, tmp_path):
    recipe = tmp_path / "recipe"
    shutil.copytree(TINY / "recipe", recipe)
    shutil.copytree(TINY / "src", tmp_path / "src")
    broken = tmp_path / "src" / "csrc" / "tiny_host.cpp"
    broken.write_text(broken.read_text() + "\nint broken() { return undefined_in_tiny; }\n")
    with pytest.raises(BuildFailed) as info:
        build(project, BuildOptions(recipe_dirs=(recipe,), env_name="ci", arch="7.5"))
    message = str(info.value)
    assert "undefined_in_tiny" in message and "tiny_host.cpp" in message
    assert "full log:" in message
    log = Path(message.rsplit("full log: ", 1)[1].rstrip("."))
    assert log.is_file() and "undefined_in_tiny" in log.read_text()


def test_cli_json(project, first_build):
    done = cli.run("build", "--recipe", str(TINY / "recipe"), "--env", "ci", "--arch", "7.5", "--json",
                   project=project.root)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["compiled"] == 0 and data["packages"][0]["status"] == "cached"
    assert {"environment", "env", "toolkit", "archs", "parallelism", "channel", "packages", "seconds"} <= set(data)


def test_cli_errors_are_one_line(project):
    done = cli.run("build", "--recipe", str(TINY / "recipe"), "--env", "nope", "--arch", "7.5", project=project.root)
    assert done.returncode == 2 and "no environment 'nope'" in done.stderr  # a typo in -e: the same sentence everywhere
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    bad_arch = cli.run("build", "--recipe", str(TINY / "recipe"), "--env", "ci", "--arch", "hopper",
                       project=project.root)
    if HAS_NVCC:
        assert bad_arch.returncode == 3 and "--arch" in bad_arch.stderr


@pytest.mark.skipif(not HAS_NVCC, reason="the prebuilt path is taken only with a GPU toolkit")
def test_prebuilt_wheel_is_used_when_the_plan_says_so_and_it_is_reachable(project, tmp_path):
    # a "release wheel" of the tiny extension, served from a file:// URL standing in for GitHub
    src = tmp_path / "src"
    shutil.copytree(TINY / "src", src)
    wheels = tmp_path / "release"
    done = subprocess.run([str(project.env("ci") / "bin" / "python"), "setup.py", "-q", "bdist_wheel", "-d", str(wheels)],
                          cwd=src, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (wheel,) = wheels.glob("*.whl")
    recipe = tmp_path / "recipe"
    shutil.copytree(TINY / "recipe", recipe)
    meta = (recipe / "resolver.toml").read_text().replace("[cxx_std]", "")
    meta = meta.split("torch_min")[0] + (
        f'wheel_name = "tiny_ext-{{version}}-cp{{py}}-cp{{py}}-linux_x86_64.whl"\n'
        f'wheel_url = "{wheels.as_uri()}/{{wheel}}"\n')
    (recipe / "resolver.toml").write_text(meta.replace('source_dir = "../src"', f'source_dir = "{TINY / "src"}"'))
    summary = build(project, BuildOptions(recipe_dirs=(recipe,), env_name="ci", arch="7.5", plan_strategy="prebuilt"))
    package = summary.packages[0]
    assert package.status == "prebuilt", package
    assert wheel.name in Path(package.log).read_text()
    assert _run_in_env(project, "import tiny_ext; print(tiny_ext.add(40, 2))") == "42"
    # not reachable → compiled instead, without waiting long
    (recipe / "resolver.toml").write_text((recipe / "resolver.toml").read_text().replace(
        wheels.as_uri(), (tmp_path / "missing").as_uri()))
    (project.cache / "wheels" / wheel.name).unlink()
    fallback = build(project, BuildOptions(recipe_dirs=(recipe,), env_name="ci", arch="7.5", plan_strategy="prebuilt"))
    assert fallback.packages[0].status in ("built", "cached")


def test_offline_reachability_check_never_hangs():
    """Offline (the suite's network refuses every connection) the answer is a quick False; a server that
    accepts and never answers is given up after the timeout."""
    import socket
    import threading

    from resolver.kernels.prebuilt import reachable

    assert reachable("https://github.com/state-spaces/mamba/releases/download/v2.3.2.post1/none.whl", timeout=2.0) is False
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        answers: list[bool] = []
        asking = threading.Thread(target=lambda: answers.append(
            reachable(f"http://127.0.0.1:{silent.getsockname()[1]}/x.whl", timeout=0.5)), daemon=True)
        asking.start()
        asking.join(120)  # only a hang would wait this long
        assert answers == [False]
    assert reachable("file:///nonexistent/wheel.whl") is False


def test_overlay_include_folder_comes_first(project, tmp_path):
    overlay = tmp_path / "overlay" / "include"
    overlay.mkdir(parents=True)
    (overlay / "tiny_marker.h").write_text("#define TINY_MARKER 2\n")
    plain = build(project, _options(arch="7.5")).packages[0]
    fixed = build(project, _options(arch="7.5", rocm_overlay=overlay)).packages[0]
    assert fixed.build_string != plain.build_string  # the overlay's content is part of the key
    assert _run_in_env(project, "import tiny_ext_cuda; print(tiny_ext_cuda.marker())") == "2"
    build(project, _options(arch="7.5"))  # back to the plain variant: cached, reinstalled
    assert _run_in_env(project, "import tiny_ext_cuda; print(tiny_ext_cuda.marker())") == "1"


def test_no_locked_plan_and_no_arch_asks_for_arch(project):
    """The architectures come from the environment's locked plan, never from this machine's GPUs: with no
    locked plan and no --arch the build asks for them, on a machine with GPUs too."""
    done = cli.run("build", "--recipe", str(TINY / "recipe"), "--env", "ci", project=project.root)
    if not HAS_NVCC:
        assert done.returncode == 0  # host-only build: no architectures to choose
        return
    assert done.returncode == 3 and "--arch" in done.stderr and "Traceback" not in done.stderr


def test_install_into_a_conda_prefix_keeps_its_other_packages(project, tmp_path):
    """A conda prefix holds other conda packages: installing a kernel build must not remove them."""
    from rattler_build import Stage0Recipe

    from resolver.kernels.recipe_run import publish
    from resolver.tools.conda import add_package

    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "src" / "note.txt").write_text("kept\n")
    recipe = Stage0Recipe.from_yaml(
        "package: {name: other-pkg, version: '1.0'}\nsource: {path: ./src}\n"
        "build: {number: 0, noarch: generic, script: ['mkdir -p $PREFIX/share', 'cp note.txt $PREFIX/share/other-note.txt']}\n",
        recipe_dir=str(other))
    (built,) = [p for r in recipe.run_build(output_dir=str(tmp_path / "out"), channels=[], no_build_id=True)
                for p in r.packages]
    channel = tmp_path / "channel"
    other_file = publish(Path(built), channel)
    prefix = tmp_path / "conda-prefix"
    (prefix / "conda-meta").mkdir(parents=True)
    add_package(prefix, other_file, cache_dir=tmp_path / 'cache')
    assert (prefix / "share" / "other-note.txt").read_text() == "kept\n"

    tiny = Path(build(project, _options(arch="7.5", install=False)).packages[0].file)
    tiny_copy = publish(tiny, channel)
    add_package(prefix, cache_dir=tmp_path / 'cache', package_file=tiny_copy)
    records = sorted(p.name.rsplit("-", 2)[0] for p in (prefix / "conda-meta").glob("*.json"))
    assert records == ["other-pkg", "tiny-ext"]
    assert (prefix / "share" / "other-note.txt").is_file()
    assert list(prefix.glob("lib/python3.*/site-packages/tiny_ext_cuda*.so"))


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(int(entry))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_sigterm_stops_the_compilers_too(project, tmp_path):
    recipe = tmp_path / "recipe"
    shutil.copytree(TINY / "recipe", recipe)
    shutil.copytree(TINY / "src", tmp_path / "src")
    helper = tmp_path / "src" / "tiny_cuda_build.py"
    helper.write_text(helper.read_text().replace(
        "    def build_extension(self, ext):\n",
        "    def build_extension(self, ext):\n        import time\n        print('[tiny] compiling slowly', flush=True)\n"
        "        time.sleep(300)\n"))
    child = cli.start("build", "--recipe", str(recipe), "--env", "ci", "--arch", "7.5", project=project.root,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        logs = [l for l in project.logs.glob("build-tiny-ext-*.log") if "compiling slowly" in l.read_text(errors="replace")]
        if logs:
            break
        time.sleep(0.3)
    else:
        child.kill()
        pytest.fail("the slow build never started")
    assert _processes_mentioning(str(tmp_path / "src")) or _processes_mentioning("build_ext.py")
    child.terminate()
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    deadline = time.monotonic() + 30  # a bound for a loaded machine: the loop ends when the compilers are gone
    while (left := [p for p in _processes_mentioning(str(project.root)) if p != child.pid]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left
