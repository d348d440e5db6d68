"""Export the other way: an emulated run written in the msprof timeline layout (models.msprof) is read back by the
replay and re-timed on the same product: every task and the step within 2% of what the emulator timed. The file
follows msprof's layout (processes, labels, stream threads, task and API args, flows)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from emu import config
from emu.constants import D2D, D2H, H2D
from emu.models import msprof
from emu.runtime import Runtime
from emu.studies import overlap, profiles, replay

ROUND_TRIP = 0.02  # the bound: the replay reproduces the emulated timings within 2%


def emulated_step(rt) -> float:
    """The emulated run's last instant: its last device task or host call."""
    calls = rt.host_calls
    return max(rt.record_totals()["end"], max((c[3] for c in calls), default=0.0))


def round_trip(rt, product, path: Path):
    """Write the run, read it back, re-time it on `product`: (graph, retimed run)."""
    replay.write_msprof_runtime(rt, path)
    graph = replay.build_graph(profiles.load(path))
    return graph, replay.retime(graph, product)


def check(rt, graph, run) -> dict:
    """Every task's duration and start, and the step, within ROUND_TRIP; returns the worst errors found."""
    step = emulated_step(rt)
    measured_step = max([n.end for n in graph.nodes] + [c.end for c in graph.calls])
    assert measured_step == pytest.approx(step - graph.origin, abs=2e-9)  # the file holds the emulated times
    worst = {"duration": 0.0, "start": 0.0}
    for n in graph.nodes:
        d_m, d_r = n.duration, run.ends[n.index] - run.starts[n.index]
        worst["duration"] = max(worst["duration"], abs(d_r - d_m) / max(d_m, 1e-9) if d_m > 1e-6 else 0.0)
        assert abs(d_r - d_m) <= ROUND_TRIP * d_m + 2e-9, (n.label, n.kind, d_m, d_r)
        worst["start"] = max(worst["start"], abs(run.starts[n.index] - n.start) / measured_step)
        assert abs(run.starts[n.index] - n.start) <= ROUND_TRIP * measured_step, (n.label, n.start, run.starts[n.index])
    worst["step"] = abs(run.step - measured_step) / measured_step
    assert worst["step"] <= ROUND_TRIP
    return worst


@pytest.mark.parametrize("product", ["910B", "A3", "950PR"])
def test_an_overlap_schedule_round_trips(product, tmp_path):
    schedule = overlap.Schedule(product, 64 << 20, 16 << 20, 1500, 2, 4, False)
    graph, run = round_trip(schedule.rt, product, tmp_path / "overlap.json")
    assert [d["how"] for d in graph.event_deps] == ["event id", "event id"]  # the file names each record's event
    worst = check(schedule.rt, graph, run)
    assert worst["step"] < 1e-6


def workload(product: str):
    """Two devices: H2D copies on one stream, an event, a peer copy, a memset and a kernel on another, a pageable
    synchronous copy and a pageable "async" one, a D2H on the second device after an event, synchronizes."""
    rt = Runtime(config.load(product), functional=False)
    rt.set_device(0)
    rt.device_enable_peer_access(1, 0)
    s0, s1 = rt.create_stream(), rt.create_stream()
    host_in, d0 = rt.malloc_host(64 << 20), rt.malloc(64 << 20)
    rt._keep = np.empty(8 << 20, dtype=np.uint8)
    pageable = rt.register_host(rt._keep)
    rt.set_device(1)
    d1, s2, host_out = rt.malloc(64 << 20), rt.create_stream(), rt.malloc_host(64 << 20)
    rt.set_device(0)
    ev = rt.create_event()
    for i in range(4):
        rt.memcpy_async(d0 + i * (8 << 20), 8 << 20, host_in + i * (8 << 20), 8 << 20, H2D, s0)
    rt.record_event(ev, s0)
    rt.stream_wait_event(s1, ev)
    rt.memcpy_async(d1, 32 << 20, d0, 32 << 20, D2D, s1)
    rt.memset_async(d0, 1 << 20, 0, 1 << 20, s1)
    rt.launch_kernel(lambda *a: None, [], s1, duration_us=300, name="k0")
    rt.memcpy(d0 + (40 << 20), 8 << 20, pageable, 8 << 20, H2D)
    rt.memcpy_async(pageable, 4 << 20, d0, 4 << 20, D2H, s0)
    ev2 = rt.create_event()
    rt.record_event(ev2, s1)
    rt.set_device(1)
    rt.stream_wait_event(s2, ev2)
    rt.memcpy_async(host_out, 16 << 20, d1, 16 << 20, D2H, s2)
    rt.synchronize_stream(s2)
    rt.set_device(0)
    rt.synchronize_device()
    return rt


@pytest.mark.parametrize("product", ["910B", "A3"])
def test_peer_pageable_and_blocking_copies_round_trip(product, tmp_path):
    rt = workload(product)
    graph, run = round_trip(rt, product, tmp_path / "workload.json")
    peer = [n for n in graph.nodes if n.kind == "copy" and n.direction == "d2d" and n.task.src != n.task.dst]
    assert len(peer) == 1 and (peer[0].task.src, peer[0].task.dst) == (0, 1)
    assert sum(n.task.memory == "pageable" for n in graph.nodes) == 2
    assert {c.api: c.blocking for c in graph.calls}["aclrtMemcpy"] == "own"
    check(rt, graph, run)


def test_a_batch_on_the_engines_round_trips(tmp_path):
    rt = Runtime(config.load("A3"), functional=False)
    rt.set_device(0)
    s = rt.create_stream()
    n, size = 200, 1 << 20
    host, dev = rt.malloc_host(n * size), rt.malloc(n * size)
    attr = {"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}}
    rt.memcpy_batch_async([dev + i * size for i in range(n)], [size] * n, [host + i * size for i in range(n)],
                          [size] * n, n, [attr], [0], 1, s)
    rt.launch_kernel(lambda *a: None, [], s, duration_us=100, name="k")
    rt.synchronize_stream(s)
    graph, run = round_trip(rt, "A3", tmp_path / "batch.json")
    assert [n.kind for n in graph.nodes] == ["group", "kernel"]
    check(rt, graph, run)


def test_acl_emu_run_writes_the_msprof_layout_and_it_round_trips(tmp_path, capsys):
    import emu
    from emu.cli import main

    path = tmp_path / "run.json"
    assert main(["run", "--product", "910B", "--host-time", "calls", "--out", str(tmp_path / "out"), "--msprof",
                 str(path)]) == 0
    assert f"msprof timeline: {path}" in capsys.readouterr().err
    rt = emu.current()
    graph = replay.build_graph(profiles.load(path))
    check(rt, graph, replay.retime(graph, "910B"))


def test_acl_emu_overlap_writes_its_best_schedule(tmp_path, capsys):
    from emu.cli import main

    path = tmp_path / "best.json"
    assert main(["overlap", "--h2d", "16M", "--d2h", "4M", "--compute-us", "500", "--streams", "1,2",
                 "--chunks", "1,4", "--grid-only", "--out", str(tmp_path / "ov"), "--msprof", str(path)]) == 0
    assert str(path) in capsys.readouterr().out
    result = json.loads((tmp_path / "ov" / "overlap.json").read_text())
    best = result["best"]
    p = profiles.load(path)
    assert len(p.streams) == best["streams"]
    assert sum(t.kind == "copy" for t in p.tasks) == 2 * best["chunks"]
    replayed = replay.replay(path, ["910B"])
    assert replayed["measured"]["step_ms"] == pytest.approx(replayed["runs"][0]["step_ms"], rel=ROUND_TRIP)


def test_a_replay_is_written_in_the_msprof_layout_too(tmp_path):
    out = tmp_path / "a3.json"
    replay.write_msprof_replay(Path(__file__).parent / "data" / "msprof_step.json", "A3", out)
    again = replay.replay(out, ["A3"], measured_on="A3")
    first = replay.replay(Path(__file__).parent / "data" / "msprof_step.json", ["A3"])
    assert again["measured"]["step_ms"] == pytest.approx(first["runs"][0]["step_ms"], rel=ROUND_TRIP)
    assert again["runs"][0]["step_ms"] == pytest.approx(first["runs"][0]["step_ms"], rel=ROUND_TRIP)


# -- the layout ----------------------------------------------------------------------------------------------------
def test_the_export_follows_the_msprof_layout(tmp_path):
    rt = workload("910B")
    path = tmp_path / "w.json"
    replay.write_msprof_runtime(rt, path)
    events = json.loads(path.read_text())
    assert isinstance(events, list)
    meta = [e for e in events if e["ph"] == "M"]
    names = {(e["pid"], e["args"].get("name")) for e in meta if e["name"] == "process_name"}
    labels = {e["pid"]: e["args"]["labels"] for e in meta if e["name"] == "process_labels"}
    cann = msprof.format_pid(msprof.HOST_DEVICE, msprof.CANN_SORT)
    hw = {d: msprof.format_pid(d, msprof.HARDWARE_SORT) for d in (0, 1)}
    assert names == {(cann, "CANN"), (hw[0], "Ascend Hardware"), (hw[1], "Ascend Hardware")}
    assert labels == {cann: "CPU", hw[0]: "NPU 0", hw[1]: "NPU 1"}
    assert all(pid & 0x1F == d for d, pid in hw.items()) and cann & 0x1F == 31
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    spans = [e for e in events if e["ph"] == "X"]
    for e in spans:
        assert set(e) >= {"name", "pid", "tid", "ts", "dur", "ph", "args"}
        assert isinstance(e["ts"], str) and float(e["ts"]) >= 0 and e["dur"] >= 0
        assert (e["pid"], e["tid"]) in threads
    tasks = [e for e in spans if e["pid"] != cann]
    for e in tasks:
        assert threads[(e["pid"], e["tid"])] == f"Stream {e['tid']}"
        assert set(e["args"]) >= {"Model Id", "Task Type", "Physic Stream Id", "Task Id", "Batch Id", "Subtask Id",
                                  "connection_id"}
        assert e["args"]["Physic Stream Id"] == e["tid"]
    copies = [e for e in tasks if e["name"] == "MEMCPY_ASYNC"]
    assert copies and all({"size(B)", "bandwidth(GB/s)", "operation"} <= set(e["args"]) for e in copies)
    assert {e["args"]["operation"] for e in copies} == {"host to device", "device to host", "device to device"}
    for e in copies:
        assert e["args"]["bandwidth(GB/s)"] == pytest.approx(e["args"]["size(B)"] / (e["dur"] * 1e3), rel=1e-3)
    calls = [e for e in spans if e["pid"] == cann]
    assert calls and all(e["name"].startswith("AscendCL@") and e["args"]["id"] == e["name"][9:] for e in calls)
    assert {"Thread Id", "Mode", "level", "id", "item_id", "connection_id"} <= set(calls[0]["args"])
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) <= set(ends)
    for conn, f in ends.items():
        assert f["bp"] == "e" and f["cat"] == "HostToDevice" == starts[conn]["cat"] and starts[conn]["pid"] == cann
        task = next(e for e in tasks if str(e["args"]["connection_id"]) == conn and e["ts"] == f["ts"])
        call = next(e for e in calls if str(e["args"]["connection_id"]) == conn)
        assert float(call["ts"]) <= float(task["ts"])
    # every device task the emulator kept is there once (a staged copy as one task, its DMA parts left out)
    assert len(tasks) == len(profiles.load(path).tasks) == 14
