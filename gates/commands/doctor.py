"""`gate doctor`: is the gate wired in, and is its environment sound? Each check says what to fix.

`gate doctor --remote`: can the remote carry claims? Reachable, accepts a push under refs/gate/, how full,
how fast (`probe`).
"""

from __future__ import annotations

import errno
import os
import stat
import time

from gates.commands.invocation import Invocation
from gates.domain import flags, hooks, journal, leftovers, locks, lockscan, remote
from gates.infra import clock, errors, fsio, gitnet, jsonio, paths, state
from gates.infra import config as config_module
from gates.infra.catalog import CATALOG
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.digest import sha256
from gates.infra.errors import GateError
from gates.infra.git import GitFailed, Repo
from gates.infra.plain import NamedTuple
from gates.infra.text import clean, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Callable


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--fix", action="store_true", help="first move temp files of killed writers into lost+found "
                        "(with a manifest; nothing is deleted)")
    parser.add_argument("--remote", nargs="?", const="", metavar="NAME", help="also probe this git remote for claims "
                        "(default: claims.remote): reachable, accepts refs/gate/ pushes, round-trip time")


def run(args: argparse.Namespace, run: Invocation) -> int:
    if args.fix:
        for line in fix(run.repo()):
            print(line)
    found = checks(run.repo())
    name = None
    if args.remote is not None:  # issue 18: probe the claims remote
        from gates.commands import _remote

        name = _remote.required_name(args, run)
        found += probe(run.repo(), run.config(), name)
    needed = [c.message for c in found if c.status == FIX]
    if not needed:
        found = _settle(run, name, found)
    else:  # the flags were counted before this run raises its own
        found = [Check(check.status, f"{check.message}; this run raises a `doctor` flag for what it found to fix")
                 if check.message == NO_FLAGS else check for check in found]
    for check in found:
        print(f"{check.status:4}  {check.message}")
    if needed:  # about what it probed: a later clean doctor that probes as much settles the flag (_settle)
        run.fail("doctor", "gate doctor: needs fixing:\n" + "\n".join(needed), about={"remote": name})
        return errors.VIOLATION
    return errors.OK


def _settle(run: Invocation, name: str | None, found: list[Check]) -> list[Check]:
    """A clean doctor ends the `doctor` flags of earlier doctors in this worktree that probed no more than it did:
    those of a doctor without --remote, and, with `--remote NAME`, those of a doctor that probed NAME (a probe not
    repeated settles nothing). The flags folder is listed first: with no such flag nothing is read. `found`, with
    its count of open flags taken again when some ended, and a line saying which."""
    reach: list[dict[str, str | None]] = [{"remote": None}]
    if name:
        reach.append({"remote": name})
    ended = run.settle("doctor", about=reach)
    if ended is None:  # said on stderr (Invocation.settle)
        return [*found, Check(WARN, "the flags of earlier doctors could not be resolved (why: above)")]
    if not ended:
        return found
    try:
        recount = _flags(run.repo())[0]
    except GateError:
        recount = None  # the line as it was: the flags were read a moment ago

    def counted_before(check: Check) -> bool:  # _flags' line, which counted the flags that ended here
        count, _, rest = check.message.partition(" ")
        return count.isdigit() and rest == FLAGS_OPEN

    return [recount if recount and counted_before(check) else check for check in found] + [
        Check(OK, f"resolved {len(ended)} `doctor` flag(s) of an earlier `gate doctor`: what it found to fix is fixed "
                  f"({', '.join(ended)}; `gate flags --all` shows them)")]


# -- the checks --

OK, WARN, FIX = "ok", "warn", "FIX"
MIN_GIT = (2, 24)
SETTINGS_CAP = 1 << 20  # what of a Claude Code settings file is read
OUR_HOOK_IDS = {"gate", *CATALOG}


class Check(NamedTuple):
    status: str
    message: str


def checks(repo: Repo) -> list[Check]:
    """Every check of the wiring and the environment, in the order they are printed."""
    each: list[Callable[[Repo], list[Check]]] = [
        _git_version, _state_dir, _config, _commit_hooks, _pre_push, _hooks_twice, _claude, _agents, _trust, _locks, _journal,
        _flags, _leftovers,
    ]
    out: list[Check] = []
    refused = bool(state.unsafe(state.layout(repo)))
    for check in each:
        label = check.__name__.strip("_").replace("_", " ")
        if refused and check in (_journal, _flags):  # they read inside the state dir
            out.append(Check(WARN, f"{label}: not read, the state dir is refused (see above)"))
            continue
        try:
            out.extend(check(repo))
        except GateError as exc:
            if exc.reason == "config-invalid" and check is not _config:
                out.append(Check(WARN, f"{label}: not checked, the config is refused (see above)"))
            else:
                out.append(Check(FIX, f"{label}: {exc.render()}"))
    return [Check(check.status, clean(check.message)) for check in out]  # it quotes committed harness files


def _git_version(repo: Repo) -> list[Check]:
    try:
        text = repo.ask("version").stdout.strip()
    except GitFailed as exc:
        return [Check(FIX, exc.message)]
    numbers = [int(part) for part in text.removeprefix("git version ").split(".")[:2] if part.isdigit()]
    if tuple(numbers) < MIN_GIT:
        return [Check(FIX, f"{text}: handoff-gate needs git {'.'.join(map(str, MIN_GIT))} or newer")]
    return [Check(OK, text)]


def _state_dir(repo: Repo) -> list[Check]:
    """The same rule writing commands apply (state.refusal), plus ownership; nothing is created."""
    lay = state.layout(repo)
    if not os.path.lexists(lay.root):
        return [Check(OK, f"state dir {lay.root} not made yet (made on first use)")]
    refused = state.unsafe(lay)
    if refused:
        return [Check(FIX, f"state dir {folder}: {why}: commands that write refuse it — "
                           + ("move it aside" if "writable" not in why else "chmod o-w (or set core.sharedRepository)"))
                for folder, why in refused]
    info = os.lstat(lay.root)
    if info.st_uid != os.geteuid():
        return [Check(FIX, f"state dir {lay.root} belongs to uid {info.st_uid}, not to you")]
    return [Check(OK, f"state dir {lay.root} ({stat.filemode(info.st_mode)}, yours)")]


def _config(repo: Repo) -> list[Check]:
    loaded = config_module.load(repo)
    return [Check(OK, f"config valid ({loaded.source or 'defaults: no .gate.yaml'})")]


def _commit_hooks(repo: Repo) -> list[Check]:
    framework = _framework_hooks(repo)
    native = os.path.join(hooks.hooks_dir(repo), "pre-commit")
    out = [Check(*each) for each in hooks.doctor(repo)]  # a hooks folder shared by others
    ours = hooks.is_ours(native)
    if framework:
        out.append(Check(OK, f".pre-commit-config.yaml runs {', '.join(sorted(framework))}"))
        if not ours and "pre-commit" not in hooks.read_hook(native):  # '' when there is none
            out.append(Check(FIX, "the pre-commit framework is not installed in this clone: run `pre-commit install`"))
    if ours:
        out.append(_native_hook(native))
    elif not framework:
        out.append(Check(FIX, "no commit hook runs the gate: add it to .pre-commit-config.yaml and run "
                              "`pre-commit install`, or run `gate install-hooks`"))
    return out


def _pre_push(repo: Repo) -> list[Check]:
    """With `claims.remote` set, a push is judged against the remote claim only by a pre-push hook (issue 26): ours
    (`gate install-hooks --pre-push`), or the framework's running handoff-claim-remote."""
    remote = config_module.load(repo).section("claims")["remote"]
    if not remote:
        return []
    hook = os.path.join(hooks.hooks_dir(repo), "pre-push")
    if hooks.is_ours(hook):
        return [_native_hook(hook)]
    framework = "handoff-claim-remote" in _framework_hooks(repo)
    if framework and "# File generated by pre-commit" in hooks.read_hook(hook):
        return [Check(OK, f"claims.remote is {excerpt(str(remote))}: the pre-commit framework's pre-push hook runs "
                          "handoff-claim-remote")]
    how = ("`pre-commit install --hook-type pre-push` (.pre-commit-config.yaml runs handoff-claim-remote)" if framework
           else "`gate install-hooks --pre-push` (or handoff-claim-remote in .pre-commit-config.yaml and "
                "`pre-commit install --hook-type pre-push`)")
    return [Check(WARN, f"claims.remote is {excerpt(str(remote))}, but no pre-push hook runs the gate: a push is not "
                        f"judged against the remote claim (handoff-claim-remote) — {how}")]


def _hooks_twice(repo: Repo) -> list[Check]:
    """Both hook styles installed run the gate twice on every commit (issue 27): ours chaining the framework's hook
    (`pre-commit.pre-gate`), or the framework's running ours as its `pre-commit.legacy` (its migration mode)."""
    if not _framework_hooks(repo):
        return []
    hook = os.path.join(hooks.hooks_dir(repo), "pre-commit")
    keep = {hook: "`gate install-hooks --uninstall` leaves the framework's, or take the gate out of .pre-commit-config.yaml",
            f"{hook}.legacy": "`pre-commit install --overwrite` leaves the framework's, `pre-commit uninstall` the native one"}
    for native, framework in ((hook, hook + hooks.CHAINED), (f"{hook}.legacy", hook)):
        if hooks.is_ours(native) and "# File generated by pre-commit" in hooks.read_hook(framework):
            return [Check(WARN, f"the gate runs twice on every commit: {native} runs it, and so does the pre-commit "
                                f"framework's hook {framework} (for .pre-commit-config.yaml): keep one — {keep[native]}")]
    return []


def _native_hook(native: str) -> Check:
    """Our hook runs an interpreter by absolute path: it breaks when that environment is removed, and a hook
    written by another version of the gate may lack what this one writes (the `-c` entry of the no-change path)."""
    import shlex

    text = hooks.read_hook(native)
    words = shlex.split(text.splitlines()[-1]) if text.strip() else []
    interpreter = words[1] if len(words) > 1 and words[0] == "exec" else ""
    if not os.access(interpreter, os.X_OK):
        return Check(FIX, f"native hook {native} runs {interpreter or 'no interpreter'}, which is gone: every commit "
                          "fails — run `gate install-hooks` again from the environment the gate is installed in")
    if not hooks.is_current(text, os.path.basename(native)):
        return Check(WARN, f"native hook {native} was written by another installation or version of the gate: "
                           "`gate install-hooks` rewrites it for this one")
    return Check(OK, f"native hook {native} runs the gate")


def _framework_hooks(repo: Repo) -> set[str]:
    path = repo.path(".pre-commit-config.yaml")
    if not os.path.isfile(path):
        return set()
    from pre_commit.clientlib import InvalidConfigError, load_config

    try:
        loaded = load_config(path)
    except InvalidConfigError as exc:
        raise GateError(f".pre-commit-config.yaml is not valid: {str(exc).splitlines()[0]}",
                        reason="config-invalid") from None
    return {hook["id"] for repo_entry in loaded["repos"] for hook in repo_entry["hooks"] if hook["id"] in OUR_HOOK_IDS}


def _claude(repo: Repo) -> list[Check]:
    folder = repo.path(".claude")
    if not os.path.isdir(folder):
        return [Check(OK, "Claude Code settings not checked: no .claude/ here")]
    commands, broken = [], []
    for name in ("settings.json", "settings.local.json"):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        shown = f".claude/{name}"
        try:  # a file of the work tree: resolved and confined, never waited on (fsio), capped
            data = fsio.read_bytes_capped(paths.confined(repo, path, shown), SETTINGS_CAP, shown)
            if isinstance(data, int):
                raise GateError(f"{data:,} bytes, over the {SETTINGS_CAP:,}-byte cap", reason="input-unreadable")
            settings = jsonio.loads(fsio.decode_text(data, shown))
        except (GateError, ValueError) as exc:
            detail = exc.message if isinstance(exc, GateError) else exc
            broken.append(Check(FIX, f"{shown} cannot be read as JSON ({detail}): Claude Code ignores it too"))
            continue
        if not isinstance(settings, dict):
            broken.append(Check(FIX, f"{shown} is not a JSON object"))
        else:
            commands += _session_start_commands(settings)
    from gates.domain.agents import is_ours

    if any("gate brief" in command or is_ours(command, "brief") for command in commands):
        return [*broken, Check(OK, "Claude Code runs `gate brief` at session start")]
    return [*broken, Check(FIX, "Claude Code is set up here (.claude/) but no SessionStart hook runs "
                                "`gate brief --format claude` (see the README, Wiring it into an agent)")]


def _trust(repo: Repo) -> list[Check]:
    """Each wired harness: will it run the project's hooks here at all (its trust, its launch folder)? Issue 26."""
    from gates.domain import trust

    return [Check(*each) for each in trust.checks(repo, os.environ, os.getcwd())]


def _agents(repo: Repo) -> list[Check]:
    """Each agent harness wired here (`gate install-hooks --agent`): its file parses, its hooks run a working interpreter."""
    from gates.domain import agents

    return [Check(*each) for each in agents.doctor(repo)]


def _session_start_commands(settings: dict[str, object]) -> list[str]:
    """The commands of SessionStart hooks; any other shape (hand-edited settings) contributes none."""
    hooks = settings.get("hooks")
    entries = hooks.get("SessionStart") if isinstance(hooks, dict) else None
    found = []
    for entry in entries if isinstance(entries, list) else []:
        inner = entry.get("hooks") if isinstance(entry, dict) else None
        for hook in inner if isinstance(inner, list) else []:
            if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                found.append(hook["command"])
    return found


def _locks(repo: Repo) -> list[Check]:
    found = lockscan.find(repo, deep=True)
    if not found:
        return [Check(OK, "no git lock files (deep scan, refs/ included)")]
    cfg = config_module.load(repo).section("locks")
    threshold = config_module.parse_duration(cfg["threshold"], "locks.threshold").total_seconds()
    locks.judge(repo, found, threshold, locks.filesystem_now(state.layout(repo)))
    out = []
    for lock in found:
        if lock.verdict == lockscan.STALE:
            out.append(Check(FIX, f"stale git lock {lock.shown}: `gate locks --quarantine` moves it aside"))
        elif lock.verdict == lockscan.INELIGIBLE and not lock.companion:
            out.append(Check(FIX, f"git lock {lock.shown} the gate will not move ({lock.reason}): inspect it"))
        elif lock.verdict == lockscan.LIVE and lock.age >= threshold:
            out.append(Check(WARN, f"git lock {lock.shown} held for {int(lock.age)}s: {lock.reason}"))
    return out or [Check(OK, "git lock files are all fresh")]


def _journal(repo: Repo) -> list[Check]:
    verdict = journal.verify(repo)
    if verdict.ok:
        return [Check(OK, f"journal intact ({verdict.entries} entr{'y' if verdict.entries == 1 else 'ies'})")]
    return [Check(FIX, f"journal broken: {verdict.problem} — `gate journal --repair` keeps it and starts anew")]


FLAGS_OPEN = "unacknowledged flag(s): read them with `gate flags`"
NO_FLAGS = "no unacknowledged flags"


def _flags(repo: Repo) -> list[Check]:
    pending = flags.pending(repo)
    if pending:
        return [Check(WARN, f"{len(pending)} {FLAGS_OPEN}")]
    return [Check(OK, NO_FLAGS)]


def _found_leftovers(repo: Repo) -> list[leftovers.Leftover]:
    config = config_module.load(repo)
    return [*leftovers.in_work_tree(repo, config, hooks_folder=hooks.hooks_dir(repo)), *leftovers.in_state_dir(repo)]


def _leftovers(repo: Repo) -> list[Check]:
    """Temp files of killed writers: in the work tree `git add -A` commits them (FIX); in the state dir they
    are only clutter (warn). Young ones may belong to a writer running now (warn, never moved)."""
    out = []
    for item in _found_leftovers(repo):
        if item.age < leftovers.MIN_AGE:
            out.append(Check(WARN, f"temp file {item.shown} is {int(item.age)}s old: a writer may be using it now"))
        elif item.in_tree:
            out.append(Check(FIX, f"temp file {item.shown} of a killed writer: `git add -A` would commit it — "
                                  "`gate doctor --fix` moves it to lost+found"))
        else:
            out.append(Check(WARN, f"temp file {item.shown} of a killed writer: `gate doctor --fix` moves it to "
                                   "lost+found"))
    return out or [Check(OK, "no temp files of killed writers")]


def fix(repo: Repo) -> list[str]:
    """`gate doctor --fix`: move the temp files of killed writers into lost+found (nothing is deleted)."""
    return [f"fix: {line}" for line in move(repo, _found_leftovers(repo)).said]


MAX_MOVED_BYTES = 64 << 20  # the largest leftover moved aside (the gate's own files are capped far below it)


class Moved(NamedTuple):
    said: list[str]  # one line per file: moved, or why it stayed
    folder: str | None  # the lost+found folder, when anything moved


def move(repo: Repo, found: list[leftovers.Leftover], now: datetime | None = None) -> Moved:
    """Move every leftover old enough into one fresh lost+found folder, with a manifest; never delete."""
    when = now or clock.now()
    said: list[str] = []
    ready = []
    for item in found:
        if item.age < leftovers.MIN_AGE:
            said.append(f"left {item.shown}: {int(item.age)}s old, a writer may still be using it")
        else:
            ready.append(item)
    if not ready:
        return Moved(said, None)
    lay = state.layout(repo)
    target = state.new_evidence_dir(lay, when)
    entries = []
    for number, item in enumerate(ready):
        name = f"{number:03d}-{os.path.basename(item.path)}"
        entry, why = _move_one(item, target, name)
        if entry is None:
            said.append(f"left {item.shown}: {why}")
            continue
        entries.append(entry)
        said.append(f"moved {item.shown} to {os.path.join(target, name)}")
    manifest = {"version": 1, "kind": "temp-files", "moved_at": clock.utc_text(when),
                "why": "temp files of writers that never finished (killed or crashed); nothing was deleted",
                "files": entries}
    state.write(repo, os.path.join(target, "manifest.json"), (jsonio.dumps(manifest, indent=2) + "\n").encode())
    if entries:
        journal.append(repo, "temp-files-moved", {"to": str(target), "paths": [e["from"] for e in entries]}, when)
    return Moved(said, target)


def _move_one(item: leftovers.Leftover, target: str, name: str) -> tuple[dict[str, object] | None, str]:
    """lstat, pin, rename into `target`, check the inode that arrived is the pinned one."""
    try:
        info = os.lstat(item.path)
    except FileNotFoundError:
        return None, "gone already"
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror}"
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_uid != os.geteuid():
        return None, "not a regular file of yours with one link: inspect it yourself"
    if info.st_size > MAX_MOVED_BYTES:  # hashed for the manifest: a planted 4 GB file would take minutes
        return None, f"{info.st_size:,} bytes, larger than any file the gate writes: inspect it yourself"
    try:
        fd = os.open(item.path, fsio.safe_flags(os.O_RDONLY))
    except OSError as exc:
        return None, f"cannot be opened: {exc.strerror}"
    try:
        pinned = os.fstat(fd)
        if (pinned.st_dev, pinned.st_ino) != (info.st_dev, info.st_ino):
            return None, "it changed while being looked at"
        digest, read = sha256(), 0
        while read <= MAX_MOVED_BYTES and (chunk := os.read(fd, 1 << 20)):
            digest.update(chunk)
            read += len(chunk)
        if read != pinned.st_size or os.fstat(fd).st_size != read:  # it grew (or shrank) while it was hashed
            return None, "it changed while being looked at"
        destination = os.path.join(target, name)
        moved = fsio.move_aside(item.path, destination, pinned=pinned)
        if isinstance(moved, OSError):
            if moved.errno == errno.EXDEV:
                return None, "on another filesystem than the state dir: move it out of the work tree yourself"
            return None, f"cannot be moved: {moved.strerror}"
        if not moved:
            return None, f"a different file arrived in {destination}: inspect both"
    finally:
        os.close(fd)
    return {"from": item.path, "shown": item.shown, "name": name, "size": pinned.st_size,
            "mtime": int(pinned.st_mtime), "sha256": digest.hexdigest()}, ""


# -- gate doctor --remote --

def probe(repo: Repo, config: Config, name: str) -> list[Check]:
    try:
        target = remote.connect(repo, name, remote.timeout_of(config))
    except GateError as exc:
        return [Check(FIX, f"remote {name}: {exc.render()}")]
    started = time.monotonic()
    try:
        refs = gitnet.ls_remote(target.work, target.url, ["refs/gate/*"])
    except gitnet.Unreachable as exc:
        return [Check(FIX, f"remote {name} ({target.url}) cannot be reached: {exc.render()} — `gate claim` is denied "
                           "while it is (or `gate claim --offline`)")]
    rtt = time.monotonic() - started
    counts = {ns: sum(1 for ref in refs if ref.startswith(ns + "/")) for ns in (remote.CLAIMS, remote.FENCES, remote.FLAGS)}
    out = [Check(OK, f"remote {name} ({target.url}) reachable: ls-remote round trip {rtt * 1000:.0f} ms"),
           Check(OK, f"remote {name} holds {len(refs)} ref(s) under refs/gate/ ({counts[remote.CLAIMS]} claims, "
                     f"{counts[remote.FENCES]} fences, {counts[remote.FLAGS]} flag refs)")]
    stamp = int(clock.now().timestamp())
    ref = f"{remote.PROBES}/{remote.clone_id(repo)}-{stamp}"
    oid = gitnet.make_commit(target.work, {"probe": b"handoff-gate doctor probe\n"}, "gate doctor probe", when=stamp)
    started = time.monotonic()
    created = _push(target, [(ref, oid, None)], f"the doctor's probe push creating {ref}")
    push_time = time.monotonic() - started
    if created.problem:
        if created.maybe_left:  # whether it was made cannot be told: deleted if it was, else named to remove by hand
            return [*out, Check(FIX, created.problem), *_sweep(target, [ref], oid)]
        why = " (it hides refs/gate/: transfer.hideRefs or receive.hideRefs)" if created.hidden else ""
        out.append(Check(FIX, f"{created.problem} — claims cannot be taken there{why}"))
        return out
    # Created (its answer perhaps lost: remote.push read the refs again and found it): from here it is deleted.
    out.extend(_advertised(target, name, ref, oid))
    deleted = _push(target, [(ref, None, oid)], f"the doctor's leased delete of its probe {ref}")
    if deleted.problem:
        out.append(Check(FIX, f"remote {name} took {ref} but did not delete it: {deleted.problem} — releases would "
                              f"fail the same way; {_by_hand(name, ref)}"))
    else:
        out.append(Check(OK, f"remote {name} accepts a create-only push under refs/gate/ and its leased delete "
                             f"({push_time * 1000:.0f} ms per push)"))
    # As an acquisition does: a claim and a fence ref in one push (there, a remote that hides those very
    # namespaces from its push side shows), then both deleted. `gate claims --remote` lists keys only.
    pair = [f"{space}/{remote.PROBE_PREFIX}{ref.rpartition('/')[2]}" for space in (remote.CLAIMS, remote.FENCES)]
    atomic = _push(target, [(pair[0], oid, None), (pair[1], oid, None)],
                   f"the doctor's --atomic probe push creating {pair[0]} and {pair[1]}")
    if atomic.problem:
        why = " (it hides refs/gate/ claims or fences: transfer.hideRefs or receive.hideRefs)" if atomic.hidden else ""
        out.append(Check(FIX, f"{atomic.problem}{why}: claims cannot be taken"))
    else:
        out.append(Check(OK, f"remote {name} applies --atomic pushes (an acquisition moves the claim and its fence "
                             "together)"))
    # What was made is deleted: both, or those of a refused push that may have been made anyway (a ref receive-pack
    # refuses as hidden does not stop the others of an --atomic push, git 2.39; a push with no answer).
    if not atomic.problem or atomic.maybe_left:
        out.extend(_sweep(target, pair, oid))
    out.extend(_claim_readable(repo, config, target, name))
    out.append(Check(WARN, "refs/gate/ refs are not fetched by a plain clone or fetch (refs/heads/* only) and branch "
                           "rules do not protect them: anyone who can push can delete or rewrite a claim"))
    return out


class _Pushed(NamedTuple):
    """A probe push as remote.push judged it: `problem` empty when every ref moved (an answer lost, the refs read
    again showing the push applied, included); else the FIX text, remote text in it cleaned and cut."""

    problem: str = ""
    hidden: bool = False  # refused as a hidden ref
    maybe_left: bool = False  # it may have moved some of the refs: whether it was applied cannot be told, a ref
    # refused as hidden in an --atomic push (the others may be made), or a lease lost on a probe ref
    lost: bool = False  # a lease lost: a ref was not at the value leased (a delete: the probe ref is not there)


def _push(target: remote.Remote, updates: list[tuple[str, str | None, str | None]], doing: str) -> _Pushed:
    """One probe push, through remote.push (the judgement every remote-claim write gets); never raises for what the
    remote did with it."""
    name = target.name
    try:
        if remote.push(target, updates, doing):
            return _Pushed()
    except remote.Hidden:
        return _Pushed(f"remote {name} refuses {doing} as a hidden ref", hidden=True, maybe_left=len(updates) > 1)
    except gitnet.Unwritten as exc:  # refused (its answer in it), or no answer and the refs as they were read
        return _Pushed(exc.message)
    except gitnet.Unreachable as exc:  # no answer, and the refs could not be read again (or the push timed out)
        said = exc.message.partition("; if it did, ")[0]  # remote.push's advice is for claims, not for probes
        if not said.startswith(doing):
            said = f"{doing}: {said}, and whether remote {name} applied it cannot be told"
        return _Pushed(f"remote {name}: {said}", maybe_left=True)
    return _Pushed(f"remote {name} refused {doing} as a lease lost, yet nothing but this doctor writes its probe refs",
                   maybe_left=True, lost=True)


def _sweep(target: remote.Remote, refs: list[str], oid: str) -> list[Check]:
    """Delete each of `refs` the remote holds at the probe's commit `oid`, one leased delete each (a ref that is not
    there, or holds another value, is a lease lost: left alone); a FIX naming each that may be left behind."""
    out = []
    for ref in refs:
        gone = _push(target, [(ref, None, oid)], f"the push deleting the doctor's probe {ref}")
        if gone.problem and not gone.lost:
            out.append(Check(FIX, f"{gone.problem} — {_by_hand(target.name, ref)}"))
    return out


def _by_hand(name: str, ref: str) -> str:
    return f"if remote {name} holds {ref}, remove it by hand (`git push {name} --delete {ref}`)"


def _advertised(target: remote.Remote, name: str, ref: str, oid: str) -> list[Check]:
    """After our own successful push of `ref`, the remote's fetch side must list it: else its claims read as unknown."""
    try:
        listed = gitnet.ls_remote(target.work, target.url, [ref]).get(ref)
    except gitnet.Unreachable as exc:
        return [Check(FIX, f"remote {name} took a push of {ref} but cannot be read again: {exc.render()}")]
    if listed == oid:
        return [Check(OK, f"remote {name} lists what was pushed under refs/gate/ (ls-remote shows the probe)")]
    return [Check(FIX, f"remote {name} took a push of {ref} but its ls-remote does not list it: it hides refs/gate/ "
                       "from fetches (uploadpack.hideRefs or transfer.hideRefs) — every claim there reads as unknown "
                       "and `gate claim` and the pre-push gate refuse; let the remote advertise refs/gate/")]


def _claim_readable(repo: Repo, config: Config, target: remote.Remote, name: str) -> list[Check]:
    """The configured hand-over's own claim: readable, and not hidden from fetches (hideRefs may name it alone)."""
    state_rel = config.section("handoff")["path"]
    try:
        seen = remote.read(target, remote.key_for(repo, state_rel))
    except remote.Hidden as exc:
        return [Check(FIX, exc.render())]
    except GateError as exc:
        return [Check(FIX, f"remote {name}: the claim on {state_rel} cannot be read: {exc.render()}")]
    if seen.problem:
        return [Check(FIX, f"{seen.problem} — `gate release --force --reason TEXT` removes a broken claim ref")]
    held = "free" if seen.record is None else "claimed"
    return [Check(OK, f"remote {name}: the claim on {state_rel} reads as {held} (fence {seen.fence})")]
