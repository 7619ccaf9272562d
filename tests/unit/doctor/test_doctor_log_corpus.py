"""doctor on logs it was not written from: tests/data/log-corpus holds excerpts of public threads that no
signature cites and tests/data/logs does not hold, each with a sidecar naming its source and the family a
human reads from it; each is recognised as that family (or, cut before its error, as unrecognised with
the closest families named). Fixes built from any log in a CPU project never name its environments and
never print a hole; a 64 MiB log is read in linear time."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support import DATA, REPO, records

from resolver.core.toml import parse_toml
from resolver.doctor.context import FixContext, applies
from resolver.doctor.logfacts import builds_for_driver, log_facts
from resolver.doctor.normalise import normalise_log, strip_prefixes
from resolver.doctor.signatures import closest_families, decode_log, load_signatures, match_log, rocm_in_log

CORPUS = DATA / "log-corpus"
SEEDS = DATA / "logs"
SIGNATURES = load_signatures()
CPU_MACHINE = DATA / "machines" / "cpu-only-ubuntu2410"
HOLE = re.compile(r"\{\w*\}|\bX\.Y\b|\bNAME\b|\bARCH\b|\[\[|\]\]|\((?:X|Y)\)|_XX?Y?\b|<GPU>|than N\b|\.xx\b")
CORPUS_LOGS = sorted(p.name for p in CORPUS.glob("*.log"))
ALL_LOGS = [SEEDS / n for n in sorted(p.name for p in SEEDS.glob("*.log"))] + [CORPUS / n for n in CORPUS_LOGS]


def _sidecar(log: str) -> dict:
    return parse_toml((CORPUS / log).with_suffix(".toml").read_text(encoding="utf-8"), what=log, fix="")


def _first_family(text: str) -> str | None:
    text = normalise_log(text)
    rocm = rocm_in_log(text)
    matches = [m for m in match_log(text, SIGNATURES)
               if applies(replace(m, groups={**m.groups, **({"log_rocm": rocm} if rocm else {})}), FixContext())]
    return matches[0].signature.id if matches else None


def _threads_used_before() -> set[str]:
    used = {s for sig in SIGNATURES for s in sig.sources}
    for log in SEEDS.glob("*.log"):
        used.add(log.read_text(encoding="utf-8").splitlines()[0].removeprefix("# source: ").strip())
    for log in (REPO / "benchmarks" / "doctor_corpus").glob("*"):
        used |= set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+", log.read_text(encoding="utf-8")))
    return used


def test_the_corpus_is_forty_logs_or_more_from_threads_not_used_before():
    assert len(CORPUS_LOGS) >= 40
    used = _threads_used_before()
    sources = [_sidecar(log)["source"] for log in CORPUS_LOGS]
    assert len(set(sources)) == len(sources), "one thread, one log"
    assert not used & set(sources), sorted(used & set(sources))
    assert {p.stem for p in CORPUS.glob("*.toml")} == {Path(n).stem for n in CORPUS_LOGS}


@pytest.mark.parametrize("log", CORPUS_LOGS)
def test_each_corpus_log_is_read_as_its_family(log):
    side = _sidecar(log)
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+", side["source"]) and side["reads"]
    text = decode_log((CORPUS / log).read_bytes())
    if side["family"] == "unrecognised":
        assert _first_family(text) is None
        assert closest_families(normalise_log(text), SIGNATURES), "an unrecognised log names its closest families"
    else:
        assert side["family"] in {s.id for s in SIGNATURES}, side["family"]
        assert _first_family(text) == side["family"]


def test_every_signature_renders_without_a_hole_in_any_context():
    """Each signature's title, cause, fix and detail, with the groups its own log gives, in a context that
    knows everything, one that knows nothing, and the ones between."""
    contexts = [FixContext(), FixContext(env="cu126"), FixContext(arch="8.6"), FixContext(cuda="12.6", torch="2.7.1+cu126"),
                FixContext(env="cu126", arch="8.6", torch="2.7.1+cu126", cuda="12.6", target="cuda12.6", rocm="6.2")]
    for sig in SIGNATURES:
        text = normalise_log(decode_log((SEEDS / sig.logs[0]).read_bytes()))
        facts = {k: v for k, v in log_facts(text).items() if k.startswith("driver_")}
        match = next(m for m in match_log(text, SIGNATURES) if m.signature.id == sig.id)
        for ctx in contexts:
            for template in (sig.title, sig.cause, sig.fix, sig.fix_detail):
                rendered = ctx.render(template, {**facts, **match.groups})
                assert not HOLE.search(rendered), (sig.id, ctx, rendered)


def _project(tmp_path: Path) -> Path:
    """A project with one installed CPU environment, as doctor sees it without running it."""
    (tmp_path / "pixi.toml").write_text("[workspace]\nname = 't'\nchannels = []\nplatforms = ['linux-64']\n")
    prefix = tmp_path / ".resolver" / "envs" / "cpu"
    (prefix / "conda-meta").mkdir(parents=True)
    records.plant(prefix / "resolver-ready.json", {
        "environment": "cpu", "kind": "conda", "python": "3.12", "platform": "linux-64", "lock_digest": "0" * 64,
        "conda": [], "pypi": ["torch==2.13.0+cpu"]})
    return tmp_path


@pytest.mark.parametrize("machine", ["cpu-only-ubuntu2410", "gtx1080ti-driver460-ubuntu2004"])
def test_no_fix_from_a_cpu_project_names_its_environment_or_prints_a_hole(tmp_path, machine):
    """Every log (tests/data/logs and the corpus) through doctor in a CPU-only project, on a machine without a
    GPU and on one with an NVIDIA GPU: no text names the environment `cpu`, none holds a placeholder."""
    from resolver.doctor.run import DoctorRequest, diagnose
    from resolver.project.paths import ProjectPaths

    project = ProjectPaths(_project(tmp_path))
    sysroot = str(DATA / "machines" / machine)
    for log in ALL_LOGS:
        doc = diagnose(project, DoctorRequest(log=str(log), sysroot=sysroot)).document
        for m in doc["log"]["matches"]:
            for key in ("title", "cause", "fix", "fix_note", "fix_detail"):
                assert "--env cpu" not in m[key] and not HOLE.search(m[key]), (log.name, m["id"], key, m[key])
            assert m["env"] is None, (log.name, m["id"])


def test_a_driver_too_old_says_which_cuda_build_it_runs(tmp_path):
    """A log from a GPU box whose driver supports CUDA 11.4, read in a CPU project: the fix is a target for
    that driver, never this project's environment."""
    from resolver.doctor.run import DoctorRequest, diagnose
    from resolver.project.paths import ProjectPaths

    doc = diagnose(ProjectPaths(_project(tmp_path)), DoctorRequest(log=str(CORPUS / "seqnet-36-driver-11040.log"),
                                                                  sysroot=str(CPU_MACHINE))).document
    first = doc["log"]["matches"][0]
    assert first["id"] == "driver-too-old" and doc["log"]["facts"]["driver_cuda"] == "11.4"
    assert "(CUDA 11.4)" in first["cause"] and "--target cuda11.8" in first["cause"]
    assert first["fix"] == "python -m resolver setup"
    assert "python -m resolver lock --target cuda11.8 && python -m resolver install" in first["fix_note"]
    assert "--env" not in first["fix_note"]


def test_what_a_driver_runs_follows_the_tables():
    assert builds_for_driver("12.2")[0] == max((builds_for_driver(d)[0] for d in ("12.0", "12.2")), key=len)
    assert builds_for_driver("12.2")[0].startswith("cuda12.")
    target, sentence = builds_for_driver("10.1")
    assert target == "cpu" and "driver upgrade" in sentence


def test_console_prefixes_come_off_and_wrapped_words_join():
    assert strip_prefixes("#12 0.345 nvcc fatal") == "nvcc fatal"
    assert strip_prefixes("2024-05-01T10:00:00.1234567Z ##[error]x") == "##[error]x"
    assert strip_prefixes("[stderr] [12:00:01] c++: fatal error") == "c++: fatal error"
    assert strip_prefixes("> > RuntimeError") == "RuntimeError"
    assert strip_prefixes("   indented stays") == "   indented stays"
    long = "a" * 70
    assert normalise_log(f"{long}xy\nz rest") == f"{long}xyz rest"
    assert normalise_log(f"{long}xy\nZ rest") == f"{long}xy\nZ rest"  # a new sentence, not a wrap
    assert normalise_log("short\nline") == "short\nline"
    assert normalise_log("#3 0.1 a\n[stderr] b\n2024-01-02 03:04:05 c\nWARNING x") == "a\nb\nc\nWARNING x"
    assert normalise_log(f"{long}.\nnext") == f"{long}.\nnext"
    assert normalise_log(f"{long} nvcc fatal : Unsupported gpu \narchitecture 'compute_120'").endswith(
        "Unsupported gpu architecture 'compute_120'")
    assert normalise_log(f"{long}  \n  indented") == f"{long}  \n  indented"


def test_a_log_that_matches_nothing_names_its_closest_families():
    near = closest_families("nvcc warning : The 'compute_35' gpu architecture is deprecated", SIGNATURES)
    assert near and near[0].id == "nvcc-unsupported-arch"
    assert closest_families("hello world", SIGNATURES) == ()


@pytest.mark.parametrize("line", [
    "[stderr] 2024-05-01T10:00:00Z " + "a/" * 40 + "x" * 30 + " (core dumped) torch " + "(" * 20 + "\n",  # long lines
    "x" * 70 + "\nabc def\n",  # a wrap on every other line
    "#\n",  # the shortest lines, each the start of a prefix
], ids=["prefixed", "wrapped", "short"])
def test_a_64_mib_log_is_read_in_linear_time(line):
    """Every pattern runs from the literal it starts with; normalising is two substitutions anchored at
    newlines: 64 MiB of any of these shapes is read, matched and reported well within 10 s (about 2 s
    here), counted in this process's CPU seconds so that other work on a shared machine does not count."""
    text = line * ((64 << 20) // len(line)) + "nvcc fatal   : Unsupported gpu architecture 'compute_120'\n"
    started = time.process_time()
    normalised = normalise_log(decode_log(text.encode()))
    found = [m.signature.id for m in match_log(normalised, SIGNATURES)]
    closest_families(normalised, SIGNATURES)
    log_facts(normalised)
    elapsed = time.process_time() - started
    assert "nvcc-unsupported-arch" in found
    assert elapsed < 10, f"{elapsed:.1f} CPU s for 64 MiB"


def test_every_pattern_starts_with_a_literal():
    """What keeps matching linear: a pattern without a leading literal on each alternative would be
    tried at every character of a log (resolver/doctor/needles.py)."""
    from resolver.doctor.needles import needles

    for sig in SIGNATURES:
        for pattern in sig.patterns + sig.requires:
            assert needles(pattern.pattern)[0], (sig.id, pattern.pattern)


@pytest.mark.parametrize("sig", [s for s in SIGNATURES], ids=[s.id for s in SIGNATURES])
def test_normalising_keeps_each_seed_log_in_its_family(sig):
    for log in sig.logs:
        assert _first_family(decode_log((SEEDS / log).read_bytes())) == sig.id, log
