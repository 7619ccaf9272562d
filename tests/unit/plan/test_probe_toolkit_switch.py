"""A toolkit's remembered answer is keyed by what its compiler really is: after ``/usr/local/cuda`` (here a
link in a temporary folder) is switched to another toolkit, the probe reports the new version, whether
nvcc is reached through a wrapper script, through the link on PATH, or through ``CUDA_HOME``; and while
nothing changes, nvcc is asked once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resolver.plan.probe import system
from resolver.plan.probe.system import LiveSystem
from resolver.plan.probe.toolkits import find_cuda, parse_nvcc_version


def _toolkit(root: Path, version: str) -> None:
    """A CUDA toolkit folder whose nvcc answers like the real one and counts how often it is asked (a line
    in the file ``$ASKED`` names)."""
    bin_dir = root / f"cuda-{version}" / "bin"
    bin_dir.mkdir(parents=True)
    (root / f"cuda-{version}" / "include").mkdir()
    (root / f"cuda-{version}" / "include" / "cuda_runtime_api.h").write_text("")
    nvcc = bin_dir / "nvcc"
    nvcc.write_text("#!/bin/sh\necho x >> \"$ASKED\"\n"
                    f"echo 'Cuda compilation tools, release {version}, V{version}.85'\n")
    nvcc.chmod(0o755)


def _switch(link: Path, target: Path) -> None:
    """Point ``link`` at ``target`` the way an administrator does (a new link renamed over the old)."""
    fresh = link.with_name(link.name + ".new")
    fresh.symlink_to(target)
    os.replace(fresh, link)


@pytest.fixture()
def machine(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.setattr(system, "_ANSWERS", [])  # this process's answers: read again from the user's cache
    asked = tmp_path / "asked"
    for version in ("12.4", "12.6"):
        _toolkit(tmp_path, version)
    (tmp_path / "cuda").symlink_to(tmp_path / "cuda-12.4")
    wrappers = tmp_path / "wrappers"
    wrappers.mkdir()
    (wrappers / "nvcc").write_text(f'#!/bin/sh\nexec {tmp_path / "cuda" / "bin" / "nvcc"} "$@"\n')
    (wrappers / "nvcc").chmod(0o755)
    (wrappers / "nvcc-home").write_text('#!/bin/sh\nexec "$CUDA_HOME/bin/nvcc" "$@"\n')
    (wrappers / "nvcc-home").chmod(0o755)
    return tmp_path, asked


def _reported(environ: dict[str, str]) -> str | None:
    """The version the probe reports (find_cuda: CUDA_HOME's nvcc first, then the one on PATH)."""
    system._ANSWERS.clear()  # as a new process would: only the user's cache carries answers over
    found = find_cuda(LiveSystem(environ))
    return found.version if found else None


def _answered(environ: dict[str, str]) -> str | None:
    """What the nvcc on PATH answers (through the same remembered answers), CUDA_HOME left to it."""
    system._ANSWERS.clear()
    result = LiveSystem(environ).run(["nvcc", "--version"])
    return parse_nvcc_version(result.stdout) if result is not None else None


@pytest.mark.parametrize("reach", ["wrapper", "link-on-path", "wrapper-reading-cuda-home"])
def test_switching_the_toolkit_link_gives_the_new_version(machine, reach):
    root, asked = machine
    if reach == "wrapper":
        environ = {"PATH": str(root / "wrappers"), "ASKED": str(asked)}
    elif reach == "link-on-path":
        environ = {"PATH": str(root / "cuda" / "bin"), "ASKED": str(asked)}
    else:
        (root / "wrappers" / "nvcc-home").rename(root / "wrappers" / "nvcc")
        environ = {"PATH": str(root / "wrappers"), "CUDA_HOME": str(root / "cuda"), "ASKED": str(asked)}
    ask = _answered if reach == "wrapper-reading-cuda-home" else _reported
    assert ask(environ) == "12.4.85"
    times = len(asked.read_text().splitlines())
    assert ask(environ) == "12.4.85"
    assert len(asked.read_text().splitlines()) == times  # nothing changed: the remembered answer
    _switch(root / "cuda", root / "cuda-12.6")
    assert ask(environ) == "12.6.85"
    _switch(root / "cuda", root / "cuda-12.4")
    assert ask(environ) == "12.4.85"


def test_a_toolkit_variable_is_part_of_the_key(machine):
    root, asked = machine
    environ = {"PATH": str(root / "wrappers"), "ASKED": str(asked)}
    assert _reported(environ) == "12.4.85"
    (root / "wrappers" / "nvcc").write_text('#!/bin/sh\nexec "$CUDA_HOME/bin/nvcc" "$@"\n')  # a new wrapper: new bytes
    assert _answered({**environ, "CUDA_HOME": str(root / "cuda-12.6")}) == "12.6.85"
    assert _answered({**environ, "CUDA_HOME": str(root / "cuda-12.4")}) == "12.4.85"
