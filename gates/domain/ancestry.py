"""How far git has moved past the hand-over: the one definition of "behind", for the brief, the gates, the hook and --range.

The work after a hand-over is the first-parent commits after its Meta ref, except the close-out
commit: the Meta ref's child on that line, when it changes the hand-over file and its Meta ref is
its parent (the commit `gate stamp` then `git commit` makes). A hook judges the history as it will
be once the commit being made exists: that commit is one more commit after the Meta ref, or the
close-out itself when it stages a hand-over naming HEAD.

Git is asked little: HEAD's recent first-parent commits (read once per run, see Repo.recent) give
the position of the Meta ref; whether the commit after it closed it out is asked only when the
answer can change a verdict (or always, with `exact`), by one path-limited rev-list.
"""

from gates.domain import handoff
from gates.infra.config import Config
from gates.infra.errors import GateError
from gates.infra.git import RECENT, Repo
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

PENDING = ""  # the commit being made, where it stands in a chain


SHALLOW_ADVICE = "fetch more history to check it (`git fetch --deepen=100`, or `git fetch --unshallow`)"


def not_in_shallow_clone(ref: str) -> str:
    """What a gate says of a Meta ref this shallow clone lacks: it may well exist, so fetch and look."""
    return f"Meta ref {ref} is not in this shallow clone: {SHALLOW_ADVICE}"


class Relation(NamedTuple):
    """Where a Meta ref stands against a commit: current, N behind, not in its history, or unknown here."""

    kind: str  # current | behind | elsewhere | shallow | unborn
    behind: int = 0  # commits of work after the Meta ref
    commit: str | None = None  # the Meta ref's full id, when it names a commit
    closed: bool = False  # the commit after the Meta ref is its close-out (and is not counted)
    exact: bool = True  # False: `behind` is an upper bound that was not worth a git call (it is within the limit)

    def verdict(self, where: str = "HEAD") -> str:
        if self.kind == "current":
            return f"current ({where} is the close-out of the Meta ref)" if self.closed else \
                f"current (the Meta ref is {where})"
        return {
            "behind": f"{self.behind} commit{'s' if self.behind != 1 else ''} behind {where}",
            "elsewhere": "NOT IN THIS HISTORY (rebased away, another branch, or an unknown commit)",
            "shallow": f"unknown: not in this shallow clone — {SHALLOW_ADVICE}",
            "unborn": "unknown: this branch has no commit yet",
        }[self.kind]


def meta_ref(data: bytes | None, config: Config) -> handoff.MetaEntry | None:
    """The Meta ref of a hand-over file's bytes, or None when there is no file or it names none.

    Raises GateError when the bytes are not text that can be read."""
    cfg = config.section("handoff")
    if data is None:
        return None
    text = handoff.Source.decode(handoff.head(data), cfg["path"])
    return handoff.parse(text.lines, cfg["path"]).meta_value(cfg["meta_section"], "ref")


def relation(repo: Repo, config: Config, ref: str, *, tip: str | None = None, pending: bool | None = None,
             exact: bool = True, read: "Callable[[str], bytes | None] | None" = None, span: int = 0) -> Relation:
    """How far `tip` (HEAD by default) is past the hand-over that names `ref`.

    `pending`: None when no commit is being made; else whether the commit being made on top of
    HEAD is a close-out (it stages the hand-over file and the staged Meta ref is HEAD).
    `exact`: False lets a count that is within `fresh.max_behind` either way stay an upper bound.
    `read`: the hand-over file at a commit (by default one `git cat-file`), for the rare history
    where the hand-over changed again after its close-out.
    `span`: under --range, how many commits the range has: HEAD's last span + max_behind + 2
    first-parent commits are read once and place every tip's Meta ref without a git call.
    """
    tip = tip or repo.head
    if tip is None:
        return Relation("unborn")
    commit = repo.resolve_commit(ref)
    if commit is None:
        return Relation("shallow" if repo.is_shallow() else "elsewhere")
    limit = config.section("fresh")["max_behind"]
    found = _position(repo, tip, commit, reach=span + limit + 2 if span else 0)
    if found is None:
        return Relation("elsewhere", 0, commit)
    position, child = found  # the commits after the Meta ref on tip's first-parent line, and the first of them
    if pending is not None:
        position, child = position + 1, (PENDING if position == 0 else child)
    if position == 0:
        return Relation("current", 0, commit)
    if child == PENDING:
        closed = bool(pending)
    elif not exact and position <= limit:
        return Relation("behind", position, commit, exact=False)  # behind by this or one less: within the limit
    else:
        assert child is not None
        closed = _closes_out(repo, config, commit, child, tip, read)
    behind = position - closed
    return Relation("current" if behind == 0 else "behind", behind, commit, closed)


def _position(repo: Repo, tip: str, commit: str, reach: int = 0) -> tuple[int, str | None] | None:
    """(first-parent commits from `commit` to `tip`, the first of them), or None when `commit` is not in tip's history.

    `reach`: how many of HEAD's first-parent commits may be read once for every tip of a range (0: none)."""
    if tip == repo.head:
        chain = repo.recent()
    elif reach and tip in (line := repo.first_parent_line(reach))[1] and commit in line[1]:  # --range: no git call
        at = line[1][commit] - line[1][tip]
        if at < 0:
            return None  # after tip on the line: not in its history
        return at, (line[0][line[1][commit] - 1] if at else None)
    else:
        chain = repo.ask("rev-list", "--first-parent", f"--max-count={RECENT}", tip, "--").stdout.split()
    if commit in chain:
        at = chain.index(commit)
        return at, (chain[at - 1] if at else None)
    # A line shorter than RECENT is not proof that it was read whole: the discovery's rev-parse leaves out the
    # commits past a missing object. Git is asked, and an error it says is doubt, never "not in the history".
    if repo.ask("merge-base", "--is-ancestor", commit, tip, answers=(0, 1)).returncode != 0:
        return None
    after = repo.ask("rev-list", "--first-parent", "--parents", f"{commit}..{tip}", "--").stdout.splitlines()
    oldest = after[-1].split() if after else []
    # Reached only through a merge's second parent: no commit of the first-parent line is its child.
    return len(after), (oldest[0] if len(oldest) > 1 and oldest[1] == commit else None)


def _touched_args(commit: str, tip: str, path: str) -> tuple[str, ...]:
    """The git call listing the first-parent commits after `commit`, up to `tip`, that change `path`."""
    return ("--literal-pathspecs", "rev-list", "--first-parent", f"{commit}..{tip}", "--", path)


def _closes_out(repo: Repo, config: Config, commit: str, child: str | None, tip: str,
                read: "Callable[[str], bytes | None] | None") -> bool:
    """Whether `child` (the commit after `commit` on tip's first-parent line) is the close-out of `commit`."""
    if child is None:
        return False
    path = config.section("handoff")["path"]
    key = f"touched:{commit}..{tip}:{path}"
    if key not in repo.memo:  # the brief asks it twice (the tripwire, the salvage): git once
        repo.memo[key] = repo.ask(*_touched_args(commit, tip, path)).stdout.split()
    touched: list[str] = repo.memo[key]
    if child not in touched:
        return False  # it does not change the hand-over file
    if touched == [child]:
        return True  # the hand-over as judged, which names `commit`, is the one `child` wrote
    data = repo.blob_at(child, path, limit=handoff.COMMITTED_CAP) if read is None else read(child)  # (lacking: an error)
    try:
        entry = meta_ref(data, config)
    except GateError:
        return False
    return entry is not None and repo.resolve_commit(entry.value) == commit
