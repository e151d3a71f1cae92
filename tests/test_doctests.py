"""The ``Example:`` sections of public docstrings run, as users will copy them."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import jaxscope


def modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(jaxscope.__path__, "jaxscope."):
        module = importlib.import_module(info.name)
        source = getattr(module, "__doc__", "") or ""
        if ">>> " in source or any(
            ">>> " in (getattr(obj, "__doc__", None) or "")
            for obj in vars(module).values()
            if getattr(obj, "__module__", None) == info.name
        ):
            names.append(info.name)
    return names


MODULES = modules_with_examples()


def test_public_functions_carry_examples():
    assert {
        "jaxscope._jaxpr.api",
        "jaxscope._purity.watcher",
        "jaxscope._stepper.stepper",
    } <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(
        importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
