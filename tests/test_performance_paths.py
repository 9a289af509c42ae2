"""What keeps a hook cheap, checked without timing anything: the no-change path and the caches.

Timings live in bench/ (see docs/performance.md); these tests check the mechanisms: an unchanged
`gate check` is answered from its record with no git process and no heavy import, every input a
gate depends on invalidates the record, and a record is never trusted beyond its recipe.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import call_gate, commit_all, flag_records, git, handoff_text, run_gate
from hypothesis import given, settings
from hypothesis import strategies as st

from gates import cli, fastpath, quick
from gates.git import Repo, discover

HEAVY = ("argparse", "pathlib", "subprocess", "json", "hashlib", "typing", "re", "jsonschema", "ruamel.yaml", "git",
         "pre_commit", "gates.cli", "gates.git", "dataclasses", "inspect")
PROBE = f"""
import sys
already = set(sys.modules)  # what the interpreter's start (site, an editable install's finder) loaded anyway
from gates.quick import main
code = main(["check"])
print("LOADED=" + ",".join(m for m in {HEAVY!r} if m in sys.modules and m not in already), "CODE=%d" % code)
"""


def _probe(repo: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=repo, capture_output=True, text=True, env=env)
    return next(line for line in proc.stdout.splitlines() if line.startswith("LOADED="))


def _records(repo: Path) -> list[Path]:
    cache = repo / ".git" / "gate" / "cache"
    return sorted(cache.glob("quick-*")) if cache.is_dir() else []


def test_an_unchanged_check_is_answered_without_git_or_heavy_imports(repo: Path) -> None:
    first = _probe(repo)
    assert "gates.git" in first and "subprocess" in first and first.endswith("CODE=0")  # the full path, once
    assert _probe(repo) == "LOADED= CODE=0"  # replayed: only os, sys and the gate's two small modules
    no_git = {**os.environ, "PATH": "/nonexistent"}  # the full path could not even start without git
    assert _probe(repo, no_git) == "LOADED= CODE=0"
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text())  # same bytes: still a replay
    assert _probe(repo) == "LOADED= CODE=0"


def test_the_full_path_after_a_change_parses_no_config_again(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    assert "jsonschema" in _probe(repo)  # the first run parses and validates .gate.yaml
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), target="Another target."))
    loaded = _probe(repo)
    assert "gates.cli" in loaded and "jsonschema" not in loaded and "ruamel.yaml" not in loaded
    assert "dataclasses" not in loaded and "inspect" not in loaded  # ~8 ms of imports for every commit's hook


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif", "junit"])
def test_a_replay_prints_exactly_what_the_full_run_printed(repo: Path, fmt: str) -> None:
    full = run_gate(repo, "check", "--format", fmt)
    assert full.returncode == 0 and len(_records(repo)) == 1
    again = run_gate(repo, "check", "--format", fmt)
    assert (again.returncode, again.stdout, again.stderr) == (0, full.stdout, full.stderr)


def _replays(repo: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> bool:
    monkeypatch.chdir(repo)
    return quick.replay(["check", *argv], os.environ) is not None


def _clean_run(repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> None:
    code, out, err = call_gate(repo, "check", *argv, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0, out + err
    assert _replays(repo, monkeypatch, *argv)


def _worktree(repo: Path, name: str) -> Path:
    path = repo.parent / name
    git(repo, "worktree", "add", "-q", "-b", name, str(path))
    return path


def _claim_elsewhere(repo: Path) -> None:
    assert run_gate(_worktree(repo, "other"), "claim").returncode == 0


def _write_record(repo: Path) -> None:
    (repo / "decisions").mkdir(exist_ok=True)
    (repo / "decisions" / "D-20261130T000000Z-000000000001-x.md").write_text("---\ntitle: x\n---\n")


MUTATIONS: dict[str, Callable[[Path], object]] = {
    "hand-over edited": lambda r: (r / "HANDOFF.md").write_text((r / "HANDOFF.md").read_text() + "\n"),
    "hand-over replaced by a folder": lambda r: ((r / "HANDOFF.md").unlink(), (r / "HANDOFF.md").mkdir()),
    "another file staged": lambda r: ((r / "new.txt").write_text("x"), git(r, "add", "new.txt")),
    "HEAD moved": lambda r: git(r, "commit", "-q", "--allow-empty", "--no-verify", "-m", "more"),
    "branch switched": lambda r: git(r, "checkout", "-q", "-b", "elsewhere"),
    "config written": lambda r: (r / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n"),
    "git config changed": lambda r: git(r, "config", "core.worktree", str(r)),
    "a record added": _write_record,
    "work package written": lambda r: (r / "WORKPACKAGE.md").write_text("# Work package\n"),
    "archive written": lambda r: (r / "ARCHIVE.md").write_text("# Archive\n"),
    "a claim published elsewhere": _claim_elsewhere,
    "a worktree added": lambda r: _worktree(r, "more"),
    "index.lock appeared": lambda r: (r / ".git" / "index.lock").write_text(""),
    "HEAD.lock appeared": lambda r: (r / ".git" / "HEAD.lock").write_text(""),
    "shallow file appeared": lambda r: (r / ".git" / "shallow").write_text(git(r, "rev-parse", "HEAD") + "\n"),
    "packed refs rewritten": lambda r: git(r, "pack-refs", "--all"),
    "user git config changed": lambda r: git(r, "config", "--global", "user.name", "Someone Else"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_every_input_change_is_seen(repo: Path, name: str, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_run(repo, capsys, monkeypatch)
    MUTATIONS[name](repo)
    assert not _replays(repo, monkeypatch), f"{name}: the old answer would have been replayed"


def test_the_environment_and_the_folder_are_part_of_a_record(repo: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_run(repo, capsys, monkeypatch)
    monkeypatch.setenv("GATE_SESSION", "s-2")
    assert not _replays(repo, monkeypatch)
    monkeypatch.delenv("GATE_SESSION")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "@1 +0000")  # what git sets for each commit's hooks: ignored
    assert _replays(repo, monkeypatch)
    sub = repo / "sub"
    sub.mkdir()
    assert not _replays(sub, monkeypatch)  # another folder: its own record
    _clean_run(sub, capsys, monkeypatch)
    (sub / ".git").mkdir()  # something git might take for a repository, between the folder and the top
    assert not _replays(sub, monkeypatch)
    assert _replays(repo, monkeypatch)  # ...which changes nothing for a run from the top
    assert not _replays(repo, monkeypatch, "--only", "handoff-structure")  # other arguments: another record


def test_a_linked_worktree_hook_environment_is_replayed(repo: Path) -> None:
    tree = _worktree(repo, "wt")
    assert run_gate(tree, "claim").returncode == 0
    git_dir = git(tree, "rev-parse", "--absolute-git-dir")
    hook_env = {**os.environ, "GIT_DIR": git_dir, "GIT_INDEX_FILE": f"{git_dir}/index", "GIT_PREFIX": "",
                "PATH": f"/usr/lib/git-core:{os.environ['PATH']}"}  # what git sets for a hook in a linked worktree
    first = _probe(tree)
    assert "gates.git" in first and first.endswith("CODE=0")
    assert _probe(tree, hook_env) == "LOADED= CODE=0"  # a plain run's record serves the hook, and back
    (tree / "HANDOFF.md").write_text((tree / "HANDOFF.md").read_text() + "\n")
    assert "gates.git" in _probe(tree, hook_env)
    assert _probe(tree) == "LOADED= CODE=0"


def test_git_dir_and_index_pointers_are_followed_not_ignored(repo: Path, tmp_path: Path) -> None:
    assert "gates.git" in _probe(repo)
    assert _probe(repo) == "LOADED= CODE=0"
    other_index = tmp_path / "other-index"
    shutil.copy(repo / ".git" / "index", other_index)
    env = {**os.environ, "GIT_INDEX_FILE": str(other_index)}
    assert "gates.git" in _probe(repo, env)  # another index: the record's run never looked at it
    assert "gates.git" in _probe(repo)  # (that run's record took the slot; this one takes it back)
    assert _probe(repo, {**os.environ, "GIT_INDEX_FILE": ".git/index"}) == "LOADED= CODE=0"  # the same file, as hooks name it
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", "-b", "main", str(other))
    assert "gates.git" in _probe(repo, {**os.environ, "GIT_DIR": str(other / ".git")})  # another repository


def test_a_record_expires(repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_run(repo, capsys, monkeypatch)
    [record] = _records(repo)
    data = record.read_bytes()
    until = data.split(b"\n")[1]
    assert until.startswith(b"until ") and float(until[6:]) <= time.time() + fastpath.MAX_AGE
    for never in (b"until 1.0", b"until nan", b"until inf", b"until 1e300"):  # expired, or one that never would
        record.write_bytes(data.replace(until, never, 1))
        assert not _replays(repo, monkeypatch)


def test_a_record_expires_when_the_hand_over_turns_stale(repo: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime, timedelta, timezone

    text = (repo / "HANDOFF.md").read_text()
    stale_at = datetime.now(timezone.utc) + timedelta(minutes=30)
    updated = (stale_at - timedelta(days=8)).strftime("%Y-%m-%dT%H:%M:%SZ")  # fresh_days 7: stale 8 days after
    (repo / "HANDOFF.md").write_text(re.sub(r"- updated: \S+", f"- updated: {updated}", text))
    _clean_run(repo, capsys, monkeypatch)
    [record] = _records(repo)
    until = float(record.read_bytes().split(b"\n")[1].removeprefix(b"until "))
    assert abs(until - stale_at.timestamp()) < 2  # handoff-fresh said when its verdict flips by the clock alone


def test_a_record_is_never_trusted_beyond_its_recipe(repo: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "- [x] done\n")  # a failing state
    failing = run_gate(repo, "check")
    assert failing.returncode == 1 and _records(repo) == []  # a failure is never remembered
    git(repo, "checkout", "-q", "--", "HANDOFF.md")
    _clean_run(repo, capsys, monkeypatch)
    [record] = _records(repo)
    good = record.read_bytes()
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "- [x] done\n")
    assert run_gate(repo, "check").stdout == failing.stdout  # the record's recipe sees the change
    forged = good.replace(b"recipe ", b"recipe 0\n", 1).split(b"\n", 5)  # a record whose recipe checks nothing
    for bad in (b"", b"\0\xff" * 10, good[:40], good.replace(b"digest ", b"digest 0", 1),
                b"\n".join(forged[:4] + forged[5:]), good.replace(b"content\0", b"bogus\0", 1)):
        record.write_bytes(bad)
        assert run_gate(repo, "check").stdout == failing.stdout
    record.unlink()
    record.symlink_to(repo / "elsewhere")
    (repo / "elsewhere").write_bytes(good)
    assert run_gate(repo, "check").stdout == failing.stdout  # a planted symlink is not followed
    record.unlink()
    git(repo, "checkout", "-q", "--", "HANDOFF.md")
    _clean_run(repo, capsys, monkeypatch)
    cache = repo / ".git" / "gate" / "cache"
    [record] = _records(repo)
    for mode in (0o777, 0o757):  # anyone could have written the record: it is not read
        cache.chmod(mode)
        assert not _replays(repo, monkeypatch)
    cache.chmod(0o775)  # group-writable, and the group is this user's own (as with a umask of 002)
    assert _replays(repo, monkeypatch)
    if os.geteuid() == 0:  # only root can hand files to others; elsewhere the owner rule is shown by the modes
        os.chown(cache, -1, os.getegid() + 1)  # group-writable by another group
        assert not _replays(repo, monkeypatch)
        os.chown(cache, -1, os.getegid())
        os.chown(record, os.geteuid() + 1, -1)  # a record someone else wrote
        assert not _replays(repo, monkeypatch)
        os.chown(record, os.geteuid(), -1)
    cache.chmod(0o755)
    assert _replays(repo, monkeypatch)


def test_deleting_the_cache_changes_no_answer(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    answers = [run_gate(repo, "check", "--format", "json").stdout for _ in range(3)]
    assert len({*answers}) == 1 and json.loads(answers[0])["ok"] is True
    cache = repo / ".git" / "gate" / "cache"
    assert {p.name.split("-")[0] for p in cache.iterdir()} == {"config", "quick"}
    shutil.rmtree(cache)
    assert run_gate(repo, "check", "--format", "json").stdout == answers[0]
    for entry in cache.iterdir():  # a corrupt cache is passed over, not trusted
        entry.write_text("{not json")
    assert run_gate(repo, "check", "--format", "json").stdout == answers[0]


def test_a_repeated_failure_raises_its_flag_every_time(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done"))
    for _ in range(3):
        assert run_gate(repo, "check").returncode == 1
    [flag] = [json.loads(p.read_text()) for p in (repo / ".git" / "gate" / "flags").glob("*.json")]
    assert flag["count"] == 3


def test_a_fix_is_never_remembered_but_a_clean_fixer_run_is(repo: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "- [x] done\n")
    fixed = run_gate(repo, "check", "--only", "handoff-no-checked-items", "--fix")
    assert fixed.returncode == 1 and "fixed: moved 1 checked item" in fixed.stdout and _records(repo) == []
    _clean_run(repo, capsys, monkeypatch, "--only", "handoff-no-checked-items", "--fix")


def _plan(repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Repo, fastpath.Plan]:
    from gates import config

    monkeypatch.chdir(repo)
    found = discover()
    args = cli.build_parser("check").parse_args(["check"])
    plan = fastpath.plan(found, config.load(found), args, ["check"])
    assert plan is not None
    return found, plan


def test_nothing_is_remembered_when_an_input_moves_during_the_run(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found, plan = _plan(repo, monkeypatch)
    fastpath.remember(found, plan, ["check"], "output\n", float("inf"))
    assert len(_records(repo)) == 1 and _replays(repo, monkeypatch)
    shutil.rmtree(repo / ".git" / "gate" / "cache")
    found, plan = _plan(repo, monkeypatch)
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "\n")  # while the gates run
    fastpath.remember(found, plan, ["check"], "output\n", float("inf"))
    assert _records(repo) == []
    found, plan = _plan(repo, monkeypatch)
    commit_all(repo, "moved HEAD")  # HEAD moves: git's second answer differs from its first
    plan.found = (quick.digest(plan.head, plan.recipe), quick.digest(plan.head, plan.recipe, staged=True))  # git still sees it
    fastpath.remember(found, plan, ["check"], "output\n", float("inf"))
    assert _records(repo) == []


def test_no_record_when_the_answer_came_from_beyond_heads_recent_history(repo: Path) -> None:
    text = (repo / "HANDOFF.md").read_text()
    ref = git(repo, "rev-parse", "HEAD~1")
    assert f"- ref: {ref}\n" in text
    (repo / "HANDOFF.md").write_text(text.replace(ref, "main"))  # a name: whatever main points at later
    assert run_gate(repo, "check", "--only", "handoff-fresh").returncode == 0
    assert _records(repo) == []
    (repo / "HANDOFF.md").write_text(text)
    assert run_gate(repo, "check", "--only", "handoff-fresh").returncode == 0
    assert len(_records(repo)) == 1


def test_no_record_for_a_reftable_repository_or_a_config_with_includes(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "config", "include.path", "extra.cfg")
    from gates import config

    monkeypatch.chdir(repo)
    found = discover()
    assert fastpath.plan(found, config.load(found), cli.build_parser("check").parse_args(["check"]), ["check"]) is None


def test_old_cache_entries_are_pruned_when_the_cache_is_written(repo: Path) -> None:
    cache = repo / ".git" / "gate" / "cache"
    assert run_gate(repo, "check").returncode == 0
    old, fresh, other = cache / "config-0000", cache / "quick-0000", cache / "records.json"
    for path in (old, fresh, other):
        path.write_text("{}")
    month_ago = time.time() - 31 * 86400
    for path in (old, other):
        os.utime(path, (month_ago, month_ago))
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "\n")
    assert run_gate(repo, "check").returncode == 0  # a clean full run writes its record
    assert not old.exists() and fresh.exists() and other.exists()  # only old config-/quick- entries go


def _git_stage(repo: Path) -> list[tuple[int, str, int, bytes]]:
    out = subprocess.run(["git", "ls-files", "--stage", "-z"], cwd=repo, capture_output=True, check=True).stdout
    rows = []
    for item in filter(None, out.split(b"\0")):
        info, _, path = item.partition(b"\t")
        mode, oid, stage = info.split()
        rows.append((int(mode, 8), oid.decode(), int(stage), path))
    return rows


def _ours(repo: Path) -> list[tuple[int, str, int, bytes]] | None:
    entries = quick.index_entries((repo / ".git" / "index").read_bytes())
    if entries is None:
        return None
    return [(int.from_bytes(fixed[0:4], "big"), fixed[4:24].hex(), (int.from_bytes(fixed[24:26], "big") >> 12) & 3, name)
            for fixed, name in entries]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_index_reader_agrees_with_git(repo: Path, version: int) -> None:
    deep = repo / "a" / "b" / ("c" * 120)
    deep.mkdir(parents=True)
    for name in ("x.txt", "y" * 200, "ünïcode ☃.md", "sp ace", "z-last"):
        (deep / name).write_text(name)
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link").symlink_to("run.sh")
    git(repo, "add", "-A")
    if version > 2:  # intent-to-add: an entry with extended flags, which version 2 cannot hold
        (repo / "later.txt").write_text("intent")
        git(repo, "add", "-N", "later.txt")
    git(repo, "update-index", "--index-version", str(version))
    assert (repo / ".git" / "index").read_bytes()[4:8] == version.to_bytes(4, "big")
    assert _ours(repo) == _git_stage(repo)
    commit_all(repo, "files")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "README").write_text("side\n")
    commit_all(repo, "side")
    git(repo, "checkout", "-q", "main")
    (repo / "README").write_text("main\n")
    commit_all(repo, "main")
    subprocess.run(["git", "merge", "-q", "side"], cwd=repo, capture_output=True)  # a conflict: stages 1, 2 and 3
    assert {row[2] for row in _git_stage(repo)} == {0, 1, 2, 3}
    assert _ours(repo) == _git_stage(repo)


def test_a_split_index_is_judged_by_its_stat(repo: Path) -> None:
    git(repo, "update-index", "--split-index")
    assert _ours(repo) is None
    assert quick._staged(str(repo / ".git" / "index")) == quick._stat(str(repo / ".git" / "index"))


def test_a_check_right_before_a_commit_is_replayed_by_its_hook(repo: Path) -> None:
    assert run_gate(repo, "install-hooks").returncode == 0
    (repo / "work.txt").write_text("work\n")
    git(repo, "add", "work.txt")
    assert run_gate(repo, "check").returncode == 0
    [record] = _records(repo)
    before = record.stat().st_ino
    git(repo, "commit", "-q", "-m", "work")  # git rewrites the index, then runs the hook
    assert record.stat().st_ino == before  # the hook replayed: a full run would have rewritten the record
    (repo / "work.txt").write_text("more work\n")
    git(repo, "add", "work.txt")
    git(repo, "commit", "-q", "-m", "more work")  # nothing checked this state yet: the full path, a new record
    assert record.stat().st_ino != before


def test_the_index_reader_never_fails_on_damaged_input(repo: Path) -> None:
    data = (repo / ".git" / "index").read_bytes()
    whole = quick.index_entries(data)
    assert whole is not None
    assert quick.index_entries(data[:-20] + bytes(20)) == whole  # index.skipHash (git 2.40+): no checksum written
    results = [quick.index_entries(data[:cut]) for cut in range(len(data))]
    assert results == [None] * len(data)  # a truncated index is never read as one
    for i in range(len(data)):  # any flipped byte is caught by the checksum
        damaged = bytearray(data)
        damaged[i] ^= 0xFF
        assert quick.index_entries(bytes(damaged)) is None
    assert quick.index_entries(b"DIRC" + b"\xff" * 40) is None


def test_git_discovery_is_proven_by_evidence_taken_before_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gates import config

    monkeypatch.chdir(repo)
    args = cli.build_parser("check").parse_args(["check"])
    before = fastpath.before_discovery()
    found = discover()
    plan = fastpath.plan(found, config.load(found), args, ["check"], before)
    assert plan is not None and plan.proven  # nothing moved between the evidence and git's answer
    before = fastpath.before_discovery()
    commit_all(repo, "HEAD moves between the evidence and git's answer")
    found = discover()
    plan = fastpath.plan(found, config.load(found), args, ["check"], before)
    assert plan is not None and not plan.proven  # so remember() asks git a second time


def _git_calls(repo: Path, log: Path) -> int:
    log.write_text("")
    assert run_gate(repo, "check", env={**os.environ, "PATH": f"{log.parent}:{os.environ['PATH']}"}).returncode == 0
    return len(log.read_text().splitlines())


def test_git_processes_per_check(repo: Path, tmp_path: Path) -> None:
    wrapper = tmp_path / "bin"
    wrapper.mkdir()
    real = shutil.which("git")
    log = wrapper / "calls.log"
    (wrapper / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (wrapper / "git").chmod(0o755)
    _git_calls(repo, log)  # the first run also asks for core.sharedRepository before it makes the cache folder
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text() + "\n")
    assert _git_calls(repo, log) == 3, log.read_text()  # discovery, rev-list, diff --cached: no second discovery
    assert _git_calls(repo, log) == 0  # replayed


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.binary(max_size=200))
def test_no_bytes_crash_the_record_or_index_readers(tail: bytes, junk: bytes) -> None:
    for data in (quick.MAGIC + tail, tail, b"DIRC" + tail, b"DIRC\x00\x00\x00\x02" + tail):
        record = quick.Record.decode(data)
        entries = quick.index_entries(data)
        assert record is None or isinstance(record, quick.Record)
        assert entries is None or isinstance(entries, list)
    good = quick.Record(123.5, ("/t", "/t/.git", "/t/.git", "/t/.git/index"), ("a" * 64, "b" * 64),
                        [("content", "/t/HANDOFF.md"), ("lock-free", "/t/.git")], junk)
    back = quick.Record.decode(good.encode())
    assert back is not None and (back.until, back.where, back.found, back.recipe, back.output) == (
        good.until, good.where, good.found, good.recipe, good.output)


def test_a_bug_in_the_no_change_path_is_flagged_and_the_full_check_answers(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_run(repo, capsys, monkeypatch)

    def broken(cls: object, data: bytes) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(quick.Record, "decode", classmethod(broken))  # only the no-change path reads records
    code, out, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and out == "gate check: passed (9 gates on HANDOFF.md)\n"
    assert err == ("gate: internal error in the no-change path (a bug in handoff-gate; please report it): "
                   "RuntimeError: a bug; the full check answered instead\n")
    assert [r["reason"] for r in flag_records(repo / ".git")] == ["internal-error"]
