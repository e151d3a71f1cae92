"""pytest hooks for recompiles: fixture, marker, option, terminal summary.

- fixture ``jax_recompiles``: a ``RecompileLog`` watching the test.
- marker ``@pytest.mark.jax_max_compiles(n)`` / ``(n, function="name")``: at most
  ``n`` compiles (the first included) of each (or the named) user function in the test.
- marker ``@pytest.mark.jax_max_recompiles(n)`` / ``(n, function="name")``: at most
  ``n`` recompiles, compiles after the first one in the test, of each (or the named)
  function. Both markers are enforced whatever the option says; a ``function=`` that
  names no function compiled in the test fails it.
- option ``--jax-recompiles=off|warn|fail`` (ini ``jax_recompiles``): for tests without
  a marker, warn or fail when any function compiles more than once.
- a terminal summary of the worst offenders of the run.

Functions are told apart by where they are defined (two lambdas are two functions).
Never counted: compiles of JAX's own eager ops (``jnp.ones(4)`` outside jit), and
recompiles that jaxscope's own leak checking causes (``--jax-check-leaks``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from jaxscope._exceptions import JaxRecompileWarning
from jaxscope._format import plural

if TYPE_CHECKING:
    from jaxscope._recompiles.records import RecompileEvent
    from jaxscope._recompiles.watcher import RecompileLog

# jaxscope's recompile modules (and so JAX) load only in a test that uses a watcher:
# the plugin is active in every pytest run of the environment, JAX or not.

_POLICIES = ("off", "warn", "fail")
_MARKER = "jax_max_recompiles"  # recompiles: compiles after the first in the test
_COMPILES_MARKER = "jax_max_compiles"  # compiles, the first included


class _BadMarker(ValueError):
    """A ``jax_max_compiles`` / ``jax_max_recompiles`` marker with arguments it does
    not take."""


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
        "named one) recompiles more than n times in it (compiles after its first "
        "one in the test)",
    )
    config.addinivalue_line(
        "markers",
        f"{_COMPILES_MARKER}(n, function=None): fail the test if a jitted function "
        "(or the named one) compiles more than n times in it (first compile "
        "included)",
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


def _marker_budgets(item: Any) -> list[tuple[str, int, str | None]]:
    """``(marker name, n, function)`` of each budget marker on ``item``."""
    return [
        (name, *_marker_budget(item, name))
        for name in (_COMPILES_MARKER, _MARKER)
        if item.get_closest_marker(name) is not None
    ]


def _marker_budget(item: Any, name: str) -> tuple[int, str | None]:
    marker = item.get_closest_marker(name)
    args, kwargs = marker.args, dict(marker.kwargs)
    function = kwargs.pop("function", None)
    if kwargs:
        raise _BadMarker(
            f"{name}: unknown argument(s) {sorted(kwargs)} in {item.nodeid}; "
            f"use {name}(n) or {name}(n, function='name')"
        )
    if len(args) != 1:
        raise _BadMarker(
            f"{name} takes one budget n, got {len(args)} positional arguments in "
            f"{item.nodeid}; use {name}(n)"
        )
    n = args[0]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise _BadMarker(
            f"{name}(n): n must be an int >= 0, got {n!r} in {item.nodeid}"
        )
    if function is not None and not isinstance(function, str):
        raise _BadMarker(
            f"{name}: function= must be a function name (str), got "
            f"{function!r} in {item.nodeid}"
        )
    return n, function


def _compiles_by_function(
    events: list[RecompileEvent],
) -> dict[Any, list[RecompileEvent]]:
    """The compiles charged to the user, per function (name and definition site)."""
    out: dict[Any, list[RecompileEvent]] = {}
    for e in events:
        if e.compiled:
            out.setdefault(e.key, []).append(e)
    return out


def _check_budget(
    marker: str, n: int, function: str | None, by_fn: dict[Any, list[RecompileEvent]]
) -> tuple[str, dict[Any, list[RecompileEvent]]] | None:
    """The failure title of one budget marker and the functions over it, or None
    when it holds."""
    from jaxscope._recompiles.records import function_matches

    if function is not None and not any(
        function_matches(k[0], function) for k in by_fn
    ):
        title = (
            f"{marker}({n}, function={function!r}): no function named {function!r} "
            "was compiled in this test"
        )
        return title, {}
    recompiles = marker == _MARKER
    over = {
        key: evs
        for key, evs in by_fn.items()
        if len(evs) - recompiles > n
        and (function is None or function_matches(key[0], function))
    }
    if not over:
        return None
    if recompiles:
        names = ", ".join(
            f"{key[0]} recompiled {plural(len(evs) - 1, 'time')} "
            f"({plural(len(evs), 'compile')} in this "
            "test; the first is not a recompile)"
            for key, evs in over.items()
        )
    else:
        names = ", ".join(
            f"{key[0]} compiled {plural(len(evs), 'time')} (first compile included)"
            for key, evs in over.items()
        )
    return f"{marker}({n}) exceeded: {names}", over


def _report(
    title: str, offenders: dict[Any, list[RecompileEvent]], root: Any = None
) -> str:
    """The failure text: one line per compile with its causes, then the hints.

    Paths under the rootdir are shown relative to it, as pytest shows test files;
    control characters of user strings are spelled out.
    """
    from jaxscope._recompiles.records import event_hints

    lines = [title]
    for events in offenders.values():
        for e in events:
            lines.append(f"  {_describe(e)}")
            lines.extend(f"      hint: {hint}" for hint in event_hints(e))
            lines.extend(f"      changed: {line}" for line in _program_changes(e))
    from jaxscope._display import printable

    text = printable("\n".join(lines))
    if root is not None:
        text = text.replace(os.path.join(str(root), ""), "")
    return text


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    config = item.config
    bad = None
    try:
        budgets = _marker_budgets(item)
    except _BadMarker as exc:
        bad, budgets = str(exc), []
    if bad is not None:
        pytest.fail(bad, pytrace=False)
    policy = config.stash.get(_policy_key, "off")
    if not budgets and policy == "off":
        return (yield)
    config.stash[_used_key] = True
    from jaxscope._recompiles.watcher import RecompileLog

    log = RecompileLog()
    log.start()
    try:
        result = yield
    finally:
        log.stop()
        if "jax_recompiles" not in getattr(item, "fixturenames", ()):
            _add_totals(config, log, item.nodeid)  # else the fixture counts them
    by_fn = _compiles_by_function(log.events)
    if budgets:
        failures = [_check_budget(m, n, fn, by_fn) for m, n, fn in budgets]
        failed = [f for f in failures if f is not None]
        if failed:
            over = {key: evs for _, found in failed for key, evs in found.items()}
            title = "\n".join(t for t, _ in failed)
            pytest.fail(_report(title, over, config.rootpath), pytrace=False)
        return result
    offenders = {key: evs for key, evs in by_fn.items() if len(evs) > 1}
    if offenders:
        names = ", ".join(
            f"{key[0]} compiled {plural(len(evs), 'time')}"
            for key, evs in offenders.items()
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
    from jaxscope._display import printable

    for name, (count, seconds, tests) in rows:
        worst, n = max(tests.items(), key=lambda kv: kv[1])
        more = f" and {plural(len(tests) - 1, 'more test')}" if len(tests) > 1 else ""
        terminalreporter.write_line(
            printable(
                f"{int(count):5d} {'compile ' if count == 1 else 'compiles'}  "
                f"{seconds:8.3f} s  {name}  "
                f"[most in {worst}: {n}{more}]"
            )
        )


def _program_changes(event: RecompileEvent, limit: int = 3) -> list[str]:
    """What the recompile changed in the program, by source line (at most
    ``limit`` lines); nothing for a first compile or a program JAX no longer holds."""
    if event.programs is None or event.programs[0] is None:
        return []
    try:
        found = event.diff().summary(limit=limit)
    except Exception:  # the failure text stands without it
        return []
    return [line for line in found if not line.startswith("cause: ")]


def _describe(event: RecompileEvent) -> str:
    from jaxscope._recompiles.records import describe_event

    return describe_event(event)
