"""Values of the compiled program: probes and the compiled NaN hunt."""
