"""Tracer leaks: where each leaked tracer was created and what holds it."""
