"""AMD detection: the ROCm install (``.info/version``), rocminfo / amd-smi / rocm-smi, and the kernel's KFD topology.

The tools need a working ROCm user space and permission on /dev/kfd; the KFD topology under
/sys needs only the amdgpu driver, so it answers in containers and on machines without ROCm.

>>> from resolver.plan.probe.system import LiveSystem
>>> rocm_roots(LiveSystem(environ={"ROCM_PATH": "/opt/rocm-6.0.2"}))[0]
'/opt/rocm-6.0.2'
"""

from __future__ import annotations

import re

from resolver.core.versions import DottedVersion, GfxArch
from resolver.plan.probe import amd_parse as parse
from resolver.plan.probe.collect_env import captured_collect_env
from resolver.plan.probe.findings import Findings
from resolver.plan.probe.name_table import NameTable
from resolver.plan.probe.pci import identify as pci_identify
from resolver.plan.probe.profile import AmdGpu, AmdInfo
from resolver.plan.probe.system import CommandResult, System
from resolver.plan.probe.toolkits import ROCM_HOME_VARS

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


class _Tools:
    """ROCm tools from PATH, else from the ROCm root's bin/; each argv is run at most once."""

    def __init__(self, system: System, root: str | None) -> None:
        self.system, self.root = system, root
        self._answers: dict[tuple[str, ...], tuple[CommandResult | None, str | None]] = {}

    def run(self, name: str, args: list[str]) -> tuple[CommandResult | None, str | None]:
        """``(result, label)``, or ``(None, None)`` when the tool is not installed."""
        key = (name, *args)
        if key not in self._answers:
            self._answers[key] = (None, None)
            for tool in [name] + ([f"{self.root}/bin/{name}"] if self.root else []):
                result = self.system.run([tool, *args])
                if result is not None:
                    self._answers[key] = (result, " ".join([tool, *args]))
                    break
        return self._answers[key]


# The tools that name AMD GPUs, most informative first: (tool, args, parser, what "nothing" means).
_AGENT_SOURCES = (
    ("rocminfo", [], parse.parse_rocminfo, "no GPU agent in its output"),
    ("amd-smi", ["static", "--asic"], parse.parse_amd_smi_static, "no GPU in its output"),
    ("amd-smi", [], parse.parse_amd_smi_table, "no GPU table in its output"),
    ("rocm-smi", ["--showproductname"], parse.parse_rocm_smi_products, "no GPU in its output"),
    ("rocm-smi", ["--showproductname", "--json"], parse.parse_rocm_smi_json, "no GPU in its output"),
)


def _agents_from_tools(tools: _Tools, findings: Findings) -> tuple[list[parse.AmdAgent], str | None]:
    for name, args, parser, nothing in _AGENT_SOURCES:
        result, label = tools.run(name, args)
        if result is None:
            continue
        agents = parser(result.stdout) if result.ok else []
        if agents:
            return agents, label
        findings.note(f"{name}: {result.describe() if not result.ok else nothing}")
    return [], None


def _version_from_tools(tools: _Tools) -> tuple[str | None, str | None]:
    """``amd-smi version``, else plain ``amd-smi``'s header: both print ``ROCm version: X.Y.Z``."""
    for args in (["version"], []):
        result, label = tools.run("amd-smi", args)
        version = parse.parse_amd_smi_rocm_version(result.stdout) if result is not None and result.ok else None
        if version:
            return version, label if args else f"{label} (header)"
    return None, None


class AmdFacts:
    """What the AMD sources said: the ROCm version and root, and the GPUs of the first source that
    named any. A GPU named without its gfx architecture takes it from the GPU name table, or is
    left out with a note."""

    def __init__(self) -> None:
        self.version: str | None = None
        self.root: str | None = None
        self.agents: list[parse.AmdAgent] = []
        self.agents_source: str | None = None
        self.sources: list[str] = []
        self.unidentified: list[str] = []  # GPUs named (or seen by PCI id) whose gfx nothing could tell

    def take_version(self, version: str | None, source: str | None) -> None:
        if version and self.version is None and source:
            self.version = version
            self.sources.append(source)

    def take_agents(self, agents: list[parse.AmdAgent], source: str | None) -> None:
        if agents and not self.agents and source:
            self.agents, self.agents_source = list(agents), source

    def gpus(self, findings: Findings, table: NameTable | None = None) -> list[AmdGpu]:
        table = table or NameTable()
        label = self.agents_source
        gpus: list[AmdGpu] = []
        table_sources: list[str] = []
        self.unidentified = []
        for agent in self.agents:
            gfx_text, name = agent.gfx, agent.name
            pci = pci_identify("1002", agent.pci_device) if agent.pci_device and (not gfx_text or not name) else None
            if pci is not None:
                name = name or f"AMD {pci.name}"
            if not gfx_text:
                why = "it prints no name"
                if name:
                    gfx_text, why = table.gfx(name)
                if gfx_text is None and pci is not None and pci.arch:
                    gfx_text, why = pci.arch, pci.source
                if gfx_text is None:
                    seen = name or (f"AMD GPU 1002:{agent.pci_device}" if agent.pci_device else "AMD GPU")
                    findings.note(f"AMD GPU {seen!r}: {label} gives no gfx architecture and {why}")
                    self.unidentified.append(seen)
                    continue
                table_sources.append(f"gfx of {name or agent.pci_device!r}: {why}")
            try:
                gfx = GfxArch.parse(gfx_text)
            except ValueError:
                findings.note(f"{label}: {gfx_text!r} is not a gfx architecture")
                continue
            gpus.append(AmdGpu(name or f"AMD GPU ({gfx})", gfx))
        if gpus:
            self.sources += [s for s in dict.fromkeys([label, *table_sources]) if s and s not in self.sources]
        return gpus


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
    facts = AmdFacts()
    version, facts.root, version_source = _rocm_version(system, findings)
    facts.take_version(version, version_source)
    tools = _Tools(system, facts.root)
    facts.take_agents(*_agents_from_tools(tools, findings))
    if not facts.agents:
        env, label = captured_collect_env(system)
        facts.take_agents([parse.AmdAgent(name, gfx) for name, gfx in env.amd_gpus] if env else [], label)
    gpus: list[AmdGpu] = []
    if facts.agents and all(agent.gfx for agent in facts.agents):
        gpus = facts.gpus(findings)
    if not gpus:  # the kernel's KFD topology knows the gfx target; the name table only guesses it
        gpus = _agents_from_kfd(system, findings)
        if gpus:
            facts.sources.append(f"{KFD_NODES}/*/properties")
            if facts.agents:
                findings.note(f"{facts.agents_source}: names GPUs but not their gfx architecture")
        else:
            gpus = facts.gpus(findings)
    if facts.version is None:
        facts.take_version(*_version_from_tools(tools))
    unidentified = tuple(facts.unidentified) if not gpus else ()
    if not gpus and not unidentified:  # no tool answered: the PCI bus still shows the GPUs
        gpus, unidentified = _agents_from_bus(system, facts, findings)
    if facts.version is None and not gpus and not unidentified:
        return None
    if facts.version is None:
        findings.note("AMD GPU found but no ROCm install: no .info/version under ROCM_HOME, ROCM_PATH or /opt/rocm*")
    return AmdInfo(rocm_version=DottedVersion.parse(facts.version) if facts.version else None, gpus=tuple(gpus),
                   rocm_root=facts.root, sources=tuple(facts.sources), unidentified_gpus=unidentified)


def _agents_from_bus(system: System, facts: AmdFacts, findings: Findings) -> tuple[list[AmdGpu], tuple[str, ...]]:
    """AMD display devices on the PCI bus (sysfs), placed by their device id."""
    from resolver.plan.probe.pci import SYSFS_DEVICES, gpus_on_bus

    devices = [d for d in gpus_on_bus(system) if d.gpu_vendor == "amd"]
    if not devices:
        return [], ()
    facts.take_agents([parse.AmdAgent(None, None, d.device) for d in devices], f"{SYSFS_DEVICES}/*/device")
    return facts.gpus(findings), tuple(facts.unidentified)
