"""The examples in the probe's docstrings (its parsers are documented by them) run as tests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import resolver.plan.probe

MODULES = sorted(m.name for m in pkgutil.iter_modules(resolver.plan.probe.__path__, "resolver.plan.probe."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"


PARSERS = ("nvidia_parse", "amd_parse", "collect_env", "name_table", "report")


@pytest.mark.parametrize("name", PARSERS)
def test_every_text_parser_is_shown_at_work_in_its_examples(name: str) -> None:
    """Each public function of a parser module that reads text (its first parameter is text, not a
    machine or a file) is called by an example of that module that states what it returns."""
    import inspect
    import re

    module = importlib.import_module(f"resolver.plan.probe.{name}")
    checked = {call for test in doctest.DocTestFinder().find(module) if any(ex.want.strip() for ex in test.examples)
               for ex in test.examples for call in re.findall(r"\b([A-Za-z_]\w*)\(", ex.source)}
    readers = [fname for fname, func in vars(module).items()
               if inspect.isfunction(func) and func.__module__ == module.__name__ and not fname.startswith("_")
               and (params := list(inspect.signature(func).parameters)) and params[0] in ("text", "output", "name")]
    assert readers, name
    assert [f for f in readers if f not in checked] == [], f"{name}: parsers without an example that checks an answer"
