"""Small text helpers shared by every feature: one spelling of each thing shown.

Pure functions of their arguments, importing nothing of JAX, so that any layer
(compat included) can use them and two views never print one value two ways.
"""

from __future__ import annotations

import re
from typing import Any

_SHORT_DTYPE = {"bfloat16": "bf16", "bool": "bool"}


def short_dtype(dtype: Any) -> str:
    """``float32`` → ``f32``, ``int8`` → ``i8``, ``bfloat16`` → ``bf16``, as jaxprs print.

    Example:
        >>> import numpy as np
        >>> short_dtype(np.float32), short_dtype("uint8"), short_dtype("bool")
        ('f32', 'u8', 'bool')
    """
    name = getattr(dtype, "name", None)
    if not isinstance(name, str):
        try:
            import numpy as np

            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    if name in _SHORT_DTYPE:
        return _SHORT_DTYPE[name]
    for long, short in (("complex", "c"), ("float", "f"), ("uint", "u"), ("int", "i")):
        if name.startswith(long):
            return short + name[len(long) :]
    return name


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters; never raises (a failing
    ``__repr__`` gives ``<TypeName>``)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return truncate(text, limit)


def exception_text(exc: BaseException) -> str:
    """``str(exc)``; ``<TypeName>`` when the exception's own ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__}>"


def format_bytes(n: int) -> str:
    """A byte count in binary units, one decimal at most.

    Example:
        >>> format_bytes(512), format_bytes(1536), format_bytes(3 * 2**20)
        ('512 B', '1.5 KiB', '3 MiB')
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.1f}".rstrip("0").rstrip(".")
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def unwrap(fun: Any, limit: int = 10) -> Any:
    """``fun`` with ``functools.wraps``/``partial`` layers (``__wrapped__``, ``func``)
    peeled off, at most ``limit`` of them."""
    for _ in range(limit):
        inner = getattr(fun, "__wrapped__", None) or getattr(fun, "func", None)
        if inner is None or inner is fun:
            break
        fun = inner
    return fun


def qualname(fun: Any) -> str:
    """The qualified name of a function, seen through wrappers; the type name else.

    Example:
        >>> import functools
        >>> def f(x): return x
        >>> qualname(functools.partial(f, 1)), qualname(3)
        ('f', 'int')
    """
    for candidate in (fun, unwrap(fun)):
        name = getattr(candidate, "__qualname__", None) or getattr(
            candidate, "__name__", None
        )
        if isinstance(name, str) and name:
            return name
    return type(fun).__name__


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``"1 compile"``, ``"2 compiles"``.

    Example:
        >>> plural(1, "group"), plural(3, "match", "matches")
        ('1 group', '3 matches')
    """
    word = noun if count == 1 else (plural_form or noun + "s")
    return f"{count} {word}"


def a_an(word: str) -> str:
    """``word`` with its indefinite article, as it is said: ``"an int"``, ``"a str"``.

    Example:
        >>> a_an("int"), a_an("str"), a_an("uint8"), a_an("ndarray")
        ('an int', 'a str', 'a uint8', 'an ndarray')
    """
    lower = word.lower()
    vowel = lower[:1] in ("a", "e", "i", "o") or (
        lower.startswith("u") and not lower.startswith(("uint", "uni", "use", "usu"))
    )
    spelled = lower.startswith("nd")  # "en-dee-array"
    return f"{'an' if vowel or spelled else 'a'} {word}"


# C0 controls but tab and newline, DEL, and C1 controls (0x9b starts a CSI sequence on
# some terminals just as ESC [ does); lone surrogates, which no UTF-8 stream can write.
_CONTROL = {
    c: f"\\x{c:02x}"
    for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))
} | {c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)}


# A run of characters without a space this long is a name nobody reads whole (a
# generated 100k-character function name or file name): it is shown cut in the middle.
MAX_WORD = 300
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD + 1},}}")
_KEEP = (MAX_WORD * 2 // 3, MAX_WORD // 3 - 1)


def _cut(match: re.Match[str]) -> str:
    word = match.group()
    head, tail = _KEEP
    return f"{word[:head]}\u2026{word[-tail:]}"


def printable(text: str) -> str:
    """``text`` with terminal control characters (ESC of ANSI/OSC sequences, BEL,
    NUL, ...) and lone surrogates spelled out as ``\\x1b``, ``\\udc80`` etc., so a
    user string cannot drive the terminal or fail to encode, and words over ``MAX_WORD`` characters cut in the middle with an
    ellipsis. Newlines and tabs stay."""
    text = str(text).translate(_CONTROL)
    if len(text) > MAX_WORD:
        text = _LONG_WORD.sub(_cut, text)
    return text
