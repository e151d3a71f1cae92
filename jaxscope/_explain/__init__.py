"""Source-mapped JAX errors with a concrete fix."""
