"""Writes the profiles of this folder from one hand-written step (`STEP` below), in each format's documented
layout (README.md gives the sources). Nothing here runs the timing model: the measured times are the ones
written below, chosen from published 910B figures (README.md). Run it from anywhere:

    python tests/data/make_profiles.py
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE_US = 1_717_000_000_000.0  # msprof timestamps are local wall-clock microseconds
PROCESS = 2_345_678 & 0x3FFFFF  # the profiled process id msprof formats pids with
HOST_THREAD = 1_234_567
MIB = 1 << 20

# Measured rates of the hand-written step (see README.md): H2D 24.4 GB/s, D2H 23.9 GB/s (ascend-dmi --bw on an
# Atlas 800T A2 reports 24.9 GB/s for 512 MiB H2D; a 32 MiB copy pays its fixed cost on top), an on-device copy
# of 64 MiB in 95 us.
H2D_GBPS, D2H_GBPS = 24.4, 23.9


def us_for(nbytes: int, gbps: float) -> float:
    return round(nbytes / (gbps * 1e3), 3)


# The step: (host call, its start us, its duration us, device task or None, event). Device task: (stream, name,
# task type, start us, duration us, bytes, operation). Stream 2 copies, stream 3 computes.
COPY, COMPUTE = 2, 3
H2D_US = us_for(32 * MIB, H2D_GBPS)  # 1375.2
D2H_US = us_for(16 * MIB, D2H_GBPS)
T_H2D_1 = 12.0
T_H2D_2 = T_H2D_1 + H2D_US + 0.8
FWD = T_H2D_1 + H2D_US + 1.4  # the compute stream's wait ends when the record is done
BWD = max(FWD + 1200.0, T_H2D_2 + H2D_US + 0.6) + 1.3
OPT = BWD + 2400.0 + 0.9
D2H = BWD + 2400.0 + 1.6
D2D = OPT + 600.0 + 0.7
STEP = [
    # api, start, dur, task
    ("aclrtMemcpyAsync", 0.0, 11.5, (COPY, "MEMCPY_ASYNC", "MEMCPY_ASYNC", T_H2D_1, H2D_US, 32 * MIB,
                                     "host to device")),
    ("aclrtRecordEvent", 13.0, 3.1, (COPY, "EVENT_RECORD", "EVENT_RECORD", T_H2D_1 + H2D_US + 0.2, 0.12, None, None)),
    ("aclrtMemcpyAsync", 17.2, 9.8, (COPY, "MEMCPY_ASYNC", "MEMCPY_ASYNC", T_H2D_2, H2D_US, 32 * MIB,
                                     "host to device")),
    ("aclrtRecordEvent", 28.0, 2.9, (COPY, "EVENT_RECORD", "EVENT_RECORD", T_H2D_2 + H2D_US + 0.2, 0.12, None, None)),
    ("aclrtStreamWaitEvent", 31.5, 2.6, (COMPUTE, "EVENT_WAIT", "EVENT_WAIT", 35.0, FWD - 1.0 - 35.0, None, None)),
    ("aclrtLaunchKernel", 34.6, 14.8, (COMPUTE, "MatMulV2", "AI_CORE", FWD, 1200.0, None, None)),
    ("aclrtStreamWaitEvent", 50.0, 2.4, (COMPUTE, "EVENT_WAIT", "EVENT_WAIT", FWD + 1200.0 + 0.3,
                                         BWD - 1.0 - (FWD + 1200.0 + 0.3), None, None)),
    ("aclrtLaunchKernel", 53.0, 13.9, (COMPUTE, "MatMulV2Grad", "AI_CORE", BWD, 2400.0, None, None)),
    ("aclrtRecordEvent", 67.5, 2.8, (COMPUTE, "EVENT_RECORD", "EVENT_RECORD", BWD + 2400.0 + 0.2, 0.12, None, None)),
    ("aclrtStreamWaitEvent", 70.9, 2.5, (COPY, "EVENT_WAIT", "EVENT_WAIT", T_H2D_2 + H2D_US + 0.5,
                                         BWD + 2400.0 + 0.9 - (T_H2D_2 + H2D_US + 0.5), None, None)),
    ("aclrtMemcpyAsync", 74.0, 10.2, (COPY, "MEMCPY_ASYNC", "MEMCPY_ASYNC", D2H, D2H_US, 16 * MIB, "device to host")),
    ("aclrtLaunchKernel", 84.9, 12.7, (COMPUTE, "ApplyAdamW", "AI_VECTOR_CORE", OPT, 600.0, None, None)),
    ("aclrtMemcpyAsync", 98.3, 9.6, (COMPUTE, "MEMCPY_ASYNC", "MEMCPY_ASYNC", D2D, 95.0, 64 * MIB,
                                     "device to device")),
    ("aclrtSynchronizeStream", 108.6, None, None),  # returns once the copy stream is done
    ("aclrtSynchronizeStream", None, 4.1, None),  # the compute stream: done already
]


def _ts(us: float) -> str:
    return f"{BASE_US + us:.3f}"  # msprof writes ts as a string with three decimals


def _pid(device: int, sort_index: int) -> int:
    return (PROCESS << 10) | (sort_index << 5) | device  # json_assembler.cpp GetFormatPid


def _calls_and_tasks():
    """The step with the two synchronize calls timed: (calls [(api, start, dur, conn)], tasks [(conn, task)])."""
    calls, tasks = [], []
    conn = 0
    last_copy = max(t[3] + t[4] for _, _, _, t in STEP if t and t[0] == COPY)
    clock = 0.0
    for api, start, dur, task in STEP:
        if api == "aclrtSynchronizeStream" and start is not None:
            dur = last_copy + 3.4 - start  # it returns 3.4 us after the last copy ends
        if start is None:
            start = clock + 0.9
        conn_id = 0
        if task is not None:
            conn += 1
            conn_id = conn
            tasks.append((conn_id, task))
        calls.append((api, start, dur, conn_id))
        clock = start + dur
    return calls, tasks


def msprof_events(with_events: bool = True, with_host: bool = True) -> list[dict]:
    """The step as msprof_*.json: CANN process (AscendCL rows), Ascend Hardware process of device 0 (a thread per
    stream), HostToDevice flows. Without events: no EVENT_RECORD / EVENT_WAIT rows; without host: no CANN rows."""
    calls, tasks = _calls_and_tasks()
    cann, hw = _pid(31, 7), _pid(0, 14)
    out = []
    if with_host:
        out += [{"name": "process_name", "pid": cann, "tid": 0, "ph": "M", "args": {"name": "CANN"}},
                {"name": "process_labels", "pid": cann, "tid": 0, "ph": "M", "args": {"labels": "CPU"}},
                {"name": "process_sort_index", "pid": cann, "tid": 0, "ph": "M", "args": {"sort_index": 7}},
                {"name": "thread_name", "pid": cann, "tid": HOST_THREAD, "ph": "M",
                 "args": {"name": f"Thread {HOST_THREAD}"}},
                {"name": "thread_sort_index", "pid": cann, "tid": HOST_THREAD, "ph": "M",
                 "args": {"sort_index": HOST_THREAD}}]
    out += [{"name": "process_name", "pid": hw, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
            {"name": "process_labels", "pid": hw, "tid": 0, "ph": "M", "args": {"labels": "NPU 0"}},
            {"name": "process_sort_index", "pid": hw, "tid": 0, "ph": "M", "args": {"sort_index": 14}}]
    for sid in (COPY, COMPUTE):
        out += [{"name": "thread_name", "pid": hw, "tid": sid, "ph": "M", "args": {"name": f"Stream {sid}"}},
                {"name": "thread_sort_index", "pid": hw, "tid": sid, "ph": "M", "args": {"sort_index": sid}}]
    if with_host:
        for api, start, dur, conn in calls:
            if not with_events and api in ("aclrtRecordEvent", "aclrtStreamWaitEvent"):
                continue
            out.append({"name": f"AscendCL@{api}", "pid": cann, "tid": HOST_THREAD, "ts": _ts(start),
                        "dur": round(dur, 3), "ph": "X",
                        "args": {"Thread Id": HOST_THREAD, "Mode": "ACL_RTS", "level": "acl", "id": api,
                                 "item_id": "", "connection_id": conn}})
            if conn:
                out.append({"name": f"HostToDevice{conn}", "pid": cann, "tid": HOST_THREAD, "ph": "s",
                            "cat": "HostToDevice", "id": str(conn), "ts": _ts(start)})
    task_id = 0
    for conn, (sid, name, ttype, start, dur, nbytes, operation) in tasks:
        if not with_events and ttype.startswith("EVENT_"):
            continue
        task_id += 1
        args = {"Model Id": 4294967295, "Task Type": ttype, "Physic Stream Id": sid, "Task Id": task_id,
                "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": conn if with_host else 0}
        if nbytes is not None:
            args.update({"size(B)": nbytes, "bandwidth(GB/s)": round(nbytes / (dur * 1e3), 6),
                         "operation": operation})
        out.append({"name": name, "pid": hw, "tid": sid, "ts": _ts(start), "dur": round(dur, 3), "ph": "X",
                    "args": args})
        if with_host:
            out.append({"name": f"HostToDevice{conn}", "pid": hw, "tid": sid, "ph": "f", "cat": "HostToDevice",
                        "id": str(conn), "ts": _ts(start), "bp": "e"})
    return out


def task_time_rows() -> list[list]:
    """The step as task_time_*.csv (no sizes: the format has none). msprof ends its time cells with a tab."""
    _, tasks = _calls_and_tasks()
    rows = []
    for task_id, (conn, (sid, name, ttype, start, dur, nbytes, operation)) in enumerate(tasks, start=1):
        ktype = {"AI_CORE": "KERNEL_AICORE", "AI_VECTOR_CORE": "KERNEL_AIVEC"}.get(ttype, ttype)
        kname = name if ttype.startswith("AI_") else "N/A"
        rows.append([0, kname, ktype, sid, task_id, f"{dur:.3f}", f"{BASE_US + start:.3f}\t",
                     f"{BASE_US + start + dur:.3f}\t"])
    return rows


def mspti_records() -> list[dict]:
    """The step as MSPTI activity records: API rows (ACL_API) and the memcpy and kernel records they correlate
    with; times in ns. Record and wait tasks have no activity kind of their own."""
    calls, tasks = _calls_and_tasks()
    ns = lambda us: int(round((BASE_US + us) * 1000))  # noqa: E731
    out = []
    for api, start, dur, conn in calls:
        out.append({"kind": "MSPTI_ACTIVITY_KIND_ACL_API", "start": ns(start), "end": ns(start + dur),
                    "pt": {"processId": PROCESS, "threadId": HOST_THREAD}, "correlationId": conn or 0, "name": api})
    copy_kinds = {"host to device": "MSPTI_ACTIVITY_MEMCPY_KIND_HTOD",
                  "device to host": "MSPTI_ACTIVITY_MEMCPY_KIND_DTOH",
                  "device to device": "MSPTI_ACTIVITY_MEMCPY_KIND_DTOD"}
    for conn, (sid, name, ttype, start, dur, nbytes, operation) in tasks:
        if nbytes is not None:
            out.append({"kind": "MSPTI_ACTIVITY_KIND_MEMCPY", "copyKind": copy_kinds[operation], "bytes": nbytes,
                        "start": ns(start), "end": ns(start + dur), "deviceId": 0, "streamId": sid,
                        "correlationId": conn, "isAsync": 1})
        elif ttype.startswith("AI_"):
            out.append({"kind": "MSPTI_ACTIVITY_KIND_KERNEL", "start": ns(start), "end": ns(start + dur),
                        "ds": {"deviceId": 0, "streamId": sid}, "correlationId": conn,
                        "type": {"AI_CORE": "KERNEL_AICORE", "AI_VECTOR_CORE": "KERNEL_AIVEC"}[ttype], "name": name})
    return sorted(out, key=lambda r: r["start"])


def mspti_log_lines() -> list[str]:
    """The records as the MSPTI samples print them (samples/common/helper_mspti.h)."""
    lines = ["========== UserBufferRequest ============", "========== UserBufferComplete ============"]
    for r in mspti_records():
        kind = r["kind"].replace("MSPTI_ACTIVITY_KIND_", "")
        if kind == "ACL_API":
            lines.append(f"[ACL_API] name: {r['name']}, start: {r['start']}, end: {r['end']}, processId: "
                         f"{r['pt']['processId']}, threadId: {r['pt']['threadId']}, correlationId: "
                         f"{r['correlationId']}")
        elif kind == "MEMCPY":
            lines.append(f"[MEMCPY] copyKind: {r['copyKind'].replace('MSPTI_ACTIVITY_MEMCPY_KIND_', '')}, bytes: "
                         f"{r['bytes']}, start: {r['start']}, end: {r['end']}, deviceId: {r['deviceId']}, streamId: "
                         f"{r['streamId']}, correlationId: {r['correlationId']}, isAsync: {r['isAsync']}")
        else:
            lines.append(f"[KERNEL] type: {r['type']}, name: {r['name']}, start: {r['start']}, end: {r['end']}, "
                         f"deviceId: {r['ds']['deviceId']}, streamId: {r['ds']['streamId']}, correlationId: "
                         f"{r['correlationId']}")
    return lines


def unknown_events() -> list[dict]:
    """A short timeline with a task type msprof does not name (a DVPP task) and one it names (NOTIFY_WAIT)."""
    hw = _pid(0, 14)
    meta = [{"name": "process_name", "pid": hw, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
            {"name": "process_labels", "pid": hw, "tid": 0, "ph": "M", "args": {"labels": "NPU 0"}}]
    rows = [("MEMCPY_ASYNC", "MEMCPY_ASYNC", 0.0, us_for(4 * MIB, H2D_GBPS), 4 * MIB, "host to device"),
            ("VpcResize", "DVPP_VPC", 200.0, 310.5, None, None),
            ("NOTIFY_WAIT", "NOTIFY_WAIT", 520.0, 12.0, None, None),
            ("VpcCrop", "DVPP_VPC", 540.0, 120.25, None, None)]
    out = list(meta)
    for i, (name, ttype, start, dur, nbytes, op) in enumerate(rows, start=1):
        args = {"Model Id": 4294967295, "Task Type": ttype, "Physic Stream Id": 5, "Task Id": i, "Batch Id": 0,
                "Subtask Id": 4294967295, "connection_id": 0}
        if nbytes:
            args.update({"size(B)": nbytes, "bandwidth(GB/s)": round(nbytes / (dur * 1e3), 6), "operation": op})
        out.append({"name": name, "pid": hw, "tid": 5, "ts": _ts(start), "dur": dur, "ph": "X", "args": args})
    return out


def main() -> None:
    (HERE / "msprof_step.json").write_text(json.dumps(msprof_events(), indent=1) + "\n")
    (HERE / "msprof_no_events.json").write_text(json.dumps(msprof_events(with_events=False, with_host=False),
                                                           indent=1) + "\n")
    (HERE / "msprof_unknown.json").write_text(json.dumps(unknown_events(), indent=1) + "\n")
    with open(HERE / "task_time_step.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Device_id", "kernel_name", "kernel_type", "stream_id", "task_id", "task_time(us)",
                    "task_start(us)", "task_stop(us)"])
        w.writerows(task_time_rows())
    (HERE / "mspti_step.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mspti_records()))
    (HERE / "mspti_step.log").write_text("\n".join(mspti_log_lines()) + "\n")


if __name__ == "__main__":
    main()
