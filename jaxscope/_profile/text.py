"""Numbers as the profile and memory displays spell them, and the shading scale.

Pure functions (no display library), shared by the rich and HTML renderers.
"""

from __future__ import annotations

from jaxscope._format import format_bytes

_SPARK = " ▁▂▃▄▅▆▇█"


def format_seconds(seconds: float) -> str:
    """A duration with three significant digits in a unit that fits.

    Example:
        >>> format_seconds(0.01234), format_seconds(5.8e-4), format_seconds(2.5e-8)
        ('12.3 ms', '580 µs', '25.0 ns')
    """
    value = abs(seconds)
    if value == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{_three(seconds / scale)} {unit}"
    return f"{_three(seconds / 1e-9)} ns"


def _three(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_share(share: float) -> str:
    """``0.845`` → ``84.5%``."""
    return f"{share * 100:.1f}%"


def format_count(value: float) -> str:
    """Flops or executions: ``2.15G``, ``1.05M``, ``10``."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{_three(value / scale)}{unit}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def shade(share: float) -> float:
    """Shading strength in ``[0, 1]`` for a share of the total (square-root scale,
    so a line with 1% still shows)."""
    return min(1.0, max(0.0, share)) ** 0.5


def sparkline(values: tuple[int, ...] | list[int], width: int = 60) -> str:
    """``values`` as a one-line bar chart of at most ``width`` characters."""
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    buckets = [max(values[i : i + step]) for i in range(0, len(values), step)]
    top = max(buckets) or 1
    return "".join(_SPARK[round(b / top * (len(_SPARK) - 1))] for b in buckets)


__all__ = [
    "format_bytes",
    "format_count",
    "format_seconds",
    "format_share",
    "shade",
    "sparkline",
]
