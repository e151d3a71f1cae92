# pyright: strict
"""pytest: the ``jax_snapshot`` fixture (IR snapshots) and ``--jax-snapshot-update``.

``jax_snapshot(f, flops=0.02)(*args)`` traces and compiles ``f`` (never runs it),
compares its program with the snapshot stored next to the test
(``__jax_snapshots__/<module>/<test>.json``, syrupy's layout) and fails the test with
the program diff, by source line, when they differ; ``--jax-snapshot-update``
writes the snapshots instead. A missing snapshot fails with how to write it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

_written_key = pytest.StashKey[list[str]]()
_UPDATE = "--jax-snapshot-update"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("jaxscope")
    group.addoption(
        _UPDATE,
        action="store_true",
        default=False,
        help="write the IR snapshots of jax_snapshot (new and changed ones) "
        "instead of comparing",
    )


def pytest_configure(config: Any) -> None:
    config.stash[_written_key] = []


class JaxSnapshot:
    """The ``jax_snapshot`` fixture: ``jax_snapshot(f, **tolerances)(*args)``."""

    def __init__(self, request: Any) -> None:
        self._request = request
        self._count = 0

    def __call__(
        self,
        fn: Callable[..., Any],
        *,
        hlo: bool = True,
        static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (),
        **tolerances: float,
    ) -> Callable[..., None]:
        """Check ``fn``'s program on the arguments the result is called with.

        Args:
            fn: the function (jitted or not).
            hlo: also store and compare the optimized HLO (ops, costs per line).
            static_argnums, static_argnames: as ``js.jaxpr`` takes them.
            **tolerances: relative tolerances by number (``flops=0.02``,
                ``bytes_accessed=0.05``, ``peak_bytes``...).
        """
        from jaxscope._diff.snapshot import check_tolerances
        from jaxscope._exceptions import JaxscopeError
        from jaxscope._staging import check_callable, static_args

        try:
            check_callable(fn, "jax_snapshot")
            limits = check_tolerances(tolerances)
            nums, names = static_args(static_argnums, static_argnames, "jax_snapshot")
        except JaxscopeError as exc:
            pytest.fail(str(exc), pytrace=False)
        index = self._count
        self._count += 1

        def call(*args: Any, **kwargs: Any) -> None:
            self._check(fn, args, kwargs, hlo, nums, names, limits, index)

        return call

    def _check(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        hlo: bool,
        nums: tuple[int, ...],
        names: tuple[str, ...],
        tolerances: dict[str, float],
        index: int,
    ) -> None:
        from jaxscope._diff.snapshot import check, snapshot_facts, snapshot_path
        from jaxscope._display import to_text

        node = self._request.node
        config = node.config
        path = snapshot_path(Path(str(node.path)), node.name, index)
        facts = snapshot_facts(
            fn, args, kwargs, hlo=hlo, static_argnums=nums, static_argnames=names
        )
        update = bool(config.getoption(_UPDATE))
        outcome = check(path, facts, update=update, tolerances=tolerances)
        shown = _shown(path, config)
        if outcome.status == "written":
            config.stash[_written_key].append(shown)
        elif outcome.status == "missing":
            pytest.fail(
                f"jax_snapshot: no snapshot {shown} yet; run pytest {_UPDATE} to "
                "write it",
                pytrace=False,
            )
        elif outcome.status == "unreadable":
            pytest.fail(
                f"jax_snapshot: cannot read {shown} ({outcome.message}); run pytest "
                f"{_UPDATE} to write it again",
                pytrace=False,
            )
        elif outcome.status == "changed" and outcome.diff is not None:
            outcome.diff.before_name = "snapshot"
            pytest.fail(
                f"jax_snapshot: the program differs from {shown} (run pytest "
                f"{_UPDATE} to accept it)\n{to_text(outcome.diff, width=100)}",
                pytrace=False,
            )


def _shown(path: Path, config: Any) -> str:
    try:
        return str(path.relative_to(Path(str(config.rootpath))))
    except ValueError:
        return str(path)


@pytest.fixture
def jax_snapshot(request: Any) -> JaxSnapshot:
    """``jax_snapshot(f, flops=0.02)(*args)``: compare ``f``'s program (equations
    and optimized HLO by source line, costs, collectives) with the snapshot stored
    next to the test; ``pytest --jax-snapshot-update`` writes it."""
    return JaxSnapshot(request)


def pytest_terminal_summary(
    terminalreporter: Any, exitstatus: Any, config: Any
) -> None:
    written = config.stash.get(_written_key, [])
    if written:
        terminalreporter.write_sep("-", "jaxscope: IR snapshots written")
        for path in written:
            terminalreporter.write_line(path)
