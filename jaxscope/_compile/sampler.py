# pyright: strict
"""Python time per user line while JAX traces: the tracing thread's stack, sampled.

On the main thread (scripts, notebooks, terminal IPython) an interval timer
interrupts the trace every ``TRACE_SAMPLE_SECONDS`` and its handler reads the
interrupted frame: no second thread, so no GIL hand-over slows or starves the
sampling on a loaded machine. Python runs the handler between bytecodes, so time
spent inside one long C call is seen when it returns. The real-time timer
(``SIGALRM``) is used where it is free; where someone else holds it (pytest-timeout
does, for every test) the process's CPU-time timer (``SIGPROF``) is. The timer and
the previous handler are restored on every exit path, and a timer or handler
someone else installed is never replaced. Elsewhere (another thread, a platform
without ``setitimer``, both timers in use) a second thread reads the tracing
thread's frame (``sys._current_frames``) at the same interval, whenever it gets
the GIL: a trace that often drops and retakes the GIL can starve it, so its
samples are few on a busy machine. Each sample stands for an equal share of the
measured trace time, so the lines add up to the trace exactly.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import types
from typing import Any

from jaxscope._compile.records import TRACE_SAMPLE_SECONDS
from jaxscope._source import display_filename, is_library_file, is_user_file

# A stack's user frames, innermost first: (shown file, line, function, own code?).
Stack = tuple[tuple[str, int, str, bool], ...]

# The interval timers tried in turn, as (``setitimer`` timer, its signal, the
# ``method`` named): wall-clock time first, then the process's CPU time.
_TIMERS = (("ITIMER_REAL", "SIGALRM", "signal"), ("ITIMER_PROF", "SIGPROF", "cpu"))


class TraceSampler:
    """``with TraceSampler() as s: trace()`` then ``s.stacks``: one per sample."""

    def __init__(self, interval: float = TRACE_SAMPLE_SECONDS) -> None:
        self.interval = interval
        self.stacks: list[Stack] = []
        self._thread_id = threading.get_ident()
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._files: dict[str, tuple[str, bool, bool]] = {}
        self._base: types.FrameType | None = None
        self._previous: Any = None
        self._timer = 0
        self._signum = 0
        #: "signal" (wall-clock timer), "cpu" (CPU-time timer) or "thread"
        self.method = "thread"

    def __enter__(self) -> TraceSampler:
        # frames at or below the caller are its own stack, never the program's
        self._base = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
        found = self._free_timer()
        if found is not None:
            self._timer, self._signum, method = found
            self._previous = signal.signal(self._signum, self._on_signal)
            try:
                signal.setitimer(self._timer, self.interval, self.interval)
            except OSError:  # the handler goes back; a thread samples instead
                signal.signal(self._signum, self._previous)
            else:
                self.method = method
                return self
        self._sampler = threading.Thread(
            target=self._run, name="jaxscope-trace-sampler", daemon=True
        )
        self._sampler.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.method != "thread":
            signal.setitimer(self._timer, 0)
            signal.signal(self._signum, self._previous)
        else:
            self._stop.set()
            if self._sampler is not None:
                self._sampler.join()
        self._base = None

    def _free_timer(self) -> tuple[int, int, str] | None:
        """The first timer of ``_TIMERS`` nobody uses (no timer running, the default
        handler on its signal), or None (not the main thread, or none free)."""
        if threading.current_thread() is not threading.main_thread():
            return None
        for timer_name, signal_name, method in _TIMERS:
            timer: int | None = getattr(signal, timer_name, None)
            signum: int | None = getattr(signal, signal_name, None)
            if timer is None or signum is None or not hasattr(signal, "setitimer"):
                continue
            try:
                running = signal.getitimer(timer)
                handler = signal.getsignal(signum)
            except (OSError, ValueError):
                continue
            if running == (0.0, 0.0) and handler in (signal.SIG_DFL, None):
                return timer, signum, method
        return None

    def _on_signal(self, _signum: int, frame: types.FrameType | None) -> None:
        self.stacks.append(self._stack(frame))

    def _run(self) -> None:
        wait, stop, current = self.interval, self._stop, sys._current_frames  # pyright: ignore[reportPrivateUsage]
        while not stop.wait(wait):
            frame = current().get(self._thread_id)
            if frame is not None:
                self.stacks.append(self._stack(frame))
            del frame

    def _file(self, filename: str) -> tuple[str, bool, bool]:
        found = self._files.get(filename)
        if found is None:
            user = is_user_file(filename)
            found = self._files[filename] = (
                display_filename(filename),
                user,
                user and not is_library_file(filename),
            )
        return found

    def _stack(self, frame: types.FrameType | None) -> Stack:
        out: list[tuple[str, int, str, bool]] = []
        base = self._base
        while frame is not None and frame is not base:
            code = frame.f_code
            shown, user, own = self._file(code.co_filename)
            if user:
                out.append((shown, frame.f_lineno or 0, code.co_name, own))
            frame = frame.f_back
        if frame is None:  # not below the base: a sample outside the trace
            return ()
        return tuple(out)


def timed_samples(
    stacks: list[Stack], seconds: float
) -> tuple[
    dict[tuple[str, int], float],
    dict[tuple[str, int], float],
    float,
    dict[tuple[str, int], str],
]:
    """``(self, cumulative, outside, function names)`` seconds per ``(file, line)``:
    each sample weighs ``seconds / len(stacks)``; a sample in no user line of the
    user's own code counts ``outside``."""
    own: dict[tuple[str, int], float] = {}
    cumulative: dict[tuple[str, int], float] = {}
    names: dict[tuple[str, int], str] = {}
    outside = 0.0
    if not stacks:
        return own, cumulative, seconds, names
    weight = seconds / len(stacks)
    for stack in stacks:
        mine = [(f, n, fn) for f, n, fn, is_own in stack if is_own]
        if not mine:
            outside += weight
            continue
        key = (mine[0][0], mine[0][1])
        own[key] = own.get(key, 0.0) + weight
        for f, n, fn in dict.fromkeys(mine):
            k = (f, n)
            names.setdefault(k, fn)
            cumulative[k] = cumulative.get(k, 0.0) + weight
    return own, cumulative, outside, names


def now() -> float:
    """``time.perf_counter()``."""
    return time.perf_counter()
