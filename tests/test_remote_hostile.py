"""The repository's .git/config is hostile: no remote command of the gate ever runs a program it names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import flag_records, git, run_gate
from remote_helpers import clone, daemon, seed_bare

assert daemon  # a fixture, used by name


def _canary(tmp_path: Path) -> tuple[Path, Path]:
    ran = tmp_path / "canary-ran"
    program = tmp_path / "bin" / "canary"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {ran}\nexit 1\n')
    program.chmod(0o755)
    return program, ran


def _poison(tree: Path, program: Path, tmp_path: Path) -> None:
    hooks = tmp_path / "hostile-hooks"
    hooks.mkdir()
    for name in ("pre-push", "reference-transaction", "post-checkout", "push-to-checkout"):
        (hooks / name).write_text(f"#!/bin/sh\nexec {program} hook-{name}\n")
        (hooks / name).chmod(0o755)
        (tree / ".git" / "hooks").mkdir(exist_ok=True)
        (tree / ".git" / "hooks" / name).write_text(f"#!/bin/sh\nexec {program} githook-{name}\n")
        (tree / ".git" / "hooks" / name).chmod(0o755)
    for key, value in (
        ("core.hooksPath", str(hooks)),
        ("remote.origin.receivepack", f"{program} receivepack"),
        ("remote.origin.uploadpack", f"{program} uploadpack"),
        ("core.sshCommand", f"{program} ssh"),
        ("core.gitProxy", f"{program} gitproxy"),
        ("credential.helper", f"!{program} credential"),
        ("core.askPass", f"{program} askpass"),
        ("url.ext::sh -c {0}% .insteadOf".format(program), "file://"),
        ("url.ext::sh -c {0}% .pushInsteadOf".format(program), "git://"),
        ("http.proxy", "http://127.0.0.1:1"),
        ("core.fsmonitor", f"{program} fsmonitor"),
        ("gpg.program", str(program)),
        ("log.showSignature", "true"),
        ("commit.gpgSign", "true"),
        ("push.gpgSign", "true"),
        ("remote.evil.url", f"ext::sh -c {program}% evil"),
        ("remote.helper.url", f"fd::{program}"),
    ):
        git(tree, "config", key, value)


@pytest.mark.parametrize("transport", ["file", "git"])
def test_no_remote_command_runs_a_program_the_repository_names(transport: str, tmp_path: Path,
                                                               request: pytest.FixtureRequest) -> None:
    bare = seed_bare(tmp_path)
    url = f"file://{bare}" if transport == "file" else request.getfixturevalue("daemon").url("remote.git")
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    program, ran = _canary(tmp_path)
    _poison(a, program, tmp_path)
    env = {**os.environ, "PATH": f"{program.parent}:{os.environ['PATH']}"}
    for argv in (["claim", "--ttl", "1h"], ["claims", "--remote"], ["flags", "--push"], ["brief"],
                 ["doctor", "--remote"], ["check", "--remote", "--only", "handoff-claim-remote"], ["claim"],
                 ["release"], ["claim"]):
        proc = run_gate(a, *argv, env=env)
        assert proc.returncode in (0, 1), (argv, proc.stdout, proc.stderr)
        assert not ran.exists(), (argv, ran.read_text())
    assert run_gate(b, "release", "--force", "--reason", "hostile test", env=env).returncode == 0
    for name in ("evil", "helper"):
        refused = run_gate(a, "claim", "--remote", name, env=env)
        assert refused.returncode == 3 and "refused" in refused.stderr, refused.stderr
    assert not ran.exists(), ran.read_text()
    assert "remote-unreachable" in [f["reason"] for f in flag_records(a / ".git")]


def test_the_far_repository_hooks_do_not_run_on_a_local_push(tmp_path: Path) -> None:
    bare = seed_bare(tmp_path)
    program, ran = _canary(tmp_path)
    for name in ("pre-receive", "update", "post-receive", "reference-transaction", "post-update"):
        (bare / "hooks" / name).write_text(f"#!/bin/sh\nexec {program} far-{name}\n")
        (bare / "hooks" / name).chmod(0o755)
    a = clone(f"file://{bare}", tmp_path / "a")
    assert run_gate(a, "claim").returncode == 0
    assert run_gate(a, "release").returncode == 0
    assert not ran.exists(), ran.read_text()
