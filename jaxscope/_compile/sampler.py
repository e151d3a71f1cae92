# pyright: strict
"""Python time per user line while JAX traces: the tracing thread's stack, sampled.

On the main thread (scripts, notebooks, terminal IPython) a real-time interval
timer (``SIGALRM``) interrupts the trace every ``TRACE_SAMPLE_SECONDS`` and its
handler reads the interrupted frame: no second thread, so no GIL hand-over slows
the trace on a loaded machine. Python runs the handler between bytecodes, so time
spent inside one long C call is seen when it returns. The timer and the previous
handler are restored on every exit path, and a timer or handler someone else
installed is never replaced. Elsewhere (another thread, a platform without
``setitimer``, ``SIGALRM`` in use) a second
thread reads the tracing thread's frame (``sys._current_frames``) at the same
interval, as often as Python's switch interval lets it. Each sample stands for an
equal share of the measured trace time, so the lines add up to the trace exactly.
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
        self.method = "thread"

    def __enter__(self) -> TraceSampler:
        # frames at or below the caller are its own stack, never the program's
        self._base = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
        if self._signal_free():
            self._previous = signal.signal(signal.SIGALRM, self._on_signal)
            signal.setitimer(signal.ITIMER_REAL, self.interval, self.interval)
            self.method = "signal"
            return self
        self._sampler = threading.Thread(
            target=self._run, name="jaxscope-trace-sampler", daemon=True
        )
        self._sampler.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.method == "signal":
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
        else:
            self._stop.set()
            if self._sampler is not None:
                self._sampler.join()
        self._base = None

    def _signal_free(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        if not hasattr(signal, "setitimer") or not hasattr(signal, "SIGALRM"):
            return False
        try:
            running = signal.getitimer(signal.ITIMER_REAL)
            handler = signal.getsignal(signal.SIGALRM)
        except (OSError, ValueError):
            return False
        return running == (0.0, 0.0) and handler in (signal.SIG_DFL, None)

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
