"""A reader that goes away early (`acl-emu products | head -1`) stops the command quietly, as Unix tools do:
no error line, no traceback."""
from __future__ import annotations

import subprocess
import sys


def test_a_closed_pipe_stops_quietly():
    cmd = [sys.executable, "-c", "import sys; from emu.cli import main; sys.exit(main())", "products", "--sources"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # the reader is gone
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert err == "", err
    assert code in (0, 141)  # 0 if everything fitted in the pipe before the reader left
