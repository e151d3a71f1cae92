"""The Examples in the staging docstrings run as written."""

from __future__ import annotations

import doctest

import pytest

from jaxscope._jaxpr import api as _api
from jaxscope._jaxpr import view as _views


@pytest.mark.parametrize("module", [_api, _views], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
