"""Forms people paste that no probe source prints: each read by its own shape, line by line.

CUDA samples' ``deviceQuery``, ``python -m sglang.check_env`` (its ``GPU 0,1: name`` lines, also
flattened to one line), ``rocm-smi --csv``, ``hipInfo``, ``clinfo``, ``torch.cuda.get_device_properties``
prints, and the forms that name no GPU (``nvcc --list-gpu-arch``, ``tegrastats``, ``nvidia-smi topo -m``),
recognised so that they are not mistaken for one. Every pattern is linear in its line.

>>> r = read_device_query('Device 0: "NVIDIA GeForce RTX 5090"\\n  CUDA Driver Version / Runtime Version   12.8 / 12.8\\n'
...                       '  CUDA Capability Major/Minor version number:    12.0\\n')
>>> r.cuda, r.gpus[0].name, r.gpus[0].compute_capability
('12.8', 'NVIDIA GeForce RTX 5090', '12.0')
"""

from __future__ import annotations

import csv
import re

from resolver.plan.probe.amd_parse import AmdAgent
from resolver.plan.probe.nvidia_parse import GpuSeen, NvidiaReading

_DQ_DEVICE = re.compile(r'Device (\d{1,3}): "([^"\n]{1,120})"')
_DQ_CC = re.compile(r"CUDA Capability Major/Minor version number:\s{0,80}(\d{1,2})\.(\d)")
_DQ_CUDA = re.compile(r"CUDA Driver Version / Runtime Version\s{0,80}(\d{1,2}\.\d{1,2})\s{0,8}/")
# sglang.check_env: "GPU 0,1,2: NVIDIA H100 80GB HBM3" and "GPU 0,1,2 Compute Capability: 9.0"; a key ends the
# value where the whole report was flattened onto one line
_SG_GPU = re.compile(r"\bGPU ((?:\d{1,3},){0,63}\d{1,3})( Compute Capability)?: ")
_SG_NEXT_KEY = re.compile(r"\s(?:GPU \d|CUDA_HOME|CUDA available|NVCC|CUDA Driver Version|PyTorch|Python|"
                          r"NVIDIA Topology|ROCM_HOME|HIPCC|sglang|Hypervisor)\b")
_SG_DRIVER = re.compile(r"\bCUDA Driver Version: (\d{3}\.\d{1,3}(?:\.\d{1,3})?)\b")
_CSV_HEAD = re.compile(r"device,[A-Za-z][A-Za-z ,()%]*$")
_HIP_DEVICE = re.compile(r"device#\s*(\d{1,3})")
_HIP_FIELD = re.compile(r"(Name|gcnArchName):\s{0,40}(\S.{0,120})$")
_CL_BOARD = re.compile(r"(?:Device )?Board [Nn]ame(?: \(AMD\))?:?\s{1,80}(\S.{0,120})$")
_CL_NAME = re.compile(r"(?:Device )?Name:?\s{1,80}(gfx[0-9a-f]{3,4}\S{0,40})$")
_CL_NV_NAME = re.compile(r"Device Name\s{1,80}(NVIDIA \S.{0,120})$")
_CL_NV_DRIVER = re.compile(r"Driver Version\s{1,80}(\d{3}\.\d{1,3}(?:\.\d{1,3})?)\b")
_PROPS = re.compile(r"_CudaDeviceProperties\(name='([^'\n]{1,120})', major=(\d{1,2}), minor=(\d{1,2})"
                    r"(?:, gcnArchName='(gfx[0-9a-f]{3,4}[^'\n]{0,40})')?")
_AMD_NAME = re.compile(r"\b(?:AMD|Radeon|Instinct)\b")
_NVCC_ARCH = re.compile(r"^compute_\d{2,3}[a-z]?$")
_TEGRASTATS = re.compile(r"\bRAM \d{1,7}/\d{1,7}MB\b.{0,400}\bGR3D_FREQ\b")
_TOPO = re.compile(r"^\s*GPU0\s+X\s")


def read_device_query(text: str) -> NvidiaReading:
    """CUDA samples' ``deviceQuery``: each ``Device N: "name"`` with the compute capability printed below it,
    and the CUDA version the driver supports (the first of ``CUDA Driver Version / Runtime Version``)."""
    gpus: list[GpuSeen] = []
    cuda = None
    name: str | None = None
    for line in text.splitlines():  # in the order they stand, also on one line (a flattened paste)
        events = sorted([(m.start(), "device", m) for m in _DQ_DEVICE.finditer(line)] +
                        [(m.start(), "cuda", m) for m in _DQ_CUDA.finditer(line)] +
                        [(m.start(), "cc", m) for m in _DQ_CC.finditer(line)], key=lambda e: e[0])
        for _, kind, found in events:
            if kind == "device":
                name = found.group(2).strip()
            elif kind == "cuda":
                cuda = cuda or found.group(1)
            elif name:
                gpus.append(GpuSeen(name, f"{found.group(1)}.{found.group(2)}"))
                name = None
    return NvidiaReading(cuda=cuda, gpus=tuple(gpus)) if gpus else NvidiaReading()


def read_check_env(text: str) -> NvidiaReading:
    """``python -m sglang.check_env``: ``GPU 0,1: name`` with ``GPU 0,1 Compute Capability: X.Y`` and
    ``CUDA Driver Version`` (the driver, despite its label); one GPU per index listed."""
    names: dict[str, str] = {}
    capabilities: dict[str, str] = {}
    for line in text.splitlines():
        heads = list(_SG_GPU.finditer(line))
        for number, head in enumerate(heads):
            end = heads[number + 1].start() if number + 1 < len(heads) else len(line)
            stop = _SG_NEXT_KEY.search(line, head.end(), end)
            value = line[head.end():stop.start() if stop else end].strip()
            if head.group(2):
                found = re.match(r"(\d{1,2}\.\d)\b", value)
                if found:
                    capabilities[head.group(1)] = found.group(1)
            elif value and "(UUID:" not in value:  # with a UUID it is nvidia-smi -L, read by its own parser
                names[head.group(1)] = value
    gpus = [GpuSeen(name, capabilities[indices]) for indices, name in names.items() if indices in capabilities
            for _ in indices.split(",")]
    if not gpus:
        return NvidiaReading()
    driver = _SG_DRIVER.search(text)
    return NvidiaReading(driver=driver.group(1) if driver else None, gpus=tuple(gpus))


def read_rocm_smi_csv(text: str) -> list[AmdAgent]:
    """``rocm-smi ... --csv``: a ``device,…`` header, then one ``cardN,…`` row per GPU."""
    agents: list[AmdAgent] = []
    header: list[str] | None = None
    for line in text.splitlines():
        line = line.strip()
        if _CSV_HEAD.fullmatch(line):
            header = [cell.strip().lower() for cell in next(csv.reader([line]))]
            continue
        if header and re.match(r"card\d{1,3},", line):
            fields = dict(zip(header, (cell.strip() for cell in next(csv.reader([line])))))
            from resolver.plan.probe.amd_parse import _rocm_smi_card

            agent = _rocm_smi_card(fields)
            if agent:
                agents.append(agent)
        elif header and line and not line.startswith("card"):
            header = None
    return agents


def read_hipinfo(text: str) -> list[AmdAgent]:
    """``hipInfo``: per ``device# N`` its ``Name:`` and ``gcnArchName:``."""
    agents: list[AmdAgent] = []
    fields: dict[str, str] | None = None
    for line in text.splitlines() + ["device# end"]:
        line = line.strip()
        if line.startswith("device#") and (_HIP_DEVICE.match(line) or line == "device# end"):
            if fields and fields.get("gcnArchName", "").startswith("gfx"):
                agents.append(AmdAgent(fields.get("Name"), fields["gcnArchName"].split()[0]))
            fields = {}
            continue
        field = _HIP_FIELD.fullmatch(line) if fields is not None else None
        if field and fields is not None:
            fields.setdefault(field.group(1), field.group(2).strip())
    return agents


def read_clinfo(text: str) -> tuple[list[AmdAgent], NvidiaReading]:
    """``clinfo`` (both layouts): an AMD device's board name and its ``gfx`` name, paired in order; an
    NVIDIA device's name and driver."""
    boards: list[str] = []
    archs: list[str] = []
    nvidia: list[GpuSeen] = []
    for line in text.splitlines():
        line = line.strip()
        if board := _CL_BOARD.fullmatch(line):
            boards.append(board.group(1).strip())
        elif arch := _CL_NAME.fullmatch(line):
            archs.append(arch.group(1).split(":")[0])
        elif nv := _CL_NV_NAME.fullmatch(line):
            nvidia.append(GpuSeen(nv.group(1).strip()))
    agents = [AmdAgent(board, arch) for board, arch in zip(boards, archs)] if len(boards) == len(archs) else \
        [AmdAgent(None, arch) for arch in archs]
    driver = _CL_NV_DRIVER.search(text) if nvidia else None
    return agents, NvidiaReading(driver=driver.group(1) if driver else None, gpus=tuple(nvidia))


def read_device_properties(text: str) -> tuple[list[AmdAgent], NvidiaReading]:
    """``print(torch.cuda.get_device_properties(i))``: ``_CudaDeviceProperties(name=…, major=…, minor=…)``;
    a ROCm build adds ``gcnArchName`` (its major/minor are not a compute capability)."""
    agents, gpus = [], []
    for line in text.splitlines():
        for found in _PROPS.finditer(line):
            if found.group(4):
                agents.append(AmdAgent(found.group(1), found.group(4).split(":")[0]))
            elif not _AMD_NAME.search(found.group(1)):  # a ROCm GPU's major/minor (wrapped away from its gfx)
                gpus.append(GpuSeen(found.group(1), f"{found.group(2)}.{found.group(3)}"))
    return agents, NvidiaReading(gpus=tuple(gpus))


def forms_naming_no_gpu(text: str) -> list[str]:
    """The forms in ``text`` that say something about the machine but name no GPU model."""
    lines = text.splitlines()
    found = []
    if sum(1 for line in lines if _NVCC_ARCH.fullmatch(line.strip())) >= 3:
        found.append("nvcc --list-gpu-arch")
    if any(_TEGRASTATS.search(line) for line in lines):
        found.append("tegrastats")
    if any(_TOPO.match(line) for line in lines):
        found.append("nvidia-smi topo -m")
    return found
