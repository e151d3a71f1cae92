"""The one place jaxscope changes Python's cyclic garbage collector.

What is done, when, and why: jaxscope's own work keeps large, acyclic data alive
while it runs (a trace holds every equation so far, a stepper run every value so far,
a model build its records), and each collection that rescans it costs time and finds
nothing. So, for the length of that work only:

- ``full_collections_deferred``: while a function is traced, the generation-2
  threshold is raised so that no automatic *full* collection runs; young ones go on.
- ``gc_paused``: while records are built from a traced program (``js.jaxpr``'s model,
  the graph, its browser payload, the text layout), automatic collection is off. On
  the way out the young objects are filed with the old ones unscanned: the records
  live as long as the view, so the next young collection would scan them only to
  promote them.
- ``young_collections_only``: while the stepper runs equations, automatic collection
  is off, and the stepper calls the ``collect`` it is given every so often to collect
  the two young generations.

What the user's settings become afterwards, on normal and exceptional exit alike:

- a collector the user disabled (``gc.disable()``) stays disabled, and jaxscope
  collects nothing meanwhile; an enabled one is enabled again;
- the thresholds (``gc.set_threshold``) are the user's again; thresholds that already
  stop automatic collection (a zero first one, a generation-2 one at the maximum) are
  never touched;
- objects the user froze (``gc.freeze()``) stay frozen, and jaxscope leaves nothing
  frozen: when the user has frozen objects, ``gc_paused`` skips the filing;
- the one lasting effect: after ``gc_paused``, objects that were young (the user's
  included) are in the oldest generation, so cyclic garbage among them waits for the
  next full collection instead of the next young one.

``tests/test_gc_policy.py`` checks each point for each tactic.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

#: A generation-2 threshold no count reaches.
_NEVER = 2**31 - 1


@contextlib.contextmanager
def full_collections_deferred() -> Iterator[None]:
    """The cyclic GC's full collections held off while a trace runs; young ones go
    on, and the thresholds are restored on every exit path.

    A trace keeps every equation so far alive, so each full collection rescans them
    all: tracing 100,000 equations ran 7 of them, a quarter of its time. The first
    full collection after the trace finds what it left. Thresholds that already
    stop automatic collection, or full ones, are left as they are.
    """
    threshold = gc.get_threshold()
    if not threshold[0] or (len(threshold) > 2 and threshold[2] >= _NEVER):
        yield
        return
    gc.set_threshold(threshold[0], threshold[1], _NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a model is built: building allocates a few small
    acyclic objects per equation, and rescanning JAX's large heap meanwhile cost more
    than the build itself (2.5x at 20k equations).

    On the way out the young objects are filed with the old ones unscanned
    (``gc.freeze()`` then ``gc.unfreeze()``, both O(1)): the model lives as long as its
    view, so the young collection that resuming would start next scans a few
    objects per equation (a tenth of the build) only to promote them. The user's
    young objects go too: cyclic garbage among them waits for the next full
    collection. Skipped when the user has frozen objects of their own, which must
    stay frozen.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


@contextlib.contextmanager
def young_collections_only() -> Iterator[Callable[[], None]]:
    """Automatic garbage collection paused while the stepper runs, with a
    ``collect`` of the two young generations to call every so often.

    The values of every equation run so far stay alive in the frames, so each full
    collection rescans them all: one run of 20,000 equations spent as long in the
    collector as in the equations. Young collections still free the cycles the run
    makes; the full one happens when collection resumes. A collector the user
    disabled stays disabled, and nothing is collected.
    """
    enabled = gc.isenabled()

    def collect() -> None:
        if enabled:
            gc.collect(1)

    gc.disable()
    try:
        yield collect
    finally:
        if enabled:
            gc.enable()
