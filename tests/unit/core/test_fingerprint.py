"""Skip if unchanged (resolver/core/fingerprint.py): one key recipe, one record, one hash scheme.

The behaviour of :func:`fingerprint` and :class:`Memo`, and the rule that keeps them the only ones: every
kind of record that lets the resolver skip work (resolver.project.paths.RECORD_KINDS) has its key made by
``fingerprint()`` in the module named here, and no module builds a digest of JSON, or a checksum, its own way."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from support import REPO, records

from resolver.core.fingerprint import Memo, canonical_json, fingerprint
from resolver.core.records import Fields, Integer, Text
from resolver.project.paths import RECORD_KINDS

PACKAGE = REPO / "resolver"

# Each record that lets a run skip work -> the modules that build its key (each calls fingerprint()).
SKIP_RECORDS = {
    "step-stamp": ("resolver.workflows.chain",),
    "lock-check": ("resolver.lock.current",),
    "plan-memo": ("resolver.plan.planning",),
    "env-facts": ("resolver.kernels.envfacts",),
    "kernel-import": ("resolver.kernels.into_env",),
    "tool-answers": ("resolver.plan.probe.system",),
    "ready-marker": ("resolver.install",),  # its lock_digest: install skips an environment that matches
    "upgrade-state": ("resolver.workflows.upgrade.journey",),  # its proof_inputs: a passed proof is reused
    "verify-model": ("resolver.verify.checkpoint",),  # the folder's key
    "verified-record": ("resolver.tools.store",),  # a stored artefact's sha256, kept for its stat: not hashed again
}
# Each record that is not a skip record, and why (a new kind must be put in one table or the other).
OTHER_RECORDS = {
    "pypi-files": "facts about an artefact, by its sha256", "pypi-requires": "facts about an artefact, by its sha256",
    "canonical-urls": "facts about an artefact, by its sha256", "canonical-misses": "when PyPI last lacked a file",
    "env-build": "a finished environment's files, each checked by size and mtime before it is linked",
    "plan-record": "the plan an environment was locked from (state)", "sources": "the sources last used (state)",
    "patch-record": "a header patched in place and its backup (state)",
    "overlay-record": "the overlay's patches, each by its source's sha256",
    "timings": "how long work took (estimates)",
}
# Records whose whole file is a Memo ({"inputs_digest", "value"}).
MEMOS = {"step-stamp": "resolver.workflows.steps", "lock-check": "resolver.lock.current",
         "plan-memo": "resolver.plan.planning", "env-facts": "resolver.kernels.envfacts",
         "kernel-import": "resolver.kernels.into_env", "verified-record": "resolver.tools.store"}


def _source(module: str) -> str:
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    return (path if path.is_file() else path.with_suffix("") / "__init__.py").read_text()


def _calls(tree: ast.AST, name: str) -> int:
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Call)
               and (getattr(node.func, "id", None) == name or getattr(node.func, "attr", None) == name))


# ------------------------------------------------------------------------------------------ behaviour


def test_a_fingerprint_is_canonical_and_sees_every_part(tmp_path):
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint([1, 2]) != fingerprint([2, 1]) and fingerprint((1, 2)) == fingerprint([1, 2])
    assert fingerprint({1, 3, 2}) == fingerprint(frozenset({2, 1, 3}))  # a set counts sorted
    assert fingerprint("a", None) != fingerprint("a") and fingerprint(True) != fingerprint(1)
    assert fingerprint([b"x"]) != fingerprint([b"y"])  # bytes inside a value: by their sha256
    assert fingerprint([Path("/a")]) == fingerprint(["/a"])  # a path inside a value: its text

    class Version:
        def __str__(self) -> str:
            return "2.14.1"

    class Typed:
        def to_json(self) -> dict:
            return {"v": 1}

    assert fingerprint([Version()]) == fingerprint(["2.14.1"]) and fingerprint([Typed()]) == fingerprint([{"v": 1}])
    assert canonical_json({"b": 1, "a": Path("/p")}) == '{"a": "/p", "b": 1}'
    f = tmp_path / "f"
    f.write_text("one")
    first = fingerprint(f)
    f.write_text("two")
    assert fingerprint(f) != first and len(first) == 64 and re.fullmatch(r"[0-9a-f]{64}", first)


def test_a_memo_answers_only_for_the_inputs_it_was_kept_for(tmp_path):
    memo = Memo(tmp_path / "m.json", Fields({"n": Integer()}), label="test")
    one, two = fingerprint("one"), fingerprint("two")
    assert memo.recall(one) is None
    assert memo.keep(one, {"n": 3})
    assert records.read(tmp_path / "m.json") == {"inputs_digest": one, "value": {"n": 3}}
    assert memo.recall(one) == {"n": 3} and memo.recall(two) is None
    assert Memo(tmp_path / "m.json", Text()).recall(one) is None  # a value of another shape is no answer
    records.plant(tmp_path / "m.json", {"inputs_digest": "x", "value": {"n": 3}})
    assert memo.recall("x") is None  # the key is a sha256
    memo.keep(one, {"n": 3})
    memo.forget()
    memo.forget()
    assert memo.recall(one) is None and Memo(None, Text()).recall(one) is None
    assert not Memo(None, Text()).keep(one, "x")


def test_a_memo_that_cannot_be_written_is_no_error(tmp_path):
    (tmp_path / "a-file").write_text("")  # where the memo's folder would be
    assert not Memo(tmp_path / "a-file" / "m.json", Text()).keep(fingerprint("x"), "v")


# ---------------------------------------------------------------------------------------- the rule


def test_every_record_kind_is_classified():
    assert sorted({*SKIP_RECORDS, *OTHER_RECORDS}) == sorted(RECORD_KINDS)
    assert not set(SKIP_RECORDS) & set(OTHER_RECORDS) and set(MEMOS) <= set(SKIP_RECORDS)


@pytest.mark.parametrize("kind", sorted(SKIP_RECORDS))
def test_every_skip_record_is_keyed_by_fingerprint(kind):
    for module in SKIP_RECORDS[kind]:
        tree = ast.parse(_source(module))
        assert _calls(tree, "fingerprint"), f"{module} builds the key of {kind} without fingerprint()"
    if kind in MEMOS:
        assert _calls(ast.parse(_source(MEMOS[kind])), "Memo"), f"{kind} is not kept as a Memo"


JSON_DIGEST = re.compile(r"sha256_(?:text|bytes)\((?:[^()]|\([^()]*\))*json\.dumps", re.S)
CHECKSUM = re.compile(r"\b(?:crc32|adler32)\(")
HASHLIB = re.compile(r"^\s*(?:import hashlib|from hashlib)", re.M)


def _own_digests(rel: str, text: str) -> list[str]:
    """What in a module's text makes a key or a digest another way than fingerprint() and core/fs.py."""
    found = [what for what, pattern in (("a JSON digest", JSON_DIGEST), ("a checksum", CHECKSUM)) if pattern.search(text)]
    return found + (["hashlib"] if rel != "core/fs.py" and HASHLIB.search(text) else [])


def test_no_module_makes_a_digest_of_its_own():
    """One hash scheme: no JSON digest, checksum or hashlib outside core (fs.py hashes, fingerprint.py keys)."""
    offenders = {rel: found for path in sorted(PACKAGE.rglob("*.py"))
                 if (found := _own_digests(rel := path.relative_to(PACKAGE).as_posix(), path.read_text()))}
    assert offenders == {}


def test_the_rule_catches_a_planted_digest():
    """The checks above can fail: each planted pattern is found, and a key made without fingerprint() is seen."""
    assert _own_digests("lock/x.py", "key = sha256_text(json.dumps([a, b], sort_keys=True))\n") == ["a JSON digest"]
    assert _own_digests("plan/x.py", "key = f'{zlib.crc32(data):08x}'\n") == ["a checksum"]
    assert _own_digests("kernels/x.py", "    import hashlib\n") == ["hashlib"]
    assert _own_digests("core/fs.py", "    import hashlib\n") == []
    assert not _calls(ast.parse("def key(x):\n    return sha256_text(str(x))\n"), "fingerprint")


# ------------------------------------------------------------------------- keys users already hold


def test_the_keys_that_name_what_users_have_kept_their_values():
    """A kernel build's key is in its build string (and a fleet's channel), an environment's lock digest in
    its ready marker and its cached build, the verify model's in its folder: moving them onto fingerprint()
    kept the values the earlier recipes gave, so nothing is rebuilt, reinstalled or reported as drifted."""
    import hashlib
    from dataclasses import asdict

    from resolver.install import environment_digest
    from resolver.kernels.cachekey import BuildKey
    from resolver.lock.lockfile import LockedEnv, LockedPlatform, PypiArtifact
    from resolver.verify.checkpoint import FORMAT, TinySpec

    key = BuildKey("causal-conv1d", "1.7.0", "32027584", "cuda", "13.0.88", "2.14.1+cu130", True, "3.11", ("9.0",),
                   "c++20", "f1x", "")
    assert key.digest() == hashlib.sha256(json.dumps(key.to_json(), sort_keys=True).encode()).hexdigest()
    spec = TinySpec()
    assert spec.key() == hashlib.sha256(json.dumps([FORMAT, asdict(spec)], sort_keys=True).encode()).hexdigest()[:12]
    env = LockedEnv("cpu", LockedPlatform("linux-64", "linux-64", ()), ("https://conda.anaconda.org/conda-forge/",),
                    (), (PypiArtifact("tiny", "1.0", "https://files.example/tiny-1.0-py3-none-any.whl", "ab" * 32),))
    lines = ["cpu", "linux-64", f"https://files.example/tiny-1.0-py3-none-any.whl {'ab' * 32}"]
    assert environment_digest(env) == hashlib.sha256("\n".join(lines).encode()).hexdigest()
