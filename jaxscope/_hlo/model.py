"""StableHLO / HLO / optimized HLO of a traced call: text, op table, cost and memory.

Everything here uses the public ``jax.stages`` API (``Lowered.as_text``,
``Lowered.compile``, ``Compiled.as_text``, ``cost_analysis``, ``memory_analysis``)
and parses the printed text (``_hlo.parse`` for HLO, ``_hlo.stablehlo`` for MLIR),
so no private JAX internal is needed. HLO (``as_text(dialect="hlo",
debug_info=True)``) and optimized HLO (``Compiled.as_text()``) carry op metadata;
StableHLO (``as_text(debug_info=True)``) carries MLIR locations.

The text a user sees (``.text``) is exactly what JAX prints for the stage; the
debug-info text used for the op table is produced separately, on first use.
Nothing is ever executed: the optimized stage compiles, the others only lower.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, cast

from jaxscope._exceptions import HloError, InvalidCallError, JaxscopeError
from jaxscope._hlo.loops import Loop, loops
from jaxscope._hlo.ops import ParsedOps, by_line, parse_hlo
from jaxscope._hlo.parse import instructions
from jaxscope._hlo.stablehlo import parse_stablehlo
from jaxscope._records import OpInfo
from jaxscope._source import current_program
from jaxscope._staging import first_line

STAGES: tuple[str, ...] = ("stablehlo", "hlo", "optimized")


def check_stage(stage: Any, api_name: str = "js.hlo") -> str:
    """Return ``stage`` if it is one of ``STAGES``; raise ``InvalidCallError`` otherwise."""
    if not isinstance(stage, str) or stage not in STAGES:
        raise InvalidCallError(
            f"{api_name}: unknown stage {stage!r}; use stage='stablehlo', 'hlo' or "
            "'optimized' (post-fusion HLO)"
        )
    return stage


def _error_line(exc: BaseException) -> str:
    return first_line(str(exc)) or type(exc).__name__


_READABLE_COST = {
    "flops": "flops",
    "transcendentals": "transcendentals",
    "bytes accessed": "bytes_accessed",
    "optimal_seconds": "optimal_seconds",
    "utilization": "utilization",
}


def normalize_cost(raw: Any) -> dict[str, float] | None:
    """``cost_analysis()`` output as one dict with readable keys, or None.

    Readable keys (``flops``, ``transcendentals``, ``bytes_accessed``) come first,
    then every raw key as the backend spelled it. A list of dicts (one per
    program, as older JAX returned) is summed.
    """
    if raw is None:
        return None
    if isinstance(raw, (list, tuple)):
        merged: dict[str, float] = {}
        for part in cast("list[Any]", raw):
            if isinstance(part, Mapping):
                for key, value in cast("Mapping[Any, Any]", part).items():
                    if isinstance(value, (int, float)):
                        merged[str(key)] = merged.get(str(key), 0.0) + float(value)
        raw = merged
    if not isinstance(raw, Mapping) or not raw:
        return None
    items = cast("Mapping[Any, Any]", raw).items()
    numbers = {str(k): float(v) for k, v in items if isinstance(v, (int, float))}
    if not numbers:
        return None
    out: dict[str, float] = {}
    for raw_key, key in _READABLE_COST.items():
        if raw_key in numbers:
            out[key] = numbers[raw_key]
    out.update(numbers)
    return out


_MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
    "alias_bytes": "alias_size_in_bytes",
    "generated_code_bytes": "generated_code_size_in_bytes",
}


def normalize_memory(stats: Any) -> dict[str, int | None] | None:
    """``memory_analysis()`` output as a dict of byte counts (None where absent)."""
    if stats is None:
        return None
    out: dict[str, int | None] = {}
    for key, attr in _MEMORY_FIELDS.items():
        value = getattr(stats, attr, None)
        out[key] = int(value) if isinstance(value, (int, float)) else None
    if all(value is None for value in out.values()):
        return None
    return out


def _safe(call: Callable[[], Any]) -> Any:
    # Backends may lack an analysis (NotImplementedError, XlaRuntimeError, ...).
    try:
        return call()
    except Exception:
        return None


# --------------------------------------------------------------------------- capture


class HloCapture:
    """One call lowered (and for ``optimized`` compiled): text now, the rest on demand.

    Holds the ``Lowered`` / ``Compiled`` stage objects (never the example arrays
    themselves) so that the op table, cost and memory are computed only when read.
    """

    def __init__(
        self, lowered: Any, stage: str, compiled: Any = None, jaxpr: Any = None
    ) -> None:
        self.stage = check_stage(stage)
        # the ops are parsed later (on first use): the program's scope is kept now
        self.scope = current_program()
        self.lowered = lowered  # the ``jax.stages.Lowered`` the text came from
        self._compiled = compiled
        self.jaxpr = jaxpr  # the traced ``ClosedJaxpr``, to find loops; None: unknown
        if stage == "stablehlo":
            self.text: str = lowered.as_text()
        elif stage == "hlo":
            self.text = lowered.as_text(dialect="hlo")
        else:
            self.text = self.compiled().as_text()

    def compiled(self) -> Any:
        """The ``Compiled`` stage object (compiling on first use for other stages)."""
        if self._compiled is None:
            try:
                self._compiled = self.lowered.compile()
            except Exception as exc:
                raise HloError(
                    f"XLA could not compile the program ({type(exc).__name__}: "
                    f"{_error_line(exc)}); try stage='hlo' or stage='stablehlo'"
                ) from exc
        return self._compiled

    def debug_text(self) -> str:
        """The stage's text with source information (op metadata / MLIR locations)."""
        if self.stage == "stablehlo":
            return self.lowered.as_text(debug_info=True)
        if self.stage == "hlo":
            return self.lowered.as_text(dialect="hlo", debug_info=True)
        return self.text  # compiled HLO always carries its metadata

    @functools.cached_property
    def parsed(self) -> ParsedOps:
        """The op table, parsed on first use."""
        try:
            source_text = self.debug_text()
        except Exception:
            # No debug-info printer for this program: ops without sources.
            source_text = self.text
        if self.stage == "stablehlo":
            return parse_stablehlo(source_text, self.scope)
        parsed = parse_hlo(source_text, self.scope)
        if self.stage == "hlo":
            parsed = _align_hlo_lines(parsed, self.text)
        return parsed

    @property
    def ops(self) -> list[OpInfo]:
        return self.parsed.ops

    @functools.cached_property
    def by_line(self) -> dict[tuple[str, int], list[OpInfo]]:
        """``{(file, line): [ops]}`` in op order, for ops with a known source."""
        return by_line(self.ops)

    @functools.cached_property
    def cost(self) -> dict[str, float] | None:
        """Cost analysis: of the compiled program for ``optimized``, else of the lowered one."""
        if self.stage == "optimized":
            return normalize_cost(_safe(lambda: self.compiled().cost_analysis()))
        return normalize_cost(_safe(lambda: self.lowered.cost_analysis()))

    @functools.cached_property
    def loops(self) -> list[Loop] | None:
        """The program's outermost loops (None when the jaxpr is not known)."""
        return None if self.jaxpr is None else _safe(lambda: loops(self.jaxpr))

    @functools.cached_property
    def memory(self) -> dict[str, int | None] | None:
        """Memory analysis of the compiled program (compiles on first use if needed)."""
        compiled = _safe(self.compiled)
        if compiled is None:
            return None
        return normalize_memory(_safe(lambda: compiled.memory_analysis()))


def _align_hlo_lines(parsed: ParsedOps, text: str) -> ParsedOps:
    """Re-point op line numbers from the debug text to ``text`` (no metadata tables)."""
    positions: dict[tuple[str, str], int] = {}
    for instr in instructions(text.splitlines()):
        positions.setdefault((instr.computation, instr.name), instr.index)
    lines = [positions.get((op.computation, op.name), -1) for op in parsed.ops]
    return ParsedOps(parsed.ops, lines, parsed.raw_files)


def capture(traced: Any, stage: str, lowered: Any = None) -> HloCapture:
    """Lower a ``jax.stages.Traced`` (and compile it for ``optimized``); never run it.

    ``lowered``: the program as the function's library lowers it, when that differs
    from lowering ``traced`` (``eqx.filter_jit``); ``traced`` then gives its loops.
    """
    check_stage(stage)
    try:
        if lowered is None:
            lowered = traced.lower()
    except JaxscopeError:
        raise
    except Exception as exc:
        raise HloError(
            f"JAX could not lower the program ({type(exc).__name__}: "
            f"{_error_line(exc)}); check the function with js.jaxpr first"
        ) from exc
    return HloCapture(lowered, stage, jaxpr=getattr(traced, "jaxpr", None))
