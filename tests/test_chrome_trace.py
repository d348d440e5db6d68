"""The trace a run writes is one Perfetto shows as it happened (models.chrome): named processes and tracks,
no two slices of a track overlapping (Perfetto's JSON importer does not show overlapping complete events on
one track), counters, and flow arrows whose two ends exist."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

import emu
from emu.runtime import queries
from emu.studies import overlap

MIB = 1 << 20


def check_structure(trace: dict) -> dict:
    """Validate a trace dict; return facts for the caller's own checks."""
    events = trace["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert len(set(threads.values())) >= 1
    spans = defaultdict(list)
    flows = defaultdict(dict)
    counters = defaultdict(list)
    for e in events:
        ph = e["ph"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["pid"] in processes, e  # every event's process is named
        if ph == "X":
            assert (e["pid"], e["tid"]) in threads, e  # every slice's track is named
            assert e["dur"] >= 0 and e["ts"] >= 0
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif ph in ("s", "f"):
            assert (e["pid"], e["tid"]) in threads
            assert e["id"] not in flows[ph], "a flow id used twice"
            flows[ph][e["id"]] = e
        elif ph == "C":
            assert all(isinstance(v, (int, float)) and v >= 0 for v in e["args"].values())
            counters[(e["pid"], e["name"])].append(e["ts"])
        else:
            assert ph == "M", e
    for track, slices in spans.items():
        slices.sort()
        for (a0, a1, an), (b0, b1, bn) in zip(slices, slices[1:]):
            assert a1 <= b0 + 1e-6, f"{threads[track]}: {an} [{a0}, {a1}] overlaps {bn} [{b0}, {b1}]"
    assert set(flows["s"]) == set(flows["f"]), "a flow arrow lacks one of its ends"
    for fid, start in flows["s"].items():  # each end lies within a slice of its track
        for e in (start, flows["f"][fid]):
            assert any(a <= e["ts"] <= b for a, b, _ in spans[(e["pid"], e["tid"])]), e
        assert flows["f"][fid]["ts"] >= start["ts"] - 1e-6  # a task starts after the call that enqueued it
    for name, times in counters.items():
        assert times == sorted(times) and len(set(times)) == len(times), name
    return {"processes": processes, "threads": threads, "spans": spans, "flows": flows, "counters": counters}


def test_concurrent_flows_on_a_link_go_on_lanes_and_nothing_overlaps():
    """The overlap study's best schedule moves several chunks over the host link at once: each on a lane of
    the link's track, never two on one lane."""
    result = overlap.plan("910B", 64 * MIB, 16 * MIB, 1500, [4], [16], extend=False)
    trace = overlap.timelines("910B", result)["best"]["trace"]
    facts = check_structure(trace)
    names = set(facts["threads"].values())
    assert {"host thread 1", "stream 1", "stream 4", "SDMA 0", "AI core 0", "pcie down", "pcie up"} <= names
    assert "pcie down #2" in names  # concurrent H2D flows needed a second lane
    assert facts["processes"][1] == "host" and "device 0" in facts["processes"].values()
    counters = {name for _, name in facts["counters"]}
    assert "pcie down GB/s" in counters and "busy SDMA engines" in counters
    # every async copy and kernel (16 chunks: H2D, kernel, D2H) has an arrow from the call that queued it
    ends = {(e["pid"], e["tid"], e["ts"]) for e in facts["flows"]["f"].values()}
    work = [(pid, tid, a, b) for (pid, tid), s in facts["spans"].items()
            if facts["threads"][(pid, tid)].startswith("stream ")
            for a, b, name in s if name == "aclrtMemcpyAsync" or name.startswith("compute[")]
    assert len(work) == 3 * 16
    assert all(any(p == pid and t == tid and a <= ts <= b for p, t, ts in ends) for pid, tid, a, b in work)


def test_two_devices_each_have_their_process_and_peer_links_the_interconnect(tmp_path):
    rt = emu.configure("910B", functional=False)
    rt.set_device(0)
    rt.device_enable_peer_access(1, 0)
    s0 = rt.create_stream()
    a, h = rt.malloc(4 * MIB), rt.malloc_host(4 * MIB)
    rt.set_device(1)
    b = rt.malloc(4 * MIB)
    s1 = rt.create_stream()
    rt.memcpy_async(b, 4 * MIB, h, 4 * MIB, 1, s1)
    rt.set_device(0)
    rt.memcpy_async(a, 4 * MIB, h, 4 * MIB, 1, s0)
    rt.memcpy_async(b, 4 * MIB, a, 4 * MIB, 3, s0)
    rt.memcpy(h, 4 * MIB, a, 4 * MIB, 2)  # a blocking copy: the sync copies track
    rt.synchronize_device()
    path = tmp_path / "t.json"
    rt.write_trace(path)
    facts = check_structure(json.loads(path.read_text()))
    procs = set(facts["processes"].values())
    assert {"host", "device 0", "device 1"} <= procs
    by_proc = defaultdict(set)
    for (pid, _), name in facts["threads"].items():
        by_proc[facts["processes"][pid]].add(name)
    assert {"stream 1", "sync copies", "pcie down", "pcie up"} <= by_proc["device 0"]
    assert {"stream 1", "pcie down"} <= by_proc["device 1"]
    if "interconnect" in procs:  # the peer copy's link between the devices
        assert any("->" in n for n in by_proc["interconnect"])


def test_host_threads_are_numbered_in_order_of_appearance():
    rt = emu.configure("910B", functional=False)
    rt.set_device(0)
    import threading

    def other():
        rt.set_device(0)
        rt.malloc(64)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    facts = check_structure(queries.chrome_trace(rt))
    names = set(facts["threads"].values())
    assert {"host thread 1", "host thread 2"} <= names
    assert not any(n.startswith("host thread 1") and len(n) > len("host thread 1") for n in names)


@pytest.mark.parametrize("product", ["A3", "950PR", "200I_A2"])
def test_every_product_writes_a_valid_trace(product):
    result = overlap.plan(product, 8 * MIB, 2 * MIB, 300, [2], [4], extend=False)
    check_structure(overlap.timelines(product, result)["best"]["trace"])
