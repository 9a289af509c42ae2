"""The one check path: every `gate check` judges the state as it is now, and stays cheap.

Timings live in bench/ (docs/performance.md); these tests check what a run does instead: that no
verdict is remembered and replayed, which modules a check imports, how many git processes it
starts, and that caches of parsed inputs only accelerate (deleting them changes no answer).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Callable

import pytest
from conftest import (
    REAL_GIT,
    ROOT,
    bare_python,
    commit_all,
    flag_records,
    git,
    handoff_text,
    imported_by,
    init_repo,
    run_gate,
    write_target,
)

# The parsers and GitPython, and the standard modules a hook's check does without (docs/performance.md):
# typing (NamedTuple: gates/infra/plain.py), argparse and the shutil it pulls in (a plain invocation is
# parsed by gates/cli.py), subprocess (git by posix_spawn), hashlib (OpenSSL: gates/infra/digest.py), copy,
# json (the C scanner and encoder: gates/infra/jsonio.py), datetime's Python half (gates/infra/clock.py),
# shlex (gates/infra/text.shell_quote), pathlib (paths are str), re with the enum and functools it loads
# (string methods, or infra/text.Pattern on first use), collections and contextlib; gates/infra/surfaces.py,
# the development tool that renders the catalog's surfaces; and the gate's own YAML reader and validator
# (gates/infra/dataio.py, gates/infra/validation.py), needed only for a `.gate.yaml` or a record not seen before;
# and __future__ (no module of the gate imports it: an annotation is quoted where it names a later name or one
# imported for the type checker only).
HEAVY = ("__future__", "dataclasses", "inspect", "jsonschema", "ruamel.yaml", "git", "pre_commit",
         "gates.infra.surfaces", "typing", "argparse", "shutil", "subprocess", "hashlib", "copy", "json", "datetime", "shlex",
         "pathlib", "re", "enum", "functools", "collections", "contextlib", "fnmatch", "urllib",
         "gates.infra.dataio", "gates.infra.validation")
PROBE = f"""
import sys
already = set(sys.modules)
from gates.main import main
code = main(["check"])
print("LOADED=" + ",".join(m for m in {HEAVY!r} if m in sys.modules and m not in already), "CODE=%d" % code)
"""


def _probe(repo: Path) -> str:
    proc = bare_python(PROBE, cwd=repo)
    return next(line for line in proc.stdout.splitlines() if line.startswith("LOADED="))


def test_a_check_loads_no_heavy_module_once_the_config_is_cached(repo: Path) -> None:
    """A claim is held, so the claim gate reads its record: JSON, through jsonio's strict reader (not dataio's)."""
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    assert "jsonschema" in _probe(repo)  # the first run parses and validates .gate.yaml
    assert run_gate(repo, "claim").returncode == 0
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), target="Another target."))
    assert _probe(repo) == "LOADED= CODE=0"  # the parsers and the modules above, kept off every hook


@pytest.mark.parametrize("source", ["template", "own"])
def test_a_hand_over_with_html_comments_loads_no_heavy_module(tmp_path: Path, source: str) -> None:
    """`gate init`'s template (its comments) and this repository's own HANDOFF.md (a comment under its title, and its
    decisions as a generated table of its records): the table markers are read with string methods, so no comment
    loads `re` (and the enum and functools it brings)."""
    repo = init_repo(tmp_path / "repo")
    (repo / "README").write_text("hello\n")
    commit_all(repo, "first")
    assert run_gate(repo, "init").returncode == 0
    if source == "own":  # its decisions are records, listed in a generated table
        (repo / "HANDOFF.md").write_text((ROOT / "HANDOFF.md").read_text())
        shutil.copytree(ROOT / "decisions", repo / "decisions")
        assert run_gate(repo, "stamp").returncode == 0
    write_target(repo)
    commit_all(repo, "hand-over")
    assert "<!--" in (repo / "HANDOFF.md").read_text()
    _probe(repo)  # the first run parses and caches .gate.yaml
    assert _probe(repo) == "LOADED= CODE=0"


def test_the_lock_a_commit_holds_costs_no_process_scan(repo: Path) -> None:
    """`git commit -a` holds index.lock while its pre-commit hook runs: a lock younger than the threshold is fresh
    without asking `mount` its filesystem or scanning processes, and neither `re` nor subprocess is loaded."""
    (repo / ".git" / "index.lock").write_bytes(b"")
    watched = ("gates.domain.procscan", "subprocess", "re", "gates.domain.locks")
    assert imported_by("from gates.main import main\nassert main(['check']) == 0", watched, cwd=repo) == \
        ["gates.domain.locks"]
    assert _probe(repo) == "LOADED= CODE=0"


def test_what_has_nothing_to_judge_is_not_even_loaded(repo: Path) -> None:
    """No claim in the clone, no flag open, no HTML comment: the claims, flags and tables modules stay unloaded; once
    there is a claim, once a flag is open, once there is a comment, each loads, and the flag is resolved by the check
    that loaded it."""
    code = "from gates.main import main\nassert main(['check']) == 0"
    claims, flags = "gates.domain.claims", "gates.domain.flags"
    assert imported_by(code, (claims, flags), cwd=repo) == []
    assert run_gate(repo, "claim").returncode == 0
    assert imported_by(code, (claims, flags), cwd=repo) == [claims]
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done"))
    assert run_gate(repo, "check").returncode == 1  # a flag opens
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD")))
    assert imported_by(code, (claims, flags), cwd=repo) == [claims, flags]
    assert flag_records(repo / ".git") == []
    tables = "gates.domain.tables"  # its markers are HTML comments: a hand-over without one has no table to judge
    assert "<!--" not in (repo / "HANDOFF.md").read_text() and imported_by(code, (tables,), cwd=repo) == []
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), target="A target. <!-- a note -->"))
    assert imported_by(code, (tables,), cwd=repo) == [tables]


def test_a_flag_open_in_another_worktree_is_not_this_checks_to_load(repo: Path, tmp_path: Path) -> None:
    """A linked worktree's denied claim leaves a flag open there: the main worktree's passing checks neither load the
    flags module nor resolve it; the worktree whose flag it is resolves it when it is granted the claim."""
    code = "from gates.main import main\nassert main(['check']) == 0"
    flags = "gates.domain.flags"
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "linked", str(linked))
    assert run_gate(repo, "claim").returncode == 0
    assert run_gate(linked, "claim").returncode == 1  # denied: its flag is open in the linked worktree
    before = flag_records(repo / ".git")
    assert [record["reason"] for record in before] == ["claim-denied"]
    assert imported_by(code, (flags,), cwd=repo) == []
    assert flag_records(repo / ".git") == before  # still open: not this worktree's
    assert run_gate(repo, "release").returncode == 0
    assert run_gate(linked, "claim").returncode == 0
    assert flag_records(repo / ".git") == []


def test_a_replaced_history_is_judged_not_remembered(repo: Path) -> None:
    """`git replace --graft` changes HEAD's history without touching any file a record could list."""
    for _ in range(4):
        commit_all(repo, "work after the hand-over")
    assert run_gate(repo, "check").returncode == 1  # 4 commits past the Meta ref
    meta = handoff_text(git(repo, "rev-parse", "HEAD"))
    (repo / "HANDOFF.md").write_text(meta)
    commit_all(repo, "close-out")
    assert run_gate(repo, "check").returncode == 0
    first = git(repo, "rev-list", "--max-parents=0", "HEAD")
    git(repo, "replace", "--graft", "HEAD", first)  # the Meta ref's commit is no longer in HEAD's history
    again = run_gate(repo, "check")
    assert again.returncode == 1 and "[handoff-fresh]" in again.stdout, again.stdout


def test_grafts_are_judged_not_remembered(repo: Path) -> None:
    """`info/grafts` (read by git when no replace refs exist) cuts HEAD's history just as well."""
    assert run_gate(repo, "check").returncode == 0  # Meta ref is HEAD's parent
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "grafts").write_text(f"{git(repo, 'rev-parse', 'HEAD')}\n")  # HEAD now has no parent
    after = run_gate(repo, "check")
    assert after.returncode == 1 and "is not in HEAD's history" in after.stdout, after.stdout


def test_github_actions_gets_annotations_on_every_run(repo: Path) -> None:
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    assert run_gate(repo, "check").returncode == 0  # a text run first: nothing of it may be reused
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done"))
    out = run_gate(repo, "check", env=env).stdout
    assert out.startswith("::error file=HANDOFF.md,line="), out


def test_a_huge_sparse_hand_over_is_refused_from_its_size(repo: Path) -> None:
    with open(repo / "HANDOFF.md", "r+b") as handle:
        handle.truncate(4 << 30)  # 4 GB, sparse: hashing or reading it would take many seconds
    proc = run_gate(repo, "check", timeout=30)
    assert proc.returncode == 1 and "4,294,967,296 bytes, over handoff.max_bytes (65,536)" in proc.stdout, proc.stdout
    assert not (repo / ".git" / "gate" / "cache").is_dir() or not list((repo / ".git" / "gate" / "cache").glob("quick-*"))


def test_deleting_the_cache_changes_no_answer(repo: Path) -> None:
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    answers = [run_gate(repo, "check", "--format", "json").stdout for _ in range(3)]
    assert len({*answers}) == 1 and json.loads(answers[0])["ok"] is True
    cache = repo / ".git" / "gate" / "cache"
    assert {p.name.split("-")[0] for p in cache.iterdir()} == {"config"}
    shutil.rmtree(cache)
    assert run_gate(repo, "check", "--format", "json").stdout == answers[0]
    for entry in cache.iterdir():  # a corrupt cache is passed over, not trusted
        entry.write_text("{not json")
    assert run_gate(repo, "check", "--format", "json").stdout == answers[0]


def test_a_repeated_failure_is_judged_every_time(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD"), threads="- [x] done"))
    for _ in range(3):
        assert run_gate(repo, "check").returncode == 1
    [flag] = [json.loads(p.read_text()) for p in (repo / ".git" / "gate" / "flags").glob("*.json")]
    assert flag["count"] == 3


def test_old_cache_entries_are_pruned_when_the_cache_is_written(repo: Path) -> None:
    cache = repo / ".git" / "gate" / "cache"
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    assert run_gate(repo, "check").returncode == 0
    old, fresh, other = cache / "config-0000", cache / "quick-0000", cache / "records.json"
    for path in (old, fresh, other):
        path.write_text("{}")
    month_ago = time.time() - 31 * 86400
    for path in (old, other):
        os.utime(path, (month_ago, month_ago))
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 501\n")
    assert run_gate(repo, "check").returncode == 0  # a new config is parsed and cached
    assert not old.exists() and fresh.exists() and other.exists()  # only old config-/quick- entries go


def _git_calls(repo: Path, log: Path) -> int:
    log.write_text("")
    assert run_gate(repo, "check", env={**os.environ, "PATH": f"{log.parent}:{os.environ['PATH']}"}).returncode == 0
    return len(log.read_text().splitlines())


def test_git_processes_per_check(repo: Path, tmp_path: Path, git_wrapper: Callable[..., Path]) -> None:
    log = tmp_path / "bin" / "calls.log"
    git_wrapper(f'echo "$*" >> "{log}"\nexec "{REAL_GIT}" "$@"\n')
    (repo / "other.txt").write_text("other work\n")
    git(repo, "add", "other.txt")
    for _ in range(2):  # the same on every run: nothing is answered from a record
        # a commit's check: discovery (with HEAD's recent line), then side by side diff --cached and one batch of the
        # staged .gate.yaml (is the configuration read the one the commit records?) and hand-over; with no
        # .gate.yaml in the work tree, the index is asked what it holds there (nothing, or a folder, or a conflict)
        assert _git_calls(repo, log) == 4, log.read_text()
        calls = [line.split(" -c ")[-1].split(" ", 1)[1] for line in log.read_text().splitlines()]
        assert calls[0].startswith("rev-parse ") and sorted(calls[1:]) == [  # side by side: any order
            "--literal-pathspecs diff --cached --name-status -z --no-renames --no-ext-diff --no-textconv "
            f"{git(repo, 'rev-parse', 'HEAD')} --", "--literal-pathspecs ls-files --stage -t -z -- .gate.yaml",
            "cat-file --batch"], log.read_text()
        (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
        git(repo, "add", ".gate.yaml")
        run_gate(repo, "check")  # (a configuration not seen before is parsed and kept: its cache's writes ask git)
        assert _git_calls(repo, log) == 3, log.read_text()  # a plain .gate.yaml: the batch alone answers
        git(repo, "rm", "-q", "--cached", ".gate.yaml")
        (repo / ".gate.yaml").unlink()
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "HANDOFF.md")
    # a close-out: the staged hand-over is read once, and its Meta ref judged from that copy (it was read again, and
    # parsed again, to tell a close-out: one more git process on every close-out commit)
    assert _git_calls(repo, log) == 4, log.read_text()
    git(repo, "reset", "-q")
    # nothing staged: the work tree is judged, and the calls for a commit are stopped unread (they may be stopped
    # before they get as far as this log)
    assert _git_calls(repo, log) in (2, 3, 4), log.read_text()


def test_an_agents_commit_loads_no_heavy_module_and_a_persons_not_even_the_loop_watch(repo: Path) -> None:
    """The quiet-loop notice (gates/domain/loopwatch.py) on every commit: a person's loads nothing for it; an agent's,
    in a repository wired for its harness and with no brief journalled (so it is warned), loads no heavy module."""
    assert run_gate(repo, "install-hooks", "--agent", "codex").returncode == 0
    commit_all(repo, "wire codex")
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD")))
    code = "from gates.main import main\nassert main(['check']) == 0"
    assert imported_by(code, ("gates.domain.loopwatch",), cwd=repo) == []
    _probe(repo)  # the config parsed and cached
    agent = {**os.environ, "CODEX_THREAD_ID": "t"}
    proc = bare_python(PROBE, cwd=repo, env=agent)
    assert "[gate warning] this commit is made in a Codex session" in proc.stdout, proc.stdout + proc.stderr
    assert "LOADED= CODE=0" in proc.stdout.splitlines()
