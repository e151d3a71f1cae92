"""pytest hooks for recompiles: fixture, marker, option, terminal summary.

- fixture ``jax_recompiles``: a ``RecompileLog`` watching the test.
- marker ``@pytest.mark.jax_max_recompiles(n)`` / ``(n, function="name")``: at most
  ``n`` compiles (first included) of each (or the named) user function in the test;
  enforced whatever the option says.
- option ``--jax-recompiles=off|warn|fail`` (ini ``jax_recompiles``): for tests without
  a marker, warn or fail when any function compiles more than once.
- a terminal summary of the worst offenders of the run.

Compiles of JAX's own eager ops (``jnp.ones(4)`` outside jit) are never counted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from jaxscope._exceptions import JaxRecompileWarning

if TYPE_CHECKING:
    from jaxscope._recompiles.records import RecompileEvent
    from jaxscope._recompiles.watcher import RecompileLog

# jaxscope's recompile modules (and so JAX) load only in a test that uses a watcher:
# the plugin is active in every pytest run of the environment, JAX or not.

_POLICIES = ("off", "warn", "fail")
_MARKER = "jax_max_recompiles"


class _BadMarker(ValueError):
    """A ``jax_max_recompiles`` marker with arguments it does not take."""


_totals_key = pytest.StashKey[dict[str, list[Any]]]()
_policy_key = pytest.StashKey[str]()
_used_key = pytest.StashKey[bool]()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("jaxscope")
    group.addoption(
        "--jax-recompiles",
        action="store",
        default=None,
        choices=_POLICIES,
        help="for tests without a jax_max_recompiles marker: warn or fail when a "
        "jitted function compiles more than once in a test (default: off, or the "
        "jax_recompiles ini option)",
    )
    parser.addini(
        "jax_recompiles", "default of --jax-recompiles (off|warn|fail)", default="off"
    )


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(n, function=None): fail the test if a jitted function (or the "
        "named one) compiles more than n times in it (first compile included)",
    )
    policy = config.getoption("--jax-recompiles") or config.getini("jax_recompiles")
    policy = str(policy).strip().lower() or "off"
    if policy not in _POLICIES:
        raise pytest.UsageError(
            f"jax_recompiles ini option is {policy!r}; use off, warn or fail"
        )
    config.stash[_policy_key] = policy
    config.stash[_totals_key] = {}
    config.stash[_used_key] = False


def _marker_budget(item: Any) -> tuple[int, str | None] | None:
    marker = item.get_closest_marker(_MARKER)
    if marker is None:
        return None
    args, kwargs = marker.args, dict(marker.kwargs)
    function = kwargs.pop("function", None)
    if kwargs:
        raise _BadMarker(
            f"{_MARKER}: unknown argument(s) {sorted(kwargs)} in {item.nodeid}; "
            "use jax_max_recompiles(n) or jax_max_recompiles(n, function='name')"
        )
    if len(args) != 1:
        raise _BadMarker(
            f"{_MARKER} takes one budget n, got {len(args)} positional arguments in "
            f"{item.nodeid}; use jax_max_recompiles(n)"
        )
    n = args[0]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise _BadMarker(
            f"{_MARKER}(n): n must be an int >= 0, got {n!r} in {item.nodeid}"
        )
    if function is not None and not isinstance(function, str):
        raise _BadMarker(
            f"{_MARKER}: function= must be a function name (str), got "
            f"{function!r} in {item.nodeid}"
        )
    return n, function


def _compiles_by_function(
    events: list[RecompileEvent],
) -> dict[str, list[RecompileEvent]]:
    out: dict[str, list[RecompileEvent]] = {}
    for e in events:
        if e.compiled:
            out.setdefault(e.function, []).append(e)
    return out


def _report(
    title: str, offenders: dict[str, list[RecompileEvent]], root: Any = None
) -> str:
    """The failure text: one line per compile with its causes, then the hints.

    Paths under the rootdir are shown relative to it, as pytest shows test files.
    """
    lines = [title]
    for events in offenders.values():
        for e in events:
            lines.append(f"  {_describe(e)}")
            for c in e.causes:
                if c.kind != "first_call" and c.hint:
                    lines.append(f"      hint: {c.hint}")
    text = "\n".join(lines)
    if root is not None:
        text = text.replace(os.path.join(str(root), ""), "")
    return text


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    config = item.config
    bad = None
    try:
        budget = _marker_budget(item)
    except _BadMarker as exc:
        bad, budget = str(exc), None
    if bad is not None:
        pytest.fail(bad, pytrace=False)
    policy = config.stash.get(_policy_key, "off")
    if budget is None and policy == "off":
        return (yield)
    config.stash[_used_key] = True
    from jaxscope._recompiles.records import function_matches
    from jaxscope._recompiles.watcher import RecompileLog

    log = RecompileLog()
    log.start()
    try:
        result = yield
    finally:
        log.stop()
        _add_totals(config, log, item.nodeid)
    by_fn = _compiles_by_function(log.events)
    if budget is not None:
        n, function = budget
        offenders = {
            fn: evs
            for fn, evs in by_fn.items()
            if len(evs) > n and (function is None or function_matches(fn, function))
        }
        if offenders:
            names = ", ".join(
                f"{fn} compiled {len(evs)} times" for fn, evs in offenders.items()
            )
            pytest.fail(
                _report(
                    f"{_MARKER}({n}) exceeded: {names}", offenders, config.rootpath
                ),
                pytrace=False,
            )
        return result
    offenders = {fn: evs for fn, evs in by_fn.items() if len(evs) > 1}
    if offenders:
        names = ", ".join(
            f"{fn} compiled {len(evs)} times" for fn, evs in offenders.items()
        )
        msg = _report(f"jax recompiles: {names}", offenders, config.rootpath)
        if policy == "fail":
            pytest.fail(msg, pytrace=False)
        item.warn(JaxRecompileWarning(msg))
    return result


def _add_totals(config: Any, log: RecompileLog, nodeid: str) -> None:
    totals = config.stash.get(_totals_key, None)
    if totals is None:
        return
    for e in log.events:
        if not e.compiled:
            continue
        where = str(e.defined_at) if e.defined_at else ""
        root = os.path.join(str(config.rootpath), "")
        key = f"{e.function} ({where.replace(root, '')})" if where else e.function
        row = totals.setdefault(key, [0, 0.0, {}])
        row[0] += 1
        row[1] += e.seconds
        row[2][nodeid] = row[2].get(nodeid, 0) + 1


@pytest.fixture
def jax_recompiles(request: Any) -> Iterator[RecompileLog]:
    """A ``RecompileLog`` watching this test (stopped at teardown)."""
    request.config.stash[_used_key] = True
    from jaxscope._recompiles.watcher import RecompileLog

    log = RecompileLog()
    log.start()
    try:
        yield log
    finally:
        log.stop()
        _add_totals(request.config, log, request.node.nodeid)


def pytest_terminal_summary(
    terminalreporter: Any, exitstatus: Any, config: Any
) -> None:
    if not config.stash.get(_used_key, False):
        return
    totals = config.stash.get(_totals_key, {})
    rows = sorted(totals.items(), key=lambda kv: (-kv[1][0], -kv[1][1]))[:10]
    terminalreporter.write_sep("-", "jaxscope: most compiled jitted functions")
    if not rows:
        terminalreporter.write_line("no compiles of jitted functions recorded")
        return
    for name, (count, seconds, tests) in rows:
        worst, n = max(tests.items(), key=lambda kv: kv[1])
        more = f" and {len(tests) - 1} more tests" if len(tests) > 1 else ""
        terminalreporter.write_line(
            f"{int(count):5d} compiles  {seconds:8.3f} s  {name}  "
            f"[most in {worst}: {n}{more}]"
        )


def _describe(event: RecompileEvent) -> str:
    from jaxscope._recompiles.records import describe_event

    return describe_event(event)
