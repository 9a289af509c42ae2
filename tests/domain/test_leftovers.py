"""What a passing check must still mention (gates/domain/leftovers.py).

A killed writer's temp file must never reach a commit through `git add -A`, and the state dir's are
reported and moved by `gate doctor --fix`; a state dir that writing commands refuse is a warning in
`gate check` and a FIX in `gate doctor`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import call_gate, git, run_gate
from helpers import entries

KILLED_WRITER = """
import os, sys
from pathlib import Path
from gates.infra import fsio
os.replace = lambda *args, **kwargs: os.kill(os.getpid(), 9)  # SIGKILL between the temp file's fsync and its rename
fsio.write_atomic(Path(sys.argv[1]), b"half of a new hand-over\\n")
"""


def _kill_a_writer(target: Path) -> Path:
    """Run the real atomic writer on `target` and SIGKILL it before the rename: its temp file stays."""
    before = set(os.listdir(target.parent))
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], capture_output=True)
    assert proc.returncode == -9
    [left] = set(os.listdir(target.parent)) - before
    assert left.startswith(".tmp-")
    return target.parent / left


def test_a_killed_writers_temp_file_is_refused_by_the_installed_hook(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_gate(repo, "install-hooks").returncode == 0
    handoff_before = (repo / "HANDOFF.md").read_bytes()
    left = _kill_a_writer(repo / "HANDOFF.md")
    assert (repo / "HANDOFF.md").read_bytes() == handoff_before  # the writer never got to rename
    head, tree = git(repo, "rev-parse", "HEAD"), git(repo, "ls-tree", "-r", "HEAD")
    (repo / "notes.txt").write_text("real work\n")
    git(repo, "add", "-A")
    bad = subprocess.run(["git", "commit", "-q", "-m", "work"], cwd=repo, capture_output=True, text=True)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    shown = left.name
    assert (f"{shown}:1: [gate] {shown} is a temp file a killed writer left, not content: "
            f"`git rm --cached -- {shown}`, then `gate doctor --fix` moves it to lost+found") in bad.stderr.splitlines()
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "ls-tree", "-r", "HEAD")) == (head, tree)  # nothing committed

    git(repo, "rm", "-q", "--cached", "--", shown)
    good = subprocess.run(["git", "commit", "-q", "-m", "work"], cwd=repo, capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert shown not in git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert (f"{shown}:1: [gate warning] {shown} is a temp file a killed writer left: `git add -A` would commit it "
            "— `gate doctor --fix` moves it to lost+found") in good.stderr.splitlines()  # unstaged: said, not refused

    doctor = run_gate(repo, "doctor")
    young = rf"warn  temp file {re.escape(shown)} is \d+s old: a writer may be using it now"
    assert [line for line in doctor.stdout.splitlines() if re.fullmatch(young, line)], doctor.stdout
    from gates.domain import leftovers

    monkeypatch.setattr(leftovers, "MIN_AGE", 0.0)  # its ctime cannot be backdated; a real leftover is old
    body = left.read_bytes()
    code, out, _ = call_gate(repo, "doctor", capsys=capsys, monkeypatch=monkeypatch)
    assert (f"FIX   temp file {shown} of a killed writer: `git add -A` would commit it — `gate doctor --fix` moves it "
            "to lost+found") in out.splitlines() and code == 1
    code, out, _ = call_gate(repo, "doctor", "--fix", capsys=capsys, monkeypatch=monkeypatch)
    assert not left.exists() and "ok    no temp files of killed writers" in out.splitlines()
    [folder] = (repo / ".git" / "gate" / "lost+found").iterdir()
    manifest = json.loads((folder / "manifest.json").read_text())
    [entry] = manifest["files"]
    assert entry["from"] == str(left) and entry["shown"] == shown and (folder / entry["name"]).read_bytes() == body
    assert f"fix: moved {shown} to {folder / entry['name']}" in out.splitlines()
    assert (repo / "HANDOFF.md").read_bytes() == handoff_before
    assert "temp-files-moved" in [json.loads(line)["action"] for line in
                                  (repo / ".git" / "gate" / "journal.jsonl").read_text().splitlines()]


def test_leftovers_in_the_state_dir_are_reported_and_moved(repo: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    flags = repo / ".git" / "gate" / "flags"
    flags.mkdir(parents=True)
    left = _kill_a_writer(flags / "20261130T000000Z-io-error-00000000.json")
    from gates.domain import leftovers

    monkeypatch.setattr(leftovers, "MIN_AGE", 0.0)
    code, out, _ = call_gate(repo, "doctor", capsys=capsys, monkeypatch=monkeypatch)
    assert f"warn  temp file {left} of a killed writer: `gate doctor --fix` moves it to lost+found" in out.splitlines()
    code, out, _ = call_gate(repo, "doctor", "--fix", capsys=capsys, monkeypatch=monkeypatch)
    assert not left.exists() and "ok    no temp files of killed writers" in out.splitlines()
    [folder] = (repo / ".git" / "gate" / "lost+found").iterdir()
    assert [e["from"] for e in json.loads((folder / "manifest.json").read_text())["files"]] == [str(left)]


def test_a_planted_huge_temp_file_is_left_for_a_person_not_hashed(repo: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile repository plants a 4 GB sparse file under a temp file's exact name: it is named, never hashed
    (which would take minutes) and never moved; the file and the state dir stay as they were."""
    from gates.domain import leftovers

    planted = repo / ".tmp-HANDOFF.md-0123456789ab"
    with open(planted, "wb") as handle:
        handle.truncate(4 << 30)
    before = planted.stat()
    monkeypatch.setattr(leftovers, "MIN_AGE", 0.0)
    code, out, _ = call_gate(repo, "doctor", "--fix", capsys=capsys, monkeypatch=monkeypatch)
    assert f"fix: left {planted.name}: 4,294,967,296 bytes, larger than any file the gate writes: inspect it " \
           "yourself" in out.splitlines(), out
    after = planted.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    manifests = list((repo / ".git" / "gate" / "lost+found").glob("*/manifest.json"))
    assert [json.loads(m.read_text())["files"] for m in manifests] == [[]]  # nothing moved, and it says so


def test_a_temp_file_that_grows_while_it_is_hashed_is_left(repo: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer appends to the leftover while the gate hashes it for the manifest: the hash no longer describes
    the file, so it is left where it is (and said), never moved with a manifest that lies."""
    from gates.domain import leftovers

    left = _kill_a_writer(repo / "HANDOFF.md")
    ino, real_read = left.stat().st_ino, os.read
    grown: list[bool] = []

    def read(fd: int, size: int) -> bytes:
        if not grown and os.fstat(fd).st_ino == ino:
            with open(left, "ab") as handle:  # another writer, between the gate's lstat and its read
                handle.write(b"appended meanwhile\n")
            grown.append(True)
        return real_read(fd, size)

    monkeypatch.setattr(leftovers, "MIN_AGE", 0.0)
    monkeypatch.setattr(os, "read", read)
    code, out, _ = call_gate(repo, "doctor", "--fix", capsys=capsys, monkeypatch=monkeypatch)
    monkeypatch.setattr(os, "read", real_read)
    assert grown and f"fix: left {left.name}: it changed while being looked at" in out.splitlines(), out
    assert left.exists() and left.read_bytes().endswith(b"appended meanwhile\n")


def test_young_temp_files_are_never_moved(repo: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    left = _kill_a_writer(repo / "HANDOFF.md")
    code, out, _ = call_gate(repo, "doctor", "--fix", capsys=capsys, monkeypatch=monkeypatch)
    said = rf"fix: left {re.escape(left.name)}: \d+s old, a writer may still be using it"
    assert left.exists() and [line for line in out.splitlines() if re.fullmatch(said, line)], out
    assert not (repo / ".git" / "gate" / "lost+found").exists()


def _unsafe(repo: Path, kind: str, tmp_path: Path) -> Path:
    root = repo / ".git" / "gate"
    if kind == "symlink":
        (tmp_path / "elsewhere").mkdir()
        root.symlink_to(tmp_path / "elsewhere")
    elif kind == "file":
        root.write_text("not a folder\n")
    elif kind == "world-writable":
        root.mkdir()
        root.chmod(0o777)
    elif kind == "world-writable-flags":
        (root / "flags").mkdir(parents=True)
        (root / "flags").chmod(0o777)
        return root / "flags"
    return root


@pytest.mark.parametrize("kind", ["symlink", "file", "world-writable", "world-writable-flags"])
def test_an_unsafe_state_dir_is_a_warning_in_check_and_a_fix_in_doctor(repo: Path, tmp_path: Path, kind: str) -> None:
    folder = _unsafe(repo, kind, tmp_path)
    why = "not a plain directory (a symlink?)" if kind in ("symlink", "file") else "writable by every user"
    before = entries(repo / ".git"), entries(tmp_path / "elsewhere") if kind == "symlink" else {}
    proc = run_gate(repo, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        f"{folder}:1: [gate warning] state dir {folder}: {why}: commands that write (flags, claims, stamps, the "
        "journal) refuse it — `gate doctor` says what to fix",
        "gate check: passed with warnings: 0 errors, 1 warning (gate: 1; 9 gates on HANDOFF.md in the work tree)"]
    document = json.loads(run_gate(repo, "check", "--format", "json").stdout)
    assert document["ok"] and [(f["gate"], f["severity"], f["path"]) for f in document["findings"]] == [
        ("gate", "warning", str(folder))]
    github = run_gate(repo, "check", "--format", "github").stdout.splitlines()[0]
    assert github.startswith(f"::warning file={folder},line=1,title=gate::state dir ")
    sarif = json.loads(run_gate(repo, "check", "--format", "sarif").stdout)["runs"][0]
    assert [(r["ruleId"], r["level"]) for r in sarif["results"]] == [("gate", "warning")]
    assert sarif["tool"]["driver"]["rules"][-1]["id"] == "gate"
    suite = ElementTree.fromstring(run_gate(repo, "check", "--format", "junit").stdout.encode())
    [case] = [c for c in suite.findall("testcase") if c.get("name") == "gate"]
    assert case.find("failure") is None and why in (case.findtext("system-out") or "")
    assert suite.get("failures") == "0"
    doctor = run_gate(repo, "doctor")
    fix = "move it aside" if kind in ("symlink", "file") else "chmod o-w (or set core.sharedRepository)"
    assert f"FIX   state dir {folder}: {why}: commands that write refuse it — {fix}" in doctor.stdout.splitlines()
    assert doctor.returncode == 1
    after = entries(repo / ".git"), entries(tmp_path / "elsewhere") if kind == "symlink" else {}
    assert after == before  # reading made nothing, followed nothing, changed no mode


@pytest.mark.parametrize("how", ["sticky", "shared"])
def test_a_state_dir_writers_accept_is_no_warning(repo: Path, how: str) -> None:
    root = repo / ".git" / "gate"
    root.mkdir()
    root.chmod(0o1777 if how == "sticky" else 0o2777)
    if how == "shared":
        git(repo, "config", "core.sharedRepository", "all")
    proc = run_gate(repo, "check")
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["gate check: passed (9 gates on HANDOFF.md in the work tree)"]
    assert "FIX   state dir" not in run_gate(repo, "doctor").stdout
    assert stat.S_IMODE(root.stat().st_mode) == (0o1777 if how == "sticky" else 0o2777)
