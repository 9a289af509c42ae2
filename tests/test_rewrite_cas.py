"""Every read-modify-write of a repository file is a compare-and-swap (issue 25, class 5).

`gate archive`, `gate check --fix`, `gate render` and `gate stamp` read the hand-over (and the archive), work out the
new content, and replace the file: a line written meanwhile by someone else must end up in one of the files, never in
neither. fsio.rewrite compares right before the rename and once more after it; a difference is a one-line error
(`… changed while gate X was rewriting it; nothing was written — run it again`), and the file keeps every line.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

import pytest
from conftest import call_gate, git, handoff_text, run_gate
from records_helpers import record

from gates.infra import fsio

TABLE = "## Decisions\n<!-- gate:table decisions -->\n_(none)_\n<!-- /gate:table -->\n"
COMMANDS = {  # command -> (argv, exit code when the hand-over changed meanwhile, who the message names)
    "archive": (["archive"], 3, "gate archive"),
    "check --fix": (["check", "--fix", "--only", "handoff-no-checked-items"], 3, "gate check --fix"),
    "render": (["render"], 3, "gate render"),
    "stamp": (["stamp"], 1, "gate stamp"),
}

APPENDER = r"""
import os, sys, time
path, stop, log = sys.argv[1:4]
written, end = [], time.monotonic() + 30
while not os.path.exists(stop) and time.monotonic() < end:
    line = f"- keep-{len(written)}-{os.getpid()}"
    with open(path, "a") as f:
        f.write(line + "\n")
    written.append(line)
    time.sleep(0.001)
open(log, "w").write("\n".join(written))
"""


def _something_to_do(repo: Path, command: str, round_: int) -> None:
    """Give the command work: a checked item to archive, a record for the table (stamp always has work)."""
    if command in ("archive", "check --fix"):
        text = (repo / "HANDOFF.md").read_text()
        (repo / "HANDOFF.md").write_text(text.replace("## Open Threads\n", f"## Open Threads\n- [x] done {round_}\n", 1))
    elif command == "render":
        record(repo, f"decision {round_}")


def _prepare(repo: Path, command: str) -> None:
    if command == "render":
        text = (repo / "HANDOFF.md").read_text().replace("## Decisions\n", TABLE, 1)
        (repo / "HANDOFF.md").write_text(text)
        git(repo, "commit", "-qam", "table", "--no-verify")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_concurrent_appender_never_loses_a_line(repo: Path, tmp_path: Path, command: str) -> None:
    """The attack: a real process appends to the hand-over while the command runs, round after round (bounded in
    rounds and in time). Every line it wrote is in HANDOFF.md or ARCHIVE.md afterwards, or in the file a "twice"
    message names. (On a file system that syncs at once, tmpfs, a line written a moment after the rename into the
    old file was lost about once in ten runs, before rewrite waited fsio.SETTLE for its last look.)"""
    _prepare(repo, command)
    argv, code, who = COMMANDS[command]
    lost: list[str] = []
    total = 0
    end = time.monotonic() + 60
    for round_ in range(6):
        if time.monotonic() > end:
            break
        _something_to_do(repo, command, round_)
        stop, log = tmp_path / f"stop-{round_}", tmp_path / f"log-{round_}"
        appender = subprocess.Popen([sys.executable, "-c", APPENDER, str(repo / "HANDOFF.md"), str(stop), str(log)])
        time.sleep(0.05)  # it is appending
        proc = run_gate(repo, *argv)
        stop.touch()
        assert appender.wait(timeout=60) == 0
        done = 1 if command == "check --fix" else 0  # --fix exits 1 when it mended something: stage again
        assert proc.returncode in (done, code), proc.stdout + proc.stderr
        kept = ""
        if proc.returncode == code:  # the appender wrote to the old file after the comparison, and it is put back, or
            # (it wrote to the new file too) the old file's content is kept beside it and named
            twice = re.search(r"changed while .*, twice: what was written to it meanwhile is kept in (\S+) — ", proc.stderr)
            assert twice or f"HANDOFF.md changed while {who} was rewriting it; nothing was written — run it again" \
                in proc.stderr, proc.stderr
            kept = (repo / twice[1]).read_text() if twice else ""
        both = (repo / "HANDOFF.md").read_text() + kept + ((repo / "ARCHIVE.md").read_text()
                                                           if (repo / "ARCHIVE.md").exists() else "")
        written = log.read_text().splitlines()
        total += len(written)
        lost += [line for line in written if line + "\n" not in both]
    assert total and not lost, f"{len(lost)} of {total} appended lines are in neither file: {lost[:5]}"


def _race(monkeypatch: pytest.MonkeyPatch, stage: str, name: str, *also: Path) -> list[str]:
    """At `stage` of the rewrite of the file called `name`, append a line to it (once), and to each of `also`."""
    done: list[str] = []

    def hook(at: str, path: str) -> None:
        if at == stage and Path(path).name == name and not done:
            line = f"- written meanwhile ({stage})"
            for target in (Path(path), *also):
                with target.open("a") as f:
                    f.write(line + "\n")
            done.append(line)

    monkeypatch.setattr(fsio, "RACE_HOOKS", [hook])
    return done


def _ready(repo: Path, command: str) -> tuple[str, str]:
    """The hand-over with work for `command` and an archive holding older entries: (hand-over, archive) as they are."""
    _prepare(repo, command)
    (repo / "ARCHIVE.md").write_text("# Archive\n\nolder entries\n")
    _something_to_do(repo, command, 0)
    return (repo / "HANDOFF.md").read_text(), (repo / "ARCHIVE.md").read_text()


@pytest.mark.parametrize("stage", ["read", "swap", "rename"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_line_written_between_the_read_and_the_rename_stops_the_rewrite(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str, stage: str) -> None:
    """Deterministic: the hook point edits the hand-over after the command read it, before its last comparison
    ("read", "swap") or right after it, in the instant before the rename ("rename": the line lands in the old file,
    and is put back). The command says so in one line and exits with its code; every line is kept."""
    before, archive = _ready(repo, command)
    argv, code, who = COMMANDS[command]
    done = _race(monkeypatch, stage, "HANDOFF.md")
    got, out, err = call_gate(repo, *argv, capsys=capsys, monkeypatch=monkeypatch)
    assert done and got == code, (got, out, err)
    assert f"HANDOFF.md changed while {who} was rewriting it; nothing was written — run it again" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (repo / "HANDOFF.md").read_text() == before + done[0] + "\n"
    assert (repo / "ARCHIVE.md").read_text() == archive  # archive: its append was taken back
    assert not [p.name for p in repo.iterdir() if fsio.is_temp_name(p.name)]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_writer_that_opened_the_file_before_the_rename_and_writes_a_moment_after_it_is_put_back(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """The attack the concurrent appender found on a file system that syncs at once (tmpfs): a writer opens the
    hand-over in the instant before the rename and writes through that handle a moment after the rename, into the
    old file. The last look at the old file came right after the rename and missed the line; it now waits
    fsio.SETTLE (here the write comes 5 ms after the rename), and the line is put back: nothing written, no line lost."""
    import threading

    before, archive = _ready(repo, command)
    argv, code, who = COMMANDS[command]
    line = "- written a moment after the rename"
    handles: list[TextIO] = []
    writers: list[threading.Timer] = []

    def write_late() -> None:
        handles[0].write(line + "\n")
        handles[0].close()

    def hook(at: str, path: str) -> None:
        if Path(path).name != "HANDOFF.md":
            return
        if at == "rename" and not handles:
            handles.append(open(path, "a"))  # the file the path names now: the old one, once renamed over
        elif at == "renamed" and handles and not writers:
            writers.append(threading.Timer(0.005, write_late))
            writers[0].start()

    monkeypatch.setattr(fsio, "RACE_HOOKS", [hook])
    got, out, err = call_gate(repo, *argv, capsys=capsys, monkeypatch=monkeypatch)
    writers[0].join()
    assert got == code, (got, out, err)
    assert f"HANDOFF.md changed while {who} was rewriting it; nothing was written — run it again" in err
    assert (repo / "HANDOFF.md").read_text() == before + line + "\n"
    assert (repo / "ARCHIVE.md").read_text() == archive


def test_an_archive_changed_meanwhile_stops_the_archive_before_the_hand_over_is_cut(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    _something_to_do(repo, "archive", 0)
    before = (repo / "HANDOFF.md").read_text()
    done = _race(monkeypatch, "swap", "ARCHIVE.md")
    got, _, err = call_gate(repo, "archive", capsys=capsys, monkeypatch=monkeypatch)
    assert got == 3 and "ARCHIVE.md changed while gate archive was rewriting it; nothing was written" in err
    assert (repo / "ARCHIVE.md").read_text() == "# Archive\n" + done[0] + "\n"
    assert (repo / "HANDOFF.md").read_text() == before


def test_when_both_files_changed_the_items_stay_in_both_and_the_message_says_so(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The hand-over changed after the archive got its block, and the archive changed too: the block cannot be taken
    back without losing that line, so the items are in both files (a copy too many, never a line too few)."""
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    _something_to_do(repo, "archive", 0)
    done = _race(monkeypatch, "swap", "HANDOFF.md", repo / "ARCHIVE.md")
    got, _, err = call_gate(repo, "archive", capsys=capsys, monkeypatch=monkeypatch)
    assert got == 3 and "ARCHIVE.md also holds a copy of them" in err, err
    handoff, archive = (repo / "HANDOFF.md").read_text(), (repo / "ARCHIVE.md").read_text()
    assert "- [x] done 0" in handoff and "- [x] done 0" in archive
    assert done[0] in handoff and done[0] in archive


def test_without_a_race_every_rewriter_still_writes(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done\n- [ ] open"))
    assert run_gate(repo, "archive").returncode == 0
    assert "- [x] done" in (repo / "ARCHIVE.md").read_text() and "- [x] done" not in (repo / "HANDOFF.md").read_text()
    assert run_gate(repo, "stamp").returncode == 0


@pytest.mark.parametrize("stage", ["read", "swap", "rename"])
def test_a_hook_written_while_install_hooks_rewrites_ours_is_kept(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    """`gate install-hooks` again over our own pre-commit hook (after an upgrade, say), while the user edits that
    hook: the edit is kept and the run says so in one line, instead of our script replacing it unseen."""
    assert run_gate(repo, "install-hooks").returncode == 0
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(hook.read_text().replace("exec ", "# an older installation\nexec ", 1))  # still ours, not current
    before = hook.read_text()
    done = _race(monkeypatch, stage, "pre-commit")
    got, _, err = call_gate(repo, "install-hooks", capsys=capsys, monkeypatch=monkeypatch)
    assert done and got == 3, err
    assert f"{hook} changed while gate install-hooks was rewriting it; nothing was written — run it again" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert hook.read_text() == before + done[0] + "\n" and hook.stat().st_mode & 0o111
    assert not [p.name for p in hook.parent.iterdir() if fsio.is_temp_name(p.name)]


def test_a_hook_that_appears_while_install_hooks_writes_its_own_is_kept(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """No hook when it looked; the user's appears before ours is written: exclusive creation keeps the user's."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    mine = "#!/bin/sh\necho mine\n"
    real_rewrite = fsio.rewrite

    def late(path: object, *args: object, **kwargs: object) -> None:
        if Path(str(path)).name == "pre-commit" and not hook.exists():
            hook.write_text(mine)
        real_rewrite(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fsio, "rewrite", late)
    got, _, err = call_gate(repo, "install-hooks", capsys=capsys, monkeypatch=monkeypatch)
    assert got == 3 and "changed while gate install-hooks was rewriting it" in err, err
    assert hook.read_text() == mine
