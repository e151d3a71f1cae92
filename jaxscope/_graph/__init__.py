"""The dataflow graph of a jaxpr, its DOT/SVG export and the interactive viewer."""
