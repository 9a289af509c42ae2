"""`gate install-hooks --agent`: a harness's configuration file is written only at its own path. A committed
link (in the tree or not, at the file or at a folder on its way) or a hard-linked file there is refused with
one line naming the file, by the installer, the uninstaller and the doctor; what the link leads to keeps its
bytes (issue 25: `.claude/settings.json -> ../package.json` had package.json rewritten)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import call_gate, commit_all, run_gate

from gates.domain import agents

PACKAGE = b'{\n  "name": "app",\n  "scripts": {"test": "x"}\n}\n'


def _snapshot(repo: Path) -> dict[str, tuple[bool, bytes | str]]:
    """Every entry of the work tree (not .git): whether it is a link, and its target or bytes."""
    out: dict[str, tuple[bool, bytes | str]] = {}
    for path in sorted(repo.rglob("*")):
        if ".git" in path.relative_to(repo).parts:
            continue
        if path.is_symlink():
            out[str(path.relative_to(repo))] = (True, os.readlink(path))
        elif path.is_file():
            out[str(path.relative_to(repo))] = (False, path.read_bytes())
    return out


def _one_line_naming(proc_err: str, shown: str) -> None:
    lines = proc_err.splitlines()
    assert len(lines) == 1, proc_err
    assert shown in lines[0] and "refusing it" in lines[0], lines[0]


@pytest.mark.parametrize("agent", agents.AGENTS)
def test_a_committed_in_tree_link_is_refused_and_its_target_kept(repo: Path, agent: str) -> None:
    """The attack, for every harness: the settings file is a link to package.json, committed."""
    shown = agents.FILES[agent]
    (repo / "package.json").write_bytes(PACKAGE)
    link = repo / shown
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(repo / "package.json", link.parent), link)
    commit_all(repo, "a link")
    before = _snapshot(repo)
    for args in ((), ("--uninstall",)):
        proc = run_gate(repo, "install-hooks", "--agent", agent, *args)
        assert proc.returncode == 3 and proc.stdout == "", proc.stdout + proc.stderr
        _one_line_naming(proc.stderr, shown)
        assert "is a symlink (to package.json)" in proc.stderr
        assert _snapshot(repo) == before
    assert (repo / "package.json").read_bytes() == PACKAGE
    doctor = run_gate(repo, "doctor").stdout
    assert any(line.startswith(f"FIX   {shown}: refusing it") for line in doctor.splitlines()), doctor


def test_a_linked_folder_on_the_way_is_refused(repo: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`.claude -> config` inside the tree: the file would be config/settings.json, which the gate does not name."""
    (repo / "config").mkdir()
    (repo / "config" / "settings.json").write_text('{"model": "opus"}\n')
    (repo / ".claude").symlink_to("config")
    before = _snapshot(repo)
    code, out, err = call_gate(repo, "install-hooks", "--agent", "claude", capsys=capsys, monkeypatch=monkeypatch)
    assert (code, out) == (3, "")
    _one_line_naming(err, ".claude/settings.json")
    assert ".claude is a symlink" in err
    assert _snapshot(repo) == before
    os.unlink(repo / "config" / "settings.json")  # a missing file behind a linked folder: nothing is created there
    proc = run_gate(repo, "install-hooks", "--agent", "claude")
    assert proc.returncode == 3 and not (repo / "config" / "settings.json").exists()


def test_a_hard_linked_file_is_refused(repo: Path) -> None:
    (repo / "package.json").write_bytes(PACKAGE)
    (repo / ".cursor").mkdir()
    os.link(repo / "package.json", repo / ".cursor" / "hooks.json")
    proc = run_gate(repo, "install-hooks", "--agent", "cursor")
    assert proc.returncode == 3
    _one_line_naming(proc.stderr, ".cursor/hooks.json")
    assert "hard link" in proc.stderr
    assert (repo / "package.json").read_bytes() == PACKAGE and os.stat(repo / "package.json").st_nlink == 2


def test_a_link_swapped_in_after_the_install_is_never_deleted_through(repo: Path) -> None:
    """The gate created the file; a link took its place: uninstall refuses, the link and its target stay
    (the rule that uninstall never deletes through a link)."""
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    created = (repo / ".claude" / "settings.json").read_bytes()
    os.unlink(repo / ".claude" / "settings.json")
    (repo / "other.json").write_bytes(created)
    os.symlink("../other.json", repo / ".claude" / "settings.json")
    before = _snapshot(repo)
    proc = run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall")
    assert proc.returncode == 3
    _one_line_naming(proc.stderr, ".claude/settings.json")
    assert _snapshot(repo) == before


def test_a_regular_file_at_its_own_path_is_still_merged(repo: Path) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    assert run_gate(repo, "install-hooks", "--agent", "claude").returncode == 0
    assert '"model": "opus"' in (repo / ".claude" / "settings.json").read_text()
    assert run_gate(repo, "install-hooks", "--agent", "claude", "--uninstall").returncode == 0
    assert (repo / ".claude" / "settings.json").read_text() == '{"model": "opus"}\n'
