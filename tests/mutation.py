"""Mutation campaigns: mutmut over the modules that decide and guard, each against the fast unit tests
that should catch its bugs (docs/testing.md).

    .venv/bin/python tests/mutation.py names            # one campaign
    .venv/bin/python tests/mutation.py --list           # the campaigns and their tests
    .venv/bin/python tests/mutation.py decide-rules --max-children 2 --keep

Each campaign runs in a scratch folder (a copy of the package and the tests; mutmut writes its
``mutants/`` there, which can grow large), prints the kill rate and writes every surviving mutant's
diff to ``<scratch>/../mutation-<campaign>.txt``; the scratch folder is removed afterwards unless
``--keep``. Subprocess tests cannot kill a mutant (the child imports the unmutated package), so a
campaign names in-process tests only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# the tests of test_decide.py that run `python -m resolver` children: they cannot kill a mutant, and the plan memo's
# test compares a child's memo key (the package's digest) with the mutated package's own, which never match
_DECIDE_CHILDREN = tuple(a for t in ("test_cli_json_and_refusal", "test_plan_remembers_its_answer_only_for_the_same_inputs",
                                     "test_cli_bad_python", "test_an_edited_plan_memo_never_changes_the_plan_printed")
                         for a in ("--deselect", f"tests/unit/plan/test_decide.py::{t}"))

# campaign -> (modules to mutate, tests that should catch their bugs)
CAMPAIGNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "names": (("resolver/core/names.py",), ("tests/unit/core/test_names.py", "resolver/core/names.py")),
    "decide-rules": (("resolver/plan/decide/rules.py", "resolver/plan/decide/rocm.py", "resolver/plan/decide/cuda.py",
                      "resolver/plan/decide/cpu.py", "resolver/plan/decide/search.py"),
                     ("tests/unit/plan/test_decide.py", "tests/unit/plan/test_decide_boundaries.py", "tests/unit/plan/test_decide_corpus.py",
                      "tests/unit/plan/test_decide_golden.py", "tests/unit/plan/test_decide_rules_edges.py",
                      "tests/unit/plan/test_decide_gfx_unserved.py", "resolver/plan/decide/", *_DECIDE_CHILDREN)),
    "decide-assembly": (("resolver/plan/decide/choose.py", "resolver/plan/decide/choices.py", "resolver/plan/decide/context.py",
                         "resolver/core/model.py", "resolver/plan/decide/rejection.py", "resolver/plan/decide/explain.py"),
                        ("tests/unit/plan/test_decide.py", "tests/unit/plan/test_decide_boundaries.py", "tests/unit/plan/test_decide_corpus.py",
                         "tests/unit/plan/test_decide_golden.py", "tests/unit/plan/test_decide_refusal_texts.py",
                         "tests/unit/plan/test_decide_plan_fields.py", "tests/unit/plan/test_decide_gfx_unserved.py",
                         "resolver/plan/decide/", *_DECIDE_CHILDREN)),
    "knowledge": (("resolver/plan/knowledge/rows.py", "resolver/plan/knowledge/query.py", "resolver/plan/knowledge/consistency.py"),
                  ("tests/unit/plan/test_knowledge.py", "tests/unit/plan/test_knowledge_consistency.py", "tests/unit/plan/test_decide_boundaries.py",
                   "tests/unit/plan/test_decide_golden.py", "resolver/plan/knowledge/")),
    "patch-engine": (("resolver/patch/engine.py",),
                     ("tests/unit/patch/test_patch_engine.py", "tests/unit/patch/test_patch_cli.py", "tests/hostile/test_untrusted_patch.py",
                      "resolver/patch/engine.py",
                      # children only (a child cannot kill a mutant); twelve of them cost 2 s a mutant
                      *(a for t in ("unit/patch/test_patch_cli.py::test_help_lists_every_flag",
                                    "unit/patch/test_patch_cli.py::test_explicit_missing_rocm_root_is_an_error",
                                    "unit/patch/test_patch_cli.py::test_read_only_rocm_root_works_through_the_overlay",
                                    "hostile/test_untrusted_patch.py::test_rocm_header_that_is_a_fifo_is_refused_without_hanging",
                                    "hostile/test_untrusted_patch.py::test_rocm_header_that_is_dev_zero_is_refused",
                                    "hostile/test_untrusted_patch.py::test_a_fifo_as_the_rocm_version_file_does_not_hang",
                                    "hostile/test_untrusted_patch.py::test_twelve_concurrent_runs_all_succeed_and_leave_no_"
                                    "temporary_files") for a in ("--deselect", f"tests/{t}")))),
    "setup-stamps": (("resolver/workflows/steps.py",), ("tests/unit/workflows/test_setup_stamps.py", "tests/unit/workflows/test_pipeline.py",
                                                        "resolver/workflows/steps.py")),
    "fleet-classes": (("resolver/fleet/classes.py",), ("tests/unit/fleet/test_fleet_classes.py", "resolver/fleet/classes.py")),
    "doctor-table": (("resolver/doctor/signatures.py", "resolver/doctor/context.py"),
                     ("tests/unit/doctor/test_doctor_fixes.py", *(f"tests/unit/doctor/test_doctor.py::{t}" for t in (
                         "test_signature_matches_the_log_of_the_issue_it_cites", "test_a_clean_log_matches_nothing",
                         "test_the_seed_documents_five_errors_are_covered", "test_build_stuck_only_when_the_log_ends_there",
                         "test_named_groups_and_the_fix_are_filled_for_this_environment", "test_version_and_driver_checks",
                         "test_isolated_build_is_not_blamed_when_the_build_saw_the_environments_torch")),
                      "tests/unit/doctor/test_doctor_render.py",
                      *(f"tests/unit/doctor/test_doctor_log_corpus.py::{t}" for t in (
                          "test_each_corpus_log_is_read_as_its_family",
                          "test_every_signature_renders_without_a_hole_in_any_context",
                          "test_what_a_driver_runs_follows_the_tables", "test_console_prefixes_come_off_and_wrapped_words_join",
                          "test_a_log_that_matches_nothing_names_its_closest_families",
                          "test_every_pattern_starts_with_a_literal", "test_normalising_keeps_each_seed_log_in_its_family")),
                      "resolver/doctor/signatures.py", "resolver/doctor/context.py")),
    "lock-sources": (("resolver/project/sources.py",), ("tests/unit/project/test_lock_sources.py", "resolver/project/sources.py")),
    "lockfile": (("resolver/lock/lockfile.py",),
                 ("tests/unit/lock/test_lockfile.py", "tests/unit/lock/test_staleness.py",
                  "tests/unit/project/test_workspaces.py::test_a_lock_cut_into_rattlers_blocks_joins_back_to_the_same_bytes",
                  "resolver/lock/lockfile.py")),
    "install-fetch": (("resolver/install/fetch.py",), ("tests/unit/install/test_install_fetch.py", "resolver/install/fetch.py")),
    # the four tests that link with py-rattler skip in mutmut's forked children (rattler hangs after a fork):
    # run the survivors again in a fresh process each (docs/testing.md)
    "install-ready": (("resolver/install/environment.py", "resolver/install/__init__.py"),
                      ("tests/unit/install/test_install_ready.py", "tests/unit/install/test_install_difference.py",
                       "resolver/install/environment.py")),
}

COPIED = ("resolver", "tests", "pixi.toml", "recipes", "patches", "README.md", "docs")


def _scratch(campaign: str, modules: tuple[str, ...], tests: tuple[str, ...], base: Path) -> Path:
    work = Path(tempfile.mkdtemp(prefix=f"mutation-{campaign}-", dir=base))
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, work / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.is_file():
            shutil.copy2(source, work / name)
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    quoted = lambda items: "[" + ", ".join(json.dumps(i) for i in items) + "]"  # noqa: E731
    pyproject += ("\n[tool.mutmut]\n"
                  'source_paths = ["resolver/"]\n'
                  f"only_mutate = {quoted(modules)}\n"
                  f"also_copy = {quoted([n for n in COPIED if n not in ('resolver', 'tests')])}\n"
                  'pytest_add_cli_args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-x", "-q"]\n'
                  f"pytest_add_cli_args_test_selection = {quoted(tests)}\n"
                  "use_git_change_detection = false\n")
    (work / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    wheels = REPO / ".resolver" / "test-wheels"  # the local index the hermetic session needs: not fetched again
    if wheels.is_dir():
        for where in (work, work / "mutants"):
            (where / ".resolver").mkdir(parents=True, exist_ok=True)
            (where / ".resolver" / "test-wheels").symlink_to(wheels)
    return work


def run(campaign: str, *, max_children: int, keep: bool, timeout: int, base: Path) -> dict:
    modules, tests = CAMPAIGNS[campaign]
    work = _scratch(campaign, modules, tests, base)
    report = base / f"mutation-{campaign}.txt"
    mutmut = [sys.executable, "-m", "mutmut"]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    started = time.monotonic()
    try:
        try:
            done = subprocess.run([*mutmut, "run", "--max-children", str(max_children)], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=timeout)
            if done.returncode != 0:
                print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        except subprocess.TimeoutExpired:  # the figures so far still count: mutants not yet run show as such
            print(f"note: stopped after {timeout} s; the figures below are those of the mutants run so far",
                  file=sys.stderr)
        subprocess.run([*mutmut, "export-cicd-stats"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        stats = json.loads((work / "mutants" / "mutmut-cicd-stats.json").read_text())
        listing = subprocess.run([*mutmut, "results", "--all", "true"], cwd=work, env=env, capture_output=True,
                                 text=True, timeout=300).stdout
        survivors = [m.group(1) for m in re.finditer(r"^\s*([\w.]+__mutmut_\d+): (survived|no tests)", listing, re.M)]
        with open(report, "w", encoding="utf-8") as out:
            for name in survivors:
                shown = subprocess.run([*mutmut, "show", name], cwd=work, env=env, capture_output=True, text=True,
                                       timeout=120).stdout
                out.write(f"=== {name}\n{shown}\n")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(v for k, v in stats.items() if isinstance(v, int) and k != "total") if "total" not in stats \
        else stats["total"]
    killed = stats.get("killed", 0) + stats.get("timeout", 0)
    result = {"campaign": campaign, "modules": list(modules), "seconds": round(time.monotonic() - started),
              "killed": killed, "total": total, "survivors": len(survivors), "report": str(report),
              "stats": stats}
    print(json.dumps(result, indent=1))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("campaign", nargs="?", choices=sorted(CAMPAIGNS))
    parser.add_argument("--list", action="store_true", help="the campaigns, their modules and tests")
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (mutants/)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds before the campaign is stopped")
    parser.add_argument("--base", type=Path, default=Path(tempfile.gettempdir()),
                        help="where scratch folders and reports go (default: the temporary folder)")
    args = parser.parse_args()
    if args.list or not args.campaign:
        for name, (modules, tests) in CAMPAIGNS.items():
            print(f"{name}: {' '.join(modules)}\n    tests: {' '.join(tests)}")
        return 0
    run(args.campaign, max_children=args.max_children, keep=args.keep, timeout=args.timeout, base=args.base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
