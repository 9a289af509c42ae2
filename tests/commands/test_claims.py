"""`gate claim`, `gate release`, `gate claims`: exclusive claims on the state file across worktrees.

First mover wins, the second is denied. The gate that enforces them: tests/checks/test_handoff_claim.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from claims_helpers import SPELLINGS, check_claim_gate, spell, stage_handoff
from conftest import call_gate, flag_records, git, run_gate

from gates.domain import claims
from gates.infra import state
from gates.infra.git import discover


def _record(repo: Path) -> dict[str, object] | None:
    return claims.read(state.layout(discover(repo, {})), "HANDOFF.md")


def test_grant_renew_and_deny_naming_the_holder(trees: list[Path]) -> None:
    main, other, _ = trees
    first = run_gate(main, "claim", "--note", "closing out issue 3", "--ttl", "2h", "--session", "s-1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("claimed HANDOFF.md for worktree ")
    record = _record(main)
    assert record is not None and record["ttl_seconds"] == 7200 and record["session"] == "s-1"
    renew = run_gate(main, "claim", "--session", "s-1")
    assert renew.returncode == 0 and renew.stdout.startswith("renewed HANDOFF.md")
    renewed = _record(main)
    assert renewed is not None
    assert (renewed["token"], renewed["since"], renewed["ttl_seconds"], renewed["note"]) == (
        record["token"], record["since"], 7200, "closing out issue 3")
    denied = run_gate(other, "claim", "--session", "s-2")
    assert denied.returncode == 1
    for part in (f"worktree {main.resolve()}", "branch main", "session s-1", f"host {os.uname().nodename}",
                 f"since {record['since']}", "TTL 2h", "note: 'closing out issue 3'"):
        assert part in denied.stdout, part
    assert [r["reason"] for r in flag_records(main / ".git")] == ["claim-denied"]


def test_a_different_session_in_the_same_worktree_is_another_holder(trees: list[Path]) -> None:
    main = trees[0]
    assert run_gate(main, "claim", "--session", "one").returncode == 0
    assert run_gate(main, "claim", "--session", "two").returncode == 1
    assert run_gate(main, "claim").returncode == 1  # no session is not session "one"
    env = {**os.environ, "GATE_SESSION": "one"}
    assert run_gate(main, "claim", env=env).returncode == 0


def test_release_by_holder_non_holder_and_nobody(trees: list[Path]) -> None:
    main, other, _ = trees
    assert run_gate(main, "claim").returncode == 0
    refused = run_gate(other, "release")
    assert refused.returncode == 1 and "does not hold the claim" in refused.stdout
    assert _record(main) is not None
    released = run_gate(main, "release")
    assert released.returncode == 0
    assert _record(main) is None
    kept = list((main / ".git" / "gate" / "claims" / "released").glob("*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["worktree"] == str(main.resolve())
    nothing = run_gate(main, "release")  # what was asked for holds: no denial, and no flag for the next session
    assert nothing.returncode == 0 and nothing.stdout == "nothing to release: nobody holds a claim on HANDOFF.md\n"
    assert sorted(r["reason"] for r in flag_records(main / ".git")) == ["release-denied"]  # the non-holder's


def test_force_release_moves_the_record_to_lost_and_found(trees: list[Path]) -> None:
    main, other, _ = trees
    assert run_gate(main, "claim", "--note", "mine").returncode == 0
    token = (_record(main) or {})["token"]
    assert run_gate(other, "release", "--force").returncode == 2
    broken = run_gate(other, "release", "--force", "--reason", "that session crashed")
    assert broken.returncode == 0, broken.stdout + broken.stderr
    assert _record(main) is None
    [evidence] = (main / ".git" / "gate" / "lost+found").iterdir()
    manifest = json.loads((evidence / "manifest.json").read_text())
    assert manifest["action"] == "claim-broken" and manifest["reason"] == "that session crashed"
    assert manifest["by"]["worktree"] == str(other.resolve())
    moved = json.loads((evidence / manifest["items"][0]["moved_to"]).read_text())
    assert moved["token"] == token
    [flag] = flag_records(main / ".git")
    assert flag["reason"] == "claim-broken" and "that session crashed" in flag["message"]
    assert run_gate(other, "claim").returncode == 0


def test_one_claim_from_every_worktree(trees: list[Path]) -> None:
    main, a, b = trees
    assert run_gate(a, "claim", "--session", "x").returncode == 0
    for tree in trees:
        listed = json.loads(run_gate(tree, "claims", "--format", "json").stdout)["claims"]
        assert [(c["worktree"], c["session"], c["live"]) for c in listed] == [(str(a.resolve()), "x", True)]
    assert run_gate(b, "claim").returncode == 1
    assert run_gate(main, "claim").returncode == 1
    # A new user's finding: the text listing read the same from every worktree; each line says whose claim it is.
    assert run_gate(a, "claims").stdout.startswith("HANDOFF.md: live (its worktree is present; no TTL); age ")
    assert "s; held by this worktree: worktree " in run_gate(a, "claims").stdout
    assert "s; held by another worktree: worktree " in run_gate(b, "claims").stdout


def test_takeover_after_the_holder_worktree_is_removed(trees: list[Path]) -> None:
    main, a, _ = trees
    assert run_gate(a, "claim").returncode == 0
    git(main, "worktree", "remove", "--force", str(a))
    listing = run_gate(main, "claims")
    assert "ABANDONED (its worktree was removed" in listing.stdout
    taken = run_gate(main, "claim")
    assert taken.returncode == 0
    assert taken.stdout.startswith("took over the claim on HANDOFF.md")
    assert (_record(main) or {})["worktree"] == str(main.resolve())
    [flag] = flag_records(main / ".git")
    assert flag["reason"] == "claim-taken-over"
    [evidence] = (main / ".git" / "gate" / "lost+found").iterdir()
    assert json.loads((evidence / "manifest.json").read_text())["action"] == "claim-taken-over"


@pytest.mark.parametrize("prune", [False, True], ids=["folder-deleted", "pruned"])
def test_takeover_after_the_holder_worktree_folder_is_deleted(trees: list[Path], prune: bool) -> None:
    import shutil

    main, _, b = trees
    assert run_gate(b, "claim").returncode == 0
    shutil.rmtree(b)
    if prune:
        git(main, "worktree", "prune")
    taken = run_gate(main, "claim")
    assert taken.returncode == 0, taken.stdout
    why = "its git directory is gone" if prune else "its worktree folder no longer exists"
    assert why in taken.stdout


def test_ttl_expiry_with_an_injected_clock(trees: list[Path], capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from gates.infra import clock

    main, a, _ = trees
    start = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(clock, "now", lambda: start)
    assert call_gate(a, "claim", "--ttl", "15m", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(minutes=14, seconds=59))
    assert call_gate(main, "claim", capsys=capsys, monkeypatch=monkeypatch)[0] == 1
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(minutes=15))
    code, out, _ = call_gate(main, "claim", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "its TTL expired at 2026-11-30T08:15:00Z" in out


@pytest.mark.parametrize("session", ["../x", "a/b", "a..b", "-rf", "x\x1b[31m", "x\u202eevil", "", "x" * 129])
def test_bad_session_ids_are_refused(trees: list[Path], session: str, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = call_gate(trees[0], "claim", f"--session={session}", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 2 and err.startswith("gate: session id") and "\n" == err[-1] and err.count("\n") == 1
    assert not (trees[0] / ".git" / "gate" / "claims").exists() or _record(trees[0]) is None


@pytest.mark.parametrize("note", ["nul\x00byte", "bell\x07", "new\nline", "bidi\u2067x", "x" * 501])
def test_bad_notes_are_refused(trees: list[Path], note: str, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = call_gate(trees[0], "claim", "--note", note, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 2 and err.startswith("gate: note refused")
    assert _record(trees[0]) is None


def test_a_note_with_slashes_is_only_text(trees: list[Path]) -> None:
    assert run_gate(trees[0], "claim", "--note", "fixing ../../src/x.py").returncode == 0
    assert (_record(trees[0]) or {})["note"] == "fixing ../../src/x.py"
    assert sorted(p.name for p in (trees[0] / ".git" / "gate" / "claims").iterdir()) == [
        ".lock", Path(claims.claim_path(state.layout(discover(trees[0], {})), "HANDOFF.md")).name]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def test_planted_symlink_fifo_and_hard_link_at_the_claim_location(trees: list[Path], tmp_path: Path) -> None:
    main = trees[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.json").write_text('{"token": "x"}')
    before = _snapshot(outside)
    lay = state.layout(discover(main, {}))
    state.ensure_dir(lay, lay.claims)
    path = Path(claims.claim_path(lay, "HANDOFF.md"))
    for plant in ("symlink", "fifo", "hardlink"):
        if plant == "symlink":
            os.symlink(outside / "victim.json", path)
        elif plant == "fifo":
            os.mkfifo(path)
        else:
            os.link(outside / "victim.json", path)
        proc = run_gate(main, "claim", timeout=20)
        assert proc.returncode == 3, (plant, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("gate: refusing ") and "Traceback" not in proc.stderr
        listing = run_gate(main, "claims", timeout=20)
        assert listing.returncode == 0 and "refusing" in listing.stdout
        path.unlink()
    assert _snapshot(outside) == before
    assert "state-unsafe" in [r["reason"] for r in flag_records(main / ".git")]


def test_a_symlinked_claims_folder_is_refused(trees: list[Path], tmp_path: Path) -> None:
    main = trees[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (main / ".git" / "gate").mkdir()
    os.symlink(outside, main / ".git" / "gate" / "claims")
    proc = run_gate(main, "claim")
    assert proc.returncode == 3 and "not a plain directory" in proc.stderr
    assert list(outside.iterdir()) == []


def test_a_state_file_outside_the_repository_is_refused(trees: list[Path]) -> None:
    (trees[0] / ".gate.yaml").write_text("handoff:\n  path: /etc/passwd\n")
    proc = run_gate(trees[0], "claim")
    assert proc.returncode == 3 and proc.stderr.startswith("gate: .gate.yaml:2: handoff.path:")


DRIVER = """
import sys
from gates.main import main
print("ready", flush=True)
sys.stdin.readline()
sys.exit(main(["claim", "--session", sys.argv[1]]))
"""


@pytest.mark.slow
def test_race_32_processes_from_3_worktrees_exactly_one_winner_per_round(trees: list[Path], tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    claims_dir = trees[0] / ".git" / "gate" / "claims"
    stop = threading.Event()
    seen: dict[str, Any] = {"reads": 0, "partial": []}

    def reader() -> None:
        while not stop.is_set():
            for path in list(claims_dir.glob("*.json")) if claims_dir.is_dir() else []:
                try:
                    text = path.read_text()
                except FileNotFoundError:
                    continue
                try:
                    record = json.loads(text)
                    assert isinstance(record["token"], str) and record["session"]
                    seen["reads"] += 1
                except (ValueError, KeyError, AssertionError):
                    seen["partial"].append(text)

    watcher = threading.Thread(target=reader)
    watcher.start()
    try:
        for round_no in range(20):
            procs = []
            for i in range(32):
                session = f"r{round_no}-p{i}"
                procs.append((session, trees[i % 3], subprocess.Popen(
                    [sys.executable, str(driver), session], cwd=trees[i % 3], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            for _, _, proc in procs:
                assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            for _, _, proc in procs:  # the barrier: every process goes at once
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            results = [(session, tree, proc.wait(timeout=60), proc.stdout.read() if proc.stdout else "")
                       for session, tree, proc in procs]
            winners = [(s, t) for s, t, code, _ in results if code == 0]
            assert len(winners) == 1, [(s, c) for s, _, c, _ in results]
            winner, tree = winners[0]
            for session, _, code, out in results:
                if session != winner:
                    assert code == 1 and f"session {winner}" in out, out
            assert run_gate(tree, "release", "--session", winner).returncode == 0
    finally:
        stop.set()
        watcher.join()
    assert seen["partial"] == []
    assert seen["reads"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_two_worktrees_spelling_the_path_differently_race_one_winner(trees: list[Path], tmp_path: Path,
                                                                       spelling: str) -> None:
    """The attack: wt-a's branch spells handoff.path its own way and wins a second live claim on the same file."""
    main, a, _ = trees
    spell(a, spelling)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    for round_no in range(2):
        procs = [(f"r{round_no}-p{i}", tree, subprocess.Popen(
            [sys.executable, str(driver), f"r{round_no}-p{i}"], cwd=tree, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)) for i, tree in enumerate([main, a] * 3)]
        for _, _, proc in procs:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        for _, _, proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = [(session, tree, proc.wait(timeout=60), proc.stdout.read() if proc.stdout else "")
                   for session, tree, proc in procs]
        # Before: one winner per spelling (two live claims on one file). After: exactly one.
        winners = [(session, tree) for session, tree, code, _ in results if code == 0]
        assert len(winners) == 1, [(s, c, o) for s, _, c, o in results]
        records = list((main / ".git" / "gate" / "claims").glob("*.json"))
        assert len(records) == 1 and json.loads(records[0].read_text())["path"] == "HANDOFF.md"
        winner, holder_tree = winners[0]
        loser_tree = a if holder_tree == main else main
        # The other worktree's gate finds the claim, whichever spelling it reads the config with.
        stage_handoff(loser_tree)
        [(severity, message)] = check_claim_gate(loser_tree)
        assert severity == "error" and message.startswith(f"HANDOFF.md is claimed by worktree {holder_tree.resolve()}")
        assert f"session {winner}" in message
        git(loser_tree, "restore", "--staged", "HANDOFF.md")
        assert run_gate(holder_tree, "release", "--session", winner).returncode == 0


def test_a_legacy_record_under_an_old_spelling_still_holds_the_file(trees: list[Path]) -> None:
    """Records written before the canonical key sit at the hash of the spelling: they are found, not ignored."""
    import hashlib

    main, a, _ = trees
    spell(a, "./HANDOFF.md")
    assert run_gate(a, "claim", "--session", "old").returncode == 0
    folder = main / ".git" / "gate" / "claims"
    [record_path] = folder.glob("*.json")
    record = json.loads(record_path.read_text())
    legacy = folder / (hashlib.sha256(b"./HANDOFF.md").hexdigest()[:32] + ".json")
    legacy.write_text(json.dumps({**record, "version": 1, "path": "./HANDOFF.md"}))
    record_path.unlink()
    denied = run_gate(main, "claim")
    assert denied.returncode == 1 and "session old" in denied.stdout
    stage_handoff(main)
    assert [m for _, m in check_claim_gate(main)][0].startswith(f"HANDOFF.md is claimed by worktree {a.resolve()}")
    renewed = run_gate(a, "claim", "--session", "old")
    assert renewed.returncode == 0 and renewed.stdout.startswith("renewed HANDOFF.md"), renewed.stdout
    assert [p.name for p in folder.glob("*.json")] == [os.path.basename(claims.claim_path(
        state.layout(discover(main, {})), "HANDOFF.md"))]
    assert json.loads(next(folder.glob("*.json")).read_text())["token"] == record["token"]
    assert len(list((folder / "released").glob("*.json"))) == 1  # the legacy file, kept


def test_a_moved_worktree_keeps_its_claim(trees: list[Path], tmp_path: Path) -> None:
    """git worktree move keeps the admin dir, and so the claim: nobody else may take it over."""
    main, a, _ = trees
    assert run_gate(a, "claim", "--note", "mine").returncode == 0
    token = (_record(main) or {})["token"]
    moved = tmp_path / "moved" / "wt-a"
    moved.parent.mkdir()
    git(main, "worktree", "move", str(a), str(moved))
    # Before: "ABANDONED (its worktree folder no longer exists)", and main took it over.
    listing = run_gate(main, "claims")
    assert f"HANDOFF.md: live (its worktree moved to {moved.resolve()}; no TTL)" in listing.stdout, listing.stdout
    denied = run_gate(main, "claim")
    assert denied.returncode == 1, denied.stdout
    stage_handoff(main)
    assert check_claim_gate(main)[0][0] == "error"
    git(main, "restore", "--staged", "HANDOFF.md")
    # The moved worktree still holds it: its gate passes, and `gate claim` renews (same token), naming the new place.
    stage_handoff(moved)
    assert check_claim_gate(moved) == []
    renewed = run_gate(moved, "claim")
    assert renewed.returncode == 0 and renewed.stdout.startswith(f"renewed HANDOFF.md for worktree {moved.resolve()}")
    assert (_record(main) or {})["token"] == token
    assert not (main / ".git" / "gate" / "lost+found").exists()
    assert run_gate(moved, "release").returncode == 0


def test_a_worktree_removed_and_re_added_at_the_same_place_does_not_inherit_the_claim(trees: list[Path]) -> None:
    """Same path, same admin dir name (and likely the same inode): a new worktree all the same."""
    main, a, _ = trees
    assert run_gate(a, "claim").returncode == 0
    git(main, "worktree", "remove", "--force", str(a))
    git(main, "worktree", "add", "-q", str(a), "wt-a")
    # Before: the re-added worktree "renewed" the dead one's claim, and main was denied.
    listing = run_gate(main, "claims")
    assert "ABANDONED (its worktree was removed" in listing.stdout, listing.stdout
    taken = run_gate(a, "claim")
    assert taken.returncode == 0 and taken.stdout.startswith("took over the claim on HANDOFF.md"), taken.stdout


def test_a_sub_second_ttl_is_kept(trees: list[Path], capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from gates.infra import clock

    main, a, _ = trees
    start = datetime(2026, 11, 30, 8, 0, 0, 850000, tzinfo=timezone.utc)
    monkeypatch.setattr(clock, "now", lambda: start)
    assert call_gate(a, "claim", "--ttl", "1s", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    assert (_record(main) or {})["expires"] == "2026-11-30T08:00:01.850000Z"
    # Before: taken over 0.15 s after its grant (the expiry was cut to 08:00:01).
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(seconds=0.15))
    code, out, _ = call_gate(main, "claim", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 1, out
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(seconds=0.999999))
    assert call_gate(main, "claim", capsys=capsys, monkeypatch=monkeypatch)[0] == 1
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(seconds=1))
    code, out, _ = call_gate(main, "claim", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "its TTL expired at 2026-11-30T08:00:01Z" in out  # kept to the microsecond, shown to the second


def test_release_with_the_wrong_session_names_the_session_mismatch(trees: list[Path]) -> None:
    main = trees[0]
    assert run_gate(main, "claim", "--session", "S1").returncode == 0
    wrong = run_gate(main, "release", "--session", "S2")
    assert wrong.returncode == 1
    assert wrong.stdout == ("not released: the claim on HANDOFF.md is held by this worktree for session S1, "
                            "not session S2 — pass --session S1 or set GATE_SESSION=S1\n")
    none = run_gate(main, "release")
    assert none.stdout == ("not released: the claim on HANDOFF.md is held by this worktree for session S1, "
                           "and no session was given — pass --session S1 or set GATE_SESSION=S1\n")
    assert _record(main) is not None
    assert run_gate(main, "release", "--session", "S1").returncode == 0
    assert run_gate(main, "claim").returncode == 0
    extra = run_gate(main, "release", "--session", "S2")
    assert extra.stdout == ("not released: the claim on HANDOFF.md is held by this worktree without a session, "
                            "not for session S2 — run `gate release` without --session and with GATE_SESSION unset\n")


def test_a_record_from_before_worktree_ids_survives_a_move_too(trees: list[Path], tmp_path: Path) -> None:
    main, a, _ = trees
    assert run_gate(a, "claim").returncode == 0
    path = Path(claims.claim_path(state.layout(discover(main, {})), "HANDOFF.md"))
    old = {k: v for k, v in json.loads(path.read_text()).items() if k != "worktree_id"}
    path.write_text(json.dumps({**old, "version": 1}))
    moved = tmp_path / "moved"
    git(main, "worktree", "move", str(a), str(moved))
    assert run_gate(main, "claim").returncode == 1
    renewed = run_gate(moved, "claim")
    assert renewed.returncode == 0 and renewed.stdout.startswith("renewed HANDOFF.md"), renewed.stdout
    record = json.loads(path.read_text())
    assert (record["version"], record["token"], record["worktree"]) == (2, old["token"], str(moved.resolve()))
    admin = Path(record["git_dir"])
    info = (admin / "commondir").stat()
    assert record["worktree_id"] == f"{info.st_ino}:{info.st_ctime_ns}"
    assert not [p.name for p in admin.iterdir() if "gate" in p.name]  # identity is read from git's files, never written


def test_a_denial_is_over_once_this_worktree_holds_the_claim(trees: list[Path]) -> None:
    """The turn-taking the docs show (denied, the holder releases, claimed) leaves the brief quiet: the denial's
    flag resolves when this worktree is granted the claim, as the handoff-claim gate's own flags do."""
    main, other, _ = trees
    assert run_gate(main, "claim").returncode == 0
    assert run_gate(other, "claim").returncode == 1
    assert [r["reason"] for r in flag_records(main / ".git")] == ["claim-denied"]
    assert run_gate(main, "release").returncode == 0
    granted = run_gate(other, "claim")
    assert granted.returncode == 0 and granted.stdout.startswith("claimed HANDOFF.md"), granted.stderr
    assert flag_records(main / ".git") == []
    assert "No unacknowledged flags." in run_gate(other, "brief").stdout
    assert "No unacknowledged flags." in run_gate(main, "brief").stdout


def test_a_denial_stays_while_the_claim_is_held_elsewhere(trees: list[Path]) -> None:
    main, other, third = trees
    assert run_gate(main, "claim").returncode == 0
    assert run_gate(other, "claim").returncode == 1
    assert run_gate(third, "claim").returncode == 1
    assert run_gate(main, "claim").returncode == 0  # the holder renews: the others' denials stand
    assert sorted(r["reason"] for r in flag_records(main / ".git")) == ["claim-denied", "claim-denied"]


TIME_LIKE = r"\d{4}-\d\d-\d\dT[0-9:.]*[^\s,;)]*"


def test_every_time_a_claim_message_shows_is_in_the_one_form(trees: list[Path], capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: one time format in every message, `2026-11-30T08:00:00Z`; a claim's sub-second expiry (kept so in its
    record) was shown as `…08:15:00.850000Z` in `gate claims`, the denial and the takeover."""
    import re

    from gates.infra import clock

    main, a, _ = trees
    start = datetime(2026, 11, 30, 8, 0, 0, 850000, tzinfo=timezone.utc)
    monkeypatch.setattr(clock, "now", lambda: start)
    assert call_gate(a, "claim", "--ttl", "15m", capsys=capsys, monkeypatch=monkeypatch)[0] == 0
    said = [call_gate(main, "claims", capsys=capsys, monkeypatch=monkeypatch)[1]]
    said.append(call_gate(main, "claim", capsys=capsys, monkeypatch=monkeypatch)[1])
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(minutes=16))
    said.append(call_gate(main, "claims", capsys=capsys, monkeypatch=monkeypatch)[1])
    said.append(call_gate(main, "claim", capsys=capsys, monkeypatch=monkeypatch)[1])
    times = re.findall(TIME_LIKE, "\n".join(said))
    assert "2026-11-30T08:15:00Z" in times and "2026-11-30T08:00:00Z" in times, said
    assert [t for t in times if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t)] == [], said


def test_a_release_that_succeeds_ends_the_denials_of_the_release_before_it(trees: list[Path]) -> None:
    """Issue 27: `release-denied` (a slip of the session id) led every later brief even after the release went
    through; a release that succeeds in the worktree resolves the earlier denials there, and a brief no longer
    shows them. Another worktree's denial stays."""
    main, other = trees[0], trees[1]
    assert run_gate(main, "claim", "--session", "S1").returncode == 0
    assert run_gate(main, "release", "--session", "S2").returncode == 1
    assert run_gate(other, "release").returncode == 1  # not the holder: a denial in the other worktree
    assert sorted(r["reason"] for r in flag_records(main / ".git")) == ["release-denied", "release-denied"]
    assert run_gate(main, "release", "--session", "S1").returncode == 0
    left = flag_records(main / ".git")
    assert [(r["reason"], r["worktree"]) for r in left] == [("release-denied", str(other.resolve()))]
    flags_section = run_gate(main, "brief").stdout.split("## 1. Flags")[1].split("## 2.")[0]
    assert "resolved (release-denied ×1)" in flags_section, flags_section


@pytest.mark.parametrize("ttl", ["x", [1], 1e300, -1, True])
def test_a_forged_claim_record_whose_ttl_is_no_number_is_refused_in_one_line(trees: list[Path], ttl: object) -> None:
    """A claim record planted with a TTL the gate cannot compute with (`"ttl_seconds": "x"`, a list, 1e300, a negative
    number, true): the check that reads it and `gate claim` say in one line that it is no claim record (exit 3,
    state-unsafe), `gate claims` lists it as one, never an internal error, and the file stays as it is."""
    main, a, _ = trees
    assert run_gate(a, "claim", "--ttl", "1h").returncode == 0
    [record_path] = (main / ".git" / "gate" / "claims").glob("*.json")
    record_path.write_text(json.dumps({**json.loads(record_path.read_text()), "ttl_seconds": ttl}))
    before = record_path.read_bytes()
    stage_handoff(main)
    for args in (["check"], ["claim"]):
        proc = run_gate(main, *args)
        assert proc.returncode == 3 and "internal error" not in proc.stderr, (args, proc.stdout, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "is not a claim record" in proc.stderr, (args, proc.stderr)
    listed = run_gate(main, "claims")
    assert listed.returncode == 0 and "is not a claim record" in listed.stdout, listed.stdout + listed.stderr
    assert record_path.read_bytes() == before
