# pyright: strict
"""pytest: ``@pytest.mark.jax_max_eqns(n)`` / ``(n, function="name")``, a program
size budget that catches accidental unrolling in CI, deterministic (no clock).

Within a marked test JAX writes its own ``eqn_count_pprof`` dump of every program
it lowers (into a temporary folder; the two dump options are restored on every
exit path); each program, or the one named, may have at most ``n`` equations at
all nesting levels (a loop body once). A failure lists the top lines.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_MARKER = "jax_max_eqns"
_NAME = re.compile(r"^jax_\d+_(?P<name>.+)\.eqn_count_pprof$")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(n, function=None): each program compiled in the test (or the "
        "function named) has at most n jaxpr equations (jaxscope)",
    )


def _budget(marker: Any) -> tuple[int, str | None] | str:
    args, kwargs = marker.args, dict(marker.kwargs)
    n = args[0] if args else kwargs.pop("n", None)
    function = kwargs.pop("function", None)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or kwargs:
        return (
            f"@pytest.mark.{_MARKER} takes a positive int and function=, got "
            f"{marker.args!r} {marker.kwargs!r}; write e.g. "
            f"@pytest.mark.{_MARKER}(5000, function='train_step')"
        )
    if function is not None and not isinstance(function, str):
        return f"@pytest.mark.{_MARKER}: function= takes a name, got {function!r}"
    return n, function


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Generator[None, object, object]:
    marker = item.get_closest_marker(_MARKER)
    if marker is None:
        outcome = yield
        return outcome
    budget = _budget(marker)
    if isinstance(budget, str):
        pytest.fail(budget, pytrace=False)
    limit, function = budget
    import jax

    config: Any = jax.config  # its flags are attributes pyright cannot see
    keys = ("jax_dump_ir_to", "jax_dump_ir_modes")
    before: dict[str, Any] = {k: config.values[k] for k in keys}
    result: object = None
    with tempfile.TemporaryDirectory(prefix="jaxscope-eqns-") as folder:
        try:
            config.update("jax_dump_ir_to", folder)
            config.update("jax_dump_ir_modes", "eqn_count_pprof")
            result = yield
        finally:
            for key, value in before.items():
                config.update(key, value)
        message = _check(Path(folder), limit, function, str(item.config.rootpath))
    if message:
        pytest.fail(message, pytrace=False)
    return result


def _check(folder: Path, limit: int, function: str | None, root: str) -> str:
    from jaxscope._compile.pprof import read_eqn_counts
    from jaxscope._paths import short_path

    seen: list[str] = []
    over: list[str] = []
    for path in sorted(folder.glob("*.eqn_count_pprof")):
        match = _NAME.match(path.name)
        name = match.group("name") if match else path.stem
        if (
            function is not None
            and name != function
            and not name.endswith(f".{function}")
        ):
            continue
        seen.append(name)
        counts = read_eqn_counts(path)
        total = sum(counts.values())
        if total <= limit:
            continue
        rows = [
            f"  {n:>7} eqns  {short_path(key[0])}:{key[1]}"
            for key, n in counts.most_common()
            if key is not None
        ][:8]
        over.append(
            f"{name} has {total} jaxpr equations, over the budget of {limit} "
            f"(@pytest.mark.{_MARKER}); top lines:\n" + "\n".join(rows)
        )
    if function is not None and not seen:
        return (
            f"@pytest.mark.{_MARKER}(function={function!r}): no function of that "
            "name was compiled in the test; check the name"
        )
    return "\n".join(over)
