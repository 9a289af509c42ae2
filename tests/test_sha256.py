"""A SHA-256 repository (`git init --object-format=sha256`): object ids of 64 hex digits. The hand-over `gate init`
writes passes `gate check`, and every place that reads an object id judges it by the repository's own format: the
Meta ref (7-64 there, 7-40 in a SHA-1 repository), `gate stamp`, the tripwire, and `--range`, whose past blobs
GitPython cannot read in such a repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import call_gate, commit_all, git, init_repo, run_gate, write_target


def _sha256_repo(path: Path) -> Path:
    probe = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(path / "probe")], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this git has no SHA-256 object format")
    return init_repo(path / "repo", "--object-format=sha256")


def _set_ref(repo: Path, ref: str) -> None:
    path = repo / "HANDOFF.md"
    path.write_text("".join(f"- ref: {ref}\n" if line.startswith("- ref: ") else line
                            for line in path.read_text().splitlines(keepends=True)))


def test_gate_init_then_check_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _sha256_repo(tmp_path)
    assert run_gate(repo, "init").returncode == 0
    unborn = run_gate(repo, "check")  # no commit yet: the format is asked of git
    assert unborn.returncode == 0 and "not a commit id" not in unborn.stdout, unborn.stdout
    (repo / "f").write_text("x\n")
    head = commit_all(repo, "first")
    assert len(head) == 64
    write_target(repo)
    _set_ref(repo, head)
    commit_all(repo, "hand-over")
    proc = run_gate(repo, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    code, out, err = call_gate(repo, "check", capsys=capsys, monkeypatch=monkeypatch)
    assert code == 0, out + err
    stamped = run_gate(repo, "stamp")
    assert stamped.returncode == 0 and f"ref {git(repo, 'rev-parse', 'HEAD')}" in stamped.stdout, stamped.stdout
    assert run_gate(repo, "check").returncode == 0


def test_the_meta_ref_is_judged_by_the_repository_format(tmp_path: Path) -> None:
    repo = _sha256_repo(tmp_path)
    sha1 = init_repo(tmp_path / "sha1")
    for where in (repo, sha1):
        assert run_gate(where, "init").returncode == 0
        (where / "f").write_text("x\n")
        commit_all(where, "first")
        write_target(where)
    head = git(repo, "rev-parse", "HEAD")
    for ref in (head, head[:41], head[:7].upper()):  # longer than SHA-1's 40, and short
        _set_ref(repo, ref)
        proc = run_gate(repo, "check", "--only", "handoff-structure")
        assert proc.returncode == 0, (ref, proc.stdout)
    _set_ref(repo, head + "0")
    proc = run_gate(repo, "check", "--only", "handoff-structure")
    assert proc.returncode == 1 and "is not a commit id (7-64 hex digits)" in proc.stdout, proc.stdout
    _set_ref(sha1, head)  # 64 hex digits: no SHA-1 id is that long
    proc = run_gate(sha1, "check", "--only", "handoff-structure")
    assert proc.returncode == 1 and "is not a commit id (7-40 hex digits)" in proc.stdout, proc.stdout


def test_a_range_reads_past_blobs_and_the_brief_sees_the_tripwire(tmp_path: Path) -> None:
    repo = _sha256_repo(tmp_path)
    assert run_gate(repo, "init").returncode == 0
    (repo / "f").write_text("x\n")
    head = commit_all(repo, "first")
    write_target(repo)
    _set_ref(repo, head)
    commit_all(repo, "hand-over")
    (repo / "ARCHIVE.md").write_text("rewritten history\n")  # append-only: only growth at the end
    commit_all(repo, "rewrite the archive")
    proc = run_gate(repo, "check", "--range", "HEAD~2..HEAD")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[append-only]" in proc.stdout and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert run_gate(repo, "check", "--range", "HEAD~2..HEAD~1").returncode == 0
    brief = run_gate(repo, "brief")
    assert brief.returncode == 0 and "Verdict: 1 commit behind HEAD" in brief.stdout, brief.stdout
