"""Build one PyTorch CUDA/HIP extension sdist with the resolver's fixes, then unpack it into $PREFIX.

Run by the recipes' build scripts with the *environment's* Python (the one that has torch), e.g.::

    python build_ext.py --src . --prefix "$PREFIX" --backend cuda --archs 9.0 --cxx-std c++20 \
        --jobs 2 --nvcc-threads 1 --env-prefix CAUSAL_CONV1D

Upstream setup.py files hard-code their architecture list, C++ standard and ``nvcc --threads 4``.
Rather than patching their text, this script wraps the extension factory they call (by default
``torch.utils.cpp_extension.CUDAExtension``) before running setup.py, and rewrites the compile
arguments it is given:

* every ``-gencode``/``-arch``/``--offload-arch`` flag is replaced by the requested architectures;
* ``-std=c++NN`` becomes ``--cxx-std`` when given (ATen in torch >= 2.13 requires C++20);
* ``--threads N`` becomes ``--nvcc-threads`` (memory: each nvcc thread is one more compiler);
* ``--include-first`` folders go first on the include path (the ROCm 6.0 header overlay).

The wheel setup.py produces is then unpacked into ``$PREFIX/<site-packages>`` (the layout of the
environment's own interpreter), so the conda package installs into a conda prefix or a venv alike.
Written for mamba-resolver; standard library only (the torch import happens inside setup.py).
"""

from __future__ import annotations

import argparse
import functools
import glob
import importlib
import os
import runpy
import shutil
import sys
import sysconfig
import zipfile

_ARCH_FLAGS_WITH_VALUE = ("-gencode", "--generate-code", "-arch", "--gpu-architecture")


def gencode_flags(archs: list[str]) -> list[str]:
    """``["9.0", "10.0a"]`` → ``-gencode arch=compute_90,code=sm_90 …`` (SASS only, as upstream)."""
    flags: list[str] = []
    for arch in archs:
        digits = arch.replace(".", "")
        flags += ["-gencode", f"arch=compute_{digits},code=sm_{digits}"]
    return flags


def rewrite_flags(flags: list[str], *, backend: str, archs: list[str], cxx_std: str | None,
                  nvcc_threads: int | None, include_first: list[str], device: bool) -> list[str]:
    """The compile flags of one compiler ("cxx" or "nvcc") with our fixes applied."""
    out: list[str] = [f"-I{folder}" for folder in include_first]
    skip = False
    for _index, flag in enumerate(flags):
        if skip:
            skip = False
            continue
        if flag in _ARCH_FLAGS_WITH_VALUE or flag == "--threads":
            skip = True
            continue
        if flag.startswith(("-gencode=", "--generate-code=", "-arch=", "--gpu-architecture=", "--offload-arch=",
                            "--threads=")):
            continue
        if flag.startswith("-std=") and cxx_std:
            out.append(f"-std={cxx_std}")
            continue
        out.append(flag)
    if device:
        if backend == "rocm":
            out += [f"--offload-arch={arch}" for arch in archs]
        else:
            out += gencode_flags(archs)
            if nvcc_threads:
                out += ["--threads", str(nvcc_threads)]
    return out


def _prepend(environ, key: str, folders: list[str]) -> None:
    old = [p for p in environ.get(key, "").split(os.pathsep) if p]
    environ[key] = os.pathsep.join(dict.fromkeys([*folders, *old]))


def conda_toolkit_environment(home: str, environ) -> list[str]:
    """What conda-forge's ``cuda-nvcc`` activation would set, for a toolkit in a conda prefix (py-rattler
    installs without running activation scripts), plus the CUDA library headers PyPI's torch brings.

    * headers and libraries live in ``targets/<arch>-linux/{include,lib}``, not ``include``/``lib64``
      where torch's cpp_extension looks: they go on CPATH (g++ and nvcc's host pass) and LIBRARY_PATH;
    * conda's own compilers (``gxx_linux-64``) are used when the prefix has them: CC/CXX (cpp_extension
      hands CC to nvcc as ``-ccbin``);
    * torch's headers include cublas_v2.h, cusparse.h, cusolverDn.h: from PyPI's CUDA torch they are in
      its ``nvidia-*`` wheels (``site-packages/nvidia/cu13/include``, or ``nvidia/<lib>/include`` before).

    Returns the include folders it added (printed in the build log).
    """
    includes, libs = [], []
    for target in sorted(glob.glob(os.path.join(home, "targets", "*-linux"))):
        includes += [p for p in (os.path.join(target, "include"), os.path.join(target, "include", "cccl"))
                     if os.path.isdir(p)]
        libs += [p for p in (os.path.join(target, "lib"), os.path.join(target, "lib", "stubs")) if os.path.isdir(p)]
    for site in sysconfig.get_paths().get("platlib", ""), sysconfig.get_paths().get("purelib", ""):
        includes += sorted(p for p in glob.glob(os.path.join(site, "nvidia", "*", "include")) if os.path.isdir(p))
    includes = list(dict.fromkeys(includes))
    if includes:
        _prepend(environ, "CPATH", includes)
    if libs:
        _prepend(environ, "LIBRARY_PATH", libs)
    for var, names in (("CC", ("*-conda-linux-gnu-gcc",)), ("CXX", ("*-conda-linux-gnu-g++",))):
        found = sorted(glob.glob(os.path.join(home, "bin", names[0])))
        if found and not environ.get(var):
            environ[var] = found[0]
    return includes


def wrap_factory(factory, options: argparse.Namespace):
    include_first = [os.path.abspath(p) for p in options.include_first]

    @functools.wraps(factory)
    def fixed(name, sources, *args, **kwargs):
        extra = kwargs.get("extra_compile_args")
        if isinstance(extra, dict):
            extra = {key: rewrite_flags(list(value), backend=options.backend, archs=options.archs,
                                        cxx_std=options.cxx_std, nvcc_threads=options.nvcc_threads,
                                        include_first=include_first, device=(key == "nvcc"))
                     for key, value in extra.items()}
            extra.setdefault("nvcc", rewrite_flags([], backend=options.backend, archs=options.archs,
                                                   cxx_std=options.cxx_std, nvcc_threads=options.nvcc_threads,
                                                   include_first=include_first, device=True))
            kwargs["extra_compile_args"] = extra
        kwargs["include_dirs"] = include_first + list(kwargs.get("include_dirs") or [])
        print(f"[resolver] {name}: archs={','.join(options.archs)} std={options.cxx_std or 'as shipped'} "
              f"jobs={options.jobs} nvcc-threads={options.nvcc_threads}", flush=True)
        return factory(name, sources, *args, **kwargs)

    return fixed


def install_wheel(wheel: str, prefix: str) -> list[str]:
    """Unpack a wheel into ``prefix`` using this interpreter's scheme; return the files written."""
    paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})
    site = paths["platlib"]
    written: list[str] = []
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if member.is_dir():
                continue
            parts = member.filename.split("/")
            if parts[0].endswith(".data") and len(parts) > 2:
                scheme = {"purelib": "purelib", "platlib": "platlib", "scripts": "scripts",
                          "headers": "include", "data": "data"}[parts[1]]
                target = os.path.join(paths[scheme], *parts[2:])
            else:
                target = os.path.join(site, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)
            if member.external_attr >> 16 & 0o111:
                os.chmod(target, 0o755)
            written.append(target)
    for info in glob.glob(os.path.join(site, "*.dist-info")):
        with open(os.path.join(info, "INSTALLER"), "w", encoding="utf-8") as handle:
            handle.write("mamba-resolver\n")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--backend", choices=("cuda", "rocm", "cpu"), required=True)
    parser.add_argument("--archs", default="", help="comma-separated: 9.0,8.6 (CUDA) or gfx90a,gfx942 (ROCm)")
    parser.add_argument("--cxx-std", default=None, help="e.g. c++20; empty keeps the shipped standard")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--nvcc-threads", type=int, default=1)
    parser.add_argument("--include-first", action="append", default=[])
    parser.add_argument("--env-prefix", default="", help="upstream switch prefix: CAUSAL_CONV1D, MAMBA")
    parser.add_argument("--factory", default="torch.utils.cpp_extension:CUDAExtension")
    parser.add_argument("--toolkit-home", default=None, help="CUDA_HOME (CUDA) or ROCM_PATH (ROCm) for the build")
    parser.add_argument("--wheel", default=None, help="a prebuilt wheel to unpack instead of compiling")
    parser.add_argument("--wheel-out", default=None, help="folder to keep a copy of the built wheel in")
    options = parser.parse_args(argv)
    options.archs = [a for a in options.archs.split(",") if a]
    options.cxx_std = options.cxx_std or None

    if options.wheel:
        written = install_wheel(options.wheel, options.prefix)
        print(f"[resolver] unpacked prebuilt {os.path.basename(options.wheel)}: {len(written)} files", flush=True)
        return 0

    os.environ["MAX_JOBS"] = str(options.jobs)
    if options.toolkit_home:  # before torch is imported: cpp_extension reads it at import time
        home_var = "ROCM_PATH" if options.backend == "rocm" else "CUDA_HOME"
        os.environ[home_var] = options.toolkit_home
        os.environ["PATH"] = os.path.join(options.toolkit_home, "bin") + os.pathsep + os.environ.get("PATH", "")
        if options.backend == "cuda":
            conda_toolkit_environment(options.toolkit_home, os.environ)
    if options.env_prefix:
        os.environ[f"{options.env_prefix}_FORCE_BUILD"] = "TRUE"  # never guess a wheel URL (hangs offline)
        os.environ[f"{options.env_prefix}_SKIP_CUDA_BUILD"] = "FALSE"
    if options.backend == "rocm" and options.archs:
        os.environ["HIP_ARCHITECTURES"] = ";".join(options.archs)

    module_name, attribute = options.factory.split(":")
    sys.path.insert(0, os.path.abspath(options.src))
    module = importlib.import_module(module_name)
    setattr(module, attribute, wrap_factory(getattr(module, attribute), options))

    dist = os.path.join(os.path.abspath(options.src), "resolver-dist")
    os.chdir(options.src)
    sys.argv = ["setup.py", "bdist_wheel", "--dist-dir", dist]
    runpy.run_path("setup.py", run_name="__main__")
    wheels = glob.glob(os.path.join(dist, "*.whl"))
    if len(wheels) != 1:
        print(f"[resolver] expected one wheel in {dist}, found {wheels}", file=sys.stderr)
        return 1
    written = install_wheel(wheels[0], options.prefix)
    if options.wheel_out:
        os.makedirs(options.wheel_out, exist_ok=True)
        shutil.copy2(wheels[0], options.wheel_out)
    print(f"[resolver] installed {os.path.basename(wheels[0])}: {len(written)} files", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
