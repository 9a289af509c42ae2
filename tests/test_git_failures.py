"""Issue 25, class 2: a git question git could not answer is never read as "nothing there" or "fine".

Git is made to fail for real (an object deleted from `.git/objects`); every command that judges asks, and refuses
or says "unknown", naming the git command and what it said. The last test holds the class in the code: every
answer of the git door has its exit code read (or comes through `Repo.ask`, which reads it)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest
from conftest import commit_all, git, handoff_text, init_repo, run_gate, write_target

ROOT = Path(__file__).resolve().parent.parent


def _loose(repo: Path, oid: str) -> Path:
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.is_file(), path
    return path


def _snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of the work tree and every ref: what a refused command must leave as it was."""
    out = {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    out["refs"] = git(repo, "for-each-ref", "--format=%(refname) %(objectname)").encode()
    out["HEAD"] = (repo / ".git" / "HEAD").read_bytes()
    return out


def test_a_history_git_cannot_read_is_never_a_verdict(repo: Path) -> None:
    """The Meta ref is 3 commits back (within fresh.max_behind) and the commit after HEAD is gone from the object
    store. Before: the line read as ended, so the Meta ref was "not in HEAD's history" (a wrong verdict), and the
    brief showed "(no commits yet)". Now `gate check` refuses with git's own words (exit 3), the brief's tripwire
    says UNKNOWN and why, and the close-out is blocked for that reason."""
    (repo / ".gate.yaml").write_text("fresh:\n  max_behind: 5\n")
    commit_all(repo, "config")
    (repo / "work.txt").write_text("work\n")
    commit_all(repo, "work")
    line = git(repo, "rev-list", "--first-parent", "HEAD").split()
    assert run_gate(repo, "check").returncode == 0  # readable: 2 commits of work, within the limit
    _loose(repo, line[1]).unlink()
    before = _snapshot(repo)

    check = run_gate(repo, "check")
    assert check.returncode == 3, check.stdout + check.stderr
    assert "git merge-base failed (exit 1: error: Could not read" in check.stderr, check.stderr
    assert "not in HEAD's history" not in check.stdout + check.stderr
    assert "Traceback" not in check.stderr and len(check.stderr.strip().splitlines()) == 1, check.stderr

    brief = run_gate(repo, "brief")
    assert brief.returncode == 0, brief.stderr
    tripwire = brief.stdout.split("## 2. Tripwire")[1].split("## 3.")[0]
    assert "(unknown: git log failed (exit 128" in tripwire, tripwire
    assert "Verdict: UNKNOWN — git merge-base failed" in tripwire, tripwire
    assert "(no commits yet)" not in tripwire and "NOT IN THIS HISTORY" not in tripwire, tripwire

    stop = run_gate(repo, "closeout", "--format", "text")
    assert stop.returncode == 1, stop.stdout + stop.stderr
    assert "cannot judge the hand-over: git merge-base failed" in stop.stdout, stop.stdout
    assert "cannot be told: git merge-base failed" in stop.stdout, stop.stdout
    assert _snapshot(repo) == before


def test_a_staged_blob_the_repository_lacks_is_never_a_file_that_is_not_staged(repo: Path) -> None:
    """The commit being made stages a hand-over whose blob is then lost. Before: the staged file read as "not
    staged", so the gates judged the work-tree copy (a good one) and passed. Now the check refuses (exit 3)."""
    head = git(repo, "rev-parse", "HEAD")
    path = repo / "HANDOFF.md"
    path.write_text(handoff_text(head, threads="- [x] a checked item the gates refuse"))
    git(repo, "add", "HANDOFF.md")
    assert run_gate(repo, "check").returncode == 1  # readable: the staged copy is judged and refused
    blob = git(repo, "rev-parse", ":HANDOFF.md")
    path.write_text(handoff_text(head))  # the work tree's copy would pass
    _loose(repo, blob).unlink()
    before = _snapshot(repo)
    check = run_gate(repo, "check")
    assert check.returncode == 3, check.stdout + check.stderr
    assert "cannot read the staged HANDOFF.md: git cat-file failed" in check.stderr, check.stderr
    assert _snapshot(repo) == before


def test_a_past_blob_the_repository_lacks_is_never_a_file_that_was_not_there(tmp_path: Path) -> None:
    """SHA-256, where `--range` reads past blobs through `git cat-file`: git's `bad file` said both "a folder" and
    "a blob this repository lacks". Before: the rewritten append-only archive's old blob, lost, read as no file,
    so nothing could have been rewritten and the range passed. Now the range is refused (exit 3)."""
    probe = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(tmp_path / "probe")],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this git has no SHA-256 object format")
    repo = init_repo(tmp_path / "repo", "--object-format=sha256")
    assert run_gate(repo, "init").returncode == 0
    head = commit_all(repo, "first")
    write_target(repo)
    path = repo / "HANDOFF.md"
    path.write_text(path.read_text().replace(path.read_text().split("- ref: ")[1].split("\n")[0], head, 1))
    (repo / "ARCHIVE.md").write_text("the old record\n")
    commit_all(repo, "hand-over")
    (repo / "ARCHIVE.md").write_text("rewritten history\n")
    commit_all(repo, "rewrite the archive")
    refused = run_gate(repo, "check", "--range", "HEAD~1..HEAD")
    assert refused.returncode == 1 and "[append-only]" in refused.stdout, refused.stdout + refused.stderr
    _loose(repo, git(repo, "rev-parse", "HEAD~1:ARCHIVE.md")).unlink()
    before = _snapshot(repo)
    check = run_gate(repo, "check", "--range", "HEAD~1..HEAD")
    assert check.returncode == 3, check.stdout + check.stderr
    assert "cannot read ARCHIVE.md at" in check.stderr and "git cat-file failed" in check.stderr, check.stderr
    assert _snapshot(repo) == before


# Callees that are handed a raw answer of the git door and read its exit code themselves.
_READS_THE_CODE = {"Output", "_rewritten", "_answered"}
_DOOR = {"git", "local", "network", "status", "_run", "_raw"}


def _door_calls(tree: ast.AST) -> list[tuple[ast.Call, ast.AST | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(call of the git door, its parent node, its function) for every such call in a module."""
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        parents = {child: node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(func):
            callee = node.func if isinstance(node, ast.Call) else None
            name = callee.attr if isinstance(callee, ast.Attribute) else callee.id if isinstance(callee, ast.Name) \
                else None
            if isinstance(node, ast.Call) and name in _DOOR:
                found.append((node, parents.get(node), func))
    return found


def test_every_answer_of_the_git_door_has_its_exit_code_read() -> None:
    """No `.git(...)`, `._raw(...)`, `.local(...)`, `.network(...)`, `.status(...)` or `_run(...)` outside the door's own
    plumbing is read without its exit code: never `.stdout` of the call itself, and a name it is bound to has its
    `.returncode` read in the same function. `Repo.ask` is the way to ask when only an answer will do."""
    door_plumbing = {("git.py", name) for name in ("git", "status", "_run", "_raw", "wait", "discover", "changed_in",
                                                     "_blob", "local", "network", "_call")}
    problems = []
    for module in sorted((ROOT / "gates").rglob("*.py")):
        tree = ast.parse(module.read_text(), str(module))
        for call, parent, func in _door_calls(tree):
            where = f"{module.relative_to(ROOT)}:{call.lineno} ({func.name})"
            if (module.name, func.name) in door_plumbing or module.name == "gitnet.py" and func.name in ("local",
                                                                                                    "network"):
                continue
            if isinstance(parent, ast.Attribute):
                if parent.attr != "returncode":
                    problems.append(f"{where}: .{parent.attr} of a git call, its exit code unread")
            elif isinstance(parent, (ast.Assign, ast.NamedExpr)):
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                read = {n.value.id for n in ast.walk(func) if isinstance(n, ast.Attribute) and n.attr == "returncode"
                        and isinstance(n.value, ast.Name)}
                if not names or not names <= read:
                    problems.append(f"{where}: {sorted(names)} bound to a git call, its exit code never read")
            elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name | ast.Attribute):
                callee = parent.func.id if isinstance(parent.func, ast.Name) else parent.func.attr
                if callee not in _READS_THE_CODE:
                    problems.append(f"{where}: a git call's answer handed to {callee}(), which is not known to "
                                    "read its exit code")
            elif not isinstance(parent, ast.Return) or func.name not in ("git", "status"):
                problems.append(f"{where}: a git call used as {type(parent).__name__}")
    assert problems == []
