"""`gate stamp`: the close-out step. Meta `ref` becomes HEAD and `updated` becomes now, atomically.

Only the values of those two items change (and a `fence` line with them, see `stamp`); every other byte
(line ends, a BOM, backticks around a value) is kept. With an expected content hash, a writer working from
a stale read is stopped.
"""

from gates.commands import Invocation
from gates.domain import handoff, journal
from gates.infra import clock, fsio, state
from gates.infra.clock import datetime
from gates.infra.config import Config
from gates.infra.console import say
from gates.infra.digest import sha256
from gates.infra.errors import OK, USAGE, VIOLATION, GateError
from gates.infra.git import Repo
from gates.infra.text import Pattern, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    parser.add_argument("--expect", metavar="SHA256", help="refuse unless the file still has this content hash")
    parser.add_argument("--amend", action="store_true",
                        help="for `git commit --amend`: the ref becomes HEAD's parent, the amended commit's own")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    check_expect(args.expect)  # before the repository is even looked at
    shown, ref, digest, not_journalled, notes = stamp(run.repo(), run.config(), clock.now(), args.expect,
                                                      args.amend)
    said = f"stamped {shown}: ref {ref}, sha256 {digest}"
    run.did(said)
    print(said)  # the new hash, whatever failed after the write: a caller is never told the file is unchanged
    for note in notes:
        print(f"  {note}")
    _claimed_elsewhere(run)
    if not_journalled is not None:
        raise not_journalled
    return OK


_VALUE = Pattern(r"^(?P<lead>\s*(?:[-*+]|\d{1,9}[.)])\s+)(?P<key>[A-Za-z][A-Za-z0-9_-]*)(?P<sep>\s*:\s*)"
                    r"(?P<quote>`?)(?P<value>.*?)(?P=quote)(?P<trail>\s*)$")


def _claimed_elsewhere(run: Invocation) -> None:
    """A stamp is no commit, so it is not refused; but a commit of the hand-over is, while another worktree holds
    its claim (handoff-claim): said now, before the session writes a close-out it cannot commit."""
    if not fsio.listing(state.layout(run.repo()).claims, ".json"):
        return  # no claim in this clone: the claims module is not loaded
    from gates.domain import claims

    path = run.config().section("handoff")["path"]
    holder = claims.claimed_elsewhere(run.repo(), path)
    if holder is not None:
        say(f"gate stamp: warning: {path} is claimed by {holder}: a commit of it is refused here until that claim "
            "ends (`gate brief` says what is yours to do)")


def _denied(message: str) -> GateError:
    return GateError(message, code=VIOLATION, reason="stamp-denied")


def check_expect(expect: str | None) -> None:
    """A malformed `--expect` is a usage error, never reported as a concurrent change."""
    if expect is not None and (len(expect) != 64 or expect.strip("0123456789abcdefABCDEF")):
        shown = expect if len(expect) <= 80 else expect[:80] + "…"
        raise GateError(f"--expect takes the 64 hex digits of a sha256 (as `gate stamp` prints it), not {shown!r}",
                        code=USAGE, reason="usage")


def stamp(repo: Repo, config: Config, now: datetime, expect: str | None,
          amend: bool = False) -> tuple[str, str, str, journal.NotJournalled | None, list[str]]:
    """Rewrite the Meta block; returns (path shown, the ref stamped, sha256 of the new content, the journal's failure
    if any, what else it changed, in words). `amend`: the ref is HEAD's first parent, which `git commit --amend`
    gives the commit that replaces HEAD.

    Meta `fence` is the fence of the remote claim this worktree holds; without one, a fence line left from an
    earlier claim is dropped (and said): a stale fence would refuse the push as a late close-out.

    Once the file is written the stamp is done: a journal that cannot record it is returned, not
    raised, so that the caller can still say what is on disk."""
    cfg = config.section("handoff")
    path, shown, data, source = handoff.read_for_rewrite(repo, config, "stamped")
    if expect is not None and (found := sha256(data).hexdigest()) != expect.lower():
        raise _denied(f"{shown} changed since it was read (sha256 {found}, expected {expect}): "
                      "read it again, fold your update in, then stamp")
    if repo.head is None:  # a slip of the user's own hand (a stamp before the first commit): said, not flagged
        raise GateError("this branch has no commit yet: there is no HEAD to stamp — make the first commit, then "
                        "`gate stamp`", code=USAGE, reason="usage", path=shown)
    ref = repo.head
    if amend:
        line = repo.recent()
        if len(line) < 2:
            raise GateError("HEAD has no parent here (the root commit, or a shallow clone's boundary): an amend of it "
                            "makes a new root, whose Meta ref can name no commit", code=USAGE, reason="usage", path=shown)
        ref = line[1]
    values = {"ref": ref, "updated": clock.utc_text(now)}
    from gates.domain import remote

    held = remote.held(repo, cfg["path"])  # the fence of the remote claim this worktree holds (issue 18)
    notes: list[str] = []
    if held is not None and isinstance(held.get("fence"), int):
        values["fence"] = str(held["fence"])
    new = _rewrite(source, shown, cfg["meta_section"], values, notes)
    fsio.rewrite(path, data, new, shown=shown, who="gate stamp", code=VIOLATION, reason="stamp-denied")
    digest = sha256(new).hexdigest()
    try:
        journal.append(repo, "stamp", {"path": shown, "ref": ref, "sha256": digest}, now)
    except journal.NotJournalled as exc:
        return shown, ref, digest, exc, notes
    return shown, ref, digest, None, notes


def _rewrite(source: handoff.Source, shown: str, meta_section: str, values: dict[str, str],
             notes: list[str]) -> bytes:
    lines = list(source.lines)
    doc = handoff.parse(lines, shown)
    if doc.conflict_markers:  # a stamp would call an unresolved merge closed out, and could drop a side's fence
        raise _denied(f"{shown}:{doc.conflict_markers[0]}: a merge-conflict marker — resolve the conflict (keep "
                      "what both sides describe), remove the markers, then `gate stamp`")
    sections = doc.section(meta_section)
    if not sections:
        raise _denied(f"{shown} has no '## {meta_section}' section to stamp (see `gate init`)")
    stale = doc.meta_value(meta_section, "fence") if "fence" not in values else None
    if stale is not None:  # no remote claim is held here: the fence of an earlier one goes
        notes.append(f"dropped Meta fence ({excerpt(lines[stale.line - 1].strip(), 60)}, line {stale.line}): this "
                     "worktree holds no remote claim, and a stale fence would refuse the push as a late close-out")
        del lines[stale.line - 1]
        doc = handoff.parse(lines, shown)
    insert_at = sections[0].line  # after the heading, for a key that is missing
    for key, value in values.items():
        entry = doc.meta_value(meta_section, key)
        if entry is None:
            lines.insert(insert_at, f"- {key}: {value}")
            doc = handoff.parse(lines, shown)
            continue
        match = _VALUE.match(lines[entry.line - 1])
        if match is None:
            raise _denied(f"{shown}:{entry.line}: Meta {key} is not a '- {key}: value' line that can be stamped")
        lines[entry.line - 1] = (f"{match['lead']}{match['key']}{match['sep']}{match['quote']}{value}"
                                 f"{match['quote']}{match['trail']}")
    return source.encode(lines)
