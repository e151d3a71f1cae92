"""``js.shardings`` with JAX's persistent compilation cache on.

A cache hit skips XLA's passes, so the op shardings after propagation are not dumped;
``js.shardings`` then compiles once more. That must never change a JAX flag that
another thread (or the caller, after the call) can see, and must never store a
cache entry of its own. Each scenario runs in a fresh process: the persistent cache
is process-wide state that JAX initialises once.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PRELUDE = """
import json, os, sys, threading
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import jaxscope as js

cache_dir = sys.argv[1]
jax.config.update("jax_compilation_cache_dir", cache_dir)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


def sharded_input():
    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(auto, auto))
    return jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))


def f(a):
    return jnp.sum(jnp.tanh(a), axis=1)


def entries():
    return len(os.listdir(cache_dir))
"""

# Three calls (the second and third hit the cache), while another thread watches
# the flags; every compile also asks a fresh thread what it sees right then.
_THREADS = (
    _PRELUDE
    + """
FLAGS = ("jax_enable_compilation_cache", "jax_persistent_cache_min_compile_time_secs")
seen = set()
stop = threading.Event()


def poll():
    while not stop.is_set():
        seen.add(tuple(getattr(jax.config, name) for name in FLAGS))


real_compile = jax.stages.Lowered.compile


def look_from_another_thread():
    reader = threading.Thread(
        target=lambda: seen.add(tuple(getattr(jax.config, name) for name in FLAGS))
    )
    reader.start()
    reader.join()


def compile_watched(self, *args, **kwargs):
    look_from_another_thread()
    try:
        return real_compile(self, *args, **kwargs)
    finally:
        look_from_another_thread()


jax.stages.Lowered.compile = compile_watched
x = sharded_input()
watcher = threading.Thread(target=poll)
watcher.start()
stages, counts = [], []
try:
    for _ in range(3):
        v = js.shardings(f)(x)
        stages.append(v.ops_stage)
        counts.append(entries())
finally:
    stop.set()
    watcher.join()
print(json.dumps({
    "stages": stages,
    "entries": counts,
    "seen": sorted(map(list, seen)),
    "after": [getattr(jax.config, name) for name in FLAGS],
}))
"""
)

# The caller turned the cache on for this thread only (global value: off).
_THREAD_LOCAL = (
    _PRELUDE
    + """
from jax._src import config as jax_config

jax.config.update("jax_enable_compilation_cache", False)
with jax_config.enable_compilation_cache(True):
    x = sharded_input()
    stages = [js.shardings(f)(x).ops_stage for _ in range(2)]
    inside = jax.config.jax_enable_compilation_cache
print(json.dumps({
    "stages": stages,
    "inside": inside,
    "after": jax.config.jax_enable_compilation_cache,
    "entries": entries(),
}))
"""
)


def _run(script: str, tmp_path) -> dict:
    cache = tmp_path / "cache"
    cache.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, str(cache)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    return _run(_THREADS, tmp_path_factory.mktemp("threads"))


def test_every_cache_hit_still_gives_the_propagated_op_shardings(watched):
    assert watched["stages"] == ["after sharding propagation"] * 3


def test_the_extra_compile_stores_no_cache_entry(watched):
    first, *later = watched["entries"]
    assert first > 0
    assert later == [first] * len(later), watched["entries"]


def test_other_threads_never_see_a_flag_changed(watched):
    assert watched["seen"] == [[True, 0.0]], watched["seen"]
    assert watched["after"] == [True, 0.0]


def test_a_thread_local_override_leaves_the_global_flag_alone(tmp_path):
    out = _run(_THREAD_LOCAL, tmp_path)
    assert out["stages"] == ["after sharding propagation"] * 2
    assert out["inside"] is True
    assert out["after"] is False
