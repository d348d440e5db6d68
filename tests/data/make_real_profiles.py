"""Writes the profiles of this folder that show what real profiles hold and the hand-written step of
make_profiles.py does not (README.md, "What real profiles hold"): MSPTI lines whose cross-stream gaps are
3.8-4.5 us and a synchronous copy (isAsync: 0); an msprof timeline with a long idle, step trace rows, a sizeless
blocking copy, a framework's Node@launch outside any AscendCL call and a TASK_TIMEOUT_SET control task; the
step's kernels as op_summary_*.csv; an api_statistic_*.csv. Nothing here runs the timing model. Run it from
anywhere:

    python tests/data/make_real_profiles.py
"""
from __future__ import annotations

import csv
import json

from make_profiles import BASE_US, D2H_GBPS, H2D_GBPS, HERE, HOST_THREAD, MIB, PROCESS, _pid, _ts, us_for

H2D_32, D2H_16 = us_for(32 * MIB, H2D_GBPS), us_for(16 * MIB, D2H_GBPS)
GAPS = (4.1, 3.8, 4.5)  # us from a copy's end to the kernel of another stream that waited for it (no event rows)


def gaps_lines() -> list[str]:
    """MSPTI lines, as the samples print them, of a step without event rows: copy 1, then (4.1 us after it ended)
    the forward kernel; copy 2, then (3.8 us after the later of it and the forward kernel) the backward kernel;
    a synchronous D2H copy (isAsync: 0) through aclnnInplaceCopy, 4.5 us after the backward kernel ended."""
    ns = lambda us: int(round((BASE_US + us) * 1000))  # noqa: E731
    t1 = 12.0
    t2 = t1 + H2D_32 + 0.8
    fwd = t1 + H2D_32 + GAPS[0]
    bwd = max(fwd + 900.0, t2 + H2D_32) + GAPS[1]
    d2h = bwd + 1800.0 + GAPS[2]
    api = [("aclrtMemcpyAsync", 0.0, 11.5, 1), ("aclrtMemcpyAsync", 13.0, 9.8, 2), ("aclrtLaunchKernel", 24.0, 14.0, 3),
           ("aclrtLaunchKernel", 40.0, 13.5, 4), ("aclnnInplaceCopy", 55.0, d2h + D2H_16 + 6.0 - 55.0, 5)]
    lines = [f"[ACL_API] name: {name}, start: {ns(s)}, end: {ns(s + d)}, processId: {PROCESS}, threadId: "
             f"{HOST_THREAD}, correlationId: {c}" for name, s, d, c in api]
    copies = [("HTOD", 32 * MIB, t1, H2D_32, 2, 1, 1), ("HTOD", 32 * MIB, t2, H2D_32, 2, 2, 1),
              ("DTOH", 16 * MIB, d2h, D2H_16, 2, 5, 0)]
    for kind, nbytes, s, d, stream, c, is_async in copies:
        lines.append(f"[MEMCPY] copyKind: {kind}, bytes: {nbytes}, start: {ns(s)}, end: {ns(s + d)}, deviceId: 0, "
                     f"streamId: {stream}, correlationId: {c}, isAsync: {is_async}")
    for name, s, d, c in (("MatMulV2", fwd, 900.0, 3), ("MatMulV2Grad", bwd, 1800.0, 4)):
        lines.append(f"[KERNEL] type: KERNEL_AICORE, name: {name}, start: {ns(s)}, end: {ns(s + d)}, deviceId: 0, "
                     f"streamId: 3, correlationId: {c}")
    return lines


IDLE_US = 250_000.0  # the idle before the first step (a data loader, a compile)
STEP_US = 10_000.0


def _x(name, pid, tid, start, dur, args):
    return {"name": name, "pid": pid, "tid": tid, "ts": _ts(start), "dur": round(dur, 3), "ph": "X", "args": args}


def _task(hw, sid, name, ttype, start, dur, task_id, conn, extra=None):
    args = {"Model Id": 4294967295, "Task Type": ttype, "Physic Stream Id": sid, "Task Id": task_id, "Batch Id": 0,
            "Subtask Id": 4294967295, "connection_id": conn, **(extra or {})}
    return _x(name, hw, sid, start, dur, args)


def _api(cann, level, api, start, dur, conn, extra=None):
    args = {"Thread Id": HOST_THREAD, "Mode": "ACL_RTS" if level == "AscendCL" else level, "level": level.lower(),
            "id": api, "item_id": "", "connection_id": conn, **(extra or {})}
    return _x(f"{level}@{api}", cann, HOST_THREAD, start, dur, args)


def idle_events() -> list[dict]:
    """msprof_idle.json: a TASK_TIMEOUT_SET at the start, 250 ms of idle, then two steps (step trace rows
    "Iteration 1" / "Iteration 2", args "Iteration ID"), each: a blocking aclrtMemcpy H2D of 32 MiB whose device
    row has no size (the call's args carry "size" and "kind"), a kernel launched by a framework's Node@launch
    row outside any AscendCL call, and a blocking D2H aclrtMemcpy with no size anywhere."""
    cann, hw, trace = _pid(31, 7), _pid(0, 14), _pid(0, 13)
    out = [{"name": "process_name", "pid": cann, "tid": 0, "ph": "M", "args": {"name": "CANN"}},
           {"name": "process_name", "pid": hw, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
           {"name": "process_labels", "pid": hw, "tid": 0, "ph": "M", "args": {"labels": "NPU 0"}},
           {"name": "process_name", "pid": trace, "tid": 0, "ph": "M", "args": {"name": "Step Trace"}},
           _api(cann, "AscendCL", "aclrtSetOpExecuteTimeOut", 0.0, 8.0, 1),
           _task(hw, 2, "TASK_TIMEOUT_SET", "TASK_TIMEOUT_SET", 6.0, 1.2, 1, 1)]
    task_id, conn = 1, 1
    for step in (1, 2):
        t0 = IDLE_US + (step - 1) * STEP_US
        h2d, kernel, d2h = t0 + 12.0, t0 + 12.0 + H2D_32 + 30.0, t0 + 12.0 + H2D_32 + 30.0 + 1200.0 + 20.0
        out.append(_x(f"Iteration {step}", trace, 0, t0, d2h + D2H_16 + 8.0 - t0,
                      {"Iteration ID": step, "FP Start": _ts(h2d), "BP End": _ts(kernel + 1200.0),
                       "Iteration End": _ts(d2h + D2H_16)}))
        out.append(_api(cann, "AscendCL", "aclrtMemcpy", t0, h2d + H2D_32 + 5.0 - t0, conn + 1,
                        {"size": 32 * MIB, "kind": "ACL_MEMCPY_HOST_TO_DEVICE"}))
        out.append(_task(hw, 2, "MEMCPY_ASYNC", "MEMCPY_ASYNC", h2d, H2D_32, task_id + 1, conn + 1))
        out.append(_api(cann, "Node", "launch", h2d + H2D_32 + 10.0, 15.0, conn + 2))
        out.append(_task(hw, 3, "MatMulV2", "AI_CORE", kernel, 1200.0, task_id + 2, conn + 2))
        out.append(_api(cann, "AscendCL", "aclrtMemcpy", d2h - 10.0, D2H_16 + 16.0, conn + 3))
        out.append(_task(hw, 2, "MEMCPY_ASYNC", "MEMCPY_ASYNC", d2h, D2H_16, task_id + 3, conn + 3))
        task_id, conn = task_id + 3, conn + 3
    return out


def op_summary_rows() -> list[list]:
    """The hand-written step's kernels as op_summary_*.csv rows (the reference page's "op_summary" columns; the
    per-core metric columns that follow Block Dim left out)."""
    from make_profiles import STEP

    rows = []
    for task_id, (_api_name, _s, _d, task) in enumerate(STEP, start=1):
        if task is None or not task[2].startswith("AI_"):
            continue
        sid, name, ttype, start, dur = task[:5]
        op_type = name.replace("V2Grad", "V2").replace("V2", "")
        rows.append([0, "", 4294967295, task_id, sid, "N/A", name, op_type, "N/A", ttype, f"{BASE_US + start:.3f}\t",
                     f"{dur:.3f}", "0.000", 24])
    return rows


def main() -> None:
    (HERE / "mspti_gaps.log").write_text("\n".join(gaps_lines()) + "\n")
    (HERE / "msprof_idle.json").write_text(json.dumps(idle_events(), indent=1) + "\n")
    with open(HERE / "op_summary_step.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Device_id", "Model Name", "Model ID", "Task ID", "Stream ID", "Infer ID", "Op Name", "OP Type",
                    "OP State", "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)",
                    "Block Dim"])
        w.writerows(op_summary_rows())
    with open(HERE / "api_statistic_step.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                    "Variance"])
        w.writerows([["host", "acl", "aclrtMemcpyAsync", "41.100", 4, "10.275", "9.600", "11.500", "0.587"],
                     ["host", "acl", "aclrtLaunchKernel", "41.400", 3, "13.800", "12.700", "14.800", "0.750"],
                     ["host", "acl", "aclrtSynchronizeStream", "5771.040", 2, "2885.520", "4.100", "5766.940",
                      "8302543.062"]])


if __name__ == "__main__":
    main()
