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

    def access(self, lo: int, hi: int, op, mode: int) -> list | None:
        """Record op's access to bytes [lo, hi) (mode: READ, WRITE, INIT bits). Returns None, or what it found:
        (earlier op, WRITE or READ, lo, hi) for each earlier access to bytes [lo, hi) it is not ordered with,
        and (None, 0, lo, hi) for bytes [lo, hi) an INIT read found nothing wrote."""
        starts = self.starts
        i = bisect_right(starts, lo) - 1
        if starts[i] == lo and (starts[i + 1] if i + 1 < len(starts) else self.size) == hi:
            # the common case: the same range as before, one segment, nothing to cut or merge
            cells = self.cells
            write, reads = cells[i]
            agent = op.agent
            out = None
            if write is None:
                if mode & INIT:
                    out = [(None, 0, lo, hi)]
            elif write.agent != agent and not ordered(write, op):
                out = [(write, WRITE, lo, hi)]
            if mode & WRITE:
                for r in reads:
                    if r.agent != agent and not ordered(r, op):
                        if out is None:
                            out = []
                        out.append((r, READ, lo, hi))
                cells[i] = (op, ())
            elif not reads or (len(reads) == 1 and reads[0].agent == agent):
                cells[i] = (write, (op,))
            else:
                cells[i] = (write, tuple(r for r in reads if not happens_before(r, op)) + (op,))
            return out
        return self._cut(lo, hi, op, mode) if hi > lo else None

    def _cut(self, lo: int, hi: int, op, mode: int) -> list | None:
        """`access` over segments it must cut at lo and hi, or several of them."""
        starts, cells = self.starts, self.cells
        i = bisect_right(starts, lo) - 1
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
        out = None
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
                if out is None:
                    out = []
                for other, other_mode in clash or ():
                    out.append((other, other_mode, a, b))
                if empty:
                    out.append((None, 0, a, b))
        # neighbours left with one cell become one segment again
        k, end = max(i, 1), min(j + 1, len(starts))
        while k < end:
            if cells[k] is cells[k - 1]:
                del starts[k], cells[k]
                end -= 1
            else:
                k += 1
        return out

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
        if not reads or (len(reads) == 1 and reads[0].agent == agent):
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
