# pyright: strict
"""Aligning two sequences: the pairs of equal items in a longest common subsequence.

Myers' O((N + M) D) algorithm after the common prefix and suffix are cut off, so two
equal sequences cost one pass and D, the number of items added or removed, bounds the
rest. Where D passes ``max_edits`` the items unique to both sides anchor the alignment
(patience diff) and each gap between anchors is aligned again within the same bound;
whatever is still unaligned is left as added or removed, never guessed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

MAX_EDITS = 400


def align(
    a: Sequence[Hashable], b: Sequence[Hashable], max_edits: int = MAX_EDITS
) -> list[tuple[int, int]]:
    """``[(i, j), ...]``: ``a[i] == b[j]``, increasing in both, as many as found."""
    return _align(a, b, 0, len(a), 0, len(b), max_edits, anchors=True)


def _align(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    lo_a: int,
    hi_a: int,
    lo_b: int,
    hi_b: int,
    max_edits: int,
    anchors: bool,
) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    while lo_a < hi_a and lo_b < hi_b and a[lo_a] == b[lo_b]:
        pairs.append((lo_a, lo_b))
        lo_a += 1
        lo_b += 1
    tail: list[tuple[int, int]] = []
    while hi_a > lo_a and hi_b > lo_b and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
        tail.append((hi_a, hi_b))
    if lo_a < hi_a and lo_b < hi_b:
        middle = _myers(a[lo_a:hi_a], b[lo_b:hi_b], max_edits)
        if middle is not None:
            pairs += [(lo_a + i, lo_b + j) for i, j in middle]
        elif anchors:
            pairs += _patience(a, b, lo_a, hi_a, lo_b, hi_b, max_edits)
    pairs += reversed(tail)
    return pairs


def _myers(
    a: Sequence[Hashable], b: Sequence[Hashable], max_edits: int
) -> list[tuple[int, int]] | None:
    """The matched pairs of a shortest edit script, or None past ``max_edits``."""
    n, m = len(a), len(b)
    limit = min(n + m, max_edits)
    offset = limit + 1
    v = [0] * (2 * limit + 3)
    trace: list[list[int]] = []
    for d in range(limit + 1):
        trace.append(v[offset - d - 1 : offset + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _backtrack(trace, d, n, m)
    return None


def _backtrack(
    trace: list[list[int]], d_end: int, n: int, m: int
) -> list[tuple[int, int]]:
    """Walk the saved V arrays back from ``(n, m)``; ``trace[d][k + d + 1]`` is the
    furthest x on diagonal k before step d."""
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(d_end, 0, -1):
        v = trace[d]
        k = x - y
        down = k == -d or (k != d and v[k + d] < v[k + d + 2])
        prev_k = k + 1 if down else k - 1
        prev_x = v[prev_k + d + 1]
        prev_y = prev_x - prev_k
        mid_x = prev_x if down else prev_x + 1
        while x > mid_x:
            x -= 1
            y -= 1
            pairs.append((x, y))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((x, y))
    pairs.reverse()
    return pairs


def _patience(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    lo_a: int,
    hi_a: int,
    lo_b: int,
    hi_b: int,
    max_edits: int,
) -> list[tuple[int, int]]:
    """Anchor on items that occur once on each side, in an increasing run; align
    the gaps between anchors (without anchors again)."""
    count_a: dict[Hashable, int] = {}
    where_a: dict[Hashable, int] = {}
    for i in range(lo_a, hi_a):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
        where_a[a[i]] = i
    count_b: dict[Hashable, int] = {}
    where_b: dict[Hashable, int] = {}
    for j in range(lo_b, hi_b):
        count_b[b[j]] = count_b.get(b[j], 0) + 1
        where_b[b[j]] = j
    unique = sorted(
        (where_a[item], where_b[item])
        for item, n in count_a.items()
        if n == 1 and count_b.get(item) == 1
    )
    anchors = _increasing(unique)
    pairs: list[tuple[int, int]] = []
    prev_a, prev_b = lo_a, lo_b
    for i, j in [*anchors, (hi_a, hi_b)]:
        pairs += _align(a, b, prev_a, i, prev_b, j, max_edits, anchors=False)
        if i < hi_a:
            pairs.append((i, j))
        prev_a, prev_b = i + 1, j + 1
    return pairs


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by first item) increasing in the second."""
    import bisect

    tails: list[int] = []
    tail_at: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_at.append(index)
        else:
            tails[pos] = j
            tail_at[pos] = index
        back[index] = tail_at[pos - 1] if pos else -1
    out: list[tuple[int, int]] = []
    index = tail_at[-1] if tail_at else -1
    while index >= 0:
        out.append(pairs[index])
        index = back[index]
    out.reverse()
    return out
