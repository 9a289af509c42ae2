"""`gate doctor`: it checks the wiring and the environment, says what to fix, and `--fix` fixes what it can."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import call_gate, git, run_gate
from helpers import brief_flags
from remote_helpers import bare_repository, clone, refs

from gates.domain import flags
from gates.domain.hooks import ENTRY
from gates.infra.git import discover


def test_doctor_says_what_to_fix(repo: Path) -> None:
    proc = run_gate(repo, "doctor")
    assert proc.returncode == 1
    assert "FIX   no commit hook runs the gate" in proc.stdout
    # its flags line counts those open before it, and says this run raises one (it said "no flags" alone)
    assert "ok    no unacknowledged flags; this run raises a `doctor` flag for what it found to fix" in proc.stdout
    assert proc.stdout.splitlines()[0].startswith("ok    git version ")
    assert "doctor" in [json.loads(p.read_text())["reason"] for p in (repo / ".git/gate/flags").glob("*.json")]
    assert run_gate(repo, "install-hooks").returncode == 0
    (repo / ".claude").mkdir()
    fixed = run_gate(repo, "doctor")
    assert fixed.returncode == 1 and "no SessionStart hook runs `gate brief --format claude`" in fixed.stdout
    (repo / ".claude" / "settings.json").write_text("{not json")
    broken = run_gate(repo, "doctor")
    assert broken.returncode == 1 and "FIX   .claude/settings.json cannot be read as JSON" in broken.stdout
    (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": ["a list, not a mapping"]}))
    assert "no SessionStart hook runs" in run_gate(repo, "doctor").stdout  # odd shapes count as no hook, no crash
    (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [
        {"matcher": "", "hooks": [{"type": "command", "command": "gate brief --format claude"}]}]}}))
    healthy = run_gate(repo, "doctor")
    assert healthy.returncode == 0, healthy.stdout
    hook = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks")) / "pre-commit"
    text = hook.read_text()
    hook.write_text(text.replace(" -I -c ", " -I -m gates ").replace(shlex.quote(ENTRY) + " ", ""))  # an older form
    assert "warn  native hook" in run_gate(repo, "doctor").stdout
    interpreter = shlex.split(text.splitlines()[-1])[1]
    hook.write_text(text.replace(interpreter, "/nonexistent/venv/bin/python"))
    gone = run_gate(repo, "doctor")
    assert gone.returncode == 1 and "/nonexistent/venv/bin/python, which is gone" in gone.stdout
    hook.write_text(text)
    (repo / ".git" / "index.lock").write_text("")
    os.utime(repo / ".git" / "index.lock", (0, 0))
    (repo / ".gate.yaml").write_text("locks:\n  threshold: 1s\n")
    time.sleep(1.2)
    stale = run_gate(repo, "doctor")
    assert stale.returncode == 1 and "FIX   stale git lock index.lock" in stale.stdout


FRAMEWORK_CONFIG = "repos:\n  - repo: https://example.invalid/handoff-gate\n    rev: v0\n    hooks:\n      - id: gate\n"


def _pre_commit(repo: Path, *args: str) -> None:
    """The real framework's `pre-commit install`/`uninstall` (it writes the hook; nothing is fetched)."""
    proc = subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_committed_claude_settings_nested_deeply_is_one_fix_line_never_a_traceback(repo: Path) -> None:
    """The attack of adversarial review adv1, 07: a committed `.claude/settings.json` of `[` 100,000 deep. The
    doctor's own reader was the raw parser: a RecursionError, a traceback, exit 4. It reads the file as every other
    reader of the gate does (jsonio.load_json), and says what is wrong in one line; the file is left as it was."""
    (repo / ".claude").mkdir()
    settings = repo / ".claude" / "settings.json"
    settings.write_text("[" * 100_000)
    before = settings.read_bytes()
    proc = run_gate(repo, "doctor", process=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert "FIX   .claude/settings.json cannot be read as JSON (invalid JSON: nested too deeply): Claude Code " \
           "ignores it too" in proc.stdout.splitlines(), proc.stdout
    assert settings.read_bytes() == before


def test_a_clean_doctor_ends_the_doctor_flags_of_the_doctors_before_it(repo: Path) -> None:
    """A new user's story: `gate doctor` found something to fix (a broken .gate.yaml, no commit hook) and raised its
    `doctor` flag; they fixed both and the doctor came back clean, but every brief still counted the flag (an event
    flag, left only by `--ack`). A clean doctor resolves the flags of the doctors before it: it says so, its count of
    open flags leaves them out, the brief counts none and `gate flags` shows none."""
    (repo / ".gate.yaml").write_text("handoff: [\n")
    needs = run_gate(repo, "doctor")
    assert needs.returncode == 1 and "FIX   no commit hook runs the gate" in needs.stdout
    assert "FIX   config: .gate.yaml:1: invalid YAML" in needs.stdout, needs.stdout
    [raised] = json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"]
    assert raised["reason"] == "doctor"
    (repo / ".gate.yaml").unlink()
    assert run_gate(repo, "install-hooks").returncode == 0
    assert "- [doctor] 1 flag" in brief_flags(repo)
    clean = run_gate(repo, "doctor")
    assert clean.returncode == 0, clean.stdout
    assert "ok    no unacknowledged flags\n" in clean.stdout, clean.stdout
    assert f"ok    resolved 1 `doctor` flag(s) of an earlier `gate doctor`: what it found to fix is fixed ({raised['id']};" \
        in clean.stdout, clean.stdout
    section = brief_flags(repo)
    assert "No unacknowledged flags." in section and "[doctor]" not in section, section
    assert run_gate(repo, "flags").stdout == "no unacknowledged flags\n"
    assert "of an earlier `gate doctor`" not in run_gate(repo, "doctor").stdout  # nothing left: nothing said


def test_a_clean_doctor_ends_only_the_flags_of_doctors_that_probed_no_more(repo: Path, tmp_path: Path) -> None:
    """A `doctor` flag raised by `gate doctor --remote origin` stays through a clean doctor without --remote (its
    probe was not repeated) and through a clean probe of another remote; a clean `gate doctor --remote origin` ends
    it, and with it the flags of doctors without --remote."""
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(mirror))
    git(repo, "remote", "add", "origin", f"file://{tmp_path}/nowhere.git")
    git(repo, "remote", "add", "mirror", f"file://{mirror}")
    assert run_gate(repo, "install-hooks").returncode == 0
    far = run_gate(repo, "doctor", "--remote", "origin")
    assert far.returncode == 1 and "FIX   remote origin" in far.stdout, far.stdout
    [probed] = [r["id"] for r in json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"]]
    for clean in (["doctor"], ["doctor", "--remote", "mirror"]):
        proc = run_gate(repo, *clean)
        assert proc.returncode == 0 and "of an earlier `gate doctor`" not in proc.stdout, proc.stdout
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.rename(tmp_path / "pre-commit")
    assert run_gate(repo, "doctor").returncode == 1  # a doctor without --remote: its own flag
    (tmp_path / "pre-commit").rename(hook)
    listed = json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"]
    [near] = [r["id"] for r in listed if r["id"] != probed]
    git(repo, "remote", "set-url", "origin", f"file://{mirror}")
    both = run_gate(repo, "doctor", "--remote", "origin")
    assert both.returncode == 0 and "resolved 2 `doctor` flag(s)" in both.stdout, both.stdout
    assert json.loads(run_gate(repo, "flags", "--format", "json").stdout)["flags"] == []
    assert sorted(p.name.split("-", 1)[1][:-5] for p in (repo / ".git/gate/flags/resolved").glob("*.json")) == \
        sorted([probed, near])


def test_a_doctor_flag_raised_after_the_clean_doctor_began_stays(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clean doctor ends only what was raised before it began: a doctor that began after it and found something
    to fix (its flag written while this one settles) keeps its flag."""
    assert run_gate(repo, "doctor").returncode == 1
    assert run_gate(repo, "install-hooks").returncode == 0
    real = flags.resolve_event

    def meanwhile(*args: object, **kwargs: Any) -> list[str]:
        flags.raise_flag(discover(repo, {}), "doctor", "gate doctor: needs fixing:\nmeanwhile", command="gate doctor",
                         exit_code=1, about={"remote": None})
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(flags, "resolve_event", meanwhile)
    code, out, _ = call_gate(repo, "doctor", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0 and "resolved 1 `doctor` flag(s)" in out, out
    assert "warn  1 unacknowledged flag(s)" in out, out  # counted after: the one left open
    assert [r["message"] for r in flags.pending(discover(repo, {}))] == ["gate doctor: needs fixing:\nmeanwhile"]


def test_doctor_says_when_both_hook_styles_run_the_gate_twice(repo: Path) -> None:
    """Issue 27: the framework's hook and the native one, in either order of installing, each run the gate on every
    commit; the doctor says so and how to keep one, and says nothing when only one is installed."""
    (repo / ".pre-commit-config.yaml").write_text(FRAMEWORK_CONFIG)
    hook = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks")) / "pre-commit"
    _pre_commit(repo, "install")
    assert "runs twice" not in run_gate(repo, "doctor").stdout  # the framework alone
    assert run_gate(repo, "install-hooks").returncode == 0  # ours, chaining the framework's as pre-commit.pre-gate
    chained = run_gate(repo, "doctor")
    assert (f"warn  the gate runs twice on every commit: {hook} runs it, and so does the pre-commit framework's hook "
            f"{hook}.pre-gate (for .pre-commit-config.yaml): keep one — `gate install-hooks --uninstall` leaves the "
            "framework's, or take the gate out of .pre-commit-config.yaml") in chained.stdout.splitlines()
    assert run_gate(repo, "install-hooks", "--uninstall").returncode == 0
    assert "runs twice" not in run_gate(repo, "doctor").stdout
    _pre_commit(repo, "uninstall")
    assert run_gate(repo, "install-hooks").returncode == 0
    assert "runs twice" not in run_gate(repo, "doctor").stdout  # ours alone
    _pre_commit(repo, "install")  # the framework moves ours to pre-commit.legacy and runs it first
    legacy = run_gate(repo, "doctor")
    assert (f"warn  the gate runs twice on every commit: {hook}.legacy runs it, and so does the pre-commit framework's "
            f"hook {hook} (for .pre-commit-config.yaml): keep one — `pre-commit install --overwrite` leaves the "
            "framework's, `pre-commit uninstall` the native one") in legacy.stdout.splitlines()


def test_doctor_finds_a_hook_whose_interpreter_is_gone(repo: Path) -> None:
    assert run_gate(repo, "install-hooks", "--agent", "gemini").returncode == 0
    path = repo / ".gemini" / "settings.json"
    doc = json.loads(path.read_text())
    for groups in doc["hooks"].values():
        for hook in groups[0]["hooks"]:
            hook["command"] = "/nonexistent/python3 " + hook["command"].split(" ", 1)[1]
    path.write_text(json.dumps(doc))
    out = run_gate(repo, "doctor").stdout
    assert "FIX   .gemini/settings.json: the hooks run /nonexistent/python3, which is gone" in out
    assert os.path.exists(path)


def test_doctor_checks_claude_code_settings_only_where_claude_exists(repo: Path) -> None:
    lines = run_gate(repo, "doctor").stdout.splitlines()
    assert [line for line in lines if "Claude" in line] == ["ok    Claude Code settings not checked: no .claude/ here"]
    assert not any(line.startswith("warn") for line in lines)
    (repo / ".claude").mkdir()
    lines = run_gate(repo, "doctor").stdout.splitlines()
    assert [line for line in lines if "Claude" in line] == [
        "FIX   Claude Code is set up here (.claude/) but no SessionStart hook runs `gate brief --format claude` "
        "(see the README, Wiring it into an agent)"]


def test_doctor_probes_the_remote(remote_url: str, tmp_path: Path) -> None:
    a = clone(remote_url, tmp_path / "a")
    proc = run_gate(a, "doctor", "--remote")
    assert "reachable: ls-remote round trip" in proc.stdout, proc.stdout
    assert "accepts a create-only push under refs/gate/" in proc.stdout
    assert "applies --atomic pushes" in proc.stdout and "not fetched by a plain clone" in proc.stdout
    assert not [r for r in refs(bare_repository(tmp_path)) if "probe" in r]


def test_doctor_warns_when_claims_remote_is_set_and_no_pre_push_hook_runs_the_gate(repo: Path) -> None:
    """Issue 26: with `claims.remote` set, a push is judged against the remote claim only by a pre-push hook; without
    one the doctor says so (warn, not a failure), and says nothing of pre-push while no remote is configured."""
    assert run_gate(repo, "install-hooks").returncode == 0  # the pre-commit hook only
    assert "pre-push" not in run_gate(repo, "doctor").stdout
    (repo / ".gate.yaml").write_text("claims:\n  remote: origin\n")
    missing = run_gate(repo, "doctor")
    assert missing.returncode == 0, missing.stdout
    assert ("warn  claims.remote is origin, but no pre-push hook runs the gate: a push is not judged against the "
            "remote claim (handoff-claim-remote) — `gate install-hooks --pre-push` (or handoff-claim-remote in "
            ".pre-commit-config.yaml and `pre-commit install --hook-type pre-push`)") in missing.stdout.splitlines()
    assert run_gate(repo, "install-hooks", "--pre-push").returncode == 0
    hook = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks")) / "pre-push"
    assert f"ok    native hook {hook} runs the gate" in run_gate(repo, "doctor").stdout.splitlines()


def test_doctor_accepts_the_frameworks_pre_push_hook_for_the_remote_claim(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("claims:\n  remote: origin\n")
    (repo / ".pre-commit-config.yaml").write_text(
        FRAMEWORK_CONFIG + "      - id: handoff-claim-remote\n")
    _pre_commit(repo, "install")  # pre-commit only
    out = run_gate(repo, "doctor").stdout
    assert "but no pre-push hook runs the gate" in out and "`pre-commit install --hook-type pre-push` " \
        "(.pre-commit-config.yaml runs handoff-claim-remote)" in out, out
    _pre_commit(repo, "install", "--hook-type", "pre-push")
    out = run_gate(repo, "doctor").stdout
    assert ("ok    claims.remote is origin: the pre-commit framework's pre-push hook runs handoff-claim-remote"
            in out.splitlines()), out
