"""Profiles of real runs, read into one neutral form: the device tasks (stream, kind, bytes, direction,
measured start and end) and the host's API calls.

    from emu.studies import profiles
    p = profiles.load("PROF_000001/mindstudio_profiler_output/msprof_20250101000000.json")
    p.tasks[0].kind, p.tasks[0].nbytes, p.calls[0].api

Three formats, each read as its public sources document it (the test data's README, tests/data/README.md,
gives the same list):

msprof timeline, `msprof_*.json` (a JSON array of Chrome trace events, or an object with "traceEvents"):
  documented in Ascend/msprof docs/en/user_guide/profile_data_file_references.md ("msprof_*.json (Timeline
  Report)", "api_statistic", "task_time"), https://gitcode.com/Ascend/msprof, and on
  https://www.hiascend.com/document/detail/en/canncommercial/850/devaids/profiling/atlasprofiling_16_0059.html;
  the writer is Ascend/msprof analysis/csrc/application/timeline (ascend_hardware_assembler.cpp,
  cann_assembler.cpp/.h, json_assembler.cpp, json_constant.h; commit 9ba1ac7be913da2944126672b6808db3860d40a3).
  Device tasks are the complete ("X") events of the "Ascend Hardware" process (or any event whose args carry
  "Task Type" and a stream id): `ts` in microseconds (a number or, as msprof writes it, a string), `dur` in
  microseconds, args "Task Type", "Physic Stream Id" (older exports: "Stream Id"; else the event's tid, which
  msprof sets to the physical stream id), "Task Id", "connection_id"; a copy adds "size(B)" and "operation"
  ("host to device", "device to host", "device to device", "host to host", "addr device to device", "host to
  device ex", "device to host ex", "managed memory", or "other": the MEMCPY_OPERATIONS of
  ascend_hardware_assembler.cpp). The device is the number in the process's "process_labels" ("NPU 3"), else the
  low five bits of a formatted pid (json_assembler.cpp GetFormatPid: (pid << 10) | (index << 5) | device).
  Host calls are the complete events named "AscendCL@<api>" (or "Runtime@<api>" when a file has no AscendCL
  rows) of the "CANN" process, args "Thread Id" and "connection_id"; a call owns the connection ids of the
  lower-level rows nested in it on its thread. Args whose names start with "acl-emu " are acl-emu's own
  (models/msprof.py writes them): a peer copy's ends, a record or wait task's event, a pageable copy.

task_time CSV, `task_time_*.csv`: the columns Device_id, kernel_name, kernel_type, stream_id, task_id,
  task_time(us), task_start(us), task_stop(us) (the same reference page, "task_time"; the header list of
  Ascend/msprof analysis/viewer/training/task_op_viewer.py). It has no copy sizes: a copy there is replayed
  with its measured duration, and listed as such.

MSPTI activity records: MSPTI_ACTIVITY_KIND_MEMCPY (msptiActivityMemcpy: copyKind, bytes, start and end in
  ns, deviceId, streamId, correlationId, isAsync), KERNEL (start, end, ds.deviceId, ds.streamId, correlationId,
  type, name), MEMSET (value, bytes, start, end, deviceId, streamId, correlationId, isAsync) and the API kinds
  (API, ACL_API, RUNTIME_API, NODE_API: name, start, end, pt.threadId, correlationId); the kind and copyKind
  enums of Ascend/mspti csrc/include/mspti_activity.h (https://gitcode.com/Ascend/mspti; also
  docs/en/c_api/context/msptiActivityMemcpy.md). MSPTI hands records to the program through a callback and
  writes no file of its own, so two forms are read: the lines its samples print
  (samples/common/helper_mspti.h, e.g. "[MEMCPY] copyKind: HTOD, bytes: 4096, start: ..., end: ..., deviceId:
  0, streamId: 3, correlationId: 12, isAsync: 1"), and JSON (an array, or one object per line) or CSV of
  records whose keys are the struct's field names ("ds"/"pt" nested or flat), kinds and copyKinds given by
  name or number.

op_summary CSV, `op_summary_*.csv`: the operators with Stream ID, Task Type, Task Start Time(us) and Task
  Duration(us) (the reference page's "op_summary"): device tasks without sizes or host calls. msprof's
  api_statistic and op_statistic CSVs hold totals, no timeline: refused, naming the format and what is read.

A profile directory (PROF_*) is searched for its newest msprof_*.json, else task_time_*.csv, else
op_summary_*.csv. Host calls below AscendCL (a framework's Node@launch, a Runtime call made directly) that no
AscendCL call contains are host calls of their own. Step trace rows (args "Iteration ID") give `Profile.steps`;
`window` cuts a profile to a span of microseconds or of steps. MSPTI copies with isAsync 0 are `blocking`.

Every mistake in a file is one line naming the file, the row (an event's index in the JSON array, a CSV or log
file's line) and the field: `ProfileError`. A task type this module does not know is kept, replayed with its
measured duration, and counted in `Profile.unknown`.
"""
from __future__ import annotations

import bisect
import csv
import functools
import gc
import io
import json
import math
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import files
from ..constants import MemcpyKind

# -- task types ------------------------------------------------------------------------------------------------
# The task types msprof names (hicann/runtime src/runtime/core/src/common/profiling_agent.cc:111-148, the
# runtime's RegisterProfTypeInfo table; the accelerator types of op_summary and of the "Task Type" arg of the
# reference page) and the STARS SQE names device rows may carry instead (SDMA_SQE, PCIE_DMA_SQE, ...), by what a
# replay does with them.
COPY_TYPES = frozenset({"MEMCPY_ASYNC", "MEMCPY", "SDMA", "SDMA_SQE", "PCIE_DMA_SQE", "PCIE_DMA", "ASYNC_MEMCPY",
                        "MEMCPY_ASYNC_WITHOUT_SDMA", "MEMCPY2D", "MEMCPY_2D"})
FILL_TYPES = frozenset({"MEMSET_ASYNC", "MEMSET"})
KERNEL_TYPES = frozenset({"KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_AICPU", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV",
                          "KERNEL_FUSION", "KERNEL_SIMT", "AI_CORE", "AI_VECTOR_CORE", "AI_CPU", "MIX_AIC", "MIX_AIV",
                          "AIV_SQE", "AIC_SQE", "AICPU_SQE", "FFTS_PLUS", "FFTS_PLUS_SQE", "FUSION_KERNEL"})
RECORD_TYPES = frozenset({"EVENT_RECORD", "EVENT_RECORD_SQE", "DAVID_EVENT_RECORD", "IPC_EVENT_RECORD",
                          "CAPTURE_RECORD"})
WAIT_TYPES = frozenset({"EVENT_WAIT", "EVENT_WAIT_SQE", "DAVID_EVENT_WAIT", "STREAM_WAIT_EVENT", "IPC_EVENT_WAIT",
                        "CAPTURE_WAIT"})
# other device tasks msprof names: replayed with their measured duration, not listed as unknown
OTHER_TYPES = frozenset({"EVENT_RESET", "DAVID_EVENT_RESET", "NOTIFY_WAIT", "NOTIFY_RECORD", "NOTIFY_WAIT_SQE",
                         "NOTIFY_RECORD_SQE", "MAINTENANCE", "CREATE_STREAM", "PROFILER_TRACE", "PROFILER_TRACE_EX",
                         "STREAM_SWITCH", "STREAM_ACTIVE", "LABEL_SET", "LABEL_SWITCH", "LABEL_GOTO",
                         "MODEL_EXECUTE", "MODEL_MAINTAINCE", "MODEL_END_GRAPH", "HOSTFUNC_CALLBACK", "BARRIER",
                         "WriteValueTask", "WRITE_VALUE", "WRITE_VALUE_SQE", "CMO", "STARS_COMMON", "PLACE_HOLDER",
                         "PLACE_HOLDER_SQE", "MEM_WRITE_VALUE", "MEM_WAIT_VALUE", "NOP", "REMOTE_EVENT_WAIT",
                         "RDMA_SEND", "RDMA_DB_SEND", "PROFILING_ENABLE", "PROFILING_DISABLE", "COND_SQE",
                         "MODEL_WAIT_COMPLETE"}) | frozenset({
    # control tasks: the typeName each task's init function in the open-source CANN runtime gives it (hicann/runtime
    # src/runtime, e.g. TimeoutSetTaskInitV1: "TASK_TIMEOUT_SET"); no copy, no kernel, a measured duration
    "TASK_TIMEOUT_SET", "MODEL_TO_AICPU", "TSFW_AICPU_MSG_VERSION", "NPU_GET_FLOAT_STATUS", "NPU_CLEAR_FLOAT_STATUS",
    "DEVICE_RINGBUFFER_CONTROL", "STREAM_SWITCH_N", "MEMCPY_ASYNC_SQE_UPDATE_H2D", "DEBUG_REGISTER",
    "DEBUG_UNREGISTER", "DEBUG_REGISTER_FOR_STREAM", "DEBUG_UNREGISTER_FOR_STREAM", "STREAM_LABEL_SWITCH_BY_INDEX",
    "STREAM_LABEL_GOTO", "MODEL_LOAD", "MODEL_UNLOAD", "ACTIVE_AICPU_STREAM", "DATADUMP_LOADINFO", "FLIP",
    "UPDATE_ADDRESS", "OVERFLOW_SWITCH_SET", "STREAM_TAG_SET", "SET_STREAM_MODE", "GET_DEVICE_MSG",
    "ALLOC_DSA_ADDR", "RINGBUFFER_MAINTAIN", "CCU_LAUNCH"})

# "operation" of a MEMCPY_ASYNC row (ascend_hardware_assembler.cpp MEMCPY_OPERATIONS) and MSPTI copyKinds
# (mspti_activity.h msptiActivityMemcpyKind) -> direction; None: the profile does not say
OPERATION_DIRECTIONS = {"host to host": "h2h", "host to device": "h2d", "device to host": "d2h",
                        "device to device": "d2d", "addr device to device": "d2d", "host to device ex": "h2d",
                        "device to host ex": "d2h", "managed memory": None, "other": None}
COPY_KINDS = {0: None, 1: "h2h", 2: "h2d", 3: "d2h", 4: "d2d", 5: None}
COPY_KIND_NAMES = {"UNKNOWN": 0, "HTOH": 1, "HTOD": 2, "DTOH": 3, "DTOD": 4, "DEFAULT": 5}
# msptiActivityKind values (mspti_activity.h)
ACTIVITY_KINDS = {"MARKER": 1, "KERNEL": 2, "API": 3, "HCCL": 4, "MEMORY": 5, "MEMSET": 6, "MEMCPY": 7,
                  "EXTERNAL_CORRELATION": 8, "CORRELATION": 8, "COMMUNICATION": 9, "ACL_API": 10, "NODE_API": 11,
                  "RUNTIME_API": 12, "OVERHEAD": 13}
API_KINDS = frozenset({3, 10, 11, 12})
INVALID_STREAM = 0xFFFFFFFF  # MSPTI_INVALID_STREAM_ID: a copy made through a synchronous API
EXTENSION = "acl-emu "


@functools.lru_cache(maxsize=4096)  # a profile names few task types and kernels, each many times
def kind_of(task_type: str, name: str = "") -> tuple[str, bool]:
    """(what a replay does with a task: "copy", "fill", "kernel", "record", "wait" or "other"; whether the type is
    one this module knows), from its "Task Type" and its name (msprof names a non-kernel task by its host type,
    MEMCPY_ASYNC, EVENT_RECORD..., and may give a device SQE type as the "Task Type"): a kind either names wins
    over "other"."""
    names = [t.strip() for t in (task_type or "", name or "") if t and t.strip()]
    for kind, types in (("copy", COPY_TYPES), ("fill", FILL_TYPES), ("record", RECORD_TYPES), ("wait", WAIT_TYPES),
                        ("kernel", KERNEL_TYPES), ("other", OTHER_TYPES)):
        if any(t in types for t in names):
            return kind, True
    return "other", False


class ProfileError(ValueError):
    """A profile that cannot be read: one line naming the file, the row and the field."""

    def __init__(self, path, row, field_name: str | None, why: str):
        where = f"{path}"
        if row is not None:
            where += f": row {row}"
        if field_name is not None:
            where += f": field '{field_name}'"
        super().__init__(f"{where}: {why}")
        self.path, self.row, self.field = str(path), row, field_name


@dataclass
class DeviceTask:
    """One device task as the profile measured it. Times in seconds on the profile's clock."""

    row: int  # where in the file (an event's index in the JSON array; a CSV or log line)
    name: str
    type: str  # the profile's task type
    kind: str  # "copy", "fill", "kernel", "record", "wait" or "other" (`kind_of`)
    device: int
    stream: int
    start: float
    end: float
    known: bool = True
    task_id: int | None = None
    nbytes: int | None = None  # copies and fills, when the profile says
    direction: str | None = None  # copies: "h2d", "d2h", "d2d" or "h2h", when the profile says
    src: int | None = None  # a copy between two devices: its ends, when the profile says
    dst: int | None = None
    connection: int | None = None  # joins it to the host call that queued it
    event: str | None = None  # record and wait tasks: the event, when the profile says
    memory: str | None = None  # "pageable" when the profile says the copy was
    tasks: int = 1  # DMA tasks a copy stands for (the runtime splits large copies)
    blocking: bool = False  # a copy or memset its API made synchronously (MSPTI isAsync: 0)

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class HostCall:
    """One host API call: its name, host thread and measured start and end (seconds), and the connection ids
    of the device tasks it queued."""

    row: int
    api: str
    thread: int
    start: float
    end: float
    connections: list = field(default_factory=list)
    event: str | None = None
    level: str = "AscendCL"  # the CANN layer of the row ("AscendCL", "Runtime", "Node", ...)
    nbytes: int | None = None  # a copy or memset call's size, where the row's args carry it (`call_size`)
    direction: str | None = None  # and its direction


@dataclass
class Step:
    """One training step (iteration) the profile marks: its id and measured start and end (seconds)."""

    id: int
    start: float
    end: float


@dataclass
class Profile:
    """A profile read: its device tasks (file order), host calls (file order), what the reader had to
    assume (`notes`) and the task types it did not know (type -> count)."""

    path: str
    format: str  # "msprof-json", "task-time-csv", "mspti"
    tasks: list
    calls: list
    notes: list = field(default_factory=list)
    unknown: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)  # the iterations it marks (`Step`), in order

    @property
    def devices(self) -> list[int]:
        return sorted({t.device for t in self.tasks})

    @property
    def streams(self) -> list[tuple[int, int]]:
        return sorted({(t.device, t.stream) for t in self.tasks})


# -- helpers -----------------------------------------------------------------------------------------------------
@contextmanager
def collector_paused():
    """Keep Python's cyclic garbage collector out of a block. Reading and replaying a long profile makes millions
    of objects that live to the end and no reference cycles; each collection the allocations trigger walks them
    all again, about 40% of a 200,000-task replay. Nested blocks leave it to the outermost."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _short(value, limit: int = 60) -> str:
    """repr(value) cut to `limit` characters, so one huge cell cannot flood the one-line error."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value) if not isinstance(value, (dict, list)) else f"{type(value).__name__} of {len(value)} items"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _number(path, row, name: str, value, *, integer: bool = False, minimum: float | None = 0.0):
    """A number from a JSON value or a CSV cell (msprof writes times as strings; its CSVs end some cells with
    a tab)."""
    kind = type(value)
    if kind is str:
        value = _text_number(path, row, name, value, integer)
    elif kind is bool or value is None:
        raise ProfileError(path, row, name, f"expected a number, got {value!r}")
    elif kind is not int and kind is not float and not isinstance(value, (int, float)):
        raise ProfileError(path, row, name, f"expected a number, got {type(value).__name__} {_short(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise ProfileError(path, row, name, f"expected a finite number, got {_short(value)}")
    if minimum is not None and value < minimum:
        raise ProfileError(path, row, name, f"expected a number >= {minimum:g}, got {_short(value)}")
    if integer:
        if value != int(value):
            raise ProfileError(path, row, name, f"expected a whole number, got {value!r}")
        return int(value)
    return float(value)


def _text_number(path, row, name: str, value: str, integer: bool):
    """The int (an integer is asked for and the text is one) or float a text cell holds."""
    text = value.strip()
    if not text:
        raise ProfileError(path, row, name, "empty")
    if len(text) > 400:  # no time, size or id needs this many characters (and int() refuses > 4300 digits)
        raise ProfileError(path, row, name, f"expected a number, got {len(text)} characters")
    try:
        if integer:
            try:
                return int(text)
            except ValueError:
                pass  # "1e3", "4.0": read as a float, whole or not
        return float(text)
    except ValueError:
        raise ProfileError(path, row, name, f"expected a number, got {_short(text)}") from None


def _optional_int(path, row, name: str, value):
    if value is None or (isinstance(value, str) and value.strip() in ("", "N/A")):
        return None
    return _number(path, row, name, value, integer=True)


def _count_unknown(profile: Profile) -> None:
    for t in profile.tasks:
        if not t.known:
            profile.unknown[t.type or t.name] = profile.unknown.get(t.type or t.name, 0) + 1


# -- msprof timeline ---------------------------------------------------------------------------------------------
_NPU = re.compile(r"(?:NPU|Device|device)\s*(\d{1,9})(?!\d)")
_STREAM_KEYS = ("Physic Stream Id", "Stream Id", "stream id", "Stream ID")


def _trace_events(path, data) -> list:
    """The trace events of a timeline given as {"traceEvents": [...]} or as the bare array."""
    if isinstance(data, dict):
        if "traceEvents" not in data:
            raise ProfileError(path, None, "traceEvents", "a JSON object without a traceEvents array is not a "
                                                         "timeline")
        data = data["traceEvents"]
    if not isinstance(data, list):
        raise ProfileError(path, None, "traceEvents", f"expected an array of trace events, got "
                                                      f"{type(data).__name__}")
    return data


def _process_metadata(path, events: list) -> tuple[dict, dict]:
    """({pid: process name}, {pid: process labels}) from the metadata events; every event must be an object."""
    processes: dict = {}
    labels: dict = {}
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise ProfileError(path, i, None, f"expected a trace event (an object), got {type(ev).__name__}")
        if ev.get("ph") == "M":
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            if ev.get("name") == "process_name":
                processes[ev.get("pid")] = str(args.get("name", ""))
            elif ev.get("name") == "process_labels":
                labels[ev.get("pid")] = str(args.get("labels", ""))
    return processes, labels


def _event_args(path, i: int, ev: dict) -> dict:
    """An event's args: missing or null reads as {}; anything else but an object is refused."""
    args = ev.get("args")
    if args is None:
        return {}
    if type(args) is not dict and not isinstance(args, dict):
        raise ProfileError(path, i, "args", f"expected an object, got {type(args).__name__}")
    return args


def _task_stream(path, i: int, ev: dict, args: dict) -> int:
    """A task's stream: the first of _STREAM_KEYS in its args, else its tid."""
    for stream_key in _STREAM_KEYS:
        if stream_key in args:
            return _number(path, i, f"args.{stream_key}", args[stream_key], integer=True)
    if "tid" in ev:
        return _number(path, i, "tid", ev["tid"], integer=True)
    raise ProfileError(path, i, "args.Physic Stream Id", "missing (and no tid)")


def _task_device(path, i: int, ev: dict, args: dict, labels: dict) -> tuple[int, bool]:
    """(device, assumed): from the args, else the process's 'NPU <n>' label, else a formatted pid (its low 5
    bits); with none of them device 0, assumed=True."""
    if "Device Id" in args or "device_id" in args:
        key = "Device Id" if "Device Id" in args else "device_id"
        return _number(path, i, f"args.{key}", args[key], integer=True), False
    m = _NPU.search(labels.get(ev.get("pid"), ""))
    pid = ev.get("pid")
    if m:
        return int(m.group(1)), False
    if isinstance(pid, int) and pid >= 1 << 10:
        return pid & 0x1F, False
    return 0, True


def _copy_details(path, i: int, task: DeviceTask, args: dict) -> None:
    """A copy task's direction, and what acl-emu's own timelines add: ends, pageable memory, task count."""
    op = args.get("operation")
    if op is not None:
        if not isinstance(op, str) or op.strip().lower() not in OPERATION_DIRECTIONS:
            raise ProfileError(path, i, "args.operation", f"{op!r} is not one of "
                                                          f"{sorted(OPERATION_DIRECTIONS)}")
        task.direction = OPERATION_DIRECTIONS[op.strip().lower()]
    if EXTENSION + "src device" in args:
        task.src = _number(path, i, "args.acl-emu src device", args[EXTENSION + "src device"], integer=True)
    if EXTENSION + "dst device" in args:
        task.dst = _number(path, i, "args.acl-emu dst device", args[EXTENSION + "dst device"], integer=True)
    if args.get(EXTENSION + "memory") == "pageable":
        task.memory = "pageable"
    if EXTENSION + "tasks" in args:
        task.tasks = max(1, _number(path, i, "args.acl-emu tasks", args[EXTENSION + "tasks"], integer=True))


def _device_task(path, i: int, ev: dict, name, args: dict, labels: dict) -> tuple[DeviceTask, bool]:
    """(the task of a complete event that is a stream task, whether its device was assumed)."""
    if not isinstance(name, str):
        raise ProfileError(path, i, "name", f"expected a task name, got {name!r}")
    if "ts" not in ev:
        raise ProfileError(path, i, "ts", "missing")
    if "dur" not in ev:
        raise ProfileError(path, i, "dur", "missing")
    start = _number(path, i, "ts", ev["ts"], minimum=None) * 1e-6
    dur = _number(path, i, "dur", ev["dur"]) * 1e-6
    stream = _task_stream(path, i, ev, args)
    device, assumed = _task_device(path, i, ev, args, labels)
    task_type = args.get("Task Type", "")
    if not isinstance(task_type, str):
        raise ProfileError(path, i, "args.Task Type", f"expected a string, got {task_type!r}")
    kind, known = kind_of(task_type, name)
    task = DeviceTask(row=i, name=name, type=task_type or name, kind=kind, device=device, stream=stream,
                      start=start, end=start + dur, known=known,
                      task_id=_optional_int(path, i, "args.Task Id", args.get("Task Id")),
                      connection=_optional_int(path, i, "args.connection_id", args.get("connection_id")) or None)
    if "size(B)" in args:
        task.nbytes = _number(path, i, "args.size(B)", args["size(B)"], integer=True)
    if kind == "copy":
        _copy_details(path, i, task, args)
    for key in (EXTENSION + "event", "event_id", "Event Id"):
        if key in args:
            task.event = str(args[key])
            break
    return task, assumed


def read_msprof_json(path, data) -> Profile:
    """The device tasks and host calls of an msprof timeline (already parsed JSON)."""
    data = _trace_events(path, data)
    processes, labels = _process_metadata(path, data)
    profile = Profile(str(path), "msprof-json", [], [])
    assumed_device = False
    skipped = 0
    api_rows: list[tuple] = []
    for i, ev in enumerate(data):
        if ev.get("ph") != "X":
            continue
        name = ev.get("name")
        args = _event_args(path, i, ev)
        process = processes.get(ev.get("pid"), "")
        if "Iteration ID" in args and "ts" in ev and "dur" in ev:  # a step trace row: the step it marks
            start = _number(path, i, "ts", ev["ts"], minimum=None) * 1e-6
            profile.steps.append(Step(_number(path, i, "args.Iteration ID", args["Iteration ID"], integer=True),
                                      start, start + _number(path, i, "dur", ev["dur"]) * 1e-6))
        is_task = "Task Type" in args and (process == "Ascend Hardware" or any(k in args for k in _STREAM_KEYS))
        if process == "Ascend Hardware" and not is_task:
            if isinstance(name, str) and kind_of("", name)[1]:
                is_task = True  # a task named by its type (EVENT_RECORD, MEMCPY_ASYNC...) without the arg
            else:
                skipped += 1  # step trace, MC2 turns...: rows of the process that are not stream tasks
                continue
        if isinstance(name, str) and "@" in name and not is_task:
            level, api = name.split("@", 1)
            if level in ("AscendCL", "Runtime", "Api") or process == "CANN":
                api_rows.append((i, level, api, ev, args))
            continue
        if not is_task:
            continue
        task, assumed = _device_task(path, i, ev, name, args, labels)
        assumed_device = assumed_device or assumed
        profile.tasks.append(task)
    profile.calls = _host_calls(path, api_rows)
    _finish_msprof(profile, path, skipped, assumed_device)
    return profile


def _finish_msprof(profile: Profile, path, skipped: int, assumed_device: bool) -> None:
    """The notes on what was left out or assumed; a timeline without device tasks is refused."""
    if skipped:
        profile.notes.append(f"{skipped} rows of the Ascend Hardware process have no 'Task Type' (step trace, "
                             f"fused-operator turns): left out")
    if assumed_device:
        profile.notes.append("some Ascend Hardware rows name no device (no 'NPU <n>' process label, no formatted "
                             "pid): taken as device 0")
    if not profile.tasks:
        raise ProfileError(path, None, None, "no device tasks: no complete event of an 'Ascend Hardware' process "
                                             "and none with 'Task Type' and a stream id")
    _count_unknown(profile)


# The args a host call's row may carry its copy's size and direction under. msprof's reference page documents no
# API arguments ("Thread Id", "Mode", "level", "id", "item_id", "connection_id" only); these are the names a
# profile that does record them is read with (assumed), and acl-emu's own ("acl-emu size", "acl-emu kind").
SIZE_ARGS = ("size(B)", "size", "count", "bytes", "Size", "Count", EXTENSION + "size")
KIND_ARGS = ("kind", "Kind", "operation", "copyKind", EXTENSION + "kind")
_KIND_DIRECTIONS = {MemcpyKind.HOST_TO_HOST: "h2h", MemcpyKind.HOST_TO_DEVICE: "h2d", MemcpyKind.DEVICE_TO_HOST: "d2h",
                    MemcpyKind.DEVICE_TO_DEVICE: "d2d", MemcpyKind.HOST_TO_BUF_TO_DEVICE: "h2d",
                    MemcpyKind.INNER_DEVICE_TO_DEVICE: "d2d", MemcpyKind.INTER_DEVICE_TO_DEVICE: "d2d"}
# a kind arg -> direction: an aclrtMemcpyKind by name (ACL_MEMCPY_HOST_TO_DEVICE) or number, an MSPTI copyKind name
CALL_DIRECTIONS = {**{f"ACL_MEMCPY_{k.name}": d for k, d in _KIND_DIRECTIONS.items()},
                   **{str(k.value): d for k, d in _KIND_DIRECTIONS.items()},
                   **{name: COPY_KINDS[v] for name, v in COPY_KIND_NAMES.items() if COPY_KINDS[v]},
                   "h2h": "h2h", "h2d": "h2d", "d2h": "d2h", "d2d": "d2d"}


def call_size(path, i: int, args: dict) -> tuple[int | None, str | None]:
    """(bytes, direction) a host call's row gives its copy in its args (SIZE_ARGS, KIND_ARGS: an aclrtMemcpyKind
    by name or number, an msprof "operation", an MSPTI copyKind), else None for what it does not say."""
    nbytes = direction = None
    for key in SIZE_ARGS:
        if key in args:
            nbytes = _number(path, i, f"args.{key}", args[key], integer=True)
            break
    for key in KIND_ARGS:
        if key in args:
            text = str(args[key]).strip()
            direction = CALL_DIRECTIONS.get(text) or OPERATION_DIRECTIONS.get(text.lower())
            break
    return nbytes, direction


def _host_calls(path, rows: list[tuple]) -> list[HostCall]:
    """The host calls of the CANN rows: AscendCL rows when there are any (else Runtime rows, else the rest); a
    lower-level row nested in a call on its thread gives the call its connection id (and the size its args carry
    when the call's own args have none). A lower-level row outside every such call (a framework's Node@launch,
    a runtime call made directly) is a host call of its own, holding the rows nested in it."""
    if not rows:
        return []
    levels = {level for _, level, _, _, _ in rows}
    top = "AscendCL" if "AscendCL" in levels else "Runtime" if "Runtime" in levels else None
    calls: list[HostCall] = []
    nested: list[HostCall] = []
    for i, level, api, ev, args in rows:
        for key in ("ts", "dur"):
            if key not in ev:
                raise ProfileError(path, i, key, "missing")
        start = _number(path, i, "ts", ev["ts"], minimum=None) * 1e-6
        end = start + _number(path, i, "dur", ev["dur"]) * 1e-6
        thread = _number(path, i, "args.Thread Id", args.get("Thread Id", ev.get("tid", 0)), integer=True)
        conn = _optional_int(path, i, "args.connection_id", args.get("connection_id"))
        event = next((str(args[k]) for k in ("event_id", EXTENSION + "event") if k in args), None)
        call = HostCall(i, api, thread, start, end, [conn] if conn else [], event, level, *call_size(path, i, args))
        (calls if top is None or level == top else nested).append(call)
    calls += _nest(calls, nested)
    calls.sort(key=lambda c: c.row)
    return calls


def _nest(calls: list[HostCall], nested: list[HostCall]) -> list[HostCall]:
    """Give each call the connection ids (and a size it lacks) of the lower-level rows nested in it: the latest
    call of the row's thread that started by the row's start, if it ends after the row does. The rows nested in
    no call become calls themselves, the outermost first (a row inside one of them nests in it); returns those.
    Each thread's calls are sorted, and their starts listed, once a round."""
    orphans: list[HostCall] = []
    outer = calls
    while nested:
        by_thread: dict[int, list[HostCall]] = {}
        for c in outer:
            by_thread.setdefault(c.thread, []).append(c)
        starts = {}
        for thread, cs in by_thread.items():
            cs.sort(key=lambda c: c.start)
            starts[thread] = [c.start for c in cs]
        left = []
        for row in nested:
            cs = by_thread.get(row.thread, [])
            j = bisect.bisect_right(starts.get(row.thread, []), row.start) - 1
            if j >= 0 and cs[j].end >= row.end - 1e-12:
                _absorb(cs[j], row)
            else:
                left.append(row)
        outer = _outermost(left)
        orphans += outer
        chosen = {id(o) for o in outer}
        nested = [r for r in left if id(r) not in chosen]
    return orphans


def _absorb(call: HostCall, row: HostCall) -> None:
    for conn in row.connections:
        if conn not in call.connections:
            call.connections.append(conn)
    if call.nbytes is None and row.nbytes is not None:
        call.nbytes = row.nbytes
    if call.direction is None and row.direction is not None:
        call.direction = row.direction


def _outermost(rows: list[HostCall]) -> list[HostCall]:
    """The rows no other row of their thread contains (by start, the longest first)."""
    out: list[HostCall] = []
    last: dict[int, HostCall] = {}
    for r in sorted(rows, key=lambda r: (r.thread, r.start, -r.end)):
        o = last.get(r.thread)
        if o is None or r.end > o.end + 1e-12:
            out.append(r)
            last[r.thread] = r
    return out


# -- task_time CSV -----------------------------------------------------------------------------------------------
TASK_TIME_COLUMNS = ("Device_id", "kernel_name", "kernel_type", "stream_id", "task_id", "task_time(us)",
                     "task_start(us)", "task_stop(us)")


def _csv_rows(path, text: str):
    """(header, rows): a CSV's column names and an iterator of (line, record); a row the csv module refuses (a
    field over its 128 KiB limit, ...) is a ProfileError naming its line."""
    reader = csv.DictReader(io.StringIO(text))
    try:
        fieldnames = reader.fieldnames or []
    except csv.Error as e:
        raise ProfileError(path, reader.reader.line_num or 1, None, f"not CSV: {e}") from None

    def rows():
        line = 1
        while True:
            try:
                rec = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                raise ProfileError(path, reader.reader.line_num, None, f"not CSV: {e}") from None
            line += 1
            yield line, rec

    return fieldnames, rows()


def read_task_time(path, text: str) -> Profile:
    fieldnames, rows = _csv_rows(path, text)
    header = {(h or "").strip().lower(): h for h in fieldnames}
    for need in ("kernel_type", "stream_id", "task_start(us)"):
        if need not in header:
            raise ProfileError(path, 1, need, f"missing column (a task_time CSV has {', '.join(TASK_TIME_COLUMNS)})")
    if "task_stop(us)" not in header and "task_time(us)" not in header:
        raise ProfileError(path, 1, "task_stop(us)", "missing column (and no task_time(us))")
    profile = Profile(str(path), "task-time-csv", [], [])
    no_size = 0
    for line, rec in rows:
        def cell(name):
            key = header.get(name.lower())
            return None if key is None else rec.get(key)

        ktype = (cell("kernel_type") or "").strip()
        name = (cell("kernel_name") or "").strip()
        start = _number(path, line, "task_start(us)", cell("task_start(us)"), minimum=None) * 1e-6
        if cell("task_stop(us)") not in (None, ""):
            end = _number(path, line, "task_stop(us)", cell("task_stop(us)"), minimum=None) * 1e-6
        else:
            end = start + _number(path, line, "task_time(us)", cell("task_time(us)")) * 1e-6
        if end < start:
            raise ProfileError(path, line, "task_stop(us)", "ends before task_start(us)")
        device = _optional_int(path, line, "Device_id", cell("Device_id")) or 0
        kind, known = kind_of(ktype, name)
        t = DeviceTask(row=line, name=name if name and name != "N/A" else ktype, type=ktype, kind=kind, device=device,
                       stream=_number(path, line, "stream_id", cell("stream_id"), integer=True), start=start, end=end,
                       known=known, task_id=_optional_int(path, line, "task_id", cell("task_id")))
        if kind == "copy":
            no_size += 1
        profile.tasks.append(t)
    if not profile.tasks:
        raise ProfileError(path, None, None, "no task rows")
    if no_size:
        profile.notes.append(f"{no_size} copies have no size (a task_time CSV has no size column): replayed with "
                             f"their measured duration")
    _count_unknown(profile)
    return profile


# -- op_summary CSV ----------------------------------------------------------------------------------------------
OP_SUMMARY_COLUMNS = ("Device_id", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type", "Task Start Time(us)",
                      "Task Duration(us)")
SUPPORTED = ("msprof_*.json (timeline), task_time_*.csv, op_summary_*.csv, MSPTI records (the samples' printed "
             "lines, JSON, JSON lines or CSV), or a PROF_* directory")


def read_op_summary(path, text: str) -> Profile:
    """An op_summary CSV (msprof's per-operator summary; the columns of OP_SUMMARY_COLUMNS, documented on the
    reference page's "op_summary"): each row a device task with its stream, start and duration. It has no copy
    sizes and no host calls."""
    fieldnames, rows = _csv_rows(path, text)
    header = {(h or "").strip().lower(): h for h in fieldnames}
    for need in ("Stream ID", "Task Start Time(us)", "Task Duration(us)"):
        if need.lower() not in header:
            raise ProfileError(path, 1, need, f"missing column (an op_summary CSV has {', '.join(OP_SUMMARY_COLUMNS)})")
    profile = Profile(str(path), "op-summary-csv", [], [])
    for line, rec in rows:
        def cell(name):
            key = header.get(name.lower())
            return None if key is None else rec.get(key)

        ttype = (cell("Task Type") or "").strip()
        name = (cell("Op Name") or "").strip() or (cell("OP Type") or "").strip() or ttype
        start = _number(path, line, "Task Start Time(us)", cell("Task Start Time(us)"), minimum=None) * 1e-6
        end = start + _number(path, line, "Task Duration(us)", cell("Task Duration(us)")) * 1e-6
        kind, known = kind_of(ttype, name)
        profile.tasks.append(DeviceTask(row=line, name=name, type=ttype or name, kind=kind,
                                        device=_optional_int(path, line, "Device_id", cell("Device_id")) or 0,
                                        stream=_number(path, line, "Stream ID", cell("Stream ID"), integer=True),
                                        start=start, end=end, known=known,
                                        task_id=_optional_int(path, line, "Task ID", cell("Task ID"))))
    if not profile.tasks:
        raise ProfileError(path, None, None, "no operator rows")
    profile.notes.append("an op_summary CSV lists the operators a step ran (no copy sizes, no host calls): they are "
                         "replayed with their measured durations")
    _count_unknown(profile)
    return profile


def _unsupported_csv(path, first: str) -> ProfileError:
    """The error for a CSV replay does not read: the format it recognised (msprof's other summaries by their
    columns), and what is supported."""
    if "api name" in first and "count" in first:
        what = ("an api_statistic CSV (msprof's per-API totals: Level, API Name, Time(us), Count, Avg(us), ...): "
                "it has no timeline to replay")
    elif "op type" in first and ("count" in first or "total time(us)" in first):
        what = "an op_statistic CSV (msprof's per-operator totals): it has no timeline to replay"
    else:
        cols = ", ".join(c.strip() for c in first.split(",")[:6])
        what = f"a CSV whose columns ({cols}, ...) are none of the formats replay reads"
    return ProfileError(path, 1, None, f"{what}; replay reads {SUPPORTED} (the msprof_*.json of the same "
                                       f"mindstudio_profiler_output folder has the timeline)")


# -- MSPTI -------------------------------------------------------------------------------------------------------
_LOG_LINE = re.compile(r"^\s*\[(\w+)\]\s*(.*)$")
_LOG_FIELD = re.compile(r"(?:^|,\s*)([A-Za-z]+):\s*")


def _log_fields(body: str) -> dict:
    """'copyKind: HTOD, bytes: 4096, ...' -> {"copyKind": "HTOD", "bytes": "4096", ...}."""
    marks = list(_LOG_FIELD.finditer(body))
    out = {}
    for j, m in enumerate(marks):
        end = marks[j + 1].start() if j + 1 < len(marks) else len(body)
        out[m.group(1)] = body[m.end():end].strip()
    return out


def _activity_kind(path, row, value) -> int | None:
    if isinstance(value, str):
        v = value.strip().upper()
        v = v[len("MSPTI_ACTIVITY_KIND_"):] if v.startswith("MSPTI_ACTIVITY_KIND_") else v
        if re.fullmatch(r"\d{1,18}", v):
            return int(v)
        if v not in ACTIVITY_KINDS:
            return None
        return ACTIVITY_KINDS[v]
    return _number(path, row, "kind", value, integer=True)


def _copy_kind(path, row, value) -> str | None:
    if isinstance(value, str):
        v = value.strip().upper()
        v = v[len("MSPTI_ACTIVITY_MEMCPY_KIND_"):] if v.startswith("MSPTI_ACTIVITY_MEMCPY_KIND_") else v
        if re.fullmatch(r"\d{1,18}", v):
            value = int(v)
        elif v in COPY_KIND_NAMES:
            value = COPY_KIND_NAMES[v]
        else:
            raise ProfileError(path, row, "copyKind", f"{_short(value)} is not one of {sorted(COPY_KIND_NAMES)}")
    value = _number(path, row, "copyKind", value, integer=True)
    if value not in COPY_KINDS:
        raise ProfileError(path, row, "copyKind", f"{value} is not a msptiActivityMemcpyKind (0..5)")
    return COPY_KINDS[value]


def _flat(record: dict) -> dict:
    """A record with its nested "ds" / "pt" / "objectId" ids flattened."""
    out = dict(record)
    for key in ("ds", "pt"):
        if isinstance(record.get(key), dict):
            out.update(record[key])
    return out


def _mspti_records(path, records: list[tuple[int, dict]]) -> Profile:
    profile = Profile(str(path), "mspti", [], [])
    for row, rec in records:
        rec = _flat(rec)
        if "kind" not in rec:
            raise ProfileError(path, row, "kind", "missing (the msptiActivityKind of the record)")
        kind = _activity_kind(path, row, rec["kind"])
        if kind not in (2, 6, 7) and kind not in API_KINDS:
            continue  # markers, HCCL, memory, correlation, overhead: nothing a replay uses
        start, end = _need(path, row, rec, "start") * 1e-9, _need(path, row, rec, "end") * 1e-9
        if end < start:
            raise ProfileError(path, row, "end", "before start")
        corr = _optional_int(path, row, "correlationId", rec.get("correlationId")) or None
        if kind in API_KINDS:
            thread = _optional_int(path, row, "threadId", rec.get("threadId")) or 0
            profile.calls.append(HostCall(row, str(rec.get("name") or "api"), thread, start, end,
                                          [corr] if corr else []))
            continue
        profile.tasks.append(_mspti_task(path, row, rec, kind, start, end, corr))
    if not profile.tasks:
        raise ProfileError(path, None, None, "no MEMCPY, MEMSET or KERNEL activity records")
    if any(t.stream == INVALID_STREAM for t in profile.tasks):
        profile.notes.append("copies with streamId MSPTI_INVALID_STREAM_ID (synchronous APIs) run on a stream of "
                             "their own")
    blocking = sum(t.blocking for t in profile.tasks)
    if blocking:
        profile.notes.append(f"{blocking} copies or memsets are synchronous (isAsync: 0): their host call waits for "
                             f"them")
    profile.notes.append("MSPTI records have no event record / wait rows: cross-stream dependencies are inferred "
                         "from the timeline")
    _count_unknown(profile)
    return profile


def _need(path, row, rec: dict, name: str, **kw):
    if name not in rec:
        raise ProfileError(path, row, name, "missing")
    return _number(path, row, name, rec[name], **kw)


def _mspti_task(path, row, rec: dict, kind: int, start: float, end: float, corr) -> DeviceTask:
    """The device task of a MEMCPY (7), MEMSET (6) or KERNEL (2) record; a copy or memset with isAsync 0 is
    `blocking`."""
    device = _need(path, row, rec, "deviceId", integer=True)
    stream = _need(path, row, rec, "streamId", integer=True)
    if kind == 7:
        task = DeviceTask(row, "MEMCPY", "MEMCPY", "copy", device, stream, start, end,
                          nbytes=_need(path, row, rec, "bytes", integer=True),
                          direction=_copy_kind(path, row, rec.get("copyKind", 0)), connection=corr)
    elif kind == 6:
        task = DeviceTask(row, "MEMSET", "MEMSET", "fill", device, stream, start, end,
                          nbytes=_need(path, row, rec, "bytes", integer=True), connection=corr)
    else:
        ktype = str(rec.get("type") or "KERNEL")
        k, known = kind_of(ktype)
        return DeviceTask(row, str(rec.get("name") or ktype), ktype, "kernel" if not known else k, device, stream,
                          start, end, known=True, connection=corr)
    if "isAsync" in rec:
        task.blocking = _number(path, row, "isAsync", rec["isAsync"], integer=True) == 0
    return task


def read_mspti_log(path, text: str) -> Profile:
    records = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        m = _LOG_LINE.match(line)
        if not m:
            continue
        kind = m.group(1).upper()
        if kind not in ACTIVITY_KINDS:
            continue
        rec = _log_fields(m.group(2))
        rec["kind"] = kind
        records.append((line_no, rec))
    if not records:
        raise ProfileError(path, None, None, "no MSPTI activity lines ('[MEMCPY] copyKind: ..., bytes: ...'), "
                                             f"and none of the other formats replay reads: {SUPPORTED}")
    return _mspti_records(path, records)


def read_mspti_json(path, items: list[tuple[int, object]]) -> Profile:
    records = []
    for row, rec in items:
        if not isinstance(rec, dict):
            raise ProfileError(path, row, None, f"expected an activity record (an object), got {type(rec).__name__}")
        records.append((row, rec))
    return _mspti_records(path, records)


def read_mspti_csv(path, text: str) -> Profile:
    return _mspti_records(path, [(line, {k.strip(): v for k, v in rec.items() if k})
                                 for line, rec in _csv_rows(path, text)[1]])


# -- a time window ------------------------------------------------------------------------------------------------
def window(profile: Profile, start_us: float | None = None, end_us: float | None = None,
           steps: tuple[int, int] | None = None) -> Profile:
    """The part of a profile whose device tasks and host calls start within a window: [start_us, end_us)
    microseconds since its first event, and/or the span of steps first..last (the Iteration rows of msprof's
    step trace). A long idle before the first kernel, or the warm-up steps, are left out this way."""
    origin = min([t.start for t in profile.tasks] + [c.start for c in profile.calls])
    lo = origin + start_us * 1e-6 if start_us is not None else -math.inf
    hi = origin + end_us * 1e-6 if end_us is not None else math.inf
    said = []
    if start_us is not None or end_us is not None:
        said.append(f"{start_us or 0:g} us after the first event to the end" if end_us is None else
                    f"{start_us or 0:g} to {end_us:g} us after the first event")
    if steps is not None:
        marked = [st for st in profile.steps if steps[0] <= st.id <= steps[1]]
        if not marked:
            have = (f"it marks steps {', '.join(str(st.id) for st in profile.steps[:12])}" if profile.steps else
                    "it has no step marks (the Iteration rows of msprof's step trace); give a --window instead")
            raise ProfileError(profile.path, None, None, f"no step {steps[0]}..{steps[1]} in the profile: {have}")
        lo, hi = max(lo, min(st.start for st in marked)), min(hi, max(st.end for st in marked))
        said.append(f"steps {steps[0]}-{steps[1]}" if steps[1] != steps[0] else f"step {steps[0]}")
    tasks = [t for t in profile.tasks if lo <= t.start < hi]
    calls = [c for c in profile.calls if lo <= c.start < hi]
    if not tasks:
        last = max(t.start for t in profile.tasks)
        raise ProfileError(profile.path, None, None, f"no device task starts in the window ({', '.join(said)}): "
                                                     f"the tasks start from 0 to {(last - origin) * 1e6:.3f} us")
    note = (f"window {', '.join(said)}: {len(tasks)} of {len(profile.tasks)} device tasks and {len(calls)} of "
            f"{len(profile.calls)} host calls kept")
    out = Profile(profile.path, profile.format, tasks, calls, [*profile.notes, note], {},
                  [st for st in profile.steps if lo <= st.start < hi])
    _count_unknown(out)
    return out


# -- dispatch ----------------------------------------------------------------------------------------------------
def _find_in_directory(path: Path) -> Path:
    for pattern in ("msprof_*.json", "task_time_*.csv", "op_summary_*.csv"):
        found = sorted(path.rglob(pattern), key=lambda p: (p.stat().st_mtime, str(p)))
        found = [p for p in found if not p.name.startswith("msprof_tx")]
        if found:
            return found[-1]
    raise ProfileError(path, None, None, "a directory with no msprof_*.json, task_time_*.csv or op_summary_*.csv in it")


# The reader holds the whole file, its text and its parsed form in memory at once: a bound well above any
# profiled step a replay is meant for, and well below what would exhaust a workstation.
MAX_PROFILE_BYTES = files.PROFILE_BYTES


def _read_bounded(path: Path) -> bytes:
    """The bytes of the regular file `path`, at most MAX_PROFILE_BYTES (`emu.files`), else a ProfileError: a
    FIFO, a device (/dev/zero) or a socket never blocks or streams forever."""
    try:
        return files.read_bytes(path, MAX_PROFILE_BYTES, "a profile")
    except files.FileRefused as e:
        hint = " (profile a shorter step)" if e.reason == files.TOO_LARGE else ""
        raise ProfileError(path, None, None, e.why + hint) from None


def load(path) -> Profile:
    """Read a profile: an msprof timeline (msprof_*.json), a task_time CSV, MSPTI records (the samples' printed
    lines, JSON, JSON lines or CSV), or a PROF_* directory holding one of the first two. Any file that cannot
    be read (not a regular file, too large, nested too deep, a number of thousands of digits, a CSV field over
    the csv module's limit, out of memory) is a ProfileError naming it."""
    path = Path(path)
    try:
        if os.path.isdir(path):
            path = _find_in_directory(path)
        with collector_paused():  # (the bytes are _parse's alone: it lets them go once decoded)
            return _parse(path, _read_bounded(path))
    except ProfileError:
        raise
    except RecursionError:
        raise ProfileError(path, None, None, "nested too deeply to read") from None
    except MemoryError:
        raise ProfileError(path, None, None, "out of memory reading it (too large a profile)") from None
    except UnicodeDecodeError as e:
        raise ProfileError(path, None, None, f"not UTF-8 text (byte {e.start})") from None
    except csv.Error as e:
        raise ProfileError(path, None, None, f"not CSV: {e}") from None
    except (ValueError, OverflowError) as e:  # e.g. an integer over int_max_str_digits, a number too large
        raise ProfileError(path, None, None, f"cannot be read: {' '.join(str(e).split())[:200]}") from None


def _json(path, text: str, line: int | None = None):
    """json.loads, with what the json module raises besides JSONDecodeError (nesting deeper than the recursion
    limit, an integer over sys.get_int_max_str_digits()) as a ProfileError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise ProfileError(path, line, None, "not readable JSON: nested too deeply") from None
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion ..."
        raise ProfileError(path, line, None, f"not readable JSON: {str(e).split(';')[0][:200]}") from None


def _parse(path: Path, raw: bytes) -> Profile:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ProfileError(path, None, None, f"not UTF-8 text (byte {e.start})") from None
    del raw
    stripped = text.lstrip()
    if not stripped:
        raise ProfileError(path, None, None, "empty file")
    if stripped[0] in "[{":
        try:
            data = _json(path, text)
        except json.JSONDecodeError as e:
            first = _LOG_LINE.match(stripped[:stripped.find("\n")] if "\n" in stripped else stripped)
            if first and first.group(1).upper() in ACTIVITY_KINDS:  # "[MEMCPY] copyKind: ...": the samples' lines
                return read_mspti_log(path, text)
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if stripped[0] == "{" and len(lines) > 1:  # JSON lines: one record per line
                items = []
                for line_no, line in enumerate(text.splitlines(), start=1):
                    if not line.strip():
                        continue
                    try:
                        items.append((line_no, _json(path, line, line_no)))
                    except json.JSONDecodeError as e2:
                        raise ProfileError(path, line_no, None, f"not JSON: {e2.msg} (column {e2.colno})") from None
                return read_mspti_json(path, items)
            raise ProfileError(path, e.lineno, None, f"not JSON: {e.msg} (line {e.lineno}, column {e.colno})") \
                from None
        if isinstance(data, list) and data and all(isinstance(r, dict) and "kind" in r and "ph" not in r
                                                    for r in data[:50]):
            return read_mspti_json(path, list(enumerate(data)))
        return read_msprof_json(path, data)
    first = stripped.splitlines()[0].lower()
    if "," in first and "task_start(us)" in first:
        return read_task_time(path, text)
    if "," in first and "task start time(us)" in first:
        return read_op_summary(path, text)
    if "," in first and ("copykind" in first or ("kind" in first and "start" in first and "end" in first)):
        return read_mspti_csv(path, text)
    if "," in first and not _LOG_LINE.match(first) and first.count(",") >= 2:
        raise _unsupported_csv(path, first)
    return read_mspti_log(path, text)
