"""``%jaxstep CALL``: a pdb-like prompt in a terminal, a widget in a notebook kernel.

``StepperPrompt`` is a plain ``cmd.Cmd`` over a ``Stepper`` taking ``stdin``/``stdout``
file objects, so it runs (and is tested) without a terminal, as JAX's own ``jdb``.
"""

from __future__ import annotations

import cmd
import shutil
import sys
from typing import IO, TYPE_CHECKING, Any, ClassVar

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._display import printable, safe_repr
from jaxscope._exceptions import JaxscopeError
from jaxscope._format import exception_text
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import call_argument, parse_magic_args, static_arguments
from jaxscope._ipython.results import present

# The stepper and its renderer (JAX) are imported where used: registering the magic
# at %load_ext must stay cheap.
if TYPE_CHECKING:
    from jaxscope._stepper.stepper import Stepper

_HELP = """commands (pdb style):
  s(tep)            run the equation, or enter its nested jaxpr
  n(ext)            run the equation, nested jaxprs included
  f(inish)          run to the end of the current nested jaxpr
  c(ontinue)        run to the next breakpoint or the end
  u(ntil) TARGET    run until a line, file:line or primitive
  b(reak) [ARG]     list breakpoints, or break at LINE, file:LINE, a primitive, nan, inf;
                    LINE, COND breaks only where COND holds (b 42, loss > 3)
  cl(ear) [LINE]    clear one line breakpoint, or all breakpoints
  p EXPR            print a variable (or an expression over your variables; $a is
                    the jaxpr's variable a)
  up / d(own)       read names in the calling / called frame of your code
  v(ars)            the current frame's values: aval, min, max, mean, NaN count
  l(ist)            source around the current equation
  w(here)           the stack of nested jaxprs (loop iterations included)
  q(uit)            leave the prompt (the stepper stays in _jaxstep)"""


# The short forms of the commands, as pdb spells them.
_ALIASES = {
    "s": "step",
    "n": "next",
    "f": "finish",
    "c": "continue",
    "cont": "continue",
    "u": "until",
    "b": "break",
    "cl": "clear",
    "print": "p",
    "v": "vars",
    "l": "list",
    "w": "where",
    "bt": "where",
    "q": "quit",
    "exit": "quit",
    "h": "help",
    "d": "down",
}


class _Prompt(cmd.Cmd):
    """A ``cmd.Cmd`` that echoes scripted input (so a transcript reads like a terminal
    session) and knows short ``aliases`` of its commands."""

    aliases: ClassVar[dict[str, str]] = {}

    def __init__(self, stdin: IO[str] | None, stdout: IO[str] | None):
        stdin = stdin if stdin is not None else sys.stdin
        stdout = stdout if stdout is not None else sys.stdout
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is sys.__stdin__ and bool(
            getattr(stdin, "isatty", lambda: False)()
        )

    def _say(self, text: str) -> None:
        # Names, source lines and values are the user's: no terminal control codes.
        self.stdout.write(printable(text) + "\n")

    def precmd(self, line: str) -> str:
        if not self.use_rawinput and line != "EOF":
            self._say(line.rstrip("\n"))
        return line

    def parseline(self, line: str) -> tuple[str | None, str | None, str]:
        command, arg, line = super().parseline(line)
        return self.aliases.get(command, command) if command else command, arg, line

    def get_names(self) -> list[str]:
        return [*super().get_names(), *(f"do_{alias}" for alias in self.aliases)]

    def default(self, line: str) -> None:
        self._say(f"*** unknown command {line.split()[0]!r}; type help")

    def emptyline(self) -> bool:
        return bool(self.lastcmd) and self.onecmd(self.lastcmd)


class StepperPrompt(_Prompt):
    """A pdb-like prompt driving a ``Stepper``; reads ``stdin``, writes ``stdout``."""

    prompt = "(jaxstep) "
    aliases = _ALIASES

    def __init__(
        self,
        stepper: Stepper,
        stdin: IO[str] | None = None,
        stdout: IO[str] | None = None,
    ):
        super().__init__(stdin, stdout)
        self.stepper = stepper

    def run(self) -> Stepper:
        """Show where the stepper is, then read commands until ``q``, end of input or
        Ctrl-C at the prompt; Ctrl-C while a command runs returns to the prompt."""
        from jaxscope._stepper.render import location_text

        self._say(location_text(self.stepper))
        try:
            self.cmdloop()
        except KeyboardInterrupt:  # at the prompt: leave, as at end of input
            self._say("")
        return self.stepper

    def onecmd(self, line: str) -> bool:
        try:
            return super().onecmd(line)
        except KeyboardInterrupt:
            from jaxscope._stepper.render import location_text

            self._say(f"*** interrupted\n{location_text(self.stepper)}")
            return False

    def _move(self, action: Any, *args: Any) -> None:
        from jaxscope._stepper.render import location_text

        try:
            action(*args)
        except JaxscopeError as exc:
            self._say(f"*** {exc}")
            return
        if self.stepper.condition_error is not None:
            self._say(f"*** {self.stepper.condition_error}")
        self._say(location_text(self.stepper))

    # ---------------------------------------------------------------- commands

    def do_step(self, arg: str) -> None:
        self._move(self.stepper.step)

    def do_next(self, arg: str) -> None:
        self._move(self.stepper.next)

    def do_finish(self, arg: str) -> None:
        self._move(self.stepper.finish)

    def do_continue(self, arg: str) -> None:
        self._move(self.stepper.run)

    def do_until(self, arg: str) -> None:
        if not arg.strip():
            self._say("*** until needs a target: a line, file:line or a primitive")
            return
        target: Any = int(arg) if arg.strip().isdigit() else arg.strip()
        self._move(self.stepper.run, target)

    def do_break(self, arg: str) -> None:
        self._say(_break(self.stepper, arg.strip()))

    def do_clear(self, arg: str) -> None:
        self._say(_clear(self.stepper, arg.strip()))

    def do_p(self, arg: str) -> None:
        self._say(_print(self.stepper, arg.strip()))

    def do_up(self, arg: str) -> None:
        self._frame(self.stepper.up)

    def do_down(self, arg: str) -> None:
        self._frame(self.stepper.down)

    def _frame(self, move: Any) -> None:
        from jaxscope._stepper.render import frame_text

        try:
            move()
        except JaxscopeError as exc:
            self._say(f"*** {exc}")
            return
        self._say(frame_text(self.stepper))

    def do_vars(self, arg: str) -> None:
        from jaxscope._stepper.render import values_text

        width = shutil.get_terminal_size((100, 24)).columns
        self._say(values_text(self.stepper.summaries(), width))

    def do_list(self, arg: str) -> None:
        from jaxscope._stepper.render import listing_text

        self._say(listing_text(self.stepper))

    def do_where(self, arg: str) -> None:
        from jaxscope._stepper.render import where_text

        self._say(where_text(self.stepper))

    def do_quit(self, arg: str) -> bool:
        return True

    def do_EOF(self, arg: str) -> bool:
        self._say("")
        return True

    def do_help(self, arg: str) -> None:
        self._say(_HELP)


def _break(stepper: Stepper, arg: str) -> str:
    """``b``: list the breakpoints, or set one (a line, nan, inf or a primitive)."""
    if not arg:
        bps = stepper.breakpoints
        conditions = bps["conditions"]
        parts = [
            f"line {b} if {conditions[b]}" if b in conditions else f"line {b}"
            for b in bps["lines"]
        ]
        parts += [f"primitive {p}" for p in bps["primitives"]]
        parts += [k for k in ("nan", "inf") if bps[k]]
        return "breakpoints: " + (", ".join(parts) if parts else "none")
    try:
        if arg in ("nan", "inf"):
            stepper.break_on(nan=arg == "nan", inf=arg == "inf")
        else:
            _break_at(stepper, arg)
    except JaxscopeError as exc:
        return f"*** {exc}"
    where, _, condition = arg.partition(",")
    shown = f"{where.strip()} if {condition.strip()}" if condition.strip() else arg
    return f"breakpoint set: {shown}"


def _break_at(stepper: Stepper, spec: str) -> None:
    """Break at ``spec``: a line (``12``, ``file:12``), with a condition after a
    comma as pdb writes it (``12, loss > 3``), or else a primitive."""
    where, comma, condition = spec.partition(",")
    where = where.strip()
    if where.isdigit() or ":" in where:
        stepper.break_on(
            line=int(where) if where.isdigit() else where,
            condition=condition if comma else None,
        )
    else:
        stepper.break_on(primitive=spec)


def _clear(stepper: Stepper, arg: str) -> str:
    """``cl``: clear the breakpoint at line ``arg``, or all of them."""
    try:
        stepper.clear_breakpoints(int(arg) if arg.isdigit() else (arg or None))
    except JaxscopeError as exc:
        return f"*** {exc}"
    return f"cleared {'breakpoint ' + arg if arg else 'all breakpoints'}"


def _print(stepper: Stepper, expr: str) -> str:
    """``p``: a variable, or an expression over the user's variables (and jnp, np;
    ``$a`` for the jaxpr's ``a``)."""
    values = stepper.namespace()
    if not expr:
        return "*** p needs a variable name or an expression"
    if expr in values:
        return f"{expr} = {safe_repr(values[expr])}"
    try:
        result = stepper.evaluate(expr)
    except Exception as exc:
        known = ", ".join(k for k in values if k.isidentifier()) or "none yet"
        return (
            f"*** {type(exc).__name__}: {exception_text(exc)} (your variables here: "
            f"{known}; the jaxpr's with a $, as $a)"
        )
    return safe_repr(result)


def _in_kernel(shell: Any) -> bool:
    return getattr(shell, "kernel", None) is not None


@magics_class
class StepperMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "-b",
        "--break",
        dest="breaks",
        action="append",
        default=[],
        help="break at LINE, file:LINE or a primitive (repeatable)",
    )
    @argument(
        "--nan",
        action="store_true",
        help="break right after the equation that produces a NaN",
    )
    @argument(
        "--inf",
        action="store_true",
        help="break right after the equation that produces an Inf",
    )
    @argument(
        "--prompt", action="store_true", help="use the text prompt even in a notebook"
    )
    @argument(
        "--widget", action="store_true", help="use the widget even without a kernel"
    )
    @static_arguments
    @call_argument("f(x, y)")
    @line_magic
    @usage_errors
    def jaxstep(self, line: str) -> Any:
        """Step through CALL equation by equation, jit disabled.

        A widget in notebooks, a pdb-like prompt in a terminal. The stepper is kept
        in ``_jaxstep``."""
        from jaxscope._stepper.stepper import step

        opts = parse_magic_args(self.jaxstep, line, verbatim="call")
        shell = self.running_shell
        stepper = self.traced_call("jaxstep", opts, step)
        for spec in opts.breaks:
            _break_at(stepper, spec)
        stepper.break_on(nan=opts.nan, inf=opts.inf)
        shell.user_ns["_jaxstep"] = stepper
        use_widget = opts.widget or (_in_kernel(self.shell) and not opts.prompt)
        if use_widget:
            from jaxscope._stepper.widget import StepperWidget

            return present(StepperWidget(stepper), line)
        StepperPrompt(stepper, sys.stdin, sys.stdout).run()
        return None


MAGICS = StepperMagics
