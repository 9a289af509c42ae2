"""The cache's entries are authenticated by a key that lives outside the repository (the user's state dir): a forged
entry, or one carried in a copied `.git`, is passed over and the answer computed again; without a usable key there is
no cache at all. Written as the attack: one forged config entry (all gates off) must not let a broken hand-over pass."""

from __future__ import annotations

import hmac
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import bare_python, run_gate, run_processes

from gates.infra import cache
from gates.infra.digest import Hmac
from gates.infra.git import discover

BROKEN = "# Not a hand-over\n- [x] checked\n<<<<<<< ours\n"


@pytest.fixture(autouse=True)
def _no_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


def _configured(repo: Path) -> Path:
    """A committed .gate.yaml, checked once: its parsed form is kept; the one config entry's path."""
    (repo / ".gate.yaml").write_text("handoff:\n  max_lines: 500\n")
    assert run_gate(repo, "check").returncode == 0
    [entry] = (repo / ".git" / "gate" / "cache").glob("config-*.json")
    return entry


def _all_gates_off(repo: Path) -> dict[str, object]:
    proc = run_gate(repo, "config", "--format", "json")
    return {"gates": {gate: False for gate in json.loads(proc.stdout)["gates"]}}


def _sign(repo: Path, entry: Path, value: object, monkeypatch: pytest.MonkeyPatch, home: Path | None = None) -> None:
    """`value` kept as `entry` the way the gate keeps it, under the key of the user whose HOME is `home`."""
    if home is not None:
        monkeypatch.setenv("HOME", str(home))
    cache.put(discover(repo, {}), entry.name.removesuffix(".json"), value)


def _check(repo: Path, home: Path | None = None) -> int:
    env = None if home is None else {**os.environ, "HOME": str(home)}
    return run_gate(repo, "check", env=env).returncode


def test_a_forged_entry_turns_no_gate_off(repo: Path) -> None:
    """adv22: the file named by the hash of the committed .gate.yaml, overwritten with every gate off."""
    entry = _configured(repo)
    off = json.dumps(_all_gates_off(repo)).encode()
    (repo / "HANDOFF.md").write_text(BROKEN)
    for forged in (off, b"0" * 64 + b"\n" + off, entry.read_bytes()[:65] + off,  # no tag; a made-up tag; a stolen one
                   bytes(64) + b"\n" + off):
        entry.write_bytes(forged)
        proc = run_gate(repo, "check")
        assert proc.returncode == 1 and "0 gates" not in proc.stdout + proc.stderr, (forged[:80], proc.stdout)
        assert entry.read_bytes() != forged  # computed again, and kept under a tag that verifies


def test_the_forgery_is_trusted_only_where_it_was_signed(repo: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The control that shows the test can fail: an entry signed with this user's key for this clone is trusted
    (every gate off: the broken hand-over passes). The same bytes in a `.git` copied to another clone, or read by
    another user, or put back at the same path as a copy, are not."""
    entry = _configured(repo)
    off = _all_gates_off(repo)
    (repo / "HANDOFF.md").write_text(BROKEN)
    _sign(repo, entry, off, monkeypatch)
    assert _check(repo) == 0  # trusted here: what a forger with this user's key and this clone could do

    other_user = tmp_path / "victim-home"
    other_user.mkdir()
    assert _check(repo, other_user) == 1  # another user's key: not trusted
    assert _check(repo) == 1  # the entry the other user's run kept is not this user's either

    _sign(repo, entry, off, monkeypatch)
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)  # the whole clone, its .git/gate/cache included
    assert (copy / ".git" / "gate" / "cache" / entry.name).read_bytes() == entry.read_bytes()
    assert _check(copy) == 1  # another clone (path and inode) of the same user

    moved = tmp_path / "moved-away"
    repo.rename(moved)
    shutil.copytree(moved, repo, symlinks=True)  # a copy put back at the very path: another inode
    assert _check(repo) == 1


def test_deleting_the_cache_or_the_key_changes_no_answer(repo: Path) -> None:
    _configured(repo)
    key = Path(os.environ["HOME"]) / ".local" / "state" / "handoff-gate" / "cache.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 65
    answers = {run_gate(repo, "check", "--format", "json").stdout for _ in range(2)}
    first = key.read_bytes()
    key.unlink()
    answers.add(run_gate(repo, "check", "--format", "json").stdout)
    assert key.read_bytes() != first  # a new key: every entry computed again
    shutil.rmtree(repo / ".git" / "gate" / "cache")
    answers.add(run_gate(repo, "check", "--format", "json").stdout)
    assert len(answers) == 1 and json.loads(answers.pop())["ok"] is True


def _key_refused_then_forged(repo: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    entry = _configured(repo)
    _sign(repo, entry, _all_gates_off(repo), monkeypatch)
    (repo / "HANDOFF.md").write_text(BROKEN)
    assert _check(repo) == 0  # the signed forgery, trusted while the key is usable
    return entry, Path(os.environ["HOME"]) / ".local" / "state" / "handoff-gate" / "cache.key"


def test_a_key_that_is_not_the_users_own_private_file_means_no_cache(repo: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    entry, key = _key_refused_then_forged(repo, monkeypatch)
    kept = key.read_bytes()
    key.chmod(0o644)  # readable by others: anyone could sign with it
    assert _check(repo) == 1
    assert key.read_bytes() == kept and stat.S_IMODE(key.stat().st_mode) == 0o644  # never replaced: evidence
    key.chmod(0o600)
    for planted in ("symlink", "hardlink"):
        elsewhere = tmp_path / f"key-{planted}"
        elsewhere.write_bytes(kept)
        elsewhere.chmod(0o600)
        key.unlink()
        key.symlink_to(elsewhere) if planted == "symlink" else os.link(elsewhere, key)
        assert _check(repo) == 1, planted
        key.unlink()
        key.write_bytes(kept)
        key.chmod(0o600)
    key.write_bytes(b"z" * 64 + b"\n")  # not hex
    assert _check(repo) == 1
    assert entry.is_file()


def test_no_usable_home_means_no_cache(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME a file (nothing can be made under it), HOME relative, XDG_STATE_HOME inside the repository: the check
    still judges (a broken hand-over fails), nothing is kept, and no forged entry is trusted."""
    entry, _ = _key_refused_then_forged(repo, monkeypatch)
    not_a_dir = tmp_path / "home-file"
    not_a_dir.write_text("")
    for env in ({"HOME": str(not_a_dir)}, {"HOME": "relative/home"},
                {"XDG_STATE_HOME": str(repo / "state")}, {"XDG_STATE_HOME": str(repo / ".git" / "state")}):
        before = entry.read_bytes()
        proc = run_gate(repo, "check", env={**os.environ, **env})
        assert proc.returncode == 1, (env, proc.stdout + proc.stderr)
        assert entry.read_bytes() == before  # nothing kept without a key
    assert not (repo / "state").exists() and not (repo / ".git" / "state").exists()


def test_racing_first_uses_make_one_key(repo: Path, tmp_path: Path) -> None:
    """Eight processes at once, each the first to need the key: one key file, the same key for all (each reads
    what another kept), no temp file left."""
    script = ("import sys\nfrom gates.infra import cache\nfrom gates.infra.git import discover\n"
              "repo, n = discover(sys.argv[1], {}), sys.argv[2]\ncache.put(repo, 'probe-' + n, int(n))\n"
              "sys.exit(0 if cache.get(repo, 'probe-' + n) == int(n) else 1)\n")
    codes = run_processes(tmp_path, script, [[str(repo), str(n)] for n in range(8)], timeout=120)
    assert codes == [0] * 8
    folder = Path(os.environ["HOME"]) / ".local" / "state" / "handoff-gate"
    assert [p.name for p in folder.iterdir()] == ["cache.key"]
    found = discover(repo, {})
    assert [cache.get(found, f"probe-{n}") for n in range(8)] == list(range(8))


def test_the_tag_is_hmac_sha256() -> None:
    for size in (0, 1, 32, 64, 65, 300):
        key, message = os.urandom(size), os.urandom(3 * size + 7)
        mac = Hmac(key)
        mac.update(message[:5])
        mac.update(message[5:])
        assert mac.hexdigest() == hmac.new(key, message, "sha256").hexdigest()


def test_the_tag_is_checked_without_hashlib(repo: Path) -> None:
    """The tag is checked on every commit: no OpenSSL for it (hashlib costs ~8 ms on a hook)."""
    entry = _configured(repo)
    code = ("import sys\nfrom gates.infra import cache\nfrom gates.infra.git import discover\n"
            "kept = cache.get(discover(sys.argv[1], {}), sys.argv[2])\n"
            "print(isinstance(kept, dict), 'hashlib' in sys.modules, 'hmac' in sys.modules)\n")
    proc = bare_python(code, repo, str(repo), entry.name.removesuffix(".json"))
    assert proc.stdout.split() == ["True", "False", "False"], proc.stdout + proc.stderr
