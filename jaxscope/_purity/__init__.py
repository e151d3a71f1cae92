"""Purity: values baked in at trace time that changed since, and trace-time side effects."""
