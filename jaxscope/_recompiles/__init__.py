"""Recompilation causes: one event per cache miss, with its cause, cost and fix."""
