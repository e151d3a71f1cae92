"""``%jaxprof CALL``: time per source line; ``%jaxmem CALL``: memory at the peak."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.magics import JaxscopeMagics, from_builder, usage_errors
from jaxscope._ipython.options import call_argument, parse_magic_args, static_arguments
from jaxscope._ipython.results import present


def _at_least(value: int | None, low: int, option: str) -> None:
    if value is not None and value < low:
        raise InvalidCallError(
            f"{option} must be >= {low}, got {value}; use e.g. {option} {max(low, 5)}"
        )


@magics_class
class ProfileMagics(JaxscopeMagics):
    @magic_arguments()
    @argument("--repeat", type=int, default=5, help="profiled runs (default 5)")
    @argument("--warmup", type=int, default=1, help="unprofiled runs first (default 1)")
    @argument("--top", type=int, default=10, help="rows of the top-lines summary")
    @argument("--device", type=int, default=None, help="one device's numbers only")
    @static_arguments
    @call_argument("train_step(state, batch)")
    @line_magic
    @usage_errors
    def jaxprof(self, line: str) -> Any:
        """Run CALL compiled, under jax.profiler, and show the time of each source line.

        CALL is compiled once (not timed), run --warmup times, then --repeat times
        under the profiler; every XLA op's measured time goes to the line of your
        code that produced it.
        """
        opts = parse_magic_args(self.jaxprof, line, verbatim="call")
        _at_least(opts.repeat, 1, "--repeat")
        _at_least(opts.warmup, 0, "--warmup")
        _at_least(opts.top, 1, "--top")
        from jaxscope._profile.profile import profile_call

        view = self.traced_call(
            "jaxprof",
            opts,
            from_builder(profile_call),
            repeat=opts.repeat,
            warmup=opts.warmup,
            api_name="%jaxprof",
        )
        if opts.device is not None:
            view = view.for_device(opts.device)
        view.show_top = opts.top
        return present(view, line)

    @magic_arguments()
    @argument("--top", type=int, default=15, help="rows of the largest-buffers table")
    @argument(
        "--residuals",
        action="store_true",
        help="the values saved for the backward pass, by line (js.residuals)",
    )
    @static_arguments
    @call_argument("train_step(state, batch)")
    @line_magic
    @usage_errors
    def jaxmem(self, line: str) -> Any:
        """Compile CALL (never run it) and show the buffers live at its memory peak.

        Each buffer is shown with its own size, the op that defines it and its
        source line; arguments, optimizer state, outputs, saved residuals and
        temporaries are told apart. With --residuals: the values a differentiated
        CALL saves for its backward pass, by line, and what jax.checkpoint
        recomputes.
        """
        opts = parse_magic_args(self.jaxmem, line, verbatim="call")
        _at_least(opts.top, 1, "--top")
        if opts.residuals:
            from jaxscope._profile.residuals import residuals_call

            found = self.traced_call(
                "jaxmem", opts, from_builder(residuals_call), api_name="%jaxmem"
            )
            found.show_top = opts.top
            return present(found, line)
        from jaxscope._profile.memory import memory_call

        view = self.traced_call(
            "jaxmem",
            opts,
            from_builder(memory_call),
            api_name="%jaxmem",
        )
        view.show_top = opts.top
        return present(view, line)


MAGICS = ProfileMagics
