"""pixi.toml edited by add/remove through the one writer: the line written into the feature's table and
everything else kept (comments, order, the other features); an environment's features as pixi sees them;
-e NAME checked against the environments pixi.toml declares."""

from __future__ import annotations

import pytest
from support import projects

from resolver.core.errors import BadInput, UsageError
from resolver.project.manifest import Manifest
from resolver.project.paths import ProjectPaths
from resolver.project.pixi_toml import check_environment_name
from resolver.workflows.dependencies import Wanted

TEXT = """\
# my workspace
[workspace]
name = "x"
channels = ["conda-forge"]
platforms = ["linux-64"]

[dependencies]
python = "3.11.*"

[feature.cpu.dependencies]
python = "3.11.*"  # the environment's own python

[feature.cpu.pypi-dependencies]
torch = { version = "==2.13.0+cpu", index = "https://download.pytorch.org/whl/cpu" }
Typing_Extensions = "*"

[feature.extra.pypi-dependencies]
rich = "*"

[environments]
cpu = { features = ["cpu"], solve-group = "cpu", no-default-feature = true }
both = ["cpu", "extra"]
"""


def test_a_dependency_is_written_into_the_feature_and_everything_else_is_kept():
    m = Manifest.parse(TEXT)
    assert m.set_dependency("cpu", "tabulate", ">=0.9", pypi=True) is None
    m.set_dependency("cpu", "rich", {"version": "*", "extras": ["jupyter"]}, pypi=True)
    m.set_dependency("cpu", "zlib", "*", pypi=False)
    text = m.dumps()
    assert text.startswith(TEXT.split("[feature.cpu.pypi-dependencies]")[0].replace(
        'python = "3.11.*"  # the environment\'s own python\n', 'python = "3.11.*"  # the environment\'s own python\nzlib = "*"\n'))
    again = Manifest.parse(text)
    assert again.dependencies("cpu", pypi=True)["tabulate"] == ">=0.9"
    assert {"tabulate>=0.9", "typing_extensions", "torch==2.13.0+cpu"} <= set(again.environment("cpu").pypi_requirements())
    assert "rich[jupyter]" in again.environment("cpu").pypi_requirements()
    assert again.dependencies("extra", pypi=True) == {"rich": "*"}  # the other feature is untouched


def test_a_dependency_is_found_by_its_normalised_name_and_removed():
    m = Manifest.parse(TEXT)
    assert m.drop_dependency("cpu", "typing-extensions", pypi=True)
    assert not m.drop_dependency("cpu", "typing-extensions", pypi=True)
    assert not m.drop_dependency("cpu", "torch", pypi=False)  # a PyPI one is not a conda one
    assert "Typing_Extensions" not in m.dumps() and "# my workspace" in m.dumps()


def test_the_features_of_an_environment_are_pixis():
    m = Manifest.parse(TEXT)
    assert m.features_of("cpu") == ["cpu"]
    assert m.features_of("both") == ["cpu", "extra", "default"]
    assert m.features_of("default") == ["default"]
    assert m.environments_with("cpu") == ["both", "cpu"]
    with pytest.raises(BadInput, match="no feature 'nosuch'"):
        m.dependencies("nosuch", pypi=True)


@pytest.mark.parametrize(("text", "pypi", "name", "spec"), [
    ("tabulate", True, "tabulate", "*"), ("tabulate>=0.9", True, "tabulate", ">=0.9"),
    ("rich[jupyter]==13.*", True, "rich", {"version": "==13.*", "extras": ["jupyter"]}),
    ("numpy", False, "numpy", "*"), ("numpy 1.26.*", False, "numpy", "1.26.*"), ("numpy>=1.26", False, "numpy", ">=1.26"),
])
def test_what_a_name_on_the_command_line_writes(text, pypi, name, spec):
    assert Wanted.parse(text, pypi=pypi) == Wanted(name, spec)


@pytest.mark.parametrize("text", ["tabulate; python_version<'3'", "x @ https://example.org/x.whl", "not a name!"])
def test_a_requirement_add_does_not_write_is_one_sentence(text):
    with pytest.raises(BadInput):
        Wanted.parse(text, pypi=True)


def test_an_environment_name_pixi_toml_does_not_declare_is_refused_naming_those_it_does(tmp_path):
    project = ProjectPaths(projects.project(tmp_path, TEXT))
    check_environment_name(project, "cpu")
    check_environment_name(project, None)
    with pytest.raises(UsageError) as refused:
        check_environment_name(project, "nosuch")
    assert refused.value.message == "no environment 'nosuch'; pixi.toml has: both, cpu"
    (project.env("beside") / "conda-meta").mkdir(parents=True)  # installed here: a name it may use
    check_environment_name(project, "beside")


def test_an_environment_only_pixi_lock_holds_is_one_install_may_name(tmp_path):
    from resolver.lock.lockfile import LockedEnv, LockedPlatform, render_lock

    bare = '[workspace]\nname = "t"\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n'
    locked = LockedEnv("cpu", LockedPlatform("linux-64", "linux-64", ()), (), ())
    root = projects.project(tmp_path, bare)
    (root / "pixi.lock").write_text(render_lock([locked], root))
    project = ProjectPaths(root)
    check_environment_name(project, "cpu")
    with pytest.raises(UsageError) as refused:
        check_environment_name(project, "gpu")
    assert refused.value.message == "no environment 'gpu'; pixi.toml has: default (and pixi.lock: cpu)"
