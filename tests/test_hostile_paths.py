"""Attacks through paths: a committed `.gate.yaml`, a planted symlink, a swapped folder.

Each test is the attack: it shapes a hostile repository, runs the gate's commands as processes,
and compares a snapshot of everything that must not change (tests/test_confinement.py's).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import GATE_BIN, commit_all, flag_records, git, handoff_text, run_gate
from test_confinement import snapshot

from gates.infra import fsio
from gates.infra.errors import GateError

PATH_KEYS = ["handoff:\n  path", "handoff:\n  schema", "archive:\n  path", "records:\n  path", "mailbox:\n  path",
             "heartbeat:\n  journal"]
SECRET = "root:$6$s3cr3t-hash-never-echoed:19000:0:99999:7:::"


def _hook(repo: Path) -> Path:
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    hook = hooks / "post-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    return hook


def _checked_items(repo: Path) -> None:
    (repo / "HANDOFF.md").write_text(handoff_text(git(repo, "rev-parse", "HEAD~1"), threads="- [x] done\n- [ ] next"))


@pytest.mark.parametrize("key", PATH_KEYS)
@pytest.mark.parametrize("target", [".git/hooks/post-commit", "./.git/hooks/post-commit", ".git/config", ".GIT/x"])
def test_no_configured_path_reaches_the_git_directory(repo: Path, tmp_path: Path, key: str, target: str) -> None:
    hook = _hook(repo)
    _checked_items(repo)
    (repo / ".gate.yaml").write_text(f"{key}: {target}\n")
    before = snapshot(tmp_path, [repo / ".git" / "gate"])
    for argv in (["check", "--fix"], ["mailbox", "take"], ["archive"], ["record", "new", "x"], ["stamp"]):
        proc = run_gate(repo, *argv)
        assert proc.returncode == 3, (argv, proc.stdout, proc.stderr)
        label = key.replace(":\n  ", ".")
        assert proc.stderr.startswith(f"gate: .gate.yaml:2: {label} '{target}' resolves inside "), proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert snapshot(tmp_path, [repo / ".git" / "gate"]) == before
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" and os.access(hook, os.X_OK)
    assert {flag["reason"] for flag in flag_records(repo / ".git")} == {"config-invalid"}


def test_a_committed_directory_symlink_leads_no_write_outside(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "anywhere"
    outside.mkdir()
    (outside / "file").write_text("precious\n")
    os.symlink(outside, repo / "out")
    commit_all(repo, "a committed directory symlink")
    _checked_items(repo)
    for key, argv in (("mailbox:\n  path: out/file", ["mailbox", "take"]), ("archive:\n  path: out/ARCHIVE.md", ["archive"]),
                      ("records:\n  path: out", ["record", "new", "planted"]), ("handoff:\n  path: out/file", ["stamp"])):
        (repo / ".gate.yaml").write_text(key + "\n")
        before = snapshot(tmp_path, [repo / ".git" / "gate"])
        proc = run_gate(repo, *argv)
        assert proc.returncode == 3 and "resolves outside the repository: refused" in proc.stderr, (key, proc.stderr)
        assert snapshot(tmp_path, [repo / ".git" / "gate"]) == before, key
    assert sorted(p.name for p in outside.iterdir()) == ["file"] and (outside / "file").read_text() == "precious\n"


def test_a_folder_swapped_for_a_symlink_after_resolution_is_not_followed(tmp_path: Path) -> None:
    """The race the config check cannot see: the writer opens every component without following links."""
    inside, outside = tmp_path / "tree", tmp_path / "outside"
    (inside / "docs").mkdir(parents=True)
    outside.mkdir()
    target = inside / "docs" / "ARCHIVE.md"  # resolved and judged fine...
    (inside / "docs").rmdir()
    os.symlink(outside, inside / "docs")  # ...then swapped
    with pytest.raises(GateError) as caught:
        fsio.write_atomic(target, b"attack\n")
    assert caught.value.reason == "io-error" and "refused, not followed" in caught.value.message
    with pytest.raises(GateError):
        fsio.write_atomic(target, b"attack\n", parents=True)
    with pytest.raises(GateError):
        fsio.append_line(target, b"attack\n", reason="io-error")
    assert list(outside.iterdir()) == []


def test_a_symlink_at_the_target_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "HANDOFF.md"
    os.symlink(victim, link)
    with pytest.raises(GateError) as caught:
        fsio.write_atomic(link, b"attack\n")
    assert "a symlink is there" in caught.value.message
    assert victim.read_text() == "precious\n" and os.path.islink(link)


@pytest.mark.parametrize("planted", [".gate.yaml", "HANDOFF.md", "ARCHIVE.md"])
def test_a_file_that_resolves_outside_is_never_echoed(repo: Path, tmp_path: Path, planted: str) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("\n".join([SECRET] * 20) + "\n")
    (repo / planted).unlink(missing_ok=True)
    os.symlink(secret, repo / planted)
    seen = []
    for argv in (["check"], ["check", "--format", "json"], ["brief"], ["brief", "--format", "claude"], ["archive"],
                 ["stamp"], ["config"], ["flags"], ["journal"]):
        proc = run_gate(repo, *argv)
        seen.append(proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stderr
    seen += [json.dumps(flag) for flag in flag_records(repo / ".git")]
    journal = repo / ".git" / "gate" / "journal.jsonl"
    seen.append(journal.read_text() if journal.exists() else "")
    assert not any("s3cr3t" in text or "root:" in text for text in seen)
    assert any("resolves outside the repository" in text for text in seen)
    assert secret.read_text().count(SECRET) == 20


def test_path_keys_refuse_control_and_bidi_characters(repo: Path) -> None:
    (repo / ".gate.yaml").write_text('handoff:\n  path: "HAND\\u202eOFF.md"\n')
    proc = run_gate(repo, "check")
    assert proc.returncode == 3 and "\u202e" not in proc.stdout + proc.stderr
    assert proc.stderr == ("gate: .gate.yaml:2: handoff.path: 'HAND\\u202eOFF.md' is not a relative path inside the "
                           "repository (no leading '/', no '..', no control, bidi or zero-width characters)\n")
    [flag] = flag_records(repo / ".git")
    assert flag["reason"] == "config-invalid" and "\u202e" not in flag["message"]


def test_every_spelling_of_a_path_is_one_canonical_path(repo: Path) -> None:
    for spelling in ("./HANDOFF.md", ".//HANDOFF.md", "HANDOFF.md/", "sub/../HANDOFF.md".replace("sub/../", "./")):
        (repo / ".gate.yaml").write_text(f"handoff:\n  path: {spelling}\n")
        proc = run_gate(repo, "config", "--format", "json")
        assert proc.returncode == 0 and json.loads(proc.stdout)["handoff"]["path"] == "HANDOFF.md", spelling


def test_a_symlink_inside_the_tree_is_followed_to_its_file(repo: Path) -> None:
    (repo / "docs").mkdir()
    os.rename(repo / "HANDOFF.md", repo / "docs" / "HANDOFF.md")
    os.symlink("docs/HANDOFF.md", repo / "HANDOFF.md")
    commit_all(repo, "the hand-over lives in docs/")
    proc = run_gate(repo, "stamp")
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(repo / "HANDOFF.md") and git(repo, "rev-parse", "HEAD") in (repo / "docs" / "HANDOFF.md").read_text()
    assert json.loads(run_gate(repo, "config", "--format", "json").stdout)["handoff"]["path"] == "docs/HANDOFF.md"


def test_a_rewritten_data_file_never_keeps_execute_bits(repo: Path) -> None:
    (repo / "HANDOFF.md").chmod(0o755)
    assert run_gate(repo, "stamp").returncode == 0
    assert stat.S_IMODE(os.stat(repo / "HANDOFF.md").st_mode) == 0o644


def test_a_path_into_a_linked_worktrees_admin_dir_is_refused(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    os.symlink(repo / ".git" / "worktrees", linked / "admin")
    (linked / ".gate.yaml").write_text("archive:\n  path: admin/linked/ARCHIVE.md\n")
    before = snapshot(tmp_path, [repo / ".git" / "gate"])
    proc = run_gate(linked, "archive")
    assert proc.returncode == 3 and "archive.path 'admin/linked/ARCHIVE.md' resolves inside the git directory" in proc.stderr
    assert snapshot(tmp_path, [repo / ".git" / "gate"]) == before


def test_a_check_of_a_file_outside_the_tree_reads_nothing(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    proc = run_gate(repo, "check", str(secret))
    assert proc.returncode == 3 and "s3cr3t" not in proc.stdout + proc.stderr
    assert "refusing it: it resolves outside the repository" in proc.stdout + proc.stderr


def test_a_default_path_that_is_a_link_outside_names_the_file_not_the_config(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    (repo / "HANDOFF.md").unlink()
    os.symlink(secret, repo / "HANDOFF.md")
    proc = run_gate(repo, "check")
    assert (proc.returncode, proc.stdout) == (3, "")
    assert proc.stderr == ("gate: HANDOFF.md: refusing it: it resolves outside the repository (a symlink? the gate "
                           "reads and writes only files inside the work tree; handoff.path names it by default)\n")


def test_a_hooks_path_from_the_repository_config_that_leads_outside_is_refused(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(repo, "config", "core.hooksPath", str(elsewhere))
    before = snapshot(tmp_path, [repo / ".git" / "gate"])
    proc = run_gate(repo, "install-hooks")
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert proc.stderr == (f"gate: core.hooksPath from the repository's own config leads outside it ({elsewhere}): "
                           "refused — set it in your global config if you mean it\n")
    assert snapshot(tmp_path, [repo / ".git" / "gate"]) == before and list(elsewhere.iterdir()) == []
    git(repo, "config", "core.hooksPath", ".githooks")  # inside the work tree: fine
    assert run_gate(repo, "install-hooks").returncode == 0 and (repo / ".githooks" / "pre-commit").is_file()


@pytest.mark.parametrize("name", ["0:HANDOFF.md", "2:HANDOFF.md"])
def test_a_hand_over_named_like_a_stage_is_judged_as_itself(repo: Path, tmp_path: Path, name: str) -> None:
    """A committed `.gate.yaml` names `0:HANDOFF.md` (git reads `:0:HANDOFF.md` as HANDOFF.md's staged copy): the
    staged copy judged must be that file's own, never the clean HANDOFF.md beside it."""
    clean = (repo / "HANDOFF.md").read_text()
    (repo / name).write_text(clean)
    (repo / ".gate.yaml").write_text(f"handoff:\n  path: '{name}'\n")
    commit_all(repo, "the hand-over under a name git could read as a stage")
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "--", name)
    assert run_gate(repo, "check").returncode == 0
    (repo / name).write_text((repo / name).read_text().replace("## Open Threads\n", "## Open Threads\n- [x] done\n"))
    git(repo, "add", "--", name)
    before = snapshot(tmp_path, [repo / ".git"])
    proc = run_gate(repo, "check")
    assert proc.returncode == 1 and "[handoff-no-checked-items]" in proc.stdout, proc.stdout
    assert snapshot(tmp_path, [repo / ".git"]) == before


def test_the_advice_to_stage_a_hand_over_is_a_command_the_shell_reads_as_one_path(repo: Path) -> None:
    """A committed `.gate.yaml` names a hand-over whose name holds shell syntax (`;`, `|`, `$(…)`: no control
    character, so it passes the output cleaning). The last line's advice (`git add PATH`) is what an agent runs as
    it is: it must stage that one file, never run what the name says."""
    name = "HANDOFF.md;touch pwned;#"
    git(repo, "mv", "HANDOFF.md", name)
    (repo / ".gate.yaml").write_text(f"handoff:\n  path: '{name}'\n")
    commit_all(repo, "the hand-over under a hostile name")
    assert run_gate(repo, "stamp").returncode == 0
    git(repo, "add", "--", name)
    commit_all(repo, "close-out")
    with open(repo / name, "a") as handle:
        handle.write("\n")  # an unstaged edit
    (repo / "README").write_text("more\n")
    git(repo, "add", "README")
    proc = run_gate(repo, "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.splitlines()[-1]
    [advice] = _advised(last, "git add ")
    subprocess.run(advice, shell=True, cwd=repo, check=True)  # what an agent told to run it does
    assert not (repo / "pwned").exists()
    assert git(repo, "diff", "--cached", "--name-only", "--", name) == name


def test_a_committed_hand_over_far_over_its_cap_is_not_read_whole_from_the_index(repo: Path) -> None:
    """A hostile repository commits a hand-over of 128 MiB of one byte (a few hundred KiB in git): a commit of other
    work reads of the index's copy what its cap allows, as of the work tree's, so the hook's check runs in the
    memory any check needs; and it says the copy is over its cap, not that it has unstaged changes (the two copies
    are one)."""
    import resource

    (repo / "HANDOFF.md").write_bytes((repo / "HANDOFF.md").read_bytes() + b"a" * (128 << 20))
    commit_all(repo, "a hand-over far over its cap")
    (repo / "README").write_text("more\n")
    git(repo, "add", "README")

    def bounded() -> None:  # 160 MiB of address space: a check needs under 48; the blob read whole needs twice 128
        resource.setrlimit(resource.RLIMIT_AS, (160 << 20, 160 << 20))

    assert GATE_BIN
    proc = subprocess.run([GATE_BIN, "check"], cwd=repo, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, preexec_fn=bounded)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    size = (repo / "HANDOFF.md").stat().st_size
    assert f"[handoff-structure] file is {size:,} bytes, over handoff.max_bytes" in proc.stdout, proc.stdout
    assert "unstaged" not in proc.stdout, proc.stdout


def _advised(text: str, start: str) -> list[str]:
    """Every command in backticks in `text` that begins with `start`."""
    return [part for part in text.split("`")[1::2] if part.startswith(start)]


@pytest.mark.parametrize("where", ["handoff-fresh", "closeout"])
def test_every_git_add_advice_names_a_hostile_hand_over_as_one_path(repo: Path, where: str) -> None:
    """The same hostile name in the other places that advise `git add PATH`: handoff-fresh's "bring it up to date"
    and the stop hook's close-out steps. Run as printed, each stages that one file and runs nothing it names."""
    name = "HANDOFF.md;touch pwned;#"
    git(repo, "mv", "HANDOFF.md", name)
    (repo / ".gate.yaml").write_text(f"handoff:\n  path: '{name}'\nfresh:\n  max_behind: 0\n")
    commit_all(repo, "the hand-over under a hostile name")
    (repo / "README").write_text("more\n")
    commit_all(repo, "work the hand-over does not describe")
    if where == "handoff-fresh":
        proc = run_gate(repo, "check", "--only", "handoff-fresh")
        assert proc.returncode == 1, proc.stdout
    else:
        proc = run_gate(repo, "closeout", "--format", "text")
        assert proc.returncode == 1, proc.stdout
    advice = [command.split(" && ")[0] for command in _advised(proc.stdout, "git add ")]
    assert advice, proc.stdout
    assert run_gate(repo, "stamp").returncode == 0
    for command in advice:
        subprocess.run(command, shell=True, cwd=repo, check=True)  # what an agent told to run it does
    assert not (repo / "pwned").exists()
    assert git(repo, "diff", "--cached", "--name-only", "--", name) == name
