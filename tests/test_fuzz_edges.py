"""Hostile input at the edges never breaks the CLI (issue 30): random files, sweep grids, product configs and
command-line ranges, and SIGKILL while outputs are written.

Families (each a test below; counts printed with -s and written to fuzz_edges_counts.json in pytest's base
temporary directory):

- files: `acl-emu replay` and `acl-emu calibrate` on deeply nested JSON, integers of thousands of digits, huge
  CSV fields, binary garbage, truncated and mutated valid profiles (tests/data) and measurement tables, empty
  files, directories, /dev/zero, /dev/null, a FIFO, sparse files over the size limit, dangling links;
- grids: `acl-emu sweep` grid files ([sweep] tables) and arguments with wrong types, nan / inf, 2^63-1
  sizes, deep arrays, dates, unknown keys;
- configs: product TOML configs with random field values (huge, tiny, negative, nan, wrong types), a
  misspelt or odd `inherit`, missing tables, loaded by path (--product) or by name from the config folder
  ACL_EMU_CONFIG_DIR names (`emu.config.CONFIG_DIR`), then a quick study (products, overlap, bandwidth);
- ranges: bandwidth / overlap / compare / replay with random --streams a..b, --chunks, --reps, sizes
  (1e308, 99999999999999999999, -1, 64Mb, ...), microseconds and tolerances;
- kills: `acl-emu run` in a subprocess, SIGKILLed at random moments while it writes its Chrome trace, msprof
  timeline and sanitizer JSON over a previous good run's: every output present parses whole, and the next
  run leaves no `.partial-*` file.

Every case: exit code 0 or 2; on 2 a short error (at most three lines) on stderr; never "Traceback" on
stderr, never an exception out of `main`, never a MemoryError, never a hang (an in-process call is stopped by
SIGALRM after CALL_TIMEOUT seconds, a subprocess by its timeout), never a signal death but our SIGKILL.
The in-process calls run `emu.cli.main(argv)` with stdout and stderr captured.

Size: ACL_EMU_FUZZ_N multiplies every family's CI count (ACL_EMU_FUZZ_N=20: twenty times the cases);
ACL_EMU_FUZZ_SEED sets the seed (default SEED). A failure names its family, seed, case number and argv.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import tomllib
import traceback
from collections import Counter
from pathlib import Path

import pytest

from emu import config
from emu.cli import main
from emu.studies import profiles

SEED = 3030
CI = {"files": 120, "calibrate": 40, "grids": 100, "configs": 40, "ranges": 150, "kills": 3, "env_configs": 2}
CALL_TIMEOUT = 30.0  # seconds an in-process call may take before it counts as a hang
DATA = Path(__file__).resolve().parent / "data"
PROFILES = ["msprof_step.json", "msprof_no_events.json", "msprof_unknown.json", "mspti_step.jsonl",
            "mspti_step.log", "task_time_step.csv"]
FAILURES = ("crashes", "tracebacks", "hangs", "oom", "bad_exit", "long_errors", "half_written", "stale_partials")


def fuzz_seed() -> int:
    return int(os.environ.get("ACL_EMU_FUZZ_SEED") or SEED)


def fuzz_cases(family: str) -> int:
    """The number of cases of a family: its CI count times $ACL_EMU_FUZZ_N."""
    return max(1, round(CI[family] * float(os.environ.get("ACL_EMU_FUZZ_N") or 1)))


def test_the_fuzz_size_and_seed_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("ACL_EMU_FUZZ_N", "20")
    monkeypatch.setenv("ACL_EMU_FUZZ_SEED", "7")
    assert fuzz_cases("files") == 20 * CI["files"] and fuzz_seed() == 7
    monkeypatch.delenv("ACL_EMU_FUZZ_N")
    monkeypatch.delenv("ACL_EMU_FUZZ_SEED")
    assert fuzz_cases("kills") == CI["kills"] and fuzz_seed() == SEED


# ============================================================================== running and judging a case

class Hang(Exception):
    """An in-process call ran past CALL_TIMEOUT."""


def _alarm(signum, frame):
    raise Hang


def cli(argv: list[str], timeout: float = CALL_TIMEOUT) -> tuple[object, str, str, str | None]:
    """(exit code, stdout, stderr, what went wrong or None): `emu.cli.main(argv)` in this process."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    problem, rc = None, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as e:
        rc = e.code
    except Hang:
        problem = "hangs"
    except MemoryError:
        problem = "oom"
    except Exception:  # noqa: BLE001 - what the fuzz looks for
        problem = "crashes"
        err.write(traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return rc, out.getvalue(), err.getvalue(), problem


def judge(rc, err: str, problem: str | None) -> str | None:
    """What is wrong with a case's ending (a FAILURES name), or None."""
    if problem is not None:
        return problem
    if "Traceback" in err:
        return "tracebacks"
    if "MemoryError" in err:
        return "oom"
    if rc not in (0, 2):
        return "bad_exit"
    if rc == 2:
        lines = err.strip().splitlines()
        if not lines or len(lines) > 3 or len(err) > 3000 or "error" not in lines[0]:
            return "long_errors"
    return None


class Tally:
    """One family's counts and the first failures, each naming the seed and case."""

    def __init__(self, family: str):
        self.family, self.seed = family, fuzz_seed()
        self.counts = Counter({k: 0 for k in ("cases", "exit_0", "exit_2", *FAILURES)})
        self.failures: list[str] = []

    def run(self, case: int, argv: list[str], kind: str) -> tuple[object, str]:
        rc, _, err, problem = cli(argv)
        self.record(case, argv, kind, rc, err, problem)
        return rc, err

    def record(self, case: int, argv, kind: str, rc, err: str, problem: str | None) -> None:
        self.counts["cases"] += 1
        self.counts[f"kind:{kind}"] += 1
        what = judge(rc, err, problem)
        if what is None:
            self.counts[f"exit_{rc}"] += 1
            return
        self.fail(what, f"case {case} ({kind}) exit {rc}: {_short(argv)}\n{err[-1500:]}")

    def fail(self, what: str, detail: str) -> None:
        self.counts[what] += 1
        if len(self.failures) < 8:
            self.failures.append(f"{what.upper()} {self.family} seed {self.seed} {detail}")

    def finish(self, base: Path) -> None:
        path = base / "fuzz_edges_counts.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data[self.family] = dict(self.counts)
        path.write_text(json.dumps(data, indent=2))
        print(f"\nfuzz {self.family} (seed {self.seed}): {json.dumps(dict(self.counts))}")
        assert not self.failures, "\n\n".join(self.failures)
        assert all(self.counts[k] == 0 for k in FAILURES)


def _short(argv) -> str:
    return " ".join(a if len(a) < 120 else a[:60] + f"...({len(a)} chars)" for a in map(str, argv))


def test_judge_names_each_failure():
    assert judge(0, "", None) is None and judge(2, "acl-emu x: error: bad\n", None) is None
    assert judge(2, "", "hangs") == "hangs" and judge(1, "", None) == "bad_exit"
    assert judge(2, "Traceback (most recent call last):\n", None) == "tracebacks"
    assert judge(2, "acl-emu x: error: a\nb\nc\nd\n", None) == "long_errors"
    assert judge(2, "", None) == "long_errors" and judge(0, "MemoryError\n", None) == "oom"


def test_a_call_past_its_time_is_a_hang_not_a_wait(monkeypatch):
    import emu.cli as C

    monkeypatch.setattr(C, "build_parser", lambda: time.sleep(5))
    t0 = time.monotonic()
    assert cli(["products"], timeout=0.2)[3] == "hangs" and time.monotonic() - t0 < 3


# ==================================================================================== hostile values

HUGE_INTS = ["9" * 400, "99999999999999999999", str(2**63 - 1), str(2**64), "-1", "0", "-0", str(-2**63)]
ODD_NUMBERS = ["1e308", "1e999", "-1e308", "nan", "NaN", "inf", "-inf", "Infinity", "5e-324", "1e-300", "1.5",
               "0x10", "1_000", "+3", " 4", "\u0664", "1e3"]


def digits(rng: random.Random) -> str:
    return rng.choice("123456789") + "".join(rng.choice("0123456789") for _ in range(rng.randint(300, 6000)))


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """A few random byte flips, inserts, deletions and duplications."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        if not b:
            b += rng.randbytes(8)
        i = rng.randrange(len(b))
        op = rng.randrange(5)
        if op == 0:
            b[i] = rng.randrange(256)
        elif op == 1:
            b[i:i] = rng.randbytes(rng.randint(1, 16))
        elif op == 2:
            del b[i:i + rng.randint(1, 200)]
        elif op == 3:
            b[i:i] = b[i:i + rng.randint(1, 400)]
        else:
            b[i:i] = rng.choice([b"\x00", b"\xff\xfe", b"\r", b"\"", b"[" * 5000, b"{", b",", b"\n\n"])
    return bytes(b)


_TOKEN = re.compile(rb'-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\\n]|\\.)*"|[\[\]{},:]')
NUMBER_SWAPS = [b"9" * 5000, b"-1", b"1e308", b"1e999", b"NaN", b"Infinity", b"-0", b"0", b"null", b"true",
                b'"x"', b"[]", b"{}", b"18446744073709551616", b"9223372036854775807", b"1.5", b""]
STRING_SWAPS = [b'""', b'"' + b"x" * 200000 + b'"', b'"\\ud800"', b'"\\u0000"', b"3", b"null", b'"N/A"']


def mutate_tokens(rng: random.Random, data: bytes) -> bytes:
    """Numbers, strings or punctuation of a valid profile swapped for hostile ones, or dropped, or repeated."""
    tokens = list(_TOKEN.finditer(data))
    if not tokens:
        return mutate_bytes(rng, data)
    out = data
    for m in sorted(rng.sample(tokens, min(len(tokens), rng.randint(1, 4))), key=lambda m: -m.start()):
        tok = m.group()
        if tok[:1].isdigit() or tok[:1] == b"-":
            new = rng.choice(NUMBER_SWAPS + [digits(rng).encode()])
        elif tok[:1] == b'"':
            new = rng.choice(STRING_SWAPS)
        else:
            new = rng.choice([b"", tok * 2, b"[" * 3000, b"]"])
        out = out[:m.start()] + new + out[m.end():]
    return out


# ======================================================================================= files: replay

def profile_name(rng: random.Random, i: int) -> str:
    return rng.choice([f"msprof_{i}.json", f"task_time_{i}.csv", f"mspti_{i}.jsonl", f"mspti_{i}.log",
                       f"mspti_{i}.json", f"mspti_{i}.csv", f"x{i}.txt", f"x{i}"])


def hostile_text(rng: random.Random) -> bytes:
    """A file body built to break a parser: depth, digits, width, garbage."""
    n = rng.choice([1000, 3000, 100000, 300000])
    kind = rng.randrange(11)
    if kind == 0:
        return b"[" * n
    if kind == 1:
        return b"[" * n + b"]" * n
    if kind == 2:
        return b'{"a":' * (n // 5) + b"1" + b"}" * (n // 5)
    if kind == 3:
        return ('[{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": ' + digits(rng) + ', "dur": 1}]').encode()
    if kind == 4:
        return ("Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)\n"
                f"0,{'x' * n},KERNEL_AICORE,1,2,1,12,13\n").encode()
    if kind == 5:
        return rng.randbytes(rng.choice([1, 100, 5000, 200000]))
    if kind == 6:
        return b""
    if kind == 7:
        return b" \n\t\n" * rng.randint(1, 1000)
    if kind == 8:
        return b'{"kind": "MEMCPY"}\n{"a": ' + b"[" * n + b"\n"
    if kind == 9:
        return f"[MEMCPY] copyKind: {digits(rng)}, bytes: {digits(rng)}, start: 1, end: 2\n".encode()
    return b'"' + b"\\" * n + b'"'


def special_path(rng: random.Random, tmp: Path, i: int) -> tuple[str, str]:
    """(kind, path) of something that is not a plain profile file: devices, FIFOs, folders, huge files."""
    kind = rng.choice(["dev_zero", "dev_null", "fifo", "sparse", "empty_dir", "prof_dir", "missing", "dangling",
                       "fifo_in_dir", "deep_dir"])
    p = tmp / f"{kind}{i}"
    if kind in ("dev_zero", "dev_null"):
        return kind, f"/dev/{kind[4:]}"
    if kind == "fifo":
        p = tmp / profile_name(rng, i)
        os.mkfifo(p)
    elif kind == "sparse":
        p = tmp / profile_name(rng, i)
        with open(p, "wb") as f:
            f.truncate(rng.choice([profiles.MAX_PROFILE_BYTES + 1, 1 << 40]))
    elif kind == "empty_dir":
        p.mkdir()
    elif kind in ("prof_dir", "fifo_in_dir", "deep_dir"):
        p = tmp / f"PROF_{i:06d}"
        inner = p / "device_0" / "timeline" if kind == "deep_dir" else p
        inner.mkdir(parents=True)
        target = inner / rng.choice(["msprof_20250101000000.json", "task_time_0.csv", "mspti.jsonl"])
        if kind == "fifo_in_dir":
            os.mkfifo(target)
        else:
            target.write_bytes(mutate_tokens(rng, (DATA / rng.choice(PROFILES)).read_bytes()))
    elif kind == "dangling":
        p = tmp / profile_name(rng, i)
        p.symlink_to(tmp / "nowhere")
    return kind, str(p)


def replay_input(rng: random.Random, tmp: Path, i: int) -> tuple[str, str]:
    """(kind, path) of one hostile profile."""
    roll = rng.random()
    if roll < 0.15:
        return special_path(rng, tmp, i)
    if roll < 0.45:
        p = tmp / profile_name(rng, i)
        p.write_bytes(hostile_text(rng))
        return "hostile", str(p)
    src = DATA / rng.choice(PROFILES)
    data = src.read_bytes()
    how = rng.choice(["bytes", "tokens", "truncated", "bom", "utf16"])
    data = {"bytes": lambda: mutate_bytes(rng, data), "tokens": lambda: mutate_tokens(rng, data),
            "truncated": lambda: data[:rng.randrange(len(data))], "bom": lambda: b"\xef\xbb\xbf" + data,
            "utf16": lambda: data.decode().encode("utf-16")}[how]()
    name = src.name.replace("step", str(i)) if rng.random() < 0.8 else profile_name(rng, i)
    (tmp / name).write_bytes(data)
    return f"mutated:{how}", str(tmp / name)


def replay_argv(rng: random.Random, tmp: Path, path: str, i: int) -> list[str]:
    argv = ["replay", path, "--product", rng.choice(["910B", "A3", "910B,310P", "950PR"]), "--out",
            str(tmp / f"out{i}")]
    if rng.random() < 0.2:
        argv += ["--msprof", str(tmp / f"m{i}.json")]
    if rng.random() < 0.2:
        argv += ["--measured-on", rng.choice(["910B", "A3"])]
    if rng.random() < 0.3:
        argv += ["--json"]
    return argv


def test_replay_survives_hostile_and_mutated_profiles(tmp_path, tmp_path_factory):
    tally = Tally("files")
    rng = random.Random(f"{tally.seed}/files")
    for i in range(fuzz_cases("files")):
        kind, path = replay_input(rng, tmp_path, i)
        tally.run(i, replay_argv(rng, tmp_path, path, i), kind)
    tally.finish(tmp_path_factory.getbasetemp())


# ==================================================================================== files: calibrate

def measurement_text(rng: random.Random) -> str:
    """A valid ascend-dmi --bw table or measurements CSV."""
    sizes = sorted(rng.sample([1 << k for k in range(10, 29)], rng.randint(2, 8)))
    if rng.random() < 0.5:
        lines = [f"Type: {rng.choice(['H2D', 'D2H', 'D2D'])}", "    Size(Bytes)   Execute Times   Bandwidth(GB/s)"]
        lines += [f"    {n:<14}{10:<16}{min(20.0, n / 4e5 + 1):.3f}" for n in sizes]
        return "\n".join(lines) + "\n"
    col = rng.choice(["gbps", "us"])
    rows = ["size,direction,memory," + col + ",count"]
    for n in sizes:
        d = rng.choice(["h2d", "d2h"])
        value = min(20.0, n / 4e5 + 1) if col == "gbps" else 2 + n / 2e4
        rows.append(f"{n},{d},{rng.choice(['pinned', 'pageable', ''])},{value:.3f},{rng.randint(1, 100)}")
    return "\n".join(rows) + "\n"


def calibrate_input(rng: random.Random, tmp: Path, i: int) -> tuple[str, str]:
    roll = rng.random()
    if roll < 0.12:
        return special_path(rng, tmp, i)
    p = tmp / f"meas{i}.{rng.choice(['csv', 'txt'])}"
    if roll < 0.35:
        p.write_bytes(hostile_text(rng))
        return "hostile", str(p)
    data = measurement_text(rng).encode()
    how = rng.choice(["valid", "bytes", "tokens", "tokens", "truncated", "cell"])
    if how == "cell":
        lines = data.split(b"\n")
        k = rng.randrange(1, max(2, len(lines) - 1))
        cells = lines[k].split(b",") if b"," in lines[k] else lines[k].split()
        if cells:
            cells[rng.randrange(len(cells))] = rng.choice(HUGE_INTS + ODD_NUMBERS).encode()
        lines[k] = (b"," if b"," in lines[k] else b"    ").join(cells)
        data = b"\n".join(lines)
    elif how != "valid":
        data = {"bytes": mutate_bytes, "tokens": mutate_tokens,
                "truncated": lambda r, d: d[:r.randrange(len(d))]}[how](rng, data)
    p.write_bytes(data)
    return f"measurements:{how}", str(p)


def test_calibrate_survives_hostile_and_mutated_measurements(tmp_path, tmp_path_factory):
    tally = Tally("calibrate")
    rng = random.Random(f"{tally.seed}/calibrate")
    for i in range(fuzz_cases("calibrate")):
        kind, path = calibrate_input(rng, tmp_path, i)
        out = tmp_path / f"cal{i}" / "mine.toml"
        argv = ["calibrate", path, "-o", str(out)]
        if rng.random() < 0.3:
            argv += ["--direction", rng.choice(["h2d", "d2h", "d2d"])]
        if rng.random() < 0.2:
            argv += ["--name", rng.choice(['a "b"\n[x]', "\x00", "é" * 3000, ""])]
        rc, _ = tally.run(i, argv, kind)
        if rc == 2 and out.exists():
            tally.fail("half_written", f"case {i}: a refused calibrate left {out}")
        if rc == 0 and not _loads(out):
            tally.fail("half_written", f"case {i}: calibrate wrote a config that does not load: {out}")
    tally.finish(tmp_path_factory.getbasetemp())


def _loads(path: Path) -> bool:
    try:
        config.load(path)
    except config.ConfigError:
        return False
    return True


# ============================================================================================ grids

def toml_value(rng: random.Random, depth: int = 0) -> str:
    """A TOML value a sweep grid field might be given, good or bad."""
    roll = rng.randrange(12)
    if roll == 0:
        return rng.choice(["0", "-1", "1", "2", "4096", str(2**63 - 1), str(-2**63), str(1 << 40), "65", "4097"])
    if roll == 1:
        return rng.choice(["nan", "inf", "-inf", "1e308", "1.5", "-0.0", "1e-300", "5e-324", "10.0", "+inf"])
    if roll == 2:
        return repr(rng.choice(["1M", "64Mb", "9999999T", "", "x", "4K", "1e308", "99999999999999999999", "-1",
                                "910B", "A3", "nope", "1K..4K", "2"]))
    if roll == 3:
        return rng.choice(["true", "false", "1979-05-27", "07:32:00", "1979-05-27T07:32:00Z"])
    if roll == 4:
        n = rng.choice([2, 50, 1000, 5000])
        return "[" * n + rng.choice(["1", "'1M'", ""]) + "]" * n
    if roll == 5:
        return "{a = 1}"
    if roll in (6, 7) and depth < 2:
        return "[" + ", ".join(toml_value(rng, depth + 1) for _ in range(rng.randint(0, 4))) + "]"
    return rng.choice(["['64K', 65536]", "[1, 2]", "[10, 20.5]", "['910B']", "[false]", "[1]", "'1M'", "2"])


GRID_FIELDS = ["products", "h2d", "d2h", "compute_us", "streams", "chunks", "pageable"]


def grid_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(["sweep = 3\n", "[[sweep]]\nh2d = 1\n", "", "[sweep\n", "[sweep]\nh2d = \n"])
    fields = rng.sample(GRID_FIELDS, rng.randint(0, len(GRID_FIELDS)))
    if rng.random() < 0.15:
        fields.append(rng.choice(["stream", "H2D", "workers", "chunk", "product"]))
    body = "".join(f"{f} = {toml_value(rng)}\n" for f in fields)
    header = "[sweep]\n" if rng.random() < 0.95 else "[sweeps]\n"
    return header + body


SWEEP_ARGS = {
    "--products": ["910B", "A3,910B", "nope", "", ","],
    "--h2d": ["1M", "64K,1M", "64Mb", "1e308", "99999999999999999999", "-1", "0", "4K..1M", "2T"],
    "--d2h": ["64K", "1M", "nan", "9" * 400, "1.5K"],
    "--compute-us": ["10", "0,10", "nan", "inf", "-1", "1e308", "1e9", "x"],
    "--streams": ["1", "1..2", "0", "65", "1..99999999999999999999", "2..1", "a..b"],
    "--chunks": ["2", "1..4", "0", "4097", "1,,2", "1..8" + "0" * 30],
    "--pageable": ["no", "yes", "both", "maybe"],
    "--workers": ["0", "1", "-1", "1025", "x", "99999999999999999999"],
    "--format": ["csv", "parquet,csv", "xls", ""],
}


def test_sweep_survives_hostile_grids_and_arguments(tmp_path, tmp_path_factory):
    tally = Tally("grids")
    rng = random.Random(f"{tally.seed}/grids")
    for i in range(fuzz_cases("grids")):
        argv = ["sweep", "--out", str(tmp_path / f"out{i}"), "--format", "csv"]
        kind = "arguments"
        if rng.random() < 0.7:
            grid = tmp_path / f"grid{i}.toml"
            grid.write_text(grid_text(rng))
            argv += ["--config", str(grid)]
            kind = "grid file"
        for flag in rng.sample(list(SWEEP_ARGS), rng.randint(0 if kind == "grid file" else 1, 3)):
            argv += [flag, rng.choice(SWEEP_ARGS[flag])]
        tally.run(i, argv, kind)
    tally.finish(tmp_path_factory.getbasetemp())


# =========================================================================================== configs

def _flat(table: dict, section: str = "") -> list[tuple[str, str, object]]:
    """(section, key, value) of every field of a config table, source tables left out."""
    out = []
    for k, v in table.items():
        if k == "source":
            continue
        if isinstance(v, dict):
            out += _flat(v, f"{section}.{k}" if section else k)
        elif section:
            out.append((section, k, v))
    return out


SHIPPED = _flat(tomllib.loads((config.CONFIG_DIR / "910B.toml").read_text()))
SHIPPED += [("hardware.host_link", "per_engine_gbps", 10.0), ("hardware", "sync_wait_us", 1.0),
            ("devices", "peer_groups", [[0, 1]]), ("validation", "unvalidated", ["h2d"])]


def config_value(rng: random.Random, value) -> str:
    """A TOML value for a config field: near its shipped value, or far off, or of the wrong type."""
    roll = rng.randrange(8)
    if roll < 3 and isinstance(value, (int, float)) and not isinstance(value, bool):
        scaled = value * 10 ** rng.uniform(-4, 4)
        return str(int(scaled)) if isinstance(value, int) else repr(scaled)
    if roll == 3:
        return rng.choice(HUGE_INTS[1:] + ["1e300", "-1.0", "0.0", "1e-300", "nan", "inf", "-inf"])
    if roll == 4:
        return rng.choice(['"fast"', "true", "[]", "{x = 1}", "1979-05-27", '""', "[1, 2]"])
    if roll == 5 and isinstance(value, str):
        return repr(rng.choice(["pcie", "hccs", "ub", "soc", "EP", "RC", "HBM", "x", value + " "]))
    if roll == 6 and isinstance(value, list):
        return rng.choice(["[[0, 99]]", "[[-1]]", "['p2p', 'nope']", "['aclrtMalloc']", "[[[0]]]", "[0]"])
    return json.dumps(value) if not isinstance(value, float) else repr(value)


def config_text(rng: random.Random, me: Path) -> str:
    """A product config: a (maybe misspelt) inherit, a [product] table, random fields."""
    inherit = rng.choice(['inherit = "910B"'] * 6 + ['inherits = "910B"', 'Inherit = "A3"', 'inhert = "910B"',
                          "inherit = 3", 'inherit = "nope"', f"inherit = {json.dumps(me.name)}",
                          'inherit = "../x.toml"', 'inherit = ""', ""])
    lines = [inherit]
    if rng.random() < 0.85:
        lines += ["[product]", f"name = {json.dumps(rng.choice(['fz', 'x' * 500, '', 'a b']))}",
                  f"title = {json.dumps(rng.choice(['t', 'é' * 100]))}"]
    by_section: dict[str, list[str]] = {}
    for section, key, value in rng.sample(SHIPPED, rng.randint(0, 4)):
        k = key if rng.random() < 0.9 else key + rng.choice(["s", "_x", ""])[: rng.randint(0, 2)]
        by_section.setdefault(section, []).append(f"{k} = {config_value(rng, value)}")
        if rng.random() < 0.85:
            by_section.setdefault(section + ".source", []).append(f'{k} = "A: fuzz"')
    for section, body in by_section.items():
        lines += [f"[{section}]", *body]
    if rng.random() < 0.05:
        lines.append(rng.choice(["[hardware", "x = ", "[devices]\ncount = 1\ncount = 2"]))
    return "\n".join(lines) + "\n"


def study_argv(rng: random.Random, product: str, out: Path) -> list[str]:
    roll = rng.random()
    if roll < 0.2:
        return ["products", "--products", product, "--json"]
    if roll < 0.4:
        return ["bandwidth", "--product", product, "--sizes", "4K", "--reps", "1", "--out", str(out), "--json"]
    return ["overlap", "--product", product, "--h2d", "1M", "--d2h", "256K", "--compute-us", "20", "--streams",
            "1..2", "--chunks", "2", "--grid-only", "--out", str(out), "--json"]


def test_studies_survive_random_product_configs(tmp_path, tmp_path_factory, monkeypatch):
    tally = Tally("configs")
    rng = random.Random(f"{tally.seed}/configs")
    folder = tmp_path / "configs"  # a config folder as ACL_EMU_CONFIG_DIR names one
    folder.mkdir()
    for name in ("910B", "A3"):
        (folder / f"{name}.toml").write_text((config.CONFIG_DIR / f"{name}.toml").read_text())
    monkeypatch.setattr(config, "CONFIG_DIR", folder)
    for i in range(fuzz_cases("configs")):
        by_name = rng.random() < 0.3
        path = folder / f"fz{i}.toml" if by_name else tmp_path / f"fz{i}.toml"
        path.write_text(config_text(rng, path))
        argv = study_argv(rng, path.stem if by_name else str(path), tmp_path / f"out{i}")
        tally.run(i, argv, "by name" if by_name else "by path")
    tally.finish(tmp_path_factory.getbasetemp())


def test_configs_named_through_the_environment_variable_in_a_fresh_process(tmp_path, tmp_path_factory):
    """The same configs, found by name through a real ACL_EMU_CONFIG_DIR (read when emu.config is imported)."""
    tally = Tally("env_configs")
    rng = random.Random(f"{tally.seed}/env_configs")
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "910B.toml").write_text((config.CONFIG_DIR / "910B.toml").read_text())
    env = {**os.environ, "ACL_EMU_CONFIG_DIR": str(folder)}
    env.pop("ACL_EMU_PRODUCT", None)
    for i in range(fuzz_cases("env_configs")):
        path = folder / f"fz{i}.toml"
        path.write_text(config_text(rng, path))
        argv = study_argv(rng, path.stem, tmp_path / f"out{i}")
        try:
            done = subprocess.run([sys.executable, "-m", "emu", *argv], capture_output=True, timeout=RUN_TIMEOUT,
                                  env=env, cwd=tmp_path)
            rc, err, problem = done.returncode, done.stderr.decode(errors="replace"), None
        except subprocess.TimeoutExpired:
            rc, err, problem = None, "", "hangs"
        tally.record(i, argv, "environment", rc, err, problem)
    tally.finish(tmp_path_factory.getbasetemp())


# ============================================================================================ ranges

SIZES = ["4K", "64K", "1M", "64K..1M", "1e308", "99999999999999999999", "-1", "64Mb", "0", "1K..4T", "4K,", ",",
         "", "nan", "inf", "1.5K", "0x100", "4 K", "4KiB", "4kb", "1_024", "\u0664K", "1e3", "4096", "9" * 400, "1T",
         "1M..4K", "4K..1M..", "-4K", "+4K", "2**10", "4K" * 100]
RANGES = ["1", "2", "1..2", "1..4", "2..1", "1..99999999999999999999", "0", "-1", "1,,2", "1..", "..4", "a..b",
          "1.5", "64", "65", "4097", "1..4096", "1e3", "", "\u0663", "0x4", "1,2,3", "-1..2", "1..8" + "0" * 30, "1," + "9" * 5000]
COUNTS_ = ["1", "2", "0", "-1", "10001", "1e308", "99999999999999999999", "nan", "1.5", "", "3", "0x2"]
MICROS = ["10", "0", "-1", "nan", "inf", "1e308", "1e-308", "99999999999999999999", "1e9", "5e-324", "x", "-0"]


def ranges_argv(rng: random.Random, out: Path) -> tuple[str, list[str]]:
    pick = rng.choice
    study = rng.choice(["bandwidth", "overlap", "overlap", "compare-bandwidth", "compare-overlap", "replay"])
    if study == "bandwidth":
        argv = ["bandwidth", "--product", "910B", "--sizes", pick(SIZES), "--reps", pick(COUNTS_)]
        if rng.random() < 0.3:
            argv += ["--peer-size", pick(SIZES)]
    elif study in ("overlap", "compare-overlap"):
        argv = (["overlap", "--product", "910B"] if study == "overlap" else ["compare", "overlap", "--products",
                                                                           "910B,A3"])
        argv += ["--h2d", pick(SIZES), "--d2h", pick(SIZES), "--compute-us", pick(MICROS), "--streams",
                 pick(RANGES), "--chunks", pick(RANGES)]
        argv += rng.sample(["--pageable", "--grid-only"], rng.randint(0, 2))
    elif study == "compare-bandwidth":
        argv = ["compare", "bandwidth", "--products", "910B", "--sizes", pick(SIZES), "--reps", pick(COUNTS_)]
    else:
        argv = ["replay", str(DATA / "task_time_step.csv"), "--tolerance-us", pick(MICROS)]
    return study, argv + ["--out", str(out), "--json"]


def test_cli_ranges_counts_and_sizes_are_refused_or_run(tmp_path, tmp_path_factory):
    tally = Tally("ranges")
    rng = random.Random(f"{tally.seed}/ranges")
    for i in range(fuzz_cases("ranges")):
        study, argv = ranges_argv(rng, tmp_path / f"out{i}")
        tally.run(i, argv, study)
    tally.finish(tmp_path_factory.getbasetemp())


# ============================================================================================= kills

MANY_COPIES = """\
import sys
import acl

acl.init()
acl.rt.set_device(0)
s, _ = acl.rt.create_stream()
h, _ = acl.rt.malloc_host(4096)
d, _ = acl.rt.malloc(4096, 0)
acl.rt.memset(d, 4096, 0, 4096)
for i in range(int(sys.argv[1])):
    if i % 2:
        acl.rt.memcpy_async(d, 4096, h, 4096, 1, s)
    else:
        acl.rt.memcpy_async(h, 4096, d, 4096, 2, s)
acl.rt.synchronize_stream(s)
"""
OUTPUTS = ("trace.json", "msprof.json", "sanitize.json")
RUN_TIMEOUT = 120


def _run_argv(script: Path, out: Path, copies: int) -> list[str]:
    return [sys.executable, "-m", "emu", "run", "--out", str(out), "--msprof", str(out / "msprof.json"),
            "--sanitize", "--sanitize-json", str(out / "sanitize.json"), str(script), str(copies)]


def _whole(out: Path) -> dict[str, str]:
    """Each output present: "ok" if it parses as a whole JSON document, else what is wrong."""
    found = {}
    for name in OUTPUTS:
        p = out / name
        if p.exists():
            try:
                json.loads(p.read_bytes())
                found[name] = "ok"
            except ValueError as e:
                found[name] = f"half-written ({p.stat().st_size} bytes: {e})"
    return found


def _partials(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith(".partial-"))


def _kill_at_random(rng: random.Random, argv: list[str], out: Path, when: float) -> tuple[int, str, bool]:
    """Start the run, SIGKILL it `when` seconds in, or a random moment after its first partial file appears
    (when < 0); return (its exit status, stderr, whether a partial file was there when it was killed)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=out.parent)
    t0, writing = time.monotonic(), False
    while proc.poll() is None and time.monotonic() - t0 < RUN_TIMEOUT:
        if (when >= 0 and time.monotonic() - t0 >= when) or (when < 0 and _partials(out)):
            time.sleep(0 if when >= 0 else rng.uniform(0, 0.15))
            writing = bool(_partials(out))
            proc.kill()
            break
        time.sleep(0.002)
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return -999, err.decode(errors="replace"), writing
    return proc.returncode, err.decode(errors="replace"), writing


def test_sigkill_while_writing_leaves_whole_files_and_no_partials(tmp_path, tmp_path_factory):
    tally = Tally("kills")
    rng = random.Random(f"{tally.seed}/kills")
    script, out = tmp_path / "many_copies.py", tmp_path / "out"
    script.write_text(MANY_COPIES)
    t0 = time.monotonic()
    good = subprocess.run(_run_argv(script, out, 1000), capture_output=True, timeout=RUN_TIMEOUT, cwd=tmp_path)
    full = time.monotonic() - t0
    assert good.returncode == 0 and _whole(out) == dict.fromkeys(OUTPUTS, "ok"), good.stderr.decode()[-3000:]
    for i in range(fuzz_cases("kills")):
        when = -1.0 if i % 2 == 0 else rng.uniform(0.3, 1.1) * full
        copies = rng.choice([500, 1000, 1500])
        rc, err, writing = _kill_at_random(rng, _run_argv(script, out, copies), out, when)
        kind = "finished" if rc != -signal.SIGKILL else "killed while writing" if writing else "killed"
        tally.record(i, [f"kill at {when:.3f}s", copies], kind, 0 if rc in (0, -signal.SIGKILL) else rc, err,
                     "hangs" if rc == -999 else None)
        tally.counts["partials_left_by_kills"] += len(_partials(out))  # for the next run to sweep
        bad = {k: v for k, v in _whole(out).items() if v != "ok"}
        if bad:
            tally.fail("half_written", f"case {i} (kill at {when:.3f}s): {bad}")
    last = subprocess.run(_run_argv(script, out, 200), capture_output=True, timeout=RUN_TIMEOUT, cwd=tmp_path)
    tally.record(-1, ["the run after the kills"], "clean", last.returncode, last.stderr.decode(errors="replace"),
                 None)
    if _partials(out):
        tally.fail("stale_partials", f"after the next run: {_partials(out)}")
    if _whole(out) != dict.fromkeys(OUTPUTS, "ok"):
        tally.fail("half_written", f"after the next run: {_whole(out)}")
    tally.finish(tmp_path_factory.getbasetemp())
    assert tally.counts["kind:killed while writing"] >= 1, f"no kill landed while a file was written: {tally.counts}"


# ============================================================================ what the fuzz found, fixed

@pytest.mark.parametrize("argv", [
    ["overlap", "--product", "910B", "--h2d", "1T", "--d2h", "1T", "--compute-us", "10"],
    ["overlap", "--product", "910B", "--h2d", "40G", "--d2h", "40G", "--compute-us", "10"],
    ["compare", "overlap", "--products", "910B,310P", "--h2d", "40G", "--d2h", "1M", "--compute-us", "10"],
    ["sweep", "--products", "910B,310P", "--h2d", "40G", "--d2h", "1M", "--format", "csv"],
])
def test_overlap_buffers_beyond_device_memory_are_refused_in_one_line(tmp_path, argv):
    rc, out, err, problem = cli(argv + ["--out", str(tmp_path / "out")])
    assert problem is None and rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "do not fit in the" in err and "of device memory of" in err, err
    assert not (tmp_path / "out").exists()


def test_overlap_buffers_beyond_device_memory_are_a_value_error_for_the_study():
    from emu.studies import overlap

    with pytest.raises(ValueError, match="device memory of 910B"):
        overlap.simulate("910B", 40 << 30, 40 << 30, 10.0, 1, 1)
    with pytest.raises(ValueError, match="device memory of 310P"):
        overlap.plan("310P", 30 << 30, 1 << 20, 10.0, [1], [1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="an untouched mapping larger than memory: Linux")
def test_pageable_overlap_buffers_are_untouched_pages_not_allocated_memory():
    from emu.studies import overlap

    a = overlap.untouched(1 << 40)  # more than the memory of any test machine: mapped, never touched
    assert a.nbytes == 1 << 40 and a.dtype.itemsize == 1
    del a


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_run_writes_the_sanitizer_json_whole_or_not_at_all(tmp_path, monkeypatch):
    import emu.cli as C

    script = tmp_path / "s.py"
    script.write_text("import acl\nacl.init()\nacl.rt.set_device(0)\n")
    target = tmp_path / "findings.json"
    target.write_text('{"previous": true}')

    real_dump = json.dump

    def dump_half(obj, f, **kw):  # the sanitizer's file only: half of it, then the disk is full
        if not str(getattr(f, "name", "")).endswith("findings.json"):
            return real_dump(obj, f, **kw)
        f.write('{"findings": [')
        raise OSError("disk full")

    monkeypatch.setattr(C.json, "dump", dump_half)
    rc, _, err, problem = cli(["run", "--sanitize", "--sanitize-json", str(target), "--out", str(tmp_path / "o"),
                               str(script)])
    assert rc == 2 and "disk full" in err and problem is None, err
    assert json.loads(target.read_text()) == {"previous": True}, (rc, err, problem)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".partial-")]


def test_calibrate_temporaries_are_partial_files_a_later_run_sweeps(tmp_path):
    meas = tmp_path / "m.csv"
    meas.write_text("size,direction,gbps\n4096,h2d,1\n1048576,h2d,10\n67108864,h2d,20\n")
    out = tmp_path / "cal" / "mine.toml"
    out.parent.mkdir()
    stale = [out.parent / f".partial-{_dead_pid()}-0-mine.toml", out.parent / f".partial-{_dead_pid()}-1-mine.png"]
    for p in stale:
        p.write_text("half")
    rc, _, err, problem = cli(["calibrate", str(meas), "-o", str(out)])
    assert problem is None and rc == 0, err
    assert sorted(p.name for p in out.parent.iterdir()) == ["mine.png", "mine.toml"]


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_calibrate_refuses_what_is_not_a_regular_file_without_blocking(tmp_path, kind):
    path = {"fifo": tmp_path / "dmi.txt", "dev_zero": Path("/dev/zero"), "directory": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)  # no writer: opening it to read would wait forever
    rc, _, err, problem = cli(["calibrate", str(path), "-o", str(tmp_path / "out" / "x.toml")], timeout=10)
    assert problem is None and rc == 2 and err.count("\n") == 1, (problem, err)
    assert "not a regular file" in err and str(path) in err, err


@pytest.mark.parametrize("argv", [
    ["overlap", "--product", "910B", "--h2d", "1M", "--d2h", "1M", "--compute-us", "10", "--streams", "1..64",
     "--chunks", "1..4096"],
    ["compare", "overlap", "--products", "910B", "--h2d", "1M", "--d2h", "1M", "--compute-us", "10", "--streams",
     "1", "--chunks", "1..4096"],
])
def test_an_overlap_grid_of_hours_is_refused_before_it_runs(tmp_path, argv):
    rc, _, err, problem = cli(argv + ["--out", str(tmp_path / "out")], timeout=10)
    assert problem is None and rc == 2 and err.count("\n") == 1, (problem, err)
    assert "argument --streams/--chunks" in err and "chunks in all, more than 1048576" in err, err


def test_the_overlap_study_refuses_a_grid_of_hours_too():
    from emu.studies import overlap

    overlap.check_work(range(1, 9), [1, 2, 4, 8, 16])  # the default grid
    with pytest.raises(ValueError, match="more than"):
        overlap.plan("910B", 1 << 20, 1 << 20, 10.0, range(1, 65), range(1, 4097))
