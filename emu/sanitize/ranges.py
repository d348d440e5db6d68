"""The accesses one allocation has seen, by byte range: an interval structure, not a map of bytes.

An allocation's bytes are cut into segments (sorted starts; the segments cover the allocation). A segment
holds a cell: the last write to its bytes and the reads since that write that are not ordered before a
later one (one per agent at most: an agent's own accesses are ordered). A new access visits the segments
it covers, checks itself against each distinct cell once, and leaves a new cell; a write leaves a cell of
its own, so the accesses ordered before a covering write are dropped, and neighbouring segments with the
same cell merge again. Cost per access: a bisection plus the segments it covers, whatever its size. A strided
access (the rows of a 2-D copy) is one merge pass over the segments it spans and its rows (`access_rows`),
linear in both, at any height, and checked row by row (the gaps between rows are not touched).

A kernel argument of undeclared use (UNDECLARED) may read or write: it is checked as a write against what
came before, but leaves the reads not ordered before it in place (a write it may not make must not hide them).

Ops (checker.Op) carry their clock as `agent`, `n` and `base` (see clocks.py).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

READ, WRITE, INIT = 1, 2, 4  # INIT: a read whose bytes must have been written (the init check)
UNDECLARED = 8  # with READ | WRITE: a kernel argument whose use the launch did not declare

EMPTY = (None, ())  # a cell: (last write, reads since it)


def ordered(x, y) -> bool:
    """Whether op x happens before op y, or y before x: they cannot race."""
    if x is y or x.agent == y.agent:
        return True
    return x.n <= y.base.get(x.agent, 0) or y.n <= x.base.get(y.agent, 0)


def happens_before(x, y) -> bool:
    return x.n <= (y.n if x.agent == y.agent else y.base.get(x.agent, 0))


def _kept(reads: tuple, op) -> tuple:
    """The reads not ordered before `op`, which its access leaves in place (a read, or a write of undeclared
    use)."""
    return tuple(r for r in reads if not happens_before(r, op)) if reads else ()


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
                cells[i] = (op, () if not mode & UNDECLARED else _kept(reads, op))
            elif not reads or (len(reads) == 1 and reads[0].agent == agent):
                cells[i] = (write, (op,))
            else:
                cells[i] = (write, _kept(reads, op) + (op,))
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
        mine = (op, ()) if mode & WRITE and not mode & UNDECLARED else None
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
        if mode & WRITE:  # a write: check the reads, then it is the cell
            for r in reads:
                if r.agent != agent and not ordered(r, op):
                    if clash is None:
                        clash = []
                    clash.append((r, READ))
            return (mine if mine is not None else (op, _kept(reads, op))), clash, empty
        if not reads or (len(reads) == 1 and reads[0].agent == agent):
            return (write, (op,)), clash, empty
        return (write, _kept(reads, op) + (op,)), clash, empty

    def access_rows(self, rows: list, op, mode: int) -> list | None:
        """`access` of sorted, disjoint ranges [(lo, hi), ...] at once (the rows of a 2-D copy): one pass from
        the first row's segment to the last row's, rebuilding the segments; those between rows are carried over
        as slices (no Python step per segment), those under a row stepped once per cell. Returns what `access`
        returns, per piece of a row."""
        starts, cells, size = self.starts, self.cells, self.size
        nseg = len(starts)
        i = k = bisect_right(starts, rows[0][0]) - 1
        a = starts[i]
        mine = (op, ()) if mode & WRITE and not mode & UNDECLARED else None
        memo: dict[int, tuple] = {}
        new_starts: list[int] = []
        new_cells: list[tuple] = []
        out: list = []

        def push(at: int, cell: tuple) -> None:
            if not new_cells or new_cells[-1] is not cell:
                new_starts.append(at)
                new_cells.append(cell)

        for lo, hi in rows:
            m = bisect_right(starts, lo, k) - 1  # the segment holding lo
            if m > k:  # the rest of segment k, then the untouched segments up to m, as they are
                push(a, cells[k])
                first = k + 1 if new_cells[-1] is not cells[k + 1] else k + 2
                new_starts.extend(starts[first:m])
                new_cells.extend(cells[first:m])
                k, a = m, starts[m]
            if a < lo:
                push(a, cells[k])
                a = lo
            while a < hi:
                end = starts[k + 1] if k + 1 < nseg else size
                b = end if end < hi else hi
                cell = cells[k]
                seen = memo.get(id(cell))
                if seen is None:
                    seen = memo[id(cell)] = self._step(cell, op, mode, mine)
                new, clash, empty = seen
                for other, other_mode in clash or ():
                    out.append((other, other_mode, a, b))
                if empty:
                    out.append((None, 0, a, b))
                push(a, new)
                a = b
                if a == end and k + 1 < nseg:
                    k += 1
        end = starts[k + 1] if k + 1 < nseg else size
        if a < end:
            push(a, cells[k])
        j = k + 1  # segments i..k are rebuilt
        if i > 0 and cells[i - 1] is new_cells[0]:  # the ends join their neighbours again
            del new_starts[0], new_cells[0]
        if j < nseg and new_cells and cells[j] is new_cells[-1]:
            j += 1
        starts[i:j], cells[i:j] = new_starts, new_cells
        return out or None

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
