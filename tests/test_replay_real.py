"""What real profiles hold that the hand-written step does not (tests/data/make_real_profiles.py, README.md):
synchronous MSPTI copies, record-to-wait gaps of 3.8-4.5 us with no event rows, a long idle and step marks,
copies without sizes, kernels launched outside any AscendCL call, control tasks, and msprof's other CSVs."""
from __future__ import annotations

from pathlib import Path

import pytest

from emu.cli import main
from emu.studies import profiles, replay, replay_report
from emu.studies.args import parse_steps, parse_window
from emu.studies.profiles import ProfileError

DATA = Path(__file__).resolve().parent / "data"
GAPS, IDLE = DATA / "mspti_gaps.log", DATA / "msprof_idle.json"
OP_SUMMARY, API_STATISTIC = DATA / "op_summary_step.csv", DATA / "api_statistic_step.csv"
MIB = 1 << 20


def _call(graph, api):
    return next(c for c in graph.calls if c.api == api)


# -- MSPTI ----------------------------------------------------------------------------------------------------------
def test_mspti_log_whose_first_line_is_a_record_reads_as_lines():
    assert GAPS.read_text().startswith("[ACL_API] name: ")
    p = profiles.load(GAPS)
    assert p.format == "mspti" and len(p.tasks) == 5 and len(p.calls) == 5


def test_mspti_is_async_0_is_retimed_as_a_blocking_copy(tmp_path):
    """aclnnInplaceCopy is no blocking API by name: its copy's isAsync 0 makes it wait for the copy, so on a
    product with a slower D2H the call returns later, by the copy's change."""
    p = profiles.load(GAPS)
    sync = [t for t in p.tasks if t.blocking]
    assert [(t.direction, t.nbytes) for t in sync] == [("d2h", 16 * MIB)]
    assert any("isAsync: 0" in n for n in p.notes)
    g = replay.build_graph(p, None)
    call = _call(g, "aclnnInplaceCopy")
    assert call.blocking == "own" and [g.nodes[j].task for j in call.awaits] == sync
    run = replay.retime(g, "910B")
    copy = call.awaits[0]
    assert run.call_ends[call.index] >= run.ends[copy] - 1e-12
    # the same lines with isAsync 1: the call no longer waits for its copy
    f = tmp_path / "async.log"
    f.write_text(GAPS.read_text().replace("isAsync: 0", "isAsync: 1"))
    g2 = replay.build_graph(profiles.load(f), None)
    assert _call(g2, "aclnnInplaceCopy").blocking == ""


def test_without_event_rows_the_tolerance_is_inferred_so_gaps_of_4_us_are_paired():
    """Record-to-wait gaps of 4.1, 3.8 and 4.5 us: the default 2 us pairs none and the step on the measured
    product is a third short; inferred from the profile (5 us), all three are paired and the step is within 3%."""
    fixed = replay.replay(GAPS, ["910B"], tolerance=replay.TOLERANCE)
    auto = replay.replay(GAPS, ["910B"])
    assert fixed["graph"]["inferred_dependencies"] == [] and fixed["validation"]["step_residual_pct"] < -25
    assert sorted(round(d["gap_us"], 2) for d in auto["graph"]["inferred_dependencies"]) == [3.8, 4.1, 4.5]
    assert auto["tolerance_us"] == pytest.approx(5.0, abs=1e-3) and auto["tolerance_how"].startswith("inferred")
    assert abs(auto["validation"]["step_residual_pct"]) < 3
    assert "tolerance 5.00 us, inferred from the profile" in replay_report.report(auto)
    # a tolerance given on such a profile: the residual is shown with the value the gaps suggest
    assert "suggest --tolerance-us 5.00" in fixed["tolerance_suggestion"]
    assert fixed["tolerance_suggestion"] in replay_report.report(fixed)
    # the hand-written step's gaps (1.4-1.9 us) keep the default's order of magnitude
    tol, how = replay.infer_tolerance(replay.build_graph(profiles.load(DATA / "mspti_step.log"), None))
    assert 2e-6 <= tol <= 2.5e-6 and how.startswith("inferred")


def test_a_profile_with_event_rows_keeps_the_default_tolerance():
    g = replay.build_graph(profiles.load(DATA / "msprof_step.json"), None)
    assert g.tolerance == replay.TOLERANCE and g.tolerance_how.startswith("default")


# -- msprof: idle, steps, sizes, Node@launch, control tasks -------------------------------------------------------
def test_a_window_in_us_or_steps_leave_out_the_long_idle():
    p = profiles.load(IDLE)
    assert [st.id for st in p.steps] == [1, 2]
    whole = replay.replay(IDLE, ["910B"])
    assert whole["measured"]["step_ms"] > 250
    step2 = replay.replay(IDLE, ["910B"], steps=(2, 2))
    assert step2["graph"]["tasks"] == 3 and step2["measured"]["step_ms"] < 5
    assert any(n.startswith("window step 2: 3 of 7 device tasks") for n in step2["notes"])
    first = replay.replay(IDLE, ["910B"], window=(250_000.0, 255_000.0))
    assert first["graph"]["tasks"] == 3 and first["measured"]["step_ms"] < 5
    both = replay.replay(IDLE, ["910B"], window=(250_000.0, None), steps=(1, 2))
    assert both["graph"]["tasks"] == 6
    with pytest.raises(ProfileError, match="no step 3..3 in the profile: it marks steps 1, 2"):
        replay.replay(IDLE, ["910B"], steps=(3, 3))
    with pytest.raises(ProfileError, match="no step marks .*give a --window instead"):
        replay.replay(GAPS, ["910B"], steps=(1, 1))
    with pytest.raises(ProfileError, match="no device task starts in the window"):
        replay.replay(IDLE, ["910B"], window=(100.0, 200.0))


def test_window_and_steps_parse_and_refuse_in_one_line(tmp_path, capsys):
    assert parse_window("1500:9000") == (1500.0, 9000.0)
    assert parse_window("1500:") == (1500.0, None) and parse_window(":9") == (None, 9.0)
    assert parse_steps("2") == (2, 2) and parse_steps("2:4") == (2, 4)
    for bad in ("9:1", "a:b", "5", "-1:3"):
        with pytest.raises(ValueError):
            parse_window(bad)
    with pytest.raises(ValueError):
        parse_steps("4:2")
    out = tmp_path / "o"
    assert main(["replay", str(IDLE), "--steps", "2", "--out", str(out)]) == 0
    assert "window step 2: 3 of 7 device tasks" in capsys.readouterr().out
    assert main(["replay", str(IDLE), "--window", "250000:255000", "--out", str(out), "--msprof",
                 str(tmp_path / "w.json")]) == 0
    assert len(profiles.load(tmp_path / "w.json").tasks) == 3  # the export holds the window too
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["replay", str(IDLE), "--window", "9:1", "--out", str(out)])
    assert e.value.code == 2
    assert "argument --window: '9:1': the window ends before it starts" in capsys.readouterr().err


def test_sizeless_copies_are_retimed_from_their_host_calls_arguments():
    """The H2D aclrtMemcpy's device row has no size(B); its AscendCL row's args carry size and kind: it is
    re-timed as a 32 MiB H2D copy. The D2H aclrtMemcpy carries none anywhere: replayed as measured."""
    g = replay.build_graph(profiles.load(IDLE), None)
    copies = [n for n in g.nodes if n.task.kind == "copy"]
    assert [(n.kind, n.nbytes, n.direction) for n in copies] == [("copy", 32 * MIB, "h2d"), ("fixed", 0, None)] * 2
    assert any("2 copies without a size in their device rows take it from their host call's arguments" in n
               for n in g.notes)
    assert profiles.call_size("f", 0, {"count": "4096", "kind": 2}) == (4096, "d2h")
    assert profiles.call_size("f", 0, {"Thread Id": 1}) == (None, None)


def test_nothing_retimed_is_said_plainly(capsys, tmp_path):
    result = replay.replay(DATA / "task_time_step.csv", ["910B", "A3"])
    assert result["nothing_retimed"].startswith("Nothing could be re-timed: none of its 4 copies and memsets")
    assert replay.replay(IDLE, ["910B"])["nothing_retimed"] == ""
    assert main(["replay", str(OP_SUMMARY), "--out", str(tmp_path / "o")]) == 0
    assert "Nothing could be re-timed: it has no copy or memset" in capsys.readouterr().out


def test_kernels_launched_by_node_launch_outside_ascendcl_join_their_host_call():
    p = profiles.load(IDLE)
    launches = [c for c in p.calls if c.level == "Node"]
    assert [c.api for c in launches] == ["launch", "launch"]
    g = replay.build_graph(p, None)
    kernels = [n for n in g.nodes if n.kind == "kernel"]
    assert len(kernels) == 2 and all(g.calls[n.call].api == "launch" for n in kernels)
    assert not any("no host call joined" in n for n in g.notes)


def test_a_node_launch_inside_an_ascendcl_call_still_nests_in_it():
    rows = [(0, "AscendCL", "aclopCompileAndExecute", {"ts": "100.000", "dur": 50.0}, {"Thread Id": 7}),
            (1, "Node", "launch", {"ts": "110.000", "dur": 5.0}, {"Thread Id": 7, "connection_id": 9}),
            (2, "Node", "launch", {"ts": "200.000", "dur": 20.0}, {"Thread Id": 7, "connection_id": 10}),
            (3, "Runtime", "rtKernelLaunch", {"ts": "205.000", "dur": 5.0}, {"Thread Id": 7, "connection_id": 11})]
    calls = profiles._host_calls("f", rows)
    assert [(c.api, c.level, c.connections) for c in calls] == [("aclopCompileAndExecute", "AscendCL", [9]),
                                                                  ("launch", "Node", [10, 11])]


def test_task_timeout_set_and_other_control_tasks_are_known_types():
    p = profiles.load(IDLE)
    assert p.unknown == {}
    assert [t.kind for t in p.tasks if t.type == "TASK_TIMEOUT_SET"] == ["other"]
    for control in ("TASK_TIMEOUT_SET", "MODEL_TO_AICPU", "NPU_GET_FLOAT_STATUS", "STREAM_SWITCH_N",
                    "PROFILING_ENABLE", "CREATE_STREAM"):
        assert profiles.kind_of(control) == ("other", True)


def test_no_calibrate_advice_for_a_header_only_calibration_file(tmp_path, capsys):
    assert main(["replay", str(DATA / "task_time_step.csv"), "--out", str(tmp_path / "a")]) == 0
    text = capsys.readouterr().out
    assert (tmp_path / "a" / "calibration.csv").read_text() == "size,direction,memory,pattern,count,us\n"
    assert "to fit a config to these copies" not in text and "holds only its header" in text
    assert main(["replay", str(DATA / "msprof_step.json"), "--out", str(tmp_path / "b")]) == 0
    assert "to fit a config to these copies: acl-emu calibrate" in capsys.readouterr().out


# -- msprof's other CSVs --------------------------------------------------------------------------------------------
def test_op_summary_csv_reads_as_the_operators_with_their_streams_and_times():
    p = profiles.load(OP_SUMMARY)
    assert p.format == "op-summary-csv" and not p.calls
    assert [(t.name, t.kind, t.stream) for t in p.tasks] == [("MatMulV2", "kernel", 3), ("MatMulV2Grad", "kernel", 3),
                                                             ("ApplyAdamW", "kernel", 3)]
    step = profiles.load(DATA / "msprof_step.json")
    assert [round(t.duration, 9) for t in p.tasks] == [round(t.duration, 9) for t in sorted(step.tasks,
                                                        key=lambda t: t.start) if t.kind == "kernel"]


def test_api_statistic_csv_names_its_format_and_what_is_supported():
    with pytest.raises(ProfileError) as e:
        profiles.load(API_STATISTIC)
    text = str(e.value)
    assert "an api_statistic CSV (msprof's per-API totals" in text and "no timeline" in text
    assert "op_summary_*.csv" in text and "msprof_*.json" in text


def test_an_unknown_csv_or_text_names_what_replay_reads(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("alpha,beta,gamma\n1,2,3\n")
    with pytest.raises(ProfileError, match=r"columns \(alpha, beta, gamma, \.\.\.\) are none of the formats"):
        profiles.load(f)
    t = tmp_path / "x.txt"
    t.write_text("hello\n")
    with pytest.raises(ProfileError, match="no MSPTI activity lines .*op_summary_\\*.csv"):
        profiles.load(t)
