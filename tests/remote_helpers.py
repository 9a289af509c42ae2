"""Real remotes on this machine for the issue-18 tests: a bare repository over file://, and git daemon (git://)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest
from conftest import commit_all, git, handoff_text, init_repo

from gates.remote import key_for


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed_bare(tmp_path: Path, config: str = "claims:\n  remote: origin\n") -> Path:
    """A bare repository holding one branch with a valid hand-over and a .gate.yaml naming `origin`."""
    seed = init_repo(tmp_path / "seed")
    (seed / "README").write_text("hello\n")
    head = commit_all(seed, "first")
    (seed / "HANDOFF.md").write_text(handoff_text(head))
    (seed / ".gate.yaml").write_text(config)
    commit_all(seed, "handoff")
    bare = tmp_path / "srv" / "remote.git"
    bare.parent.mkdir(exist_ok=True)
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(bare, "config", "receive.denyDeleteCurrent", "warn")
    return bare


class Daemon:
    def __init__(self, base: Path) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--enable=receive-pack", "--listen=127.0.0.1", f"--port={self.port}",
             f"--base-path={base}", "--export-all", "--informative-errors", str(base)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        pytest.skip("git daemon did not start")

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    (tmp_path / "srv").mkdir(exist_ok=True)
    running = Daemon(tmp_path / "srv")
    try:
        yield running
    finally:
        running.stop()


def clone(url: str, where: Path) -> Path:
    git(where.parent, "clone", "-q", url, str(where))
    return where


def refs(bare: Path) -> dict[str, str]:
    out = git(bare, "for-each-ref", "--format=%(objectname) %(refname)")
    return {line.split(" ", 1)[1]: line.split(" ", 1)[0] for line in out.splitlines()}


def claim_ref(tree: Path, prefix: str = "refs/gate/claims") -> str:
    from gates.git import discover

    return f"{prefix}/{key_for(discover(tree, {}), 'HANDOFF.md')}"


def remote_record(bare: Path, ref: str) -> dict[str, object]:
    return dict(json.loads(git(bare, "cat-file", "blob", f"{ref}:claim.json")))


def clone_id(tree: Path) -> str:
    return (tree / ".git" / "gate" / "clone-id").read_text().strip()
