"""Environment checks: each one compares two facts and, when they disagree, names the fix.

The facts come from the environment's own Python (``python -m resolver.verify.inenv.facts``: torch, its
CUDA/HIP, arch list, the GPUs it sees, the kernel extensions loading), from the probe (the driver,
the GPUs, ROCm) and from the project (pixi.lock, the ready marker install wrote). Nothing here
imports torch.

>>> cuda_vs_driver("13.0", "12.8").status
'fail'
>>> cuda_vs_driver("12.8", "12.2").status
'warn'
>>> cuda_vs_driver("12.6", "13.0").status
'ok'
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from resolver.doctor.context import FixContext
from resolver.install.environment import READY_MARKER, Environment, ready_record
from resolver.project.paths import ProjectPaths
from resolver.verify.inenv.answers import EnvironmentFacts, ExtensionState, TorchBuild


@dataclass(frozen=True)
class Finding:
    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str | None = None

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def _mm(version: str | None) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", str(version or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def cuda_vs_driver(torch_cuda: str | None, driver_cuda: str | None, ctx: FixContext | None = None) -> Finding:
    """torch's CUDA runtime against the newest CUDA the driver supports (nvidia-smi's "CUDA Version")."""
    ctx = ctx or FixContext()
    t, d = _mm(torch_cuda), _mm(driver_cuda)
    if t is None:
        return Finding("cuda-vs-driver", "skip", "torch is not a CUDA build")
    if d is None:
        return Finding("cuda-vs-driver", "skip", f"torch uses CUDA {torch_cuda}; no NVIDIA driver was found, so it runs on CPU only")
    if t[0] > d[0]:
        return Finding("cuda-vs-driver", "fail", f"torch uses CUDA {torch_cuda} but the driver supports CUDA {driver_cuda} at most: "
                       "CUDA will not initialise", fix=f"python -m resolver lock --target auto && python -m resolver install --env {ctx.env}")
    if t > d:
        return Finding("cuda-vs-driver", "warn", f"torch uses CUDA {torch_cuda}, the driver supports {driver_cuda}: runs through CUDA "
                       "minor-version compatibility, but kernels built with a newer nvcc may need a newer driver (PTX JIT)",
                       fix="upgrade the NVIDIA driver, or `python -m resolver lock --target auto`")
    return Finding("cuda-vs-driver", "ok", f"torch's CUDA {torch_cuda} <= the driver's CUDA {driver_cuda}")


def driver_cuda_from_floors(driver) -> str | None:
    """The newest CUDA a driver version runs, from the knowledge tables' driver floors (lazy import)."""
    try:
        from resolver.plan.knowledge import Knowledge

        found = Knowledge.load().newest_cuda_for_driver(driver)
    except Exception:  # noqa: BLE001 - the knowledge stage is optional here
        return None
    return str(found) if found else None


def hip_vs_rocm(torch_hip: str | None, rocm: str | None) -> Finding:
    t, r = _mm(torch_hip), _mm(rocm)
    if t is None:
        return Finding("hip-vs-rocm", "skip", "torch is not a ROCm build")
    if r is None:
        return Finding("hip-vs-rocm", "warn", f"torch uses HIP {torch_hip} but no ROCm installation was found")
    if t != r:
        return Finding("hip-vs-rocm", "warn", f"torch was built for ROCm {t[0]}.{t[1]}, the machine has ROCm {rocm}; "
                       "kernels must be compiled with the ROCm torch was built for",
                       fix=f"python -m resolver lock --target rocm{r[0]}.{r[1]}")
    return Finding("hip-vs-rocm", "ok", f"torch's HIP {torch_hip} matches ROCm {rocm}")


def _arch_name(arch: str) -> str:
    return arch if arch.startswith(("sm_", "gfx")) else "sm_" + arch.replace(".", "")


def arch_findings(facts: EnvironmentFacts | dict, profile, ctx: FixContext) -> list[Finding]:
    """Each GPU against torch's compiled architectures and the kernels' ones."""
    from resolver.verify.inenv.facts import arch_supported  # plain functions; no torch import

    facts = EnvironmentFacts.of(facts)
    devices = [(d.name, d.arch) for d in facts.devices]
    if not devices and profile is not None:
        if profile.nvidia:
            devices = [(g.name, _arch_name(str(g.compute_capability))) for g in profile.nvidia.gpus]
        if profile.amd:
            devices += [(g.name, str(g.gfx_arch)) for g in profile.amd.gpus]
    if not devices:
        return [Finding("gpu-arch", "skip", "no GPU here: nothing to compare architectures against")]
    counts: dict = {}
    for dev in devices:
        counts[dev] = counts.get(dev, 0) + 1
    devices = [(f"{count} x {name}" if count > 1 else name, arch) for (name, arch), count in counts.items()]
    out = []
    arch_list = list(facts.torch.arch_list) if facts.torch is not None else []
    for name, arch in devices:
        ok = arch_supported(arch, arch_list)
        if ok is None:
            out.append(Finding(f"gpu-arch:torch:{arch}", "warn", f"{name} ({arch}): torch reports no architecture list"))
        else:
            out.append(Finding(f"gpu-arch:torch:{arch}", "ok" if ok else "fail",
                               f"{name} is {arch}; torch {ctx.torch} was compiled for {' '.join(arch_list)}",
                               None if ok else "python -m resolver plan && python -m resolver lock --target auto"))
        for ext_name, ext in facts.extensions.items():
            built = list(ext.built_for_archs)
            if not ext.installed or not built:
                continue
            ok = arch_supported(arch, built)
            out.append(Finding(f"gpu-arch:{ext_name}:{arch}", "ok" if ok else "fail",
                               f"{ext_name} was built for {' '.join(built)}; {name} is {arch}",
                               None if ok else f"python -m resolver build --env {ctx.env} --arch {ctx.arch}"))
    return out


def extension_findings(facts: EnvironmentFacts | dict, ctx: FixContext) -> list[Finding]:
    from resolver.doctor.signatures import load_signatures, match_log

    facts = EnvironmentFacts.of(facts)
    out = []
    torch_version = facts.torch.version if facts.torch is not None else None
    for name, ext in facts.extensions.items():
        if not ext.installed:
            out.append(Finding(f"extension:{name}", "skip", f"{name} is not installed"))
            continue
        if ext.loaded:
            out.append(Finding(f"extension:{name}", "ok", f"{name} loads with torch {torch_version}"))
            continue
        if ext.abi is not None and not ext.abi.empty:
            abi = ext.abi
            expected = ext.built_for_torch
            symbol = abi.demangled or abi.undefined_symbol
            detail = (f"ABI mismatch: {name} ({ext.file}) needs `{symbol}`, which torch {torch_version} does not "
                      f"export; it was built for {'torch ' + expected if expected else 'another torch'}")
            out.append(Finding(f"extension:{name}", "fail", detail, _rebuild_fix(name, ext, ctx, facts)))
            continue
        matches = match_log(ext.error or "", load_signatures())
        fix = ctx.render(matches[0].signature.fix, matches[0].groups) if matches else f"python -m resolver build --env {ctx.env}"
        out.append(Finding(f"extension:{name}", "fail", f"{name} does not load: {ext.error}", fix))
    return out


def bytecode_finding(env: Environment, facts: EnvironmentFacts | dict) -> Finding:
    b = EnvironmentFacts.of(facts).bytecode
    b = b if b is not None and not b.empty else None
    if b is None or b.torch_cached:
        return Finding("bytecode", "ok" if b else "skip", "torch's bytecode is cached" if b else "not reported")
    if b.dont_write_bytecode or not b.writable:
        why = "PYTHONDONTWRITEBYTECODE is set" if b.dont_write_bytecode else "site-packages is read-only"
        return Finding("bytecode", "warn", f"no cached bytecode for torch and {why}: every start compiles torch and "
                       "transformers again (measured here: 11.8 s instead of 4.5 s to import both)",
                       f"{env.python} -m compileall -q -j 0 {b.site_packages}")
    return Finding("bytecode", "ok", "bytecode is written on first import")


def _rebuild_fix(name: str, ext: ExtensionState, ctx: FixContext, facts: EnvironmentFacts) -> str:
    """Our kernels are rebuilt by the build stage; any other extension by its own package, without isolation."""
    if any(name in modules for modules in facts.kernels.values()):
        return f"python -m resolver build --env {ctx.env} --no-prebuilt"
    dist = (ext.owner.name if ext.owner is not None else None) or name
    # no pip here: the environment is what pixi.lock says; a package outside the lock is rebuilt where it came from
    return (f"{dist} is not one of the kernels this project builds: rebuild it against torch {ctx.torch} in the "
            f"project it comes from, or remove it: python -m resolver install --env {ctx.env} --force "
            "(restores exactly what pixi.lock holds)")


def tool_findings(env: Environment, facts: EnvironmentFacts | dict) -> list[Finding]:
    """Build tools: only needed to compile kernels, so a missing one is a warning."""
    torch_facts = EnvironmentFacts.of(facts).torch or TorchBuild()
    wanted = ["ninja"] + (["nvcc"] if torch_facts.cuda else []) + (["hipcc"] if torch_facts.hip else [])
    out = []
    for tool in wanted:
        found = (env.bin_dir / tool) if (env.bin_dir / tool).exists() else shutil.which(tool)
        if found:
            out.append(Finding(f"tool:{tool}", "ok", f"{tool}: {found}"))
            continue
        fix = {"ninja": "install ninja on this machine (apt install ninja-build, dnf install ninja-build or conda install "
                        "ninja; without it torch builds extensions one file at a time); the environment stays as locked",
               "nvcc": f"install the CUDA toolkit {torch_facts.cuda} and export CUDA_HOME (needed only to build kernels)",
               "hipcc": "install the ROCm HIP SDK and export ROCM_PATH (needed only to build kernels)"}[tool]
        out.append(Finding(f"tool:{tool}", "warn", f"{tool} is not on PATH or in the environment", fix))
    return out


def rocm_header_finding(project: ProjectPaths, profile) -> Finding:
    """ROCm 6.0's amd_hip_bf16.h needs the fix before kernels can link; asks the patch stage (lazily)."""
    rocm = str(profile.amd.rocm_version) if profile is not None and profile.amd and profile.amd.rocm_version else None
    if not rocm:
        return Finding("rocm-header", "skip", "no ROCm installation")
    if not rocm.startswith("6.0"):
        return Finding("rocm-header", "ok", f"ROCm {rocm} does not need the 6.0 bf16 header fix")
    try:
        from resolver.patch.engine import PatchRequest, run_patches

        root = Path(profile.amd.rocm_root) if profile.amd.rocm_root else None
        report = run_patches(project, PatchRequest(rocm_root=root, check=True))
    except Exception as exc:  # noqa: BLE001 - the patch stage may be absent or fail; say so, do not crash
        return Finding("rocm-header", "warn", f"ROCm {rocm} needs the bf16 header fix; the patch check could not run ({exc})",
                       "python -m resolver patch --check")
    status = report.status
    if status in ("applied", "already-applied", "not-needed"):
        return Finding("rocm-header", "ok", f"ROCm {rocm}: amd_hip_bf16.h fix is in place ({status})")
    return Finding("rocm-header", "fail", f"ROCm {rocm}: amd_hip_bf16.h lacks the fix ({status}); kernel builds fail to link "
                   "with 'multiple definition of __float22bfloat162_rn'", "python -m resolver patch")


def _torch_in_marker(marker: dict) -> str | None:
    for item in marker.get("pypi", []):
        if item.lower().startswith("torch=="):
            return item.split("==", 1)[1]
    for item in marker.get("conda", []):
        m = re.match(r"pytorch-(\d[^-]*)-", item)
        if m:
            return m.group(1)
    return None


def torch_as_installed(recorded: str, importable: str, local_tag: str | None) -> bool:
    """Whether the torch that imports (its ``__version__``) is the one install put there (``recorded``, the locked
    wheel's version). PyPI publishes torch without a local version tag, yet the wheel reports one: its build
    (``2.14.1`` reports ``2.14.1+cu130``). A tag is the same torch when it is the one the index torch was locked
    from gives its builds (``local_tag``); any other version or tag was put there by something else.

    >>> torch_as_installed("2.14.1", "2.14.1+cu130", "cu130"), torch_as_installed("2.13.0+cpu", "2.13.0+cpu", None)
    (True, True)
    >>> torch_as_installed("2.14.1", "2.14.1+cu126", "cu130"), torch_as_installed("2.14.1", "2.14.0+cu130", "cu130")
    (False, False)
    >>> torch_as_installed("2.13.0+cpu", "2.13.0+cu130", "cpu"), torch_as_installed("2.14.1", "2.14.1+cu130", None)
    (False, False)
    """
    if recorded == importable:
        return True
    public, _, tag = recorded.partition("+")
    now_public, _, now_tag = importable.partition("+")
    return public == now_public and not tag and bool(now_tag) and now_tag == local_tag


def _locked_torch_tag(project: ProjectPaths, name: str, recorded: str) -> str | None:
    """The local version tag the index torch was locked from gives its builds: a PyTorch index's own folder
    (``/whl/cu130/``), or for PyPI the build PyPI publishes for that release (torch.toml's ``pypi_default``);
    None when the lock or the tables do not say."""
    from urllib.parse import urlsplit

    try:
        from resolver.install import locked_environment

        locked = locked_environment(project, name)
    except Exception:  # noqa: BLE001 - no lock to read: no tag is known to be install's
        return None
    artifact = next((a for a in locked.pypi if a.name.lower() == "torch"), None)
    if artifact is None:
        return None
    parts = urlsplit(artifact.index or artifact.location).path.strip("/").split("/")
    if "whl" in parts[:-1] and parts.index("whl") + 1 < len(parts):
        candidate = parts[parts.index("whl") + 1]
        if re.fullmatch(r"(cpu|cu\d+|rocm[\d.]+|xpu)", candidate):
            return candidate
    host = urlsplit(artifact.location).hostname or ""
    if host in ("files.pythonhosted.org", "pypi.org") or (artifact.index or "").rstrip("/") == "https://pypi.org/simple":
        from resolver.plan.knowledge import Knowledge

        release = Knowledge.load().release(recorded.partition("+")[0])
        return release.pypi_default if release is not None and locked.platform.subdir == "linux-64" else None
    return None


def lock_findings(project: ProjectPaths, env: Environment, facts: EnvironmentFacts | dict) -> list[Finding]:
    """pixi.lock, the ready marker and the torch actually importable must tell the same story."""
    marker_path = env.path / READY_MARKER
    if not marker_path.is_file():
        return [Finding("ready-marker", "warn", f"{marker_path} is missing: this environment was not made by "
                        "`resolver install` or its install did not finish", f"python -m resolver install --env {env.name}")]
    marker = ready_record(env.path)
    if marker is None:
        return [Finding("ready-marker", "fail", f"{marker_path} is not a marker install wrote (unreadable, malformed, "
                        "a link, or another user's)", f"python -m resolver install --env {env.name} --force")]
    out = []
    torch_facts = EnvironmentFacts.of(facts).torch
    installed = torch_facts.version if torch_facts is not None else None
    recorded = _torch_in_marker(marker)
    if recorded and installed and not torch_as_installed(recorded, installed, _locked_torch_tag(project, env.name,
                                                                                                 recorded)):
        out.append(Finding("torch-vs-install", "fail", f"install put torch {recorded} here but torch {installed} is importable: "
                           "something installed another torch on top (pip install, a build with isolation off?)",
                           f"python -m resolver install --env {env.name} --force"))
    elif recorded:
        out.append(Finding("torch-vs-install", "ok", f"torch {installed} is the one install put here"))
    if not project.lockfile.is_file():
        out.append(Finding("lock", "skip", f"no {project.lockfile.name} in {project.root}"))
        return out
    try:
        from resolver.install import locked_environment_digest

        locked = locked_environment_digest(project, env.name)
    except Exception as exc:  # noqa: BLE001 - the lock reader may be unavailable; degrade
        out.append(Finding("lock", "warn", f"could not read {project.lockfile.name} ({exc})"))
        return out
    if not locked:
        out.append(Finding("lock", "warn", f"environment '{env.name}' is not in {project.lockfile.name} for this platform",
                           "python -m resolver lock"))
    elif locked != marker.get("lock_digest"):
        out.append(Finding("lock", "fail", f"{project.lockfile.name} changed since '{env.name}' was installed: the environment "
                           "does not match the lock", f"python -m resolver install --env {env.name}"))
    else:
        out.append(Finding("lock", "ok", f"'{env.name}' matches {project.lockfile.name}"))
    out.append(drift_finding(env, marker))
    return out


def drift_finding(env: Environment, marker: dict) -> Finding:
    """Packages pip-installed, changed or removed by hand since install made the environment from the lock."""
    from resolver.install.drift import drift_of

    drift = drift_of(env.path, marker)
    if not drift:
        return Finding("drift", "ok", f"the packages in '{env.name}' are the ones pixi.lock lists")
    names = " ".join(name for name, _ in drift.added) or "NAME"
    return Finding("drift", "warn", f"{drift.sentence()}: a teammate's '{env.name}' made from pixi.lock differs",
                   f"to keep them for everyone, `python -m resolver add -e {env.name} --pypi {names}` (pixi.toml and "
                   f"pixi.lock follow); to undo them, `python -m resolver install --env {env.name} --exact`")


def env_facts(env: Environment, extra_extensions: list[str] = (), timeout: float = 300) -> EnvironmentFacts:
    """Run ``resolver.verify.inenv.facts`` in the environment; a failure to start is itself a fact."""
    from resolver.kernels.packages import kernel_module_args

    answer = env.call("resolver.verify.inenv.facts", [*kernel_module_args(),
                                               *[a for name in extra_extensions for a in ("--extension", name)]],
                      timeout=timeout)
    return EnvironmentFacts.from_json(answer.document if answer.document is not None else {"run_error": answer.failure})


def environment_findings(project: ProjectPaths, env: Environment, facts: EnvironmentFacts | dict, profile,
                         ctx: FixContext) -> list[Finding]:
    facts = EnvironmentFacts.of(facts)
    if facts.run_error:
        return [Finding("python", "fail", f"the environment's Python does not run: {facts.run_error}",
                        f"python -m resolver install --env {env.name} --force")]
    if facts.torch_import_error:
        return [Finding("torch", "fail", f"torch does not import: {facts.torch_import_error}",
                        f"python -m resolver install --env {env.name} --force")] + lock_findings(project, env, facts)
    t = facts.torch or TorchBuild()
    out = [Finding("torch", "ok", f"torch {t.version} (CUDA {t.cuda or '-'}, HIP {t.hip or '-'}, "
                   f"CXX11 ABI {t.cxx11_abi}) imports")]
    if profile is not None and profile.has_gpu and not (t.cuda or t.hip):
        out.append(Finding("torch-backend", "warn", "torch is a CPU build but this machine has a GPU: nothing will run on it",
                           "python -m resolver lock --target auto && python -m resolver install"))
    driver_cuda = str(profile.nvidia.cuda_driver_version) if profile is not None and profile.nvidia and profile.nvidia.cuda_driver_version else None
    driver_cuda = driver_cuda or (facts.device.driver_cuda if facts.device else None)  # torch's own view, when the probe has none
    if not driver_cuda and profile is not None and profile.nvidia and profile.nvidia.driver_version:
        driver_cuda = driver_cuda_from_floors(profile.nvidia.driver_version)
    out.append(cuda_vs_driver(t.cuda, driver_cuda, ctx))
    if t.hip:
        rocm = str(profile.amd.rocm_version) if profile is not None and profile.amd and profile.amd.rocm_version else None
        out.append(hip_vs_rocm(t.hip, rocm))
    out += arch_findings(facts, profile, ctx)
    out += extension_findings(facts, ctx)
    out.append(rocm_header_finding(project, profile))
    out.append(bytecode_finding(env, facts))
    out += tool_findings(env, facts)
    out += lock_findings(project, env, facts)
    return out


def probe_profile(sysroot: str | None = None):
    """The probe's HardwareProfile (of this machine, or of a captured --sysroot), or None when the probe
    stage is unavailable."""
    try:
        from resolver.plan.probe import probe_machine

        return probe_machine(sysroot)
    except Exception:  # noqa: BLE001
        if sysroot:
            raise
        return None


LOG_LIMIT = 64 << 20  # a build log of a whole kernel compile is a few MiB


def read_log(source: str) -> tuple[str, str]:
    """(name, text) of --log FILE or '-' (stdin), decoded without ever failing on bad bytes."""
    import sys

    from resolver.core.errors import BadInput
    from resolver.core.fs import read_bytes_bounded, read_stream_bounded
    from resolver.doctor.signatures import decode_log

    fix = f"pass the last part of the log (at most {LOG_LIMIT >> 20} MiB): the error is near its end"
    if source == "-":
        return "<stdin>", decode_log(read_stream_bounded(sys.stdin.buffer, limit=LOG_LIMIT, what="the log on stdin",
                                                       fix=fix))
    path = Path(source).expanduser()
    try:
        return str(path), decode_log(read_bytes_bounded(path, limit=LOG_LIMIT, what="--log"))
    except BadInput as exc:
        if "does not exist" in exc.message:
            raise BadInput(f"--log {source}: no such file", fix="pass the path of a saved log, or - to read stdin") \
                from None
        if "larger than" in exc.message:
            raise BadInput(exc.message, fix=fix) from None
        raise
