"""The accesses one allocation has seen, by byte range: an interval structure, not a map of bytes.

An allocation's bytes are cut into segments (sorted starts; the segments cover the allocation). A segment
holds a cell: the last write to its bytes and the reads since that write that are not ordered before a
later one (one per agent at most: an agent's own accesses are ordered). A new access visits the segments
it covers, checks itself against each distinct cell once, and leaves a new cell; a write leaves a cell of
its own, so the accesses ordered before a covering write are dropped, and neighbouring segments with the
same cell merge again. Cost per access: a bisection plus the segments it covers, whatever its size.

Ops (checker.Op) carry their clock as `agent`, `n` and `base` (see clocks.py).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

READ, WRITE, INIT = 1, 2, 4  # INIT: a read whose bytes must have been written (the init check)

EMPTY = (None, ())  # a cell: (last write, reads since it)


def ordered(x, y) -> bool:
    """Whether op x happens before op y, or y before x: they cannot race."""
    if x is y or x.agent == y.agent:
        return True
    return x.n <= y.base.get(x.agent, 0) or y.n <= x.base.get(y.agent, 0)


def happens_before(x, y) -> bool:
    return x.n <= (y.n if x.agent == y.agent else y.base.get(x.agent, 0))


class Shadow:
    """The access history of one allocation of `size` bytes."""

    __slots__ = ("starts", "cells", "size")

    def __init__(self, size: int):
        self.size = size
        self.starts = [0]
        self.cells = [EMPTY]

    def access(self, lo: int, hi: int, op, mode: int, found: dict, uninit: list) -> None:
        """Record op's access to bytes [lo, hi) (mode: READ, WRITE, INIT bits). Each earlier access it is not
        ordered with goes into `found`: {earlier op: [lo, hi, WRITE or READ]} (the bytes they share, the
        earlier access's mode); the ranges of an INIT read that nothing wrote go into `uninit`."""
        if hi <= lo:
            return
        starts, cells = self.starts, self.cells
        i = bisect_right(starts, lo) - 1
        n = len(starts)
        if starts[i] == lo and (starts[i + 1] == hi if i + 1 < n else hi == self.size):
            # the common case: the same range as before, one segment, nothing to cut or merge
            cells[i], clash, empty = self._step(cells[i], op, mode, (op, ()) if mode & WRITE else None)
            if clash:
                for other, other_mode in clash:
                    span = found.get(other)
                    if span is None:
                        found[other] = [lo, hi, other_mode]
                    else:
                        span[0], span[1] = min(span[0], lo), max(span[1], hi)
            if empty:
                uninit.append((lo, hi))
            return
        if starts[i] != lo:
            i += 1
            starts.insert(i, lo)
            cells.insert(i, cells[i - 1])
        j = bisect_left(starts, hi, i)
        if hi < self.size and (j == len(starts) or starts[j] != hi):
            starts.insert(j, hi)
            cells.insert(j, cells[j - 1])
        mine = (op, ()) if mode & WRITE else None
        memo: dict[int, tuple] = {}
        for k in range(i, j):
            old = cells[k]
            seen = memo.get(id(old))
            if seen is None:
                seen = memo[id(old)] = self._step(old, op, mode, mine)
            new, clash, empty = seen
            cells[k] = new
            if clash or empty:
                a = starts[k]
                b = starts[k + 1] if k + 1 < len(starts) else self.size
                for other, other_mode in clash or ():
                    span = found.get(other)
                    if span is None:
                        found[other] = [a, b, other_mode]
                    else:
                        span[0], span[1] = min(span[0], a), max(span[1], b)
                if empty:
                    if uninit and uninit[-1][1] == a:
                        uninit[-1] = (uninit[-1][0], b)
                    else:
                        uninit.append((a, b))
        # neighbours left with one cell become one segment again
        k, end = max(i, 1), min(j + 1, len(starts))
        while k < end:
            if cells[k] is cells[k - 1]:
                del starts[k], cells[k]
                end -= 1
            else:
                k += 1

    @staticmethod
    def _step(old: tuple, op, mode: int, mine) -> tuple:
        """(the new cell, [(earlier op, its mode)] not ordered with op, whether an INIT read found no write)."""
        write, reads = old
        clash = None
        agent = op.agent
        if write is not None and write.agent != agent and not ordered(write, op):
            clash = [(write, WRITE)]
        empty = write is None and mode & INIT
        if mine is not None:  # a write: check the reads, then it is the cell
            for r in reads:
                if r.agent != agent and not ordered(r, op):
                    if clash is None:
                        clash = []
                    clash.append((r, READ))
            return mine, clash, empty
        if not reads:
            return (write, (op,)), clash, empty
        if len(reads) == 1 and reads[0].agent == agent:  # (one agent reading again: it replaces itself)
            return (write, (op,)), clash, empty
        kept = tuple(r for r in reads if not happens_before(r, op))
        return (write, kept + (op,)), clash, empty

    def ops(self, lo: int, hi: int) -> list[tuple]:
        """(op, WRITE or READ, lo, hi) for each access kept on bytes [lo, hi): the bytes it shares with them."""
        starts, cells = self.starts, self.cells
        out: dict = {}
        i = max(bisect_right(starts, lo) - 1, 0)
        while i < len(starts) and starts[i] < hi:
            a = max(starts[i], lo)
            b = min(starts[i + 1] if i + 1 < len(starts) else self.size, hi)
            write, reads = cells[i]
            for op, mode in ((write, WRITE), *((r, READ) for r in reads)):
                if op is None:
                    continue
                span = out.get(op)
                if span is None:
                    out[op] = [mode, a, b]
                else:
                    span[1], span[2] = min(span[1], a), max(span[2], b)
            i += 1
        return [(op, mode, a, b) for op, (mode, a, b) in out.items()]

    def segments(self) -> int:
        return len(self.starts)
