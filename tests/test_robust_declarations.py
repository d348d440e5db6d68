"""A wrong model declaration, as a program sees it (issue 42, item 7): every problem is the reference's code for a
model file it cannot parse, with a one-line message naming the file and the problem as the recent error, never a
Python exception, from pyACL and from C.

Reference: hicann/ge base/common/helper/model_helper.cc, ModelHelper::LoadRootModel (aclmdlLoadFromFile and
aclmdlLoadFromMem through GeExecutor::LoadModelFromDataWithArgs and ModelManager::LoadModelOffline): when
ModelParserBase::ParseModelContent cannot parse the model it returns ACL_ERROR_GE_PARAM_INVALID, 145000, which
the ACL layer passes on (model.cpp ModelLoadFromFileWithMem, ACL_GET_ERRCODE_GE); ModelManager::GetModelMemAndWeightSize
(aclmdlQuerySize) returns the same. LoadModelOffline takes a model id (GenModelId) before it parses, so a failed
load uses one; a query does not. The emulator's model is its declaration: a declaration it cannot parse is that
model file.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import threading
from pathlib import Path

import pytest

import emu
from emu import modeldecl
from helpers import acl_on, no_declared_models
from emu.capi import commands

PARSE_ERROR = 145000  # ACL_ERROR_GE_PARAM_INVALID

GOOD = ('name = "m"\ncompute_us = 5\n[[input]]\nname = "a"\ndtype = "int8"\nshape = [4]\n'
        '[[output]]\nname = "b"\ndtype = "int8"\nshape = [4]\n')


def _decl(top: str = "", input_: str = 'name = "a"\ndtype = "int8"\nshape = [4]\n',
          output: str = 'name = "b"\ndtype = "int8"\nshape = [4]\n') -> str:
    return f'name = "m"\n{top}\n[[input]]\n{input_}\n[[output]]\n{output}'


TIMED = "compute_us = 5\n"
# case -> (the declaration's text, what the message says)
BAD = {
    "not TOML": ("[[input]\n", "cannot be read as TOML"),
    "nested too deeply": ("name = " + "[" * 10000 + "\n", "nested too deeply"),
    "an integer of 5000 digits": ("work_size = " + "7" * 5000 + "\n" + GOOD, "digits"),
    "not UTF-8": (b"\x89PNG\r\n\x1a\n\xff\xfe", "UTF-8"),
    "a wrong type": (_decl(TIMED, input_='name = "a"\ndtype = 5\nshape = [4]\n'), "input[0].dtype 5"),
    "a missing field": (_decl(TIMED, input_='name = "a"\nshape = [4]\n'), "input[0] lacks dtype"),
    "no compute_us": (_decl(), "no compute_us"),
    "an unknown key": (_decl(TIMED + "inputs = 1\n"), "unknown keys ['inputs']"),
    "a negative size": (_decl(TIMED + "work_size = -1\n"), "work_size -1"),
    "work_size past size_t": (_decl(TIMED + f"work_size = {2**64}\n"), "work_size 18446744073709551616"),
    "weight_size past size_t": (_decl(TIMED + f"weight_size = {2**64}\n"), "weight_size 18446744073709551616"),
    "a dim past int64": (_decl(TIMED, input_=f'name = "a"\ndtype = "int8"\nshape = [{2**63}]\n'),
                         "input[0].shape [9223372036854775808]"),
    "a tensor past size_t": (_decl(TIMED, input_=f'name = "a"\ndtype = "float32"\nshape = [{2**62}, 16]\n'),
                             "input 'a' shape"),
    "the sum past size_t": (_decl(TIMED, output=f'name = "b"\ndtype = "int8"\nshape = [{2**63 - 1}]\n'
                                                f'[[output]]\nname = "c"\ndtype = "int8"\nshape = [{2**63 - 1}]\n'),
                            "give work_size"),
    "a gear past int64": (_decl(TIMED + f"dynamic_batch = [1, {2**63}]\n",
                                input_='name = "a"\ndtype = "int8"\nshape = [-1, 4]\n'), "dynamic_batch"),
    "a time past a float": (_decl(f"compute_us = {10**400}\n"), "compute_us"),
    "an infinite time": (_decl("compute_us = {base = 1e308, per_batch = 1e308}\n",
                               input_='name = "a"\ndtype = "int8"\nshape = [4, 4]\n'), "not a finite time"),
}


pytestmark = pytest.mark.usefixtures(no_declared_models.__name__)


def _beside(tmp_path: Path, text: str | bytes) -> Path:
    om = tmp_path / "net.om"
    (tmp_path / "net.om.toml").write_bytes(text if isinstance(text, bytes) else text.encode())
    return om


@pytest.mark.parametrize("case", BAD)
def test_a_wrong_declaration_is_the_parse_error_with_a_one_line_message(tmp_path, case):
    """Rule: aclmdlLoadFromFile of a model whose declaration is wrong in any way returns 145000
    (ModelHelper::LoadRootModel), and aclGetRecentErrMsg says, in one line, which file and what is wrong."""
    text, says = BAD[case]
    acl = acl_on()
    om = _beside(tmp_path, text)
    assert acl.mdl.load_from_file(str(om)) == (0, PARSE_ERROR)
    message = acl.get_recent_err_msg()
    assert "\n" not in message and len(message) < 600, message
    assert f"{om}.toml" in message and says in message, message


@pytest.mark.parametrize("case", ["not TOML", "a dim past int64", "no compute_us"])
def test_every_api_that_reads_a_declaration_gives_the_parse_error(tmp_path, case):
    """aclmdlLoadFromFileWithMem and aclmdlQuerySize (ModelManager::GetModelMemAndWeightSize) too; the bytes of a
    wrong declaration given to aclmdlLoadFromMem / aclmdlQuerySizeFromMem as well."""
    text, says = BAD[case]
    acl = acl_on()
    om = str(_beside(tmp_path, text))
    assert acl.mdl.load_from_file_with_mem(om, 0, 0, 0, 0) == (0, PARSE_ERROR)
    assert acl.mdl.query_size(om) == (0, 0, PARSE_ERROR)
    ptr = acl.util.bytes_to_ptr(text.encode())
    assert acl.mdl.load_from_mem(ptr, len(text.encode())) == (0, PARSE_ERROR)
    assert acl.mdl.query_size_from_mem(ptr, len(text.encode())) == (0, 0, PARSE_ERROR)
    message = acl.get_recent_err_msg()
    assert "<model bytes>" in message and "\n" not in message, message


def test_a_failed_load_uses_a_model_id_and_a_failed_query_does_not(tmp_path):
    """ModelManager::LoadModelOffline: GenModelId, then LoadRootModel; the query parses without an id."""
    acl = acl_on()
    bad = str(_beside(tmp_path, "[[input]\n"))
    assert acl.mdl.query_size(bad)[-1] == PARSE_ERROR
    assert acl.mdl.load_from_file(bad) == (0, PARSE_ERROR)
    (tmp_path / "good.om.toml").write_text(GOOD)
    assert acl.mdl.load_from_file(str(tmp_path / "good.om")) == (2, 0)


def test_a_fifo_beside_the_model_is_the_parse_error_at_once(tmp_path):
    """A FIFO as X.om.toml is refused as not a regular file, without waiting for a writer."""
    acl = acl_on()
    os.mkfifo(tmp_path / "net.om.toml")
    box = {}
    t = threading.Thread(target=lambda: box.update(r=acl.mdl.load_from_file(str(tmp_path / "net.om")),
                                                   m=acl.get_recent_err_msg()), daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():
        os.close(os.open(tmp_path / "net.om.toml", os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
        pytest.fail("aclmdlLoadFromFile blocked on a FIFO")
    assert box["r"] == (0, PARSE_ERROR) and "FIFO" in box["m"], box


def test_a_declaration_registered_from_python_still_raises_with_the_template(tmp_path):
    """emu.declare_model is Python's own: a wrong declaration there is a ModelDeclarationError, the template
    after its one-line problem."""
    path = tmp_path / "d.toml"
    path.write_text("name = " + "[" * 10000 + "\n")
    with pytest.raises(modeldecl.ModelDeclarationError) as e:
        emu.declare_model(tmp_path / "x.om", path)
    assert "nested too deeply" in e.value.problem and str(e.value).endswith(modeldecl.TEMPLATE)


# -- from C ------------------------------------------------------------------------------------------------------
CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                              reason="needs a C compiler and a shared libpython")

PROGRAM = r'''
#include <stdio.h>
#include <string.h>
#include "acl/acl.h"
#include "acl/acl_mdl.h"
int main(int argc, char **argv) {
    uint32_t id = 0; size_t work = 0, weight = 0;
    aclInit(NULL); aclrtSetDevice(0);
    aclError r = aclmdlLoadFromFile(argv[1], &id);
    const char *why = aclGetRecentErrMsg();
    printf("load %d %s\n", r, why ? why : "(null)");
    r = aclmdlQuerySize(argv[1], &work, &weight);
    why = aclGetRecentErrMsg();
    printf("query %d %s\n", r, why ? why : "(null)");
    return 0;
}
'''


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("decl_c")
    (folder / "load.c").write_text(PROGRAM)
    assert commands.compile_command("cc", [str(folder / "load.c"), "-o", str(folder / "load")]) == 0
    return folder / "load"


@needs_cc
@pytest.mark.parametrize("case", ["not TOML", "nested too deeply", "a wrong type", "a dim past int64",
                                  "work_size past size_t", "a tensor past size_t"])
def test_a_c_program_gets_the_code_and_the_message_and_no_traceback(program, tmp_path, case):
    """Rule, from C: aclmdlLoadFromFile and aclmdlQuerySize return 145000, aclGetRecentErrMsg is a one-line
    message naming the declaration and the problem, and nothing is printed on stderr but at most one line."""
    text, says = BAD[case]
    om = _beside(tmp_path, text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    done = subprocess.run([str(program), str(om)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("\n") <= 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    for line, api in zip(lines, ("load", "query")):
        assert line.startswith(f"{api} {PARSE_ERROR} ") and f"{om}.toml" in line and says in line, line
