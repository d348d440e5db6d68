"""One copy plan: every copy API resolves its ends, kinds and path once (`transfer.plan_copy`), and the model
task, the records and the trace carry the kind the program asked for beside the kind the runtime used."""
from __future__ import annotations

import json

import numpy as np
import pytest

import emu
from emu import constants as C
from emu.models import trace
from emu.runtime import transfer

K = C.MemcpyKind
N = 4096


def _last_copy(r):
    rows = [row for row in r.records() if row["kind"] == "copy"]
    return rows[-1]


def test_async_default_kind_is_recorded_as_asked_and_as_used(rt):
    """aclrtMemcpyAsync with ACL_MEMCPY_DEFAULT from page-locked memory to the device: asked 4, used 1."""
    host, dev, s = rt.malloc_host(N), rt.malloc(N), rt.create_stream()
    rt.memcpy_async(dev, N, host, N, K.DEFAULT, s)
    rt.synchronize_stream(s)
    row = _last_copy(rt)
    assert (int(row["kind_asked"]), int(row["kind_used"])) == (K.DEFAULT, K.HOST_TO_DEVICE)


def test_async_kind_corrected_from_the_pointers(rt):
    """A page-locked-to-device copy asked as DEVICE_TO_DEVICE runs as HOST_TO_DEVICE (the runtime's
    MemcpyKindAutoCorrect), and the record says both."""
    host, dev, s = rt.malloc_host(N), rt.malloc(N), rt.create_stream()
    rt.memcpy_async(dev, N, host, N, K.DEVICE_TO_DEVICE, s)
    rt.synchronize_stream(s)
    row = _last_copy(rt)
    assert (int(row["kind_asked"]), int(row["kind_used"])) == (K.DEVICE_TO_DEVICE, K.HOST_TO_DEVICE)


def test_sync_copy_and_batch_entries_carry_their_kinds(rt):
    host, dev = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy(dev, N, host, N, K.HOST_TO_DEVICE)
    row = _last_copy(rt)
    assert (int(row["kind_asked"]), int(row["kind_used"])) == (K.HOST_TO_DEVICE, K.HOST_TO_DEVICE)
    attrs = [{"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}}]  # to device 0 from page-locked host
    rt.memcpy_batch([dev], [N], [host], [N], 1, attrs, [0], 1)
    row = _last_copy(rt)
    assert (int(row["kind_asked"]), int(row["kind_used"])) == (K.HOST_TO_DEVICE, K.HOST_TO_DEVICE)


def test_tasks_that_are_not_copies_say_no_kind(rt):
    dev, s = rt.malloc(N), rt.create_stream()
    rt.memset_async(dev, N, 0, N, s)
    rt.synchronize_stream(s)
    row = [row for row in rt.records() if row["api"] == "aclrtMemsetAsync"][-1]
    assert (int(row["kind_asked"]), int(row["kind_used"])) == (-1, -1)
    assert rt.machine.records[-1].kind_asked is None


def test_the_trace_shows_both_kinds(rt, tmp_path):
    host, dev, s = rt.malloc_host(N), rt.malloc(N), rt.create_stream()
    rt.memcpy_async(dev, N, host, N, K.DEFAULT, s)
    rt.synchronize_stream(s)
    rt.write_trace(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    copies = [e for e in events if e.get("ph") == "X" and e["name"] == "aclrtMemcpyAsync" and "bytes" in e["args"]]
    assert copies and all(e["args"]["kind_asked"] == 4 and e["args"]["kind_used"] == 1 for e in copies)


def test_records_streamed_to_a_file_keep_the_kinds(tmp_path):
    path = tmp_path / "records.jsonl"
    r = emu.configure("910B", records=str(path))
    r.set_device(0)
    host, dev, s = r.malloc_host(N), r.malloc(N), r.create_stream()
    r.memcpy_async(dev, N, host, N, K.DEFAULT, s)
    r.synchronize_stream(s)
    r.flush_records()
    tasks, _ = trace.read_jsonl(path)
    assert (int(tasks[-1]["kind_asked"]), int(tasks[-1]["kind_used"])) == (4, 1)


@pytest.mark.parametrize("product, staged", [("910B", True), ("200I_A2", False)])
def test_the_plan_says_staged_for_pageable_memory_on_ep_products_only(fresh, product, staged):
    """Pageable host memory goes through the driver's staging buffers in EP mode; on the board (RC) there
    is none."""
    r = fresh(product)
    r.set_device(0)
    pageable = np.zeros(N, dtype=np.uint8)
    plan = transfer.plan_copy(r, r.malloc(N), r.register_host(pageable), N, K.HOST_TO_DEVICE)
    assert plan.staged is staged and plan.pageable  # pageable either way; staged only in EP mode
    assert plan.s_dev is None and plan.d_dev == 0 and plan.device == 0
    assert (plan.kind, plan.used) == (K.HOST_TO_DEVICE, K.HOST_TO_DEVICE)


def test_the_plan_corrects_the_kind_only_when_asked(rt):
    host, dev = rt.malloc_host(N), rt.malloc(N)
    assert transfer.plan_copy(rt, dev, host, N, K.DEFAULT).used == K.DEFAULT
    assert transfer.plan_copy(rt, dev, host, N, K.DEFAULT, correct=True).used == K.HOST_TO_DEVICE


def test_2d_copies_carry_their_kinds(rt):
    """aclrtMemcpy2dAsync with DEFAULT from page-locked memory runs as HOST_TO_DEVICE; aclrtMemcpy2d too."""
    host, dev, s = rt.malloc_host(64 * 16), rt.malloc(64 * 16), rt.create_stream()
    rt.memcpy2d_async(dev, 64, host, 64, 32, 16, K.DEFAULT, s)
    rt.synchronize_stream(s)
    row = _last_copy(rt)
    assert (row["api"], int(row["kind_asked"]), int(row["kind_used"])) == ("aclrtMemcpy2dAsync", 4, 1)
    rt.memcpy2d(host, 64, dev, 64, 32, 16, K.DEFAULT)
    row = _last_copy(rt)
    assert (row["api"], int(row["kind_asked"]), int(row["kind_used"])) == ("aclrtMemcpy2d", 4, 2)
