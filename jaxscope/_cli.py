"""``python -m jaxscope run script.py [script args...] [--recompiles] [--leaks]``.

Runs the script as ``__main__`` (its own ``sys.argv``, exit code preserved) with the
chosen watchers active, and prints their reports to stderr at exit, so the script's
stdout stays its own. jaxscope's flags may come before or after the script name; use
``--`` to pass a flag of the same name to the script itself.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TextIO

_USAGE = "python -m jaxscope run script.py [script args...] [--recompiles] [--leaks]"
_OWN_FLAGS = ("--recompiles", "--leaks")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jaxscope",
        description="Run a Python script under jaxscope's watchers and print their "
        "reports at exit.",
    )
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", usage=_USAGE, help="run a script with watchers")
    run.add_argument(
        "--recompiles",
        action="store_true",
        help="report every jit recompile and its cause",
    )
    run.add_argument("--leaks", action="store_true", help="report tracer leaks")
    run.add_argument("script", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return parser


def _split_own_flags(argv: list[str]) -> list[str]:
    """Move jaxscope's flags after the script name in front of it (not after ``--``)."""
    if not argv or argv[0] != "run":
        return argv
    rest = argv[1:]
    script_at = next((i for i, a in enumerate(rest) if not a.startswith("-")), None)
    if script_at is None:
        return argv
    head, tail = rest[: script_at + 1], rest[script_at + 1 :]
    own: list[str] = []
    kept: list[str] = []
    passthrough = False
    for arg in tail:
        if passthrough:
            kept.append(arg)
        elif arg == "--":
            passthrough = True
        elif arg in _OWN_FLAGS:
            own.append(arg)
        else:
            kept.append(arg)
    return ["run", *own, *head, *kept]


# A watcher: a context manager whose ``__enter__`` returns something to print at exit.
Watcher = Callable[[], contextlib.AbstractContextManager[Any]]


def _recompiles_watcher() -> contextlib.AbstractContextManager[Any]:
    from jaxscope._recompiles.watcher import watch_recompiles

    return watch_recompiles()


def _leaks_watcher() -> contextlib.AbstractContextManager[Any]:
    from jaxscope._leaks.checker import check_leaks

    return check_leaks(raise_on_leak=False)


def _watchers(opts: argparse.Namespace) -> list[tuple[str, Watcher]]:
    chosen: list[tuple[str, Watcher]] = []
    if opts.recompiles:
        chosen.append(("recompiles", _recompiles_watcher))
    if opts.leaks:
        chosen.append(("leaks", _leaks_watcher))
    return chosen


def _print_report(name: str, report: Any, out: TextIO) -> None:
    from jaxscope._display import to_text
    from jaxscope._recompiles.records import event_hints

    if name == "leaks":
        message = getattr(report, "message", None)
        out.write(f"\njaxscope: {message(short=True) if message else report}\n")
        out.flush()
        return
    out.write(f"\n{to_text(report.summary(), width=120)}\n")
    if name == "recompiles":
        events = [
            e
            for e in getattr(report, "events", [])
            if e.causes and e.causes[0].kind != "first_call"
        ]
        if events:
            out.write("recompiles after the first compile:\n")
            for e in events:
                out.write(f"  {e}\n")
                for hint in event_hints(e):
                    out.write(f"      hint: {hint}\n")
    out.flush()


@contextlib.contextmanager
def _script_argv(argv: list[str]) -> Iterator[None]:
    saved_argv = sys.argv
    sys.argv = argv
    script_dir = os.path.dirname(os.path.abspath(argv[0]))
    sys.path.insert(0, script_dir)
    try:
        yield
    finally:
        sys.argv = saved_argv
        if sys.path and sys.path[0] == script_dir:
            del sys.path[0]


def _run(opts: argparse.Namespace, err: TextIO) -> int:
    script = opts.script
    if not os.path.isfile(script):
        err.write(f"jaxscope run: no such script {script!r}; usage: {_USAGE}\n")
        return 2
    code = 0
    with contextlib.ExitStack() as stack:
        reports = [
            (name, stack.enter_context(make())) for name, make in _watchers(opts)
        ]
        try:
            with _script_argv([script, *opts.args]):
                runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            code = _exit_code(exc.code, err)
        except KeyboardInterrupt as exc:  # Ctrl-C: 128 + SIGINT, as shells expect
            _print_script_error(exc, err)
            code = 130
        except BaseException as exc:  # the script's own error: as python reports it
            _print_script_error(exc, err)
            _print_explained(exc, err)
            code = 1
    for name, report in reports:
        _print_report(name, report, err)
    return code


# Frames of the runner itself, above the script's: python's own report has none.
_RUNNER_FILES = (os.path.abspath(__file__), runpy.__file__)


def _script_traceback(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` from the script's first frame on (this module and runpy left out)."""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not (name in _RUNNER_FILES or name.startswith("<frozen runpy")):
            break
        tb = tb.tb_next
    return tb


def _print_script_error(exc: BaseException, err: TextIO) -> None:
    tb = _script_traceback(exc.__traceback__)
    traceback.print_exception(type(exc), exc, tb, file=err)
    err.flush()


def _print_explained(exc: BaseException, err: TextIO) -> None:
    """The source-mapped report IPython and pytest show, for an error from JAX."""
    try:
        from jaxscope._display import rendered_text
        from jaxscope._explain.classify import explainable
        from jaxscope._explain.explainer import explain
        from jaxscope._explain.report import relativize

        if not explainable(exc):
            return
        report = relativize(explain(exc), os.getcwd())
        text = rendered_text(report, 100, soft_wrap=True)
    except Exception:  # an explanation must never hide the script's own error
        return
    title = " jaxscope: source-mapped JAX error "  # as pytest's section says
    err.write(f"\n{title:-^100}\n{text}\n")
    err.flush()


def _exit_code(code: Any, err: TextIO) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    err.write(f"{code}\n")
    return 1


def main(argv: list[str] | None = None) -> int:
    """The ``jaxscope`` command; returns the exit status (the script's own for run)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv:
        parser.print_usage(sys.stderr)
        sys.stderr.write("jaxscope: missing command; usage: " + _USAGE + "\n")
        return 2
    if argv[0] == "run" and all(a.startswith("-") for a in argv[1:]):
        sys.stderr.write(f"jaxscope run: no script given; usage: {_USAGE}\n")
        return 2
    try:
        opts = parser.parse_args(_split_own_flags(argv))
    except SystemExit as exc:  # argparse already printed the message to stderr
        return 2 if exc.code else 0
    if opts.command != "run":
        sys.stderr.write("jaxscope: missing command; usage: " + _USAGE + "\n")
        return 2
    return _run(opts, sys.stderr)
