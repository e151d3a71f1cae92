"""What the stepper reports: the frame stack, value summaries and NaN/Inf findings.

Plain records of strings and numbers (``NanFinding`` renders), and the checks on
concrete values they are made from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxscope._display import Renderable
from jaxscope._format import short_dtype, truncate
from jaxscope._host import aval_text, dtype_name, host_array, is_inexact, is_key
from jaxscope._records import EqnInfo, SourceLoc


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One level of the stack of nested jaxprs the stepper is inside.

    ``label`` is the function name for the top frame, else e.g. ``"jit(inner)"``,
    ``"scan body"``, ``"while cond"``, ``"cond branch 1"``. ``iteration`` is the loop
    iteration inside scan/while bodies (``length`` is the scan length), ``position``
    the index of the frame's current equation among its ``n_eqns``.
    """

    label: str
    primitive: str | None
    call: EqnInfo | None
    path: tuple[int, ...]
    iteration: int | None
    length: int | None
    position: int
    n_eqns: int
    source: SourceLoc | None

    def __str__(self) -> str:
        return self.describe()

    def describe(self, loc: Callable[[SourceLoc], str] = str) -> str:
        """``label [iteration i/n] at file:line``, the place written by ``loc``."""
        it = ""
        if self.iteration is not None:
            total = f"/{self.length}" if self.length is not None else ""
            it = f" [iteration {self.iteration}{total}]"
        where = f" at {loc(self.source)}" if self.source is not None else ""
        return f"{self.label}{it}{where}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueSummary:
    """A concrete value described with strings and numbers (never the array itself)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    aval: str
    min: float | None
    max: float | None
    mean: float | None
    nan_count: int
    inf_count: int
    preview: str
    user_name: str = ""

    @property
    def label(self) -> str:
        """``params['w'] (a)``: the user's name where known, then the jaxpr's."""
        return f"{self.user_name} ({self.name})" if self.user_name else self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class NanFinding(Renderable):
    """The first equation that produced a NaN or Inf, with its inputs and outputs."""

    eqn: EqnInfo
    kind: str
    inputs: list[ValueSummary]
    outputs: list[ValueSummary]
    frames: list[Frame]

    @property
    def source(self) -> SourceLoc | None:
        return self.eqn.source

    @property
    def primitive(self) -> str:
        return self.eqn.primitive

    @property
    def path(self) -> tuple[int, ...]:
        return self.eqn.path

    def __repr__(self) -> str:
        where = f" at {self.eqn.source}" if self.eqn.source is not None else ""
        return f"<NanFinding: {self.kind} from {self.eqn.primitive}{where}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class NanInInput(Renderable):
    """A NaN or Inf already in an argument of the call: no equation produced it, it
    came in (from an earlier step, a bad initialisation, the data)."""

    path: str
    kind: str
    value: ValueSummary

    @property
    def source(self) -> SourceLoc | None:
        return None

    @property
    def primitive(self) -> str:
        return "input"

    def __repr__(self) -> str:
        return f"<NanInInput: {self.kind} already in {self.path}>"


def summarize_value(
    name: str, value: Any, preview_chars: int = 120, user_name: str = ""
) -> ValueSummary:
    """Shape, dtype and statistics of a concrete value (host copy, nothing kept).

    A typed PRNG key is its dtype (``key<fry>[4]``) and its key data, no statistics.
    """
    try:
        arr = host_array(value)
    except Exception:
        kind = type(value).__name__
        return ValueSummary(
            name=name,
            shape=(),
            dtype=kind,
            aval=kind,
            min=None,
            max=None,
            mean=None,
            nan_count=0,
            inf_count=0,
            preview=repr(value)[:preview_chars],
            user_name=user_name,
        )
    with np.printoptions(threshold=20, edgeitems=3, precision=4, linewidth=10_000):
        preview = " ".join(str(arr).split())
    if is_key(value):
        return ValueSummary(
            name=name,
            shape=tuple(int(d) for d in value.shape),
            dtype=dtype_name(value.dtype),
            aval=aval_text(value),
            min=None,
            max=None,
            mean=None,
            nan_count=0,
            inf_count=0,
            preview=truncate(preview, preview_chars),
            user_name=user_name,
        )
    vmin, vmax, mean, nan_count, inf_count = _statistics(arr)
    return ValueSummary(
        name=name,
        shape=tuple(int(d) for d in arr.shape),
        dtype=str(arr.dtype),
        aval=f"{short_dtype(arr.dtype)}[{','.join(str(d) for d in arr.shape)}]",
        min=vmin,
        max=vmax,
        mean=mean,
        nan_count=nan_count,
        inf_count=inf_count,
        preview=truncate(preview, preview_chars),
        user_name=user_name,
    )


def _statistics(
    arr: np.ndarray,
) -> tuple[float | None, float | None, float | None, int, int]:
    """``(min, max, mean, NaN count, Inf count)``; the statistics over finite values
    (magnitudes for complex), None where there are none or ``arr`` is not numeric."""
    dtype = arr.dtype
    if not arr.size or not (
        np.issubdtype(dtype, np.number) or dtype == np.bool_ or is_inexact(dtype)
    ):
        return None, None, None, 0, 0
    data = arr.astype(np.float64) if not np.iscomplexobj(arr) else np.abs(arr)
    finite = np.isfinite(data)
    nan_count = int(np.isnan(data).sum())
    inf_count = int(np.isinf(data).sum())
    if not finite.any():
        return None, None, None, nan_count, inf_count
    good = data[finite]
    return (
        float(good.min()),
        float(good.max()),
        float(good.mean()),
        nan_count,
        inf_count,
    )


def nonfinite_kind(value: Any, nan: bool, inf: bool) -> str | None:
    """``"nan"`` or ``"inf"`` when ``value`` holds one (of the kinds asked), else None."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        if isinstance(value, float):
            if nan and value != value:
                return "nan"
            if inf and value in (float("inf"), float("-inf")):
                return "inf"
        return None
    if not is_inexact(dtype):
        return None
    arr = host_array(value)
    if nan and np.isnan(arr).any():
        return "nan"
    if inf and np.isinf(arr).any():
        return "inf"
    return None
