"""What device code touched: the exact byte ranges a kernel's run read and wrote, and the conflicts they decide.

A launch of device code (emu.runtime.launch.queue_device_code) is queued before it runs: the sanitizer takes it to
touch the whole of each allocation it is given (mode "k"), as a kernel of undeclared use, and holds back what that
finds. When its blocks have run, the ranges they read and wrote are known ({Region: (reads, writes)}, made from
the runner's spans by emu.runtime.launch) and each conflict held back is decided on them (`narrow`): over the
bytes where the kernel and the other call really meet, one of them writing, it is a finding with the kernel's
real modes; where they do not meet, it is none. A kernel that never ran (timing-only memory, freed memory) keeps the whole allocations.

Ranges are (lo, hi) offsets in their allocation, sorted and disjoint.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from .ranges import READ, WRITE

PENDING = "pending"  # Op.touched of a kernel queued and not run yet
NOTHING = ([], [])  # (reads, writes) of an allocation the kernel did not touch


def merged(ranges) -> list[tuple[int, int]]:
    """Sorted, disjoint (lo, hi): overlapping or touching ranges joined."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def clip(ranges: list, lo: int, hi: int) -> list[tuple[int, int]]:
    """The parts of sorted, disjoint `ranges` within [lo, hi)."""
    i = max(bisect_right(ranges, (lo, lo)) - 1, 0)
    j = bisect_left(ranges, (hi, hi), i)
    out = []
    for a, b in ranges[i:j]:
        a, b = max(a, lo), min(b, hi)
        if a < b:
            out.append((a, b))
    return out


def intersect(x: list, y: list) -> list[tuple[int, int]]:
    """The bytes in both sorted, disjoint range lists."""
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if lo < hi:
            out.append((lo, hi))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def _sides(mode: int, exact, region, lo: int, hi: int) -> tuple[list, list]:
    """(reads, writes) of one side of a conflict within [lo, hi): a kernel's ranges when it is exact here (what it
    touched, {Region: (reads, writes)}), else the whole span in the access's mode."""
    if exact is None:
        span = [(lo, hi)]
        return (span if mode & READ else []), (span if mode & WRITE else [])
    reads, writes = exact.get(region, NOTHING)
    return clip(reads, lo, hi), clip(writes, lo, hi)


def narrow(first_mode: int, first_exact, second_mode: int, second_exact, region, lo: int, hi: int):
    """A conflict over [lo, hi) of `region` decided on what exact kernels touched (`*_exact`: {Region: (reads,
    writes)}, or None for a side whose access is as its mode says): None when no byte is touched by both with one of them
    writing; else (first_mode, second_mode, lo, hi, nbytes, pieces) over those bytes, an exact side's mode what
    it did there."""
    fr, fw = _sides(first_mode, first_exact, region, lo, hi)
    sr, sw = _sides(second_mode, second_exact, region, lo, hi)
    both = merged(intersect(fw, merged(sr + sw)) + intersect(sw, merged(fr + fw)))
    if not both:
        return None

    def mode(m, exact, reads, writes):
        if exact is None:
            return m
        return (READ if intersect(reads, both) else 0) | (WRITE if intersect(writes, both) else 0)

    return (mode(first_mode, first_exact, fr, fw), mode(second_mode, second_exact, sr, sw), both[0][0],
            both[-1][1], sum(b - a for a, b in both), len(both))
