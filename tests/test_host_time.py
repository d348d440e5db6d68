"""Host time between API calls (issue 8 item 5): "wall" counts the host's own time, "calls" only call costs.

Sleeps are short and wall-time bounds loose (lower bounds, or upper bounds measured around the same
code): machines are noisy.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import emu
from emu import constants as C
from emu.cli import main, run_script

SLEEP = 0.05
HOST_TIME_ENV = "ACL_EMU_HOST_TIME"


@pytest.fixture(autouse=True)
def _no_host_time_env(monkeypatch):
    monkeypatch.delenv(HOST_TIME_ENV, raising=False)


def elapsed_across_sleep(r, seconds: float = SLEEP) -> tuple[float, float]:
    """Record an event, sleep, record another on the same stream: (aclrtEventElapsedTime ms, wall s spanned)."""
    r.set_device(0)
    s = r.create_stream()
    a, b = r.create_event(), r.create_event()
    t0 = time.perf_counter()
    r.record_event(a, s)
    time.sleep(seconds)
    r.record_event(b, s)
    wall = time.perf_counter() - t0
    r.synchronize_stream(s)
    return r.event_elapsed_time(a, b), wall


def test_wall_sleep_between_two_record_events_shows_in_elapsed_time():
    r = emu.configure(product="910B", host_time="wall")
    ms, wall = elapsed_across_sleep(r)
    assert ms >= 0.9 * SLEEP * 1e3
    assert ms <= wall * 1e3 + 1.0  # never more than the wall time spanned (plus the calls' own cost)


def test_calls_sleep_between_two_record_events_shows_only_call_costs():
    r = emu.configure(product="910B", host_time="calls")
    ms, _ = elapsed_across_sleep(r)
    assert 0 < ms < 0.1  # one call's overhead (a few microseconds), not the 50 ms sleep


def test_configure_defaults_to_calls():
    r = emu.configure(product="910B")
    assert (r.host_time, r.host_time_scale) == ("calls", 1.0)
    ms, _ = elapsed_across_sleep(r)
    assert ms < 0.1


def test_wall_scale_half_counts_half_the_time_between_calls():
    r = emu.configure(product="910B", host_time="wall", host_time_scale=0.5)
    ms, wall = elapsed_across_sleep(r, 2 * SLEEP)
    assert ms >= 0.5 * 0.9 * 2 * SLEEP * 1e3
    assert ms <= 0.5 * wall * 1e3 + 1.0


def test_wall_scale_zero_is_the_calls_clock():
    calls, _ = elapsed_across_sleep(emu.configure(product="910B", host_time="calls"))
    r = emu.configure(product="910B", host_time="wall", host_time_scale=0)
    zero, _ = elapsed_across_sleep(r)
    assert zero == calls
    assert (r.host_time, r.host_time_scale) == ("wall", 0.0)


def test_first_call_of_a_thread_counts_no_gap():
    r = emu.configure(product="910B", host_time="wall")
    time.sleep(SLEEP)  # before any call: not host time of the emulated process
    r.get_run_mode()
    assert r.clock == pytest.approx(r.call_overhead)


def clock_across_slow_blocking_memcpy(host_time: str, monkeypatch) -> tuple[float, float]:
    """A 64 MiB synchronous H2D copy whose simulation takes >= 0.2 s of wall time, then one more call:
    (the host clock's advance over both, the wall time spent inside the copy)."""
    r = emu.configure(product="910B", functional=False, host_time=host_time)
    r.set_device(0)
    n = 64 << 20
    h, d = r.malloc_host(n), r.malloc(n)
    blocking = r.machine.blocking  # (the model's entry for a blocking copy)
    inside = []

    def slow_blocking(stream, task, submit):  # the emulator computing a long call: wall time inside the API call
        t = time.perf_counter()
        time.sleep(0.2)
        end = blocking(stream, task, submit)
        inside.append(time.perf_counter() - t)
        return end

    monkeypatch.setattr(r.machine, "blocking", slow_blocking)
    c0 = r.clock
    r.memcpy(d, n, h, n, C.ACL_MEMCPY_HOST_TO_DEVICE)
    r.get_run_mode()
    return r.clock - c0, sum(inside)


def test_wall_time_inside_a_blocking_call_is_not_counted(monkeypatch):
    calls, _ = clock_across_slow_blocking_memcpy("calls", monkeypatch)
    wall, inside = clock_across_slow_blocking_memcpy("wall", monkeypatch)
    assert inside >= 0.2
    assert calls > 1e-3  # the copy's simulated time: milliseconds over PCIe
    assert wall == pytest.approx(calls, abs=0.05)  # only the gap between the two calls is added, not 0.2 s
    assert wall >= calls


def test_per_thread_clocks_a_sleep_in_one_thread_does_not_advance_another():
    r = emu.configure(product="910B", host_time="wall")
    a_called, b_done = threading.Event(), threading.Event()
    clocks = {}

    def thread_a():
        r.get_run_mode()
        a_called.set()
        time.sleep(2 * SLEEP)  # thread B makes its calls meanwhile
        b_done.wait(10)
        r.get_run_mode()
        clocks["a"] = r.clock

    def thread_b():
        a_called.wait(10)
        r.get_run_mode()
        r.get_run_mode()
        clocks["b"] = r.clock
        b_done.set()

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert clocks["a"] >= 0.9 * 2 * SLEEP
    assert clocks["b"] < 0.9 * 2 * SLEEP and clocks["b"] < clocks["a"]
    assert r.clock == 0.0  # the main thread made no call


@pytest.mark.parametrize("value,expected", [
    ("wall", ("wall", 1.0)),
    ("calls", ("calls", 1.0)),
    ("wall:0.5", ("wall", 0.5)),
    (" Wall : 0.25 ", ("wall", 0.25)),
    ("wall:0", ("wall", 0.0)),
    ("", ("calls", 1.0)),
])
def test_env_var_sets_configures_default_host_time(value, expected, monkeypatch):
    monkeypatch.setenv(HOST_TIME_ENV, value)
    r = emu.configure(product="910B")
    assert (r.host_time, r.host_time_scale) == expected


def test_env_var_wall_reaches_the_implicitly_created_runtime(monkeypatch):
    monkeypatch.setenv(HOST_TIME_ENV, "wall:0.5")
    monkeypatch.setattr(emu.runtime, "_current", None)
    assert (emu.current().host_time, emu.current().host_time_scale) == ("wall", 0.5)


def test_explicit_arguments_override_the_env_var(monkeypatch):
    monkeypatch.setenv(HOST_TIME_ENV, "wall:0.5")
    r = emu.configure(product="910B", host_time="calls")
    assert (r.host_time, r.host_time_scale) == ("calls", 1.0)
    r = emu.configure(product="910B", host_time="wall")
    assert (r.host_time, r.host_time_scale) == ("wall", 1.0)  # the variable is read only without host_time
    r = emu.configure(product="910B", host_time_scale=0.25)
    assert (r.host_time, r.host_time_scale) == ("wall", 0.25)


@pytest.mark.parametrize("value", ["fast", "wall:-1", "wall:abc", "wall:", "calls:0.5", "wall:nan", "wall:inf",
                                   "wall:0.5:1"])
def test_bad_env_var_is_a_value_error_naming_it(value, monkeypatch):
    monkeypatch.setenv(HOST_TIME_ENV, value)
    with pytest.raises(ValueError, match=HOST_TIME_ENV):
        emu.configure(product="910B")


@pytest.mark.parametrize("kwargs,word", [
    ({"host_time": "fast"}, "host_time"),
    ({"host_time": "wall", "host_time_scale": -0.5}, "host_time_scale"),
    ({"host_time": "wall", "host_time_scale": "2"}, "host_time_scale"),
    ({"host_time": "wall", "host_time_scale": float("nan")}, "host_time_scale"),
])
def test_bad_configure_arguments_are_value_errors_naming_them(kwargs, word):
    with pytest.raises(ValueError, match=word):
        emu.configure(product="910B", **kwargs)


# -- acl-emu run ---------------------------------------------------------------------------------------

SCRIPT = textwrap.dedent(f"""\
    import time
    import acl

    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    start, ret = acl.rt.create_event()
    end, ret = acl.rt.create_event()
    assert acl.rt.record_event(start, stream) == 0
    time.sleep({SLEEP})
    assert acl.rt.record_event(end, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    ms, ret = acl.rt.event_elapsed_time(start, end)
    assert ret == 0
    print("elapsed_ms", ms)
    """)


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "sleepy.py"
    p.write_text(SCRIPT)
    return p


def emu_run(*args, cwd, env_value=None):
    env = dict(os.environ)
    for k in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES", HOST_TIME_ENV):
        env.pop(k, None)
    if env_value is not None:
        env[HOST_TIME_ENV] = env_value
    return subprocess.run([sys.executable, "-m", "emu", "run", "--out", str(cwd / "out"), *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def elapsed_ms(stdout: str) -> float:
    line = next(x for x in stdout.splitlines() if x.startswith("elapsed_ms"))
    return float(line.split()[1])


def test_acl_emu_run_defaults_to_wall(script, tmp_path):
    res = emu_run(str(script), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert elapsed_ms(res.stdout) >= 0.9 * SLEEP * 1e3
    assert "host time wall" in res.stderr


def test_acl_emu_run_host_time_calls_switches_to_the_call_cost_clock(script, tmp_path):
    res = emu_run("--host-time", "calls", str(script), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert elapsed_ms(res.stdout) < 0.1
    assert "host time calls" in res.stderr


def test_acl_emu_run_host_time_scale_reaches_the_clock_and_the_json_summary(script, tmp_path):
    res = emu_run("--json", "--host-time-scale", "0.5", str(script), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    ms = elapsed_ms(res.stderr)  # with --json the script's own output goes to stderr
    assert ms >= 0.5 * 0.9 * SLEEP * 1e3
    summary = json.loads(res.stdout)
    assert summary["host_time"] == "wall x0.5"


def test_acl_emu_run_follows_the_env_var_without_host_time(script, tmp_path):
    res = emu_run(str(script), cwd=tmp_path, env_value="calls")
    assert res.returncode == 0, res.stderr
    assert elapsed_ms(res.stdout) < 0.1


@pytest.mark.parametrize("args,env_value,argument", [
    (["--host-time-scale", "-1"], None, "--host-time-scale"),
    (["--host-time-scale", "abc"], None, "--host-time-scale"),
    (["--host-time", "fast"], None, "--host-time"),
    ([], "fast", HOST_TIME_ENV),
])
def test_acl_emu_run_bad_host_time_exits_2_with_one_line_naming_it(args, env_value, argument, script, tmp_path):
    res = emu_run(*args, str(script), cwd=tmp_path, env_value=env_value)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and argument in lines[0], res.stderr


@pytest.fixture
def restore_acl_modules():
    """run_script installs the emulator as `acl`; put sys.modules back afterwards."""
    saved = {k: v for k, v in sys.modules.items() if k == "acl" or k.startswith("acl.")}
    yield
    for k in [k for k in sys.modules if k == "acl" or k.startswith("acl.")]:
        del sys.modules[k]
    sys.modules.update(saved)


def test_run_script_without_product_carries_the_previous_host_time(script, tmp_path, capsys,
                                                                      restore_acl_modules):
    emu.configure(product="A3", functional=False, host_time="wall", host_time_scale=0.5)
    assert run_script(str(script), [], None, str(tmp_path / "out")) == 0
    r = emu.current()
    assert (r.product.name, r.functional, r.host_time, r.host_time_scale) == ("A3", False, "wall", 0.5)
    ms = elapsed_ms(capsys.readouterr().out)
    assert ms >= 0.5 * 0.9 * SLEEP * 1e3

    assert main(["run", "--host-time", "calls", "--out", str(tmp_path / "out"), str(script)]) == 0
    r = emu.current()
    assert (r.product.name, r.host_time) == ("A3", "calls")
    assert elapsed_ms(capsys.readouterr().out) < 0.1


def test_run_script_with_a_product_defaults_to_wall(script, tmp_path, capsys, restore_acl_modules):
    emu.configure(product="910B", host_time="calls")
    assert main(["run", "--product", "910B", "--out", str(tmp_path / "out"), str(script)]) == 0
    assert emu.current().host_time == "wall"
    assert elapsed_ms(capsys.readouterr().out) >= 0.9 * SLEEP * 1e3
