"""The typed readers of the in-environment answers (resolver/verify/inenv/answers.py): tolerant of partial
documents, and ``to_json`` gives back exactly the document read (the JSON the commands print)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support import DATA

from resolver.verify.inenv.answers import (
    Check,
    DeviceView,
    EnvironmentFacts,
    ExtensionState,
    TorchBuild,
    VerifyReport,
)

FIXTURES = DATA / "fixtures" / "inenv"


def _captured(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_a_partial_facts_document_reads_with_defaults():
    """An environment whose torch does not import answers only a few keys; everything else is a default."""
    doc = {"torch_import_error": "ModuleNotFoundError: No module named 'torch'", "python": "3.11.7",
           "packages": {"torch": None, "mamba-ssm": None}, "prefix": "/envs/cpu"}
    facts = EnvironmentFacts.from_json(doc)
    assert facts.torch is None and facts.device is None and facts.bytecode is None and facts.devices == ()
    assert facts.extensions == {} and facts.kernels == {} and facts.run_error is None
    assert facts.torch_import_error.startswith("ModuleNotFoundError") and facts.packages["torch"] is None
    assert facts.to_json() == doc and list(facts.to_json()) == list(doc)
    assert EnvironmentFacts.from_json({"run_error": "exit 127"}).to_json() == {"run_error": "exit 127"}
    assert EnvironmentFacts.from_json(None).to_json() == {}


def test_nested_values_are_typed_and_frozen():
    facts = EnvironmentFacts.from_json({
        "torch": {"version": "2.14.1+cu130", "cuda": "13.0", "arch_list": ["sm_90", "sm_100"]},
        "device": {"kind": "cuda", "devices": [{"name": "NVIDIA H200", "arch": "sm_90", "capability": "9.0"}]},
        "kernels": {"mamba-ssm": ["selective_scan_cuda", "mamba_ssm"]},
        "extensions": {"selective_scan_cuda": {"module": "selective_scan_cuda", "installed": True, "loaded": False,
                                               "owner": {"name": "mamba-ssm"}, "built_for_torch": "2.9",
                                               "abi": {"undefined_symbol": "_ZN3c10x", "namespace": "c10"}}}})
    assert isinstance(facts.torch, TorchBuild) and facts.torch.arch_list == ("sm_90", "sm_100")
    assert isinstance(facts.device, DeviceView) and facts.device.gpu and facts.devices[0].capability == "9.0"
    assert facts.kernels["mamba-ssm"] == ("selective_scan_cuda", "mamba_ssm")
    ext = facts.extensions["selective_scan_cuda"]
    assert isinstance(ext, ExtensionState) and ext.owner.name == "mamba-ssm" and ext.abi.namespace == "c10"
    assert ext.error is None and ext.built_for_archs == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.torch.version = "other"  # type: ignore[misc]


def test_values_built_in_code_write_every_field():
    assert TorchBuild(version="2.14.1+cpu").to_json() == {"version": "2.14.1+cpu", "cuda": None, "hip": None,
                                                          "cxx11_abi": None, "file": None, "arch_list": []}
    check = Check.from_json({"name": "load:x", "status": "pass", "detail": "loads", "built_for": ["sm_90"]})
    assert check.get("built_for") == ["sm_90"] and check.to_json()["built_for"] == ["sm_90"]


@pytest.mark.parametrize("name", ["facts-torch-cpu.json"])
def test_a_real_facts_document_round_trips_exactly(name):
    """Captured from ``python -m resolver.verify.inenv.facts`` in the suite's torch 2.14.1 environment."""
    doc = _captured(name)
    facts = EnvironmentFacts.from_json(doc)
    assert facts.torch is not None and facts.torch.version and facts.device is not None
    assert json.dumps(facts.to_json()) == json.dumps(doc)  # same keys, same order, same values
    assert EnvironmentFacts.from_json(facts.to_json()) == facts


def test_a_verify_report_round_trips_and_reads_its_checks():
    facts = _captured("facts-torch-cpu.json")
    doc = {"schema": 1, "mode": "verify",
           "checks": [{"name": "load:x", "status": "fail", "detail": "x does not load", "abi": None},
                      {"name": "logits:float32", "status": "pass", "detail": "close", "max_abs_diff": 1e-6},
                      {"name": "kernels", "status": "skip", "detail": "no GPU"}],
           "errors": [{"where": "library:float32", "error": "boom"}], "timings": {"import_torch_s": 1.5},
           "facts": facts, "device": {"used": "cpu", **facts["device"]}, "kernels": {"installed": []},
           "model": {"path": "/m"}, "inputs": {"batch": 1}, "library": {"name": "transformers", "uses_kernels": False},
           "ok": False}
    report = VerifyReport.from_json(doc)
    assert [c.name for c in report.with_status("fail")] == ["load:x"] and not report.ok and report.fatal is None
    assert report.device.get("used") == "cpu" and report.facts.torch.version == facts["torch"]["version"]
    assert report.checks[1].get("max_abs_diff") == 1e-6 and report.results == {}
    assert json.dumps(report.to_json()) == json.dumps(doc)
    fatal = VerifyReport.from_json({"ok": False, "fatal": "RuntimeError: x", "checks": []})
    assert fatal.fatal == "RuntimeError: x" and fatal.facts is None and fatal.errors == ()
