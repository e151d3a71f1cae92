"""``js.explain(exc)``: a JAX error rewritten around the user's line, with a concrete fix.

The report is built from what the exception already carries: its traceback (the frames
still hold their locals, so the operands of the failing expression have shapes), JAX's
message (which names the traced function and the arguments a value depends on) and the
``__cause__`` JAX chains for errors raised while transforming an equation. Nothing is
re-run. ``explain`` never raises on an exception: a non-JAX error gets a plain report.
"""

from __future__ import annotations

import ast
import dataclasses
import linecache
import os
import re
import sys
import sysconfig
import traceback as _traceback
import types
from dataclasses import dataclass, field
from typing import Any

from jaxscope._display import Renderable, to_html, to_text
from jaxscope._exceptions import InvalidCallError, JaxscopeError
from jaxscope._records import SourceLoc
from jaxscope._source import display_filename, is_user_file
from jaxscope.compat import errors as _cerrors
from jaxscope.compat.jaxpr import aval_str, short_dtype

__all__ = ["ErrorReport", "Operand", "explain", "is_jax_error"]

CATEGORIES = (
    "bool_conversion",
    "int_conversion",
    "array_conversion",
    "concretization",
    "bool_index",
    "shape",
    "dtype",
    "item_assignment",
    "leak",
    "nan",
    "out_of_memory",
    "runtime",
    "transformation",
    "structure",
    "static_arg",
    "jax_other",
    "not_jax",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Operand:
    """One operand of the failing expression: its text, its type and where it came from."""

    expr: str
    aval: str = ""
    origin: str = ""
    origin_loc: SourceLoc | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorReport(Renderable):
    """A JAX error explained: where in the user's code, what it means, how to fix it.

    Attributes:
        kind: the exception class name (``"TracerBoolConversionError"``).
        message: a short plain-text statement of what went wrong.
        user_frame: the innermost user frame (not JAX's, not jaxscope's); ``In [N]``
            for notebook cells. None only when the exception has no user frame.
        frames: the user frames, outermost first.
        hint: a concrete fix in the user's own names ("" when none is known).
        category: a finer kind, one of ``CATEGORIES``.
        is_jax: whether the error came from JAX.
        traced_function: the function JAX was tracing, if the message says.
        transform: what it was traced for ("jit", "scan", "vmap", ...), if known.
        arguments: the traced function's arguments the offending value depends on.
        operands: the failing expression's operands, with shapes and origins.
        jax_context: the JAX-level facts (traced value, shapes, primitive), one per line.
        source_lines: ``(line number, text)`` around ``user_frame``.
        span: the failing expression's columns on the user line (0-based, end
            exclusive), or None.
        traceback: the full traceback text.
        original_message: the exception's message as JAX wrote it.
    """

    kind: str
    message: str
    user_frame: SourceLoc | None
    frames: list[SourceLoc] = field(default_factory=list)
    hint: str = ""
    category: str = "not_jax"
    is_jax: bool = False
    traced_function: str | None = None
    transform: str | None = None
    arguments: tuple[str, ...] = ()
    operands: tuple[Operand, ...] = ()
    jax_context: tuple[str, ...] = ()
    source_lines: tuple[tuple[int, str], ...] = ()
    span: tuple[int, int] | None = None
    traceback: str = ""
    original_message: str = ""

    def __str__(self) -> str:
        return to_text(self, width=100)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, str]:
        return {"text/plain": to_text(self, width=100), "text/html": to_html(self)}

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self) if cycle else str(self))

    @property
    def line_text(self) -> str:
        """The text of the user's line ("" if unknown)."""
        if self.user_frame is None:
            return ""
        for number, text in self.source_lines:
            if number == self.user_frame.line:
                return text
        return ""


# --------------------------------------------------------------------------- frames


@dataclass(frozen=True, slots=True)
class _Entry:
    """One traceback entry: the live frame (for locals) and its position."""

    frame: types.FrameType
    filename: str
    line: int
    col: int | None
    end_col: int | None
    function: str


def _entries(tb: types.TracebackType | None) -> list[_Entry]:
    pairs = list(_traceback.walk_tb(tb))
    summaries = _traceback.extract_tb(tb)
    out = []
    for (frame, lineno), summary in zip(pairs, summaries, strict=False):
        col = getattr(summary, "colno", None)
        end_col = getattr(summary, "end_colno", None)
        if getattr(summary, "end_lineno", lineno) != lineno:
            end_col = None
        out.append(
            _Entry(frame, frame.f_code.co_filename, lineno, col, end_col, summary.name)
        )
    return out


_TOOL_PACKAGES = (
    "IPython",
    "ipykernel",
    "_pytest",
    "pytest",
    "pluggy",
    "traitlets",
    "tornado",
    "jupyter_client",
    "nbclient",
    "zmq",
    "numpy",
)


def _tool_dirs() -> tuple[str, ...]:
    dirs = []
    for name in _TOOL_PACKAGES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.join(os.path.dirname(os.path.abspath(path)), ""))
    return tuple(dirs)


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths.get("purelib"), paths.get("platlib")}
    return tuple(os.path.join(d, "") for d in dirs if d)


def _is_user_entry(entry: _Entry, tools: tuple[str, ...]) -> bool:
    name = entry.filename
    if name.startswith("<frozen"):
        return False
    if not is_user_file(name) or _cerrors.is_jax_file(name):
        return False
    return not (tools and os.path.abspath(name).startswith(tools))


def _is_library(filename: str, libs: tuple[str, ...]) -> bool:
    path = os.path.abspath(filename)
    return (
        path.startswith(libs) or "/site-packages/" in path or "/dist-packages/" in path
    )


def _loc(entry: _Entry) -> SourceLoc:
    code = entry.frame.f_code
    return SourceLoc(
        file=display_filename(entry.filename),
        line=entry.line,
        column=entry.col,
        function=getattr(code, "co_qualname", code.co_name),
    )


def _user_entries(entries: list[_Entry]) -> tuple[list[_Entry], _Entry | None]:
    """User entries outermost first, and the innermost one (own code before libraries)."""
    tools = _tool_dirs()
    users = [e for e in entries if _is_user_entry(e, tools)]
    if not users:
        return [], None
    libs = _library_dirs()
    own = [e for e in users if not _is_library(e.filename, libs)]
    if own:
        # Library frames outside the user's outermost own frame belong to the harness
        # (pytest plugins, runners), not to the user's program.
        first = users.index(own[0])
        users = users[first:]
    return users, (own or users)[-1]


# --------------------------------------------------------------------------- source


def _source_lines(
    filename: str, line: int, before: int = 2, after: int = 1
) -> tuple[tuple[int, str], ...]:
    lines = linecache.getlines(filename)
    if not lines or line < 1 or line > len(lines):
        return ()
    current = lines[line - 1]
    indent = len(current) - len(current.lstrip())
    out = [
        (n, lines[n - 1].rstrip("\n")) for n in range(max(1, line - before), line + 1)
    ]
    while len(out) > 1 and not out[0][1].strip():
        out.pop(0)
    for n in range(line + 1, min(len(lines), line + after) + 1):
        text = lines[n - 1].rstrip("\n")
        if not text.strip() or len(text) - len(text.lstrip()) < indent:
            break  # the next block is not this code's context
        out.append((n, text))
    return tuple(out)


_AST_CACHE: dict[tuple[str, int, int], ast.Module | None] = {}


def _module_ast(filename: str) -> tuple[ast.Module | None, str]:
    lines = linecache.getlines(filename)
    source = "".join(lines)
    key = (filename, len(source), hash(source))
    if key not in _AST_CACHE:
        try:
            _AST_CACHE[key] = ast.parse(source)
        except (SyntaxError, ValueError):
            _AST_CACHE[key] = None
        if len(_AST_CACHE) > 64:
            _AST_CACHE.pop(next(iter(_AST_CACHE)))
    return _AST_CACHE[key], source


@dataclass(slots=True)
class _Site:
    """The failing expression and its statement, parsed from the user's source."""

    source: str
    node: ast.AST | None
    stmt: ast.stmt | None
    scope: ast.AST | None

    def text(self, node: ast.AST | None) -> str:
        if node is None:
            return ""
        return ast.get_source_segment(self.source, node) or ast.unparse(node)


def _site(entry: _Entry) -> _Site:
    tree, source = _module_ast(entry.filename)
    if tree is None:
        return _Site(source, None, None, None)
    best: ast.AST | None = None
    stmt: ast.stmt | None = None
    scope: ast.AST | None = None
    for node in ast.walk(tree):
        lineno = getattr(node, "lineno", None)
        end = getattr(node, "end_lineno", None)
        if lineno is None or end is None or not lineno <= entry.line <= end:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and (
            scope is None or _contains(scope, node)
        ):
            scope = node
        if (
            isinstance(node, ast.stmt)
            and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            )
            and (stmt is None or _contains(stmt, node))
        ):
            stmt = node
        if (
            entry.col is not None
            and entry.end_col is not None
            and lineno == end == entry.line
            and getattr(node, "col_offset", None) == entry.col
            and getattr(node, "end_col_offset", None) == entry.end_col
            and isinstance(node, ast.expr)
        ):
            best = node
    return _Site(source, best, stmt, scope if scope is not None else tree)


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return (getattr(outer, "lineno", 0), getattr(outer, "col_offset", 0)) <= (
        getattr(inner, "lineno", 0),
        getattr(inner, "col_offset", 0),
    ) and (getattr(inner, "end_lineno", 0), getattr(inner, "end_col_offset", 0)) <= (
        getattr(outer, "end_lineno", 0),
        getattr(outer, "end_col_offset", 0),
    )


# --------------------------------------------------------------------------- operands


def _describe_value(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        try:
            return aval_str(value)
        except Exception:
            return ""
    if isinstance(value, (bool, int, float, complex)):
        return f"{type(value).__name__} {value!r}"
    return ""


_MISSING = object()


def _safe_eval(node: ast.AST, frame: types.FrameType) -> Any:
    """Evaluate a name, ``a.b`` on plain objects, or ``a[const]``; never call anything."""
    if isinstance(node, ast.Name):
        if node.id in frame.f_locals:
            return frame.f_locals[node.id]
        return frame.f_globals.get(node.id, _MISSING)
    if isinstance(node, ast.Attribute):
        base = _safe_eval(node.value, frame)
        if base is _MISSING:
            return _MISSING
        if isinstance(base, types.ModuleType):
            return getattr(base, node.attr, _MISSING)
        attrs = getattr(base, "__dict__", None)
        if isinstance(attrs, dict) and node.attr in attrs:
            return attrs[node.attr]
        return _MISSING
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _safe_eval(node.value, frame)
        if isinstance(base, (dict, list, tuple)):
            try:
                return base[node.slice.value]
            except (KeyError, IndexError, TypeError):
                return _MISSING
    return _MISSING


def _param_names(code: types.CodeType) -> tuple[list[str], list[str]]:
    n = code.co_argcount
    k = code.co_kwonlyargcount
    names = list(code.co_varnames[: n + k])
    return names[:n], names[n:]


def _origin(name: str, entry: _Entry, site: _Site) -> tuple[str, SourceLoc | None]:
    code = entry.frame.f_code
    positional, kwonly = _param_names(code)
    func = getattr(code, "co_qualname", code.co_name)
    if name in positional:
        return f"argument {name} of {func} (position {positional.index(name)})", None
    if name in kwonly:
        return f"keyword argument {name} of {func}", None
    scope = site.scope
    best: ast.stmt | None = None
    if scope is not None:
        for node in _walk_scope(scope):
            if not isinstance(
                node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)
            ):
                continue
            if node.lineno >= entry.line:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_binds(t, name) for t in targets) and (
                best is None or node.lineno > best.lineno
            ):
                best = node
    if best is not None:
        text = (site.text(best) or "").splitlines()[0].strip()
        loc = SourceLoc(
            file=display_filename(entry.filename), line=best.lineno, function=func
        )
        return f"`{text}` at {loc}", loc
    if name in entry.frame.f_globals and name not in entry.frame.f_locals:
        return f"global {name}", None
    return "", None


def _walk_scope(scope: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _binds(target: ast.AST, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(t, name) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _binds(target.value, name)
    return False


def _operand_nodes(node: ast.AST | None) -> list[ast.expr]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call):
        args: list[ast.expr] = []
        for arg in node.args:
            if isinstance(arg, (ast.List, ast.Tuple)):
                args.extend(
                    arg.elts
                )  # jnp.concatenate([a, b]): the arrays are the operands
            elif not isinstance(arg, (ast.Starred, ast.Constant)):
                args.append(arg)
        if not args and isinstance(node.func, ast.Attribute):
            return [node.func.value]  # x.reshape(5, 7): the array is the receiver
        if isinstance(node.func, ast.Attribute) and _is_array_method(node.func.attr):
            return [node.func.value, *args]
        return args
    if isinstance(node, ast.Subscript):
        return [node.value]
    return []


def _is_array_method(attr: str) -> bool:
    return attr in {
        "reshape",
        "astype",
        "transpose",
        "dot",
        "take",
        "swapaxes",
        "squeeze",
    }


def _operands(entry: _Entry, site: _Site) -> tuple[Operand, ...]:
    out = []
    for node in _operand_nodes(site.node)[:4]:
        value = _safe_eval(node, entry.frame)
        aval = _describe_value(value) if value is not _MISSING else ""
        origin, loc = ("", None)
        if isinstance(node, ast.Name):
            origin, loc = _origin(node.id, entry, site)
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            root = node
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                origin, loc = _origin(root.id, entry, site)
        text = site.text(node)
        if aval or origin or text:
            out.append(Operand(expr=text, aval=aval, origin=origin, origin_loc=loc))
    return tuple(out)


# --------------------------------------------------------------------------- messages

_TRACING = re.compile(
    r"while tracing the function (?P<fn>\S+) at (?P<file>.+?):(?P<line>\d+) for (?P<tr>\w+)"
)
_DEPENDS = re.compile(
    r"depends on the values? of the arguments? (?P<args>.+?)\.(?:\s|$)"
)
_LEAKED_IN = re.compile(
    r"The function being traced when the value leaked was (?P<fn>\S+) at "
    r"(?P<file>.+?):(?P<line>\d+) traced for (?P<tr>\w+)"
)
_ARISES = re.compile(r"It arose in (?:the )?(?P<what>.+?)\.?$", re.MULTILINE)
_SHAPE_TUPLE = re.compile(r"\((?:\d+(?:, ?\d+)*,?)?\)")
_DTYPES = re.compile(r"got ((?:[a-z]+\d*(?:, | and )?){2,})")
_NAN_IN = re.compile(
    r"invalid value \((?P<what>nan|inf)\) encountered in (?P<prim>[\w.]+)"
)
_BYTES = re.compile(r"allocat\w* (?P<n>\d+) bytes")
_CREATED_ON = re.compile(r"created on line:?\s*\n?\s*(?P<where>\S+:\d+(?::\d+)?)")
_TRACER_AVAL = re.compile(r"traced array with shape (\S+?)\.?(?:\s|$)")
_BOOL_INDEX_AVAL = re.compile(r"got (bool\[[^\]]*\])")


def _clean_message(exc: BaseException) -> str:
    text = _safe_str(exc)
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    note = _cerrors.simplified_traceback_note()
    lines = []
    for line in text.splitlines():
        if line.startswith("See https://") or (note and note in line):
            continue
        if line.strip("- ") == "" and line.strip():
            continue
        lines.append(line)
    return "\n".join(lines).strip()


def _short_aval(text: str) -> str:
    """``float32[3]`` → ``f32[3]``, as jaxprs print it."""
    match = re.fullmatch(r"(~?)(\w+)\[(.*)\]", text)
    if match is None:
        return text
    return f"{match.group(1)}{short_dtype(match.group(2))}[{match.group(3)}]"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _split_args(text: str) -> tuple[str, ...]:
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", text)
    return tuple(p.strip() for p in parts if p.strip())


def _is_jax_error(exc: BaseException, entries: list[_Entry]) -> bool:
    if isinstance(exc, _cerrors.jax_error_types()):
        return True
    if _cerrors.before_transformation_cause(exc) is not None:
        return True
    unfiltered = _cerrors.unfiltered_cause(exc)
    if unfiltered is not None:
        full = _entries(unfiltered.__traceback__)
        if full and _cerrors.is_jax_file(full[-1].filename):
            return True
    if entries and _cerrors.is_jax_file(entries[-1].filename):
        return True
    if _first_line(_safe_str(exc)).startswith(_JAX_MESSAGES):
        return True
    if _cerrors.jax_notes(exc) or unfiltered is not None:
        # JAX removed its own frames: the error came from below the innermost
        # remaining frame unless that frame raised it itself.
        return bool(entries) and not _raises_here(entries[-1])
    return False


# First lines of errors JAX raises from C++ or before any JAX frame is on the stack.
_JAX_MESSAGES = (
    "Non-hashable static arguments are not supported",
    "Error interpreting argument to",
)


def _specific(
    first: str, text: str, operands: tuple[Operand, ...]
) -> tuple[str, str] | None:
    """``(category, hint)`` for well-known JAX messages whose generic hint would mislead."""
    avals = [f"{o.expr} is {o.aval}" for o in operands if o.aval]
    if "branches must have equal output types" in first or (
        "branch" in first and "output" in first and "type" in first
    ):
        return (
            "structure",
            "Both branches must return the same pytree of shapes and dtypes: pad, slice or "
            "cast one branch's result (jax.eval_shape(branch_fn, x) shows what each returns)",
        )
    if (
        "carry input and carry output must have equal types" in text
        or "carry output" in first
    ):
        return (
            "structure",
            "The scan carry must keep its shape and dtype: start it with the type the body "
            "returns (e.g. 0.0 rather than 0, or jnp.zeros_like(...)) or cast inside the body",
        )
    if first.startswith("Gradient only defined for scalar-output functions"):
        return (
            "transformation",
            "jax.grad needs a scalar output: reduce it (e.g. return loss.sum() or .mean()), "
            "or use jax.jacrev / jax.vjp for a non-scalar output",
        )
    if first.startswith("grad requires real- or complex-valued inputs"):
        return (
            "dtype",
            "Differentiate with respect to floats: pass 1.0 instead of 1 (or "
            "x.astype(jnp.float32)); use jax.grad(f, allow_int=True) to get float0 zeros",
        )
    if first.startswith("vmap got inconsistent sizes"):
        sizes = f" ({'; '.join(avals)})" if avals else ""
        return (
            "shape",
            f"Every mapped argument needs the same size along its mapped axis{sizes}: fix "
            "the sizes, or mark an argument that is not batched with in_axes=None for it "
            "(e.g. jax.vmap(f, in_axes=(0, None)))",
        )
    if first.startswith("Non-hashable static arguments"):
        return (
            "static_arg",
            "Static arguments are hashed to key the compile cache: pass a hashable value "
            "(a tuple instead of a list, a tuple of pairs or a frozen dataclass instead of a "
            "dict) or make it a regular traced argument",
        )
    if first.startswith("Error interpreting argument to"):
        path = re.search(r"at path (\S+?)\.?$", first)
        kind = re.search(r"of type <class '([\w.]+)'>", first)
        name = path.group(1) if path else "the argument"
        what = f" a {kind.group(1)}" if kind else " not an array"
        return (
            "static_arg",
            f"{name} is{what}, which JAX cannot trace: pass it as a static argument "
            f"(jax.jit(f, static_argnames='{name}')) or convert it to an array",
        )
    if first.startswith("cannot reshape array"):
        return (
            "shape",
            "A reshape must keep the number of elements: "
            + (avals[0] + ", " if avals else "")
            + "so choose a target shape with the same size (-1 infers one dimension)",
        )
    return None


def _raises_here(entry: _Entry) -> bool:
    text = linecache.getline(entry.filename, entry.line).strip()
    return text.startswith(("raise ", "raise(", "assert ")) or text == "raise"


def is_jax_error(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by JAX (typed JAX error, or raised inside JAX)."""
    try:
        return _is_jax_error(exc, _entries(exc.__traceback__))
    except Exception:
        return False


def _category(exc: BaseException, text: str, is_jax: bool) -> str:
    errors = sys.modules["jax"].errors if "jax" in sys.modules else None
    name = type(exc).__name__

    def isa(cls_name: str) -> bool:
        cls = getattr(errors, cls_name, None)
        return isinstance(cls, type) and isinstance(exc, cls)

    if isa("TracerBoolConversionError"):
        return "bool_conversion"
    if isa("TracerIntegerConversionError"):
        return "int_conversion"
    if isa("TracerArrayConversionError"):
        return "array_conversion"
    if isa("NonConcreteBooleanIndexError"):
        return "bool_index"
    if isa("UnexpectedTracerError"):
        return "leak"
    if isa("ConcretizationTypeError"):
        return "concretization"
    if isinstance(exc, FloatingPointError) and _NAN_IN.search(text):
        return "nan"
    if isa("JaxRuntimeError") or name in ("XlaRuntimeError", "JaxRuntimeError"):
        if (
            "RESOURCE_EXHAUSTED" in text
            or "Out of memory" in text
            or "out of memory" in text
        ):
            return "out_of_memory"
        return "runtime"
    if not is_jax:
        return "not_jax"
    if text.startswith("Leaked trace"):
        return "leak"
    if "in-place item assignment" in text or "does not support item assignment" in text:
        return "item_assignment"
    if _DEPENDS.search(text) or "concrete value" in text:
        return "concretization"
    low = text.lower()
    if "dtype" in low and ("same dtype" in low or "requires" in low or "got" in low):
        return "dtype"
    if "shape" in low or "dimension" in low or "broadcast" in low or "reshape" in low:
        return "shape"
    if isinstance(exc, FloatingPointError):
        return "nan"
    return "jax_other"


# --------------------------------------------------------------------------- hints


def _traced_code(
    entries: list[_Entry], fn: str | None, file: str | None, line: int | None
) -> types.CodeType | None:
    if fn is None:
        return None
    short = fn.rsplit(".", 1)[-1]
    fallback = None
    for entry in reversed(entries):
        code = entry.frame.f_code
        if code.co_name != short:
            continue
        if (
            line is not None
            and code.co_firstlineno == line
            and (file is None or entry.filename == file)
        ):
            return code
        fallback = fallback or code
    return fallback


def _static_hint(fn: str, args: tuple[str, ...], code: types.CodeType | None) -> str:
    if code is None or not args:
        return ""
    positional, kwonly = _param_names(code)
    bases = []
    for arg in args:
        base = re.split(r"[\[.]", arg, maxsplit=1)[0]
        if base not in bases:
            bases.append(base)
    nums = [positional.index(b) for b in bases if b in positional]
    names = [b for b in bases if b in positional or b in kwonly]
    if not names:
        return ""
    short = fn.rsplit(".", 1)[-1]
    if len(names) == 1:
        by_name = f"static_argnames='{names[0]}'"
    else:
        by_name = "static_argnames=(" + ", ".join(f"'{n}'" for n in names) + ")"
    if nums and len(nums) == len(names):
        tup = (
            "("
            + ", ".join(str(n) for n in nums)
            + ("," if len(nums) == 1 else "")
            + ")"
        )
        return f"jax.jit({short}, static_argnums={tup}) (or {by_name})"
    return f"jax.jit({short}, {by_name})"


def _names(args: tuple[str, ...]) -> str:
    if not args:
        return ""
    if len(args) == 1:
        return args[0]
    return ", ".join(args[:-1]) + " and " + args[-1]


def _np_calls(site: _Site) -> list[tuple[str, str]]:
    """``(np text, jnp replacement)`` for ``np.f(...)`` calls in the failing statement."""
    import jax.numpy as jnp

    root = site.stmt if site.stmt is not None else site.node
    out: list[tuple[str, str]] = []
    if root is None:
        return out
    for node in ast.walk(root):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("np", "numpy", "onp")
        ):
            attr = node.func.attr
            text = site.text(node.func)
            replacement = f"jnp.{attr}" if hasattr(jnp, attr) else ""
            if (text, replacement) not in out:
                out.append((text, replacement))
    return out


def _assignment_fix(site: _Site) -> str:
    stmt = site.stmt
    ops = {
        ast.Add: "add",
        ast.Mult: "multiply",
        ast.Div: "divide",
        ast.Pow: "power",
    }
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript):
            arr = site.text(target.value)
            idx = site.text(target.slice)
            return f"{arr} = {arr}.at[{idx}].set({site.text(stmt.value)})"
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
        arr = site.text(stmt.target.value)
        idx = site.text(stmt.target.slice)
        value = site.text(stmt.value)
        if isinstance(stmt.op, ast.Sub):
            return f"{arr} = {arr}.at[{idx}].add(-({value}))"
        method = ops.get(type(stmt.op))
        if method is not None:
            return f"{arr} = {arr}.at[{idx}].{method}({value})"
    return ""


def _condition_text(site: _Site) -> tuple[str, str]:
    """The branching construct (``if``, ``while``, ...) and its condition's text."""
    stmt = site.stmt
    node = site.node
    if isinstance(stmt, ast.If) and (node is None or _contains(stmt.test, node)):
        return "if", site.text(stmt.test)
    if isinstance(stmt, ast.While):
        return "while", site.text(stmt.test)
    if isinstance(stmt, ast.Assert):
        return "assert", site.text(stmt.test)
    if node is not None:
        return "bool()", site.text(node)
    return "bool()", ""


def _nan_guard(prim: str) -> str:
    guards = {
        "log": "jnp.log(jnp.maximum(x, 1e-30))",
        "log1p": "jnp.log1p(jnp.maximum(x, -1 + 1e-7))",
        "sqrt": "jnp.sqrt(jnp.maximum(x, 0.0))",
        "rsqrt": "jax.lax.rsqrt(jnp.maximum(x, 1e-30))",
        "div": "a / jnp.where(b == 0, 1.0, b)",
        "pow": "jnp.power(jnp.abs(x), p)",
        "acos": "jnp.arccos(jnp.clip(x, -1.0, 1.0))",
        "asin": "jnp.arcsin(jnp.clip(x, -1.0, 1.0))",
    }
    return guards.get(prim, "jnp.where(valid, x, safe_value) around the operation")


def _dims(aval: str) -> list[int] | None:
    match = re.fullmatch(r"\w+\[([\d,]*)\]", aval)
    if match is None:
        return None
    return [int(d) for d in match.group(1).split(",") if d]


def _shape_hint(site: _Site, operands: tuple[Operand, ...]) -> str:
    known = [o for o in operands if o.aval]
    fix = "reshape or transpose one operand, or fix the shape where it was created"
    if len(known) < 2:
        return fix[0].upper() + fix[1:]
    a, b = known[0], known[1]
    facts = f"{a.expr} is {a.aval} and {b.expr} is {b.aval}"
    node = site.node
    is_matmul = (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)) or (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("dot", "matmul")
    )
    da, db = _dims(a.aval), _dims(b.aval)
    if is_matmul and da is not None and db is not None and len(da) == len(db) == 2:
        if da[0] == db[0] and da[1] != db[0]:
            return f"{facts}: the inner dimensions differ ({da[1]} vs {db[0]}); did you mean {a.expr}.T @ {b.expr}?"
        if da[1] == db[1] and da[1] != db[0]:
            return f"{facts}: the inner dimensions differ ({da[1]} vs {db[0]}); did you mean {a.expr} @ {b.expr}.T?"
        return f"{facts}: the inner dimensions differ ({da[1]} vs {db[0]}); {fix}"
    return f"{facts}: {fix}"


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{n} B"  # pragma: no cover


# --------------------------------------------------------------------------- NaN origin

_HIGHER_ORDER = frozenset(
    {
        "scan",
        "while",
        "while_loop",
        "cond",
        "jit",
        "pjit",
        "closed_call",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "remat",
        "remat2",
        "checkpoint",
        "shard_map",
        "xla_pmap",
        "xla_call",
        "custom_lin",
    }
)


@dataclass(frozen=True, slots=True)
class _NanOrigin:
    source: SourceLoc
    primitive: str
    kind: str
    where: str
    inputs: tuple[str, ...]
    equation: str = ""


def _eval_call_args(
    node: ast.Call, frame: types.FrameType
) -> tuple[list[Any], dict[str, Any]] | None:
    args: list[Any] = []
    for arg in node.args:
        if isinstance(arg, ast.Constant):
            args.append(arg.value)
            continue
        target = arg.value if isinstance(arg, ast.Starred) else arg
        value = _safe_eval(target, frame)
        if value is _MISSING:
            return None
        if isinstance(arg, ast.Starred):
            if not isinstance(value, (list, tuple)):
                return None
            args.extend(value)
        else:
            args.append(value)
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        value = (
            kw.value.value
            if isinstance(kw.value, ast.Constant)
            else _safe_eval(kw.value, frame)
        )
        if value is _MISSING or kw.arg is None:
            return None
        kwargs[kw.arg] = value
    return args, kwargs


_TRANSFORMS = (
    "jit",
    "grad",
    "value_and_grad",
    "vmap",
    "jacfwd",
    "jacrev",
    "hessian",
    "checkpoint",
    "remat",
)


def _eval_callee(node: ast.expr, frame: types.FrameType) -> Any:
    """The callee of the failing call; ``jax.jit(jax.grad(f))`` is rebuilt (pure wrappers)."""
    if not isinstance(node, ast.Call):
        return _safe_eval(node, frame)
    import jax

    wrapper = _safe_eval(node.func, frame)
    allowed = [getattr(jax, name, None) for name in _TRANSFORMS]
    if wrapper is _MISSING or not any(wrapper is a for a in allowed if a is not None):
        return _MISSING
    if len(node.args) != 1:
        return _MISSING
    inner = _eval_callee(node.args[0], frame)
    if inner is _MISSING or not callable(inner):
        return _MISSING
    kwargs = {}
    for kw in node.keywords:
        if kw.arg is None or not isinstance(kw.value, (ast.Constant, ast.Tuple)):
            return _MISSING
        try:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            return _MISSING
    try:
        return wrapper(inner, **kwargs)
    except Exception:
        return _MISSING


def _function_of(entry: _Entry) -> Any:
    """The function object running in ``entry``'s frame, found through its code object."""
    import gc

    code = entry.frame.f_code
    for ref in gc.get_referrers(code):
        if isinstance(ref, types.FunctionType) and ref.__code__ is code:
            return ref
    return None


def _nan_candidates(
    inner: _Entry, site: _Site
) -> list[tuple[Any, list[Any], dict[str, Any]]]:
    out: list[tuple[Any, list[Any], dict[str, Any]]] = []
    node = site.node
    if isinstance(node, ast.Call):
        callee = _eval_callee(node.func, inner.frame)
        module = str(getattr(callee, "__module__", "") or "")
        parsed = _eval_call_args(node, inner.frame)
        if (
            callable(callee)
            and parsed is not None
            and not module.startswith(("jax", "numpy"))
        ):
            out.append((callee, *parsed))
    code = inner.frame.f_code
    if code.co_name != "<module>" and not code.co_flags & (
        0x04 | 0x08
    ):  # no *args/**kw
        fn = _function_of(inner)
        positional, kwonly = _param_names(code)
        local = inner.frame.f_locals
        if fn is not None and all(n in local for n in positional + kwonly):
            out.append(
                (fn, [local[n] for n in positional], {n: local[n] for n in kwonly})
            )
    return out


def _nan_origin(inner: _Entry, site: _Site, prim: str) -> _NanOrigin | None:
    """Step the failing call with concrete values to the first NaN/Inf-producing equation."""
    import jax

    from jaxscope._stepper.stepper import find_nan

    for fn, args, kwargs in _nan_candidates(inner, site)[:2]:
        try:
            with jax.debug_nans(False), jax.debug_infs(False):
                found = find_nan(fn)(*args, **kwargs)
        except Exception:  # the stepper could not run it: keep JAX's own line
            continue
        source = getattr(found, "source", None)
        if found is None or source is None:
            continue
        frames = getattr(found, "frames", []) or []
        where = " > ".join(
            str(getattr(f, "label", ""))
            + (
                f" [iteration {f.iteration + 1}/{f.length}]"
                if getattr(f, "iteration", None) is not None
                and getattr(f, "length", None)
                else ""
            )
            for f in frames
        )
        inputs = tuple(
            f"{v.name}: {v.aval} (min {v.min}, max {v.max})"
            for v in getattr(found, "inputs", [])[:4]
        )
        try:
            from jaxscope._jaxpr.model import eqn_line

            equation = eqn_line(found.eqn)
        except Exception:
            equation = ""
        return _NanOrigin(
            source, str(found.primitive), str(found.kind), where, inputs, equation
        )
    return None


def _raw_filename(display: str, entries: list[_Entry]) -> str | None:
    for entry in entries:
        if display_filename(entry.filename) == display:
            return entry.filename
    for name in list(linecache.cache):
        if display_filename(name) == display:
            return name
    return display if os.path.exists(display) else None


# --------------------------------------------------------------------------- memory

_DTYPE_BYTES = {
    "bool": 1,
    "bf16": 2,
    "f16": 2,
    "f32": 4,
    "f64": 8,
    "c64": 8,
    "c128": 16,
}


def _aval_bytes(aval: str) -> int | None:
    match = re.fullmatch(r"(\w+)\[([\d,]*)\]", aval)
    if match is None:
        return None
    dtype, dims = match.groups()
    size = _DTYPE_BYTES.get(dtype)
    if size is None:
        bits = re.fullmatch(r"[iuf](\d+)", dtype)
        if bits is None:
            return None
        size = max(1, int(bits.group(1)) // 8)
    count = 1
    for d in dims.split(","):
        if d:
            count *= int(d)
    return count * size


def _largest_buffers(inner: _Entry, site: _Site, limit: int = 3) -> list[str]:
    """The largest values of the failing jitted call, traced again (never run)."""
    node = site.node
    if not isinstance(node, ast.Call):
        return []
    callee = _eval_callee(node.func, inner.frame)
    parsed = _eval_call_args(node, inner.frame)
    if callee is _MISSING or parsed is None or not hasattr(callee, "trace"):
        return []
    from jaxscope._jaxpr.model import build_model

    try:
        traced = callee.trace(*parsed[0], **parsed[1])
        eqns = build_model(traced.jaxpr).eqns
    except Exception:
        return []
    sized = []
    for info in eqns:
        for _name, aval in info.outputs:
            nbytes = _aval_bytes(aval)
            if nbytes:
                sized.append((nbytes, aval, info))
    sized.sort(key=lambda item: -item[0])
    out = []
    for nbytes, aval, info in sized[:limit]:
        where = f" at {info.source}" if info.source is not None else ""
        out.append(
            f"buffer {aval} ({_human_bytes(nbytes)}) from {info.primitive}{where}"
        )
    return out


# --------------------------------------------------------------------------- leaks


def _leak_holder(exc: BaseException, home_file: str) -> str:
    """Where the leaked tracer of an ``UnexpectedTracerError`` is stored ("" if unknown).

    The tracer is still a local of the JAX frames that raised (kept under IPython's
    ``tracebackhide`` filtering and with filtering off); the leak checker's referrer
    walk names what holds it.
    """
    from jaxscope._leaks.checker import holder_of

    tracebacks = [exc.__traceback__]
    unfiltered = _cerrors.unfiltered_cause(exc)
    if unfiltered is not None:
        tracebacks.append(unfiltered.__traceback__)
    for tb in tracebacks:
        for frame, _line in _traceback.walk_tb(tb):
            if not _cerrors.is_jax_file(frame.f_code.co_filename):
                continue
            for value in list(frame.f_locals.values()):
                if not type(value).__name__.endswith("Tracer"):
                    continue
                try:
                    found = holder_of(value, home_file=home_file)
                except Exception:
                    return ""
                if found:
                    return str(found[0])
    return ""


# --------------------------------------------------------------------------- explain


def explain(exc: BaseException | None = None) -> ErrorReport:
    """Explain a JAX error: the user's line, what it means and a concrete fix.

    Args:
        exc: the exception (``except Exception as e: js.explain(e)``). Omitted: the
            last exception IPython or the interpreter showed (``sys.last_value``), or
            the one being handled.

    Returns:
        An ``ErrorReport``; for an exception JAX did not raise, a plain report
        (``category == "not_jax"``, no hint). Never raises for an exception.

    Raises:
        InvalidCallError: ``exc`` is not an exception (or omitted with none to explain).

    Example:
        >>> import jax, jaxscope as js
        >>> def relu(x):
        ...     return x if x > 0 else 0.0
        >>> try:
        ...     jax.jit(relu)(1.0)
        ... except Exception as e:
        ...     report = js.explain(e)
        >>> report.kind
        'TracerBoolConversionError'
    """
    if exc is None:
        exc = getattr(sys, "last_value", None) or sys.exc_info()[1]
        if exc is None:
            raise InvalidCallError(
                "js.explain() found no exception to explain; pass one, e.g. "
                "`except Exception as e: js.explain(e)`"
            )
    if isinstance(exc, type) and issubclass(exc, BaseException):
        raise InvalidCallError(
            f"js.explain expects an exception instance, got the class {exc.__name__}; "
            "pass the caught exception, e.g. `except Exception as e: js.explain(e)`"
        )
    if not isinstance(exc, BaseException):
        text = repr(exc)
        text = text if len(text) <= 40 else text[:37] + "..."
        raise InvalidCallError(
            f"js.explain expects an exception, got {type(exc).__name__} {text}; "
            "pass the caught exception, e.g. `except Exception as e: js.explain(e)`"
        )
    if isinstance(exc, JaxscopeError) and exc.__cause__ is not None:
        exc = exc.__cause__
    exc = _jax_error_in_chain(exc)
    try:
        return _explain(exc)
    except Exception:  # explaining must never fail: fall back to a plain report
        return _plain(exc)


def _jax_error_in_chain(exc: BaseException) -> BaseException:
    """``exc``, or the JAX error it was raised from (``raise X from jax_error``)."""
    try:
        if is_jax_error(exc):
            return exc
        seen = {id(exc)}
        # Only explicit chaining: an error raised while *handling* a JAX error is its own.
        cause = exc.__cause__
        while cause is not None and id(cause) not in seen and len(seen) < 8:
            seen.add(id(cause))
            if not _cerrors.is_jax_wrapper_exception(cause) and is_jax_error(cause):
                return cause
            cause = cause.__cause__
    except Exception:
        pass
    return exc


def _full_traceback(exc: BaseException) -> str:
    try:
        return "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:
        return f"{type(exc).__name__}: {_safe_str(exc)}"


def _plain(exc: BaseException) -> ErrorReport:
    try:
        message = _first_line(_clean_message(exc))
    except Exception:
        message = ""
    user_frame = None
    frames: list[SourceLoc] = []
    try:
        users, inner = _user_entries(_entries(exc.__traceback__))
        frames = [_loc(e) for e in users]
        user_frame = _loc(inner) if inner is not None else None
    except Exception:
        pass
    return ErrorReport(
        kind=type(exc).__name__,
        message=message,
        user_frame=user_frame,
        frames=frames,
        traceback=_full_traceback(exc),
        original_message=_safe_str(exc),
    )


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__}: message unavailable>"


def _explain(exc: BaseException) -> ErrorReport:
    entries = _entries(exc.__traceback__)
    is_jax = _is_jax_error(exc, entries)
    text = _clean_message(exc)
    category = _category(exc, text, is_jax)
    if is_jax and category in ("shape", "dtype", "transformation", "jax_other"):
        specific = _specific(_first_line(text), text, ())
        if specific is not None:
            category = specific[0]
    if category in ("nan", "out_of_memory", "runtime"):
        is_jax = True
    before = _cerrors.before_transformation_cause(exc)
    if before is not None and before.__traceback__ is not None:
        users, inner = _user_entries(_entries(before.__traceback__))
        if inner is not None:
            category = (
                "transformation"
                if category in ("jax_other", "shape", "dtype")
                else category
            )
        else:
            users, inner = _user_entries(entries)
    else:
        users, inner = _user_entries(entries)

    user_frame = _loc(inner) if inner is not None else None
    source_lines: tuple[tuple[int, str], ...] = ()
    span = None
    site = _Site("", None, None, None)
    if inner is not None:
        source_lines = _source_lines(inner.filename, inner.line)
        if inner.col is not None and inner.end_col is not None:
            span = (inner.col, inner.end_col)
        site = _site(inner)

    nan_origin = None
    if category == "nan" and inner is not None:
        nan = _NAN_IN.search(text)
        prim = nan.group("prim") if nan else ""
        if prim in _HIGHER_ORDER or (isinstance(site.node, ast.Call) and not prim):
            nan_origin = _nan_origin(inner, site, prim)
        elif isinstance(site.node, ast.Call):
            callee = _eval_callee(site.node.func, inner.frame)
            if not str(getattr(callee, "__module__", "") or "").startswith(
                ("jax", "numpy")
            ):
                nan_origin = _nan_origin(inner, site, prim)
        if nan_origin is not None:
            user_frame = nan_origin.source
            raw = _raw_filename(user_frame.file, entries)
            source_lines = _source_lines(raw, user_frame.line) if raw else ()
            span = None
            if raw is not None and user_frame.column is not None:
                site = _site(
                    _Entry(
                        inner.frame, raw, user_frame.line, user_frame.column, None, ""
                    )
                )
            text = (
                _NAN_IN.sub(
                    f"invalid value ({nan_origin.kind}) encountered in {nan_origin.primitive}",
                    text,
                )
                if nan_origin.kind in ("nan", "inf")
                else text
            )

    tracing = _TRACING.search(text) or _LEAKED_IN.search(text)
    traced_fn = tracing.group("fn") if tracing else None
    transform = tracing.group("tr") if tracing else None
    traced_file = tracing.group("file") if tracing else None
    traced_line = int(tracing.group("line")) if tracing else None
    depends = _DEPENDS.search(text)
    arguments = _split_args(depends.group("args")) if depends else ()
    if transform is None and "BatchTracer" in text:
        transform = "vmap"

    operands: tuple[Operand, ...] = ()
    if inner is not None and category in (
        "shape",
        "dtype",
        "transformation",
        "jax_other",
        "bool_index",
        "structure",
    ):
        operands = _operands(inner, site)

    context: list[str] = []
    aval = _TRACER_AVAL.search(text) or _BOOL_INDEX_AVAL.search(text)
    if aval:
        context.append(f"traced value: {_short_aval(aval.group(1))}")
    if traced_fn:
        where = display_filename(traced_file or "")
        context.append(
            f"traced function: {traced_fn} ({where}:{traced_line}), for {transform}"
        )
    arises = _ARISES.search(text)
    if arises:
        context.append(f"arose in {arises.group('what')}")
    for op in operands:
        if op.aval:
            context.append(f"{op.expr}: {op.aval}")
    if category in ("shape", "dtype", "transformation", "jax_other"):
        shapes = _SHAPE_TUPLE.findall(_first_line(text))
        if len(shapes) >= 2:
            context.append("shapes in JAX's message: " + ", ".join(shapes))
    created = _CREATED_ON.search(text)
    if created:
        context.append(f"tracer created at {created.group('where')}")

    if category == "out_of_memory" and inner is not None:
        context.extend(_largest_buffers(inner, site))
    if category == "leak" and is_jax and not text.startswith("Leaked trace"):
        holder = _leak_holder(exc, inner.filename if inner is not None else "")
        if holder:
            context.append(f"leaked into: {holder}")
    if nan_origin is not None:
        where = f" in {nan_origin.where}" if nan_origin.where else ""
        context.append(f"found by stepping the call with concrete values{where}")
        if nan_origin.equation:
            context.append(f"equation: {nan_origin.equation}")
        context.extend(f"input {i}" for i in nan_origin.inputs)

    code = _traced_code(entries, traced_fn, traced_file, traced_line)
    message, hint = _message_and_hint(
        category=category,
        exc=exc,
        text=text,
        site=site,
        traced_fn=traced_fn,
        transform=transform,
        arguments=arguments,
        code=code,
        operands=operands,
        user_frame=user_frame,
        context=context,
    )
    frames = [_loc(e) for e in users]
    if nan_origin is not None and (not frames or frames[-1] != user_frame):
        frames.append(nan_origin.source)
    return ErrorReport(
        kind=type(exc).__name__,
        message=message,
        user_frame=user_frame,
        frames=frames,
        hint=hint,
        category=category,
        is_jax=is_jax,
        traced_function=traced_fn,
        transform=transform,
        arguments=arguments,
        operands=operands,
        jax_context=tuple(context),
        source_lines=source_lines,
        span=span,
        traceback=_full_traceback(exc),
        original_message=_safe_str(exc),
    )


def _message_and_hint(
    *,
    category: str,
    exc: BaseException,
    text: str,
    site: _Site,
    traced_fn: str | None,
    transform: str | None,
    arguments: tuple[str, ...],
    code: types.CodeType | None,
    operands: tuple[Operand, ...],
    user_frame: SourceLoc | None,
    context: list[str],
) -> tuple[str, str]:
    first = _first_line(text)
    fn = traced_fn.rsplit(".", 1)[-1] if traced_fn else None
    in_fn = f" in {fn}" if fn else ""
    under = f" (traced for {transform})" if transform else ""
    depends = (
        f"; it depends on argument{'s' if len(arguments) > 1 else ''} {_names(arguments)}"
        if arguments
        else ""
    )
    static = (
        _static_hint(fn, arguments, code)
        if fn and transform in ("jit", "pjit", "pmap")
        else ""
    )
    static_part = (
        f"if {_names(arguments)} {'is a Python value' if len(arguments) == 1 else 'are Python values'} "
        f"(a flag, a size, a mode), mark {'it' if len(arguments) == 1 else 'them'} static: {static}; "
        "otherwise "
        if static
        else ""
    )

    def sentence(text: str) -> str:
        return text[:1].upper() + text[1:]

    if category == "bool_conversion":
        construct, cond = _condition_text(site)
        cond = cond or "the condition"
        message = (
            f"Python `{construct}` needs a concrete True/False, but `{cond}` is a traced "
            f"value{in_fn}{under}{depends}"
        )
        if transform == "vmap":
            message = f"Python `{construct}` on `{cond}`, which is batched by vmap: each example may differ"
        hint = (
            f"{static_part}compute both sides and select with "
            f"jnp.where({cond}, a, b), or branch with jax.lax.cond({cond}, true_fn, false_fn, ...)"
        )
        if construct == "while":
            hint = f"{static_part}use jax.lax.while_loop(lambda s: {cond}, body, init)"
        return message, sentence(hint)

    if category == "int_conversion":
        expr = site.text(site.node) if site.node is not None else "the index"
        message = f"A traced integer was used as a Python index or size in `{expr}`{in_fn}{under}{depends}"
        hint = (
            f"{static_part}index an array instead of a Python list/tuple "
            f"(jnp.asarray(seq)[i], jax.lax.dynamic_slice, jnp.take)"
        )
        return message, sentence(hint)

    if category == "array_conversion":
        calls = _np_calls(site)
        fixes = [f"{np_text} → {jnp_text}" for np_text, jnp_text in calls if jnp_text]
        expr = site.text(site.node) if site.node is not None else "a NumPy call"
        message = f"NumPy tried to turn a traced array into a numpy.ndarray in `{expr}`{in_fn}{under}"
        if fixes:
            hint = (
                "Use jax.numpy, which traces: "
                + ", ".join(fixes)
                + " (import jax.numpy as jnp)"
            )
        else:
            hint = (
                "Use the jax.numpy equivalent of the NumPy call (import jax.numpy as jnp); "
                "to run real NumPy code on the values use jax.pure_callback, or move the "
                "conversion outside the jitted function"
            )
        return message, hint

    if category == "bool_index":
        node = site.node
        arr, mask = "x", "mask"
        if isinstance(node, ast.Subscript):
            arr, mask = site.text(node.value), site.text(node.slice)
        message = (
            f"Boolean mask indexing `{arr}[{mask}]` has a data-dependent shape, which "
            f"cannot be traced{in_fn}{under}"
        )
        hint = (
            f"Keep the shape: jnp.where({mask}, {arr}, 0), or reduce with "
            f"jnp.sum({arr}, where={mask}); if you need the selected items, give their "
            f"count statically: {arr}[jnp.nonzero({mask}, size=N, fill_value=0)]"
        )
        return message, hint

    if category == "concretization":
        arises = _ARISES.search(text)
        what = f" ({arises.group('what')})" if arises else ""
        expr = site.text(site.node) if site.node is not None else ""
        at = f" in `{expr}`" if expr else ""
        message = f"A concrete Python value was needed{at}{what}, but it is traced{in_fn}{under}{depends}"
        hint = (
            f"{static_part}keep the value as an array (jnp operations, "
            f"jax.lax.cond / jnp.where for branches) or compute shapes from static data "
            f"(x.shape) rather than from array values"
        )
        return message, sentence(hint)

    if category == "item_assignment":
        fix = _assignment_fix(site)
        stmt_text = site.text(site.stmt).strip() if site.stmt is not None else ""
        message = "JAX arrays are immutable: in-place item assignment is not supported"
        if stmt_text:
            message += f" (`{stmt_text}`)"
        hint = (
            f"Write {fix}: .at[] returns an updated copy (under jit XLA updates in place)"
            if fix
            else "Use x = x.at[idx].set(value) (or .add/.multiply/.min/.max): .at[] returns an updated copy"
        )
        return message, hint

    if category in (
        "shape",
        "dtype",
        "transformation",
        "jax_other",
        "structure",
        "static_arg",
    ):
        expr = site.text(site.node) if site.node is not None else ""
        described = ", ".join(f"{o.expr}: {o.aval}" for o in operands if o.aval)
        message = first
        if expr:
            message = f"{first} — in `{expr}`" + (
                f" with {described}" if described else ""
            )
        specific = _specific(first, text, operands)
        if specific is not None:
            hint = specific[1]
        elif category == "dtype":
            dtypes = _DTYPES.search(first)
            got = f" ({dtypes.group(1)})" if dtypes else ""
            names = [o.expr for o in operands]
            cast = (
                f"{names[1]}.astype({names[0]}.dtype)"
                if len(names) >= 2
                else "x.astype(y.dtype)"
            )
            hint = (
                f"The operands have different dtypes{got}: cast one explicitly, e.g. "
                f"{cast}, or use the jnp version of the op, which promotes types"
            )
        elif category == "shape":
            hint = _shape_hint(site, operands)
        elif category == "transformation":
            tip = re.search(r"((?:Try|Consider|Use|Instead)\b[^\n]*)", text)
            hint = (
                tip.group(1)
                if tip
                else "This line's operation cannot be transformed as asked; "
                "restructure it or apply the transformation to a smaller function"
            )
        else:
            hint = ""
        return message, hint

    if category == "leak":
        leak = _LEAKED_IN.search(text)
        leaked_from = ""
        if leak:
            loc = f"{display_filename(leak.group('file'))}:{leak.group('line')}"
            leaked_from = (
                f" from {leak.group('fn')} ({loc}, traced for {leak.group('tr')})"
            )
        holders = [
            h
            for h in re.findall(r"is referred to by ([^\s<][^\s]*)", text)
            if not h.startswith("<")
        ]
        if leak is None and traced_fn:
            leaked_from = f" from {traced_fn} (traced for {transform})"
        message = f"A tracer escaped{leaked_from} and is used after its trace ended"
        known = [
            c[len("leaked into: ") :] for c in context if c.startswith("leaked into: ")
        ]
        if known and not holders:
            message = f"A tracer escaped{leaked_from}: it is still stored in {known[0]}"
        if holders:
            unique = list(dict.fromkeys(holders))
            message = f"A tracer escaped{leaked_from}: it is still referenced by {', '.join(unique)}"
            context.append("leaked into: " + ", ".join(unique))
        hint = (
            f"Return the value from {leak.group('fn') if leak else traced_fn or 'the transformed function'} "
            "instead of storing it in a global, a list or an attribute (self.x = ...); "
            "run the code inside `with js.check_leaks():` (or the %%leaks cell magic) to see "
            "where it was stored"
        )
        return message, hint

    if category == "nan":
        nan = _NAN_IN.search(text)
        prim = nan.group("prim") if nan else "an operation"
        what = nan.group("what") if nan else "nan"
        where = f" at {user_frame}" if user_frame else ""
        message = f"`{prim}` produced {what}{where} (jax_debug_nans)"
        context.append(f"first {what}-producing primitive: {prim}")
        line = site.text(site.stmt).strip() if site.stmt is not None else ""
        hint = (
            f"Guard the input of {prim}"
            + (f" in `{line}`" if line else "")
            + f", e.g. {_nan_guard(prim)}; js.step(f)(...).break_on(nan=True) steps to it "
            "with concrete values"
        )
        return message, hint

    if category == "out_of_memory":
        nbytes = _BYTES.search(text)
        size = f" {_human_bytes(int(nbytes.group('n')))}" if nbytes else ""
        where = f" (called at {user_frame})" if user_frame else ""
        message = f"The device ran out of memory allocating{size}{where}"
        if nbytes:
            context.append(
                f"requested: {_human_bytes(int(nbytes.group('n')))} ({nbytes.group('n')} bytes)"
            )
        biggest = next((c for c in context if c.startswith("buffer ")), "")
        hint = (
            (f"The largest {biggest[len('buffer ') :]}. " if biggest else "")
            + "Reduce the batch or array sizes; free buffers you no longer need (del x, "
            "donate_argnums in jax.jit); trade compute for memory with jax.checkpoint; "
            "js.hlo(f, stage='optimized')(...).memory shows argument, output and temp bytes"
        )
        return message, hint

    if category == "runtime":
        return (
            first,
            "The compiled program failed at run time; the message above is XLA's",
        )

    return first, ""


def relativize(report: ErrorReport, root: str) -> ErrorReport:
    """``report`` with file paths under ``root`` shown relative to it (as pytest does)."""
    prefix = os.path.join(os.path.abspath(root), "")

    def path(text: str) -> str:
        return text.replace(prefix, "")

    def loc(value: SourceLoc | None) -> SourceLoc | None:
        if value is None:
            return None
        return dataclasses.replace(value, file=path(value.file))

    return dataclasses.replace(
        report,
        message=path(report.message),
        hint=path(report.hint),
        user_frame=loc(report.user_frame),
        frames=[loc(f) or f for f in report.frames],
        operands=tuple(
            dataclasses.replace(o, origin=path(o.origin), origin_loc=loc(o.origin_loc))
            for o in report.operands
        ),
        jax_context=tuple(path(c) for c in report.jax_context),
    )
