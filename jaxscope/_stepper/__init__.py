"""Stepping mode: run a staged program equation by equation with concrete values."""
