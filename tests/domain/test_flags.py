"""Flags (gates/domain/flags.py): written for every failing run, coalesced, never named from input; a gate's
flag is resolved by that gate's next pass; events stay until acknowledged.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import GATE_BIN, call_gate, flag_records, git, handoff_text, run_gate, run_processes

from gates.domain import changes, flags
from gates.infra import schemas, validation
from gates.infra.git import discover

GATE = "handoff-no-checked-items"


MESSAGE = ("HANDOFF.md:11: [handoff-no-checked-items] checked item 'done' — completed items move to ARCHIVE.md "
           "(`gate archive`)")


def _break(repo: Path, item: str = "done") -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads=f"- [x] {item}"))


def _mend(repo: Path) -> None:
    """Take the checked item out again, leaving Meta updated as it was: no close-out happened."""
    text = handoff_text(git(repo, "rev-parse", "HEAD"))
    (repo / "HANDOFF.md").write_text(re.sub(r"- updated: .*", f"- updated: {_updated(repo)}", text))


def _updated(repo: Path) -> str:
    return next(line.split(": ", 1)[1] for line in (repo / "HANDOFF.md").read_text().splitlines()
                if line.startswith("- updated: "))


def _hook(repo: Path) -> None:
    proc = run_gate(repo, "install-hooks")
    assert proc.returncode == 0, proc.stderr


def _commit(repo: Path, message: str) -> subprocess.CompletedProcess[str]:
    git(repo, "add", "-A")
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


def _journal_actions(repo: Path) -> list[dict[str, object]]:
    lines = (repo / ".git" / "gate" / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_refused_commit_then_fixed_resolves_its_flag(repo: Path) -> None:
    _hook(repo)
    _break(repo)
    refused = _commit(repo, "with a checked item")
    assert refused.returncode != 0
    [raised] = flag_records(repo / ".git")
    assert raised["reason"] == GATE and raised["gate"] == GATE and raised["message"] == MESSAGE
    before = datetime.now(timezone.utc).replace(microsecond=0)

    _mend(repo)
    passed = _commit(repo, "mended")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    # said, not silent (a new user saw the flag vanish): once, and only by the check that ended it
    told = f"gate: resolved 1 open flag of {GATE}: it passes now (`gate flags --all` lists them)"
    assert told in passed.stderr.splitlines(), passed.stderr

    assert flag_records(repo / ".git") == []
    (repo / "more.txt").write_text("more\n")
    again = _commit(repo, "more")
    assert again.returncode == 0 and "resolved" not in again.stderr, again.stderr
    [resolved] = flag_records(repo / ".git", "resolved")
    assert resolved["id"] == raised["id"] and resolved["message"] == MESSAGE
    assert resolved["resolved"]["command"] == "gate check"
    assert resolved["resolved"]["head"] == raised["head"]  # the hook runs before the commit is made
    when = datetime.fromisoformat(str(resolved["resolved"]["time"]).replace("Z", "+00:00"))
    assert before <= when <= datetime.now(timezone.utc)
    entries = [e for e in _journal_actions(repo) if e["action"] == "flags-resolved"]
    assert [e["details"] for e in entries] == [{"ids": [raised["id"]], "gate": GATE, "command": "gate check"}]
    assert run_gate(repo, "journal", "--verify").returncode == 0

    assert run_gate(repo, "flags").stdout == "no unacknowledged flags\n"
    listing = run_gate(repo, "flags", "--all").stdout.splitlines()
    assert listing == [
        f"== flag {raised['id']} [{GATE}] first {raised['first_seen']} last {raised['last_seen']} by `gate check` "
        f"judging the commit as it will be recorded in {repo.resolve()} (resolved {resolved['resolved']['time']} by "
        "`gate check`)",
        MESSAGE,
    ]
    as_json = json.loads(run_gate(repo, "flags", "--all", "--format", "json").stdout)
    assert [(f["id"], f["status"]) for f in as_json["flags"]] == [(raised["id"], "resolved")]

    brief = run_gate(repo, "brief").stdout.splitlines()
    section = brief[brief.index("## 1. Flags") + 1:brief.index("## 2. Tripwire: does the hand-over agree with git?")]
    assert [line for line in section if line] == [
        "No unacknowledged flags.",
        f"Since the last close-out (updated {_updated(repo)}): 1 problem resolved ({GATE} ×1); "
        "`gate flags --all` shows it.",
    ]
    time.sleep(1.1)  # a close-out after the problem: the line goes, the resolved flag stays
    assert run_gate(repo, "stamp").returncode == 0
    assert "problem resolved" in run_gate(repo, "brief").stdout  # a stamp is no close-out until it is committed
    assert _commit(repo, "close-out").returncode == 0
    assert "problem resolved" not in run_gate(repo, "brief").stdout
    assert len(flag_records(repo / ".git", "resolved")) == 1


def test_the_same_in_process_and_a_repeat_counts_before_it_resolves(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _break(repo)
    for _ in range(3):
        code, _, _ = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
        assert code == 1
    [raised] = flag_records(repo / ".git")
    assert raised["count"] == 3
    _mend(repo)
    code, _, _ = call_gate(repo, "check", "--only", GATE, capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0
    assert flag_records(repo / ".git") == []
    [resolved] = flag_records(repo / ".git", "resolved")
    assert resolved["count"] == 3 and resolved["resolved"]["command"] == f"gate check --only {GATE}"


def test_only_a_check_that_ran_the_gate_on_the_same_files_resolves_it(repo: Path, tmp_path: Path) -> None:
    _break(repo)
    assert run_gate(repo, "check").returncode == 1
    _mend(repo)
    assert run_gate(repo, "check", "--only", "handoff-structure").returncode == 0  # did not run that gate
    assert run_gate(repo, "check", "--skip", GATE).returncode == 0
    other = repo / "OTHER.md"
    other.write_text(handoff_text(git(repo, "rev-parse", "HEAD")))
    assert run_gate(repo, "check", "OTHER.md").returncode == 0  # other files: another scope
    assert [r["reason"] for r in flag_records(repo / ".git")] == [GATE]
    assert run_gate(repo, "check", "HANDOFF.md").returncode == 0  # the configured file named: the same scope
    assert flag_records(repo / ".git") == []

    # A failure in a check of other files is resolved by a pass of those files, not of the hand-over.
    other.write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done"))
    assert run_gate(repo, "check", "OTHER.md").returncode == 1
    [raised] = flag_records(repo / ".git")
    assert raised["scope"] == {"files": [str(other.resolve())], "range": None, "situation": "work tree"}
    assert run_gate(repo, "check").returncode == 0
    assert len(flag_records(repo / ".git")) == 1
    other.write_text(handoff_text(git(repo, "rev-parse", "HEAD")))
    assert run_gate(repo, "check", str(other)).returncode == 0
    assert flag_records(repo / ".git") == []


def test_a_flag_of_another_worktree_is_left_for_that_worktree(repo: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    git(repo, "worktree", "add", "-q", str(second))
    _break(second)
    assert run_gate(second, "check").returncode == 1
    assert run_gate(repo, "check").returncode == 0
    assert [r["worktree"] for r in flag_records(repo / ".git")] == [str(second.resolve())]
    _mend(second)
    assert run_gate(second, "check").returncode == 0
    assert flag_records(repo / ".git") == []


def test_an_event_flag_survives_a_passing_check(repo: Path) -> None:
    found = discover(repo, {})
    # claim-denied is also the handoff-claim gate's reason: raised by `gate claim`, it is an event all the same.
    event = flags.raise_flag(found, "claim-denied", "denied: HANDOFF.md is claimed by someone", command="gate claim",
                             exit_code=1)
    broken = flags.raise_flag(found, "claim-broken", "broke the claim", command="gate release --force", exit_code=0)
    _break(repo)
    assert run_gate(repo, "check").returncode == 1
    _mend(repo)
    assert run_gate(repo, "check").returncode == 0
    assert sorted(str(r["id"]) for r in flag_records(repo / ".git")) == sorted([event, broken])
    assert [r["reason"] for r in flag_records(repo / ".git", "resolved")] == [GATE]


def test_an_event_flag_that_says_what_it_is_about_is_resolved_only_by_a_run_that_finds_that_sound(repo: Path) -> None:
    """`about` (a doctor's reach, a check's configuration or schema): resolve_event with `about` moves only the flags
    whose `about` is one of those given, raised before the run began; a flag without one (an older flag, or another
    command's) matches none. Two raises alike but for what they are about are two flags, each settled alone."""
    found = discover(repo, {})
    began = time.time_ns()
    here = flags.raise_flag(found, "doctor", "needs fixing", command="gate doctor", exit_code=1, about={"remote": None})
    far = flags.raise_flag(found, "doctor", "needs fixing", command="gate doctor --remote origin", exit_code=1,
                           about={"remote": "origin"})
    plain = flags.raise_flag(found, "doctor", "needs fixing", command="gate doctor", exit_code=1)
    assert len({here, far, plain}) == 3
    assert flags.resolve_event(found, "doctor", command="gate doctor", observed_ns=began, about=[{"remote": None}]) == []
    ran = time.time_ns()
    assert flags.resolve_event(found, "doctor", command="gate doctor", observed_ns=ran, about=[{"remote": None}]) == [here]
    assert flags.resolve_event(found, "doctor", command="gate doctor --remote other", observed_ns=ran,
                               about=[{"remote": None}, {"remote": "other"}]) == []
    assert flags.resolve_event(found, "doctor", command="gate doctor --remote origin", observed_ns=ran,
                               about=[{"remote": None}, {"remote": "origin"}]) == [far]
    assert [r["id"] for r in flag_records(repo / ".git")] == [plain]
    assert {r["id"]: r["about"] for r in flag_records(repo / ".git", "resolved")} == {
        here: {"remote": None}, far: {"remote": "origin"}}


def test_the_autofix_flag_is_resolved_when_its_gate_next_passes(repo: Path) -> None:
    _break(repo)
    assert run_gate(repo, "check", "--only", GATE, "--fix").returncode == 1
    [raised] = flag_records(repo / ".git")
    assert raised["reason"] == "autofix-applied" and raised["gate"] == GATE
    assert run_gate(repo, "check", "--only", "mailbox").returncode == 0  # another hook of the same commit
    assert len(flag_records(repo / ".git")) == 1
    assert run_gate(repo, "check", "--only", GATE, "--fix").returncode == 0
    assert flag_records(repo / ".git") == []
    assert [r["reason"] for r in flag_records(repo / ".git", "resolved")] == ["autofix-applied"]


def test_a_passing_check_does_not_read_the_flag_folder_when_nothing_is_open_for_its_gates(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = discover(repo, {})
    flags.raise_flag(found, "claim-broken", "an event", command="gate release --force", exit_code=0)
    listed: list[str] = []
    real_files, real_load = flags._flag_files, flags._load

    def flag_files(folder: str, *rest: Any) -> Any:
        listed.append(str(folder))
        return real_files(folder, *rest)

    def load(path: str) -> Any:
        listed.append(str(path))
        return real_load(path)

    monkeypatch.setattr(flags, "_flag_files", flag_files)
    monkeypatch.setattr(flags, "_load", load)
    real_glob, state_dir = Path.glob, str((repo / ".git" / "gate").resolve())

    def glob(self: Path, pattern: str) -> object:
        if str(self.resolve()).startswith(state_dir):
            listed.append(f"{self}/{pattern}")
        return real_glob(self, pattern)

    monkeypatch.setattr(Path, "glob", glob)
    code, _, _ = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0
    assert listed == []


def test_markers_stay_consistent_under_concurrent_failures_and_passes(repo: Path, tmp_path: Path) -> None:
    script = f"""
import sys
from pathlib import Path
from gates.domain import changes, flags
from gates.infra.git import discover
repo = discover(Path({str(repo)!r}), {{}})
scope = changes.scope_of(repo, [], None, {str(repo / "HANDOFF.md")!r}, "work tree")
for i in range(30):
    if sys.argv[1] == "fail":
        flags.raise_flag(repo, {GATE!r}, f"m{{sys.argv[2]}}-{{i % 3}}", command="gate check", exit_code=1,
                         gate={GATE!r}, scope=scope)
    else:
        flags.resolve(repo, [{GATE!r}], scope, command="gate check")
"""
    codes = run_processes(tmp_path, script, [["fail", "1"], ["pass", "0"], ["fail", "2"], ["pass", "0"]], timeout=120)
    assert codes == [0, 0, 0, 0]
    # Whatever the interleaving, a pass now resolves every flag that is still open: none was left unmarked.
    assert run_gate(repo, "check").returncode == 0
    assert flag_records(repo / ".git") == []
    assert len(flag_records(repo / ".git", "resolved")) >= 1


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_fifo_or_symlink_planted_as_a_flag_file_is_refused_in_bounded_time(repo: Path, tmp_path: Path,
                                                                           kind: str) -> None:
    folder = repo / ".git" / "gate" / "flags"
    for sub in ("", "acked", "resolved"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"id": "x", "reason": "io-error", "message": "SECRET CONTENT", "count": 1}))
    planted = []
    for sub, name in (("", f"20261130T080000Z-{GATE}-0123abcd"), ("acked", "20261130T080000Z-io-error-0123abce"),
                      ("resolved", "20261130T090000Z-20261130T080000Z-io-error-0123abcf")):
        path = folder / sub / f"{name}.json"
        if kind == "fifo":
            os.mkfifo(path)
        else:
            os.symlink(secret, path)
        planted.append(name)
    assert GATE_BIN
    _break(repo)  # the failing check reads the flags of its reason to coalesce: it meets the planted one
    started = time.monotonic()
    for args in (["flags"], ["flags", "--all"], ["brief"], ["check"], ["check", "--only", GATE]):
        proc = run_gate(repo, *args, timeout=20)
        assert "SECRET CONTENT" not in proc.stdout, args
        if args[0] == "flags":
            assert f"{planted[0]} [state-unsafe]" in proc.stdout and "refusing" in proc.stdout, proc.stdout
    _mend(repo)
    assert run_gate(repo, "check", timeout=20).returncode == 0
    assert run_gate(repo, "flags", "--ack", planted[0], timeout=20).returncode == 0
    assert os.path.lexists(folder / "acked" / f"{planted[0]}.json")
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("field", ["seen_ns", "created_ns", "count"])
def test_a_forged_flag_with_a_number_that_is_none_is_shown_unreadable_not_a_crash(repo: Path, field: str) -> None:
    """A flag planted in the folder whose count or times are not whole numbers (`"seen_ns": "x"`): every command that
    meets it (the check resolving flags, the brief, the stop hook, the flag list) answers as usual, lists it as an
    unreadable flag to inspect, and leaves the file as it is."""
    folder = repo / ".git" / "gate" / "flags"
    folder.mkdir(parents=True)
    forged = {"id": "20261206T050243Z-closeout-missing-0000abcd", "reason": "closeout-missing", "message": "m",
              "created_ns": 1, "count": 1, "worktree": str(repo), "command": "gate check", "gate": None, "scope": None,
              "seen_ns": 1, field: "x"}
    path = folder / f"{forged['id']}.json"
    path.write_text(json.dumps(forged))
    before = path.read_bytes()
    forged_gate = {**forged, "id": "20261206T050244Z-handoff-fresh-0000abce", "reason": "handoff-fresh",
                   "gate": "handoff-fresh", "scope": {"files": [str(repo / "gone.md")]}}
    (folder / f"{forged_gate['id']}.json").write_text(json.dumps(forged_gate))
    for args in (["check"], ["brief"], ["closeout", "--format", "text"], ["flags"]):
        proc = run_gate(repo, *args)
        assert proc.returncode in (0, 1) and "internal error" not in proc.stdout + proc.stderr, (args, proc.stderr)
    listed = run_gate(repo, "flags").stdout
    assert f"{forged['id']} [unreadable-flag]" in listed and f"{forged_gate['id']} [unreadable-flag]" in listed, listed
    assert path.read_bytes() == before



@pytest.mark.parametrize("about", ["configuration", 5, [], [{"input": "configuration"}], {"remote": 7},
                                   {"input": "configuration", "path": "x" * 100_000}, {"input": "handoff.schema"},
                                   {"input": "handoff.schema", "path": ["HANDOFF.schema.json"]}, {"input": None}])
def test_a_forged_flag_whose_about_the_schema_refuses_is_shown_unreadable(repo: Path, about: object) -> None:
    """A flag planted in the folder whose `about` is none of the flag schema's three shapes (a configuration, a
    project schema, a doctor's reach): no command that meets it crashes, none resolves it, `gate flags` lists it as
    an unreadable flag to inspect (as a forged count is) rather than passing the forged value on, and the file is
    left as it is."""
    folder = repo / ".git" / "gate" / "flags"
    folder.mkdir(parents=True)
    forged = {"id": "20261206T050243Z-config-invalid-0000abcd", "reason": "config-invalid", "message": "m",
              "created_ns": 1, "count": 1, "worktree": str(repo), "command": "gate check", "gate": None, "scope": None,
              "seen_ns": 1, "about": about}
    path = folder / f"{forged['id']}.json"
    path.write_text(json.dumps(forged))
    before = path.read_bytes()
    for args in (["check"], ["brief"], ["doctor"], ["flags"], ["flags", "--format", "json"]):
        proc = run_gate(repo, *args)
        assert proc.returncode in (0, 1) and "internal error" not in proc.stdout + proc.stderr, (args, proc.stderr)
    listed = run_gate(repo, "flags").stdout
    assert f"{forged['id']} [unreadable-flag]" in listed, listed
    [shown] = [f for f in json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"] if f["id"] == forged["id"]]
    assert shown["reason"] == "unreadable-flag" and "about" not in shown, shown
    assert path.read_bytes() == before


NAME = re.compile(r"^\d{8}T\d{6}Z-[a-z][a-z+-]*-[0-9a-f]{8}\.json$")


def test_a_violation_writes_a_flag_with_everything_the_next_session_needs(repo: Path) -> None:
    _break(repo)
    proc = run_gate(repo, "check", "--only", "handoff-no-checked-items")
    assert proc.returncode == 1
    [record] = flag_records(repo / ".git")
    message = ("HANDOFF.md:11: [handoff-no-checked-items] checked item 'done' — completed items move to "
               "ARCHIVE.md (`gate archive`)")
    assert record["message"] == message
    assert record["reason"] == "handoff-no-checked-items"
    assert record["count"] == 1
    assert record["worktree"] == str(repo.resolve())
    assert record["head"] == git(repo, "rev-parse", "HEAD")
    assert record["command"] == "gate check --only handoff-no-checked-items"
    assert record["exit_code"] == 1
    assert validation.validate(schemas.load("flag"), record, {}) == []
    [path] = (repo / ".git" / "gate" / "flags").glob("*.json")
    assert NAME.match(path.name) and path.stem == record["id"]


def test_a_clean_run_writes_no_flag(repo: Path) -> None:
    assert run_gate(repo, "check").returncode == 0
    assert flag_records(repo / ".git") == []


def test_identical_repeats_coalesce_into_one_flag_with_a_count(repo: Path) -> None:
    _break(repo)
    for _ in range(3):
        assert run_gate(repo, "check").returncode == 1
    found = discover(repo, {})
    scope = changes.scope_of(found, [], None, str(repo / "HANDOFF.md"), "work tree")  # what `gate check` judged
    for _ in range(500):
        flags.raise_flag(found, "handoff-no-checked-items", flag_records(repo / ".git")[0]["message"],
                         command="gate check", exit_code=1, gate="handoff-no-checked-items", scope=scope)
    records = flag_records(repo / ".git")
    assert sorted((r["reason"], r["count"]) for r in records) == [("handoff-no-checked-items", 503)]
    _break(repo, "another")  # a different message is a different flag
    assert run_gate(repo, "check").returncode == 1
    assert sorted(r["count"] for r in flag_records(repo / ".git")) == [1, 503]


def test_concurrent_writers_coalesce_without_losing_a_count(repo: Path) -> None:
    from concurrent.futures import ProcessPoolExecutor

    found = discover(repo, {})
    with ProcessPoolExecutor(max_workers=8) as pool:
        list(pool.map(_raise_many, [str(repo)] * 8))
    [record] = flag_records(repo / ".git")
    assert record["count"] == 8 * 25
    assert found.common_dir == str((repo / ".git").resolve())


def _raise_many(repo_dir: str) -> None:
    found = discover(Path(repo_dir), {})
    for _ in range(25):
        flags.raise_flag(found, "io-error", "same message", command="gate test", exit_code=3)


def test_file_names_never_come_from_input_text(repo: Path) -> None:
    found = discover(repo, {})
    hostile = "../../../../etc/passwd\0\n\u202e/evil"
    flag_id = flags.raise_flag(found, "input-unreadable", hostile, command="gate check", exit_code=3)
    assert NAME.match(f"{flag_id}.json")
    assert [p.name for p in (repo / ".git" / "gate" / "flags").iterdir() if p.suffix == ".json"] == [f"{flag_id}.json"]
    with pytest.raises(ValueError):
        flags.raise_flag(found, "../escape", "x", command="gate", exit_code=1)


def test_when_a_flag_cannot_be_written_the_reason_goes_to_stderr_and_the_exit_stays_nonzero(
    repo: Path, tmp_path: Path
) -> None:
    _break(repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / ".git" / "gate")  # a planted state dir
    proc = run_gate(repo, "check")
    assert proc.returncode == 1
    assert "could not write the handoff-no-checked-items flag" in proc.stderr
    assert "not a plain directory" in proc.stderr
    assert list(outside.iterdir()) == []


def test_the_flag_schema_names_every_situation_a_check_can_judge() -> None:
    """One list of situations (changes.SITUATIONS): what the schema lets a flag's scope hold is what a check makes."""
    from gates.domain import changes
    from gates.infra import schemas

    scope = schemas.load("flag")["properties"]["scope"]["oneOf"][1]
    assert scope["properties"]["situation"]["enum"] == [*changes.SITUATIONS, None]
    assert {changes.situation("A..B", None, []), changes.situation(None, [], [])} == {"range", "push"}
