"""Two real JAX processes on localhost: each sees its own shards, and the others' marked."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("mp_child.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.multiprocess
def test_two_processes_mark_non_addressable_shards():
    port = str(free_port())
    env = {
        k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")
    }
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), str(i), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err[-2000:]
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    results = []
    for out in outputs:
        line = next(s for s in out.splitlines() if s.startswith("RESULT "))
        results.append(json.loads(line[len("RESULT ") :]))
    assert [r["process_index"] for r in results] == [0, 1]
    for r in results:
        me = r["process_index"]
        assert len(r["shards"]) == 8
        own = sorted(d for d, p, addressable, _ in r["shards"] if addressable)
        assert own == r["own"]  # addressable == jax's addressable_shards
        for _, process, addressable, _ in r["shards"]:
            assert addressable == (process == me)
        assert {p for _, p, _, _ in r["shards"]} == {0, 1}
        # 16 rows over 8 devices, 2 rows each, in mesh order
        assert sorted(tuple(rng) for *_, rng in r["shards"]) == [
            (2 * i, 2 * i + 2) for i in range(8)
        ]
        other = 1 - me
        assert f"(proc {other})" in r["text"]
        assert "(remote)" in r["text"]
        # the mesh diagram tags each device with its process
        assert " 0 p0 " in r["text"] and " p1 " in r["text"]
        # P(None, 'local'): each column block lives once on each host; replica ids
        # count in global device order, so process 0's copies are replica 0
        assert r["replicated_remote"] == ([1, 1, 1, 1] if me == 0 else [0, 0, 0, 0])
        assert r["all_reduces"] >= 1
        assert r["inputs"][0][0] == "a"
        # why: the sum over rows split over both hosts' devices
        assert any(
            "reduces dimension 0 of f32[16@(hosts,local)" in t for t in r["reasons"]
        )
        assert r["replication"] == []
    # both processes describe the same global layout; only addressability flips
    assert results[0]["shards"] == [
        [d, p, not a, rng] for d, p, a, rng in results[1]["shards"]
    ]
