"""A real, offline conda channel with a conda ``python`` and the CUDA 13.0 compiler toolchain under
conda-forge's package names, built with py-rattler-build and cached across test sessions.

Why: every environment the resolver makes is to become a conda prefix with its own ``python`` and,
for CUDA plans, the toolkit from conda-forge pinned by ``cuda-version``. conda-forge cannot be reached
from the test machines, so this module builds the same packages locally from inputs that can be
had offline (this machine's CPython, and NVIDIA's own wheels of the toolkit components from PyPI).
Nothing here is a stub: the python runs, pip installs wheels, nvcc compiles and links.

What the channel holds (``linux-64/`` + ``noarch/``, indexed; names, versions, build numbers,
``depends``/``constrains``/``run_exports`` and file layout follow the conda-forge recipes cited in
resolver/plan/knowledge/data/conda_forge.toml ``[[cuda_toolkit_package]]`` and docs/conda-toolkit.md):

* ``python`` X.Y.Z (the CPython this module finds, 3.11, with a shared libpython; build string
  ``h<hash>_0_cpython``), ``python_abi`` X.Y ``8_cpXY`` (noarch, constrains ``python X.Y.* *_cpython``),
  and ``pip`` / ``setuptools`` / ``wheel`` as ``noarch: python`` packages (conda-forge's python has
  no pip inside: ask for ``pip`` or solve with ``add_pip_as_python_dependency=True``).
* ``cuda-version 13.0`` (noarch, build 3, constrains ``__cuda >=13`` and ``cudatoolkit 13.0|13.0.*``;
  it does not *require* ``__cuda``, so the toolkit installs on a machine without a driver).
* the compiler split as conda-forge's ``cuda-nvcc-impl`` and ``cuda-nvcc`` feedstocks make it:
  ``cuda-nvcc`` → ``cuda-nvcc_linux-64`` → ``cuda-nvcc-dev_linux-64``, ``cuda-nvcc-tools``,
  ``cuda-nvcc-impl``, ``cuda-cudart-dev_linux-64``; ``cuda-crt-tools``, ``cuda-crt-dev_linux-64``,
  ``cuda-nvvm-tools``, ``cuda-nvvm-dev_linux-64``, ``cuda-nvvm-impl`` and the ``cuda-crt`` /
  ``cuda-nvvm`` metapackages, all 13.0.88;
* ``cuda-cudart``, ``cuda-cudart_linux-64``, ``cuda-cudart-dev``, ``cuda-cudart-dev_linux-64``,
  ``cuda-cudart-static``, ``cuda-cudart-static_linux-64`` 13.0.96;
* ``cuda-cccl``, ``cuda-cccl_linux-64`` 13.0.85 and ``cccl`` 3.0.1 (the CCCL release CUDA 13.0.85 ships).

Layout as conda-forge's: ``$PREFIX/bin/nvcc`` (+ ptxas, fatbinary, nvlink, cudafe++, bin2c,
``bin/crt/*.stub``), headers and libraries in ``$PREFIX/targets/x86_64-linux/{include,lib}``,
``$PREFIX/nvvm/{bin,libdevice,include,lib64}`` with ``targets/x86_64-linux/nvvm`` → ``../../nvvm``,
``targets/x86_64-linux/bin/nvcc`` → ``$PREFIX/bin/nvcc``, ``lib/libcudart.so*`` symlinks, and an
``nvcc.profile`` whose ``TOP`` is ``$PREFIX/targets/x86_64-linux`` (conda-forge patches NVIDIA's profile
the same way), so nvcc finds its headers, cicc and libdevice with no ``CUDA_HOME`` and no system CUDA.
``cuda-nvcc_linux-64`` carries ``etc/conda/{activate,deactivate}.d/~cuda-nvcc_*.sh`` that do what
conda-forge's do outside conda-build: add ``-I``/``-L`` for ``targets/x86_64-linux`` to
CFLAGS/CPPFLAGS/CXXFLAGS/LDFLAGS and put ``-ccbin=$CXX`` into ``NVCC_PREPEND_FLAGS`` (they do not set
``CUDA_HOME``). py-rattler's ``install`` does not run activation scripts; pixi does.

Deviations from conda-forge (each one because its input cannot be had offline, or on purpose):

* python is this machine's CPython (pyenv build), not conda-forge's: its version is whatever that
  interpreter is; its extension modules link the *system's* libssl, libsqlite3, libffi, libz, libbz2,
  liblzma, libreadline, libncurses, libuuid, libtk, ... where conda-forge's depend on conda packages
  (``openssl``, ``libsqlite``, ``libffi``, ``libzlib``, ``bzip2``, ``liblzma``, ``readline``,
  ``ncurses``, ``libuuid``, ``tk``, ``ld_impl_linux-64``, ``libgcc``, ``tzdata``, ...), so ``depends``
  lists only ``__glibc >=<floor>,<3.0.a0`` where the floor is the newest ``GLIBC_x.y`` symbol version
  the interpreter's binaries need (2.35 on Debian 12; conda-forge's python needs 2.17). A solve for
  python therefore needs ``__glibc`` at least that (the host's), not pixi's default 2.28. The static
  ``libpython3.11.a`` and ``python.o`` are left out (conda-forge ships them in a separate output),
  as are ``site-packages`` contents, ``test/`` and ``__pycache__``; text files that named the source
  prefix (sysconfigdata, Makefile, python-config, pkg-config files) name ``$PREFIX`` instead.
* pip/setuptools/wheel are the versions on PyPI listed in ``PYTHON_TOOLS`` (conda-forge's recipe may
  be at another version); pip ``depends`` on ``python >=<Requires-Python>,<3.13.0a0``, ``setuptools``,
  ``wheel`` as conda-forge's pip does for Python < 3.13.
* toolkit files come from NVIDIA's PyPI wheels (nvidia-cuda-nvcc, -crt, nvidia-nvvm, -runtime, -cccl;
  the same component versions as conda-forge's 13.0 builds), not from NVIDIA's redist tarballs:
  ``libnvvm.so.4`` ships without the ``.so.4.x.y`` file name (``libnvvm.so`` → ``libnvvm.so.4``),
  ``libcudart.so.13.0.96`` is the wheel's ``libcudart.so.13``, and the ``lib/pkgconfig/cuda*.pc`` files
  of ``cuda-cudart-dev`` are absent (not in the wheels); NVIDIA's binaries are packaged untouched
  (``binary_relocation`` off; conda-forge instead patchelfs an ``$ORIGIN`` RPATH into them — they need
  only libc, libm, libpthread, libgcc_s).
* dependencies on packages this channel cannot provide are left out, everything else is kept:
  ``cuda-nvcc`` does not depend on ``gcc_linux-64``/``gxx_linux-64`` (conda's GCC; here nvcc uses the
  first ``g++`` on PATH, the system's — the host-compiler ranges are in ``[[host_compiler]]``);
  ``cuda-nvcc_linux-64`` drops ``cuda-driver-dev_linux-64`` (``lib/stubs/libcuda.so``, not in any wheel)
  and ``sysroot_linux-64``; ``cuda-nvcc-impl`` / ``cuda-nvcc-dev_linux-64`` drop
  ``libnvptxcompiler-dev*`` (not in the wheels) and ``libgcc``. The ``gcc_impl_linux-64 >=6,<16.0a0``
  constraints are kept. ``__glibc >=2.28,<3.0.a0`` is declared where conda-forge's builds get it from
  ``stdlib('c')`` (sysroot 2.28 for CUDA 13); NVIDIA's binaries need only GLIBC 2.17.
* no library headers beyond the runtime (``libcublas-dev``, ``libcusparse-dev``, ``libcusolver-dev``,
  which torch's ``ATen/cuda/CUDAContext.h`` includes, are facts in the table but not built here: the
  libraries are hundreds of MB).

Caching: :func:`cached_channel` keeps the channel under ``<repo>/.resolver/test-channels/<key>``
where the key hashes this file, the source interpreter (version, path, the bytes of its executable and
libpython) and the pinned wheel versions; a file lock serialises concurrent sessions; the folder is
built in a temporary sibling and renamed into place, ``.ready`` written last; channels of earlier keys
are removed when no session holds them. Cold: 20-30 s on 2 cores (fetching ~120 MB of wheels once,
then packaging with zstd level 3 and without byte-compiling the stdlib); warm: ~0.1 s.

>>> # channel = cached_channel(); channel / "linux-64" / "repodata.json"
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".resolver" / "test-channels"
PYTHON_SERIES = "3.11"
TARGET = "targets/x86_64-linux"  # conda-forge's targetsDir for linux-64


@dataclass(frozen=True)
class Toolkit:
    """Component versions of conda-forge's CUDA 13.0 builds, each also a wheel on PyPI."""

    cuda: str = "13.0"          # cuda-version
    nvcc: str = "13.0.88"       # cuda-nvcc, cuda-nvcc-impl split; nvidia-cuda-nvcc/-crt, nvidia-nvvm wheels
    cudart: str = "13.0.96"     # cuda-cudart split; nvidia-cuda-runtime wheel
    cccl: str = "13.0.85"       # cuda-cccl split; nvidia-cuda-cccl wheel
    cccl_upstream: str = "3.0.1"  # cccl (CCCL's own version in that wheel)


TOOLKIT = Toolkit()
PYTHON_TOOLS = {"pip": "26.2.1", "setuptools": "80.9.0", "wheel": "0.46.3"}


def wheel_pins(toolkit: Toolkit = TOOLKIT) -> dict[str, str]:
    return {"nvidia-cuda-nvcc": toolkit.nvcc, "nvidia-cuda-crt": toolkit.nvcc, "nvidia-nvvm": toolkit.nvcc,
            "nvidia-cuda-runtime": toolkit.cudart, "nvidia-cuda-cccl": toolkit.cccl, **PYTHON_TOOLS}


# -- the source interpreter ------------------------------------------------------------------------
@dataclass(frozen=True)
class SourcePython:
    prefix: Path
    version: str          # 3.11.7
    series: str           # 3.11
    soabi_tag: str        # cp311


def find_source_python(series: str = PYTHON_SERIES) -> SourcePython:
    """A CPython ``series`` with a shared libpython on this machine: the one running the tests if it
    fits, else ``python<series>`` on PATH. Raises ``LookupError`` when there is none."""
    candidates = []
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == series:
        candidates.append(sys.executable)
    found = shutil.which(f"python{series}")
    if found:
        candidates.append(found)
    probe = ("import sys, sysconfig, json; print(json.dumps([sys.base_prefix, sys.version.split()[0], "
             "sys.implementation.name, sysconfig.get_config_var('Py_ENABLE_SHARED'), "
             "sysconfig.get_config_var('LDLIBRARY')]))")
    for exe in candidates:
        done = subprocess.run([exe, "-c", probe], capture_output=True, text=True)
        if done.returncode:
            continue
        base, version, impl, shared, ldlibrary = json.loads(done.stdout)
        prefix = Path(base)
        if impl == "cpython" and shared and (prefix / "lib" / f"{ldlibrary}.1.0").is_file() \
                and (prefix / "bin" / f"python{series}").is_file():
            return SourcePython(prefix, version, series, "cp" + series.replace(".", ""))
    raise LookupError(f"no CPython {series} with a shared libpython found (tried {candidates or 'nothing'})")


# -- cache -----------------------------------------------------------------------------------------
def channel_key(python: SourcePython, toolkit: Toolkit = TOOLKIT) -> str:
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    digest.update(json.dumps([str(python.prefix), python.version, asdict(toolkit), wheel_pins(toolkit)],
                             sort_keys=True).encode())
    for rel in (f"bin/python{python.series}", f"lib/libpython{python.series}.so.1.0"):
        digest.update(hashlib.sha256((python.prefix / rel).read_bytes()).digest())
    return digest.hexdigest()[:16]


def cached_channel(root: Path = CACHE, toolkit: Toolkit = TOOLKIT) -> Path:
    """The channel folder for this machine's inputs, built once and reused by later sessions."""
    python = find_source_python()
    key = channel_key(python, toolkit)
    folder = root / f"toolchain-{key}"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".toolchain-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".ready").is_file():
            building = root / f".building-{key}"
            shutil.rmtree(building, ignore_errors=True)
            shutil.rmtree(folder, ignore_errors=True)
            started = time.monotonic()
            build_channel(building, python, toolkit, wheels=root / "wheels")
            info = json.loads((building / "channel.json").read_text())
            info["build_seconds"] = round(time.monotonic() - started, 1)
            (building / "channel.json").write_text(json.dumps(info, indent=2) + "\n")
            os.rename(building, folder)
            (folder / ".ready").write_text("ok\n")
            _prune(root, keep=folder)
    return folder


def _prune(root: Path, keep: Path) -> None:
    """Remove channels of earlier inputs (100 MB each) that no session holds right now."""
    for stale in root.glob("toolchain-*"):
        if stale == keep or not stale.is_dir():
            continue
        with open(root / f".{stale.name}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            shutil.rmtree(stale, ignore_errors=True)
        (root / f".{stale.name}.lock").unlink(missing_ok=True)


def channel_info(channel: Path) -> dict:
    """What :func:`build_channel` wrote about the channel (versions, the python's glibc floor, ...)."""
    return json.loads((channel / "channel.json").read_text())


def platform_entry(channel: Path) -> str:
    """The ``[workspace] platforms`` entry a workspace solving this channel's python declares: linux-64
    with the glibc the python needs (pixi's default 2.28 is below it; see the module docstring)."""
    floor = channel_info(channel)["python_glibc_floor"]
    return f'{{ name = "linux-64-glibc{floor.replace(".", "")}", platform = "linux-64", glibc = "{floor}" }}'


def platform_name(channel: Path) -> str:
    return "linux-64-glibc" + channel_info(channel)["python_glibc_floor"].replace(".", "")


# -- inputs ----------------------------------------------------------------------------------------
def download_wheels(folder: Path, toolkit: Toolkit = TOOLKIT) -> dict[str, Path]:
    """The pinned wheels, fetched with pip (this machine's pip configuration: index, mirrors) once."""
    folder.mkdir(parents=True, exist_ok=True)
    pins = wheel_pins(toolkit)

    def present() -> dict[str, Path]:
        out = {}
        for name, version in pins.items():
            stem = f"{name.replace('-', '_')}-{version}-"
            hits = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(stem.lower()))
            if hits:
                out[name] = hits[0]
        return out

    have = present()
    missing = [f"{n}=={v}" for n, v in pins.items() if n not in have]
    if missing:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                               "--no-deps", "--only-binary=:all:", "--dest", str(folder), *missing],
                              capture_output=True, text=True)
        assert done.returncode == 0, f"pip download {missing} failed:\n{done.stderr[-3000:]}"
        have = present()
    assert set(have) == set(pins), f"wheels missing after download: {set(pins) - set(have)}"
    return have


def _extract(wheel: Path, into: Path) -> Path:
    """Unzip a wheel keeping the file modes it records."""
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            target = into / info.filename
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(target, mode or 0o644)
    return into


def _glibc_floor(files: list[Path]) -> str:
    """The newest GLIBC_x.y symbol version any of ``files`` needs (objdump -T)."""
    newest = (2, 17)
    assert shutil.which("objdump"), "objdump (binutils) is needed to read the GLIBC versions python needs"
    for path in files:
        done = subprocess.run(["objdump", "-T", str(path)], capture_output=True, text=True)
        for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", done.stdout):
            newest = max(newest, (int(major), int(minor)))
    return f"{newest[0]}.{newest[1]}"


# -- staging: the exact trees each package installs ------------------------------------------------
def stage_python(python: SourcePython, into: Path) -> str:
    """Copy the interpreter into ``into`` laid out as a conda prefix; returns its glibc floor.

    Text files that name the source prefix get ``@PYTHON_PREFIX@`` (the recipe turns it into $PREFIX)."""
    src, series = python.prefix, python.series
    (into / "bin").mkdir(parents=True)
    shutil.copy2(src / "bin" / f"python{series}", into / "bin" / f"python{series}")
    (into / "lib").mkdir()
    for lib in (f"libpython{series}.so.1.0", "libpython3.so"):
        if (src / "lib" / lib).exists():
            shutil.copy2(src / "lib" / lib, into / "lib" / lib)
    shutil.copytree(src / "include" / f"python{series}", into / "include" / f"python{series}")
    if (src / "lib" / "pkgconfig").is_dir():
        shutil.copytree(src / "lib" / "pkgconfig", into / "lib" / "pkgconfig", symlinks=True)

    stdlib = src / "lib" / f"python{series}"

    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = {"__pycache__"}
        if Path(folder) == stdlib:
            skip |= {"site-packages", "test"}
        skip |= {n for n in names if n in ("libpython%s.a" % series, "python.o")}
        return skip & set(names)

    shutil.copytree(stdlib, into / "lib" / f"python{series}", ignore=ignore, symlinks=True)
    site = into / "lib" / f"python{series}" / "site-packages"
    site.mkdir()
    (site / "README.txt").write_text("This directory exists so that 3rd party packages can be installed here.\n")

    old = str(src).encode()
    for path in into.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.suffix not in (".so", ".a", ".o"):
            data = path.read_bytes()
            if old in data and b"\0" not in data[:8192]:
                path.write_bytes(data.replace(old, b"@PYTHON_PREFIX@"))
    binaries = [into / "bin" / f"python{series}", into / "lib" / f"libpython{series}.so.1.0",
                *sorted((into / "lib" / f"python{series}" / "lib-dynload").glob("*.so"))]
    return _glibc_floor(binaries)


def stage_toolkit(wheels: dict[str, Path], into: Path, toolkit: Toolkit = TOOLKIT) -> None:
    """Unpack NVIDIA's wheels and arrange their files by the conda-forge package that owns them.
    ``into/<package>/`` mirrors the files that package puts under $PREFIX (symlinks are made by the
    recipe scripts)."""
    raw = into / "_wheels"
    roots = {}
    for name in ("nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-runtime", "nvidia-cuda-cccl"):
        roots[name] = _extract(wheels[name], raw / name) / "nvidia" / "cu13"

    def put(package: str, source: Path, rel: str) -> None:
        target = into / package / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target)

    nvcc = roots["nvidia-cuda-nvcc"]
    for tool in sorted((nvcc / "bin").iterdir()):
        if tool.is_file() and tool.name != "nvcc.profile":
            put("cuda-nvcc-tools", tool, f"bin/{tool.name}")
    profile = conda_nvcc_profile((nvcc / "bin" / "nvcc.profile").read_text())
    (into / "cuda-nvcc-tools" / "bin" / "nvcc.profile").write_text(profile)
    put("cuda-crt-tools", nvcc / "bin" / "crt", "bin/crt")
    put("cuda-nvcc-dev_linux-64", nvcc / "include" / "fatbinary_section.h", f"{TARGET}/include/fatbinary_section.h")
    put("cuda-crt-dev_linux-64", roots["nvidia-cuda-crt"] / "include" / "crt", f"{TARGET}/include/crt")

    nvvm = roots["nvidia-nvvm"]
    put("cuda-nvvm-tools", nvvm / "nvvm" / "bin", "nvvm/bin")
    put("cuda-nvvm-tools", nvvm / "nvvm" / "libdevice", "nvvm/libdevice")
    put("cuda-nvvm-impl", nvvm / "include" / "nvvm.h", "nvvm/include/nvvm.h")
    put("cuda-nvvm-impl", nvvm / "lib" / "libnvvm.so.4", "nvvm/lib64/libnvvm.so.4")

    runtime = roots["nvidia-cuda-runtime"]
    put("cuda-cudart_linux-64", runtime / "lib" / "libcudart.so.13", f"{TARGET}/lib/libcudart.so.{toolkit.cudart}")
    put("cuda-cudart-dev_linux-64", runtime / "include", f"{TARGET}/include")
    for lib in ("libcudart_static.a", "libcudadevrt.a"):
        put("cuda-cudart-static_linux-64", runtime / "lib" / lib, f"{TARGET}/lib/{lib}")

    cccl = roots["nvidia-cuda-cccl"]
    for part in ("cccl", "nv"):
        put("cuda-cccl_linux-64", cccl / "include" / part, f"{TARGET}/include/{part}")
    put("cuda-cccl_linux-64", cccl / "lib" / "cmake", f"{TARGET}/lib/cmake")
    for part in sorted((cccl / "include" / "cccl").iterdir()):
        put("cccl", part, f"include/cccl/{part.name}")
    put("cccl", cccl / "lib" / "cmake", "lib/cmake")
    shutil.rmtree(raw)


def conda_nvcc_profile(nvidia: str) -> str:
    """NVIDIA's ``bin/nvcc.profile`` with ``TOP`` moved to ``$PREFIX/targets/<arch>`` (where conda-forge
    keeps headers, libraries and the ``nvvm`` link), so every path nvcc derives lands in the prefix."""
    out = []
    for line in nvidia.splitlines():
        key = line.split("=", 1)[0].strip().rstrip("+").strip()
        if key == "TOP":
            line = "TOP              = $(_HERE_)/../$(_TARGET_DIR_)"
        elif key == "INCLUDES":
            line = 'INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)'
        elif key == "SYSTEM_INCLUDES":
            line = 'SYSTEM_INCLUDES +=  "-isystem" "$(TOP)/include/cccl" $(_SPACE_)'
        elif key == "LIBRARIES":
            line = 'LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib/stubs" "-L$(TOP)/lib"'
        out.append(line)
    text = "\n".join(out) + "\n"
    for needed in ("$(_HERE_)/../$(_TARGET_DIR_)", "CICC_PATH", "NVVMIR_LIBRARY_DIR", '"-I$(TOP)/include"'):
        assert needed in text, f"nvcc.profile changed shape; {needed!r} missing:\n{nvidia}"
    return text


def stage_wheels(wheels: dict[str, Path], into: Path) -> dict[str, str]:
    """Copy the python-tool wheels; returns each one's Requires-Python."""
    into.mkdir(parents=True)
    requires = {}
    for name in PYTHON_TOOLS:
        shutil.copy2(wheels[name], into / wheels[name].name)
        with zipfile.ZipFile(wheels[name]) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            found = re.search(r"^Requires-Python:\s*(\S+)", zf.read(meta).decode(), re.M)
        requires[name] = found.group(1).replace(" ", "") if found else ""
    return requires


# -- recipes ---------------------------------------------------------------------------------------
def _yaml(value) -> str:
    return json.dumps(value)  # JSON is YAML; keeps quoting exact


def _output(name: str, *, script: list[str] = (), run: list[str] = (), constraints: list[str] = (),
            noarch: str | None = None, strong: list[str] = (), weak: list[str] = (), noarch_exports: list[str] = (),
            string: str | None = None, relocate: bool = False, version: str | None = None,
            number: int | None = None, python: dict | None = None, host: list[str] = (),
            license: str = "LicenseRef-NVIDIA-End-User-License-Agreement") -> dict:
    build: dict = {"script": list(script) or ["true"]}
    if noarch:
        build["noarch"] = noarch
    if python is not None:
        build["python"] = python
    if string:
        build["string"] = string
    if number is not None:
        build["number"] = number
    if not relocate:
        build["dynamic_linking"] = {"binary_relocation": False}
    requirements: dict = {"run": list(run)}
    if host:
        requirements["host"] = list(host)
    if constraints:
        requirements["run_constraints"] = list(constraints)
    exports = {k: v for k, v in (("strong", strong), ("weak", weak), ("noarch", noarch_exports)) if v}
    if exports:
        requirements["run_exports"] = exports
    package = {"name": name}
    if version:
        package["version"] = version
    return {"package": package, "build": build, "requirements": requirements,
            "about": {"summary": f"{name} for resolver tests (see tests/support/toolchain_channel.py)", "license": license}}


def _recipe(name: str, version: str, outputs: list[dict], number: int = 0) -> str:
    doc = {"schema_version": 1, "recipe": {"name": name, "version": version}, "build": {"number": number},
           "outputs": outputs}
    return "\n".join(f"{k}: {_yaml(v)}" for k, v in doc.items()) + "\n"


def _copy(stage: Path, package: str) -> str:
    return f'cp -a "{stage / package}/." "$PREFIX/"'


def python_recipe(stage: Path, python: SourcePython, glibc: str) -> str:
    series, tag = python.series, python.soabi_tag
    script = [
        _copy(stage, "python"),
        f'ln -s python{series} "$PREFIX/bin/python3"',
        f'ln -s python{series} "$PREFIX/bin/python"',
        f'ln -s libpython{series}.so.1.0 "$PREFIX/lib/libpython{series}.so"',
        'grep -rlI "@PYTHON_PREFIX@" "$PREFIX" | while read -r f; do sed -i "s|@PYTHON_PREFIX@|$PREFIX|g" "$f"; done',
    ]
    out = _output("python", script=script, run=[f"__glibc >={glibc},<3.0.a0"],
                  constraints=[f"python_abi {series}.* *_{tag}"], relocate=True,
                  string="h${{ hash }}_${{ build_number }}_cpython",
                  weak=[f"python_abi {series}.* *_{tag}"], noarch_exports=["python"], license="Python-2.0",
                  # rattler-build would byte-compile the stdlib with this python: minutes on 2 cores;
                  # the interpreter writes __pycache__ itself on first import
                  python={"skip_pyc_compilation": ["**/*.py"]})
    return _recipe("python-split", python.version, [out])


def python_abi_recipe(python: SourcePython) -> str:
    out = _output("python_abi", noarch="generic", string=f"8_{python.soabi_tag}",
                  constraints=[f"python {python.series}.* *_cpython"], license="BSD-3-Clause")
    return _recipe("python_abi", python.series, [out], number=8)


def python_tool_recipe(name: str, stage: Path, wheels: dict[str, Path], python: SourcePython,
                       requires_python: str) -> str:
    pip = stage / wheels["pip"].name
    install = (f'"$PREFIX/bin/python" "{pip}/pip" install --no-deps --no-index --no-compile --no-cache-dir '
               f'--disable-pip-version-check --prefix "$PREFIX" "{stage / wheels[name].name}"')
    floor = re.search(r">=\s*([0-9.]+)", requires_python)
    run = [f"python >={floor.group(1) if floor else python.series},<3.13.0a0"]
    entry_points = {"pip": ["pip = pip._internal.cli.main:main", "pip3 = pip._internal.cli.main:main"],
                    "wheel": ["wheel = wheel._commands:main" if _has_module(wheels["wheel"], "wheel/_commands")
                              else "wheel = wheel.cli:main"]}.get(name, [])
    if name == "pip":
        run += ["setuptools", "wheel"]
    # console scripts come back as the entry points rattler writes at install time, as conda-forge's do
    scripts = " ".join(f'"$PREFIX/bin/{s}"' for s in ("pip", "pip3", f"pip{python.series}", "wheel"))
    out = _output(name, script=[install, f"rm -f {scripts}"], run=run, host=[f"python {python.series}.*"],
                  noarch="python", python={"entry_points": entry_points}, relocate=True, license="MIT")
    return _recipe(name, PYTHON_TOOLS[name], [out])


def _has_module(wheel: Path, stem: str) -> bool:
    with zipfile.ZipFile(wheel) as zf:
        return any(n.startswith(stem) for n in zf.namelist())


def cuda_version_recipe(toolkit: Toolkit) -> str:
    major = toolkit.cuda.split(".")[0]
    out = _output("cuda-version", noarch="generic",
                  constraints=[f"__cuda >={major}", f"cudatoolkit =={toolkit.cuda}|{toolkit.cuda}.*"])
    return _recipe("cuda-version", toolkit.cuda, [out], number=3)


def _pin(toolkit: Toolkit) -> str:
    """pin_compatible("cuda-version", max_pin="x.x") with ``cuda-version X.Y`` in host, as conda-build writes it."""
    major, minor = toolkit.cuda.split(".")
    return f"cuda-version >={toolkit.cuda},<{major}.{int(minor) + 1}.0a0"


def _exact(name: str) -> str:
    return '${{ pin_subpackage("%s", exact=True) }}' % name


GLIBC_TOOLKIT = "__glibc >=2.28,<3.0.a0"  # conda-forge's stdlib('c') run_export for its CUDA 13 builds
GCC_RANGE_13 = "gcc_impl_linux-64 >=6,<16.0a0"  # cuda-nvcc-impl-feedstock @17c60f9 gcc_constraint


def nvcc_impl_recipe(stage: Path, toolkit: Toolkit) -> str:
    pin, major = _pin(toolkit), toolkit.cuda.split(".")[0]
    outputs = [
        _output("cuda-crt-tools", script=[_copy(stage, "cuda-crt-tools")], run=[pin]),
        _output("cuda-crt-dev_linux-64", noarch="generic", script=[_copy(stage, "cuda-crt-dev_linux-64")], run=[pin],
                strong=[f"cuda-version >={toolkit.cuda},<{int(major) + 1}.0a0"]),
        _output("cuda-nvvm-tools", script=[_copy(stage, "cuda-nvvm-tools")], run=[pin, GLIBC_TOOLKIT]),
        _output("cuda-nvvm-impl", script=[_copy(stage, "cuda-nvvm-impl"),
                                          'ln -s libnvvm.so.4 "$PREFIX/nvvm/lib64/libnvvm.so"'],
                run=[pin, GLIBC_TOOLKIT]),
        _output("cuda-nvvm-dev_linux-64", noarch="generic",
                script=[f'mkdir -p "$PREFIX/{TARGET}"', f'ln -s ../../nvvm "$PREFIX/{TARGET}/nvvm"'], run=[pin]),
        _output("cuda-nvcc-tools", script=[_copy(stage, "cuda-nvcc-tools")],
                run=[pin, _exact("cuda-crt-tools"), _exact("cuda-nvvm-tools"), GLIBC_TOOLKIT],
                constraints=[GCC_RANGE_13]),
        _output("cuda-nvcc-dev_linux-64", noarch="generic",
                script=[_copy(stage, "cuda-nvcc-dev_linux-64"), f'mkdir -p "$PREFIX/{TARGET}/bin"',
                        f'ln -s ../../../bin/nvcc "$PREFIX/{TARGET}/bin/nvcc"'],
                run=[pin, _exact("cuda-crt-dev_linux-64"), _exact("cuda-nvvm-dev_linux-64")],
                constraints=[GCC_RANGE_13], strong=[f"cuda-version >={toolkit.cuda},<{int(major) + 1}.0a0"]),
        _output("cuda-nvcc-impl", run=[_exact("cuda-nvcc-tools"), _exact("cuda-nvcc-dev_linux-64"),
                                       _exact("cuda-nvvm-impl"), pin, "cuda-cudart-dev"],
                constraints=[GCC_RANGE_13], strong=[f"cuda-version >={toolkit.cuda},<{int(major) + 1}.0a0"]),
    ]
    return _recipe("cuda-nvcc-impl-split", toolkit.nvcc, outputs)


ACTIVATE = r"""# cuda-nvcc activation (resolver test channel): what conda-forge's ~cuda-nvcc_activate.sh does
# outside conda-build. Headers and libraries live under targets/x86_64-linux; nvcc gets the C++
# compiler from $CXX through NVCC_PREPEND_FLAGS.
_cuda_targets="${CONDA_PREFIX}/targets/x86_64-linux"
_cuda_cflags="-I${_cuda_targets}/include -I${_cuda_targets}/include/cccl"
_cuda_ldflags="-L${_cuda_targets}/lib -L${_cuda_targets}/lib/stubs"
export CFLAGS="${CFLAGS:-} ${_cuda_cflags}"
export CPPFLAGS="${CPPFLAGS:-} ${_cuda_cflags}"
export CXXFLAGS="${CXXFLAGS:-} ${_cuda_cflags}"
export LDFLAGS="${LDFLAGS:-} ${_cuda_ldflags}"
unset _cuda_targets _cuda_cflags _cuda_ldflags
if [ -z "${CXX+x}" ]; then
    echo 'cuda-nvcc: set CXX to the C++ compiler nvcc should use (conda: add the compilers to the environment)' >&2
    false
else
    export NVCC_PREPEND_FLAGS_BACKUP="${NVCC_PREPEND_FLAGS-UNSET}"
    export NVCC_PREPEND_FLAGS="${NVCC_PREPEND_FLAGS:-} -ccbin=${CXX}"
fi
"""

DEACTIVATE = r"""# cuda-nvcc deactivation (resolver test channel): undo ~cuda-nvcc_activate.sh's NVCC_PREPEND_FLAGS.
if [ "${NVCC_PREPEND_FLAGS_BACKUP-UNSET}" = "UNSET" ]; then
    unset NVCC_PREPEND_FLAGS
else
    export NVCC_PREPEND_FLAGS="${NVCC_PREPEND_FLAGS_BACKUP}"
fi
unset NVCC_PREPEND_FLAGS_BACKUP
"""


def nvcc_recipe(stage: Path, toolkit: Toolkit) -> str:
    major = toolkit.cuda.split(".")[0]
    scripts = stage / "cuda-nvcc_linux-64"
    for change, text in (("activate", ACTIVATE), ("deactivate", DEACTIVATE)):
        path = scripts / "etc" / "conda" / f"{change}.d" / f"~cuda-nvcc_{change}.sh"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    outputs = [
        _output("cuda-nvcc", run=[f"cuda-nvcc_linux-64 {toolkit.nvcc}.*"]),
        _output("cuda-nvcc_linux-64", script=[_copy(stage, "cuda-nvcc_linux-64")],
                run=[f"cuda-nvcc-dev_linux-64 {toolkit.nvcc}.*", f"cuda-cudart-dev_linux-64 {toolkit.cuda}.*",
                     f"cuda-nvcc-tools {toolkit.nvcc}.*", f"cuda-nvcc-impl {toolkit.nvcc}.*"],
                strong=[f"cuda-version >={toolkit.cuda},<{int(major) + 1}"]),
        _output("cuda-crt", run=[f"cuda-crt-dev_linux-64 {toolkit.nvcc}.*", f"cuda-crt-tools {toolkit.nvcc}.*"]),
        _output("cuda-nvvm", run=[f"cuda-nvvm-dev_linux-64 {toolkit.nvcc}.*", f"cuda-nvvm-tools {toolkit.nvcc}.*",
                                  f"cuda-nvvm-impl {toolkit.nvcc}.*"]),
    ]
    return _recipe("cuda-nvcc-split", toolkit.nvcc, outputs, number=6)


def cudart_recipe(stage: Path, toolkit: Toolkit) -> str:
    pin, v, so = _pin(toolkit), toolkit.cudart, toolkit.cudart.split(".")[0]
    lib = f"$PREFIX/{TARGET}/lib"
    outputs = [
        _output("cuda-cudart_linux-64", noarch="generic",
                script=[_copy(stage, "cuda-cudart_linux-64"), f'ln -s libcudart.so.{v} "{lib}/libcudart.so.{so}"'],
                run=[pin]),
        _output("cuda-cudart", script=['mkdir -p "$PREFIX/lib"',
                                       f'ln -s ../{TARGET}/lib/libcudart.so.{so} "$PREFIX/lib/libcudart.so.{so}"',
                                       f'ln -s ../{TARGET}/lib/libcudart.so.{v} "$PREFIX/lib/libcudart.so.{v}"'],
                run=[pin, _exact("cuda-cudart_linux-64"), GLIBC_TOOLKIT]),
        _output("cuda-cudart-static_linux-64", noarch="generic", script=[_copy(stage, "cuda-cudart-static_linux-64")],
                run=[pin]),
        _output("cuda-cudart-static", script=['mkdir -p "$PREFIX/lib"'] + [
            f'ln -s ../{TARGET}/lib/{a} "$PREFIX/lib/{a}"' for a in ("libcudart_static.a", "libcudadevrt.a")],
            run=[pin, _exact("cuda-cudart-static_linux-64"), GLIBC_TOOLKIT]),
        _output("cuda-cudart-dev_linux-64", noarch="generic",
                script=[_copy(stage, "cuda-cudart-dev_linux-64"), f'mkdir -p "{lib}"',
                        f'ln -s libcudart.so.{so} "{lib}/libcudart.so"'],
                run=[pin, "cuda-cudart-static_linux-64", "cuda-cccl_linux-64", "cuda-cudart_linux-64"],
                weak=['${{ pin_subpackage("cuda-cudart", upper_bound="x") }}']),
        _output("cuda-cudart-dev", script=['mkdir -p "$PREFIX/lib"',
                                           f'ln -s ../{TARGET}/lib/libcudart.so "$PREFIX/lib/libcudart.so"'],
                run=[pin, _exact("cuda-cudart"), _exact("cuda-cudart-dev_linux-64"), _exact("cuda-cudart-static"),
                     GLIBC_TOOLKIT],
                weak=['${{ pin_subpackage("cuda-cudart", upper_bound="x") }}']),
    ]
    return _recipe("cuda-cudart-split", v, outputs)


def cccl_recipe(stage: Path, toolkit: Toolkit) -> str:
    pin = _pin(toolkit)
    outputs = [
        _output("cuda-cccl_linux-64", noarch="generic", script=[_copy(stage, "cuda-cccl_linux-64")], run=[pin]),
        _output("cuda-cccl", run=[pin, f"cuda-cccl_linux-64 =={toolkit.cccl}", f"cccl =={toolkit.cccl_upstream}"]),
        _output("cccl", version=toolkit.cccl_upstream, script=[_copy(stage, "cccl")],
                license="Apache-2.0 AND BSD-3-Clause AND BSD-2-Clause AND BSL-1.0 AND NCSA AND MIT"),
    ]
    return _recipe("cuda-cccl-split", toolkit.cccl, outputs)


# -- build -----------------------------------------------------------------------------------------
def build_channel(out: Path, python: SourcePython | None = None, toolkit: Toolkit = TOOLKIT,
                  wheels: Path | None = None) -> Path:
    """Build every package into ``out`` (an indexed channel) and write ``out/channel.json``."""
    from rattler_build import Stage0Recipe, ToolConfiguration

    python = python or find_source_python()
    out.mkdir(parents=True, exist_ok=True)
    work = out / ".work"
    times: dict[str, float] = {}

    started = time.monotonic()
    found = download_wheels(wheels or (out / ".wheels"), toolkit)
    times["wheels"] = time.monotonic() - started

    started = time.monotonic()
    glibc = stage_python(python, work / "python")
    stage_toolkit(found, work, toolkit)
    requires = stage_wheels(found, work / "pywheels")
    times["staging"] = time.monotonic() - started

    tool = ToolConfiguration(test_strategy="skip", allow_symlinks_on_windows=True,
                             use_zstd=False, use_bz2=False, use_sharded=False)
    rounds = [
        [("cuda-version", cuda_version_recipe(toolkit)), ("cuda-nvcc-impl", nvcc_impl_recipe(work, toolkit)),
         ("cuda-nvcc", nvcc_recipe(work, toolkit)), ("cuda-cudart", cudart_recipe(work, toolkit)),
         ("cuda-cccl", cccl_recipe(work, toolkit)), ("python_abi", python_abi_recipe(python)),
         ("python", python_recipe(work, python, glibc))],
        # noarch: python packages need the python above in their host environment (from `out` itself)
        [(name, python_tool_recipe(name, work / "pywheels", found, python, requires[name]))
         for name in ("wheel", "setuptools", "pip")],
    ]
    for recipes in rounds:
        for key, text in recipes:
            started = time.monotonic()
            folder = work / "recipes" / key
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "recipe.yaml").write_text(text)
            recipe = Stage0Recipe.from_yaml(text, recipe_dir=folder)
            recipe.run_build(output_dir=out, channels=[out.resolve().as_uri()], tool_config=tool,
                             package_format="conda:3", no_build_id=True, no_include_recipe=True)
            times[key] = time.monotonic() - started
    for leftover in ("bld", "src_cache", ".tmp", ".work", ".wheels"):
        shutil.rmtree(out / leftover, ignore_errors=True)
    for log in out.glob("rattler-build-log*"):
        log.unlink()
    _reindex(out)
    info = {"python": python.version, "python_series": python.series, "python_source": str(python.prefix),
            "python_glibc_floor": glibc, "toolkit": asdict(toolkit), "python_tools": PYTHON_TOOLS,
            "packages": sorted(p.name for p in out.glob("*/*.conda")),
            "seconds": {k: round(v, 1) for k, v in times.items()}}
    (out / "channel.json").write_text(json.dumps(info, indent=2) + "\n")
    return out


def _reindex(channel: Path) -> None:
    import asyncio

    sys.path.insert(0, str(REPO))
    from resolver.tools.conda import rattler

    rattler()
    from rattler.index import index_fs

    asyncio.run(index_fs(channel, write_zst=False, write_shards=False, force=True))


if __name__ == "__main__":  # python tests/support/toolchain_channel.py [OUT]: build (or reuse) and print the folder
    target = cached_channel() if len(sys.argv) < 2 else build_channel(Path(sys.argv[1]))
    print(target)
    print(json.dumps(channel_info(target), indent=2))
    sys.stdout.flush()
    os._exit(0)
