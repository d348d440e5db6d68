"""Every source a user sees resolves: to a public address, to a file of the CANN runtime repository at the
commit the emulator follows, or to a page of this repository.

The forms (docs/hardware.md#citation-forms):
- a full address, `https://...`;
- `hicann/runtime <path>[:line[-line]]`, the file
  https://github.com/hicann/runtime/blob/681ef7610df13c8128982901142a2c869ddbb53e/<path>;
- a path of this repository (`docs/...`, `configs/...`, `validation/...`), a page's section as
  `docs/<page>.md#<anchor>` (GitHub's anchor of a heading).

What is checked:
1. every `source` string of every config (inherited entries included, as the loader merges them) starts with
   its confidence, carries no tag of a document outside the repository, names every runtime file in the
   `hicann/runtime <path>` form, and every path and anchor it names exists. The runtime's files are checked
   against a local copy of the runtime when there is one (ACL_EMU_RUNTIME_TREE, default /work/runtime-src:
   its `src/` holds the runtime's `src/`; ACL_EMU_RUNTIME_GIT: a clone, for the other folders); without one
   that part is skipped;
2. no text under SCANNED_ROOTS cites a document outside the repository by a private tag;
3. `acl-emu products --sources` shows each field's value beside its source.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from emu import config
from emu.cli import main

REPO = Path(__file__).resolve().parents[1]
RUNTIME_COMMIT = "681ef7610df13c8128982901142a2c869ddbb53e"

# What the unresolved-tag check reads; the owner of emu/runtime extends it to all of emu/ once that is clean.
SCANNED_ROOTS = ("configs", "docs", "models", "validation", "README.md", "benchmarks", "tests", "emu", "notebooks")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".rst", ".cfg", ".ini", ".yml", ".yaml", ".json", ".csv"}

# Citations of documents that are not in this repository nor public: the private specification's sections and
# file names, its evidence tags, the source documents it was written from, and absolute workspace paths.
UNRESOLVED = {
    "hardware notes file": re.compile("HARDWARE" r"\.md"),
    "specification file": re.compile("ACL_MEMORY" r"_SPEC|PYACL" r"\.md"),
    "workspace folder": re.compile(r"shared/(?:spec|seeds)\b|(?<![\w.])/work/"),
    "spec section": re.compile(r"(?i)\bspec(?:'s)?\s+(?:sections?\s+|§\s*)?\d|\bspec\s*§"),
    "the spec": re.compile(r"(?i)\b(?:our|the)\s+spec\b(?![-_.(])"),
    "evidence tag": re.compile(r"\[(?:doc|source|seed|UT)\s"),
    "seed document": re.compile(r"(?i)\bseeds?\s+\d{3}\b|\bseed documents?\b"),
    "doc number": re.compile(r"(?i)\bdoc\s+\d{2}(?:-\d{2})?\b"),
    "unit-test tag": re.compile(r"\bUT-(?:ACL|RTM|RTI)\b"),
}

CONFIDENCE = re.compile(r"^(?:C|3P|A|fit):\s")
URL = re.compile(r"https?://[^\s)\],;\"']+")
RUNTIME_CITE = re.compile(r"hicann/runtime ((?:src|include|pkg_inc|docs|tests|cmake|scripts)/[\w./+-]*[\w])"
                          r"(?::(\d+)(?:-(\d+))?)?")
REPO_PATH = re.compile(r"(?<![\w/.-])((?:docs|configs|validation|models|emu|tests|benchmarks|notebooks)/[\w./-]*\w)"
                       r"(?:#([\w-]+))?")
BARE_RUNTIME_FILE = re.compile(r"[\w/.-]*\w\.(?:cc|cpp|hpp|h|ini)\b")


def unresolved(text: str) -> list[str]:
    """The private tags `text` cites, as 'what: the match'."""
    return [f"{what}: {m.group(0)!r}" for what, rx in UNRESOLVED.items() for m in rx.finditer(text)]


# ---------------------------------------------------------------- anchors

def github_anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading: links reduced to their text, lowercase, punctuation dropped,
    spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(page: Path) -> frozenset:
    """The anchors of a markdown page: one per heading (duplicates numbered as GitHub does), and explicit ids."""
    seen: dict = {}
    out = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not fenced:
            a = github_anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
        out.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return frozenset(out)


def test_github_anchor_rules():
    assert github_anchor("910B host link") == "910b-host-link"
    assert github_anchor("1. Product → chip table") == "1-product--chip-table"
    assert github_anchor("APIs the runtime itself refuses (207000 unless noted)") == \
        "apis-the-runtime-itself-refuses-207000-unless-noted"
    assert github_anchor("Batch copies: aclrtMemcpyBatch, BatchV2") == "batch-copies-aclrtmemcpybatch-batchv2"
    assert github_anchor("200I A2 (Atlas 200I/500 A2)") == "200i-a2-atlas-200i500-a2"


# ---------------------------------------------------------------- the runtime's files

class RuntimeFiles:
    """The runtime's files at RUNTIME_COMMIT, from a local copy: a tree whose `src/` is the runtime's `src/`
    (ACL_EMU_RUNTIME_TREE) and, for the other folders, a clone (ACL_EMU_RUNTIME_GIT)."""

    def __init__(self):
        tree = Path(os.environ.get("ACL_EMU_RUNTIME_TREE", "/work/runtime-src"))
        self.tree = tree if (tree / "src").is_dir() else None
        git = os.environ.get("ACL_EMU_RUNTIME_GIT")
        self.git = Path(git) if git and Path(git).exists() else None
        self._listing = None

    def can_check(self, path: str) -> bool:
        return self.git is not None or (self.tree is not None and path.startswith("src/"))

    def _git(self, *args) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(self.git), *args], capture_output=True, text=True, timeout=120)

    def lines(self, path: str) -> int | None:
        """Number of lines of the file (0 for a folder), None if it does not exist."""
        if self.tree is not None and path.startswith("src/"):
            f = self.tree / path
            return len(f.read_bytes().splitlines()) if f.is_file() else (0 if f.is_dir() else None)
        kind = self._git("cat-file", "-t", f"{RUNTIME_COMMIT}:{path}").stdout.strip()
        if kind == "tree":
            return 0
        res = self._git("show", f"{RUNTIME_COMMIT}:{path}")
        return len(res.stdout.splitlines()) if res.returncode == 0 else None


@pytest.fixture(scope="module")
def runtime_files():
    return RuntimeFiles()


def check_runtime_citation(runtime_files, path: str, first, last) -> str | None:
    """Why the citation does not resolve, or None."""
    if not runtime_files.can_check(path):
        return None
    n = runtime_files.lines(path)
    if n is None:
        return f"hicann/runtime {path}: no such file at {RUNTIME_COMMIT[:9]}"
    for line in (first, last):
        if line is not None and not 1 <= int(line) <= n:
            return f"hicann/runtime {path}:{line}: the file has {n} lines"
    return None


def check_repo_path(path: str, anchor: str | None) -> str | None:
    f = REPO / path
    if not f.exists():
        return f"{path}: no such file in the repository"
    if anchor is not None and f.suffix == ".md" and anchor not in anchors(f):
        return f"{path}#{anchor}: no such section (headings give: {', '.join(sorted(anchors(f)))})"
    return None


def source_problems(text: str, runtime_files) -> list[str]:
    """Why a config's source string does not resolve, one line per reason."""
    problems = unresolved(text)
    if not CONFIDENCE.match(text):
        problems.append("does not start with its confidence (C:, 3P:, A: or fit:)")
    rest = URL.sub(" ", text)
    for m in RUNTIME_CITE.finditer(rest):
        why = check_runtime_citation(runtime_files, m.group(1), m.group(2), m.group(3))
        if why:
            problems.append(why)
    rest = RUNTIME_CITE.sub(" ", rest)
    for m in BARE_RUNTIME_FILE.finditer(rest):
        problems.append(f"{m.group(0)!r}: a runtime file not cited as 'hicann/runtime <path>'")
    for m in REPO_PATH.finditer(rest):
        why = check_repo_path(m.group(1), m.group(2))
        if why:
            problems.append(why)
    return problems


# ---------------------------------------------------------------- 1. config sources

@pytest.mark.parametrize("name", config.available())
def test_every_config_source_resolves(name, runtime_files):
    config.load(name)  # the config loads: its sources are those of a working config
    sources = config.source_tables(name)
    assert sources, name
    bad = {field: problems for field, text in sources.items() if (problems := source_problems(text, runtime_files))}
    assert not bad, f"configs/{name}.toml:\n" + "\n".join(f"  {k}: {'; '.join(v)}" for k, v in sorted(bad.items()))


@pytest.mark.parametrize("text", [
    "C: 65536 events per device [doc 07], spec 6.4",
    "A: not public (" "HARDWARE" ".md)",
    "C: descriptor V1 [source APIH, CFG]",
    "3P: see seed 003",
    "C: dev_info_reg.cc:57",
    "C: docs/hardware.md#no-such-section",
    "C: docs/no-such-page.md",
    "C: validation/no-such-file.toml",
    "64 GiB of HBM (no confidence)",
])
def test_the_config_check_catches(text, runtime_files):
    assert source_problems(text, runtime_files)


@pytest.mark.parametrize("text", [
    "C: 64 GiB: memory_size in hicann/runtime src/platform/platform_config/cann/Ascend910B1.ini:23 "
    "(docs/hardware.md#910b-memory)",
    "fit: 24.9 GB/s (https://github.com/FlagOpen/FlagPerf/blob/5a30cd2a/README.md); residual: acl-emu validate "
    "(validation/measurements.toml, row flagperf-910b-d2h-512m)",
    "A: the page-locked staging chunk (docs/hardware.md#pageable-staging), configs/A3.toml",
])
def test_the_config_check_accepts(text, runtime_files):
    assert source_problems(text, runtime_files) == []


def test_a_missing_runtime_file_is_caught_when_the_runtime_is_at_hand(runtime_files):
    if not runtime_files.can_check("src/x"):
        pytest.skip("no local copy of the runtime (ACL_EMU_RUNTIME_TREE)")
    assert source_problems("C: hicann/runtime src/runtime/no_such_file.cc:3", runtime_files)
    assert source_problems("C: hicann/runtime src/runtime/api/api.hpp:999999", runtime_files)


# ---------------------------------------------------------------- 2. no private tags in the text

def scanned_files() -> list[Path]:
    me = Path(__file__).resolve()
    out = []
    for root in SCANNED_ROOTS:
        p = REPO / root
        files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
        out += [f for f in files if f.suffix in TEXT_SUFFIXES and "__pycache__" not in f.parts and f.resolve() != me]
    return out


def test_the_scan_reads_the_roots():
    files = {f.relative_to(REPO).as_posix() for f in scanned_files()}
    assert {"README.md", "docs/hardware.md", "configs/910B.toml", "emu/config.py", "emu/memory.py",
            "validation/measurements.toml", "tests/test_products.py"} <= files
    assert any(f.startswith("emu/studies/") for f in files) and any(f.startswith("models/") for f in files)


def test_no_text_cites_a_document_outside_the_repository():
    bad = []
    for f in scanned_files():
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for problem in unresolved(line):
                bad.append(f"{f.relative_to(REPO)}:{n}: {problem}")
    assert not bad, "\n".join(bad)


def test_every_section_and_runtime_file_cited_in_the_text_exists(runtime_files):
    """What the text cites resolves too: every `docs/<page>.md#<section>` names a heading of that page, and every
    `hicann/runtime <path>` a file or folder of the runtime (when a local copy is at hand)."""
    bad = []
    for f in scanned_files():
        text = URL.sub(" ", f.read_text(encoding="utf-8", errors="replace"))
        for m in re.finditer(r"(?<![\w/.-])(docs/[\w./-]*\.md)#([\w-]+)", text):
            if (why := check_repo_path(m.group(1), m.group(2))):
                bad.append(f"{f.relative_to(REPO)}: {why}")
        for m in RUNTIME_CITE.finditer(text):
            if (why := check_runtime_citation(runtime_files, m.group(1), m.group(2), m.group(3))):
                bad.append(f"{f.relative_to(REPO)}: {why}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("text", ["(spec 7.1)", "Spec section 6:", "spec §13", "[seed 003]", "seed 000",
                                  "[doc 11-01]", "(doc 04)", "[source ERR]", "[UT X]", "UT-ACL memory_memcpy",
                                  "our spec", "HARDWARE" ".md", "shared/" "spec/PYACL" ".md"])
def test_the_scan_catches(text):
    assert unresolved(text)


@pytest.mark.parametrize("text", ["docs/hardware.md#task-sizes", "importlib.util.spec_from_file_location",
                                  "spec = importlib.util.find_spec('x')", "specification", "seeded with seed=7",
                                  "hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md"])
def test_the_scan_lets_through(text):
    assert unresolved(text) == []


# ---------------------------------------------------------------- 3. products --sources shows values

def test_products_sources_shows_each_value_beside_its_source(capsys):
    assert main(["products", "--sources", "--products", "910B"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("devices.", "hardware.", "api."))}
    assert "64 GiB" in rows["devices.memory_bytes"] and "C:" in rows["devices.memory_bytes"]
    assert " 1984 " in rows["devices.max_streams"]
    assert " 0.9596 " in rows["hardware.host_link.efficiency"] and "fit:" in rows["hardware.host_link.efficiency"]
    assert " 4 MiB " in rows["hardware.staging.chunk_bytes"]
    assert "p2p," in rows["api.features"] and "(none)" in rows["api.unsupported"]
    header = next(line for line in out.splitlines() if line.startswith("field"))
    assert header.split() == ["field", "value", "source"]
    assert "hicann/runtime <path>" in out and RUNTIME_COMMIT in out


def test_products_json_gives_each_cited_value(capsys):
    assert main(["products", "--json", "--products", "910B,A3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    b, a3 = rows
    assert set(b["values"]) == set(b["sources"])
    assert b["values"]["devices.memory_bytes"] == 68_719_476_736
    assert b["values"]["hardware.host_link.gen"] == 4
    assert a3["values"]["hardware.pair_link.gbps"] == 189.4
    assert "p2p" in b["values"]["api.features"]
