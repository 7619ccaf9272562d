"""The patch registry: the real table, the synthetic table added through the same path, and the
knowledge base's references to patch ids."""

from __future__ import annotations

import re

import pytest
from support import REPO
from support.patch_support import FIXTURES, HEADER, TABLE, sha

from resolver.core.errors import BadInput
from resolver.core.toml import parse_toml
from resolver.core.versions import DottedVersion
from resolver.patch.registry import default_patches_dir, load_registry
from resolver.patch.transform import add_static_inline

PATCH_ID = "rocm6.0-bf16-inline"


def test_real_table_holds_the_rocm_6_0_originals():
    spec = load_registry(extra_tables=[]).get(PATCH_ID)
    assert spec.file == HEADER
    assert [str(v) for v in spec.rocm_versions] == ["6.0"]
    originals = spec.originals
    assert originals, "the checksum table must hold the real ROCm 6.0.x originals"
    covered = {r for h in originals for r in h.rocm}
    assert {"6.0.0", "6.0.2"} <= covered
    for header in spec.headers:
        assert re.fullmatch(r"[0-9a-f]{64}", header.sha256) and header.source
    assert {h.state for h in spec.headers} >= {"original", "upstream-fixed"}
    assert spec.fix.functions == ("__float2bfloat16", "__bfloat1622float2", "__double2bfloat16",
                                  "__float22bfloat162_rn", "__high2float", "__low2float")
    assert all(r.url.startswith("https://") for r in spec.references)


def test_versions_it_applies_to():
    spec = load_registry(extra_tables=[]).get(PATCH_ID)
    assert spec.applies_to(DottedVersion.parse("6.0.0")) and spec.applies_to(DottedVersion.parse("6.0.2"))
    assert not spec.applies_to(DottedVersion.parse("6.1.0")) and not spec.applies_to(DottedVersion.parse("5.7.1"))


def test_fixture_table_is_added_and_its_fixed_checksum_is_what_the_fix_produces():
    spec = load_registry(extra_tables=[TABLE]).get(PATCH_ID)
    source = FIXTURES / "root-6.0" / HEADER
    known = spec.classify(sha(source))
    assert known is not None and known.state == "original"
    fixed = add_static_inline(source.read_bytes().decode("latin-1"), spec.fix.functions, spec.fix.insert)
    import hashlib
    assert hashlib.sha256(fixed.text.encode("latin-1")).hexdigest() == known.fixed_sha256
    assert spec.classify(known.fixed_sha256).state == "fixed"
    assert spec.classify(sha(FIXTURES / "amd_hip_bf16-6.1.h")).state == "upstream-fixed"
    # the real rows are still there
    assert len(spec.originals) == len(load_registry(extra_tables=[]).get(PATCH_ID).originals) + 1


def test_environment_variable_adds_tables(monkeypatch):
    monkeypatch.setenv("RESOLVER_PATCH_TABLES", str(TABLE))
    assert load_registry().get(PATCH_ID).classify(sha(FIXTURES / "root-6.0" / HEADER)) is not None
    monkeypatch.delenv("RESOLVER_PATCH_TABLES")
    assert load_registry().get(PATCH_ID).classify(sha(FIXTURES / "root-6.0" / HEADER)) is None


def test_bad_tables_are_one_clear_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[originals]]\npatch = "no-such-patch"\nsha256 = "' + "a" * 64 + '"\nfixed_sha256 = "' + "b" * 64 + '"\n')
    with pytest.raises(BadInput, match="unknown patch"):
        load_registry(extra_tables=[bad])
    bad.write_text('[[originals]]\npatch = "rocm6.0-bf16-inline"\nsha256 = "xyz"\nfixed_sha256 = "' + "b" * 64 + '"\n')
    with pytest.raises(BadInput, match="malformed"):
        load_registry(extra_tables=[bad])
    bad.write_text("[[originals]\n")
    with pytest.raises(BadInput, match="not valid TOML"):
        load_registry(extra_tables=[bad])
    with pytest.raises(BadInput, match="no patch with id"):
        load_registry(extra_tables=[]).get("rocm9-nothing")


def test_patch_folder_id_must_match(tmp_path):
    folder = tmp_path / "patches" / "some-name"
    folder.mkdir(parents=True)
    text = (default_patches_dir() / PATCH_ID / "patch.toml").read_text()
    (folder / "patch.toml").write_text(text)
    with pytest.raises(BadInput, match="differs from its folder"):
        load_registry(tmp_path / "patches", extra_tables=[])


def _patch_ids_named_in(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _patch_ids_named_in(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _patch_ids_named_in(v, key)
    elif isinstance(value, str):
        if "patch" in key.lower() and re.fullmatch(r"[a-z][a-z0-9.]*(-[a-z0-9.]+)+", value):
            yield value
        else:  # an id written anywhere else, e.g. in a note: rocm6.0-bf16-inline
            yield from re.findall(r"\brocm\d+\.\d+(?:-[a-z0-9]+){2,}\b", value)


def test_every_patch_id_the_knowledge_base_names_exists():
    data_dir = REPO / "resolver" / "plan" / "knowledge" / "data"
    files = sorted(data_dir.glob("*.toml")) if data_dir.is_dir() else []
    if not files:
        pytest.skip("no knowledge base yet (resolver/plan/knowledge/data/*.toml)")
    known = set(load_registry(extra_tables=[]).ids)
    named = {}
    for path in files:
        for patch_id in _patch_ids_named_in(parse_toml(path.read_text(), what=path.name, fix="")):
            named.setdefault(patch_id, path.name)
    missing = {pid: where for pid, where in named.items() if pid not in known}
    assert not missing, f"patch ids named in resolver/plan/knowledge/data but absent from patches/: {missing}"


def test_missing_registry_is_an_error_not_an_empty_list(tmp_path, monkeypatch):
    from resolver.core.errors import EnvironmentProblem
    with pytest.raises(EnvironmentProblem, match="registry"):
        load_registry(tmp_path / "nowhere", extra_tables=[])
    monkeypatch.setenv("RESOLVER_PATCHES_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(EnvironmentProblem, match="RESOLVER_PATCHES_DIR"):
        load_registry(extra_tables=[])


def test_fixes_a_rocm_release_needs():
    registry = load_registry(extra_tables=[])
    assert [s.id for s in registry.for_rocm("6.0.0")] == [PATCH_ID]
    assert [s.id for s in registry.for_rocm(DottedVersion.parse("6.0.2"))] == [PATCH_ID]
    assert registry.for_rocm("6.1.0") == () and registry.for_rocm("5.7.1") == () and registry.for_rocm("7.0") == ()


def test_knowledge_base_header_fixes_agree_with_the_registry():
    """The plan lists fixes from resolver/plan/knowledge/data (rows [[header_fix]]); patch applies them from patches/.
    Same id, same file, same ROCm range."""
    rows = []
    for path in sorted((REPO / "resolver" / "plan" / "knowledge" / "data").glob("*.toml")):
        rows += [(path.name, row) for row in parse_toml(path.read_text(), what=path.name, fix="").get("header_fix", [])]
    if not rows:
        pytest.skip("the knowledge base lists no [[header_fix]] rows")
    assert PATCH_ID in {row["id"] for _, row in rows}
    registry = load_registry(extra_tables=[])
    for where, row in rows:
        spec = registry.get(row["id"])
        assert row["file"] == spec.file, where
        low, below = DottedVersion.parse(row["rocm_min"]), DottedVersion.parse(row["rocm_below"])
        for series in spec.rocm_versions:
            assert low <= series < below, (where, str(series))
        for probe in ("5.7.1", "6.0.0", "6.0.2", "6.1.0", "6.2.4", "7.0.0"):
            version = DottedVersion.parse(probe)
            assert spec.applies_to(version) == (low <= version < below), (where, probe)
