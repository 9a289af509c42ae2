"""The repository's .git/config is hostile: no remote command of the gate ever runs a program it names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import flag_records, git, run_gate
from remote_helpers import GIT, clone, daemon, seed_bare

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


@pytest.mark.parametrize("transport", ["file", GIT])
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


def _far_hooks(folder: Path, program: Path, names: tuple[str, ...]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(f"#!/bin/sh\nexec {program} far-{name}\n")
        (folder / name).chmod(0o755)


ALL_HOOKS = ("pre-receive", "update", "post-receive", "post-update", "reference-transaction", "push-to-checkout",
             "proc-receive", "pre-auto-gc", "post-checkout")


def _far_mechanism(far: Path, mechanism: str, program: Path, tmp_path: Path, key_ref: str) -> None:
    """Shape the far repository (non-bare, its HEAD on the claim ref) so that `mechanism` would run `program`."""
    git(far, "config", "receive.denyCurrentBranch", "updateInstead")  # push-to-deploy: a checkout on every push
    git(far, "symbolic-ref", "HEAD", key_ref)
    if mechanism == "filter":
        git(far, "config", "filter.x.smudge", f"{program} smudge")
        git(far, "config", "filter.x.clean", f"{program} clean")
        (far / ".git" / "info").mkdir(exist_ok=True)
        (far / ".git" / "info" / "attributes").write_text("* filter=x\n")
    elif mechanism == "hooks-dir":
        _far_hooks(far / ".git" / "hooks", program, ALL_HOOKS)
        git(far, "config", "receive.procReceiveRefs", "refs/gate")
    elif mechanism == "hooks-path":
        _far_hooks(tmp_path / "far-hooks", program, ALL_HOOKS)
        git(far, "config", "core.hooksPath", str(tmp_path / "far-hooks"))
    elif mechanism == "fsmonitor":
        git(far, "config", "core.fsmonitor", f"{program} fsmonitor")
        git(far, "config", "core.fsmonitorHookVersion", "2")
    elif mechanism == "alternates":
        other = tmp_path / "alt.git"
        git(tmp_path, "init", "-q", "--bare", str(other))
        (far / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (far / ".git" / "objects" / "info" / "alternates").write_text(f"{other}/objects\n")
        git(far, "config", "core.alternateRefsCommand", f"{program} alternate-refs")
    elif mechanism == "autogc":
        git(far, "config", "receive.autogc", "true")
        git(far, "config", "gc.auto", "1")
        git(far, "config", "gc.autoDetach", "false")
        _far_hooks(far / ".git" / "hooks", program, ("pre-auto-gc",))
    elif mechanism == "pack-objects-hook":
        git(far, "config", "uploadpack.packObjectsHook", f"{program} pack-objects")


@pytest.mark.parametrize("mechanism", ["filter", "hooks-dir", "hooks-path", "fsmonitor", "alternates", "autogc",
                                       "pack-objects-hook"])
def test_a_local_far_repository_runs_no_program_of_its_own(mechanism: str, tmp_path: Path) -> None:
    """A far repository on this machine may have been prepared by the adversary: its receive-pack and upload-pack
    run with every program-running setting of its config switched off (issue 25). A push the far side refuses
    (the checked-out branch) is a denial, never a program run."""
    from remote_helpers import claim_ref

    bare = seed_bare(tmp_path, "claims:\n  remote: origin\n  remote_timeout: 10s\n")
    tree = clone(f"file://{bare}", tmp_path / "repo")
    far = tmp_path / "far"
    git(tmp_path, "clone", "-q", str(bare), str(far))
    program, ran = _canary(tmp_path)
    _far_mechanism(far, mechanism, program, tmp_path, claim_ref(tree))
    git(tree, "remote", "set-url", "origin", str(far))
    for argv in (["claim", "--session", "A"], ["brief"], ["flags", "--push"], ["claims", "--remote"],
                 ["release", "--session", "A"]):
        proc = run_gate(tree, *argv)
        assert "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert not ran.exists(), (argv, ran.read_text())
