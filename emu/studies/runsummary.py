"""What a script did under the emulator: calls by API, bytes by route, simulated time, the trace."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .. import routes as R
from ..models.machine import KERNEL
from ..models.aicore import kernel_label
from .common import covered, format_table, human_bytes


# the message the facade gives for a pyACL function it lacks: "acl.op.create_attr is not emulated by acl-emu"
_NOT_EMULATED = re.compile(r"\b(acl(?:\.\w+)+) is not emulated by acl-emu")


def not_emulated_api(error: str | None) -> str | None:
    """The pyACL function named by a "... is not emulated by acl-emu" error line, else None."""
    m = _NOT_EMULATED.search(error or "")
    return m.group(1) if m else None


def _routes(product, bytes_by_route: dict) -> dict:
    """routes (emu.routes, by the links the copies and fills crossed: the records' route of each, "memset"
    for fills; a pageable or small copy counts as its link's route, which is all the totals tell),
    unvalidated_routes, routes_note."""
    used = {"memset" if k == "memset" else R.of_copy(k) for k in bytes_by_route if k != "h2h"}
    used = [r for r in R.ROUTES if r in used]
    return {"routes": used, "unvalidated_routes": R.unvalidated(product, used), "routes_note": R.note(product, used)}


def run_result(rt, out: Path | None, script: str | None, exit_code: int = 0, error: str | None = None,
               msprof: str | None = None) -> dict:
    """The finished run of a script or program as `summary` gives it, once the sanitizer (if on) has seen the
    work still queued run: plus its findings ("sanitizer") and, with `msprof`, the path of the run written in
    the msprof timeline layout ("msprof")."""
    san = rt.sanitizer
    if san is not None:
        san.finish()  # the work still queued runs: every copy's source is checked
    result = summary(rt, out, script=script, exit_code=exit_code, error=error)
    if san is not None:
        result["sanitizer"] = san.to_dict()
    if msprof:  # the run in the msprof timeline layout too (MindStudio Insight)
        from .replay import write_msprof_runtime
        try:
            result["msprof"] = str(write_msprof_runtime(rt, msprof))
        except OSError as e:
            result["msprof"] = None
            result["not_written"].append(f"the msprof timeline {msprof}: {_os_error(e, Path(msprof))}")
    return result


def _os_error(e: OSError, path: Path) -> str:
    """An OSError writing `path` as its reason, and the file it names when that is not in `path`'s folder."""
    other = e.filename is not None and Path(e.filename).parent != path.parent
    return f"{e.strerror or e}" + (f" ({e.filename})" if other else "")


def summary(rt, out: Path | None, script: str | None = None, exit_code: int = 0,
            error: str | None = None) -> dict:
    """The run as a dict; script, exit_code and error (the line of the exception or SystemExit that
    ended the script, None when it ran to its end) say how the script ended. A trace that cannot be written
    (a full disk, a folder gone) is a line of "not_written" ("the trace PATH: the reason"), never an error."""
    totals = rt.record_totals()  # running counters: right whatever the records keep
    records = rt.records()
    device_end = totals["end"]
    result = {
        "product": rt.product.name,
        "simulated_ms": max(rt.clock, device_end) * 1e3,
        "host_ms": rt.clock * 1e3,
        "device_busy_ms": device_busy_ms(records, totals["tasks"]),
        "device_end_ms": device_end * 1e3,
        "host_time": rt.host_time if rt.host_time == "calls" or rt.host_time_scale == 1 else
                     f"wall x{rt.host_time_scale:g}",
        "calls": dict(sorted(rt.calls.items(), key=lambda kv: (-kv[1], kv[0]))),
        "bytes_by_route": totals["bytes_by_route"],
        "tasks_by_route": totals["tasks_by_route"],
        **_routes(rt.product, totals["bytes_by_route"]),
        "device_tasks": totals["tasks"],
        "kernels": kernels(records, totals["tasks"]),
        "trace": None,
        "script": script,
        "exit_code": exit_code,
        "error": error,
        "not_emulated": not_emulated_api(error),
        "not_written": [],
    }
    if out is not None:
        path = out / "trace.json"
        try:
            out.mkdir(parents=True, exist_ok=True)
            rt.write_trace(path)
            result["trace"] = str(path)
        except OSError as e:
            result["not_written"].append(f"the trace {path}: {_os_error(e, path)}")
    return result


def device_busy_ms(records, tasks: int) -> float | None:
    """The time at least one device task was running, in ms: the union of the records' [start, end] spans. It
    does not count the host's time between the tasks, so `--host-time wall` (this machine's load) leaves it as it
    is. None when the records kept are fewer than the tasks run (`configure(records=N)`)."""
    if len(records) < tasks:
        return None
    return covered(records["start"], records["end"]) * 1e3


# How a kernel's time was found, when its label does not say: a launch of device code whose blocks did not run
# (timing-only or freed memory: it took no time), and a kernel of another kind (a Python kernel's duration_us or
# cost through the roofline, a model's declared time).
NOT_RUN = "not found: its blocks did not run (timing-only or freed memory)"
GIVEN = "given by its launch (duration_us or a cost) or its model's declaration"


def kernels(records, tasks: int) -> list[dict] | None:
    """Each distinct kernel the run's device tasks ran, by name and blockDim, the one with the most time first:
    name, block_dim (None for a kernel without one: a Python kernel, a model), launches, total_us, mean_us (its
    simulated time, total and per launch) and how (how its time was found, from the task's label: "declared in
    kernels.toml: ...", "estimated: ...-bound, ..."; several, by their launches, when its launches' differ). None
    when the records kept (`records`, rt.records()) are fewer than the tasks run (`configure(records=N)`), as for
    device_busy_ms."""
    if len(records) < tasks:
        return None
    mine = records[records["kind"] == KERNEL]
    ran = zip(mine["api"].tolist(), (mine["end"] - mine["start"]).tolist())
    by: dict[tuple, dict] = {}
    for label, seconds in ran:
        name, block_dim, how = kernel_label(label)
        k = by.setdefault((name, block_dim), {"name": name, "block_dim": block_dim, "launches": 0, "total_us": 0.0,
                                              "hows": {}})
        k["launches"] += 1
        k["total_us"] += seconds * 1e6
        how = how or (GIVEN if block_dim is None else NOT_RUN)
        k["hows"][how] = k["hows"].get(how, 0) + 1
    out = []
    for k in by.values():
        hows = k.pop("hows")
        k["mean_us"] = k["total_us"] / k["launches"]
        k["how"] = next(iter(hows)) if len(hows) == 1 else "; ".join(
            f"{n} launches {how}" for how, n in sorted(hows.items(), key=lambda kv: -kv[1]))
        out.append(k)
    return sorted(out, key=lambda k: (-k["total_us"], k["name"], k["block_dim"] or 0))


def kernel_lines(result: dict) -> list[str]:
    """The kernels the run launched as a table (none when it launched none), or the line that says they are not
    known."""
    ks = result.get("kernels", [])
    if ks is None:
        return ["[acl-emu] kernels: not known (the run kept only some of its task records)"]
    if not ks:
        return []
    rows = [{"kernel": k["name"], "blockDim": "-" if k["block_dim"] is None else k["block_dim"],
             "launches": k["launches"], "total": f"{k['total_us']:.3f}", "mean": f"{k['mean_us']:.3f}",
             "how": k["how"]} for k in ks]
    return [format_table(rows, [("kernel", "kernel"), ("blockDim", "blockDim"), ("launches", "launches"),
                                ("total", "total us"), ("mean", "mean us"), ("how", "time found")])]


def time_lines(result: dict) -> list[str]:
    """The device time and the host time, each with what to read it for."""
    busy = result.get("device_busy_ms")
    device = ("device busy: not known (the run kept only some of its task records)" if busy is None else
              f"device busy {busy:.3f} ms: the time its copies, fills and kernels ran on this product (their "
              f"union); read it for what the device work costs: the host's speed hardly moves it")
    wall = str(result["host_time"]).startswith("wall")
    host = (f"host thread {result['host_ms']:.3f} ms, end to end {result['simulated_ms']:.3f} ms: "
            + ("with --host-time wall they include this machine's own time between calls (numpy, Python, its "
               "load), so they vary from run to run; read them for the script's shape, and use --host-time calls "
               "for an end-to-end time that repeats" if wall else
               "--host-time calls: the calls' own costs and waits only, the same on every run; read them for the "
               "end-to-end time of the step on this product"))
    return [f"[acl-emu] {device}", f"[acl-emu] {host}"]


def summary_text(result: dict) -> str:
    """The summary's lines, as `acl-emu run` prints them on stderr."""
    lines = [f"[acl-emu] {result['product']}: simulated time {result['simulated_ms']:.3f} ms "
             f"(host thread {result['host_ms']:.3f} ms, host time {result['host_time']}), "
             f"{sum(result['calls'].values())} ACL calls, "
             f"{result['device_tasks']} device tasks", *time_lines(result)]
    calls = [{"api": k, "calls": v} for k, v in result["calls"].items()]
    lines.append(format_table(calls))
    lines += kernel_lines(result)
    if result["bytes_by_route"]:
        routes = [{"route": k, "bytes": human_bytes(v), "tasks": result["tasks_by_route"][k]}
                  for k, v in result["bytes_by_route"].items()]
        lines.append(format_table(routes))
        if result["unvalidated_routes"]:
            lines.append(f"[acl-emu] by the links the copies crossed, {result['routes_note']}")
    if result["trace"]:
        lines.append(f"trace: {result['trace']} (open it in https://ui.perfetto.dev or chrome://tracing)")
    for what in result.get("not_written", ()):
        lines.append(f"[acl-emu] could not write {what}")
    if result.get("not_emulated"):
        lines.append(f"[acl-emu] the script stopped at {result['not_emulated']}, which acl-emu does not emulate (it "
                     f"covers the memory, stream, event and callback APIs, declared models and device code); exit "
                     f"code {result['exit_code']}")
    elif result.get("signal"):  # (a C program's run: `acl-emu run ./prog`)
        lines.append(f"[acl-emu] the program ended by signal {result['signal']} (exit code {result['exit_code']})")
    elif result.get("exit_code"):
        why = f": {result['error']}" if result.get("error") else ""
        who = "the program" if "signal" in result else "the script"
        lines.append(f"[acl-emu] {who} exited with code {result['exit_code']}{why}")
    return "\n".join(lines)


def print_summary(result: dict, as_json: bool = False, stream=None) -> None:
    """The summary as JSON on stdout, or as `summary_text` on `stream` (default stderr)."""
    if as_json:
        print(json.dumps(result, indent=2))
        return
    print(summary_text(result), file=stream or sys.stderr)
