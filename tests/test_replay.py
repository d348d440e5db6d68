"""Replaying real profiles: each format read as documented (tests/data/README.md), the task graph rebuilt (stream
order, event dependencies, dependencies inferred from the timeline and said so), the same-product replay close to
the measured copies, unknown task types kept and listed, and every malformed file refused in one line naming the
file, the row and the field."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import emu
from emu.studies import profiles, replay
from emu.studies.profiles import ProfileError

DATA = Path(__file__).resolve().parent / "data"
STEP, NO_EVENTS, UNKNOWN = DATA / "msprof_step.json", DATA / "msprof_no_events.json", DATA / "msprof_unknown.json"
TASK_TIME, MSPTI_LOG, MSPTI_JSONL = DATA / "task_time_step.csv", DATA / "mspti_step.log", DATA / "mspti_step.jsonl"
MIB = 1 << 20

# the hand-written step (tests/data/make_profiles.py): two 32 MiB H2D copies on stream 2, the forward and
# backward kernels on stream 3, a 16 MiB D2H on stream 2, the optimizer and a 64 MiB on-device copy on stream 3
STEP_COPIES = [(2, 32 * MIB, "h2d"), (2, 32 * MIB, "h2d"), (2, 16 * MIB, "d2h"), (3, 64 * MIB, "d2d")]


def copies(p: profiles.Profile) -> list[tuple]:
    return [(t.stream, t.nbytes, t.direction) for t in sorted(p.tasks, key=lambda t: t.start) if t.kind == "copy"]


# -- reading each format ------------------------------------------------------------------------------------------
def test_the_msprof_timeline_gives_tasks_copies_and_host_calls():
    p = profiles.load(STEP)
    assert p.format == "msprof-json"
    assert len(p.tasks) == 13 and len(p.calls) == 15
    assert copies(p) == STEP_COPIES
    kinds = sorted({t.kind for t in p.tasks})
    assert kinds == ["copy", "kernel", "record", "wait"]
    assert {t.device for t in p.tasks} == {0}  # "NPU 0" in the process labels
    assert p.streams == [(0, 2), (0, 3)]
    first = min(p.tasks, key=lambda t: t.start)
    assert first.type == "MEMCPY_ASYNC" and first.duration == pytest.approx(1375.182e-6)
    # every device task is joined to the host call that queued it
    conns = {c for call in p.calls for c in call.connections}
    assert all(t.connection in conns for t in p.tasks)
    assert [c.api for c in p.calls][:3] == ["aclrtMemcpyAsync", "aclrtRecordEvent", "aclrtMemcpyAsync"]
    assert p.unknown == {}


def test_the_task_time_csv_gives_the_same_tasks_without_sizes():
    p = profiles.load(TASK_TIME)
    assert p.format == "task-time-csv" and len(p.tasks) == 13 and not p.calls
    step = profiles.load(STEP)
    assert sorted((t.stream, t.kind, round(t.start, 9), round(t.end, 9)) for t in p.tasks) == \
        sorted((t.stream, t.kind, round(t.start, 9), round(t.end, 9)) for t in step.tasks)
    assert all(t.nbytes is None for t in p.tasks if t.kind == "copy")
    assert any("no size" in n for n in p.notes)


@pytest.mark.parametrize("path", [MSPTI_LOG, MSPTI_JSONL], ids=["printed", "jsonl"])
def test_mspti_records_give_the_copies_kernels_and_api_calls(path):
    p = profiles.load(path)
    assert p.format == "mspti"
    assert copies(p) == STEP_COPIES
    assert sum(t.kind == "kernel" for t in p.tasks) == 3 and len(p.calls) == 15
    step = profiles.load(STEP)
    # the same copies at the same times as the msprof timeline (ns there, us here)
    assert [(round(t.start, 9), round(t.end, 9)) for t in sorted(p.tasks, key=lambda t: t.start) if t.kind == "copy"] \
        == [(round(t.start, 9), round(t.end, 9)) for t in sorted(step.tasks, key=lambda t: t.start) if t.kind == "copy"]
    assert any("inferred" in n for n in p.notes)


def test_a_prof_directory_is_searched_for_its_timeline(tmp_path):
    out = tmp_path / "PROF_000001_20250101" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    shutil.copy(STEP, out / "msprof_20250101000000.json")
    shutil.copy(TASK_TIME, out / "task_time_20250101000000.csv")
    assert profiles.load(tmp_path / "PROF_000001_20250101").format == "msprof-json"


def test_a_trace_events_object_and_numeric_times_read_too(tmp_path):
    events = json.loads(STEP.read_text())
    for ev in events:
        if "ts" in ev:
            ev["ts"] = float(ev["ts"])
    f = tmp_path / "wrapped.json"
    f.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    p = profiles.load(f)
    assert copies(p) == STEP_COPIES and len(p.calls) == 15


def test_rows_of_the_hardware_process_that_are_not_tasks_are_left_out(tmp_path):
    events = json.loads(STEP.read_text())
    hw = next(e["pid"] for e in events if e.get("name") == "process_name" and e["args"]["name"] == "Ascend Hardware")
    first = min(float(e["ts"]) for e in events if e.get("ph") == "X")
    events.append({"name": "Iteration 1", "pid": hw, "tid": 0, "ts": f"{first:.3f}", "dur": 5877.0, "ph": "X",
                   "args": {"Iteration ID": 1, "FP Start": "", "BP End": ""}})  # a step trace row
    f = tmp_path / "with_step_trace.json"
    f.write_text(json.dumps(events))
    p = profiles.load(f)
    assert len(p.tasks) == 13 and p.unknown == {}
    assert any("1 rows of the Ascend Hardware process have no 'Task Type'" in n for n in p.notes)


# -- the graph -------------------------------------------------------------------------------------------------------
def test_the_graph_keeps_stream_order_and_pairs_each_wait_with_its_record():
    g = replay.build_graph(profiles.load(STEP))
    s = replay.graph_summary(g)
    assert s["streams"] == {"dev0 stream 2": ["copy", "record", "copy", "record", "wait", "copy"],
                            "dev0 stream 3": ["wait", "kernel", "wait", "kernel", "record", "kernel", "copy"]}
    # each wait after the record it waited for, paired by time (the rows name no event) and said so
    pairs = [(g.nodes[d["wait"]].stream, g.nodes[d["record"]].stream, d["how"]) for d in g.event_deps]
    assert pairs == [(2, 3, "paired by time"), (3, 2, "paired by time"), (3, 2, "paired by time")]
    waits = [n for n in g.nodes if n.kind == "wait"]
    for w in waits:
        rec = g.nodes[w.deps[0]]
        assert rec.kind == "record" and rec.end <= w.end + g.tolerance
    assert any("paired" not in n and "name no event" in n for n in g.notes)
    assert not g.inferred  # the profile has event rows: nothing is inferred from the timeline
    # host calls: in order, with their gaps; the first synchronize waits for the D2H
    sync = [c for c in g.calls if c.api == "aclrtSynchronizeStream"]
    assert sync[0].blocking == "sync" and any(g.nodes[j].direction == "d2h" for j in sync[0].awaits)


def test_event_ids_on_the_api_rows_pair_records_and_waits(tmp_path):
    """Newer msprof exports give the record and wait API rows an "event_id": each wait then waits for the latest
    record of its event issued before it, not the latest by time."""
    events = json.loads(STEP.read_text())
    ids = iter(["e1", "e2", "e1", "e2", "e3", "e3"])  # record, record, wait, wait, record, wait (host order)
    for ev in sorted((e for e in events if e.get("name") in ("AscendCL@aclrtRecordEvent",
                                                                "AscendCL@aclrtStreamWaitEvent")),
                     key=lambda e: float(e["ts"])):
        ev["args"]["event_id"] = next(ids)
    f = tmp_path / "with_event_ids.json"
    f.write_text(json.dumps(events))
    g = replay.build_graph(profiles.load(f))
    assert [d["how"] for d in g.event_deps] == ["event id"] * 3
    by_time = replay.build_graph(profiles.load(STEP))
    assert [(d["wait"], d["record"]) for d in g.event_deps] == [(d["wait"], d["record"]) for d in by_time.event_deps]
    assert not any("name no event" in n for n in g.notes)


def test_without_event_rows_dependencies_are_inferred_from_the_timeline_and_listed():
    g = replay.build_graph(profiles.load(NO_EVENTS))
    assert replay.graph_summary(g)["inferred"] == [("MEMCPY_ASYNC", "MatMulV2Grad"), ("MatMulV2", "MEMCPY_ASYNC"),
                                                   ("MatMulV2Grad", "MEMCPY_ASYNC")]
    gaps = [d["gap_us"] for d in g.inferred]
    assert all(0 <= gap <= 2.0 for gap in gaps)
    assert any("inferred from the timeline" in n for n in g.notes)
    result = replay.replay(NO_EVENTS, ["910B"])
    assert len(result["graph"]["inferred_dependencies"]) == 3
    listed = result["graph"]["inferred_dependencies"]
    assert all({"task", "row", "after", "after_row", "gap_us"} <= set(d) for d in listed)


def test_a_smaller_tolerance_infers_nothing():
    g = replay.build_graph(profiles.load(NO_EVENTS), tolerance=1e-6)
    assert not g.inferred and any("no cross-stream dependency" in n for n in g.notes)


def test_copies_overlapping_on_one_stream_run_as_a_batch(tmp_path):
    events = json.loads(DATA.joinpath("msprof_unknown.json").read_text())
    row = next(e for e in events if e.get("name") == "MEMCPY_ASYNC")
    twin = json.loads(json.dumps(row))
    twin["ts"] = f"{float(row['ts']) + 10:.3f}"  # starts while the first is under way, on the same stream
    events.append(twin)
    f = tmp_path / "batch.json"
    f.write_text(json.dumps(events))
    g = replay.build_graph(profiles.load(f))
    group = [n for n in g.nodes if n.kind == "group"]
    assert len(group) == 1 and len(group[0].tasks) == 2
    run = replay.retime(g, "910B")
    assert run.ends[group[0].index] > run.starts[group[0].index]


# -- re-timing ---------------------------------------------------------------------------------------------------
SAME_PRODUCT_COPY = 0.15  # each copy within the model's calibration band (README: targets within +-15%)
SAME_PRODUCT_STEP = 0.03


@pytest.mark.parametrize("path", [STEP, MSPTI_LOG, NO_EVENTS], ids=["msprof", "mspti", "no-events"])
def test_the_same_product_reproduces_the_measured_copies_and_step(path):
    result = replay.replay(path, ["910B"], measured_on="910B")
    v = result["validation"]
    assert v["product"] == "910B" and v["count"] == 4
    for c in v["copies"]:
        assert abs(c["residual_pct"]) <= SAME_PRODUCT_COPY * 100, c
    assert v["median_abs_pct"] <= 5.0
    assert abs(result["runs"][0]["change_pct"]) <= SAME_PRODUCT_STEP * 100
    assert abs(v["step_residual_pct"]) <= SAME_PRODUCT_STEP * 100


def test_other_products_are_compared_copy_by_copy_with_a_reason():
    result = replay.replay(STEP, ["910B", "A3", "950PR"])
    assert [r["product"] for r in result["runs"]] == ["910B", "A3", "950PR"]
    a3 = result["runs"][1]
    measured = result["measured"]
    assert a3["step_ms"] < measured["step_ms"]  # A3's host link is faster: the inputs arrive sooner
    assert a3["resources_ms"]["host link H2D"] < measured["resources_ms"]["host link H2D"] / 2
    assert a3["resources_ms"]["compute"] == pytest.approx(measured["resources_ms"]["compute"])  # measured kernels
    assert set(measured["resources_ms"]) == set(replay.RESOURCES)
    h2d = [c for c in a3["copies"] if c["direction"] == "h2d"]
    assert h2d and all(c["replayed_us"] < c["measured_us"] and c["why"] == "bandwidth" for c in h2d)
    assert a3["faster"] == 4 and a3["why"]["bandwidth"] >= 3
    assert json.loads(json.dumps(result))  # plain data


def test_pinned_instead_of_pageable_is_a_what_if():
    pinned = replay.replay(STEP, ["910B"], host_memory="pinned")["runs"][0]
    pageable = replay.replay(STEP, ["910B"], host_memory="pageable")["runs"][0]
    assert pageable["step_ms"] > pinned["step_ms"]
    host_copies = [c for c in pageable["copies"] if c["direction"] in ("h2d", "d2h")]
    assert host_copies and all(c["why"] in ("staging (pageable)", "same") for c in host_copies)


def test_a_profile_with_more_devices_than_the_product_is_refused(tmp_path):
    events = json.loads(STEP.read_text())
    for ev in events:
        if ev.get("name") == "process_labels" and ev["args"]["labels"] == "NPU 0":
            ev["args"]["labels"] = "NPU 12"
    f = tmp_path / "dev12.json"
    f.write_text(json.dumps(events))
    with pytest.raises(replay.ReplayError, match=r"dev12\.json: row \d+: field 'device': the profile uses device 12; "
                                                 r"910B has 8 devices"):
        replay.replay(f, ["910B"])


def test_calibration_rows_are_what_calibrate_reads(tmp_path):
    from emu.studies import calibrate
    from emu.studies.common import write_csv

    rows = replay.replay(STEP, ["910B"])["calibration_rows"]
    # the two H2D copies ran alone; the D2H and the on-device copy overlapped each other: left out
    assert [(r["direction"], r["size"], r["us"]) for r in rows] == [("h2d", 32 * MIB, 1375.182)] * 2
    f = write_csv(tmp_path / "calibration.csv", rows)
    read = calibrate.read(f)
    assert len(read) == 2 and {(r["direction"], r["memory"], r["unit"]) for r in read} == {("h2d", "pinned", "us")}


def test_emu_replay_is_the_study():
    result = emu.replay(STEP, ["A3"])
    assert result["runs"][0]["product"] == "A3" and result["measured_on"] == "910B"


# -- unknown task types ------------------------------------------------------------------------------------------
def test_unknown_task_types_are_replayed_with_their_measured_duration_and_listed():
    p = profiles.load(UNKNOWN)
    assert p.unknown == {"DVPP_VPC": 2}
    result = replay.replay(UNKNOWN, ["910B", "A3"])
    assert result["unknown_types"] == {"DVPP_VPC": 2}
    assert result["fixed"] == {"unknown task type: DVPP_VPC": 2, "device task: NOTIFY_WAIT": 1}
    g = replay.build_graph(p)
    run = replay.retime(g, "A3")
    for n in g.nodes:
        if n.kind == "fixed":
            assert run.ends[n.index] - run.starts[n.index] == pytest.approx(n.duration, abs=1e-12)


# -- malformed and partial profiles ------------------------------------------------------------------------------
def _events_with(change) -> list:
    events = json.loads(STEP.read_text())
    change(events)
    return events


def _first_copy(events) -> int:
    return next(i for i, e in enumerate(events) if e.get("name") == "MEMCPY_ASYNC" and e.get("ph") == "X")


def _drop(key):
    def change(events):
        del events[_first_copy(events)][key]
    return change


def _set_arg(key, value):
    def change(events):
        events[_first_copy(events)]["args"][key] = value
    return change


def _set(key, value):
    def change(events):
        events[_first_copy(events)][key] = value
    return change


MALFORMED_JSON = {
    "no-dur": (_drop("dur"), "dur", "missing"),
    "no-ts": (_drop("ts"), "ts", "missing"),
    "ts-not-a-number": (_set("ts", "soon"), "ts", "expected a number, got 'soon'"),
    "negative-dur": (_set("dur", -3), "dur", "expected a number >= 0"),
    "size-not-a-number": (_set_arg("size(B)", "big"), "args.size(B)", "expected a number"),
    "bad-operation": (_set_arg("operation", "sideways"), "args.operation", "'sideways' is not one of"),
    "stream-not-a-number": (_set_arg("Physic Stream Id", "two"), "args.Physic Stream Id", "expected a number"),
}


@pytest.mark.parametrize("case", MALFORMED_JSON, ids=list(MALFORMED_JSON))
def test_a_malformed_timeline_is_one_line_naming_file_row_and_field(case, tmp_path):
    change, field_name, why = MALFORMED_JSON[case]
    events = _events_with(change)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(events))
    with pytest.raises(ProfileError) as err:
        profiles.load(f)
    message = str(err.value)
    assert message.startswith(f"{f}: row {_first_copy(events)}: field '{field_name}': "), message
    assert why in message and "\n" not in message
    assert err.value.field == field_name and err.value.row == _first_copy(events)


@pytest.mark.parametrize("text, expect", [
    ("", "empty file"),
    ("[{\"ph\": \"X\", ", "not JSON"),
    ("[1, 2]", "row 0: expected a trace event"),
    ("{\"foo\": 1}", "field 'traceEvents'"),
    ("[{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"CANN\"}}]", "no device tasks"),
], ids=["empty", "truncated", "not-events", "no-trace-events", "no-device-tasks"])
def test_broken_and_partial_json_files(tmp_path, text, expect):
    f = tmp_path / "p.json"
    f.write_text(text)
    with pytest.raises(ProfileError, match=str(f)) as err:
        profiles.load(f)
    assert expect in str(err.value)


def test_a_task_time_csv_missing_a_column_or_a_cell(tmp_path):
    lines = TASK_TIME.read_text().splitlines()
    f = tmp_path / "task_time_1.csv"
    f.write_text("\n".join([lines[0].replace("stream_id", "stream")] + lines[1:]) + "\n")
    with pytest.raises(ProfileError, match=r"task_time_1\.csv: row 1: field 'stream_id': missing column"):
        profiles.load(f)
    cells = lines[3].split(",")
    cells[6] = "later"
    f.write_text("\n".join(lines[:3] + [",".join(cells)] + lines[4:]) + "\n")
    with pytest.raises(ProfileError, match=r"task_time_1\.csv: row 4: field 'task_start\(us\)': expected a number"):
        profiles.load(f)


def test_mspti_records_missing_a_field(tmp_path):
    lines = MSPTI_JSONL.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if "MEMCPY" in line and "copyKind" in line)
    rec = json.loads(lines[n])
    del rec["bytes"]
    lines[n] = json.dumps(rec)
    f = tmp_path / "records.jsonl"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProfileError, match=rf"records\.jsonl: row {n + 1}: field 'bytes': missing"):
        profiles.load(f)
    log = MSPTI_LOG.read_text().replace("copyKind: HTOD", "copyKind: SIDEWAYS", 1)
    g = tmp_path / "run.log"
    g.write_text(log)
    with pytest.raises(ProfileError, match=r"run\.log: row \d+: field 'copyKind': 'SIDEWAYS' is not one of"):
        profiles.load(g)


def test_no_such_file_or_an_empty_directory(tmp_path):
    with pytest.raises(ProfileError, match="no such file or directory"):
        profiles.load(tmp_path / "nope.json")
    with pytest.raises(ProfileError, match="no msprof_\\*.json, task_time_\\*.csv or op_summary_\\*.csv"):
        profiles.load(tmp_path)


def test_mspti_lines_read_when_the_first_line_is_a_record(tmp_path):
    """The samples' printed lines with no banner before them start with '[': read as lines, not as JSON."""
    lines = [ln for ln in MSPTI_LOG.read_text().splitlines() if ln.startswith("[")]
    f = tmp_path / "mspti_records_only.log"
    f.write_text("\n".join(lines) + "\n")
    p = profiles.load(f)
    assert p.format == "mspti" and copies(p) == STEP_COPIES and len(p.calls) == 15
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2,\n")
    with pytest.raises(ProfileError, match="not JSON"):
        profiles.load(bad)
