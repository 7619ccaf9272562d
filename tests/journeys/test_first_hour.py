"""The first hour of a user: the words are true, every suggested command runs, caveats stay visible,
long steps show progress, the environment can be lived in. (The whole tour in a fresh clone is
tests/journeys/test_walkthrough.py.)"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support import DATA, REPO, cli, shipped_manifest
from support.newcomer import (
    RUN_TIME,
    commands_in_source,
    doubled_words,
    refusal,
    refused_suggestions,
    suggested_commands,
)

from resolver.cli import build_parser

DOUBLES = DATA / "doubles"
CPU = {"platform": "linux-64", "glibc": "2.36", "python": "3.11.7", "nvidia": None, "amd": None, "cuda_toolkit": None}


# ---- every suggested command is accepted by the command it names --------------------------------
def _refused_only_a_run_time_value(command: str, why: str) -> bool:
    """Whether the parser refused only what stands for a value known at run time (a choice, a platform, flags
    built from names): the tests that print the message check those."""
    words = [w for w in command.split() if w.endswith(RUN_TIME) and w != "resolver"]
    return (f"'{RUN_TIME}'" in why or f"arguments: {RUN_TIME}" in why
            or any(f"arguments: {w}" in why for w in words if w.startswith("--")))


def test_every_command_the_code_suggests_is_accepted_by_the_cli():
    """Each `python -m resolver ...` written into a message anywhere in the package parses."""
    found = commands_in_source(REPO / "resolver")
    assert len(found) > 40  # the sweep does see the messages
    bad = [f"{file}:{line}: {command}: {why}" for file, line, command in found
           if (why := refusal(command)) and not _refused_only_a_run_time_value(command, why)]
    assert not bad, "\n".join(bad)


def test_the_checker_catches_a_flag_the_command_refuses():
    assert refusal("python -m resolver setup --target rocm6.0 --find-links DIR") is None
    assert "unrecognized arguments: --frobnicate" in refusal("python -m resolver setup --frobnicate")
    assert suggested_commands("Fix: run `python -m resolver lock --channel DIR`, then "
                              "python -m resolver install --env cpu && python -m resolver verify.") == [
        "python -m resolver lock --channel DIR", "python -m resolver install --env cpu", "python -m resolver verify"]


def test_setup_takes_the_source_flags_its_refusals_name():
    """`setup --target rocm6.0` where the PyTorch index is out of reach names --find-links/--torch-index:
    setup takes them (as lock does) and they mean what they mean to lock."""
    args = build_parser().parse_args(["setup", "--target", "rocm6.0", "--find-links", "/w", "--torch-index", "U",
                                      "--channel", "C", "--extra-index-url", "E"])
    assert (args.find_links, args.torch_index, args.channel, args.extra_index_url) == (["/w"], "U", ["C"], ["E"])


def _options(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o: a for a in sub.choices[command]._actions for o in a.option_strings if o.startswith("--")}


def _kind(convert) -> str:
    """What a flag's value is read as: text (a str or a path alike), or the named converter's."""
    return "text" if convert in (None, str, Path) else getattr(convert, "__name__", repr(convert))


def test_a_flag_means_the_same_on_every_command_that_has_it():
    """Same metavar, type and choices wherever a flag appears; the source flags have the same words."""
    from resolver.cli import COMMANDS

    seen: dict[str, list[tuple[str, argparse.Action]]] = {}
    for command in COMMANDS:
        for flag, action in _options(command).items():
            seen.setdefault(flag, []).append((command, action))
    # --to names where each command goes, as the contract spells it: a channel folder for `channel publish`,
    # an environment for `rollback`
    shared = {flag: uses for flag, uses in seen.items() if len(uses) > 1 and flag not in ("--help", "--to")}
    assert {"--env", "--target", "--sysroot", "--channel", "--find-links", "--python", "--profile"} <= set(shared)
    for flag, uses in shared.items():
        forms = {(a.metavar, _kind(a.type), tuple(a.choices or ())) for _, a in uses}
        assert len(forms) == 1, f"{flag}: {[(c, a.metavar, a.type) for c, a in uses]}"
    for flag in ("--channel", "--find-links", "--torch-index", "--extra-index-url"):
        assert len({a.help for _, a in shared[flag]}) == 1, flag
    assert all("-e" in a.option_strings for _, a in shared["--env"])  # as pixi spells it, everywhere


# ---- the words are true ------------------------------------------------------------------------
def test_plan_trace_adds_the_trace_and_plain_plan_says_how_to_get_it():
    code, brief, _ = cli.in_process("plan", "--target", "cpu")
    code2, traced, _ = cli.in_process("plan", "--target", "cpu", "--trace")
    assert code == code2 == 0
    assert "trace:" not in brief and "add --trace" in brief
    assert "trace:" in traced and "torch-release" in traced and len(traced) > len(brief)


def test_plan_takes_sysroot_like_probe_and_doctor(tmp_path):
    code, out, err = cli.in_process("plan", "--sysroot", str(DOUBLES / "h100-1x-driver580"), "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["backend"] == "cuda" and plan["kernels"]["arch_list"] == ["9.0"]
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(CPU))
    code, _, err = cli.in_process("plan", "--sysroot", str(DOUBLES / "h100-1x-driver580"), "--profile", str(profile))
    assert code == 2 and "cannot be combined" in err


@pytest.mark.parametrize("asked", ["cuda12.5", "cuda14.0", "cuda12.3"])
def test_a_cuda_refusal_names_every_target_that_plans_and_only_those(asked):
    code, _, err = cli.in_process("plan", "--target", asked)
    assert code == 2
    named = sorted(set(re.findall(r"cuda\d+\.\d+", err.split("Fix:", 1)[1])), key=lambda t: [int(p) for p in t[4:].split(".")])
    assert {"cuda11.8", "cuda12.4", "cuda12.6"} <= set(named)  # they plan, so they are named
    for target in named:
        assert cli.in_process("plan", "--target", target)[0] == 0, target
    if asked == "cuda12.5":
        assert "use --target cuda12.4 or cuda12.6" in err  # the nearest below and above come first


@pytest.mark.parametrize("target", ["cpu", "rocm6.0", "cuda13.0", "cuda12.6"])
def test_setup_lines_repeat_no_word(tmp_path, target):
    project = tmp_path / "p"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("setup", "--target", target, "--dry-run", project=project, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not doubled_words(done.stdout + done.stderr)
    assert not refused_suggestions(done.stdout + done.stderr)
    assert done.stdout.startswith(f"mamba-resolver setup --dry-run in {project}: the steps that would run")
    assert "dry run: nothing was changed; a real run would run lock" in done.stdout
    assert not (project / ".resolver" / "logs").exists()  # a dry run writes nothing, not even a log


def test_no_help_text_says_pip_where_uv_runs():
    from resolver.cli import COMMANDS

    for command in COMMANDS:
        code, out, _ = cli.in_process(command, "--help")
        assert code == 0 and not re.search(r"via pip|pip again|run pip", out), command
    assert "uv" in cli.in_process("install", "--help")[1] and "uv" in cli.in_process("lock", "--help")[1]


# ---- caveats are visible -----------------------------------------------------------------------
def test_a_step_with_a_caveat_is_not_ticked_and_the_summary_repeats_it_with_its_fix(tmp_path, capsys):
    from resolver.workflows.setup import SetupResult, summary_text
    from resolver.workflows.steps import Caveat, StepLog, StepReport

    log = StepLog(log_file=tmp_path / "setup.log")
    caveat = Caveat.from_note("pixi.lock records x.whl at a path of this machine. Fix: run `python -m resolver lock`")
    log.add(StepReport("lock", "done", "locked environment cpu into pixi.lock", 1.0, caveats=(caveat,)))
    log.add(StepReport("install", "done", "installed cpu", 2.0))
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith("  ! lock") and "1 caveat, listed at the end" in shown[0] and "✓" not in shown[0]
    assert shown[1].startswith("  ✓ install")
    result = SetupResult(steps=log.reports, log_file=log.log_file)
    text = summary_text(result)
    assert "1 caveat:\n  ! lock: pixi.lock records x.whl at a path of this machine\n" \
           "    Fix: run `python -m resolver lock`" in text
    assert json.loads(json.dumps(log.reports[0].to_json()))["caveats"] == [caveat.to_json()]


def test_a_failed_step_prints_its_error_once_and_the_log_keeps_it(tmp_path):
    """The ROCm index is out of reach here: the lock fails; its ~500-character sentence is printed once
    (the `error:` line), and the log file holds it with the steps."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("setup", "--target", "rocm6.0", project=project, timeout=600)
    assert done.returncode == 3
    shown = done.stdout + done.stderr
    sentence = next(line for line in done.stderr.splitlines() if line.startswith("error: "))[len("error: "):]
    assert shown.count(sentence[:80]) == 1
    assert "✗ lock     failed" in done.stdout and "(the error follows)" in done.stdout
    assert not refused_suggestions(shown)
    (log,) = (project / ".resolver" / "logs").glob("setup-*.log")
    text = log.read_text()
    assert sentence[:80] in text and "✗ lock     failed" in text


# ---- progress ----------------------------------------------------------------------------------
def test_a_heartbeat_reports_quiet_work_with_an_estimate_from_last_time(capsys, monkeypatch):
    from resolver.core import ui

    monkeypatch.setattr(ui, "HEARTBEAT_S", 0.05)
    state = {"done": 0}

    def poll():
        state["done"] += 1
        return state["done"], 10, "compiling"

    out = ui.Output()
    with out.heartbeat("tiny-ext: translation units", poll, expected_s=600.0):
        time.sleep(1.1)  # the closing line is said for work that took a second or more
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2  # not on a terminal: a line every HEARTBEAT_S, and the last one
    assert all("(10m00s expected from the last run)" in line for line in lines)
    assert lines[-1].startswith("tiny-ext: translation units: compiling, 10/10 (100%)")
    with ui.Output(quiet=True).heartbeat("x", poll):
        pass
    assert capsys.readouterr().err == ""


def test_the_install_poll_counts_unpacked_wheels_then_installed_bytes_then_modules(tmp_path):
    from resolver.install.progress import wheels_heartbeat

    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    cache = tmp_path / "uv-cache"
    (cache / "archive-v0" / "unpacked-before").mkdir(parents=True)
    wheels = []
    for name, size in (("a_b", 1000), ("c", 3000)):
        wheel = tmp_path / f"{name}-1.0-py3-none-any.whl"
        wheel.write_bytes(b"x" * size)
        wheels.append(wheel)
    beat = wheels_heartbeat(lambda *a, **k: None, tmp_path / "env", wheels, bytecode=True, expected_s=None,
                            uv_cache=cache)
    assert beat.poll() == (0, None, "uv unpacks 2 wheels (3.9 KiB) into its cache first, 0 unpacked so far", "", "unpack")
    (cache / "archive-v0" / "new-one").mkdir()
    assert beat.poll()[2].endswith("1 unpacked so far")
    (site / "A.B-1.0.dist-info").mkdir()
    assert beat.poll() == (1000, 4000, "1/2 wheels", "bytes", "install")
    (site / "c-1.0.dist-info").mkdir()
    (site / "c").mkdir()
    (site / "c" / "__init__.py").write_text("")
    (site / "c" / "m.py").write_text("")
    assert beat.poll()[:2] == (0, 2)
    (site / "c" / "__pycache__").mkdir()
    (site / "c" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"")
    assert beat.poll() == (1, 2, "2/2 wheels in, byte-compiling the modules", "", "compile")


# ---- an environment to live in -----------------------------------------------------------------
def test_a_conda_prefix_gets_an_activate_script_that_names_it(tmp_path):
    from resolver.install.build import write_activate

    prefix = tmp_path / "envs" / "cuda13"
    (prefix / "etc" / "conda" / "activate.d").mkdir(parents=True)
    (prefix / "etc" / "conda" / "activate.d" / "x.sh").write_text("export FROM_ACTIVATE_D=yes\n")
    write_activate(prefix, prefix, "cuda13")
    script = (f'PS1="$ "; PATH=/usr/bin:/bin; . {prefix}/bin/activate; echo "$PS1|$CONDA_PREFIX|$FROM_ACTIVATE_D|'
              f'${{PATH%%:*}}"; deactivate; echo "$PS1|${{CONDA_PREFIX-unset}}|$PATH"')
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    inside, outside = done.stdout.splitlines()
    assert inside == f"(cuda13) $ |{prefix}|yes|{prefix}/bin"
    assert outside == "$ |unset|/usr/bin:/bin"


def test_doctor_names_packages_installed_changed_or_removed_by_hand(tmp_path):
    from resolver.install.drift import drift_of

    env = tmp_path / "env"
    site = env / "lib" / "python3.11" / "site-packages"
    for name, version in (("torch", "2.13.0+cpu"), ("einops", "0.8.1"), ("six", "1.17.0"), ("numpy", "2.0.0"),
                          ("pip", "25.0")):
        folder = site / f"{name}-{version}.dist-info"
        folder.mkdir(parents=True)
        (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (env / "conda-meta").mkdir()
    (env / "conda-meta" / "pip-25.0-pyh_0.json").write_text(json.dumps(
        {"files": ["lib/python3.11/site-packages/pip-25.0.dist-info/METADATA"]}))
    marker = {"pypi": ["torch==2.13.0+cpu", "numpy==2.1.0", "safetensors==0.5.0"]}
    drift = drift_of(env, marker)
    assert drift.added == (("einops", "0.8.1"), ("six", "1.17.0"))  # pip is the conda package's
    assert drift.changed == (("numpy", "2.0.0", "2.1.0"),)
    assert drift.removed == (("safetensors", "0.5.0"),)
    assert "installed by hand, not in pixi.lock: einops 0.8.1, six 1.17.0" in drift.sentence()
    assert not drift_of(env, {"pypi": ["torch==2.13.0+cpu", "einops==0.8.1", "six==1.17.0", "numpy==2.0.0"]})


def test_every_conda_environment_asks_for_pip():
    code, out, _ = cli.in_process("plan", "--target", "cpu", "--json")
    assert code == 0 and json.loads(out)["conda_packages"]["pip"] == "*"


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_summary_says_how_to_enter_add_to_and_check_the_environment(tmp_path):
    from resolver.workflows.setup import environment_lines

    env = tmp_path / "envs" / "cpu"
    (env / "conda-meta").mkdir(parents=True)
    text = "\n".join(environment_lines(env))
    assert f"Enter it with: source {env}/bin/activate   (or, with pixi: pixi shell -e cpu)" in text
    assert "`python -m resolver add -e cpu --pypi NAME`" in text and "[feature.cpu.pypi-dependencies]" in text
    assert "`python -m resolver doctor --env cpu`" in text
    assert not refused_suggestions(text) and not doubled_words(text)


def test_quiet_keeps_its_meaning_the_result_and_errors_only(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "pixi.toml").write_text(shipped_manifest())
    done = cli.run("setup", "--target", "rocm6.0", "--dry-run", "--quiet", project=project, timeout=300)
    assert done.returncode == 0 and done.stderr == ""
    assert "probe    done" not in done.stdout and "mamba-resolver setup" not in done.stdout
    assert "Prepared here; to finish on the target machine:" in done.stdout  # the result stays
    failed = cli.run("setup", "--target", "cuda99.0", "--quiet", project=project, timeout=300)
    assert failed.returncode == 2 and failed.stdout == "" and failed.stderr.startswith("error: ")
