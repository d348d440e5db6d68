"""A run in the msprof timeline layout (`msprof_*.json`), so that MindStudio Insight opens it as well as Perfetto.

The layout follows what msprof's own exporter writes (Ascend/msprof, analysis/csrc/application/timeline,
commit 9ba1ac7be913da2944126672b6808db3860d40a3; the fields are documented in its
docs/en/user_guide/profile_data_file_references.md, "msprof_*.json (Timeline Report)", "api_statistic" and
"task_time"):

- one JSON array of Chrome trace events, times in microseconds (`ts` a string with three decimals, as msprof
  writes it; `dur` a number: the end rounded as `ts` is, minus `ts`, so slices that follow each other on a row
  never overlap);
- a "CANN" process (label "CPU") with a thread per host thread ("Thread <tid>") holding the API calls as
  complete events named "AscendCL@<api>", args "Thread Id", "Mode", "level", "id", "item_id" and
  "connection_id" (cann_assembler.cpp / cann_assembler.h, ApiTraceEvent);
- an "Ascend Hardware" process per device (label "NPU <device>"), a thread per stream ("Stream <id>", tid =
  the physical stream id), each task a complete event with args "Model Id", "Task Type", "Physic Stream Id",
  "Task Id", "Batch Id", "Subtask Id" and "connection_id"; a copy (name "MEMCPY_ASYNC") adds "size(B)",
  "bandwidth(GB/s)" (bytes / ns) and "operation" ("host to device", "device to host", "device to device",
  "host to host") (ascend_hardware_assembler.cpp, TaskTraceEvent and MemcpyAsyncEvent);
- process ids formatted as msprof formats them, (pid << 10) | (sort index << 5) | device, with the host as
  device 31 (json_assembler.cpp GetFormatPid; json_constant.h HOST_PID); sort indexes 7 (CANN) and 14
  (Ascend Hardware) from the ProcessSortIndex enum of json_trace/include/meta_data_event.h;
- "HostToDevice" flow events ("s" on the API call, "f" with "bp": "e" on the task) joining each call to the
  task it queued, their id the connection id (cann_assembler.cpp GenerateConnectionTrace).

What the layout has no field for is written under args whose names start with "acl-emu " (msprof and
MindStudio Insight show them as any other arg; `emu.studies.profiles` reads them back): the ends of a copy
between two devices ("acl-emu src device", "acl-emu dst device"), the event a record or wait task names
("acl-emu event"), a pageable copy ("acl-emu memory": "pageable") and the DMA tasks a split copy stands for
("acl-emu tasks"). The "Task Type" of a copy is "MEMCPY_ASYNC" and that of a kernel "AI_CORE" (the
accelerator types the documentation lists); the "Mode" and "level" of an API call are "ACL_RTS" and "acl":
the values msprof writes for runtime APIs are not documented beyond these names (assumed).

A kernel of device code (a label "name<<<blockDim>>> [how]", models.aicore.kernel_label) is named by its kernel's name, as
msprof names an operator, with its blockDim as "Block Dim" (the column of msprof's op_summary: the number of
pieces the task is split into, the cores it runs on; the same reference page, "op_summary") and how its time
was found as "acl-emu time" ("declared in kernels.toml: 1500 us", "estimated: vector-bound, ...").

`build(records, calls, ends)` takes a models.trace RECORD array, the CALL array of the host's API calls and
each record's (src, dst, part) (`ends`). Times are simulated seconds.
"""
from __future__ import annotations

import bisect
import json
import math
import re

import numpy as np

from .aicore import kernel_label
from .atomic import atomic_write

HOST_DEVICE = 31  # msprof's device field of the host's process id (json_constant.h HOST_PID)
CANN_SORT, HARDWARE_SORT = 7, 14  # meta_data_event.h ProcessSortIndex: LAYER_CANN_SORT, LAYER_ASCEND_HW_SORT
PROCESS = 1000  # the process id the formatted pids are built on (any; msprof takes the profiled process's)
FLOW = "HostToDevice"
EXTENSION = "acl-emu "  # the prefix of the args the msprof layout has no field for

OPERATIONS = {"h2d": "host to device", "d2h": "device to host", "h2h": "host to host", "sdma": "device to device",
              "hccs": "device to device", "ub": "device to device", "sio": "device to device",
              "pcie-p2p": "device to device"}
_KIND_OPERATION = {0: "host to host", 1: "host to device", 2: "device to host", 3: "device to device"}
_EVENT = re.compile(r"^(record|wait) event (\S+)$")
_EVENT_APIS = {"record": "aclrtRecordEvent", "wait": "aclrtStreamWaitEvent"}


def format_pid(device: int, sort_index: int) -> int:
    """A process id as msprof formats it: (pid << 10) | (sort index << 5) | device."""
    return (PROCESS << 10) | (sort_index << 5) | device


def _us(t: float, origin_us: float) -> str:
    return f"{t * 1e6 + origin_us:.3f}"


def _span(start: float, end: float, origin_us: float) -> tuple[str, float]:
    """(ts, dur) of a slice from `start` to `end` seconds: ts with three decimals as msprof writes it, dur the
    difference of the two ends each rounded so, so a slice that ends where the next one of its row starts ends
    exactly at that one's ts (rounding the duration itself could run 1 ns into the next slice)."""
    ts = _us(start, origin_us)
    return ts, round(float(_us(end, origin_us)) - float(ts), 3)


def _meta(name: str, pid: int, tid: int, key: str, value) -> dict:
    return {"name": name, "pid": pid, "tid": tid, "ph": "M", "args": {key: value}}


class _Connections:
    """Which host call queued each task: the latest call of the task's API (any call, when none of it fits:
    a kernel's label is its own name) that started by the task's submit time and had not returned before it."""

    def __init__(self, calls: list[tuple]):
        self.by_api: dict[str, list[tuple[float, float, int]]] = {}
        for i, (api, _thread, start, end) in enumerate(calls):
            for key in (api, ""):
                self.by_api.setdefault(key, []).append((start, end, i))
        for entries in self.by_api.values():
            entries.sort()

    def find(self, api: str, at: float) -> int | None:
        """The call under way at `at` (started before it, not returned before it), else one starting at `at`."""
        if at is None or math.isnan(at):
            return None
        m = _EVENT.match(api)
        keys = (_EVENT_APIS[m.group(1)], "") if m else (api, "")
        for key in keys:
            entries = self.by_api.get(key)
            if not entries:
                continue
            j = bisect.bisect_left(entries, (at,)) - 1  # the latest call that started before `at`
            if j >= 0 and entries[j][1] >= at:
                return entries[j][2]
            if j + 1 < len(entries) and entries[j + 1][0] == at:
                return entries[j + 1][2]
        return None


def build(records: np.ndarray, calls, ends, origin_us: float = 0.0) -> list[dict]:
    """The msprof timeline (a list of trace events) of a RECORD array and the host's calls (a CALL array or
    (api, thread, start, end) tuples). `ends`: each record's (src, dst, part) - the ends of a copy (device
    ids, None for the host) and whether it is one DMA part of a batch or staged copy - in the records' order.
    A staged (pageable) copy is one task, its DMA parts left out; a batch's parts are its tasks."""
    calls = calls.tolist() if isinstance(calls, np.ndarray) else list(calls)
    rows = records.tolist()
    extra = list(ends)
    if len(extra) != len(rows):
        raise ValueError(f"ends: {len(extra)} entries for {len(rows)} records")
    cann = format_pid(HOST_DEVICE, CANN_SORT)
    events, threads = _host_metadata(calls, cann)
    tasks = _DeviceTasks(records.dtype.names, _Connections(calls), origin_us)
    tasks.add(rows, extra)
    events += _device_metadata(tasks.devices, tasks.streams)
    events += _call_events(calls, threads, tasks.connection, cann, origin_us)
    return events + tasks.events + tasks.flows


def _host_metadata(calls: list, cann: int) -> tuple[list[dict], dict[int, int]]:
    """(the CANN process's metadata events - none without calls - , {thread: its row number from 1, in the
    order of the threads' first calls})."""
    events: list[dict] = []
    if calls:
        events += [_meta("process_name", cann, 0, "name", "CANN"), _meta("process_labels", cann, 0, "labels", "CPU"),
                   _meta("process_sort_index", cann, 0, "sort_index", CANN_SORT)]
    threads: dict[int, int] = {}
    for _api, thread, _s, _e in calls:
        threads.setdefault(int(thread), len(threads) + 1)
    for thread, no in threads.items():
        events += [_meta("thread_name", cann, no, "name", f"Thread {thread}"),
                   _meta("thread_sort_index", cann, no, "sort_index", no)]
    return events, threads


class _DeviceTasks:
    """The task events of the records, in start order: task ids count from 1 in that order, streams number
    from 1 per device in order of first use, connection ids from 1 in order of the first task a call queued."""

    def __init__(self, names: tuple, finder: _Connections, origin_us: float):
        self.at = {n: names.index(n) for n in names}
        self.finder, self.origin_us = finder, origin_us
        self.connection: dict[int, int] = {}  # call index -> connection id
        self.streams: dict[tuple[int, str], int] = {}
        self.devices: set[int] = set()
        self.events: list[dict] = []
        self.flows: list[dict] = []
        self.task_id = 0

    def add(self, rows: list, extra: list) -> None:
        """Every record but a group and the DMA parts of a staged copy (the staged copy is the task)."""
        at = self.at
        staged = [(r[at["stream"]], r[at["start"]], r[at["end"]]) for r in rows if r[at["kind"]] == "staged"]
        order = sorted(range(len(rows)), key=lambda i: (rows[i][at["start"]], rows[i][at["end"]], i))
        for i in order:
            r = rows[i]
            kind, stream, start, end = r[at["kind"]], r[at["stream"]], r[at["start"]], r[at["end"]]
            src, dst, part = extra[i]
            if math.isnan(start) or math.isnan(end) or kind == "group":
                continue
            if part and kind == "copy" and any(s == stream and a <= start and end <= b for s, a, b in staged):
                continue
            self._task(r, src, dst)

    def _task(self, r: tuple, src, dst) -> None:
        at, origin_us = self.at, self.origin_us
        label, stream, device = r[at["api"]], r[at["stream"]], int(r[at["device"]])
        start, end, submit = r[at["start"]], r[at["end"]], r[at["submit"]]
        self.devices.add(device)
        sid = self.streams.setdefault((device, stream), sum(1 for d, _ in self.streams if d == device) + 1)
        pid = format_pid(device, HARDWARE_SORT)
        self.task_id += 1
        args = {"Model Id": 4294967295, "Task Type": "", "Physic Stream Id": sid, "Task Id": self.task_id,
                "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": 0}
        name = _task_type(args, r, at, src, dst)
        call = self.finder.find(label, submit)
        if call is not None:
            conn = self.connection.setdefault(call, len(self.connection) + 1)
            args["connection_id"] = conn
            self.flows.append({"name": f"{FLOW}{conn}", "pid": pid, "tid": sid, "ph": "f", "cat": FLOW,
                               "id": str(conn), "ts": _us(start, origin_us), "bp": "e"})
        ts, dur = _span(start, end, origin_us)
        self.events.append({"name": name, "pid": pid, "tid": sid, "ts": ts, "dur": dur, "ph": "X", "args": args})


def _task_type(args: dict, r: tuple, at: dict, src, dst) -> str:
    """Fill in a record's Task Type and the args of its kind; the event's name (the record's label unless its
    kind names the task: MEMCPY_ASYNC, MEMSET_ASYNC, EVENT_RECORD / EVENT_WAIT)."""
    kind, label, start, end = r[at["kind"]], r[at["api"]], r[at["start"]], r[at["end"]]
    name = label
    nbytes = int(r[at["bytes"]])
    if kind in ("copy", "staged"):
        name = args["Task Type"] = "MEMCPY_ASYNC"
        route, used = r[at["route"]], int(r[at["kind_used"]])
        operation = OPERATIONS.get(route) or _KIND_OPERATION.get(used, "other")
        dur_ns = (end - start) * 1e9
        args.update({"size(B)": nbytes, "bandwidth(GB/s)": round(nbytes / dur_ns, 6) if dur_ns > 0 else 0.0,
                     "operation": operation})
        if operation == "device to device":
            if src is not None and dst is not None and src != dst:
                args[EXTENSION + "src device"], args[EXTENSION + "dst device"] = int(src), int(dst)
        if kind == "staged":
            args[EXTENSION + "memory"] = "pageable"
        if int(r[at["tasks"]]) > 1:
            args[EXTENSION + "tasks"] = int(r[at["tasks"]])
    elif kind == "fill":
        name = args["Task Type"] = "MEMSET_ASYNC"
        args["size(B)"] = nbytes
    elif kind == "kernel":
        args["Task Type"] = "AI_CORE"
        name, block_dim, how = kernel_label(label)
        if block_dim is not None:
            args["Block Dim"] = block_dim
        if how is not None:
            args[EXTENSION + "time"] = how
    elif kind == "marker":
        m = _EVENT.match(label)
        if m:
            name = args["Task Type"] = "EVENT_RECORD" if m.group(1) == "record" else "EVENT_WAIT"
            args[EXTENSION + "event"] = m.group(2)
        else:
            args["Task Type"] = "EVENT_RECORD"
    elif kind == "hostfunc":
        args["Task Type"] = "HOSTFUNC_CALLBACK"
    else:
        args["Task Type"] = kind.upper()
    return name


def _device_metadata(devices: set, streams: dict) -> list[dict]:
    """Per device, in order, its "Ascend Hardware" process and its streams' rows."""
    events: list[dict] = []
    for device in sorted(devices):
        pid = format_pid(device, HARDWARE_SORT)
        events += [_meta("process_name", pid, 0, "name", "Ascend Hardware"),
                   _meta("process_labels", pid, 0, "labels", f"NPU {device}"),
                   _meta("process_sort_index", pid, 0, "sort_index", HARDWARE_SORT)]
        for (d, _), sid in sorted(streams.items(), key=lambda kv: kv[1]):
            if d == device:
                events += [_meta("thread_name", pid, sid, "name", f"Stream {sid}"),
                           _meta("thread_sort_index", pid, sid, "sort_index", sid)]
    return events


def _call_events(calls: list, threads: dict, connection: dict, cann: int, origin_us: float) -> list[dict]:
    """The host calls as AscendCL rows on their threads; a call that queued a task starts its flow arrow."""
    events: list[dict] = []
    for i, (api, thread, start, end) in enumerate(calls):
        no = threads[int(thread)]
        conn = connection.get(i, 0)
        ts, dur = _span(start, end, origin_us)
        events.append({"name": f"AscendCL@{api}", "pid": cann, "tid": no, "ts": ts, "dur": dur, "ph": "X",
                       "args": {"Thread Id": int(thread), "Mode": "ACL_RTS", "level": "acl", "id": api,
                                "item_id": "", "connection_id": conn}})
        if conn:
            events.append({"name": f"{FLOW}{conn}", "pid": cann, "tid": no, "ph": "s", "cat": FLOW, "id": str(conn),
                           "ts": _us(start, origin_us)})
    return events


def write(path, records: np.ndarray, calls, ends) -> None:
    """`build(records, calls, ends)` as a JSON file, renamed into place only once complete."""
    with atomic_write(path, "w") as f:
        json.dump(build(records, calls, ends), f)
