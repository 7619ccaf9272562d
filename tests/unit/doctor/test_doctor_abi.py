"""A real ABI mismatch: a tiny extension compiled against torch 2.13.0+cpu (torch.utils.cpp_extension,
one ATen and one c10 call) loads there, fails under torch 2.14.1 with `undefined symbol`, and doctor
names the missing symbol and the torch it was built for.

at::_ops::cholesky_out::call(const Tensor&, bool, Tensor&) is exported by torch 2.13 and not by
2.14 (the operator's signature changed), exactly the kind of drift that breaks prebuilt kernels.
The compiled module is cached under .resolver/test-envs/ by source and torch version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import REPO, cli

SOURCE = r"""
// resolver ABI test extension: one ATen operator call and one c10 check.
#include <Python.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/cholesky.h>
#include <c10/util/Exception.h>

at::Tensor& tinyabi_cholesky(at::Tensor& out, const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 2, "tinyabi: expected a matrix");
  return at::cholesky_out(out, x, /*upper=*/false);
}

static PyModuleDef tinyabi_module = {PyModuleDef_HEAD_INIT, "tinyabi", "resolver ABI test extension", -1, nullptr};

PyMODINIT_FUNC PyInit_tinyabi(void) { return PyModule_Create(&tinyabi_module); }
"""

BUILD = """
import sys, torch, torch.utils.cpp_extension as ce
print(ce.load(name="tinyabi", sources=[sys.argv[1]], build_directory=sys.argv[2], is_python_module=False))
print(torch.__version__)
"""


def _torch_version(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def tinyabi_site(cpu_project) -> Path:
    """A site folder laid out like `pip install --target`: the module plus a dist-info whose local version
    says which torch it was built for (the scheme upstream kernel wheels use: +cu12torch2.6...)."""
    python = cpu_project / ".resolver" / "envs" / "cpu" / "bin" / "python"
    version = _torch_version(python)
    key = hashlib.sha256((SOURCE + version).encode()).hexdigest()[:12]
    site = REPO / ".resolver" / "test-envs" / f"tinyabi-{key}"
    module = site / "tinyabi.cpython-311-x86_64-linux-gnu.so"
    if not module.is_file():
        work = site.with_name(site.name + ".build")
        shutil.rmtree(work, ignore_errors=True)
        (work / "out").mkdir(parents=True)
        (work / "tinyabi.cpp").write_text(SOURCE)
        done = subprocess.run([str(python), "-c", BUILD, str(work / "tinyabi.cpp"), str(work / "out")],
                              capture_output=True, text=True, timeout=900,
                              env=dict(os.environ, PATH=f"{python.parent}{os.pathsep}{os.environ['PATH']}"))
        assert done.returncode == 0, done.stderr[-3000:]
        mm = ".".join(version.split("+")[0].split(".")[:2])
        info = site / f"tinyabi-0.1+cpu.torch{mm}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tinyabi\nVersion: 0.1+cpu.torch{mm}\n")
        (info / "RECORD").write_text(f"{module.name},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
        shutil.copy(work / "out" / "tinyabi.so", module.with_suffix(".tmp"))
        os.replace(module.with_suffix(".tmp"), module)
        shutil.rmtree(work, ignore_errors=True)
    return site


def _doctor(project: Path, env: str, site: Path) -> dict:
    done = cli.run("doctor", "--env", env, "--extension", "tinyabi", "--json", project=project,
                   env={"PYTHONPATH": str(site)})
    doc = json.loads(done.stdout)
    doc["_rc"] = done.returncode
    return doc


@pytest.mark.slow
def test_doctor_names_the_abi_mismatch(tmp_path, cpu_project, other_torch_env, tinyabi_site):
    project = tmp_path
    (project / "pixi.toml").write_text("[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    (project / ".resolver" / "envs").mkdir(parents=True)
    (project / ".resolver" / "envs" / "built").symlink_to(cpu_project / ".resolver" / "envs" / "cpu", target_is_directory=True)
    (project / ".resolver" / "envs" / "other").symlink_to(other_torch_env, target_is_directory=True)

    same = {f["name"]: f for f in _doctor(project, "built", tinyabi_site)["findings"]}
    assert same["extension:tinyabi"]["status"] == "ok", same["extension:tinyabi"]

    doc = _doctor(project, "other", tinyabi_site)
    finding = next(f for f in doc["findings"] if f["name"] == "extension:tinyabi")
    assert doc["_rc"] == 1 and finding["status"] == "fail"
    assert "ABI mismatch" in finding["detail"]
    assert "cholesky_out" in finding["detail"]  # demangled when c++filt is installed
    assert "built for torch 2.13" in finding["detail"] and "2.14.1" in finding["detail"]
    # not a kernel this project builds: rebuilt where it came from, or removed (no pip in a locked environment)
    assert finding["fix"].startswith("tinyabi is not one of the kernels this project builds: rebuild it against torch "
                                     "2.14.1") and "python -m resolver install --env other --force" in finding["fix"]


@pytest.mark.slow
def test_verify_fails_on_the_abi_mismatch_and_names_the_torch(tmp_path, cpu_project, other_torch_env, tinyabi_site):
    project = tmp_path
    (project / "pixi.toml").write_text("[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    (project / ".resolver" / "envs").mkdir(parents=True)
    (project / ".resolver" / "envs" / "other").symlink_to(other_torch_env, target_is_directory=True)
    done = cli.run("verify", "--env", "other", "--extension", "tinyabi", "--json", project=project,
                   env={"PYTHONPATH": str(tinyabi_site)})
    assert done.returncode == 1, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    check = next(c for c in doc["checks"] if c["name"] == "load:tinyabi")
    assert check["status"] == "fail" and check["built_for_torch"] == "2.13"
    assert "ABI mismatch" in check["detail"] and "cholesky_out" in check["detail"]
    assert doc["diagnoses"][0]["id"] == "undefined-aten-symbol"
    assert doc["diagnoses"][0]["fix"] == "python -m resolver build --env other --no-prebuilt"
    # everything else in that environment still passed: the failure is the extension alone
    assert all(c["status"] != "fail" for c in doc["checks"] if c["name"] != "load:tinyabi")
