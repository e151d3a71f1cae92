"""pytest: a failing test whose exception came from JAX gets ``js.explain``'s report.

The report is added as a section of the test report (``jaxscope: source-mapped JAX
error``), shown under the failure like captured output. ``--jax-explain=off`` turns it
off (ini option ``jax_explain``).
"""

from __future__ import annotations

from typing import Any

import pytest

SECTION = "jaxscope: source-mapped JAX error"
_CHOICES = ("on", "off")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("jaxscope")
    group.addoption(
        "--jax-explain",
        choices=_CHOICES,
        default=None,
        help="add the source-mapped report of JAX errors to failing tests (default: on)",
    )
    parser.addini(
        "jax_explain",
        "on/off: add the source-mapped report of JAX errors to failing tests",
        default="on",
    )


def _enabled(config: Any) -> bool:
    value = config.getoption("--jax-explain", default=None)
    if value is None:
        value = str(config.getini("jax_explain") or "on").strip().lower()
        if value not in _CHOICES:
            raise pytest.UsageError(
                f"ini option jax_explain must be 'on' or 'off', got {value!r}"
            )
    return value == "on"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is None or not report.failed or not _enabled(item.config):
        return
    exc = excinfo.value
    try:
        from jaxscope._display import rendered_text
        from jaxscope._explain.classify import explainable
        from jaxscope._explain.explainer import explain
        from jaxscope._explain.report import relativize

        if not explainable(exc):
            return
        report_ = relativize(explain(exc), str(item.config.rootpath))
        text = rendered_text(
            report_, 100, soft_wrap=True
        )  # long code hints stay on one line
    except Exception:  # an explanation must never turn into a second failure
        return
    report.sections.append((SECTION, text))
