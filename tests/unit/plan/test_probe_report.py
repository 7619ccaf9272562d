"""`probe --from-report FILE|-`: a profile from what a person pasted (tests/data/machines/report-*.txt, each
cited in tests/data/machines/report-sources.md), and planning from it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import DATA, cli

from resolver.core.errors import BadInput
from resolver.plan.probe.profile import HardwareProfile
from resolver.plan.probe.report import MAX_BYTES, profile_from_report, read_report

REPORTS = DATA / "machines"  # report-*.txt: pasted reports, cited in report-sources.md


def _report(name: str) -> HardwareProfile:
    return profile_from_report(read_report(str(REPORTS / f"report-{name}")))


def _gpus(info) -> list[tuple[str, str]]:
    return [(g.name, str(getattr(g, "compute_capability", None) or g.gfx_arch)) for g in info.gpus]


# --------------------------------------------------------------------------------- what it reads

def test_plain_nvidia_smi_paste_through_the_cli() -> None:
    out = cli.run("probe", "--json", "--from-report", str(REPORTS / "report-plain-nvidia-smi-tesla-t4.txt"), text=False)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("platform", "glibc", "python", "nvidia", "amd", "cuda_toolkit"):
        assert key in data
    assert data["nvidia"]["driver_version"] == "418.67" and data["nvidia"]["cuda_driver_version"] == "10.1"
    assert [(g["name"], g["compute_capability"], g["memory_mib"]) for g in data["nvidia"]["gpus"]] == [
        ("Tesla T4", "7.5", 15079)]
    assert data["assumed"]["python"].startswith("Python not in the report: assumed 3.12")
    assert data["glibc"] is None and any("glibc not in the report" in n for n in data["notes"])
    assert "report: nvidia-smi (GPU table)" in data["nvidia"]["sources"]


def test_nvidia_smi_q_paste() -> None:
    profile = _report("nvidia-smi-q-v100-hami.txt")
    assert (str(profile.nvidia.driver_version), str(profile.nvidia.cuda_driver_version)) == ("535.86.10", "12.2")
    assert _gpus(profile.nvidia) == [("Tesla V100-PCIE-16GB", "7.0")]
    assert profile.nvidia.gpus[0].uuid == "GPU-3a6ec8f0-24eb-1905-1f17-7bdb4e850ffa"


def test_header_of_the_610_series_and_a_name_cut_short() -> None:
    profile = _report("nvidia-smi-610-rtx3080-cut-name.txt")
    assert (str(profile.nvidia.driver_version), str(profile.nvidia.cuda_driver_version)) == ("610.43.03", "13.3")
    assert _gpus(profile.nvidia) == [("NVIDIA GeForce RTX 3080 ...", "8.6")]
    assert any("cut the name short" in s for s in profile.nvidia.sources)


def test_list_and_plain_together_take_names_from_the_list() -> None:
    profile = _report("nvidia-smi-L-and-plain-quadro-rtx4000.txt")
    assert (str(profile.nvidia.driver_version), str(profile.nvidia.cuda_driver_version)) == ("535.129.03", "12.2")
    assert _gpus(profile.nvidia) == [("Quadro RTX 4000", "7.5")] * 2
    assert [g.uuid for g in profile.nvidia.gpus] == ["GPU-c7b57be0-94ff-d352-a59b-d0ee00aeed43",
                                                     "GPU-d6de6afc-bdfe-75c4-5273-0544439153fc"]
    assert {"report: nvidia-smi -L", "report: nvidia-smi"} <= set(profile.sources)


def test_collect_env_of_an_amd_machine() -> None:
    profile = _report("collect-env-rocm-mi210.txt")
    assert profile.nvidia is None
    assert _gpus(profile.amd) == [("AMD Instinct MI210", "gfx90a")]
    assert (str(profile.python), str(profile.glibc), profile.platform) == ("3.9.19", "2.31", "linux-64")
    assert str(profile.amd.rocm_version) == "6.2" and "rocm" in dict(profile.assumed)
    assert "python" not in dict(profile.assumed) and "platform" not in dict(profile.assumed)


def test_rocm_smi_paste() -> None:
    profile = _report("rocm-smi-productname-mi300x-vf.txt")
    assert _gpus(profile.amd) == [("AMD Instinct MI300X VF", "gfx942")] * 4
    assert profile.amd.rocm_version is None and any("no ROCm version" in n for n in profile.notes)


def test_standard_input() -> None:
    text = (REPORTS / "report-nvidia-smi-q-v100-hami.txt").read_bytes()
    out = cli.run("probe", "--json", "--from-report", "-", stdin=text, text=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["nvidia"]["gpus"][0]["name"] == "Tesla V100-PCIE-16GB"


def test_profile_round_trips_through_json() -> None:
    profile = _report("collect-env-rocm-mi210.txt")
    assert HardwareProfile.from_json(json.loads(json.dumps(profile.to_json()))) == profile


# -------------------------------------------------------------------------------- planning from it

def test_plan_states_what_the_report_did_not_say(tmp_path: Path) -> None:
    profile = tmp_path / "profile.json"
    out = cli.run("probe", "--json", "--from-report",
                  str(REPORTS / "report-nvidia-smi-L-and-plain-quadro-rtx4000.txt"), text=False)
    assert out.returncode == 0, out.stderr
    profile.write_bytes(out.stdout)
    plan = cli.run("plan", "--json", "--profile", str(profile), text=False)
    assert plan.returncode == 0, plan.stderr
    data = json.loads(plan.stdout)
    assert data["backend"] == "cuda" and data["python"] == "3.12"
    assert "Python not in the report: assumed 3.12 (plan --python X.Y to choose)" in data["warnings"]
    assert any("glibc version unknown" in w for w in data["warnings"])
    (python_step,) = [s for s in data["trace"] if s["rule"] == "python"]
    assert python_step["because"].startswith("Python not in the report")
    chosen = json.loads(cli.run("plan", "--json", "--profile", str(profile), "--python", "3.11", text=False).stdout)
    assert chosen["python"] == "3.11" and not any(w.startswith("Python not in") for w in chosen["warnings"])


# ------------------------------------------------------------------------------ what it refuses

def _one_line_error(out: subprocess.CompletedProcess) -> str:
    stderr = out.stderr.decode()
    assert out.returncode == 3 and out.stdout == b""
    assert stderr.count("\n") == 1 and stderr.startswith("error: ") and "Traceback" not in stderr
    return stderr


def test_text_with_nothing_the_probe_knows_is_one_sentence() -> None:
    stderr = _one_line_error(cli.run("probe", "--from-report",
                                     str(REPORTS / "report-nvidia-smi-failed-no-driver.txt"), text=False))
    assert "holds no output the probe can read" in stderr and "Fix: paste" in stderr


def test_missing_file_and_too_large_file(tmp_path: Path) -> None:
    assert "does not exist" in _one_line_error(cli.run("probe", "--from-report", str(tmp_path / "none.txt"),
                                                       text=False))
    big = tmp_path / "big.txt"
    one = (REPORTS / "report-plain-nvidia-smi-tesla-t4.txt").read_bytes()
    big.write_bytes(one * (MAX_BYTES // len(one) + 1))
    assert "larger than 4 MiB" in _one_line_error(cli.run("probe", "--from-report", str(big), text=False))
    with pytest.raises(BadInput, match="NUL"):
        read_report(str(_with(tmp_path, b"\x00" + one)))


def test_from_report_with_sysroot_is_refused() -> None:
    stderr = _one_line_error(cli.run("probe", "--sysroot", str(REPORTS / "h100-8x-ubuntu2204"), "--from-report",
                                     str(REPORTS / "report-plain-nvidia-smi-tesla-t4.txt"), text=False))
    assert "cannot be combined" in stderr


def _with(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "report.txt"
    path.write_bytes(data)
    return path


def test_control_characters_are_never_printed_back(tmp_path: Path) -> None:
    """A real report with terminal escapes injected into a GPU name: nothing of them reaches the terminal."""
    real = (REPORTS / "report-plain-nvidia-smi-tesla-t4.txt").read_text()
    hostile = real.replace("Tesla T4 ", "Tesla T4\x1b]0;owned\x07\x1b[2J\u202e").encode()
    out = cli.run("probe", "--from-report", str(_with(tmp_path, hostile)), text=False)
    assert out.returncode == 0, out.stderr
    printed = out.stdout.decode()
    assert not any(ord(ch) < 0x20 and ch not in "\n\t" or ch == "\u202e" for ch in printed)
    assert "compute capability 7.5" in printed  # the name keeps its words, the escapes are gone or spelled out
