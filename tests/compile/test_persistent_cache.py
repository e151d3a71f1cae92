"""The cold compile neither reads nor writes JAX's persistent compilation cache, and
the user's own entries still serve their next call (a fresh process: the cache is
process-wide state JAX initialises once)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = """
import json, os, signal, sys
os.environ["JAX_PLATFORMS"] = "cpu"
import jax, jax.numpy as jnp
import jaxscope as js

jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
jax.config.update("jax_enable_compilation_cache", True)
hits = []
jax.monitoring.register_event_listener(
    lambda event, **kw: hits.append(1) if event.endswith("/cache_hits") else None
)

def f(x):
    return jnp.sum(jnp.tanh(x) @ x.T, axis=1)

x = jnp.ones((8, 8))
jax.jit(f)(x)  # the user's entry
entries = len(os.listdir(sys.argv[1]))
before = len(hits)
cp = js.compile_profile(f)(x)
profile_hits = len(hits) - before
after_profile = len(os.listdir(sys.argv[1]))
jax.clear_caches()  # as a new process would start: the in-memory caches empty
jax.jit(f)(x)  # served from the user's persistent entry
print(json.dumps({
    "entries": entries,
    "after profile": after_profile,
    "profile hits": profile_hits,
    "next call hits": len(hits) - before - profile_hits,
    "compile seconds": cp.stages.compile,
    "enabled": jax.config.values["jax_enable_compilation_cache"],
    "sampling": cp.trace_sampling,
    "alarm after": [signal.getsignal(signal.SIGALRM) == signal.SIG_DFL, signal.getitimer(signal.ITIMER_REAL)],
}))
"""


@pytest.mark.slow
def test_cold_compile_bypasses_the_persistent_cache_and_leaves_it_as_it_was(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["entries"] >= 1
    assert out["after profile"] == out["entries"]  # nothing stored
    assert out["profile hits"] == 0  # nothing read: XLA really compiled
    assert out["next call hits"] == 1  # the user's entry still serves them
    assert out["compile seconds"] > 0 and out["enabled"] is True
    # a script's main thread: sampled by a timer signal, then the alarm put back
    assert "timer signal" in out["sampling"]
    assert out["alarm after"] == [True, [0.0, 0.0]]
