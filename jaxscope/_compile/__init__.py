# pyright: strict
"""``js.compile_profile`` and ``%jaxcompile``: compile cost by source line."""
