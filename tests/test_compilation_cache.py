"""Every capability with JAX's persistent compilation cache on, globally or only for
this thread (a fixture or a library's ``enable_compilation_cache`` context).

Features that read XLA's dumps (``js.memory``, ``js.shardings``) get nothing from a
cache hit and compile once more; that must answer, change no JAX flag (global or
thread-local), store no cache entry of its own and leave JAX's in-memory caches as
they were. Each scenario runs in a fresh process: the persistent cache is
process-wide state that JAX initialises once.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_SCRIPT = """
import contextlib, json, os, sys
os.environ["JAX_PLATFORMS"] = "cpu"
import jax, jax.numpy as jnp
from jax._src import config as jax_config
import jaxscope as js

cache_dir, scenario = sys.argv[1], sys.argv[2]
jax.config.update("jax_compilation_cache_dir", cache_dir)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
jax.config.update("jax_enable_compilation_cache", scenario == "global on")
override = (
    jax_config.enable_compilation_cache(scenario == "thread-local on")
    if scenario.startswith("thread-local")
    else contextlib.nullcontext()
)


def f(x):
    return jnp.sum(jnp.tanh(x) @ x.T, axis=1)


def snapshot():
    names = sorted(jax.config.values)
    return {
        "global": {n: repr(jax.config.values[n]) for n in names},
        "here": {n: repr(getattr(jax.config, n, None)) for n in names},
    }


def watched(factory):
    def run():
        with factory() as w:
            jax.jit(lambda x: x * 3)(x)
        return w
    return run


def explained():
    try:
        jax.jit(lambda a: a @ jnp.ones((5, 5)))(x)
    except TypeError as exc:
        return js.explain(exc)


capabilities = {
    "jaxpr": lambda: js.jaxpr(f)(x),
    "hlo stablehlo": lambda: js.hlo(f, stage="stablehlo")(x),
    "hlo optimized": lambda: js.hlo(f, stage="optimized")(x),
    "graph": lambda: js.graph(f)(x),
    "memory": lambda: js.memory(f)(x),
    "profile": lambda: js.profile(f, repeat=1, warmup=0)(x),
    "compile_profile": lambda: js.compile_profile(f)(x),
    "shardings": lambda: js.shardings(f)(x),
    "sharding": lambda: js.sharding(x),
    "step": lambda: js.step(f)(x).run(),
    "find_nan": lambda: js.find_nan(f)(x),
    "watch_recompiles": watched(js.watch_recompiles),
    "check_leaks": watched(lambda: js.check_leaks(raise_on_leak=False)),
    "watch_purity": watched(js.watch_purity),
    "explain": explained,
}
out = {}
with override:
    x = jnp.ones((8, 8))  # the process's first compile
    precompiled = jax.jit(lambda v: v + 1)
    precompiled(x)
    for name, run in capabilities.items():
        results = []
        for _ in range(2):  # the second call finds the first one's cache entries
            before, entries = snapshot(), len(os.listdir(cache_dir))
            try:
                shown = str(run())
                error = None
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            after = snapshot()
            changed = {
                f"{kind} {n}": (before[kind][n], after[kind][n])
                for kind in before
                for n in before[kind]
                if before[kind][n] != after[kind][n]
            }
            results.append({
                "error": error,
                "changed": changed,
                "new entries": len(os.listdir(cache_dir)) - entries,
            })
        out[name] = results
    out["precompiled cache"] = precompiled._cache_size()
out["global after"] = jax.config.values["jax_enable_compilation_cache"]
print(json.dumps(out))
"""

SCENARIOS = ["global on", "thread-local on", "thread-local off"]


@pytest.fixture(scope="module", params=SCENARIOS)
def scenario(request, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(cache), request.param],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return request.param, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_capability_answers_and_changes_no_jax_flag(scenario):
    name, out = scenario
    problems = {
        capability: result
        for capability, results in out.items()
        if isinstance(results, list)
        for result in results
        if result["error"] or result["changed"]
    }
    assert not problems, f"{name}: {problems}"
    assert out["global after"] is (name == "global on")


@pytest.mark.slow
def test_no_capability_grows_jax_caches_on_a_second_call(scenario):
    name, out = scenario
    grown = {
        capability: results[1]["new entries"]
        for capability, results in out.items()
        if isinstance(results, list) and results[1]["new entries"]
    }
    assert not grown, f"{name}: persistent cache entries added by {grown}"
    assert out["precompiled cache"] == 1
