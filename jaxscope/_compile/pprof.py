# pyright: strict
"""JAX's own ``eqn_count_pprof`` dumps: equations per innermost user line.

``JAX_DUMP_IR_MODES=eqn_count_pprof`` makes JAX write, for each program it lowers,
a gzip-compressed pprof ``Profile`` protobuf (profile.proto: sample = 2,
location = 4, function = 5, string_table = 6) whose samples count equations by
Python stack. This reads one without the pprof tool.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterator
from pathlib import Path


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"not a protobuf message (wire type {wire})")
        yield number, wire, value


def _ints(value: int | bytes) -> list[int]:
    if isinstance(value, int):
        return [value]
    out: list[int] = []
    i = 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(v)
    return out


def _message(value: int | bytes) -> bytes:
    return value if isinstance(value, bytes) else b""


def read_eqn_counts(path: str | Path) -> Counter[tuple[str, int] | None]:
    """``{(file, line): equations}`` by each sample's innermost frame (None: a
    sample with no user frame) of one ``.eqn_count_pprof`` file."""
    data = gzip.decompress(Path(path).read_bytes())
    strings: list[str] = []
    samples: list[tuple[list[int], int]] = []
    locations: dict[int, tuple[int, int]] = {}
    functions: dict[int, int] = {}
    for number, _wire, value in _fields(data):
        if number == 6:
            strings.append(_message(value).decode())
        elif number == 2:
            locs: list[int] = []
            values: list[int] = []
            for n, _w, v in _fields(_message(value)):
                if n == 1:
                    locs += _ints(v)
                elif n == 2:
                    values += _ints(v)
            samples.append((locs, values[0] if values else 0))
        elif number == 4:
            loc_id, first = 0, (0, 0)
            for n, _w, v in _fields(_message(value)):
                if n == 1 and isinstance(v, int):
                    loc_id = v
                elif n == 4 and first == (0, 0):
                    line = {k: x for k, _x, x in _fields(_message(v))}
                    fid, no = line.get(1, 0), line.get(2, 0)
                    first = (
                        fid if isinstance(fid, int) else 0,
                        no if isinstance(no, int) else 0,
                    )
            locations[loc_id] = first
        elif number == 5:
            fields = {n: v for n, _w, v in _fields(_message(value))}
            fid, name = fields.get(1, 0), fields.get(4, 0)
            functions[fid if isinstance(fid, int) else 0] = (
                name if isinstance(name, int) else 0
            )
    counts: Counter[tuple[str, int] | None] = Counter()
    for locs, value in samples:
        if not locs:
            counts[None] += value
            continue
        function_id, line = locations[locs[0]]
        counts[(strings[functions[function_id]], line)] += value
    return counts
