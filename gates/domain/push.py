"""What a push changes, as its hook is told: git's pre-push lines, pre-commit's PRE_COMMIT_* variables, or HEAD."""

from gates.infra.git import Repo
from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, TextIO

MAX_UPDATES = 1000


class Update(NamedTuple):
    """One ref a push changes, as git's pre-push hook is told of it."""

    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str


def _oid(text: str) -> bool:
    """An object id as git writes it: 40 hex digits (SHA-1) or 64 (SHA-256)."""
    return len(text) in (40, 64) and not text.strip("0123456789abcdef")


def updates(repo: Repo, stdin: "TextIO | None", environ: "Mapping[str, str]") -> list[Update]:
    """What is being pushed: git's pre-push lines on stdin, pre-commit's PRE_COMMIT_FROM_REF/TO_REF, or HEAD."""
    found: list[Update] = []
    if stdin is not None:
        for line in stdin.read(1 << 20).splitlines()[:MAX_UPDATES]:
            parts = line.split()
            if len(parts) == 4 and _oid(parts[1]) and _oid(parts[3]):
                found.append(Update(*parts))
        return found
    # "0" * len(oid): the id that means "no such ref", in the hash length of `oid` (40 or 64 zeros)
    to_ref, from_ref = environ.get("PRE_COMMIT_TO_REF"), environ.get("PRE_COMMIT_FROM_REF")
    if to_ref:
        local = repo.resolve_commit(to_ref)
        remote_oid = repo.resolve_commit(from_ref) if from_ref else None
        return [Update(to_ref, local, environ.get("PRE_COMMIT_REMOTE_BRANCH", ""), remote_oid or "0" * len(local))] \
            if local else []
    return [Update("HEAD", repo.head, "", "0" * len(repo.head))] if repo.head else []
