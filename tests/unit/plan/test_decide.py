"""Table-driven tests of resolver.plan.decide: one row per machine (a `probe --json` style profile dict),
request and expected outcome. Every rule of the decision tree and every example of issue 2 has a row."""

from __future__ import annotations

import json

import pytest
from support import cli, records
from support.decide_cases import CASES, Case
from support.profiles import A100, GTX1080TI, H100, MI250X, MI300X, T4, V100, amd, cpu, nvidia

from resolver.core.model import Plan, Request, Target
from resolver.core.versions import DottedVersion
from resolver.plan.decide import decide
from resolver.plan.knowledge import Knowledge
from resolver.plan.probe.profile import HardwareProfile

KNOWLEDGE = Knowledge.load()




@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_decide(case: Case) -> None:
    profile = HardwareProfile.from_json(case.profile)
    request = Request(target=Target.parse(case.target),
                      python=DottedVersion.parse(case.python) if case.python else None)
    outcome = decide(profile, request, KNOWLEDGE)
    trace_text = "\n".join(f"{t.rule} {t.result} {t.because}" for t in outcome.trace)
    assert outcome.trace, "every outcome explains itself"
    if case.refused is not None or (case.fix is not None and case.torch is None and case.variant is None):
        assert outcome.plan is None, f"expected a refusal, got {outcome.plan and outcome.plan.summary}"
        if case.refused:
            assert case.refused in outcome.refusal.message
        if case.fix:
            assert case.fix in (outcome.refusal.fix or "")
        assert outcome.refusal.code == 2
        return
    assert outcome.refusal is None, f"refused: {outcome.refusal}"
    plan = outcome.plan
    checks = {"backend": plan.backend, "torch": str(plan.torch.version), "variant": plan.torch.variant,
              "strategy": plan.kernels.strategy, "arch_list": plan.kernels.arch_list,
              "packages": {name: str(version) for name, version in plan.kernels.packages}, "patches": tuple(p.id for p in plan.patches),
              "runnable_here": plan.runnable_here, "toolkit": plan.kernels.toolkit,
              "source_kind": plan.torch.source.kind}
    for key, actual in checks.items():
        expected = getattr(case, key)
        if expected is not None:
            assert actual == expected, f"{key}: {actual!r} != {expected!r}"
    if case.conda != "unchecked":
        assert (plan.torch.conda.spec if plan.torch.conda else None) == case.conda
    if case.warning:
        assert any(case.warning in w for w in plan.warnings), plan.warnings
    for fragment in case.trace:
        assert fragment in trace_text, f"{fragment!r} not in trace:\n{trace_text}"
    if case.prebuilt is not None:
        assert tuple(w for _, w in plan.kernels.prebuilt_wheels) == case.prebuilt
    # invariants of every plan
    expected_python = case.env_python or case.python or f"{profile.python.major}.{profile.python.minor}"
    assert plan.summary and str(plan.python) == expected_python
    if plan.backend == "cpu":
        assert plan.kernels.strategy == "none" and not plan.kernels.packages
    else:
        if plan.kernels.strategy != "none":
            assert set(dict(plan.kernels.packages)) == {"causal-conv1d", "mamba-ssm"}
            assert plan.kernels.arch_list
    if plan.backend == "cuda" and plan.torch.source.kind == "pypi-index":
        assert plan.torch.source.url == f"https://download.pytorch.org/whl/{plan.torch.variant}"
        default = KNOWLEDGE.release(plan.torch.version).pypi_default == plan.torch.variant
        suffix = "" if default and plan.platform == "linux-64" else f"+{plan.torch.variant}"
        assert plan.torch.requirement == f"torch=={plan.torch.version}{suffix}"
    if plan.backend == "rocm":
        assert plan.torch.conda is None and plan.cuda_driver is None
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_enough_cases() -> None:
    assert len(CASES) >= 40


def test_decide_is_pure() -> None:
    profile = HardwareProfile.from_json(nvidia(GTX1080TI))
    first = decide(profile, Request(), KNOWLEDGE)
    second = decide(profile, Request(), KNOWLEDGE)
    assert first == second


def test_unconfirmed_rows_only_on_explicit_target() -> None:
    """torch 2.14's cpu row rests on the release-candidate matrix: auto skips it; 2.11's cu130 row too,
    but an explicit target that nothing confirmed satisfies may use it (with a warning)."""
    assert not next(v for v in KNOWLEDGE.release("2.14").variants if v.tag == "cpu").confirmed
    auto = decide(HardwareProfile.from_json(cpu()), Request(), KNOWLEDGE).plan
    assert str(auto.torch.version) == "2.13.0"
    assert any("not confirmed" in t.because for t in auto.trace)
    rocm = decide(HardwareProfile.from_json(amd(MI300X, rocm="7.14.0")), Request(), KNOWLEDGE)
    assert rocm.plan is None and "unconfirmed" in str(rocm.refusal)
    targeted = decide(HardwareProfile.from_json(amd(MI300X, rocm="7.14.0")),
                      Request(Target.parse("rocm7.14")), KNOWLEDGE).plan
    assert targeted.torch.variant == "rocm7.14" and any("unconfirmed" in w for w in targeted.warnings)


def test_every_rule_leaves_a_trace() -> None:
    plan = decide(HardwareProfile.from_json(amd(MI250X, rocm="6.0.2")), Request(), KNOWLEDGE).plan
    rules = {t.rule for t in plan.trace}
    assert {"python", "platform", "backend", "rocm-version", "torch-release", "rocm-patch", "kernels", "conda"} <= rules
    plan = decide(HardwareProfile.from_json(nvidia(GTX1080TI)), Request(), KNOWLEDGE).plan
    assert {"driver", "arch-coverage", "variant", "kernels-arch", "kernels"} <= {t.rule for t in plan.trace}


def test_plan_for_raises_the_refusal() -> None:
    from resolver.core.errors import Refusal
    from resolver.plan.planning import plan_for

    with pytest.raises(Refusal, match="CUDA 13 dropped sm_70"):
        plan_for(Request(Target.parse("cuda13.0")), HardwareProfile.from_json(nvidia(V100)))
    assert plan_for(Request(), HardwareProfile.from_json(cpu())).backend == "cpu"


def test_cli_json_and_refusal(tmp_path) -> None:
    path = tmp_path / "v100.json"
    path.write_text(json.dumps(nvidia(V100)))
    ok = cli.run("plan", "--profile", str(path), "--json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    for key in ("backend", "backend_version", "python", "torch", "kernels", "patches", "warnings", "trace"):
        assert key in data
    assert data["torch"]["variant"] == "cu126" and data["kernels"]["arch_list"] == ["7.0"]
    refused = cli.run("plan", "--profile", str(path), "--target", "cuda13.0", "--json")
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr + refused.stdout
    err = json.loads(refused.stdout)
    assert "CUDA 13 dropped sm_70" in err["error"] and err["because"]
    assert refused.stderr.strip().count("\n") == 0  # one line
    human = cli.run("plan", "--profile", str(path))
    assert human.returncode == 0 and "trace:" not in human.stdout and "cu126" in human.stdout
    assert "add --trace" in human.stdout
    traced = cli.run("plan", "--profile", str(path), "--trace")
    assert traced.returncode == 0 and traced.stdout.startswith(human.stdout.split("\n\nevery rule")[0])
    assert "trace:" in traced.stdout and traced.stdout != human.stdout


def test_what_the_plan_memo_leaves_out_of_its_key_changes_no_plan() -> None:
    from resolver.plan.planning import NOT_DECIDED_ON

    for machine in (cpu(), nvidia(V100), nvidia(H100), amd(MI250X, rocm="6.0.2")):
        plans = []
        for value in (1, 10**7):
            profile = HardwareProfile.from_json({**machine, **{k: value for k in NOT_DECIDED_ON}})
            plans.append(decide(profile, Request(), KNOWLEDGE).plan.to_json())
        assert plans[0] == plans[1]


def test_plan_remembers_its_answer_only_for_the_same_inputs(tmp_path, monkeypatch) -> None:
    """A second `plan` prints the remembered answer, byte for byte what deciding again prints; a memo
    of other inputs (another profile, another resolver package) is never taken."""
    from resolver.core.model import Request
    from resolver.plan import planning

    path = tmp_path / "h100.json"
    path.write_text(json.dumps(nvidia(H100)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first, second = (cli.run("plan", "--profile", str(path), "--json") for _ in range(2))
    assert first.returncode == 0 and first.stdout == second.stdout
    memos = list((tmp_path / "cache" / "mamba-resolver" / "plans").glob("*.json"))
    assert len(memos) == 1
    human = cli.run("plan", "--profile", str(path), "--quiet")
    assert human.returncode == 0 and "trace:" not in human.stdout and "kernels" in human.stdout
    assert "trace:" in cli.run("plan", "--profile", str(path),
                               "--trace").stdout  # rendered from the remembered plan as from a decided one
    profile = HardwareProfile.from_file(path)
    memo = planning.PlanMemo(profile, "auto", None)
    assert memo.file == memos[0] and {"schema_version": 1, **memo.recall()} == json.loads(first.stdout)
    assert {"schema_version": 1, **planning.plan_for(Request(), profile).to_json()} == json.loads(first.stdout)  # the same memo
    monkeypatch.setattr(planning, "package_digest", lambda: "0" * 20)  # the installed resolver changed
    assert planning.PlanMemo(profile, "auto", None).recall() is None
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    other = records.read(memos[0])
    other["inputs_digest"] = "0" * 64  # a colliding file written for other inputs
    other["value"]["backend"] = "wrong"
    records.plant(memos[0], other)
    assert json.loads(cli.run("plan", "--profile", str(path), "--json").stdout) == json.loads(first.stdout)


def test_the_plan_memo_is_keyed_by_every_file_of_the_package(tmp_path, monkeypatch) -> None:
    """Any file of the resolver package, whatever decide imports, is part of the key: a copy of the
    package with one byte changed in a module no list names gives another key."""
    import shutil

    from resolver.plan import planning

    copy = tmp_path / "resolver"
    shutil.copytree(planning.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(planning, "PACKAGE", copy)
    before = planning.package_digest()
    assert planning.package_digest() == before
    module = copy / "plan" / "decide" / "context.py"
    module.write_text(module.read_text() + "\n")
    edited = planning.package_digest()
    table = copy / "plan" / "knowledge" / "data" / "gpus.toml"
    table.write_text(table.read_text().replace("H100", "H1OO", 1))
    assert len({before, edited, planning.package_digest()}) == 3


def test_plan_for_gives_the_same_plan_from_its_memo(tmp_path, monkeypatch) -> None:
    """lock and setup take plans through plan_for: the remembered plan equals the decided one, for
    every kind of plan (CPU, CUDA with kernels, ROCm with header fixes)."""
    from resolver.plan.planning import plan_for

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for machine in (cpu(), nvidia(V100), nvidia(H100), amd(MI250X, rocm="6.0.2")):
        profile = HardwareProfile.from_json(machine)
        decided = decide(profile, Request(), KNOWLEDGE).plan
        assert plan_for(Request(), profile) == decided  # decided, then remembered
        assert plan_for(Request(), profile) == decided  # from the memo
    assert len(list((tmp_path / "mamba-resolver" / "plans").glob("*.json"))) == 4


def test_cli_bad_python(tmp_path) -> None:
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(cpu()))
    bad = cli.run("plan", "--profile", str(path), "--python", "three")
    assert bad.returncode != 0 and "--python" in bad.stderr and "Traceback" not in bad.stderr


def test_requested_python_is_never_swapped() -> None:
    outcome = decide(HardwareProfile.from_json(nvidia(V100, python="3.12.1")),
                     Request(python=DottedVersion.parse("3.8")), KNOWLEDGE)
    assert outcome.plan is None and "3.8" in outcome.refusal.message


def test_conda_forge_build_chosen_for_the_gpus() -> None:
    """When conda-forge's builds of the chosen torch are known, the spec names the CUDA build whose
    arch list covers the GPUs (12.9 for a GTX 1080 Ti: conda-forge's 13.0 build starts at sm_75)."""
    import dataclasses

    from resolver.plan.knowledge import CondaForgeBuild

    cf = KNOWLEDGE.conda_forge
    extra = CondaForgeBuild("2.14.1", "linux-64", (DottedVersion.parse("12.9"), DottedVersion.parse("13.0")), "test")
    knowledge = dataclasses.replace(KNOWLEDGE, conda_forge=cf._replace(builds=cf.builds + (extra,)))
    old = decide(HardwareProfile.from_json(nvidia(GTX1080TI)), Request(), knowledge).plan
    assert old.torch.conda.spec == "pytorch 2.14.1 cuda129*"
    new = decide(HardwareProfile.from_json(nvidia(H100)), Request(), knowledge).plan
    assert new.torch.conda.spec == "pytorch 2.14.1 cuda130*"


def test_pypi_default_build_is_pinned_without_local_label() -> None:
    """2.14.1's PyPI wheel is the cu130 build (inspected first-hand), so a cu130 plan pins torch==2.14.1;
    every other variant keeps its +label so pip cannot pick PyPI's different default build."""
    elsewhere = decide(HardwareProfile.from_json(cpu()), Request(Target.parse("cuda13.0")), KNOWLEDGE).plan
    assert elsewhere.torch.requirement == "torch==2.14.1"
    assert any(t.rule == "torch-pin" for t in elsewhere.trace)
    h100 = decide(HardwareProfile.from_json(nvidia(H100)), Request(), KNOWLEDGE).plan
    assert h100.torch.requirement == "torch==2.14.1+cu132"
    cpu_plan = decide(HardwareProfile.from_json(cpu()), Request(), KNOWLEDGE).plan
    assert cpu_plan.torch.requirement == "torch==2.13.0+cpu"
    arm = decide(HardwareProfile.from_json(nvidia(("Orin (nvgpu)", "8.7"), platform="linux-aarch64")), Request(),
                 KNOWLEDGE).plan
    assert arm.torch.requirement.endswith("+" + arm.torch.variant)


def test_ptx_runs_forward_only_with_the_full_driver_floor() -> None:
    """A GPU newer than every cubin runs the wheel's PTX, JIT-compiled by the driver, which needs the
    toolkit's full driver floor (minor-version compatibility is not enough for PTX)."""
    import dataclasses

    release = KNOWLEDGE.release("2.14")
    variant = next(v for v in release.variants if v.tag == "cu126" and "linux-64" in v.platforms)
    ptx_variant = variant._replace(archs=("8.0",), ptx=("8.0",))  # kernels only as sm_80 cubins + compute_80 PTX
    only = release._replace(variants=(ptx_variant,))
    knowledge = dataclasses.replace(KNOWLEDGE, releases=(only,))
    new_driver = decide(HardwareProfile.from_json(nvidia(H100, driver="560.35.03")), Request(), knowledge)
    assert new_driver.plan.torch.variant == "cu126"
    assert any("compute_80 PTX, JIT-compiled" in t.because for t in new_driver.trace)
    old_driver = decide(HardwareProfile.from_json(nvidia(H100, driver="550.54.15")), Request(), knowledge)
    assert old_driver.plan is None and "only through PTX" in old_driver.refusal.message
    assert "560.28.03" in old_driver.refusal.message  # CUDA 12.6's full floor
    # nothing runs backwards across majors: PTX for 8.0 does not serve a 7.5 GPU
    t4 = decide(HardwareProfile.from_json(nvidia(T4)), Request(), knowledge)
    assert t4.plan is None


@pytest.mark.parametrize("nvcc,source", [(None, "missing"), ("11.8.89", "system"), ("12.4.131", "missing")])
def test_a_cuda_major_conda_forge_has_no_compiler_for_builds_with_the_machines_nvcc(nvcc, source) -> None:
    """conda-forge packages no CUDA 11 nvcc (its split toolkit starts at 12): a cu118 plan asks for no toolkit
    package and promises only an nvcc 11.x the probe found, else says it is missing (setup refuses before
    installing anything); a CUDA 12+ plan takes the environment's own nvcc whatever the machine has."""
    assert not KNOWLEDGE.conda_forge.toolkit_specs(DottedVersion.parse("11.8"))
    plan = decide(HardwareProfile.from_json(nvidia(A100, driver="470.82.01", cuda_toolkit=nvcc)), Request(),
                  KNOWLEDGE).plan
    assert plan.torch.variant == "cu118" and plan.kernels.strategy == "build"
    assert plan.kernels.toolkit_source == source and plan.kernels.toolkit == "nvcc 11.8"
    assert set(dict(plan.conda_packages)) == {"python", "pip"}
    assert any("no CUDA 11 compiler" in t.because for t in plan.trace if t.rule == "environment")
    assert any("need nvcc 11.x" in w for w in plan.warnings) == (source == "missing")
    newer = decide(HardwareProfile.from_json(nvidia(H100, cuda_toolkit=nvcc)), Request(), KNOWLEDGE).plan
    assert newer.kernels.toolkit_source == "environment" and "cuda-nvcc" in dict(newer.conda_packages)
    other = decide(HardwareProfile.from_json(cpu()), Request(Target.parse("cuda11.8")), KNOWLEDGE).plan
    assert other.kernels.toolkit_source == "target" and "on the target machine" in other.summary


def test_an_edited_plan_memo_never_changes_the_plan_printed(tmp_path) -> None:
    """The memo is a pure speed-up: a remembered plan edited on disk (its torch pin changed, whether its
    seal is kept or written again without the user's key) reads as absent, and `plan` prints the pin it
    decides again."""
    profile = tmp_path / "cpu.json"
    profile.write_text(json.dumps(cpu()))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = cli.run("plan", "--profile", str(profile), "--json", env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    torch = json.loads(first.stdout)["torch"]
    memos = list((tmp_path / "cache" / "mamba-resolver" / "plans").glob("*.json"))
    assert len(memos) == 1
    text = memos[0].read_text()
    pin = json.dumps(torch["version"]) if isinstance(torch, dict) and "version" in torch else None
    assert pin and pin in text
    for edited in (text.replace(pin, '"1.0"'), text.split("\n", 1)[1].replace(pin, '"1.0"')):  # seal kept, dropped
        memos[0].write_text(edited)
        again = cli.run("plan", "--profile", str(profile), "--json", env=env)
        assert again.returncode == 0 and json.loads(again.stdout)["torch"] == torch
