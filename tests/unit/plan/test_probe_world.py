"""Every GPU known: the probe places GPUs by name (NVIDIA's CUDA GPUs list) and by PCI id (the PCI ID
Repository), reads rocm-smi's hex ids, `--json` and `gfx9010` spelling, keeps a GPU no table places as
"model unknown" with the way to state it (`--compute-capability` / `--gfx` on probe, plan and lock),
and derives the driver's CUDA from the knowledge base when a report lacks it. Every paste is real
(tests/data/machines/report-sources.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import DATA, cli

from resolver.plan.knowledge import Knowledge, pci_ids
from resolver.plan.probe import probe_machine
from resolver.plan.probe.report import profile_from_report, read_report

REPORTS = DATA / "machines"


def _report(name: str):
    return profile_from_report(read_report(str(REPORTS / f"report-{name}.txt")))


@pytest.mark.parametrize("name,expected", [
    ("nvidia-smi-q-quadro-m1000m", [("Quadro M1000M", "5.0")]),
    ("plain-nvidia-smi-570-rtx4080-cut-name", [("NVIDIA GeForce RTX 4080 ...", "8.9")]),
    ("lspci-proc-version-rtx3080-no-cuda", [("NVIDIA GeForce RTX 3080", "8.6")]),
    ("lspci-nn-gtx970-unnamed", [("NVIDIA GeForce GTX 970", "5.2")]),
    ("lspci-nn-gtx1050-mobile", [("NVIDIA GeForce GTX 1050 Mobile", "6.1")]),
])
def test_nvidia_gpus_by_name_and_by_pci_id(name, expected):
    profile = _report(name)
    assert [(g.name, str(g.compute_capability)) for g in profile.nvidia.gpus] == expected


@pytest.mark.parametrize("name,expected", [
    ("lspci-vnn-r9700", [("AMD Radeon AI PRO R9700", "gfx1201")]),
    ("rocm-smi-productname-mi100-hex", [("AMD Instinct MI100", "gfx908")]),
    ("rocm-smi-json-mi250x-gfx9010", [("AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2", "gfx90a")]),
    ("rocm-smi-json-rx7900-device-id", [("Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]", "gfx1100")]),
])
def test_amd_gpus_by_hex_ids_json_and_gfx_spelling(name, expected):
    profile = _report(name)
    assert [(g.name, str(g.gfx_arch)) for g in profile.amd.gpus] == expected


def test_the_driver_s_cuda_comes_from_the_knowledge_base_when_the_report_lacks_it():
    profile = _report("lspci-proc-version-rtx3080-no-cuda")
    nv = profile.nvidia
    assert str(nv.driver_version) == "555.58" and nv.cuda_driver_version_derived
    assert nv.cuda_driver_version == Knowledge.load().newest_cuda_for_driver(nv.driver_version)
    assert any(s.startswith("CUDA version: derived from driver 555.58") for s in nv.sources)
    said = _report("plain-nvidia-smi-570-rtx4080-cut-name").nvidia
    assert str(said.cuda_driver_version) == "12.8" and not said.cuda_driver_version_derived
    out = cli.run("probe", "--from-report", str(REPORTS / "report-lspci-proc-version-rtx3080-no-cuda.txt"))
    assert "supports CUDA 12.5, derived from the driver version" in out.stdout


def test_a_gpu_no_table_places_is_still_a_gpu_and_the_override_places_it(tmp_path):
    report = str(REPORTS / "report-nvidia-smi-q-unknown-error.txt")
    out = cli.run("probe", "--from-report", report, project=tmp_path)
    assert out.returncode == 0
    assert "1 NVIDIA GPU, model unknown (Unknown Error)" in out.stdout and "GPU: none found" not in out.stdout
    assert "nvidia-smi --query-gpu=name,compute_cap --format=csv" in out.stdout and "--compute-capability" in out.stdout
    profile_file = tmp_path / "p.json"
    profile_file.write_text(cli.run("probe", "--json", "--from-report", report, project=tmp_path).stdout)
    refused = cli.run("plan", "--profile", str(profile_file), project=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--compute-capability X.Y" in refused.stderr and "gpus.toml" not in refused.stderr
    placed = json.loads(cli.run("probe", "--json", "--from-report", report, "--compute-capability", "6.1",
                                project=tmp_path).stdout)
    assert placed["nvidia"]["gpus"][0]["compute_capability"] == "6.1" and placed["nvidia"]["unidentified_gpus"] == []
    assert placed["overrides"] == {"--compute-capability": "6.1"}
    planned = cli.run("plan", "--profile", str(profile_file), "--compute-capability", "8.6", project=tmp_path)
    # placed, the GPU passes; what stops this 2017 machine now is its driver (375.26), as it should
    assert planned.returncode == 2 and "driver 375.26" in planned.stderr and "compute capability" not in planned.stderr
    bad = cli.run("plan", "--profile", str(profile_file), "--compute-capability", "eight", project=tmp_path)
    assert bad.returncode == 3 and len(bad.stderr.strip().splitlines()) == 1
    assert "--compute-capability" in cli.run("lock", "--help").stdout and "--gfx" in cli.run("lock", "--help").stdout


def test_an_amd_gpu_no_table_places_takes_gfx(tmp_path):
    from resolver.core.versions import DottedVersion
    from resolver.plan.probe.overrides import apply_gpu_overrides
    from resolver.plan.probe.profile import AmdInfo, HardwareProfile

    profile = HardwareProfile("linux-64", DottedVersion.parse("3.12"),
                              amd=AmdInfo(DottedVersion.parse("6.2.0"), unidentified_gpus=("AMD GPU 1002:13e9",)))
    placed = apply_gpu_overrides(profile, gfx="gfx9010")
    assert [(g.name, str(g.gfx_arch)) for g in placed.amd.gpus] == [("AMD GPU 1002:13e9", "gfx90a")]


def _container(root: Path, devices: dict[str, tuple[str, str, str]]) -> Path:
    """A sysroot of a container without nvidia-smi or rocm-smi: only sysfs shows the GPUs."""
    (root / "_meta.toml").write_text('system = "Linux"\nmachine = "x86_64"\npython = "3.12.3"\n'
                                     'source = "composed in the test"\n')
    for slot, (vendor, device, cls) in devices.items():
        folder = root / "sys/bus/pci/devices" / slot
        folder.mkdir(parents=True)
        (folder / "vendor").write_text(f"0x{vendor}\n")
        (folder / "device").write_text(f"0x{device}\n")
        (folder / "class").write_text(f"0x{cls}\n")
    return root


def test_a_container_without_the_gpu_tools_still_identifies_its_gpus(tmp_path):
    # the ids of real machines: 10de:2206 (hyprwm/Hyprland#6715), 1002:7551 (clbr/radeontop#184), an Intel iGPU
    root = _container(tmp_path, {"0000:01:00.0": ("10de", "2206", "030000"), "0000:0a:00.0": ("1002", "7551", "030000"),
                                 "0000:00:02.0": ("8086", "591b", "030000"), "0000:01:00.1": ("10de", "1aef", "040300")})
    profile = probe_machine(root)
    assert [(g.name, str(g.compute_capability)) for g in profile.nvidia.gpus] == [("NVIDIA GeForce RTX 3080", "8.6")]
    assert [(g.name, str(g.gfx_arch)) for g in profile.amd.gpus] == [("AMD Radeon AI PRO R9700", "gfx1201")]
    assert "/sys/bus/pci/devices/*/device" in profile.nvidia.sources


def test_the_tables_are_complete_and_agree():
    k = Knowledge.load()
    counts = pci_ids.rows()
    assert counts["nvidia"] >= 1100 and counts["amd"] >= 250
    names = sum(len(m.names) for m in k.nvidia_models)
    assert names >= 250
    for model in k.nvidia_models:  # every name of NVIDIA's list has the compute capability of its PCI chip
        for name in model.names:
            found = pci_ids.by_name("nvidia", name)
            assert found is None or found.arch == str(model.compute_capability), (name, found)
    for model in k.amd_models:
        for name in model.names:
            found = pci_ids.by_name("amd", name)
            assert found is None or found.arch == str(model.gfx), (name, found)
    # every architecture decide plans for has GPUs on the bus: desktop, mobile, workstation, data centre, embedded
    for device, cc in {"2204": "8.6", "25a2": "8.6", "1eb8": "7.5", "20b0": "8.0", "2330": "9.0", "2901": "10.0",
                       "2b85": "12.0", "2b00": "11.0", "13b1": "5.0", "1db4": "7.0"}.items():
        assert pci_ids.identify("10de", device).arch == cc, device
    for device, gfx in {"738c": "gfx908", "740c": "gfx90a", "74a1": "gfx942", "75a0": "gfx950", "744c": "gfx1100",
                        "73bf": "gfx1030", "7550": "gfx1201", "15bf": "gfx1103"}.items():
        assert pci_ids.identify("1002", device).arch == gfx, device


def test_the_pci_table_regenerates_from_pci_ids_byte_for_byte(tmp_path):
    """The data file is what `python -m resolver.plan.knowledge.pci_ids` makes of its own entries (no hand edits)."""
    import re

    from resolver.core.toml import parse_toml

    data = parse_toml(pci_ids.DATA_FILE.read_text(), what="pci ids", fix="")
    lines = ["#", "#\tVersion: x", "10de  NVIDIA Corporation"] + [f"\t{d}  {e}" for d, e in data["nvidia"].items()] + \
        ["\t1aef  GA102 High Definition Audio Controller", "1002  Advanced Micro Devices, Inc. [AMD/ATI]"] + \
        [f"\t{d}  {e}" for d, e in data["amd"].items()]
    again = parse_toml(pci_ids.refresh("\n".join(lines), "x"), what="pci ids", fix="")
    assert again["nvidia"] == data["nvidia"] and again["amd"] == data["amd"]
    assert re.match(r"pci\.ids \d{4}\.\d\d\.\d\d", data["source"])
