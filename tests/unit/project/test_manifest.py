"""pixi.toml: the shipped one and every one `lock` writes validate against pixi's schema; edits keep comments."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support import REPO, shipped_manifest

from resolver.core.errors import BadInput
from resolver.core.model import KernelChoice, Plan, TorchChoice, TorchSource
from resolver.core.platforms import TEAM_PLATFORMS
from resolver.core.toml import parse_toml
from resolver.project.manifest import Manifest
from resolver.project.sources import Sources, channel_url

SCHEMA = REPO.parent / "shared" / "schemas" / "pixi-manifest.schema.json"


def validate(text: str) -> list[str]:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(parse_toml(text, what="pixi.toml", fix=""))]


def test_pixis_schema_is_here_and_tells_a_bad_manifest_from_a_good_one():
    """The tests of this module validate every manifest they write against pixi's schema when it is
    beside the checkout (../shared); without it they check the form only, and this test says so."""
    if not SCHEMA.is_file():
        pytest.skip(f"pixi's manifest schema is not here ({SCHEMA}): this module's manifests were checked for "
                    "their form only, not against the schema")
    good = shipped_manifest()
    assert validate(good) == []
    assert validate(good.replace('platforms = ["linux-64"]', "platforms = 5", 1))  # the schema is live


def plan(backend: str, version: str | None, variant: str, torch: str = "2.13.0", platform: str = "linux-64") -> Plan:
    packages = (("python", "3.11.*"),) + ((("cuda-version", f"{version}.*"), ("cuda-nvcc", "*")) if backend == "cuda" else ())
    return Plan(backend=backend, backend_version=version, python="3.11", platform=platform, target=f"{backend}{version or ''}",
                torch=TorchChoice(torch, variant, TorchSource("pypi-index", f"https://download.pytorch.org/whl/{variant}"),
                                  local_version=variant),
                kernels=KernelChoice("none"), glibc="2.35", cuda_driver="12.8" if backend == "cuda" else None,
                conda_packages=packages)


def test_shipped_manifest_validates_and_is_the_resolvers_own_workspace():
    """The committed pixi.toml holds the default environment only (the resolver's tooling, with its own
    python); `lock --target T` adds the backend environments, so pixi.toml and pixi.lock hold the same set."""
    text = shipped_manifest()
    if SCHEMA.is_file():
        assert validate(text) == []
    manifest = Manifest.parse(text)
    assert manifest.environment_names() == ["default"]
    default = manifest.environment("default")
    assert dict(default.conda)["python"] and {"tomlkit", "py-rattler", "py-rattler-build"} <= {n for n, _ in default.pypi}
    assert [p.entry() for p in default.platforms] == ["linux-64"]
    data = parse_toml(text, what="pixi.toml", fix="")
    tasks = data["tasks"]
    for task in ("setup", "plan", "lock", "install", "verify", "doctor", "build-kernels", "patch", "bench", "test"):
        assert task in tasks, task
    assert all("python -m " in (t if isinstance(t, str) else t["cmd"]) for name, t in tasks.items() if name != "test")


@pytest.mark.parametrize("the_plan", [plan("cpu", None, "cpu"), plan("cuda", "12.6", "cu126"),
                                      plan("cuda", "13.0", "cu130"), plan("rocm", "6.4", "rocm6.4", "2.9.1"),
                                      plan("cpu", None, "cpu", platform="osx-arm64")],
                         ids=["cpu", "cuda12", "cuda13", "rocm6", "cpu-osx"])
def test_ensure_environment_on_a_new_manifest_is_pixis_current_form(the_plan):
    manifest = Manifest.new("demo")
    name = manifest.ensure_environment(the_plan)
    assert name == the_plan.env_name
    text = manifest.dumps()
    if SCHEMA.is_file():
        assert validate(text) == []
    spec = Manifest.parse(text).environment(name)
    assert f"torch=={the_plan.torch.requirement.split('==')[1]}" in spec.pypi_requirements()
    if the_plan.backend == "cpu":  # a team's machines: the plan's own and the workspace's others
        assert sorted(p.subdir for p in spec.platforms) == sorted(TEAM_PLATFORMS)
        assert manifest.optional == [(name, p) for p in TEAM_PLATFORMS if p != the_plan.platform]
        macos = Manifest.parse(text).environment(name, "osx-arm64")  # PyPI's unlabelled wheel: no other exists
        assert "torch==2.13.0" in macos.pypi_requirements() and macos.package_index("torch") is None
        manifest.ensure_environment(plan("cpu", None, "cpu", torch="2.14.1", platform=the_plan.platform))
        assert "torch==2.14.1" in manifest.environment(name, "osx-arm64").pypi_requirements()  # it follows the plan
    else:  # a GPU environment serves the machines its plan is for; nothing serves the others, which go
        assert [p.subdir for p in spec.platforms] == [the_plan.platform] and not manifest.optional
        manifest.drop_unserved()
        assert sorted({p.subdir for p in manifest.platforms().values()}) == [the_plan.platform]
    assert dict(spec.conda)["python"] == "3.11.*"
    feature = parse_toml(text, what="pixi.toml", fix="")["feature"][name]
    assert "system-requirements" not in feature
    if the_plan.backend == "rocm":
        assert spec.index_url == "https://download.pytorch.org/whl/rocm6.4"
    if the_plan.backend == "cuda":
        major = str(the_plan.backend_version.major)
        (platform,) = spec.platforms
        assert platform.name == f"linux-64-cuda{major}" and platform.cuda == major
        assert {"name": f"linux-64-cuda{major}", "platform": "linux-64", "cuda": major} in \
            parse_toml(text, what="pixi.toml", fix="")["workspace"]["platforms"]
        assert dict(spec.conda)["cuda-version"] == f"{the_plan.backend_version}.*"


def test_relocking_the_shipped_manifest_keeps_comments_and_only_changes_the_pin():
    text = shipped_manifest()
    manifest = Manifest.parse(text)
    manifest.ensure_environment(plan("cuda", "12.9", "cu129", torch="2.9.1"))
    first = manifest.dumps()
    assert [line for line in first.splitlines() if line.startswith("#")] == \
        [line for line in text.splitlines() if line.startswith("#")]
    manifest.ensure_environment(plan("cuda", "12.9", "cu129", torch="2.9.2"))
    second = manifest.dumps()
    if SCHEMA.is_file():
        assert validate(second) == []
    changed = [(a, b) for a, b in zip(first.splitlines(), second.splitlines()) if a != b]
    assert len(first.splitlines()) == len(second.splitlines()) and len(changed) == 1
    assert changed[0][1] == 'torch = {version = "==2.9.2+cu129", index = "https://download.pytorch.org/whl/cu129"}'


def test_unknown_environment_and_bad_toml_are_one_sentence(tmp_path):
    with pytest.raises(BadInput, match="no environment 'gpu'"):
        Manifest.parse(shipped_manifest()).environment("gpu")
    bad = tmp_path / "pixi.toml"
    bad.write_text("[workspace\nname = 1\n")
    with pytest.raises(BadInput, match="is not valid TOML"):
        Manifest.load(bad)


def test_sources_layers_flags_over_env_over_pixi_over_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.resolver]\nfind-links = ["./py-wheels"]\ntorch-index = "https://a/{variant}"\n')
    (tmp_path / "pixi.toml").write_text('[tool.resolver]\ntorch-index = "https://b/{variant}"\n'
                                        '[tool.resolver.mirrors]\n"https://conda.anaconda.org/conda-forge" = "./mirror/cf"\n')
    s = Sources.load(tmp_path, environ={})
    assert s.torch_index_for(None, "cu126") == "https://b/cu126"
    assert s.find_links == (str(tmp_path / "py-wheels"),)
    assert s.channels_for(["conda-forge"]) == [(tmp_path / "mirror" / "cf").as_uri() + "/"]
    s = Sources.load(tmp_path, environ={"RESOLVER_TORCH_INDEX": "https://c/{variant}",
                                        "RESOLVER_CONDA_CHANNELS": "/srv/a, /srv/b"})
    assert s.torch_index_for("https://default", "cpu") == "https://c/cpu"
    # conda-channels are mirrors of the manifest's channels, in order
    assert s.channels_for(["conda-forge", "bioconda"]) == ["file:///srv/a/", "file:///srv/b/"]
    assert s.channels_for(["conda-forge"]) == ["file:///srv/a/"]
    s = Sources.load(tmp_path, environ={"RESOLVER_TORCH_INDEX": "https://c/{variant}"},
                     flags={"torch-index": "https://d/{variant}"})
    assert s.torch_index_for(None, "rocm6.4") == "https://d/rocm6.4" and dict(s.origins)["torch-index"] == "command line"
    assert channel_url("conda-forge") == "https://conda.anaconda.org/conda-forge/"


def test_unknown_tool_resolver_key_is_refused(tmp_path):
    (tmp_path / "pixi.toml").write_text('[tool.resolver]\nchanels = ["x"]\n')
    with pytest.raises(BadInput, match="chanels"):
        Sources.load(tmp_path, environ={})


def test_a_new_cpu_environment_serves_the_teams_machines_and_an_upgrades_candidate_those_it_replaces_serves():
    """In a workspace listing linux-64, osx-arm64 and win-64, a new CPU environment is named for all three (macOS
    with PyPI's unlabelled torch); an upgrade's candidate for an environment that serves linux-64 alone is named
    for linux-64 alone, so a promotion never claims machines the old environment did not serve."""
    from resolver.project.manifest import Carry

    manifest = Manifest.parse(f'[workspace]\nname = "team"\nchannels = ["conda-forge"]\nplatforms = {json.dumps(TEAM_PLATFORMS)}\n')
    manifest.ensure_environment(plan("cpu", None, "cpu"))
    assert sorted(p.subdir for p in manifest.environment("cpu").platforms) == sorted(TEAM_PLATFORMS)
    manifest.leave_out("cpu", "osx-arm64")
    manifest.leave_out("cpu", "win-64")  # (their channels could not serve them): the workspace keeps listing them
    assert [p.name for p in manifest.environment("cpu").platforms] == ["linux-64"]
    assert sorted(manifest.platforms()) == sorted(TEAM_PLATFORMS)
    candidate = dataclasses.replace(plan("cpu", None, "cpu", torch="2.14.1"), environment="cpu-torch2-14")
    name = manifest.ensure_environment(candidate, carry=Carry("cpu", frozenset({"torch", "python"})))
    assert name == "cpu-torch2-14" and [p.name for p in manifest.environment(name).platforms] == ["linux-64"]
    assert not manifest.optional[2:]  # nothing more to try, nothing to leave out
