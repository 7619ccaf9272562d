"""The corpus: real machines from public bug reports, replayed through ``probe --sysroot``.

Each ``tests/data/machines/<name>/`` is a sysroot (docs/sysroot.md) built from one public report, with
``SOURCE.md`` citing it and ``expected.json`` holding what the report says the machine is.
"""

from __future__ import annotations

import json
import re

import pytest
from support import DATA, cli

from resolver.plan.probe import probe_machine

MACHINES_DIR = DATA / "machines"
MACHINES = sorted(p.name for p in MACHINES_DIR.iterdir() if (p / "_meta.toml").is_file())


def _expected(name: str) -> dict:
    return json.loads((MACHINES_DIR / name / "expected.json").read_text())


def _gpus(info: dict | None, key: str) -> list[tuple[str, str]] | None:
    return None if info is None else [(g["name"], g[key]) for g in info["gpus"]]


@pytest.mark.parametrize("name", MACHINES)
def test_machine_replays_as_reported(name: str) -> None:
    expected = _expected(name)
    got = probe_machine(MACHINES_DIR / name).to_json()
    for key in ("platform", "glibc", "python", "cuda_toolkit", "rocm_toolkit", "wsl", "container"):
        if key in expected:
            assert got[key] == expected[key], key
    if expected["nvidia"] is None:
        assert got["nvidia"] is None
    else:
        assert got["nvidia"]["driver_version"] == expected["nvidia"]["driver_version"]
        if expected["nvidia"]["cuda_driver_version"] is None and got["nvidia"]["cuda_driver_version_derived"]:
            # the report does not say it: the probe derives it from the driver, and says so
            from resolver.core.versions import DottedVersion
            from resolver.plan.knowledge import Knowledge

            derived = Knowledge.load().newest_cuda_for_driver(DottedVersion.parse(got["nvidia"]["driver_version"]))
            assert got["nvidia"]["cuda_driver_version"] == str(derived)
        else:
            assert got["nvidia"]["cuda_driver_version"] == expected["nvidia"]["cuda_driver_version"]
            assert not got["nvidia"]["cuda_driver_version_derived"]
        assert _gpus(got["nvidia"], "compute_capability") == _gpus(expected["nvidia"], "compute_capability")
        for key in ("memory_mib", "uuid"):  # checked where the machine's outputs print them
            if any(key in g for g in expected["nvidia"]["gpus"]):
                assert [g[key] for g in got["nvidia"]["gpus"]] == [g.get(key) for g in expected["nvidia"]["gpus"]], key
    if expected["amd"] is None:
        assert got["amd"] is None
    else:
        assert got["amd"]["rocm_version"] == expected["amd"]["rocm_version"]
        assert _gpus(got["amd"], "gfx_arch") == _gpus(expected["amd"], "gfx_arch")


@pytest.mark.parametrize("name", MACHINES)
def test_machine_cites_its_source(name: str) -> None:
    folder = MACHINES_DIR / name
    source = (folder / "SOURCE.md").read_text()
    url = re.search(r'^source = "([^"]+)"', (folder / "_meta.toml").read_text(), re.MULTILINE).group(1)
    assert url.startswith("https://") and url in source
    assert "Verbatim" in source and "Completed" in source


@pytest.mark.parametrize("name", [n for n in MACHINES if _expected(n).get("name_table")])
def test_capability_from_name_table_is_recorded(name: str) -> None:
    """Where no tool prints the compute capability, the profile says it came from the name table."""
    nvidia = probe_machine(MACHINES_DIR / name).nvidia
    for gpu in _expected(name)["name_table"]:
        assert any(gpu in s and "GPU name table" in s for s in nvidia.sources), nvidia.sources


def test_corpus_covers_the_required_machines() -> None:
    expected = {n: _expected(n) for n in MACHINES}
    nvidia_names = [g["name"] for e in expected.values() if e["nvidia"] for g in e["nvidia"]["gpus"]]
    amd_names = [g["name"] for e in expected.values() if e["amd"] for g in e["amd"]["gpus"]]
    amd_gfx = {g["gfx_arch"] for e in expected.values() if e["amd"] for g in e["amd"]["gpus"]}
    for needle in ("V100", "A100", "H100", "GTX 10", "RTX 30", "RTX 40", "RTX 50"):
        assert any(needle in n for n in nvidia_names), needle
    for needle in ("MI210", "MI300X", "RX 7900"):
        assert any(needle in n for n in amd_names), needle
    assert "gfx90a" in amd_gfx  # MI250X (read from KFD, so unnamed)
    assert any("mi250x" in n for n in MACHINES)
    rocm = {e["amd"]["rocm_version"][:3] for e in expected.values() if e["amd"]}
    assert {"5.7", "6.0", "6.1", "6.2"} <= rocm
    assert any(e["nvidia"] and len({g["compute_capability"] for g in e["nvidia"]["gpus"]}) > 1
               for e in expected.values()), "a node with two different NVIDIA GPUs"
    assert any(e["wsl"] for e in expected.values())
    assert any(e.get("container") and e["nvidia"] for e in expected.values())
    assert any(e["platform"].startswith("osx") for e in expected.values())
    assert any(e["platform"] == "linux-64" and not e["nvidia"] and not e["amd"] for e in expected.values())
    assert len(MACHINES) >= 15


def test_cli_replays_a_machine_with_the_contract_keys() -> None:
    out = cli.run("probe", "--json", "--sysroot", str(MACHINES_DIR / "h100-8x-ubuntu2204"), timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["nvidia"]["gpus"][0] == {**data["nvidia"]["gpus"][0], "name": "NVIDIA H100 80GB HBM3",
                                         "compute_capability": "9.0"}
    assert data["amd"] is None and data["cuda_toolkit"] is None and data["glibc"] == "2.35"


@pytest.mark.parametrize("name", MACHINES)
def test_profile_round_trips_through_json(name: str) -> None:
    """What `probe --json` prints is what `plan --profile` reads back, unchanged (driver spelling included)."""
    from resolver.plan.probe.profile import HardwareProfile

    profile = probe_machine(MACHINES_DIR / name)
    again = HardwareProfile.from_json(json.loads(json.dumps(profile.to_json())))
    assert again == profile and again.to_json() == profile.to_json()


def test_every_machine_is_plannable() -> None:
    """probe -> decide across the corpus: a plan for the hardware's own backend, or a refusal, never a crash."""
    from resolver.core.model import Request
    from resolver.plan.decide import decide
    from resolver.plan.knowledge import Knowledge

    knowledge = Knowledge.load()
    for name in MACHINES:
        profile = probe_machine(MACHINES_DIR / name)
        outcome = decide(profile, Request(), knowledge)
        assert (outcome.plan is None) != (outcome.refusal is None), name
        if outcome.plan is not None:
            family = "cuda" if profile.nvidia and profile.nvidia.gpus else "rocm" if profile.amd and profile.amd.gpus \
                else "cpu"
            assert outcome.plan.backend == family, (name, outcome.plan.backend)
