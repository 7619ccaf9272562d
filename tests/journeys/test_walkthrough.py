"""A newcomer's first hour, run as README.md tells it, in a fresh clone of this checkout: the first
`setup` (CPU here), a second one, the one-minute tour, entering the environment, a package added so
the lock follows, a pip install by hand that doctor names, bench. Then the day after, in a clone of its
own: add a package, pip-install one by hand, add another, upgrade torch and promote, doctor, rollback
twice, run and shell, every printed fix followed. It asserts on what the person reads
as well as on exit codes: no temporary folder's name, no doubled word, every "Fix:"/"next:"/backticked
command accepted by the resolver's own parser, every caveat repeated at the end, the log holding
everything shown, and every --json document valid against its schema.

Hermetic: the session's own caches (tests/conftest.py), this machine's pip configuration for
wheels; conda-forge is out of reach here, so the environment is the announced fallback (a virtual
environment of this Python); where a channel answers it is a conda prefix, and the same assertions hold.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from support import REPO, cli
from support.newcomer import doubled_words, refused_suggestions, temporary_names
from support.schemas import validate, validate_output

README = (REPO / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                                reason="the walkthrough clones this checkout with git")


def tour_commands() -> list[str]:
    blocks = re.findall(r"```console\n(.*?)```", README, flags=re.S)
    return [line[2:].strip() for block in blocks for line in block.splitlines() if line.startswith("$ ")]


class Newcomer:
    """Runs commands in the clone as a person at a shell would, keeping everything they were shown."""

    def __init__(self, clone: Path) -> None:
        self.clone = clone
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("RESOLVER_PROJECT", "RESOLVER_SYSROOT", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
        self.shown: list[str] = []

    def run(self, *argv: str, timeout: float = 900) -> subprocess.CompletedProcess:
        done = cli.run(*argv, cwd=self.clone, environment=self.env, timeout=timeout)
        self.shown.append(done.stdout + done.stderr)
        assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
        return done

    def shell(self, script: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=self.clone, env=self.env,
                              capture_output=True, text=True, timeout=300)


def readable(text: str) -> None:
    """What a person reads must hold no temporary names, no doubled words, no command the CLI refuses."""
    assert not temporary_names(text), temporary_names(text)
    assert not doubled_words(text), doubled_words(text)
    assert not refused_suggestions(text), refused_suggestions(text)


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory) -> Newcomer:
    clone = tmp_path_factory.mktemp("newcomer") / "mamba-resolver"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    person = Newcomer(clone)
    yield person
    shutil.rmtree(clone, ignore_errors=True)


@pytest.fixture(scope="module")
def first_setup(newcomer) -> subprocess.CompletedProcess:
    return newcomer.run("setup")


def test_the_first_setup_works_and_reads_true(newcomer, first_setup):
    done = first_setup
    assert done.returncode == 0, done.stderr[-3000:]
    shown = done.stdout + done.stderr
    readable(shown)
    assert done.stdout.startswith(f"mamba-resolver setup in {newcomer.clone}\n")
    steps = re.findall(r"^  (\S) (probe|plan|lock|install|patch|build|verify)\s+(\S+)", done.stdout, flags=re.M)
    assert [name for _, name, _ in steps] == ["probe", "plan", "lock", "install", "patch", "build", "verify"]
    marks = {name: mark for mark, name, _ in steps}
    env = newcomer.clone / ".resolver" / "envs" / "cpu"
    assert f"Environment: {env}" in done.stdout
    # every caveat is on its step ("!", never "✓") and again at the end, each with its fix
    caveats = re.findall(r"^  ! (\w+): (.+)\n(?:    Fix: (.+))?", done.stdout, flags=re.M)
    for step, _, _ in caveats:
        assert marks[step] == "!", (step, marks)
    assert all(mark == "✓" or name in {s for s, _, _ in caveats} or mark == "·" for mark, name, _ in steps)
    if (env / "pyvenv.cfg").is_file():  # no conda channel answered: the fallback is said and how to leave it
        assert any("is a fallback" in text and fix for _, text, fix in caveats)
    # how to live in it: enter, add a package so pixi.lock follows, what a pip install by hand leads to
    assert f"Enter it with: source {env}/bin/activate" in done.stdout
    assert "Add a package so pixi.lock follows:" in done.stdout and "[feature.cpu.pypi-dependencies]" in done.stdout
    assert "`python -m resolver doctor --env cpu` names each one" in done.stdout
    # the log holds every line shown
    log = Path(re.search(r"^Log: (\S+)", done.stdout, flags=re.M).group(1))
    logged = set(log.read_text().splitlines())
    missing = [line for line in shown.splitlines() if line.strip() and line.rstrip() not in logged]
    assert not missing, missing


def test_the_environment_can_be_entered_and_has_pip(newcomer, first_setup):
    assert first_setup.returncode == 0
    env = newcomer.clone / ".resolver" / "envs" / "cpu"
    for text in (env / "bin" / "activate").read_text(), *(p.read_text(errors="replace") for p in (env / "bin").glob("pip*")):
        assert not temporary_names(text)
    done = newcomer.shell(f'PS1="$ "; . {shlex.quote(str(env))}/bin/activate; echo "$PS1"; command -v python pip; '
                          'pip --version; deactivate; echo "$PS1"')
    assert done.returncode == 0, done.stderr
    prompt, python, pip, version, after = done.stdout.splitlines()[:5]
    assert prompt == "(cpu) $ " and after == "$ "
    assert python == f"{env}/bin/python" and pip == f"{env}/bin/pip" and f"{env}/lib/python3" in version


@pytest.fixture(scope="module")
def second_setup(newcomer, first_setup) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """The second `setup --json` and a `setup --dry-run`, right after the first: before any test adds a
    package to the clone (those tests ask for this fixture, so it runs first whatever the order)."""
    assert first_setup.returncode == 0
    return newcomer.run("setup", "--json"), newcomer.run("setup", "--dry-run")


def test_a_second_setup_is_instant_and_still_says_the_caveats(first_setup, second_setup):
    again, dry = second_setup
    assert again.returncode == 0, again.stderr[-3000:]
    document = validate_output("setup", again.stdout, 0)
    statuses = {s["name"]: s["status"] for s in document["steps"]}
    assert statuses["lock"] == statuses["install"] == statuses["verify"] == "skipped"
    first_caveats = re.findall(r"^  ! (\w+): (.+)$", first_setup.stdout, flags=re.M)
    assert [(c["step"], c["text"]) for c in document["caveats"]] == first_caveats
    readable(again.stderr)
    assert dry.returncode == 0
    assert dry.stdout.startswith("mamba-resolver setup --dry-run in ")
    assert "dry run: nothing was changed; everything is current, a real run would skip every step." in dry.stdout


@pytest.mark.parametrize("command", tour_commands())
def test_the_tour(newcomer, first_setup, command):
    from support.readme import EXPECTED_EXIT

    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "resolver"]
    done = newcomer.run(*argv[3:], timeout=300)
    assert done.returncode == EXPECTED_EXIT[command], done.stderr[-2000:]
    readable(done.stdout + done.stderr)
    json_done = newcomer.run(*argv[3:], "--json", timeout=300)
    validate_output(argv[3], json_done.stdout, json_done.returncode)


def test_a_package_added_as_the_summary_says_is_locked_and_installed(newcomer, first_setup, second_setup, tmp_path):
    """The summary's way: `NAME = "*"` under [feature.cpu.pypi-dependencies], then setup."""
    from support import channel_factory as cf

    assert first_setup.returncode == 0
    wheels = tmp_path / "wheels"
    cf.write_wheel(wheels, "first-hour-extra", "1.0", {"first_hour_extra/__init__.py": "VALUE = 42\n"})
    manifest = newcomer.clone / "pixi.toml"
    text = manifest.read_text()
    assert "[feature.cpu.pypi-dependencies]\n" in text
    manifest.write_text(text.replace("[feature.cpu.pypi-dependencies]\n",
                                     '[feature.cpu.pypi-dependencies]\nfirst-hour-extra = "*"\n', 1))
    done = newcomer.run("setup", "--find-links", str(wheels))
    assert done.returncode == 0, done.stderr[-3000:]
    readable(done.stdout + done.stderr)
    assert re.search(r"^  . lock +done", done.stdout, flags=re.M) and re.search(r"^  . install +done", done.stdout, flags=re.M)
    assert "first-hour-extra" in (newcomer.clone / "pixi.lock").read_text()
    env = newcomer.clone / ".resolver" / "envs" / "cpu"
    ran = subprocess.run([str(env / "bin" / "python"), "-c", "import first_hour_extra; print(first_hour_extra.VALUE)"],
                         capture_output=True, text=True)
    assert ran.stdout.strip() == "42", ran.stderr
    doctor = newcomer.run("doctor", "--env", "cpu", "--json")
    findings = {f["name"]: f for f in validate_output("doctor", doctor.stdout, doctor.returncode)["findings"]}
    assert findings["drift"]["status"] == "ok"


def test_a_pip_install_by_hand_is_named_by_doctor(newcomer, first_setup, second_setup, tmp_path):
    from support import channel_factory as cf

    assert first_setup.returncode == 0
    wheel = cf.write_wheel(tmp_path / "by-hand", "by-hand-pkg", "0.3", {"by_hand_pkg/__init__.py": ""})
    env = newcomer.clone / ".resolver" / "envs" / "cpu"
    pip = subprocess.run([str(env / "bin" / "pip"), "install", "--no-index", "--no-deps", "--quiet", str(wheel)],
                         capture_output=True, text=True, env=newcomer.env)
    assert pip.returncode == 0, pip.stderr
    doctor = newcomer.run("doctor", "--env", "cpu")
    readable(doctor.stdout + doctor.stderr)
    assert "drift: installed by hand, not in pixi.lock: by-hand-pkg 0.3" in doctor.stdout
    assert "python -m resolver add -e cpu --pypi by-hand-pkg" in doctor.stdout
    document = validate_output("doctor", newcomer.run("doctor", "--env", "cpu", "--json").stdout, 0)
    assert next(f for f in document["findings"] if f["name"] == "drift")["status"] == "warn"
    subprocess.run([str(env / "bin" / "pip"), "uninstall", "--yes", "--quiet", "by-hand-pkg"], env=newcomer.env,
                   capture_output=True)


def test_bench_says_which_side_is_faster_by_how_much_and_what_passed(newcomer, first_setup):
    assert first_setup.returncode == 0
    done = newcomer.run("bench", "--repeat", "3", "--new-tokens", "4", "--prompt-len", "16")
    assert done.returncode == 0, done.stderr[-3000:]
    readable(done.stdout + done.stderr)
    text = done.stdout
    assert re.search(r"prompt: the (library|reference) is \d+\.\d+x faster", text), text
    assert re.search(r"spread \d", text), text
    assert "PASSED: " in text and "the timings are measurements, not checks" in text
    document = validate_output("bench", newcomer.run("bench", "--repeat", "2", "--new-tokens", "3", "--prompt-len", "8",
                                                     "--json").stdout, 0)
    assert document["ok"] is True


def test_everything_the_newcomer_was_shown_reads_true(newcomer, first_setup):
    """The sum of the hour: asserted per command above, and over all of it once more."""
    readable("\n".join(newcomer.shown))
    validate("setup", json.loads(newcomer.run("setup", "--json").stdout))


# ------------------------------------------------------------------------------- the day after
QUICK_PROOF = ("--prompt-len", "8", "--new-tokens", "4", "--repeat", "2")  # the upgrade's proof, small: a CPU here


@pytest.fixture(scope="module")
def day_after(tmp_path_factory) -> Newcomer:
    """A clone of its own, set up once: the day-after tour changes the environments, which the first hour's
    tests above must not see, whatever the order."""
    clone = tmp_path_factory.mktemp("day-after") / "mamba-resolver"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    person = Newcomer(clone)
    done = person.run("setup")
    assert done.returncode == 0, done.stderr[-3000:]
    yield person
    shutil.rmtree(clone, ignore_errors=True)


def follow_every_fix(person: Newcomer) -> list[str]:
    """Run every resolver command a fix printed so far names (each once, in order); each must work."""
    from support.fixes import commands_of, printed_fixes

    followed = []
    for fix in dict.fromkeys(f for text in person.shown for f in printed_fixes(text)):
        for argv in commands_of(fix):
            if argv in followed:
                continue
            done = person.run(*argv)
            assert done.returncode == 0, f"the printed fix {fix!r} did not work: {done.stdout[-1500:]}{done.stderr[-1500:]}"
            followed.append(argv)
    return [" ".join(a) for a in followed]


def test_the_day_after(day_after, tmp_path):
    """Add a package, pip-install one by hand, add another, upgrade torch, promote, doctor, roll back twice,
    run and shell: what a person does in the days after the first hour, each step on what the last left."""
    from support import channel_factory as cf

    person = day_after
    env = person.clone / ".resolver" / "envs" / "cpu"

    def imports(environment: str, *modules: str) -> subprocess.CompletedProcess:
        return person.run("run", "-e", environment, "python", "-c", f"import {', '.join(modules)}")

    added = person.run("add", "--pypi", "tabulate", "-e", "cpu")
    assert added.returncode == 0, added.stderr[-3000:]
    readable(added.stdout + added.stderr)
    assert imports("cpu", "tabulate").returncode == 0
    assert "tabulate" in (person.clone / "pixi.lock").read_text()

    wheel = cf.write_wheel(tmp_path / "by-hand", "tour-by-hand", "0.1", {"tour_by_hand/__init__.py": ""})
    pip = subprocess.run([str(env / "bin" / "pip"), "install", "--no-index", "--no-deps", "--quiet", str(wheel)],
                         capture_output=True, text=True, env=person.env)
    assert pip.returncode == 0, pip.stderr

    another = person.run("add", "--pypi", "colorama", "-e", "cpu")
    assert another.returncode == 0, another.stderr[-3000:]
    assert "tour-by-hand" in another.stdout + another.stderr  # kept, and said so
    assert imports("cpu", "tabulate", "colorama", "tour_by_hand").returncode == 0

    upgraded = person.run("upgrade", "--torch", "2.14", "--promote", *QUICK_PROOF)
    assert upgraded.returncode == 0, upgraded.stdout[-3000:] + upgraded.stderr[-3000:]
    readable(upgraded.stdout + upgraded.stderr)
    new_env = next(name for name in os.listdir(person.clone / ".resolver" / "envs") if name.startswith("cpu-torch"))
    assert imports(new_env, "tabulate", "colorama").returncode == 0  # the user's packages came along
    torch = person.run("run", "-e", new_env, "python", "-c", "import torch; print(torch.__version__)")
    assert torch.stdout.strip().startswith("2.14"), torch.stdout + torch.stderr

    doctor = person.run("doctor")
    assert doctor.returncode == 0, doctor.stdout[-3000:]
    readable(doctor.stdout + doctor.stderr)
    validate_output("doctor", person.run("doctor", "--json").stdout, 0)

    back = person.run("rollback")
    assert back.returncode == 0, back.stderr[-3000:]
    assert "cpu" in back.stdout
    again = person.run("rollback")
    assert again.returncode == 0 and "nothing to roll back" in again.stdout, again.stdout + again.stderr
    default = person.run("run", "python", "-c", "import torch; print(torch.__version__)")
    assert default.returncode == 0 and default.stdout.strip().startswith("2.13"), default.stdout + default.stderr

    ran = person.run("run", "-e", "cpu", "python", "-c", "import tabulate, sys; print(sys.prefix)")
    assert ran.returncode == 0 and ran.stdout.strip() == str(env), ran.stdout + ran.stderr
    shell = subprocess.run(cli.argv("shell", "-e", "cpu"), cwd=person.clone, env=person.env, capture_output=True,
                           text=True, input='python -c "import colorama, sys; print(sys.prefix)"\n', timeout=300)
    assert shell.returncode == 0 and shell.stdout.strip().splitlines()[-1] == str(env), shell.stdout + shell.stderr

    follow_every_fix(person)
    readable("\n".join(person.shown))
