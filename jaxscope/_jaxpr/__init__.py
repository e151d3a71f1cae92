"""Jaxprs: trace any call, map every equation to the user's source line."""
