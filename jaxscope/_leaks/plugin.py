"""pytest hooks for tracer leaks: ``--jax-check-leaks`` (ini ``jax_check_leaks``).

With the option on, each test's call phase runs inside ``jaxscope.check_leaks``: a
test that leaks a tracer fails with the report (what leaked, from which
transformation, the line that created it, and what holds it). What the test traces
is checked; a function an earlier test compiled, served from JAX's caches, is not
traced again (and JAX's caches are left as they are).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("jaxscope")
    group.addoption(
        "--jax-check-leaks",
        action="store_true",
        default=None,
        help="fail a test that leaks a JAX tracer, with where it was created and "
        "what holds it (default: off, or the jax_check_leaks ini option)",
    )
    parser.addini(
        "jax_check_leaks", "default of --jax-check-leaks", type="bool", default=False
    )


def _enabled(config: Any) -> bool:
    option = config.getoption("jax_check_leaks", default=None)
    if option is not None:
        return bool(option)
    return bool(config.getini("jax_check_leaks"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Generator[None, Any, Any]:
    if not _enabled(item.config):
        return (yield)
    from jaxscope._leaks.checker import check_leaks

    with check_leaks(raise_on_leak=False) as report:
        try:
            result = yield
        except BaseException:
            if report.leaks:
                item.add_report_section(
                    "call", "jaxscope tracer leaks", report.message(short=True)
                )
            raise
    if report.leaks:
        pytest.fail(f"jaxscope: {report.message(short=True)}", pytrace=False)
    return result
