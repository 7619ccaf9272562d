"""NVIDIA detection: NVML, nvidia-smi in each of its forms (also WSL's), /proc/driver/nvidia, /sys/module/nvidia.

Sources are asked from richest to poorest and each answers only what is still unknown, so a
container with only /proc/driver/nvidia still reports its driver and GPU names, and a capture that
holds only plain ``nvidia-smi`` (or ``-q``, or ``-L``) still shows its GPUs.

>>> import pathlib, tempfile
>>> from resolver.plan.probe.sysroot import SysrootSystem
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "_meta.toml").write_text('system = "Linux"\\nmachine = "x86_64"\\npython = "3.11"\\n')
>>> (root / "sys/module/nvidia").mkdir(parents=True)
>>> _ = (root / "sys/module/nvidia/version").write_text("550.54.15\\n")
>>> info = detect_nvidia(SysrootSystem(root), Findings())
>>> str(info.driver_version), info.gpus, info.sources[0], str(info.cuda_driver_version), info.cuda_driver_version_derived
('550.54.15', (), '/sys/module/nvidia/version', '12.4', True)
"""

from __future__ import annotations

import re

from resolver.core.versions import ComputeCapability, DottedVersion
from resolver.plan.probe import nvidia_parse as parse
from resolver.plan.probe.collect_env import captured_collect_env
from resolver.plan.probe.findings import Findings
from resolver.plan.probe.name_table import NameTable, is_truncated
from resolver.plan.probe.nvidia_parse import GpuSeen, NvidiaReading
from resolver.plan.probe.pci import SYSFS_DEVICES, PciDevice, gpus_on_bus
from resolver.plan.probe.pci import identify as pci_identify
from resolver.plan.probe.profile import NvidiaGpu, NvidiaInfo
from resolver.plan.probe.system import CommandResult, System

PROC_VERSION = "/proc/driver/nvidia/version"
MODULE_VERSION = "/sys/module/nvidia/version"
PROC_GPUS = "/proc/driver/nvidia/gpus/*/information"
WSL_SMI = "/usr/lib/wsl/lib/nvidia-smi"
WSL_DXG = "/dev/dxg"
_TEGRA = re.compile(r"\b(?:nvgpu|Orin|Xavier|Jetson|Tegra|Thor)\b", re.IGNORECASE)


class NvidiaFacts:
    """What the sources said so far. Each source fills only what is still unknown, so the first
    (richest) source of each fact wins; every fact taken records its source."""

    def __init__(self) -> None:
        self.driver: str | None = None
        self.cuda: str | None = None
        self.gpus: tuple[GpuSeen, ...] = ()
        self.sources: list[str] = []

    def _source(self, text: str) -> None:
        if text not in self.sources:
            self.sources.append(text)

    def set_driver(self, value: str | None, source: str, findings: Findings) -> None:
        if not value:
            return
        if self.driver is None:
            self.driver = value
            self._source(source)
        elif DottedVersion.parse(value) != DottedVersion.parse(self.driver):
            findings.note(f"NVIDIA driver {value} from {source} differs from {self.driver} (kept the first; "
                          "a container's user-space tools may not match the host's kernel module)")

    def take(self, reading: NvidiaReading, source: str, findings: Findings) -> None:
        self.set_driver(reading.driver, source, findings)
        if reading.cuda and self.cuda is None:
            self.cuda = reading.cuda
            self._source(f"{source} (CUDA version)")
        if reading.gpus and not self.gpus:
            self.gpus = reading.gpus
            self._source(source)

    @property
    def known(self) -> bool:
        """Driver, CUDA version and GPUs are all known."""
        return self.driver is not None and self.cuda is not None and bool(self.gpus)

    def info(self, findings: Findings, table: NameTable | None = None) -> NvidiaInfo | None:
        """The merged answer, or None when no source named a driver or a GPU. A GPU no source gave
        a compute capability for takes it from the GPU name table, or is left out with a note."""
        if self.driver is None and not self.gpus:
            return None
        table = table or NameTable()
        derived = False
        tegra = [gpu.name for gpu in self.gpus if is_tegra(gpu.name)]
        if self.cuda is None and self.driver is not None and tegra:
            findings.note(f"NVIDIA: {tegra[0]!r} is a Jetson (Tegra) GPU: the desktop driver table does not say "
                          "which CUDA its driver runs, and nothing stated it")
        elif self.cuda is None and self.driver is not None:
            self.cuda, why = table.driver_cuda(self.driver)
            derived = self.cuda is not None
            if derived:
                self._source(f"CUDA version: derived from driver {self.driver} ({why})")
                findings.note(f"NVIDIA: no output gave the driver's CUDA version; driver {self.driver} supports CUDA "
                              f"{self.cuda} by {why}")
        if self.cuda is None:
            findings.note("NVIDIA: the driver's CUDA version is unknown (it comes from nvidia-smi or NVML)")
        gpus, unidentified = [], []
        for gpu in self.gpus:
            cc, source = gpu.compute_capability, None
            if cc is None:
                cc, why = table.compute_capability(gpu.name)
                if cc is None:
                    findings.note(f"NVIDIA GPU {gpu.name!r} left out: no output gave its compute capability and {why}")
                    unidentified.append(gpu.name)
                    continue
                source = f"compute capability of {gpu.name!r}: {why}"
            try:
                capability = ComputeCapability.parse(cc)
            except ValueError:
                findings.note(f"NVIDIA GPU {gpu.name!r} left out: compute capability {cc!r} is not readable")
                unidentified.append(gpu.name)
                continue
            if source:
                self._source(source)
            if is_truncated(gpu.name):
                findings.note(f"NVIDIA GPU {gpu.name!r}: nvidia-smi's table cut the name short")
            gpus.append(NvidiaGpu(gpu.name, capability, gpu.memory_mib, gpu.uuid))
        return NvidiaInfo(
            driver_version=DottedVersion.parse(self.driver) if self.driver else None,
            gpus=tuple(gpus),
            cuda_driver_version=DottedVersion.parse(self.cuda) if self.cuda else None,
            sources=tuple(self.sources),
            unidentified_gpus=tuple(unidentified),
            cuda_driver_version_derived=derived,
        )


def is_tegra(name: str) -> bool:
    """Whether a GPU name is a Jetson's integrated (Tegra) GPU, whose driver is not a desktop driver.

    >>> is_tegra("Orin (nvgpu)"), is_tegra("NVIDIA Jetson AGX Xavier"), is_tegra("NVIDIA GeForce RTX 4090")
    (True, True, False)
    """
    return bool(_TEGRA.search(name))


def gpus_from_ids(devices: list[PciDevice]) -> tuple[GpuSeen, ...]:
    """NVIDIA GPUs seen only by PCI id, named and placed by the PCI ID table (or left for the name table)."""
    seen = []
    for device in devices:
        gpu = pci_identify(device.vendor, device.device)
        name = f"NVIDIA {gpu.name}" if gpu is not None else f"NVIDIA GPU {device.vendor}:{device.device}"
        seen.append(GpuSeen(name, gpu.arch if gpu is not None else None))
    return tuple(seen)


class _Smi:
    """nvidia-smi from PATH, else WSL's fixed location; remembers what it answered. After a run that
    timed out (a hung driver) no other form is asked."""

    def __init__(self, system: System, findings: Findings) -> None:
        self.system, self.findings = system, findings
        self.answered = False  # some form was installed
        self.hung = False
        self._failures: set[str] = set()

    def run(self, args: list[str]) -> tuple[CommandResult | None, str]:
        if self.hung:
            return None, "nvidia-smi"
        for tool in ("nvidia-smi", WSL_SMI):
            result = self.system.run([tool, *args])
            if result is not None:
                self.answered = True
                self.hung = result.timed_out or result.overflowed  # other forms would do the same
                return result, tool
        return None, "nvidia-smi"

    def output(self, args: list[str]) -> tuple[str | None, str]:
        """The output of a form that succeeded, and its label; a failure is a note (once per message)."""
        result, tool = self.run(args)
        label = " ".join([tool, *args])
        if result is None:
            return None, label
        if not result.ok:
            self._fail(result)
            return None, label
        return result.stdout, label

    def _fail(self, result: CommandResult) -> None:
        message = result.describe().split(": ", 1)[-1]
        if message not in self._failures:
            self._failures.add(message)
            self.findings.note(f"nvidia-smi: {result.describe()}")

    def query(self) -> tuple[NvidiaReading, str]:
        """``--query-gpu`` (retried without ``compute_cap`` for pre-510 drivers)."""
        fields = parse.QUERY_FIELDS
        args = [f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]
        result, tool = self.run(args)
        if result is not None and not result.ok and parse.unsupported_field(result.stdout + result.stderr):
            self.findings.note("nvidia-smi: this driver's nvidia-smi has no compute_cap field (added in 510)")
            fields = parse.QUERY_FIELDS_OLD
            args = [f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]
            result, tool = self.run(args)
        label = " ".join([tool, *args])
        if result is None or not result.ok:
            if result is not None:
                self._fail(result)
            return NvidiaReading(), label
        return parse.read_query_csv(result.stdout, fields), label


def _driver_signs(system: System) -> bool:
    return any(system.exists(p) for p in (PROC_VERSION, MODULE_VERSION, WSL_DXG, "/dev/nvidiactl"))


def _from_nvml(facts: NvidiaFacts, findings: Findings) -> None:
    from resolver.plan.probe.nvml import read_nvml

    reading = read_nvml(findings)
    if reading is None:
        return
    gpus = tuple(GpuSeen(g.name, g.compute_capability, g.memory_mib, g.uuid) for g in reading.gpus)
    facts.take(NvidiaReading(reading.driver_version, reading.cuda_driver_version, gpus), "nvml", findings)


def _from_smi(system: System, facts: NvidiaFacts, findings: Findings) -> None:
    """Every nvidia-smi form that can still add something, richest first: the query csv, plain
    ``nvidia-smi`` (header; its table is the last resort for GPUs: no compute capability, names
    cut short), ``-q``, ``-L``."""
    smi = _Smi(system, findings)
    if not facts.gpus or facts.driver is None:
        facts.take(*smi.query(), findings)
    table: tuple[GpuSeen, ...] = ()
    table_label = "nvidia-smi"
    if not facts.known:
        text, table_label = smi.output([])
        if text is not None:
            plain = parse.read_smi_plain(text)
            facts.take(NvidiaReading(plain.driver, plain.cuda), table_label, findings)
            table = plain.gpus
    if not facts.known:
        text, label = smi.output(["-q"])
        if text is not None:
            facts.take(parse.read_smi_details(text), label, findings)
    if not facts.gpus:
        text, label = smi.output(["-L"])
        if text is not None:
            facts.take(parse.read_smi_list(text), label, findings)
    if not facts.gpus and table:
        facts.take(NvidiaReading(gpus=table), f"{table_label} (GPU table)", findings)
    if not smi.answered:
        findings.note("nvidia-smi: not installed (not on PATH, not at /usr/lib/wsl/lib)")


def _from_proc(system: System, facts: NvidiaFacts, findings: Findings) -> None:
    text = system.read(PROC_VERSION)
    if text is not None:
        version = parse.parse_proc_version(text)
        if version:
            facts.set_driver(version, PROC_VERSION, findings)
            if DottedVersion.parse(version).major < 100:
                findings.note(f"{PROC_VERSION}: {version} looks like a Jetson L4T release, "
                              "not a desktop driver version")
        else:
            findings.note(f"{PROC_VERSION}: no driver version in it")
    text = system.read(MODULE_VERSION)
    if text is not None:
        facts.set_driver(parse.parse_module_version(text), MODULE_VERSION, findings)
    if facts.gpus:
        return
    gpus = []
    for path in system.glob(PROC_GPUS):
        info = parse.parse_gpu_information(system.read(path) or "")
        if info.get("Model"):
            uuid = info.get("GPU UUID")
            gpus.append(GpuSeen(info["Model"], uuid=None if not uuid or "?" in uuid else uuid))
    facts.take(NvidiaReading(gpus=tuple(gpus)), PROC_GPUS, findings)


def detect_nvidia(system: System, findings: Findings, *, use_nvml: bool = True) -> NvidiaInfo | None:
    """The NVIDIA driver and GPUs, or None when this machine shows no sign of either."""
    facts = NvidiaFacts()
    if use_nvml and system.live and _driver_signs(system):
        _from_nvml(facts, findings)
    _from_smi(system, facts, findings)
    _from_proc(system, facts, findings)
    if not facts.gpus or facts.driver is None:
        env, label = captured_collect_env(system)
        if env is not None:
            facts.take(NvidiaReading(env.nvidia_driver, gpus=tuple(GpuSeen(n) for n in env.nvidia_gpus)), label, findings)
    if not facts.gpus:  # no tool named a GPU: the PCI bus still shows them (a container without nvidia-smi)
        facts.take(NvidiaReading(gpus=gpus_from_ids([d for d in gpus_on_bus(system) if d.gpu_vendor == "nvidia"])),
                   f"{SYSFS_DEVICES}/*/device", findings)
    if facts.driver is None and not facts.gpus and not system.exists(PROC_VERSION):
        findings.note(f"no NVIDIA driver: {PROC_VERSION} does not exist")
    return facts.info(findings)
