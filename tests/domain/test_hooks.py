"""Native git hooks (gates/domain/hooks.py) against a hostile hooks folder: what is planted there is refused with
one line, never waited on and never moved; the user's own hook is moved aside durably and comes back as it was.
`gate install-hooks` as a whole: tests/commands/test_install_hooks.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import git, run_gate
from helpers import entries

from gates.domain import hooks
from gates.infra.errors import GateError

TIMEOUT = 30  # a FIFO waited on never returns: the run is killed and the test fails instead of hanging


def _hooks_folder(repo: Path) -> Path:
    folder = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _everything(repo: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry of the repository but the gate's own state (flags of the failed run land there)."""
    return {name: entry for name, entry in entries(repo).items() if not name.startswith(".git/gate")}


@pytest.fixture
def fifo_hook(repo: Path) -> Path:
    """The attack: a FIFO where git keeps the pre-commit hook. Opened for reading, it waits for a writer forever."""
    path = _hooks_folder(repo) / "pre-commit"
    os.mkfifo(path)
    (path.parent / "post-commit").write_text("#!/bin/sh\necho the user's\n")
    return path


@pytest.mark.parametrize("args", [(), ("--pre-push",), ("--uninstall",)])
def test_install_hooks_refuses_a_fifo_at_the_hook_and_touches_nothing(repo: Path, fifo_hook: Path,
                                                                       args: tuple[str, ...]) -> None:
    before = _everything(repo)
    proc = run_gate(repo, "install-hooks", *args, timeout=TIMEOUT)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr == (f"gate: refusing {fifo_hook}: a FIFO, not a regular file — git cannot run it as a hook; "
                           "move it aside yourself\n")
    assert proc.stdout == ""
    assert _everything(repo) == before  # the FIFO is still a FIFO, nothing installed, nothing moved aside
    assert fifo_hook.is_fifo() and not (fifo_hook.parent / "pre-commit.pre-gate").exists()


def test_a_fifo_met_second_stops_the_install_before_the_first_hook_is_written(repo: Path) -> None:
    planted = _hooks_folder(repo) / "pre-push"
    os.mkfifo(planted)
    before = _everything(repo)
    proc = run_gate(repo, "install-hooks", "--pre-push", timeout=TIMEOUT)
    assert proc.returncode == 3 and f"refusing {planted}: a FIFO" in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert _everything(repo) == before and not (planted.parent / "pre-commit").exists()


def test_doctor_names_a_fifo_at_the_hook_in_one_line_and_touches_nothing(repo: Path, fifo_hook: Path) -> None:
    before = _everything(repo)
    proc = run_gate(repo, "doctor", timeout=TIMEOUT)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # documented: exit 1 when something needs fixing
    said = [line for line in proc.stdout.splitlines() if "commit hooks" in line]
    assert said == [f"FIX   commit hooks: refusing {fifo_hook}: a FIFO, not a regular file — git cannot run it as a "
                    "hook; move it aside yourself"]
    assert "Traceback" not in proc.stderr
    assert _everything(repo) == before


def test_a_symlink_to_a_fifo_is_refused_as_the_fifo_is(repo: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "elsewhere"
    os.mkfifo(fifo)
    link = _hooks_folder(repo) / "pre-commit"
    link.symlink_to(fifo)
    with pytest.raises(GateError, match="a FIFO, not a regular file"):
        hooks.read_hook(str(link))
    before = _everything(repo)
    assert run_gate(repo, "install-hooks", timeout=TIMEOUT).returncode == 3
    assert _everything(repo) == before and link.is_symlink() and fifo.is_fifo()


def test_a_folder_at_the_hook_is_refused_and_a_missing_or_dangling_one_reads_as_empty(repo: Path) -> None:
    folder = _hooks_folder(repo)
    (folder / "pre-commit").mkdir()
    with pytest.raises(GateError, match="Is a directory"):
        hooks.read_hook(str(folder / "pre-commit"))
    assert hooks.read_hook(str(folder / "pre-push")) == ""
    (folder / "dangling").symlink_to(folder / "nowhere")
    assert hooks.read_hook(str(folder / "dangling")) == ""


def test_a_hook_is_read_through_its_symlink_and_capped(repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "shared-hook"
    script.write_bytes(b"#!/bin/sh\n" + b"#" * (2 * hooks.HOOK_CAP))
    (_hooks_folder(repo) / "pre-commit").symlink_to(script)
    text = hooks.read_hook(str(_hooks_folder(repo) / "pre-commit"))
    assert text.startswith("#!/bin/sh\n") and len(text) == hooks.HOOK_CAP


def test_the_users_symlinked_hook_is_moved_aside_as_a_link_and_put_back_as_it_was(repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "shared-hook"
    script.write_text("#!/bin/sh\nexit 0\n")
    folder = _hooks_folder(repo)
    (folder / "pre-commit").symlink_to(script)
    before = entries(folder)
    proc = run_gate(repo, "install-hooks", timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert f"kept your pre-commit hook: it now runs first, from {folder / 'pre-commit.pre-gate'}" in proc.stdout
    assert os.readlink(folder / "pre-commit.pre-gate") == str(script)  # the link itself moved, not what it names
    assert hooks.is_ours(str(folder / "pre-commit"))
    assert run_gate(repo, "install-hooks", "--uninstall", timeout=TIMEOUT).returncode == 0
    assert entries(folder) == before and script.read_text() == "#!/bin/sh\nexit 0\n"
