"""``probe --from-report FILE|-``: a profile from what a person pasted about their machine.

A report is untrusted text holding any mix of: nvidia-smi (``--query-gpu`` csv with its header, the
plain table in both header generations, ``-q``, ``-L``), ``/proc/driver/nvidia/version``, rocminfo (or
an excerpt), amd-smi (plain, ``version``, ``static --asic``), ``rocm-smi --showproductname``,
``nvcc --version``, ``hipcc --version``, ``ldd --version``, ``uname -a`` and ``python -m
torch.utils.collect_env``, and the forms only pastes hold (``paste_forms``: deviceQuery, sglang check_env,
rocm-smi --csv, hipInfo, clinfo, get_device_properties prints). Each form is read by its parser and merged
the probe's way (richest source first, each fact with its source); under them the tolerant reader
(``tolerant``) fills what no form gave from the facts the text states wherever they stand, each with its
line. It is read, never executed; control characters are escaped before anything of it can be printed back.

What the report does not say is a note; where planning needs a value (Python, the platform, the
ROCm of a ROCm GPU) the profile records the assumption in ``assumed`` and ``plan`` repeats it.

>>> p = profile_from_report("| NVIDIA-SMI 610.43.02   KMD Version: 610.43.02     CUDA UMD Version: 13.3     |")
>>> str(p.nvidia.driver_version), str(p.nvidia.cuda_driver_version), str(p.python), dict(p.assumed)["python"]
('610.43.02', '13.3', '3.12', 'Python not in the report: assumed 3.12 (plan --python X.Y to choose)')
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from resolver.core.errors import BadInput
from resolver.core.fs import read_bytes_bounded
from resolver.core.versions import DottedVersion
from resolver.plan.probe import amd_parse, host, nvidia_parse, paste_forms
from resolver.plan.probe.amd import AmdFacts
from resolver.plan.probe.collect_env import CollectEnv, parse_collect_env
from resolver.plan.probe.findings import Findings
from resolver.plan.probe.name_table import NameTable
from resolver.plan.probe.nvidia import NvidiaFacts
from resolver.plan.probe.nvidia_parse import GpuSeen, NvidiaReading
from resolver.plan.probe.profile import AmdInfo, HardwareProfile, NvidiaInfo
from resolver.plan.probe.tolerant import PasteFacts, read_facts

MAX_BYTES = 4 * 1024 * 1024
# What is read of a report: the tools' outputs fill a few thousand lines of at most a few hundred characters
# (nvidia-smi -q of 16 GPUs, rocminfo of 16 agents); the caps bound the time any input takes to read.
MAX_LINES = 20_000
MAX_LINE = 4096  # characters of a line that are read; the rest of a longer line is ignored
MAX_GPUS = 64  # one machine (an 8- or 16-GPU server; a report lists one machine): naming each GPU takes time
ASSUMED_PYTHON = "3.12"
ASSUMED_PLATFORM = ("Linux", "x86_64")
FORMS = ("nvidia-smi (plain, -q, -L or --query-gpu csv), /proc/driver/nvidia/version, rocminfo, amd-smi, "
         "rocm-smi (--showproductname, -a, --csv or --json), deviceQuery, `lspci -nn` or `python -m torch.utils.collect_env`")
_FIX = f"paste what one of these printed on the machine: {FORMS}"
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# C0/C1 controls other than tab and newline, the Unicode line and paragraph separators (so that a line is
# what ends in a newline), and the bidirectional overrides that reorder a terminal line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# The patterns below read untrusted text line by line, each in time linear in the line.
_UNAME_HEAD = re.compile(r"Linux \S+ ")
_UNAME_MACHINE = re.compile(r"\b(x86_64|aarch64|ppc64le)\b")
_NVCC = re.compile(r"Cuda compilation tools, release (\d+\.\d+)")
_LDD = re.compile(r"ldd \(.*\) \d+\.\d+", re.IGNORECASE)


def clean(text: str) -> str:
    """Terminal colour codes removed, line ends unified, other control characters written as ``\\xNN``.

    >>> clean("\\x1b[1mGPU\\x1b[0m 0\\r\\nbell\\x07")
    'GPU 0\\nbell\\\\x07'
    """
    text = _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        text)


def read_report(source: str, stdin: BinaryIO | None = None) -> str:
    """The cleaned text of the report in file ``source`` (``-``: standard input), refused past MAX_BYTES."""
    name = "the report on standard input" if source == "-" else f"report file {source}"
    try:
        if source == "-":
            data = (stdin or sys.stdin.buffer).read(MAX_BYTES + 1)
        else:  # a regular file only: a FIFO or device would hang or never end
            data = read_bytes_bounded(Path(source), limit=MAX_BYTES + 1, what="report file", fix=_FIX)
    except FileNotFoundError:
        raise BadInput(f"{name} does not exist", fix=_FIX) from None
    except IsADirectoryError:
        raise BadInput(f"{name} is a folder, not a text file", fix=_FIX) from None
    except OSError as exc:
        raise BadInput(f"cannot read {name}: {exc.strerror or exc}", fix=_FIX) from None
    if len(data) > MAX_BYTES:
        raise BadInput(f"{name} is larger than {MAX_BYTES // (1024 * 1024)} MiB",
                       fix="paste only the outputs of the tools, not whole logs")
    if b"\x00" in data:
        raise BadInput(f"{name} is not text (it holds NUL bytes)", fix=_FIX)
    return clean(data.decode("utf-8", errors="replace"))


def _capped_lines(text: str) -> str:
    """Each line cut to MAX_LINE characters."""
    return "\n".join(line[:MAX_LINE] for line in text.split("\n"))


def _uname(text: str) -> tuple[str, str] | None:
    """(the line, the CPU architecture) of ``uname -a`` output (``Linux host ... x86_64 GNU/Linux``)."""
    for line in text.splitlines():
        line = line.rstrip()
        head = _UNAME_HEAD.match(line) if line.endswith("GNU/Linux") else None
        machines = [m.group(1) for m in _UNAME_MACHINE.finditer(line, head.end()) if m.end() <= len(line) - 9] \
            if head else []
        if machines:
            return line, machines[-1]
    return None


def _ldd(text: str) -> str | None:
    """The first line of ``ldd --version``."""
    return next((line for line in text.splitlines() if _LDD.fullmatch(line.rstrip())), None)


@dataclass(frozen=True)
class _Host:
    python: str
    glibc: str | None
    system: str
    machine: str
    wsl: bool


def _nvidia(text: str, env: CollectEnv | None, forms: list[str], findings: Findings,
            paste: PasteFacts) -> NvidiaInfo | None:
    plain = nvidia_parse.read_smi_plain(text)
    proc = nvidia_parse.parse_proc_version(text)
    collect = NvidiaReading(driver=env.nvidia_driver, gpus=tuple(GpuSeen(n) for n in env.nvidia_gpus)) if env else None
    readings = (  # richest first: the csv names compute capabilities; the table's names may be cut short
        (nvidia_parse.read_query_csv_with_header(text), "nvidia-smi --query-gpu (csv)"),
        (paste_forms.read_device_query(text), "deviceQuery"),
        (paste_forms.read_check_env(text), "sglang check_env"),
        (paste_forms.read_device_properties(text)[1], "torch.cuda.get_device_properties"),
        (paste_forms.read_clinfo(text)[1], "clinfo"),
        (NvidiaReading(plain.driver, plain.cuda), "nvidia-smi"),
        (nvidia_parse.read_smi_details(text), "nvidia-smi -q"),
        (nvidia_parse.read_smi_list(text), "nvidia-smi -L"),
        (collect or NvidiaReading(), "collect_env"),
        (NvidiaReading(gpus=plain.gpus), "nvidia-smi (GPU table)"),
        (NvidiaReading(driver=proc), "/proc/driver/nvidia/version"),
    )
    _check_gpu_count(max(len(reading.gpus) for reading, _ in readings))
    facts = NvidiaFacts()
    for reading, form in readings:
        if not reading.empty:
            forms.append(form)
            facts.take(reading, f"report: {form}", findings)
    if not facts.gpus:  # only `lspci -n`/`-nn` shows them: placed by PCI id
        from resolver.plan.probe.nvidia import gpus_from_ids
        from resolver.plan.probe.pci import parse_lspci

        devices = [d for d in parse_lspci(text) if d.gpu_vendor == "nvidia"]
        _check_gpu_count(len(devices))
        if devices:
            forms.append("lspci -n")
            facts.take(NvidiaReading(gpus=gpus_from_ids(devices)), "report: lspci -n (PCI ids)", findings)
    if not facts.gpus and (seen := paste.gpus("nvidia")):
        _check_gpu_count(len(seen))
        forms.append("tolerant reader")
        facts.take(NvidiaReading(gpus=tuple(GpuSeen(g.value, g.arch) for g in seen)),
                   f"report, read where it stands: {_where(seen)}", findings)
    driver = paste.first("driver")
    if facts.driver is None and driver and (facts.gpus or facts.cuda):
        facts.set_driver(driver.value, f"report, read where it stands: {driver.where()}", findings)
    return facts.info(findings, NameTable())


def _where(facts) -> str:
    return "; ".join(f"{f.value!r} on {f.where()}" for f in facts[:8]) + (" …" if len(facts) > 8 else "")


def _check_gpu_count(count: int) -> None:
    if count > MAX_GPUS:
        raise BadInput(f"the report lists {count} GPUs; one machine has at most {MAX_GPUS}",
                       fix="paste what the tools printed on one machine")


def _amd(text: str, env: CollectEnv | None, forms: list[str], findings: Findings,
         assumed: dict[str, str], paste: PasteFacts) -> AmdInfo | None:
    facts = AmdFacts()
    version = amd_parse.parse_amd_smi_rocm_version(text)
    if version:
        forms.append("amd-smi")
        facts.take_version(version, "report: amd-smi (ROCm version)")
    collect = [amd_parse.AmdAgent(name, gfx) for name, gfx in env.amd_gpus] if env else []
    readings = ((amd_parse.parse_rocminfo(text), "rocminfo"),
                (amd_parse.parse_amd_smi_static(text), "amd-smi static --asic"),
                (amd_parse.parse_amd_smi_table(text), "amd-smi"),
                (amd_parse.parse_rocm_smi_products(text), "rocm-smi --showproductname"),
                (amd_parse.parse_rocm_smi_json(text), "rocm-smi --json"),
                (paste_forms.read_rocm_smi_csv(text), "rocm-smi --csv"),
                (paste_forms.read_hipinfo(text), "hipInfo"),
                (paste_forms.read_clinfo(text)[0], "clinfo"),
                (paste_forms.read_device_properties(text)[0], "torch.cuda.get_device_properties"),
                (collect, "collect_env"),
                (_amd_on_bus(text), "lspci -n"))
    _check_gpu_count(max(len(agents) for agents, _ in readings))
    for agents, form in readings:
        if any(agent.name or agent.gfx or agent.pci_device for agent in agents):  # `amd-smi metric` prints "GPU: 0" too
            forms.append(form)
            facts.take_agents(agents, f"report: {form}")
    if not facts.agents and (seen := paste.gpus("amd")):
        _check_gpu_count(len(seen))
        forms.append("tolerant reader")
        facts.take_agents([amd_parse.AmdAgent(g.value, g.arch) for g in seen],
                          f"report, read where it stands: {_where(seen)}")
    if facts.version is None and (rocm := paste.first("rocm")):
        forms.append("tolerant reader")
        facts.take_version(rocm.value, f"report, read where it stands: {rocm.where()}")
    gpus = facts.gpus(findings, NameTable())
    if gpus and facts.agents_source == "report: collect_env":
        findings.note("collect_env names only the GPU PyTorch was using; the machine may have more AMD GPUs")
    if gpus and facts.version is None and env and env.torch_rocm:
        assumed["rocm"] = (f"ROCm version not in the report: assumed {env.torch_rocm}, the ROCm PyTorch was built "
                           "with (collect_env)")
        facts.take_version(env.torch_rocm, "report: collect_env (ROCm PyTorch was built with)")
    unidentified = tuple(facts.unidentified) if not gpus else ()
    if facts.version is None and not gpus and not unidentified:
        return None
    if facts.version is None:
        findings.note("AMD GPU in the report but no ROCm version (amd-smi prints it; so does "
                      "`cat /opt/rocm/.info/version`)")
    return AmdInfo(rocm_version=DottedVersion.parse(facts.version) if facts.version else None, gpus=tuple(gpus),
                   rocm_root=None, sources=tuple(facts.sources), unidentified_gpus=unidentified)


def _amd_on_bus(text: str) -> list[amd_parse.AmdAgent]:
    from resolver.plan.probe.pci import parse_lspci

    return [amd_parse.AmdAgent(None, None, d.device) for d in parse_lspci(text) if d.gpu_vendor == "amd"]


def _host(text: str, env: CollectEnv | None, forms: list[str], findings: Findings,
          assumed: dict[str, str], jetson: str | None = None) -> _Host:
    python = env.python if env else None
    if python is None:
        python = ASSUMED_PYTHON
        assumed["python"] = f"Python not in the report: assumed {ASSUMED_PYTHON} (plan --python X.Y to choose)"
    ldd = _ldd(text)
    glibc = (env.glibc if env else None) or (host.parse_ldd_version(ldd) if ldd else None)
    if ldd:
        forms.append("ldd --version")
    if glibc is None:
        findings.note("glibc not in the report (collect_env's \"Libc version\" or `ldd --version` says it)")
    uname = _uname(text)
    if uname:
        forms.append("uname -a")
    said = [(env.system if env else None, env.machine if env else None),
            ("Linux", uname[1] if uname else None),
            ("Linux", nvidia_parse.parse_proc_machine(text))]
    system, machine = next(((s, m) for s, m in said if s and m), (env.system if env else None, None))
    if system is None and jetson:  # every Jetson is an aarch64 Linux machine
        system, machine = "Linux", "aarch64"
        findings.note(f"platform not in the report: linux-aarch64, the platform of every Jetson ({jetson!r})")
    elif system is None:
        system, machine = ASSUMED_PLATFORM
        assumed["platform"] = "platform not in the report: assumed linux-64"
    elif machine is None:
        machine = "x86_64"
        assumed["platform"] = f"CPU architecture not in the report: assumed {system} x86_64"
    wsl = "microsoft-standard-WSL" in text or "Microsoft" in (uname[0] if uname else "")
    return _Host(python, glibc, system, machine, wsl)


def profile_from_report(text: str) -> HardwareProfile:
    """The profile a report describes; one sentence (BadInput) when it holds nothing the probe reads."""
    if len(text) > MAX_BYTES:
        raise BadInput(f"the report is larger than {MAX_BYTES // (1024 * 1024)} MiB",
                       fix="paste only the outputs of the tools, not whole logs")
    text = clean(text)
    lines = text.count("\n") + 1
    if lines > MAX_LINES:
        raise BadInput(f"the report has {lines} lines, more than the {MAX_LINES} the probe reads",
                       fix="paste only the outputs of the tools, not whole logs")
    try:
        return _profile(_capped_lines(text))
    except ValueError as exc:  # a value no type takes (a version of 5 000 digits): the report's, not a bug
        raise BadInput(f"the report holds a value the probe cannot read ({str(exc)[:120]})", fix=_FIX) from None


def _profile(text: str) -> HardwareProfile:
    findings, forms, assumed = Findings(), [], {}
    env = parse_collect_env(text)
    if env is not None:
        forms.append("collect_env")
    paste = read_facts(text)
    nvidia = _nvidia(text, env, forms, findings, paste)
    amd = _amd(text, env, forms, findings, assumed, paste)
    nvcc = _NVCC.search(text)
    cuda_toolkit = nvcc.group(1) if nvcc else (env.cuda_toolkit if env else None)
    hip = amd_parse.parse_hipcc_version(text)
    for found, form in ((nvcc, "nvcc --version"), (hip, "hipcc --version")):
        if found:
            forms.append(form)
    for form in paste_forms.forms_naming_no_gpu(text):
        forms.append(form)
        findings.note(f"{form} names no GPU model: paste nvidia-smi or rocm-smi --showproductname for that")
    if not forms:
        raise BadInput("the report holds no output the probe can read", fix=_FIX)
    from resolver.plan.probe.nvidia import is_tegra

    jetson = next((g.name for g in (nvidia.gpus if nvidia else ()) if is_tegra(g.name)),
                  "tegrastats" if "tegrastats" in forms else None)
    machine = _host(text, env, forms, findings, assumed, jetson)
    platform = host.conda_subdir(machine.system, machine.machine)
    if platform is None:
        raise BadInput(f"the report describes a {machine.system} {machine.machine} machine, which has no conda platform",
                       fix="plan for linux-64, linux-aarch64, linux-ppc64le, osx-64, osx-arm64 or win-64")
    for note in assumed.values():
        findings.note(note)
    return HardwareProfile(
        platform=platform,
        python=DottedVersion.parse(machine.python),
        glibc=DottedVersion.parse(machine.glibc) if machine.glibc and platform.startswith("linux") else None,
        nvidia=nvidia,
        amd=amd,
        cuda_toolkit=DottedVersion.parse(cuda_toolkit) if cuda_toolkit else None,
        rocm_toolkit=DottedVersion.parse(hip) if hip else None,
        wsl=machine.wsl,
        notes=findings.notes,
        sources=tuple(f"report: {form}" for form in dict.fromkeys(forms)),
        assumed=tuple(sorted(assumed.items())),
    )
