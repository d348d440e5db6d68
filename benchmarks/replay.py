"""How `acl-emu replay`'s time grows with the profile: profiles of N device-task records (default 10,000, 50,000
and 200,000) in each format `replay` reads, each timed with `acl-emu replay FILE` (a subprocess: reading, the
graph, the re-timing, the report and its files) and with the Python API (`replay.replay(path)`, in this
process), in CPU seconds, and the ratios t(50k)/t(10k) and t(200k)/t(10k) against the 5 and 20 a linear cost gives.

Run from the repository root:  python benchmarks/replay.py [--sizes 10000,50000,200000] [--formats msprof,...]
                                                           [--no-cli] [--keep DIR] [--profile N]

The profiles are one made-up training loop (`step`, below), timed as a sequential machine would run it: on each
of DEVICES devices one host thread queues, per iteration, an H2D copy on its input stream and an event record,
a wait and a kernel then an on-device copy and a record on its compute stream, a wait and a D2H copy on its
output stream; every SYNC_EVERY iterations it synchronizes the output stream. Copy sizes cycle through
SIZES. Written as:
  msprof        msprof_*.json: AscendCL rows of the CANN process, each with the Runtime row nested in it that
                carries its connection id, as msprof writes them; the Ascend Hardware rows of each device (records and waits name no event, as msprof writes them: paired by time);
  task-time     task_time_*.csv: the device rows only, no sizes (every copy replayed with its measured time);
  mspti-jsonl   MSPTI activity records, one JSON object a line (no record / wait rows: dependencies inferred);
  mspti-log     the same records as the MSPTI samples print them.
`--profile N` runs cProfile on the Python API at N records of the first format and prints the top entries.
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BASE_US = 1_717_000_000_000.0  # msprof timestamps are wall-clock microseconds
PROCESS = 2_345_678 & 0x3FFFFF
DEVICES = 2
TASKS_PER_ITERATION = 8  # H2D, record, wait, kernel, D2D, record, wait, D2H
SYNC_EVERY = 16
KIB, MIB = 1 << 10, 1 << 20
SIZES = (64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB)
KERNEL_US = (18.0, 42.0, 27.0)
RATES_GBPS = {"h2d": 24.4, "d2h": 23.9, "d2d": 700.0}
OPERATIONS = {"h2d": "host to device", "d2h": "device to host", "d2d": "device to device"}
COPY_KINDS = {"h2d": "HTOD", "d2h": "DTOH", "d2d": "DTOD"}
RUNTIME_APIS = {"aclrtMemcpyAsync": "MemcpyAsync", "aclrtRecordEvent": "EventRecord",
                "aclrtStreamWaitEvent": "StreamWaitEvent", "aclrtLaunchKernel": "KernelLaunch"}
FORMATS = ("msprof", "task-time", "mspti-jsonl", "mspti-log")


class _Timeline:
    """The sequential machine the made-up loop is timed on: a clock per stream and per host thread."""

    def __init__(self):
        self.stream_free: dict[tuple[int, int], float] = {}
        self.calls: list[tuple] = []  # (api, thread, start, dur, conn)
        self.tasks: list[tuple] = []  # (conn, device, stream, name, type, start, dur, nbytes, direction)
        self.conn = 0

    def call(self, host: list, thread: int, api: str, dur: float) -> tuple[float, int]:
        """A host call of `dur` us after a 1.5 us gap: (when it returned, its connection id)."""
        self.conn += 1
        start = host[0] + 1.5
        self.calls.append((api, thread, start, dur, self.conn))
        host[0] = start + dur
        return host[0], self.conn

    def task(self, conn, device, stream, name, ttype, ready, dur, nbytes=None, direction=None) -> float:
        """A device task that starts once its stream is free and `ready` has passed: its end."""
        start = max(ready, self.stream_free.get((device, stream), 0.0)) + 0.3
        self.tasks.append((conn, device, stream, name, ttype, start, dur, nbytes, direction))
        self.stream_free[(device, stream)] = start + dur
        return start + dur


def _copy_us(nbytes: int, direction: str) -> float:
    return round(2.0 + nbytes / (RATES_GBPS[direction] * 1e3), 3)


def _hand_over(tl: _Timeline, host: list, th: int, device: int, src: int, dst: int) -> None:
    """An event recorded on stream `src` and waited for on stream `dst` (its wait lasts until the record ends)."""
    ret, conn = tl.call(host, th, "aclrtRecordEvent", 3.0)
    recorded = tl.task(conn, device, src, "EVENT_RECORD", "EVENT_RECORD", ret, 0.12)
    ret, conn = tl.call(host, th, "aclrtStreamWaitEvent", 2.5)
    wait_start = max(ret, tl.stream_free.get((device, dst), 0.0)) + 0.3
    tl.task(conn, device, dst, "EVENT_WAIT", "EVENT_WAIT", ret, max(recorded + 0.4 - wait_start, 0.1))


def _iteration(tl: _Timeline, host: list, device: int, i: int) -> None:
    """One iteration of the loop on `device` (streams 3d+1 in, 3d+2 compute, 3d+3 out; thread 1000+d)."""
    s_in, s_comp, s_out, th = 3 * device + 1, 3 * device + 2, 3 * device + 3, 1000 + device
    size = SIZES[i % len(SIZES)]
    ret, conn = tl.call(host, th, "aclrtMemcpyAsync", 9.5)
    tl.task(conn, device, s_in, "MEMCPY_ASYNC", "MEMCPY_ASYNC", ret, _copy_us(size, "h2d"), size, "h2d")
    _hand_over(tl, host, th, device, s_in, s_comp)
    ret, conn = tl.call(host, th, "aclrtLaunchKernel", 12.0)
    tl.task(conn, device, s_comp, f"MatMul{i % 7}", "AI_CORE", ret, KERNEL_US[i % len(KERNEL_US)])
    ret, conn = tl.call(host, th, "aclrtMemcpyAsync", 9.0)
    tl.task(conn, device, s_comp, "MEMCPY_ASYNC", "MEMCPY_ASYNC", ret, _copy_us(size, "d2d"), size, "d2d")
    _hand_over(tl, host, th, device, s_comp, s_out)
    ret, conn = tl.call(host, th, "aclrtMemcpyAsync", 9.5)
    tl.task(conn, device, s_out, "MEMCPY_ASYNC", "MEMCPY_ASYNC", ret, _copy_us(size, "d2h"), size, "d2h")
    if i % SYNC_EVERY == SYNC_EVERY - 1:
        start = host[0] + 1.5
        end = max(start + 2.0, tl.stream_free[(device, s_out)] + 3.0)
        tl.calls.append(("aclrtSynchronizeStream", th, start, end - start, 0))
        host[0] = end


def step(records: int) -> _Timeline:
    """The made-up loop with about `records` device tasks, its devices' threads interleaved in time."""
    tl = _Timeline()
    hosts = [[0.0] for _ in range(DEVICES)]
    iterations = max(1, records // (TASKS_PER_ITERATION * DEVICES))
    for i in range(iterations):
        for d in range(DEVICES):
            _iteration(tl, hosts[d], d, i)
    return tl


def _pid(device: int, sort_index: int) -> int:
    return (PROCESS << 10) | (sort_index << 5) | device  # json_assembler.cpp GetFormatPid


def _ts(us: float) -> str:
    return f"{BASE_US + us:.3f}"


def msprof_events(tl: _Timeline) -> list[dict]:
    cann = _pid(31, 7)
    out = [{"name": "process_name", "pid": cann, "tid": 0, "ph": "M", "args": {"name": "CANN"}}]
    for d in range(DEVICES):
        hw = _pid(d, 14)
        out += [{"name": "process_name", "pid": hw, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
                {"name": "process_labels", "pid": hw, "tid": 0, "ph": "M", "args": {"labels": f"NPU {d}"}}]
    for api, th, start, dur, conn in tl.calls:  # the connection id on the runtime row nested in the call
        out.append({"name": f"AscendCL@{api}", "pid": cann, "tid": th, "ts": _ts(start), "dur": round(dur, 3),
                    "ph": "X", "args": {"Thread Id": th, "Mode": "ACL_RTS"}})
        if conn:
            out.append({"name": f"Runtime@{RUNTIME_APIS.get(api, api)}", "pid": cann, "tid": th,
                        "ts": _ts(start + 0.4), "dur": round(dur - 0.8, 3), "ph": "X",
                        "args": {"Thread Id": th, "connection_id": conn}})
    for k, (conn, device, stream, name, ttype, start, dur, nbytes, direction) in enumerate(tl.tasks):
        args = {"Task Type": ttype, "Physic Stream Id": stream, "Task Id": k % 65536, "connection_id": conn}
        if nbytes is not None:
            args.update({"size(B)": nbytes, "operation": OPERATIONS[direction]})
        out.append({"name": name, "pid": _pid(device, 14), "tid": stream, "ts": _ts(start), "dur": round(dur, 3),
                    "ph": "X", "args": args})
    return out


def task_time_lines(tl: _Timeline) -> list[str]:
    lines = ["Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)"]
    for k, (_, device, stream, name, ttype, start, dur, _, _) in enumerate(tl.tasks):
        ktype = "KERNEL_AICORE" if ttype == "AI_CORE" else ttype
        kname = name if ttype == "AI_CORE" else "N/A"
        lines.append(f"{device},{kname},{ktype},{stream},{k % 65536},{dur:.3f},{BASE_US + start:.3f}\t,"
                     f"{BASE_US + start + dur:.3f}\t")
    return lines


def mspti_records(tl: _Timeline) -> list[dict]:
    ns = lambda us: int(round((BASE_US + us) * 1000))  # noqa: E731
    out = [{"kind": "MSPTI_ACTIVITY_KIND_ACL_API", "start": ns(start), "end": ns(start + dur),
            "pt": {"processId": PROCESS, "threadId": th}, "correlationId": conn, "name": api}
           for api, th, start, dur, conn in tl.calls]
    for conn, device, stream, name, ttype, start, dur, nbytes, direction in tl.tasks:
        if nbytes is not None:
            out.append({"kind": "MSPTI_ACTIVITY_KIND_MEMCPY", "copyKind": COPY_KINDS[direction], "bytes": nbytes,
                        "start": ns(start), "end": ns(start + dur), "deviceId": device, "streamId": stream,
                        "correlationId": conn, "isAsync": 1})
        elif ttype == "AI_CORE":
            out.append({"kind": "MSPTI_ACTIVITY_KIND_KERNEL", "start": ns(start), "end": ns(start + dur),
                        "ds": {"deviceId": device, "streamId": stream}, "correlationId": conn,
                        "type": "KERNEL_AICORE", "name": name})
    return out


def mspti_log_lines(tl: _Timeline) -> list[str]:
    lines = []
    for r in mspti_records(tl):
        kind = r["kind"].replace("MSPTI_ACTIVITY_KIND_", "")
        if kind == "ACL_API":
            lines.append(f"[ACL_API] name: {r['name']}, start: {r['start']}, end: {r['end']}, processId: "
                         f"{PROCESS}, threadId: {r['pt']['threadId']}, correlationId: {r['correlationId']}")
        elif kind == "MEMCPY":
            lines.append(f"[MEMCPY] copyKind: {r['copyKind']}, bytes: {r['bytes']}, start: {r['start']}, end: "
                         f"{r['end']}, deviceId: {r['deviceId']}, streamId: {r['streamId']}, correlationId: "
                         f"{r['correlationId']}, isAsync: 1")
        else:
            lines.append(f"[KERNEL] type: {r['type']}, name: {r['name']}, start: {r['start']}, end: {r['end']}, "
                         f"deviceId: {r['ds']['deviceId']}, streamId: {r['ds']['streamId']}, correlationId: "
                         f"{r['correlationId']}")
    return lines


def write(fmt: str, records: int, folder: Path) -> Path:
    """The made-up loop of about `records` device tasks in format `fmt`, written in `folder`."""
    tl = step(records)
    if fmt == "msprof":
        path = folder / f"msprof_{records}.json"
        path.write_text(json.dumps(msprof_events(tl)))
    elif fmt == "task-time":
        path = folder / f"task_time_{records}.csv"
        path.write_text("\n".join(task_time_lines(tl)) + "\n")
    elif fmt == "mspti-jsonl":
        path = folder / f"mspti_{records}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in mspti_records(tl)) + "\n")
    elif fmt == "mspti-log":
        path = folder / f"mspti_{records}.log"
        path.write_text("\n".join(mspti_log_lines(tl)) + "\n")
    else:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return path


def time_cli(path: Path, out: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of `acl-emu replay FILE` in a fresh interpreter, its start-up included (on a
    machine shared with other work the wall time says more about the others than about the replay). The peak
    memory of the largest child so far is `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "emu.cli", "replay", str(path), "--out", str(out)], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def time_api(path: Path) -> float:
    """CPU seconds of `replay.replay(path)` in this process."""
    from emu.studies import replay

    t0 = time.process_time()
    replay.replay(path)
    return time.process_time() - t0


def _ratios(times: list[float], sizes: list[int]) -> str:
    return ", ".join(f"t({n})/t({sizes[0]}) = {t / times[0]:.2f} (linear {n / sizes[0]:g})"
                     for n, t in zip(sizes[1:], times[1:]))


def run(sizes: list[int], formats: list[str], cli: bool, folder: Path) -> None:
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, {platform.node()}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    for fmt in formats:
        api_times, cli_times = [], []
        for n in sizes:
            path = write(fmt, n, folder)
            mb = path.stat().st_size / 1e6
            api_times.append(time_api(path))
            line = f"{fmt:12} {n:>7} records ({mb:6.1f} MB): API {api_times[-1]:6.2f} s CPU"
            if cli:
                cpu, wall = time_cli(path, folder / "out")
                cli_times.append(cpu)
                peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                line += f"; acl-emu replay {cpu:6.2f} s CPU ({wall:6.2f} s wall, peak {peak:5.0f} MB so far)"
            print(line, flush=True)
        print(f"{fmt:12} API: {_ratios(api_times, sizes)}")
        if cli:
            print(f"{fmt:12} CLI (CPU): {_ratios(cli_times, sizes)}")


def profile(fmt: str, n: int, folder: Path, top: int = 25) -> None:
    from emu.studies import replay

    path = write(fmt, n, folder)
    prof = cProfile.Profile()
    prof.runcall(replay.replay, path)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,50000,200000", help="records per profile, comma separated")
    ap.add_argument("--formats", default=",".join(FORMATS), help=f"of {', '.join(FORMATS)}")
    ap.add_argument("--no-cli", action="store_true", help="time the Python API only")
    ap.add_argument("--keep", metavar="DIR", help="write the profiles here (default: a temporary folder)")
    ap.add_argument("--profile", type=int, metavar="N", help="cProfile the API at N records of the first format")
    args = ap.parse_args(argv)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if args.profile:
            profile(formats[0], args.profile, folder)
            return
        run([int(s) for s in args.sizes.split(",")], formats, not args.no_cli, folder)


if __name__ == "__main__":
    main()
