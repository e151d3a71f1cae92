"""``--jax-purity=off|warn|fail``: trace-time side effects and stale captures per test."""

from __future__ import annotations

from typing import Any

import pytest

_POLICIES = ("off", "warn", "fail")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("jaxscope")
    group.addoption(
        "--jax-purity",
        choices=_POLICIES,
        default=None,
        help="report trace-time side effects and stale captured values found in a "
        "test: off (default), warn, fail",
    )
    parser.addini(
        "jax_purity", "default for --jax-purity (off, warn, fail)", default="off"
    )


def _policy(config: Any) -> str:
    value = config.getoption("--jax-purity") or config.getini("jax_purity") or "off"
    if value not in _POLICIES:
        raise pytest.UsageError(
            f"jax_purity = {value!r} is not a policy; use one of off, warn, fail"
        )
    return value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    policy = _policy(item.config)
    if policy == "off":
        return (yield)
    from jaxscope._purity.render import finding_line
    from jaxscope._purity.watcher import PurityLog  # JAX loads only when asked for

    log = PurityLog().start()
    try:
        result = yield  # a failing test raises here and is reported as it is
    finally:
        log.stop()
    findings = log.findings
    if not findings:
        return result
    lines = "\n".join("  " + finding_line(f) for f in findings)
    message = f"jaxscope purity: {len(findings)} finding(s) in {item.nodeid}:\n{lines}"
    if policy == "fail":
        pytest.fail(message, pytrace=False)
    item.warn(pytest.PytestWarning(message))
    return result
