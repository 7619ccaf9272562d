"""The examples in the probe's docstrings (its parsers are documented by them) run as tests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import resolver.probe

MODULES = sorted(m.name for m in pkgutil.iter_modules(resolver.probe.__path__, "resolver.probe."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"


def test_the_parsers_have_examples() -> None:
    for name in ("nvidia_parse", "amd_parse", "collect_env", "name_table", "report"):
        assert doctest.testmod(importlib.import_module(f"resolver.probe.{name}")).attempted >= 2, name
