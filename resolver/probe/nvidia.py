"""NVIDIA detection: NVML, nvidia-smi (also WSL's), /proc/driver/nvidia, /sys/module/nvidia.

Sources are asked from richest to poorest and each answers only what is still unknown, so a
container with only /proc/driver/nvidia still reports its driver and GPU names.

>>> import pathlib, tempfile
>>> from resolver.probe.sysroot import SysrootSystem
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "_meta.toml").write_text('system = "Linux"\\nmachine = "x86_64"\\npython = "3.11"\\n')
>>> (root / "sys/module/nvidia").mkdir(parents=True)
>>> _ = (root / "sys/module/nvidia/version").write_text("550.54.15\\n")
>>> info = detect_nvidia(SysrootSystem(root), Findings())
>>> str(info.driver_version), info.gpus, info.sources
('550.54.15', (), ('/sys/module/nvidia/version',))
"""

from __future__ import annotations

from dataclasses import dataclass, field

from resolver.probe import nvidia_parse as parse
from resolver.probe.findings import Findings
from resolver.probe.system import CommandResult, System
from resolver.probe.profile import NvidiaGpu, NvidiaInfo
from resolver.versions import ComputeCapability, DottedVersion

PROC_VERSION = "/proc/driver/nvidia/version"
MODULE_VERSION = "/sys/module/nvidia/version"
PROC_GPUS = "/proc/driver/nvidia/gpus/*/information"
WSL_SMI = "/usr/lib/wsl/lib/nvidia-smi"
WSL_DXG = "/dev/dxg"


@dataclass
class _Gpu:
    name: str
    compute_capability: str | None = None
    memory_mib: int | None = None
    uuid: str | None = None


@dataclass
class _Partial:
    """What is known so far; each source fills in only what is still missing."""

    driver: str | None = None
    cuda: str | None = None
    gpus: list[_Gpu] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def set_driver(self, value: str | None, source: str, findings: Findings) -> None:
        if not value:
            return
        if self.driver is None:
            self.driver = value
            self.sources.append(source)
        elif DottedVersion.parse(value) != DottedVersion.parse(self.driver):
            findings.note(f"NVIDIA driver {value} from {source} differs from {self.driver} (kept the first; "
                          "a container's user-space tools may not match the host's kernel module)")


def _driver_signs(system: System) -> bool:
    return any(system.exists(p) for p in (PROC_VERSION, MODULE_VERSION, WSL_DXG, "/dev/nvidiactl"))


def _run_smi(system: System, args: list[str]) -> tuple[CommandResult | None, str]:
    """nvidia-smi from PATH, else WSL's fixed location; returns the result and the tool path used."""
    for tool in ("nvidia-smi", WSL_SMI):
        result = system.run([tool, *args])
        if result is not None:
            return result, tool
    return None, "nvidia-smi"


def _from_nvml(system: System, partial: _Partial, findings: Findings) -> None:
    from resolver.probe.nvml import read_nvml

    reading = read_nvml(findings)
    if reading is None:
        return
    partial.set_driver(reading.driver_version, "nvml", findings)
    partial.cuda = reading.cuda_driver_version
    partial.gpus = [_Gpu(g.name, g.compute_capability, g.memory_mib, g.uuid) for g in reading.gpus]
    if "nvml" not in partial.sources:
        partial.sources.append("nvml")


def _from_smi_query(system: System, partial: _Partial, findings: Findings) -> bool:
    """Returns True when nvidia-smi answered (so its plain form is worth asking for the header)."""
    fields = parse.QUERY_FIELDS
    args = [f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]
    result, tool = _run_smi(system, args)
    if result is None:
        findings.note("nvidia-smi: not installed (not on PATH, not at /usr/lib/wsl/lib)")
        return False
    if not result.ok and parse.unsupported_field(result.stdout + result.stderr):
        findings.note("nvidia-smi: this driver's nvidia-smi has no compute_cap field (added in 510)")
        fields = parse.QUERY_FIELDS_OLD
        args = [f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]
        result = system.run([tool, *args])
    if result is None or not result.ok:
        findings.note(f"nvidia-smi: {result.describe() if result else 'not runnable'}")
        return False
    rows = parse.parse_query_csv(result.stdout, fields)
    source = f"{tool} {' '.join(args)}"
    for row in rows:
        partial.set_driver(row.get("driver_version"), source, findings)
    if rows and not partial.gpus:
        partial.gpus = [_Gpu(row["name"] or "NVIDIA GPU", row.get("compute_cap"),
                             parse.parse_memory_mib(row.get("memory.total")), row.get("uuid")) for row in rows]
        if source not in partial.sources:
            partial.sources.append(source)
    return True


def _from_smi_header(system: System, partial: _Partial, findings: Findings) -> None:
    result, tool = _run_smi(system, [])
    if result is None:
        return
    if not result.ok:
        findings.note(f"nvidia-smi: {result.describe()}")
        return
    driver, cuda = parse.parse_smi_header(result.stdout)
    partial.set_driver(driver, tool, findings)
    if cuda and partial.cuda is None:
        partial.cuda = cuda
        partial.sources.append(f"{tool} (header CUDA Version)")


def _from_proc(system: System, partial: _Partial, findings: Findings) -> None:
    text = system.read(PROC_VERSION)
    if text is not None:
        version = parse.parse_proc_version(text)
        if version:
            partial.set_driver(version, PROC_VERSION, findings)
            if DottedVersion.parse(version).major < 100:
                findings.note(f"{PROC_VERSION}: {version} looks like a Jetson L4T release, "
                              "not a desktop driver version")
        else:
            findings.note(f"{PROC_VERSION}: no driver version in it")
    text = system.read(MODULE_VERSION)
    if text is not None:
        partial.set_driver(parse.parse_module_version(text), MODULE_VERSION, findings)
    if partial.gpus:
        return
    for path in system.glob(PROC_GPUS):
        info = parse.parse_gpu_information(system.read(path) or "")
        if info.get("Model"):
            uuid = info.get("GPU UUID")
            partial.gpus.append(_Gpu(info["Model"], None, None, None if not uuid or "?" in uuid else uuid))
    if partial.gpus:
        partial.sources.append(PROC_GPUS)


class _NameTable:
    """The knowledge base's GPU name table (resolver/knowledge/data/gpus.toml), loaded only when a GPU needs it.

    The table is the knowledge base's; the probe only reads it, and only when no tool reported the
    compute capability (a container without nvidia-smi, a pre-510 driver's nvidia-smi).
    """

    def __init__(self) -> None:
        self._knowledge = None
        self._error: str | None = None

    def compute_capability(self, name: str) -> tuple[str | None, str]:
        """``(capability or None, why not / where from)``."""
        if self._knowledge is None and self._error is None:
            try:
                from resolver.knowledge import Knowledge

                self._knowledge = Knowledge.load()
            except Exception as exc:  # noqa: BLE001 - a broken table must not break the probe
                self._error = f"the GPU name table could not be read ({exc})"
        if self._knowledge is None:
            return None, self._error or "the GPU name table is not available"
        model = self._knowledge.nvidia_model(name)
        if model is None:
            return None, f"{name!r} is not in the GPU name table (resolver/knowledge/data/gpus.toml)"
        return str(model.compute_capability), "GPU name table (resolver/knowledge/data/gpus.toml)"


def detect_nvidia(system: System, findings: Findings, *, use_nvml: bool = True) -> NvidiaInfo | None:
    """The NVIDIA driver and GPUs, or None when this machine shows no sign of either."""
    partial = _Partial()
    if use_nvml and system.live and _driver_signs(system):
        _from_nvml(system, partial, findings)
    smi_answers = True
    if not partial.gpus or partial.driver is None:
        smi_answers = _from_smi_query(system, partial, findings)
    if smi_answers and partial.cuda is None:
        _from_smi_header(system, partial, findings)
    _from_proc(system, partial, findings)
    if partial.driver is None and not partial.gpus:
        if not system.exists(PROC_VERSION):
            findings.note(f"no NVIDIA driver: {PROC_VERSION} does not exist")
        return None
    if partial.cuda is None:
        findings.note("NVIDIA: the driver's CUDA version is unknown (it comes from nvidia-smi or NVML)")
    gpus, unidentified = [], []
    table = _NameTable()
    for gpu in partial.gpus:
        cc, source = gpu.compute_capability, None
        if cc is None:
            cc, why = table.compute_capability(gpu.name)
            if cc is None:
                findings.note(f"NVIDIA GPU {gpu.name!r} left out: no tool reported its compute capability and {why}")
                unidentified.append(gpu.name)
                continue
            source = f"compute capability of {gpu.name!r}: {why}"
        try:
            capability = ComputeCapability.parse(cc)
        except ValueError:
            findings.note(f"NVIDIA GPU {gpu.name!r} left out: compute capability {cc!r} is not readable")
            unidentified.append(gpu.name)
            continue
        if source and source not in partial.sources:
            partial.sources.append(source)
        gpus.append(NvidiaGpu(gpu.name, capability, gpu.memory_mib, gpu.uuid))
    return NvidiaInfo(
        driver_version=DottedVersion.parse(partial.driver) if partial.driver else None,
        gpus=tuple(gpus),
        cuda_driver_version=DottedVersion.parse(partial.cuda) if partial.cuda else None,
        sources=tuple(partial.sources),
        unidentified_gpus=tuple(unidentified),
    )
