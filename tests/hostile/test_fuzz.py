"""Every parser of outside text, fuzzed: whatever it is given, it answers or refuses in one sentence
(a ResolverError whose exit code is not 70), never with another exception, and within a time bound.

The inputs are real captured outputs and files (tests/data/machines, tests/data/logs, this project's pixi.toml, a
lock and a profile the resolver writes) mutated by hypothesis: characters and lines inserted, deleted,
duplicated and replaced, lines cut, long runs of one character (blanks, digits, separators) and
fragments of the form's own lines spliced in, so the patterns that read a form meet the text they
backtrack on. The default suite tries a few dozen inputs per parser, derandomised (the same every run);
``pytest -m fuzz`` tries ``RESOLVER_FUZZ_EXAMPLES`` (default 2000) random ones per parser and prints how
many it tried and the slowest (docs/testing.md has what the long run found).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

import pytest
from support import DATA, shipped_manifest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is a test extra: pip install -e '.[test]'")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support import hostile_pastes  # noqa: E402

from resolver.core.errors import ExitCode, ResolverError  # noqa: E402

HERE = DATA  # the samples of support/hostile_pastes.py are named under tests/data

DEFAULT_EXAMPLES = 25
LONG_EXAMPLES = int(os.environ.get("RESOLVER_FUZZ_EXAMPLES", "2000"))
MAX_INPUT = 1 << 20  # "any 1 MB input"
BOUND_S = 2.0  # per input of up to 1 MB (more for a parser that is linear but slower: SECONDS_PER_MB)
# tomlkit, which reads pixi.toml so that writing it back keeps its comments, reads some 75 kB/s here
SECONDS_PER_MB = {"pixi.toml": 20.0}


def _read(source: str) -> str:
    return source[1:] if source.startswith("=") else (HERE / source).read_text(encoding="utf-8", errors="replace")


def _samples(kind: str) -> list[str]:
    return [_read(source) for source in hostile_pastes.SAMPLES[kind]]


_LOCK = """\
version: 7
platforms:
- name: linux-64
  virtual-packages:
  - __glibc=2.28=0
environments:
  cpu:
    channels:
    - url: https://conda.anaconda.org/conda-forge/
    packages:
      linux-64:
      - conda: https://conda.anaconda.org/conda-forge/noarch/rt-base-1.0.0-h0_0.conda
      - pypi: ./wheels/tiny-1.0-py3-none-any.whl
packages:
- conda: https://conda.anaconda.org/conda-forge/noarch/rt-base-1.0.0-h0_0.conda
  name: rt-base
  version: 1.0.0
  build: h0_0
  build_number: 0
  subdir: noarch
  noarch: generic
  depends: []
  sha256: 6f7a51c3e9ab0c4f4cfb1f8e8a0b5d37e3bdc2e8c9cbcc3e6b2c6e7f1a8d9e0b
  md5: 0123456789abcdef0123456789abcdef
  size: 1234
- pypi: ./wheels/tiny-1.0-py3-none-any.whl
  name: tiny
  version: '1.0'
  sha256: abababababababababababababababababababababababababababababababab
"""

_REPODATA = json.dumps({"info": {"subdir": "linux-64"}, "packages": {}, "packages.conda": {
    "rt-kernel-1.2.0-cuda_1.conda": {"name": "rt-kernel", "version": "1.2.0", "build": "cuda_1", "build_number": 1,
                                     "subdir": "linux-64", "depends": ["__cuda >=12"], "license": "MIT",
                                     "sha256": "ab" * 32, "md5": "cd" * 16, "size": 1189}},
    "repodata_version": 1}, indent=2)

_PATHS = json.dumps({"paths": [{"_path": "bin/rt-kernel", "path_type": "hardlink", "sha256": "ab" * 32,
                                "size_in_bytes": 31},
                               {"_path": "lib/libk.so", "path_type": "softlink"},
                               {"_path": "share/k", "path_type": "directory"}], "paths_version": 1}, indent=2)

_RUNS = " \t\n0a.:|,()[]-=\"'{}/\\"
# long enough that a pattern which backtracks (quadratic in the run) takes seconds where a linear one takes ms
_LENGTHS = st.sampled_from((1, 100, 2_000, 20_000, 200_000))


@st.composite
def mutated(draw, samples: list[str]) -> str:
    """A sample with a few edits: what a careless paste, a truncated file or a hostile hand makes of it."""
    text = draw(st.sampled_from(samples))
    lines = text.splitlines()
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(("stretch", "insert", "delete", "replace", "run", "splice", "cut", "duplicate")))
        at = draw(st.integers(0, len(text)))
        if op == "stretch" and lines:  # a line cut where one run of characters ends, then a long run and a stop
            number = draw(st.integers(0, len(lines) - 1))
            line = lines[number]
            cut = draw(st.sampled_from(hostile_pastes._cuts(line) or [0]))
            filler = draw(st.sampled_from(" \t0a" + line[max(cut - 1, 0):cut + 1]))
            run = filler * draw(_LENGTHS)
            lines[number] = line[:cut] + run + draw(st.sampled_from(("", "x", "\x01", ":", "|", ")", line[cut:])))
            text = "\n".join(lines)
        elif op == "insert":
            text = text[:at] + draw(st.text(max_size=40)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 200)):]
        elif op == "replace":
            text = text[:at] + draw(st.characters()) + text[at + 1:]
        elif op == "run":  # a long run of one character: what a backtracking pattern chokes on
            text = text[:at] + draw(st.sampled_from(_RUNS)) * draw(_LENGTHS) + text[at:]
        elif op == "splice" and lines:  # a line of the form where it does not belong, or many times on one line
            line = draw(st.sampled_from(lines))
            text = text[:at] + line * draw(st.integers(1, 200)) + text[at:]
        elif op == "cut":
            text = text[:at]
        elif op == "duplicate" and lines:
            text = text + "\n" + "\n".join(lines[draw(st.integers(0, len(lines) - 1)):]) * draw(st.integers(1, 50))
    return text[:MAX_INPUT]


def _fuzz(name: str, parse: Callable[[str], object], samples: list[str], examples: int, *, random: bool) -> None:
    tried, slowest = 0, 0.0
    rate = SECONDS_PER_MB.get(name, BOUND_S)

    # no shrinking: an input that is too slow would be run again thousands of times to make it smaller
    @settings(max_examples=examples, deadline=None, database=None, derandomize=not random, print_blob=True,
              suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.reuse, Phase.generate))
    @given(mutated(samples))
    def check(text: str) -> None:
        nonlocal tried, slowest
        tried += 1
        started = time.perf_counter()
        try:
            parse(text)
        except ResolverError as exc:  # a refusal: one sentence, its category's exit code
            assert exc.code != ExitCode.INTERNAL, exc
        seconds = time.perf_counter() - started
        slowest = max(slowest, seconds)
        bound = max(BOUND_S, rate * len(text) / 1e6)
        assert seconds < bound, f"{name}: {seconds:.2f} s for {len(text)} characters: {text[:300]!r}…"

    check()
    print(f"fuzz {name}: {tried} inputs, slowest {slowest:.3f} s")


# ------------------------------------------------------------------------------------ the parsers


def _file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


def _parsers(tmp: Path) -> dict[str, tuple[Callable[[str], object], list[str]]]:
    from resolver.doctor.checks import read_log
    from resolver.doctor.signatures import load_signatures, match_log
    from resolver.fleet import record
    from resolver.fleet.channel import index_entry, read_index
    from resolver.lock.lockfile import read_lock
    from resolver.plan.probe import amd_parse, collect_env, nvidia_parse
    from resolver.plan.probe.profile import HardwareProfile
    from resolver.plan.probe.report import profile_from_report, read_report
    from resolver.project.manifest import Manifest
    from resolver.project.sources import Sources
    from resolver.tools.channel_index import channel_record
    from resolver.tools.package_check import link_problem, parse_paths_json, path_problem

    signatures = load_signatures()

    def report(text: str) -> object:
        return profile_from_report(read_report(str(_file(tmp, "report.txt", text))))

    def log(text: str) -> object:
        return match_log(read_log(str(_file(tmp, "build.log", text)))[1], signatures)

    def manifest(text: str) -> object:
        root = tmp / "project"
        root.mkdir(exist_ok=True)
        loaded = Manifest.load(_file(root, "pixi.toml", text))
        for name in loaded.environment_names():
            loaded.environment(name)
        return Sources.load(root), record.read_classes(loaded), record.kernel_channel(loaded)

    def lock(text: str) -> object:
        return read_lock(_file(tmp, "pixi.lock", text), tmp)

    def profile(text: str) -> object:
        return HardwareProfile.from_file(_file(tmp, "node.json", text))

    def repodata(text: str) -> object:
        channel = tmp / "channel"
        (channel / "linux-64").mkdir(parents=True, exist_ok=True)
        _file(channel / "linux-64", "repodata.json", text)
        index = read_index(str(channel), "linux-64")
        return index_entry(index, "rt-kernel-1.2.0-cuda_1.conda"), channel_record(
            channel / "linux-64" / "rt-kernel-1.2.0-cuda_1.conda")

    def paths(text: str) -> object:
        entries = parse_paths_json(text.encode("utf-8", "surrogatepass"))
        links = {e.path: e.path.rpartition("/")[2] + ".1" for e in entries if e.path_type == "softlink"}
        return [path_problem(e.path) for e in entries], [link_problem(link, links) for link in links]

    every_form = [text for kind in hostile_pastes.KINDS if kind != "doctor --log" for text in _samples(kind)]
    profiles = [(DATA / "profiles" / "v100.json").read_text(), *(p.read_text() for p in
                sorted(HERE.glob("machines/*/expected.json"))[:3])]
    return {
        "nvidia-smi": (nvidia_parse.read_smi_plain, _samples("nvidia-smi")),
        "nvidia-smi -q": (nvidia_parse.read_smi_details, _samples("nvidia-smi -q")),
        "nvidia-smi -L": (nvidia_parse.read_smi_list, _samples("nvidia-smi -L")),
        "nvidia-smi --query-gpu": (lambda t: (nvidia_parse.read_query_csv_with_header(t),
                                              nvidia_parse.read_query_csv(t, nvidia_parse.QUERY_FIELDS)),
                                   _samples("nvidia-smi --query-gpu")),
        "/proc/driver/nvidia/version": (lambda t: (nvidia_parse.parse_proc_version(t),
                                                   nvidia_parse.parse_proc_machine(t),
                                                   nvidia_parse.parse_gpu_information(t)),
                                        _samples("/proc/driver/nvidia/version")),
        "rocminfo": (amd_parse.parse_rocminfo, _samples("rocminfo")),
        "amd-smi": (lambda t: (amd_parse.parse_amd_smi_static(t), amd_parse.parse_amd_smi_table(t),
                               amd_parse.parse_amd_smi_rocm_version(t)), _samples("amd-smi")),
        "rocm-smi": (amd_parse.parse_rocm_smi_products, _samples("rocm-smi")),
        "collect_env": (collect_env.parse_collect_env, _samples("collect_env")),
        "--from-report": (report, every_form),
        "doctor --log": (log, _samples("doctor --log")),
        "pixi.toml": (manifest, [shipped_manifest()]),
        "pixi.lock": (lock, [_LOCK]),
        "profiles": (profile, profiles),
        "repodata": (repodata, [_REPODATA]),
        "paths.json": (paths, [_PATHS]),
    }


PARSERS = ("nvidia-smi", "nvidia-smi -q", "nvidia-smi -L", "nvidia-smi --query-gpu", "/proc/driver/nvidia/version",
           "rocminfo", "amd-smi", "rocm-smi", "collect_env", "--from-report", "doctor --log", "pixi.toml", "pixi.lock",
           "profiles", "repodata", "paths.json")


@pytest.fixture()
def parsers(tmp_path, monkeypatch):
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(tmp_path / "hypothesis")  # hypothesis's own caches: never in the checkout
    monkeypatch.delenv("RESOLVER_PROJECT", raising=False)
    yield _parsers(tmp_path)
    set_hypothesis_home_dir(None)


def test_every_parser_is_fuzzed(tmp_path):
    assert sorted(_parsers(tmp_path)) == sorted(PARSERS)


@pytest.mark.parametrize("name", PARSERS)
def test_parser_answers_any_text_in_one_sentence(parsers, name):
    parse, samples = parsers[name]
    _fuzz(name, parse, samples, DEFAULT_EXAMPLES, random=False)


@pytest.mark.fuzz
@pytest.mark.parametrize("name", PARSERS)
def test_parser_answers_any_text_in_one_sentence_long_run(parsers, name):
    parse, samples = parsers[name]
    _fuzz(name, parse, samples, LONG_EXAMPLES, random=True)


# What the long runs found, kept as inputs every run tries (each was a traceback or took seconds to minutes).
FOUND = [
    ("--from-report", "name, compute_cap, driver_version\nNVIDIA H100, 9.0, driver_version\nNVIDIA H100, 9.0, 1.2\n"),
    ("--from-report", "GPU 0: NVIDIA L4 (UUID: GPU-1)\n|   0  NVIDIA L4   On  |   00000000:31:00.0 Off |\n"
                      "| N/A  36C P8  16W /  72W |  0MiB / " + "9" * 5000 + "MiB |\n"),
    ("--from-report", "NVRM version: NVIDIA UNIX Kernel Module  " + "5" * 5000 + ".1  Release Build\n"),
    ("--from-report", '{"card0": ' * 3 + "[" * 100_000),
    ("--from-report", '{"card0": {"Card Series": "' + '{"card' * 100_000),
    ("doctor --log", "Traceback\n  File " + "/a" * 40 + " site-packages\n"),
    ("pixi.toml", "\n" * 400_000 + '[workspace]\nname = "x"\n'),
    ("pixi.lock", "{a: " * 50_000),
    ("pixi.lock", "[a," * 70_000),
]


@pytest.mark.parametrize("name,text", FOUND, ids=[f"{n}-{i}" for i, (n, _) in enumerate(FOUND)])
def test_what_the_long_run_found(parsers, name, text):
    parse, _ = parsers[name]
    started = time.perf_counter()
    try:
        parse(text)
    except ResolverError as exc:
        assert exc.code != ExitCode.INTERNAL, exc
    assert time.perf_counter() - started < BOUND_S
