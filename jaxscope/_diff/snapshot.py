# pyright: strict
"""IR snapshots: a program's facts stored as JSON next to a test, and compared.

A snapshot holds the equations and optimized-HLO summary per user line, costs and
collectives (``facts.to_json``): no variable names, instruction names, addresses or
absolute paths, so it stays the same across runs and machines with one JAX version.
Files follow syrupy's layout (``<dir>/<test module>/<test name>.json`` beside the
test file, a numbered suffix for the second snapshot of one test) in a folder of
their own, ``__jax_snapshots__``: syrupy reports the files it finds in its
``__snapshots__`` that no syrupy assertion read as unused, and deletes them on
``--snapshot-update``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxscope._diff.facts import ProgramFacts, from_json, portable, to_json
from jaxscope._diff.model import NUMBERS, ProgramDiff, compare
from jaxscope._exceptions import InvalidCallError

#: Numbers a tolerance may name: the totals' and each line's.
TOLERANCE_NAMES = (*NUMBERS, "bytes", "fusions")
_UNSAFE = re.compile(r"[^\w.-]+")


def snapshot_path(test_file: Path, test_name: str, index: int) -> Path:
    """``<dir>/__jax_snapshots__/<module>/<test name>[.<index>].json``."""
    name = _UNSAFE.sub("_", test_name).strip("_") or "snapshot"
    if index:
        name = f"{name}.{index}"
    return test_file.parent / "__jax_snapshots__" / test_file.stem / f"{name}.json"


def check_tolerances(tolerances: Mapping[str, Any]) -> dict[str, float]:
    """The tolerances as floats; one clear line for an unknown name or a bad value."""
    out: dict[str, float] = {}
    for name, value in tolerances.items():
        if name not in TOLERANCE_NAMES:
            raise InvalidCallError(
                f"jax_snapshot: no number named {name!r} to give a tolerance; use "
                f"{', '.join(TOLERANCE_NAMES)} (e.g. flops=0.02)"
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InvalidCallError(
                f"jax_snapshot: {name}={value!r} is not a relative tolerance; write "
                f"e.g. {name}=0.02 (2%)"
            )
        out[name] = float(value)
    return out


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one snapshot check found: ``status`` is ``"same"``, ``"written"``,
    ``"missing"``, ``"unreadable"`` or ``"changed"`` (with the ``diff``)."""

    status: str
    path: Path
    diff: ProgramDiff | None = None
    message: str = ""


def write(path: Path, facts: ProgramFacts) -> None:
    """Write ``facts`` as a snapshot (folders made as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(to_json(facts), indent=1, sort_keys=False, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def check(
    path: Path,
    facts: ProgramFacts,
    *,
    update: bool,
    tolerances: Mapping[str, float],
) -> Outcome:
    """Compare ``facts`` with the snapshot at ``path`` (write it with ``update``)."""
    live = portable(facts)
    if not path.exists():
        if update:
            write(path, live)
            return Outcome("written", path)
        return Outcome("missing", path)
    try:
        stored = from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        if update:
            write(path, live)
            return Outcome("written", path)
        return Outcome("unreadable", path, message=str(exc))
    diff = compare(stored, live, tolerances=tolerances)
    if diff.empty:
        return Outcome("same", path)
    if update:
        write(path, live)
        return Outcome("written", path, diff)
    return Outcome("changed", path, diff)


def snapshot_facts(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    hlo: bool,
    static_argnums: tuple[int, ...] = (),
    static_argnames: tuple[str, ...] = (),
) -> ProgramFacts:
    """The facts a snapshot stores of ``fn(*args, **kwargs)`` (traced, compiled)."""
    from jaxscope._diff.api import program_of

    return program_of(fn, args, kwargs, static_argnums, static_argnames, hlo)
