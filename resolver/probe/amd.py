"""AMD detection: the ROCm install (``.info/version``), rocminfo / amd-smi, and the kernel's KFD topology.

The tools need a working ROCm user space and permission on /dev/kfd; the KFD topology under
/sys needs only the amdgpu driver, so it answers in containers and on machines without ROCm.

>>> from resolver.probe.system import LiveSystem
>>> rocm_roots(LiveSystem(environ={"ROCM_PATH": "/opt/rocm-6.0.2"}))[0]
'/opt/rocm-6.0.2'
"""

from __future__ import annotations

import re

from resolver.probe import amd_parse as parse
from resolver.probe.findings import Findings
from resolver.probe.system import System
from resolver.probe.toolkits import ROCM_HOME_VARS
from resolver.probe.profile import AmdGpu, AmdInfo
from resolver.versions import DottedVersion, GfxArch

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"


def rocm_roots(system: System) -> list[str]:
    """Candidate ROCm install folders, most specific first: ROCM_HOME, ROCM_PATH (torch's order), /opt/rocm, then
    /opt/rocm-X.Y.Z (newest first)."""
    roots = [system.environ[k].rstrip("/") for k in ROCM_HOME_VARS if system.environ.get(k)]
    roots.append("/opt/rocm")
    versioned = [p for p in system.glob("/opt/rocm-*") if re.fullmatch(r"/opt/rocm-\d+(\.\d+)*", p)]
    versioned.sort(key=lambda p: DottedVersion.parse(p.rsplit("-", 1)[1]), reverse=True)
    return list(dict.fromkeys(roots + versioned))


def _rocm_version(system: System, findings: Findings) -> tuple[str | None, str | None, str | None]:
    """``(version, root, source)`` of the ROCm install, or Nones."""
    for root in rocm_roots(system):
        for rel, parser in ((".info/version", parse.parse_rocm_version_file),
                            ("include/rocm-core/rocm_version.h", parse.parse_rocm_version_header),
                            ("include/rocm_version.h", parse.parse_rocm_version_header)):
            text = system.read(f"{root}/{rel}")
            if text is None:
                continue
            version = parser(text)
            if version:
                return version, root, f"{root}/{rel}"
            findings.note(f"{root}/{rel}: no version in it")
        from_environment = any(system.environ.get(k, "").rstrip("/") == root for k in ROCM_HOME_VARS)
        if from_environment and root != "/opt/rocm":
            findings.note(f"ROCm root {root} (from the environment) has no .info/version")
    return None, None, None


def _tool(system: System, name: str, root: str | None, args: list[str]):
    """Run a ROCm tool from PATH, else from the ROCm root's bin/; returns (result, label) or (None, None)."""
    candidates = [name] + ([f"{root}/bin/{name}"] if root else [])
    for tool in candidates:
        result = system.run([tool, *args])
        if result is not None:
            return result, " ".join([tool, *args])
    return None, None


def _agents_from_tools(system: System, root: str | None, findings: Findings) -> tuple[list[parse.AmdAgent], str | None]:
    result, label = _tool(system, "rocminfo", root, [])
    if result is not None:
        agents = parse.parse_rocminfo(result.stdout) if result.ok else []
        if agents:
            return agents, label
        findings.note(f"rocminfo: {result.describe() if not result.ok else 'no GPU agent in its output'}")
    result, label = _tool(system, "amd-smi", root, ["static", "--asic"])
    if result is not None:
        agents = parse.parse_amd_smi_static(result.stdout) if result.ok else []
        if agents:
            return agents, label
        findings.note(f"amd-smi: {result.describe() if not result.ok else 'no GPU in its output'}")
    return [], None


def _node_name(system: System, props: dict[str, int], gfx: GfxArch) -> str:
    """A label for a KFD node: the DRM device's product_name when the kernel exposes it."""
    minor = props.get("drm_render_minor")
    if minor is not None and minor >= 0:
        product = (system.read(f"/sys/class/drm/renderD{minor}/device/product_name") or "").strip()
        if product:
            return product
    return f"AMD GPU ({gfx})"


def _agents_from_kfd(system: System, findings: Findings) -> list[AmdGpu]:
    gpus = []
    for path in system.glob(f"{KFD_NODES}/*/properties"):
        props = parse.parse_kfd_properties(system.read(path) or "")
        target = props.get("gfx_target_version", 0)
        if target <= 0:  # CPU nodes report 0
            continue
        try:
            gfx = GfxArch.from_target_version(target)
        except ValueError:
            findings.note(f"{path}: gfx_target_version {target} is not readable")
            continue
        gpus.append(AmdGpu(_node_name(system, props, gfx), gfx))
    return gpus


def detect_amd(system: System, findings: Findings) -> AmdInfo | None:
    """The ROCm version and AMD GPUs, or None when there is neither."""
    sources: list[str] = []
    version, root, version_source = _rocm_version(system, findings)
    if version_source:
        sources.append(version_source)
    agents, label = _agents_from_tools(system, root, findings)
    gpus: list[AmdGpu] = []
    for agent in agents:
        if not agent.gfx:
            continue
        try:
            gfx = GfxArch.parse(agent.gfx)
        except ValueError:
            findings.note(f"{label}: {agent.gfx!r} is not a gfx architecture")
            continue
        gpus.append(AmdGpu(agent.name or f"AMD GPU ({gfx})", gfx))
    if gpus:
        sources.append(label)
    elif agents:
        findings.note(f"{label}: names GPUs but not their gfx architecture")
    if not gpus:
        gpus = _agents_from_kfd(system, findings)
        if gpus:
            sources.append(f"{KFD_NODES}/*/properties")
    if version is None:
        result, smi_label = _tool(system, "amd-smi", root, ["version"])
        if result is not None and result.ok and parse.parse_amd_smi_rocm_version(result.stdout):
            version = parse.parse_amd_smi_rocm_version(result.stdout)
            sources.append(smi_label)
    if version is None and not gpus:
        return None
    if version is None:
        findings.note("AMD GPU found but no ROCm install: no .info/version under ROCM_HOME, ROCM_PATH or /opt/rocm*")
    return AmdInfo(rocm_version=DottedVersion.parse(version) if version else None, gpus=tuple(gpus),
                   rocm_root=root, sources=tuple(sources))
