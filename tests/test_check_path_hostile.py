"""Attacks on the faster check path (git by posix_spawn, records trusted by stat, plain NamedTuple).

Each test is the attack, run against a real repository with real processes. The observer `git` on PATH
is a shell script that records what it was given and then execs the real git: git itself is never
replaced or mocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from conftest import GATE_BIN, REAL_GIT, commit_all, git
from records_helpers import record

LINUX_PROC = Path("/proc/self/fd").is_dir()


def _observer(tmp_path: Path, plant: Callable[..., Path], body: str) -> tuple[Path, Path]:
    """A folder holding a `git` that appends what `body` prints to a log, then execs the real git."""
    log = tmp_path / "observer.log"
    return plant(f"{{\n{body}\n}} >> '{log}' 2>&1\nexec '{REAL_GIT}' \"$@\"\n", "observer"), log


@pytest.mark.skipif(not LINUX_PROC, reason="reads /proc/<pid>/fd")
def test_git_inherits_no_descriptor_of_whoever_started_the_gate(repo: Path, tmp_path: Path,
                                                               git_wrapper: Callable[..., Path]) -> None:
    """A hook or harness starts the gate with a descriptor of its own open (a pipe, a lock, a secret file).

    subprocess (the previous `_run`) closed every descriptor above 2 in git (close_fds=True);
    os.posix_spawn closes only close-on-exec ones, and a descriptor inherited from the caller is not
    close-on-exec. Every git the gate starts then holds the caller's descriptor.
    """
    folder, log = _observer(tmp_path, git_wrapper, 'echo "call $*"\nreadlink /proc/$$/fd/47 && echo "LEAKED fd 47"')
    secret = tmp_path / "caller-secret.txt"
    secret.write_text("the caller's, not git's\n")
    fd = os.open(secret, os.O_RDONLY)
    try:
        os.dup2(fd, 47, inheritable=True)
        env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
        assert GATE_BIN
        proc = subprocess.run([GATE_BIN, "check"], cwd=repo, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, pass_fds=(47,), timeout=60)
    finally:
        os.close(fd)
        os.close(47)
    seen = log.read_text()
    assert "call " in seen and "rev-parse" in seen, (proc.stderr, seen)  # the observer did run: the test can fail
    assert "LEAKED" not in seen and str(secret) not in seen, seen


def test_the_signals_reset_for_git_are_sigpipe_and_sigxfsz_on_macos_too(tmp_path: Path) -> None:
    """`_DEFAULT_SIGNALS` is (13, 31) where os.uname() is not Linux. On macOS and the BSDs SIGXFSZ is 25
    (<sys/signal.h>: SIGXCPU 24, SIGXFSZ 25, ..., SIGUSR1 30, SIGUSR2 31), as on Linux: 31 is SIGUSR2. So on a
    Mac git keeps the SIGXFSZ that Python ignores (subprocess's restore_signals reset it) and SIGUSR2 is reset
    instead. Judged on this machine by giving the module the uname a Mac reports."""
    probe = (
        "import os\n"
        "real = os.uname\n"
        "class U(tuple):\n"
        "    sysname = 'Darwin'\n"
        "os.uname = lambda: U(('Darwin', 'mac', '23.0', 'x', 'arm64'))\n"
        "from gates.infra import git\n"
        "print(sorted(git._DEFAULT_SIGNALS))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[13, 25]", f"on macOS git would get SIGPIPE and signal 31 (SIGUSR2) reset, not SIGXFSZ (25): {out}"


@pytest.mark.skipif(not LINUX_PROC, reason="reads /proc/<pid>/status")
def test_git_gets_the_default_sigpipe_and_sigxfsz_here(repo: Path, tmp_path: Path, git_wrapper: Callable[..., Path]) -> None:
    """Held on Linux: Python ignores SIGPIPE and SIGXFSZ, and git is started with both at their defaults."""
    folder, log = _observer(tmp_path, git_wrapper, "grep '^SigIgn' /proc/$$/status")
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    assert GATE_BIN
    subprocess.run([GATE_BIN, "check"], cwd=repo, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    masks = [int(line.split()[1], 16) for line in log.read_text().splitlines() if line.startswith("SigIgn")]
    assert masks
    for mask in masks:
        assert not mask & (1 << (13 - 1)) and not mask & (1 << (25 - 1)), hex(mask)


def test_a_plain_namedtuple_refuses_a_field_without_default_after_one_with() -> None:
    """typing.NamedTuple refuses `a: int = 1; b: int`; gates.infra.plain.NamedTuple silently gives the default
    to the last field instead, so `X(5)` is X(a=5, b=1), and a forgotten default shifts every value."""
    from gates.infra.plain import NamedTuple

    with pytest.raises(TypeError):
        class Shifted(NamedTuple):
            a: int = 1
            b: int  # type: ignore[misc]

        made = Shifted(5)  # type: ignore[call-arg]
        pytest.fail(f"accepted, and made {made!r}")


def test_a_closed_stdout_descriptor_is_exit_3_with_one_line(repo: Path) -> None:
    """(Not new in this change.) A hook started with fd 1 closed: Python sets sys.stdout to None, and the
    gate ends in a traceback with exit 1, the code of "violations found", instead of io-error exit 3."""
    assert GATE_BIN
    proc = subprocess.run(["/bin/sh", "-c", f"exec >&- ; exec '{GATE_BIN}' check"], cwd=repo, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 3, (proc.returncode, proc.stderr)


def test_a_same_size_edit_with_its_mtime_put_back_is_still_seen(repo: Path) -> None:
    """Held: the stat trust of records. An agent edits a closed record in place (same inode, same size) and
    puts its mtime back with utime; only the ctime moves, and that is enough for the gate to read it again."""
    path, record_id = record(repo, "Keep it")
    text = path.read_text().replace("status: open", "status: closed", 1)
    path.write_text(text)
    commit_all(repo, "closed record")
    time.sleep(2.2)  # older than RACY_NS before the next read: the read after it trusts the stat data
    for _ in range(2):
        first = subprocess.run([GATE_BIN or "gate", "check", "--only", "records-immutable"], cwd=repo,
                               capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert first.returncode == 0, first.stdout + first.stderr
    before = os.stat(path)
    broken = text.replace("status: closed", "status: clxsed", 1)
    assert len(broken) == len(text)
    with open(path, "r+") as handle:  # in place: the inode stays
        handle.write(broken)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    proc = subprocess.run([GATE_BIN or "gate", "check", "--only", "records-immutable"], cwd=repo,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 1 and "clxsed" in proc.stdout, proc.stdout + proc.stderr
    assert git(repo, "status", "--porcelain")  # the edit is there, and the gate said so
    assert record_id
