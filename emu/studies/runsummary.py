"""What a script did under the emulator: calls by API, bytes by route, simulated time, the trace."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from .common import format_table, human_bytes


def summary(rt, out: Path | None) -> dict:
    rec = rt.records()
    routes: Counter = Counter()
    tasks: Counter = Counter()
    for row in rec:
        if row["kind"] in ("copy", "fill"):
            key = row["route"] or "memset"
            routes[key] += int(row["bytes"])
            tasks[key] += int(row["tasks"])
    device_end = float(rec["end"].max()) if len(rec) else 0.0
    result = {
        "product": rt.product.name,
        "simulated_ms": max(rt.clock, device_end) * 1e3,
        "host_ms": rt.clock * 1e3,
        "host_time": rt.host_time if rt.host_time == "calls" or rt.host_time_scale == 1 else
                     f"wall x{rt.host_time_scale:g}",
        "calls": dict(sorted(rt.calls.items(), key=lambda kv: (-kv[1], kv[0]))),
        "bytes_by_route": dict(routes),
        "tasks_by_route": dict(tasks),
        "device_tasks": int(len(rec)),
        "trace": None,
    }
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "trace.json"
        rt.write_trace(path)
        result["trace"] = str(path)
    return result


def print_summary(result: dict, as_json: bool = False, stream=None) -> None:
    stream = stream or sys.stderr
    if as_json:
        print(json.dumps(result, indent=2))
        return
    lines = [f"[acl-emu] {result['product']}: simulated time {result['simulated_ms']:.3f} ms "
             f"(host thread {result['host_ms']:.3f} ms, host time {result['host_time']}), "
             f"{sum(result['calls'].values())} ACL calls, "
             f"{result['device_tasks']} device tasks"]
    calls = [{"api": k, "calls": v} for k, v in result["calls"].items()]
    lines.append(format_table(calls))
    if result["bytes_by_route"]:
        routes = [{"route": k, "bytes": human_bytes(v), "tasks": result["tasks_by_route"][k]}
                  for k, v in result["bytes_by_route"].items()]
        lines.append(format_table(routes))
    if result["trace"]:
        lines.append(f"trace: {result['trace']} (open it in https://ui.perfetto.dev or chrome://tracing)")
    print("\n".join(lines), file=stream)
