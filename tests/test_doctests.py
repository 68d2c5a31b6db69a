"""Every ``>>>`` example in topo's docstrings runs and prints what it claims."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import topo

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(topo.__path__, prefix="topo.") if "cli" not in m.name
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
