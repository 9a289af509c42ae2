"""`gate check`: its output formats, the selection of gates, files named on the command line, --range."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import ROOT, call_gate, commit_all, flag_records, git, handoff_text, run_gate
from helpers import break_with_punctuation

from gates.checks import CATALOG, GATES
from gates.infra import schemas, validation


def test_range_judges_every_commit_and_names_the_bad_one(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "ARCHIVE.md").write_text("# Archive\n")
    commit_all(repo, "archive")
    bad = ""
    for i in range(19):
        archive = (repo / "ARCHIVE.md").read_text()
        if i == 9:
            archive = archive.replace("# Archive", "# Rewritten archive")
        (repo / "ARCHIVE.md").write_text(archive + f"- entry {i}\n")
        sha = commit_all(repo, f"commit {i}")
        bad = sha if i == 9 else bad
    assert run_gate(repo, "check", "--only", "append-only").returncode == 0  # nothing staged now
    proc = run_gate(repo, "check", "--range", f"{base}..HEAD", "--only", "append-only")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[:-1] == [
        f"ARCHIVE.md:1: [append-only] commit {bad[:12]} (commit 9) changes existing content of ARCHIVE.md at line 1: "
        "it may only grow at its end — restore that text, add below it"]
    assert run_gate(repo, "check", "--range", f"{bad}..HEAD", "--only", "append-only").returncode == 0
    assert run_gate(repo, "check", "--range", "--upload-pack=evil").returncode == 2


def test_check_help_lists_the_gate_ids(tmp_path: Path) -> None:
    from gates.checks import GATES

    out = "".join(run_gate(tmp_path, "check", "--help").stdout.split())  # argparse wraps lines, even at a hyphen
    assert "".join(("gate ids (for --only and --skip): " + ", ".join(GATES)).split()) in out


def test_an_unknown_revision_in_range_is_a_usage_error(repo: Path) -> None:
    proc = run_gate(repo, "check", "--range", "nosuch..HEAD")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("gate: --range nosuch..HEAD: 'nosuch' names no commit of this repository "
                           "(BASE..HEAD takes two commits, e.g. origin/main..HEAD)\n")


def test_a_file_argument_that_does_not_exist_is_a_usage_error_and_no_flag(repo: Path) -> None:
    """A typo on the command line is said to whoever typed it; a flag would stay open for every later session."""
    proc = run_gate(repo, "check", "HANDOF.md")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("gate: HANDOF.md: no such file — name an existing hand-over file, or none to check the "
                           "configured one\n")
    assert flag_records(repo / ".git") == []
    assert "No unacknowledged flags." in run_gate(repo, "brief").stdout


def test_a_range_check_says_how_many_commits_it_judged(repo: Path) -> None:
    proc = run_gate(repo, "check", "--range", "HEAD~1..HEAD")
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[-1] == "gate check: passed (9 gates on HANDOFF.md and 1 commit of HEAD~1..HEAD)"


def _break(repo: Path) -> None:
    text = handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done").replace("## Verified\n", "")
    (repo / "HANDOFF.md").write_text(text)


def test_text_output_is_one_line_per_finding_then_a_summary(repo: Path) -> None:
    _break(repo)
    proc = run_gate(repo, "check")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "HANDOFF.md:11: [handoff-no-checked-items] checked item 'done' — completed items move to ARCHIVE.md (`gate archive`)",
        "HANDOFF.md:15: [handoff-structure] missing section '## Verified' — add it before '## Assumed'",
        "gate check: failed: 2 errors (handoff-no-checked-items: 1, handoff-structure: 1; 9 gates on HANDOFF.md in the "
        "work tree)",
    ]
    assert proc.stderr == ""


def test_json_output_follows_its_schema(repo: Path) -> None:
    _break(repo)
    proc = run_gate(repo, "check", "--format", "json")
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    assert validation.validate(schemas.load("check-result"), document, {}) == []
    assert document["exit_code"] == 1 and document["ok"] is False
    assert document["counts"] == {"error": 2, "warning": 0}
    assert document["findings"][0] == {
        "path": "HANDOFF.md", "line": 11, "gate": "handoff-no-checked-items", "severity": "error",
        "message": "checked item 'done' — completed items move to ARCHIVE.md (`gate archive`)",
    }


def test_json_output_when_the_check_cannot_run(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("bogus: 1\n")
    proc = run_gate(repo, "check", "--format", "json")
    assert proc.returncode == 3
    document = json.loads(proc.stdout)
    assert validation.validate(schemas.load("check-result"), document, {}) == []
    allowed = "append_only, archive, claims, closeout, fresh, gates, handoff, heartbeat, locks, mailbox, records, version"
    assert document["error"] == {"reason": "config-invalid",
                                 "message": f".gate.yaml:1: unknown key 'bogus' (allowed: {allowed})"}


def test_only_and_skip_select_gates(repo: Path) -> None:
    _break(repo)
    only = run_gate(repo, "check", "--only", "handoff-structure")
    assert only.returncode == 1 and "handoff-no-checked-items" not in only.stdout.splitlines()[0]
    everything = ",".join(GATES)
    skip = run_gate(repo, "check", "--skip", everything)
    assert skip.returncode == 0
    assert skip.stdout == "gate check: passed (0 gates on HANDOFF.md in the work tree)\n"


def test_only_runs_a_gate_that_config_turned_off(repo: Path) -> None:
    _break(repo)
    (repo / ".gate.yaml").write_text("gates:\n  handoff-no-checked-items: false\n")
    plain = run_gate(repo, "check")
    assert "handoff-no-checked-items" not in plain.stdout
    named = run_gate(repo, "check", "--only", "handoff-no-checked-items")
    assert named.returncode == 1 and "[handoff-no-checked-items]" in named.stdout


def test_files_named_on_the_command_line_are_checked_instead(repo: Path) -> None:
    draft = repo / "drafts" / "NEXT.md"
    draft.parent.mkdir()
    draft.write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="  - [X] nested done"))
    proc = run_gate(repo / "drafts", "check", "NEXT.md")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("drafts/NEXT.md:11: [handoff-no-checked-items]")


def test_in_process_and_subprocess_agree(repo: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _break(repo)
    code, out, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    proc = run_gate(repo, "check")
    assert (code, out, err) == (proc.returncode, proc.stdout, proc.stderr)


OPT_IN = tuple(gate.id for gate in CATALOG.values() if not gate.on)  # gates off by default


DATA = ROOT / "tests" / "data"


def test_github_annotations(repo: Path) -> None:
    break_with_punctuation(repo)
    (repo / "HANDOFF.md").write_text((repo / "HANDOFF.md").read_text().replace("- [x] done", "- [x] 100% done, ok: yes"))
    proc = run_gate(repo, "check", "--format", "github")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == ("::error file=HANDOFF.md,line=11,title=handoff-no-checked-items::"
                                           "checked item '100%25 done, ok: yes' — completed items move to "
                                           "ARCHIVE.md (`gate archive`)")
    assert proc.stdout.splitlines() == [  # the whole output: one annotation per finding, then the summary
        "::error file=HANDOFF.md,line=11,title=handoff-no-checked-items::"
        "checked item '100%25 done, ok: yes' — completed items move to ARCHIVE.md (`gate archive`)",
        "gate check: failed: 1 error (handoff-no-checked-items: 1; 9 gates on HANDOFF.md in the work tree)",
    ]
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    assert run_gate(repo, "check", env=env).stdout == proc.stdout


def test_sarif_is_valid_sarif_2_1_0(repo: Path) -> None:
    from jsonschema import Draft4Validator

    break_with_punctuation(repo)
    proc = run_gate(repo, "check", "--format", "sarif")
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    schema = json.loads((DATA / "sarif-2.1.0.schema.json").read_text())
    errors = sorted(Draft4Validator(schema).iter_errors(document), key=str)
    assert errors == []
    run = document["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [g for g in GATES if g not in OPT_IN]
    assert all(rule["help"]["text"] and rule["shortDescription"]["text"] for rule in run["tool"]["driver"]["rules"])
    # Issue 27: it pointed at a PyPI page that does not exist; no page to point at, so none is named
    assert "informationUri" not in run["tool"]["driver"] and "pypi.org" not in proc.stdout
    [result] = run["results"]
    assert result["ruleId"] == "handoff-no-checked-items" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "HANDOFF.md", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 11}}
    (repo / ".gate.yaml").write_text("bogus: 1\n")
    broken = json.loads(run_gate(repo, "check", "--format", "sarif").stdout)
    assert list(Draft4Validator(schema).iter_errors(broken)) == []
    assert broken["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_junit_is_one_testcase_per_gate(repo: Path) -> None:
    break_with_punctuation(repo)
    proc = run_gate(repo, "check", "--format", "junit")
    suite = ElementTree.fromstring(proc.stdout.encode())
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [g for g in GATES if g not in OPT_IN]
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["handoff-no-checked-items"] and suite.get("failures") == "1"
