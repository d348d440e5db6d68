"""A call that would read or write past the end of its buffer: refused with ACL_ERROR_INVALID_PARAM (100000), as
before, and now said: once per call site, a line on stderr names the call, the program's file:line, the buffer
and the overrun in bytes; under the sanitizer it is a finding ("out-of-bounds", host check).

The case that asked for it is Ascend/samples' resnet50_imagenet_dynamic_hw (acl_net.py, `_data_interaction`): it
copies input 0's size, the largest image-size gear's bytes, from `acl.util.bytes_to_ptr(picture.tobytes())`, a
buffer of the chosen gear's size. On an NPU the copy reads whatever lies past the buffer and the sample prints a
result; the emulator never reads memory it does not know, so the call fails, and before this the reason was only
in aclGetRecentErrMsg. The same holds from C (tests/c style programs built with `acl-emu cc`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import emu
from emu.errors import ACL_ERROR_INVALID_PARAM
from emu.sanitize import sites

HERE = Path(__file__).resolve()
DECL = HERE.parent / "samples" / "inference" / "model" / "tf_resnet50.om.toml"
LINE = re.compile(r"^\[acl-emu\] .*refused \(ACL_ERROR_INVALID_PARAM, 100000\)", re.M)


def _told(err: str) -> list[str]:
    return [line for line in err.splitlines() if LINE.match(line)]


def _here(line: int) -> str:
    """This file's line as the emulator names a site (relative to the working directory)."""
    return sites.short((str(HERE), line, ""))


def _line_of(text: str, source: str) -> int:
    """The 1-based line of `source` that contains `text` (one line only)."""
    found = [i for i, line in enumerate(source.splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def test_a_copy_past_a_python_buffer_is_refused_and_said_once_per_call_site(acl, capsys):
    """Three copies from one line and one from another: each returns 100000, moves nothing, and each line says
    it once, naming aclrtMemcpy, this file's line, the bytes object and the overrun."""
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    dev, ret = acl.rt.malloc(1 << 20, 0)
    assert acl.rt.memset(dev, 1 << 20, 0x5A, 1 << 20) == 0
    picture = bytes(range(256)) * (112 * 112 * 3 // 256) + bytes(112 * 112 * 3 % 256)  # 37632 bytes
    ptr = acl.util.bytes_to_ptr(picture)
    gear = 448 * 448 * 3
    codes = [acl.rt.memcpy(dev, gear, ptr, gear, 1) for _ in range(3)]  # site-A
    codes.append(acl.rt.memcpy(dev, gear, ptr, gear, 1))  # site-B
    assert codes == [ACL_ERROR_INVALID_PARAM] * 4
    assert "run 564480 bytes past the end" in acl.get_recent_err_msg()  # the recent error is as it was
    back, _ = acl.rt.malloc_host(1 << 20)
    assert acl.rt.memcpy(back, 1 << 20, dev, 1 << 20, 2) == 0
    assert (acl.util.ptr_to_numpy(back, (1 << 20,), 2) == 0x5A).all()  # nothing was copied
    told = _told(capsys.readouterr().err)
    source = HERE.read_text()
    first, second = _line_of("# site" + "-A", source), _line_of("# site" + "-B", source)
    assert [t.split(": ", 1)[0] for t in told] == [f"[acl-emu] {_here(first)}", f"[acl-emu] {_here(second)}"]
    for t in told:
        assert "aclrtMemcpy refused" in t
        assert f"its source, {gear} bytes at 0x{ptr:x}, runs 564480 bytes past the end of pageable host memory" in t
        assert "of 37632 bytes (a bytes object)" in t
        assert "On an NPU the call would read whatever lies past the buffer" in t
        assert f"Make the buffer {gear} bytes, or pass at most the 37632 bytes it holds" in t


def test_a_destination_or_fill_past_the_end_says_it_would_overwrite(acl, capsys):
    """A D2H copy into a smaller page-locked buffer and a memset past a device allocation: the destination is
    named, the neighbouring bytes are untouched, and each site is said once."""
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    host, _ = acl.rt.malloc_host(4096)
    after, _ = acl.rt.malloc_host(4096)
    neighbour = acl.util.ptr_to_numpy(after, (4096,), 2)
    neighbour[:] = 7
    dev, _ = acl.rt.malloc(8192, 0)
    assert acl.rt.memcpy(host, 8192, dev, 8192, 2) == ACL_ERROR_INVALID_PARAM
    assert acl.rt.memset(dev + 4096, 8192, 1, 8192) == ACL_ERROR_INVALID_PARAM
    assert (neighbour == 7).all()
    copy, fill = _told(capsys.readouterr().err)
    assert "aclrtMemcpy refused" in copy and "its destination, 8192 bytes" in copy
    assert "runs 4096 bytes past the end of pinned host memory" in copy
    assert "the call would overwrite whatever lies past the buffer" in copy
    assert "aclrtMemset refused" in fill and "its destination, 8192 bytes" in fill
    assert "past the end of device 0 memory" in fill and "would overwrite" in fill


def test_each_runtime_says_a_site_again(capsys):
    """What was said belongs to the runtime: a fresh one (a new process, the pytest plugin's next test) says the
    same site again."""
    for _ in range(2):
        rt = emu.configure(product="910B", functional=True)
        rt.set_device(0)
        dev = rt.malloc(64)
        small = np.zeros(16, np.uint8)
        with pytest.raises(emu.AclError) as e:
            rt.memcpy(dev, 64, rt.register_host(small), 64, 1)
        assert e.value.code == ACL_ERROR_INVALID_PARAM
    told = _told(capsys.readouterr().err)
    assert len(told) == 2 and re.sub("0x[0-9a-f]+", "", told[0]) == re.sub("0x[0-9a-f]+", "", told[1])


def test_under_the_sanitizer_an_overrun_is_a_finding_with_its_site_and_buffer(capsys):
    """emu.configure(sanitize=True): each overrunning site is one finding of the host check, counted, with the
    buffer, the bytes past its end and the call; the JSON carries them."""
    rt = emu.configure(product="910B", functional=True, sanitize=True)
    rt.set_device(0)
    dev = rt.malloc(1 << 20)
    small = np.zeros(1000, np.uint8)
    ptr = rt.register_host(small)
    for _ in range(2):
        with pytest.raises(emu.AclError):
            rt.memcpy(dev, 4000, ptr, 4000, 1)  # site-C
    findings = rt.sanitizer.finish()
    assert [(f.tool, f.kind, f.count) for f in findings] == [("host", "out-of-bounds", 2)]
    site = _here(_line_of("# site" + "-C", HERE.read_text()))
    text = rt.sanitizer.report()
    assert "Access past the end of a buffer (the call was refused) [host: out-of-bounds]" in text
    assert f"4000 bytes at [0x{ptr:x}, 0x{ptr + 4000:x}), offset 0 of pageable host memory" in text
    assert "3000 bytes past its end" in text
    assert f"Read by: aclrtMemcpy at {site}" in text
    assert "Fix: the aclrtMemcpy" in text and "Make the buffer 4000 bytes, or pass at most 1000" in text
    found = rt.sanitizer.to_dict()["findings"][0]
    assert found["memory"]["past_end"] == 3000 and found["memory"]["role"] == "source"
    assert found["calls"][0]["site"] == site


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.pop("PYTHONPATH", None)
    return env


# The lines of resnet50_imagenet_dynamic_hw/src/acl_net.py (Ascend/samples fc2aea93) that copy the picture:
# `_gen_data_buffer` sizes input 0 from the description, `_data_interaction` copies that many bytes from the
# picture's bytes, and `check_ret` raises on the code.
DYNAMIC_HW = '''\
import acl
import numpy as np

def check_ret(message, ret):
    if ret != 0:
        raise Exception("{} failed ret={}".format(message, ret))

check_ret("acl.init", acl.init())
check_ret("acl.rt.set_device", acl.rt.set_device(0))
context, ret = acl.rt.create_context(0)
model_id, ret = acl.mdl.load_from_file("tf_resnet50.om")
check_ret("acl.mdl.load_from_file", ret)
desc = acl.mdl.create_desc()
check_ret("acl.mdl.get_desc", acl.mdl.get_desc(desc, model_id))
size = acl.mdl.get_input_size_by_index(desc, 0)
buffer, ret = acl.rt.malloc(size, 0)
img = np.zeros((1, 224, 224, 3), np.uint8)
result = np.frombuffer(img.tobytes(), np.uint8)
bytes_data = result.tobytes()
ptr = acl.util.bytes_to_ptr(bytes_data)
ret = acl.rt.memcpy(buffer, size, ptr, size, 1)
check_ret("acl.rt.memcpy", ret)
'''


def test_the_dynamic_hw_samples_copy_is_told_on_stderr_and_found_by_the_sanitizer(tmp_path):
    """`acl-emu run --sanitize` on the sample's copy at the 224 gear of a 448 model: the script fails with its own
    check (100000), stderr names acl_net.py's copy line, the 602112 bytes asked and the 451584 past the picture's
    150528, and the sanitizer's report has the finding (exit code 1)."""
    shutil.copy(DECL, tmp_path / "tf_resnet50.om.toml")
    (tmp_path / "acl_net.py").write_text(DYNAMIC_HW)
    done = subprocess.run([sys.executable, "-m", "emu", "run", "--sanitize", "--host-time", "calls",
                           "--sanitize-json", str(tmp_path / "findings.json"), "--out", str(tmp_path), "acl_net.py"],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=300)
    assert done.returncode == 1, done.stderr
    assert "Exception: acl.rt.memcpy failed ret=100000" in done.stderr
    line = _line_of("ret = acl.rt.memcpy(buffer", DYNAMIC_HW)
    told = _told(done.stderr)
    assert len(told) == 1 and told[0].startswith(f"[acl-emu] acl_net.py:{line}: aclrtMemcpy refused")
    assert "its source, 602112 bytes" in told[0] and "runs 451584 bytes past the end" in told[0]
    assert "of 150528 bytes (a bytes object)" in told[0]
    assert "[host: out-of-bounds]" in done.stderr and f"Read by: aclrtMemcpy at acl_net.py:{line}" in done.stderr
    findings = json.loads((tmp_path / "findings.json").read_text())["findings"]
    assert [(f["kind"], f["memory"]["past_end"]) for f in findings] == [("out-of-bounds", 451584)]


OVER_C = r'''#include <stdio.h>
#include "acl/acl.h"

int main(void)
{
    void *host = NULL, *dev = NULL;
    if (aclInit(NULL) || aclrtSetDevice(0) || aclrtMallocHost(&host, 4096) ||
        aclrtMalloc(&dev, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST))
        return 2;
    for (int i = 0; i < 3; i++)
        printf("in %d\n", aclrtMemcpy(dev, 1 << 20, host, 8192, ACL_MEMCPY_HOST_TO_DEVICE)); /* source */
    printf("out %d\n", aclrtMemcpy(host, 8192, dev, 8192, ACL_MEMCPY_DEVICE_TO_HOST)); /* destination */
    aclrtFreeHost(host);
    aclrtFree(dev);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
'''


@pytest.mark.skipif(not shutil.which(os.environ.get("CC", "cc")) or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                    reason="needs a C compiler and a shared libpython")
def test_a_c_programs_overrun_is_told_with_its_file_and_line(tmp_path):
    """A C program built with -g: the copies past a 4096-byte aclrtMallocHost buffer return 100000, each call
    site is said once with over.c's line, and under --sanitize each is a finding naming the line and the
    allocation's."""
    from emu.capi import commands

    src = tmp_path / "over.c"
    src.write_text(OVER_C)
    assert commands.compile_command("cc", ["-g", str(src), "-o", str(tmp_path / "over")]) == 0
    done = subprocess.run([sys.executable, "-m", "emu", "run", "--sanitize", "--host-time", "calls", "--out",
                           str(tmp_path), "./over"], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stdout.split() == ["in", "100000"] * 3 + ["out", "100000"]
    into, back = _line_of("/* source */", OVER_C), _line_of("/* destination */", OVER_C)
    told = _told(done.stderr)
    assert [t.split(": ", 1)[0] for t in told] == [f"[acl-emu] over.c:{into}", f"[acl-emu] over.c:{back}"]
    assert "its source, 8192 bytes" in told[0] and "its destination, 8192 bytes" in told[1]
    assert all("runs 4096 bytes past the end of pinned host memory" in t for t in told)
    assert f"Read by: aclrtMemcpy at over.c:{into} in main()" in done.stderr
    assert f"Written by: aclrtMemcpy at over.c:{back} in main()" in done.stderr
    assert "allocated by aclrtMallocHost at over.c:7" in done.stderr
    assert "SANITIZER SUMMARY: 2 findings (2 host)" in done.stderr
