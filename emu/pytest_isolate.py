"""Running one test in a child process, so that a crash fails the test and not the session (`acl_isolate`,
--acl-emu-isolate; `emu.pytest_emulated` calls `run_in_child`).

The child is a fork of the session: it has the session's and modules' fixtures as they are, runs the test's
setup, call and teardown (tearing down only the test's own fixtures: the higher-scoped ones stay the parent's),
and sends each phase's report back as it is made (its outcome, the assertion message, the captured output), one
JSON line each on a pipe. The parent logs them as its own. A child that dies (a segfault, an abort, os._exit)
adds a failed report for the phase it died in, naming the signal or exit code, with the output captured so far
and Python's fault traceback. Then the parent tears down what the next test does not need, as after any test.
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import tempfile

import pytest

SENDER = "acl_emu_isolate_sender"


def run_in_child(item, nextitem) -> None:
    """Run the test `item` in a child process and log its reports (pytest_runtest_protocol's work)."""
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in reports_from_child(item, nextitem):
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def reports_from_child(item, nextitem) -> list:
    """The test's reports: the child's, a failed one for the phase it died in if it died, and the parent's
    teardown if that failed."""
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as fault:
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(item, write_end, fault)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            lines = pipe.read().splitlines()
        _, status = os.waitpid(pid, 0)
        fault.seek(0)
        traceback = fault.read().decode(errors="replace")
    reports = [_report_from_json(item.config, line) for line in lines]
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        reports.append(crash_report(item, reports, status, traceback))
    return _with_parent_teardown(item, nextitem, reports)


def _child(item, write_end: int, fault) -> None:
    """In the child: run the test, sending each report; never returns (os._exit: 0 once all were sent)."""
    code = 1
    try:
        faulthandler.enable(file=fault, all_threads=True)
        with os.fdopen(write_end, "wb") as pipe:
            item.config.pluginmanager.register(Sender(item.config, pipe), SENDER)
            from _pytest.runner import runtestprotocol

            runtestprotocol(item, log=False, nextitem=item.parent)  # the test's own fixtures are torn down
        code = 0
    except BaseException as e:  # noqa: B036 (anything the child raises ends it: the parent reports it)
        fault.write(f"acl-emu: the child process failed: {type(e).__name__}: {e}\n".encode())
        fault.flush()
    finally:
        os._exit(code)


class Sender:
    """In the child: sends each report to the parent as soon as it is made (so a later crash loses none)."""

    def __init__(self, config, pipe):
        self.config = config
        self.pipe = pipe

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self.pipe.write(json.dumps(data, default=repr).encode() + b"\n")
        self.pipe.flush()
        return report


def _report_from_json(config, line: bytes):
    data = json.loads(line)
    for key in ("location", "longrepr"):  # tuples pytest tells apart from the other forms (JSON made them lists)
        if isinstance(data.get(key), list):
            data[key] = tuple(data[key])
    return config.hook.pytest_report_from_serializable(config=config, data=data)


def crash_report(item, reports: list, status: int, traceback: str):
    """The failed report of a child that died: the phase it died in, how, what it had printed, where it was."""
    if not reports:
        when = "setup"
    elif reports[-1].when == "setup" and reports[-1].passed:
        when = "call"
    else:
        when = "teardown"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        how = f"was killed by signal {number} ({_signal_name(number)})"
    else:
        how = f"exited with code {os.WEXITSTATUS(status)}"
    message = (f"acl-emu: the test crashed: its child process (acl_isolate) {how} during {when}; the session "
               f"goes on")
    sections = [(f"Captured {name} {when}", text) for name, text in _captured(item) if text]
    if traceback.strip():
        sections.append(("acl-emu crash traceback", traceback))
    return pytest.TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed", message, when,
                             sections)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def _captured(item) -> list:
    """What the child printed and no report took ((stream, text) pairs): the session's capture, when it has one."""
    capture = item.config.pluginmanager.getplugin("capturemanager")
    if capture is None or not capture.is_globally_capturing():
        return []
    out, err = capture.read_global_capture()
    return [("stdout", out), ("stderr", err)]


def _with_parent_teardown(item, nextitem, reports: list) -> list:
    """Tear down, in the parent, the higher-scoped fixtures the next test does not need (the child left them, as
    they are the parent's); a failure there is the test's teardown report."""
    call = pytest.CallInfo.from_call(lambda: item.session._setupstate.teardown_exact(nextitem), "teardown")
    if call.excinfo is None:
        return reports
    failed = pytest.TestReport.from_item_and_call(item, call)
    return [r for r in reports if not (r.when == "teardown" and r.passed)] + [failed]
