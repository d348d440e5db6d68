"""The C library's cache folder (emu.capi.build): each use stamps a library folder, a new build removes the
folders no one has used for PRUNE_AFTER_DAYS, and never one in use.

The pruning is tested on temporary folders, with a stand-in for the compiler (`_fake_build`); only the test of
the stamp a loading program touches uses the real library, the one tests/test_capi.py builds in the default
cache (built once per version of the emulator, shared).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import time
from pathlib import Path

import pytest

from emu import capi
from emu.capi import build

AGE = build.PRUNE_AFTER_DAYS * 86400
HOUR = 3600


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Each test starts as a process that has used no library folder yet."""
    monkeypatch.setattr(build, "_stamped", set())


def _folder(root: Path, name: str, used: float | None, made: float, stamp: bool = True,
            read: float | None = None) -> Path:
    """A library folder last used at `used` (its stamp's mtime; no stamp when `stamp` is false), written last at
    `made` (its own mtime) and its library last read at `read` (its access time; `made` when not given)."""
    folder = root / name
    folder.mkdir()
    (folder / build.LIBRARY).write_bytes(b"\x7fELF")
    os.utime(folder / build.LIBRARY, (made if read is None else read, made))
    if stamp:
        (folder / build.STAMP).touch()
        os.utime(folder / build.STAMP, (used, used))
    os.utime(folder, (made, made))
    return folder


def test_prune_removes_folders_unused_for_prune_after_days_and_keeps_recent_ones(tmp_path):
    """A folder whose stamp is older than PRUNE_AFTER_DAYS goes, and so does one with no stamp whose own mtime
    is (a folder of an acl-emu before stamps) and a killed build's leftover; a folder used within the age
    stays, even when its own mtime is old, and so does one whose library was read within the age (loaded by a
    program of an acl-emu that stamps nothing); the folder kept and anything not a build's stay."""
    now = time.time()
    old, recent = now - AGE - HOUR, now - AGE + HOUR
    gone = [_folder(tmp_path, "capi-0000000000000001", old, old),
            _folder(tmp_path, "capi-0000000000000002", None, old, stamp=False),
            _folder(tmp_path, ".capi-leftover", None, old, stamp=False),
            _folder(tmp_path, "device-0000000000000001", old, old),  # (the device code's runner: emu.device.native)
            _folder(tmp_path, ".device-leftover", None, old, stamp=False)]
    stay = [_folder(tmp_path, "capi-0000000000000003", recent, old),
            _folder(tmp_path, "device-0000000000000002", recent, old),
            _folder(tmp_path, "capi-0000000000000004", None, recent, stamp=False),
            _folder(tmp_path, "capi-0000000000000005", old, old),  # the one kept
            _folder(tmp_path, "capi-0000000000000006", None, old, stamp=False, read=recent),  # loaded lately
            _folder(tmp_path, "other", old, old)]
    (tmp_path / ".build.lock").touch()
    removed = build.prune(tmp_path, keep=stay[3], now=now)
    assert sorted(removed) == sorted(gone)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([p.name for p in stay] + [".build.lock"])


def test_prune_keeps_the_folders_this_process_uses(tmp_path):
    """A folder this process has used (touch_stamp) is never removed by it, whatever its stamp says."""
    now = time.time()
    used = _folder(tmp_path, "capi-0000000000000001", now - 2 * AGE, now - 2 * AGE)
    build.touch_stamp(used)
    os.utime(used / build.STAMP, (now - 2 * AGE, now - 2 * AGE))
    assert build.prune(tmp_path, keep=tmp_path / "capi-new", now=now) == []
    assert used.is_dir()


def test_a_folder_is_stamped_once_per_process(tmp_path):
    """touch_stamp sets the stamp's mtime to now on a process's first use of the folder, and only then."""
    folder = _folder(tmp_path, "capi-0000000000000001", 1000.0, 1000.0)
    build.touch_stamp(folder)
    assert time.time() - (folder / build.STAMP).stat().st_mtime < HOUR
    os.utime(folder / build.STAMP, (1000.0, 1000.0))
    build.touch_stamp(folder)
    assert (folder / build.STAMP).stat().st_mtime == 1000.0


def _fake_build(generated, work: Path) -> None:
    """The compiler's stand-in: the build's folder as `build._build` leaves it (the library and its stamp)."""
    (work / build.LIBRARY).write_bytes(b"\x7fELF")
    (work / build.STAMP).touch()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """$ACL_EMU_CACHE set to an empty folder; library_dir builds with `_fake_build`."""
    monkeypatch.setenv("ACL_EMU_CACHE", str(tmp_path))
    monkeypatch.setattr(build, "_build", _fake_build)
    return tmp_path


def test_a_new_build_removes_old_library_folders_and_keeps_the_new_and_recent_ones(cache):
    """library_dir building a new folder removes the folders unused for PRUNE_AFTER_DAYS (under the build's
    lock); the recent ones and the new one, stamped, stay."""
    now = time.time()
    old = _folder(cache, "capi-0000000000000001", now - AGE - HOUR, now - AGE - HOUR)
    recent = _folder(cache, "capi-0000000000000002", now - HOUR, now - AGE - HOUR)
    final = build.library_dir()
    assert not old.exists() and recent.is_dir()
    assert (final / build.LIBRARY).is_file() and time.time() - build.last_use(final) < HOUR


def test_no_build_no_pruning(cache):
    """A library folder already there is used as it is: nothing is removed, its stamp is touched."""
    final = build.library_dir()
    os.utime(final / build.STAMP, (1000.0, 1000.0))
    now = time.time()
    old = _folder(cache, "capi-0000000000000001", now - 2 * AGE, now - 2 * AGE)
    build._stamped.clear()  # (another process)
    assert build.library_dir() == final
    assert old.is_dir() and time.time() - build.last_use(final) < HOUR


def test_a_folder_that_cannot_be_removed_does_not_fail_the_build(cache, monkeypatch, capsys):
    """A folder whose removal fails stays; the build still gives its folder, the other old folders go, and
    one line on stderr says what could not be removed."""
    now = time.time()
    stuck = _folder(cache, "capi-0000000000000001", now - 2 * AGE, now - 2 * AGE)
    other = _folder(cache, "capi-0000000000000002", now - 2 * AGE, now - 2 * AGE)
    rmtree = shutil.rmtree

    def refuse(path, *args, **kwargs):
        if stuck.name in Path(path).name:
            raise PermissionError(13, "Permission denied", str(path))
        return rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", refuse)
    final = build.library_dir()
    assert (final / build.LIBRARY).is_file()
    assert not other.exists()
    assert any(stuck.name in p.name for p in cache.iterdir())
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "could not remove 1 unused library folder" in err and stuck.name in err


def test_a_cache_that_cannot_be_listed_does_not_fail_pruning(tmp_path):
    """prune on a folder that is not there removes nothing and raises nothing."""
    assert build.prune(tmp_path / "missing", keep=tmp_path / "missing" / "capi-x") == []


CC = shutil.which(os.environ.get("CC", "cc"))


@pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                    reason="needs a C compiler and a shared libpython")
def test_a_program_loading_the_library_stamps_its_folder(tmp_path):
    """The library touches the stamp of the folder it really is in when a program makes its first call, also
    when the program found it through a symlink (the toolkit's lib64), so a build elsewhere keeps that folder."""
    folder = tmp_path / "capi-copy"
    folder.mkdir()
    shutil.copy2(build.library_dir() / build.LIBRARY, folder / build.LIBRARY)
    lib64 = tmp_path / "lib64"
    lib64.mkdir()
    (lib64 / build.LIBRARY).symlink_to(folder / build.LIBRARY)
    src = tmp_path / "p.c"
    src.write_text('#include "acl/acl.h"\nint main(void) { return aclrtSetDevice(0) != ACL_SUCCESS; }\n')
    exe = tmp_path / "p"
    subprocess.run([*build.compiler(), *capi.cflags(), str(src), "-o", str(exe), *capi.libs(lib64)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    assert not (folder / build.STAMP).exists()
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert time.time() - (folder / build.STAMP).stat().st_mtime < HOUR
    assert not (lib64 / build.STAMP).exists()
