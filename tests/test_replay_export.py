"""The msprof export's slices: on each stream (and each host thread) a slice never runs into the next one, to the
nanosecond msprof's three decimals can show (the start is rounded to three decimals; the duration is the rounded
end minus that start, not the duration rounded on its own)."""
from __future__ import annotations

import json

from emu.models import msprof
from emu.studies import overlap, replay


def _overlaps(events: list[dict]) -> list[tuple]:
    """(row, slice, next slice) of each complete event that ends after the next one of its row starts."""
    rows: dict[tuple, list[dict]] = {}
    for e in events:
        if e["ph"] == "X":
            rows.setdefault((e["pid"], e["tid"]), []).append(e)
    out = []
    for key, spans in rows.items():
        spans.sort(key=lambda e: float(e["ts"]))
        for a, b in zip(spans, spans[1:]):
            if round(float(a["ts"]) + a["dur"], 3) > float(b["ts"]):
                out.append((key, a["ts"], a["dur"], b["ts"]))
    return out


def test_the_msprof_export_has_no_1_ns_overlaps_on_a_stream(tmp_path):
    """An overlap schedule of 64 chunks on 4 streams: hundreds of slices that follow each other at once."""
    result = overlap.plan("910B", 64 << 20, 16 << 20, 1500.0, [4], [64], extend=False)
    path = tmp_path / "schedule.json"
    replay.write_msprof_overlap("910B", result, path)
    events = json.loads(path.read_text())
    assert sum(e["ph"] == "X" for e in events) > 200
    assert _overlaps(events) == []


def test_a_slice_ends_exactly_where_the_next_starts_after_rounding():
    # 1234.5678 us rounds up to 1234.568, 1236.5674 down to 1236.567: the duration 1.9996 us rounded alone (2.000)
    # would end the slice at 1236.568, 1 ns into a slice starting at 1236.5674 us
    start, end = 1234.5678e-6, 1236.5674e-6
    ts, dur = msprof._span(start, end, 0.0)
    assert ts == "1234.568" and dur == 1.999
    assert round(round((end - start) * 1e6, 3) + float(ts), 3) == 1236.568  # the old way: 1 ns over
    ts2, _ = msprof._span(end, end + 1e-6, 0.0)
    assert round(float(ts) + dur, 3) == float(ts2) == 1236.567
    for origin in (0.0, 1_717_000_000_000.0):  # msprof's wall-clock microseconds too
        a_ts, a_dur = msprof._span(1e-3 + 0.4e-9, 2e-3 + 0.6e-9, origin)
        b_ts, _ = msprof._span(2e-3 + 0.6e-9, 3e-3, origin)
        assert round(float(a_ts) + a_dur, 3) <= float(b_ts)
