"""aclInit's config file: the reference's codes, from pyACL and from C.

hicann/runtime 681ef7610, src/acl/aclrt_impl/acl.cpp aclInitImpl, in its order:
  1. refcount > 0: 100002 (ACL_ERROR_REPEAT_INITIALIZE);
  2. acl_rt_impl_base.cpp GetStrFromConfigPath: a path mmRealPath cannot resolve (missing, a component that is
     no folder) or a file that cannot be opened: 100003 (ACL_ERROR_INVALID_FILE);
  3. a config whose content differs from the first successful aclInit's (std::hash of the content): 100000;
  4. HandleErrorManagerConfig -> json_parser.cpp JsonParser::ParseJsonFromFile: IsValidFileName (not a regular
     file, over MAX_CONFIG_FILE_BYTE = 10 MiB): 100003; GetMaxNestedLayers (more than 10 '{' or '[' open, counted
     on the raw characters): 100006 (ACL_ERROR_PARSE_FILE); ParseJson (nlohmann::json::parse of the text up to
     its first NUL; an empty text is no config): 100006; then err_msg_mode other than "0" or "1": 100000;
  5. HandleDefaultDeviceAndStackSize -> GetDefaultDeviceIdFromFile: defaultDevice absent, not an object, or
     without default_device: none; default_device not a string or not matching "0|[1-9]\\d*": 500001
     (ACL_ERROR_FAILURE, the caller's code for any failure there); the digits read by strtol into an int32_t,
     -1 (INVALID_DEFAULT_DEVICE) setting none; rtSetDefaultDeviceId -> ApiErrorDecorator::SetDefaultDeviceId /
     CheckDeviceIdIsValid: no such device 107001.
The emulator used to give 100000 for a missing, unreadable or non-JSON file (emu/runtime/devices.py init).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

import emu
from emu.capi import commands
from helpers import code

CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                              reason="needs a C compiler and a shared libpython")

MiB = 1 << 20


def configs(folder: Path) -> dict[str, tuple[str, int]]:
    """Config paths made in `folder`, each with the code aclInit gives on 910B (8 devices) on a fresh process."""
    def write(name: str, content: bytes | str) -> str:
        path = folder / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(path)

    def device(value) -> str:
        return json.dumps({"defaultDevice": {"default_device": value}})

    nested = '{"a":' * 10 + "{}" + "}" * 10  # 11 objects open at once
    (folder / "dir").mkdir(exist_ok=True)
    return {
        "missing": (str(folder / "missing.json"), 100003),
        "below a file": (write("plain.json", "{}") + "/acl.json", 100003),  # ENOTDIR: mmRealPath fails
        "a directory": (str(folder / "dir"), 100003),
        "over 10 MiB": (write("big.json", b'{"a": "' + b"x" * (10 * MiB) + b'"}'), 100003),
        "10 MiB": (write("ten.json", b'{"a": "' + b"x" * (10 * MiB - 10) + b'"}'), 0),
        "empty": (write("empty.json", b""), 0),
        "NUL first": (write("nul.json", b"\0 not json"), 0),
        "{}": (write("object.json", "{}"), 0),
        "[] (no object: nothing read)": (write("array.json", "[]"), 0),
        "not JSON": (write("text.json", "defaultDevice = 0"), 100006),
        "whitespace only": (write("space.json", " \n"), 100006),
        "NaN": (write("nan.json", '{"a": NaN}'), 100006),
        "trailing comma": (write("comma.json", '{"a": 1,}'), 100006),
        "11 deep": (write("deep.json", nested), 100006),
        "11 deep inside a string": (write("deep_string.json", json.dumps({"a": "[" * 11})), 100006),
        "10 deep": (write("ten_deep.json", '{"a":' * 9 + "{}" + "}" * 9), 0),
        "err_msg_mode 1": (write("err1.json", '{"err_msg_mode": "1"}'), 0),
        "err_msg_mode int": (write("err_int.json", '{"err_msg_mode": 1}'), 100000),
        "err_msg_mode 2": (write("err2.json", '{"err_msg_mode": "2"}'), 100000),
        "defaultDevice int (not an object: none)": (write("dd_int.json", '{"defaultDevice": 3}'), 0),
        "defaultDevice without default_device": (write("dd_empty.json", '{"defaultDevice": {}}'), 0),
        "default_device 7": (write("dd7.json", device("7")), 0),
        "default_device int": (write("dd_num.json", device(7)), 500001),
        "default_device 07": (write("dd07.json", device("07")), 500001),
        "default_device -1": (write("dd_neg.json", device("-1")), 500001),
        "default_device 8 (no such device)": (write("dd8.json", device("8")), 107001),
        "default_device 4294967296 (int32 0)": (write("dd_wrap.json", device("4294967296")), 0),
        "default_device 4294967295 (int32 -1: none)": (write("dd_none.json", device("4294967295")), 0),
    }


CASES = ["missing", "below a file", "a directory", "over 10 MiB", "10 MiB", "empty", "NUL first", "{}",
         "[] (no object: nothing read)", "not JSON", "whitespace only", "NaN", "trailing comma", "11 deep",
         "11 deep inside a string", "10 deep", "err_msg_mode 1", "err_msg_mode int", "err_msg_mode 2",
         "defaultDevice int (not an object: none)", "defaultDevice without default_device", "default_device 7",
         "default_device int", "default_device 07", "default_device -1", "default_device 8 (no such device)",
         "default_device 4294967296 (int32 0)", "default_device 4294967295 (int32 -1: none)"]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    made = configs(tmp_path_factory.mktemp("acl_init"))
    assert list(made) == CASES  # every case made is a case tested
    return made


@pytest.mark.parametrize("case", CASES)
def test_acl_init_config_codes_from_pyacl(cases, case):
    """Each config's code through pyACL (acl.init), as aclInitImpl's steps give it (the module's docstring); a
    failed aclInit leaves ACL uninitialised (aclInitRefCount is set only at the end), so aclInit(NULL) then
    succeeds."""
    path, expected = cases[case]
    emu.configure("910B", functional=True)
    import emu.acl as acl
    assert acl.init(path) == expected
    if expected:
        assert acl.get_recent_err_msg() and "\n" not in acl.get_recent_err_msg()
        assert acl.init() == 0


def test_the_default_device_of_a_config_is_the_one_opened(cases):
    """GetDefaultDeviceIdFromFile: "7" opens device 7 implicitly; "4294967296" is strtol's 4294967296 as an
    int32_t, 0; "4294967295" is -1, INVALID_DEFAULT_DEVICE: no default device (a malloc is then 107002)."""
    for case, device in (("default_device 7", 7), ("default_device 4294967296 (int32 0)", 0),
                         ("default_device 4294967295 (int32 -1: none)", None)):
        r = emu.configure("910B", functional=True)
        r.init(cases[case][0])
        if device is None:
            assert code(r.malloc, 64) == 107002
        else:
            r.malloc(64)
            assert r.get_device() == device


def test_the_content_check_comes_before_the_parse(cases, tmp_path):
    """aclInitImpl: after aclFinalize, a config whose content differs from the first one is 100000 even when it
    is not JSON (the hash of the content is compared before HandleErrorManagerConfig parses it); a missing file
    is still 100003 (GetStrFromConfigPath comes first)."""
    r = emu.configure("910B", functional=True)
    assert code(r.init, cases["{}"][0]) == 0
    assert code(r.finalize) == 0
    assert code(r.init, cases["not JSON"][0]) == 100000
    assert code(r.init, cases["missing"][0]) == 100003
    assert code(r.init, cases["{}"][0]) == 0


PROGRAM = r"""
#include <stdio.h>
#include "acl/acl.h"
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        aclError r = aclInit(argv[i]);
        printf("%d\n", (int)r);
        if (r == ACL_SUCCESS)
            aclFinalize();
    }
    return 0;
}
"""


@needs_cc
def test_acl_init_config_codes_from_c(cases, tmp_path):
    """The same configs through the C library's aclInit give the same codes as pyACL (a program that calls
    aclInit on each path in turn, aclFinalize after each success; every config that succeeds has the same
    content as the first success or is the first, so no content check fires: the empty configs are left out,
    as is "NUL first", whose content differs from "{}")."""
    src = tmp_path / "init.c"
    src.write_text(PROGRAM)
    assert commands.compile_command("cc", [str(src), "-o", str(tmp_path / "init")]) == 0
    chosen = [c for c, (_, expected) in cases.items() if expected != 0] + ["{}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    done = subprocess.run([str(tmp_path / "init"), *(cases[c][0] for c in chosen)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert [int(line) for line in done.stdout.split()] == [cases[c][1] for c in chosen]


@needs_cc
def test_a_null_or_empty_config_path_is_no_config_from_c(tmp_path):
    """GetStrFromConfigPath: a null or empty path is an empty config: aclInit(NULL) and aclInit("") are 0."""
    src = tmp_path / "null.c"
    src.write_text('#include <stdio.h>\n#include "acl/acl.h"\nint main(void) {\n'
                   '    int a = aclInit(NULL); aclFinalize(); int b = aclInit("");\n'
                   '    printf("%d %d\\n", a, b); return 0;\n}\n')
    assert commands.compile_command("cc", [str(src), "-o", str(tmp_path / "null")]) == 0
    done = subprocess.run([str(tmp_path / "null")], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["0", "0"], done.stderr
