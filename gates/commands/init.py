"""`gate init`: write HANDOFF.md, ARCHIVE.md and .gate.yaml where they are missing."""

from __future__ import annotations

from gates.commands import invocation
from gates.commands.invocation import Run
from gates.infra.errors import OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    pass


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    return None


def run(args: argparse.Namespace, run: Run) -> int:
    return _init(args, run)


def _init(args: argparse.Namespace, run: Run) -> int:
    from gates.domain import scaffold

    repo = run.repo()
    for shown, written in scaffold.init(repo, run.config(), invocation.now()):
        print(f"wrote {shown}" if written else f"skipped {shown}: it exists, left unchanged")
    if repo.head is None:
        print(f"note: no commit yet, so Meta ref is the placeholder {scaffold.UNBORN_REF}: "
              "after the first commit, set it to that commit")
    return OK
