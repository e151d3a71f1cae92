"""Time and memory per source line: ``js.profile`` and ``js.memory``.

``js.profile`` runs a compiled call under ``jax.profiler`` and gives each optimized-HLO
op's measured time to the user's source lines (fusions split over their members);
``js.memory`` reads the compiled module's buffer assignment and lists the buffers
live at the peak, each with the op and the line that defines it.
"""
