"""`gate init`: the starting files. Never overwrites: an existing file is skipped and said so."""

from __future__ import annotations

from pathlib import Path

from gates.domain.handoff import PLACEHOLDER
from gates.infra import clock, fsio
from gates.infra.clock import datetime
from gates.infra.config import CONFIG_NAME, Config
from gates.infra.git import Repo

UNBORN_REF = "0000000"


def handoff_template(config: Config, head: str | None, now: datetime) -> str:
    cfg = config.section("handoff")
    archive = config.section("archive")["path"]
    guidance = {
        cfg["target_section"]: "Replace this line with what is being worked on now, in one sentence. " + PLACEHOLDER,
        "Open Threads": "<!-- - [ ] <item> — next: <concrete next step> -->",
        "Decisions": "<!-- What was decided and why, one line each; long records go to their own files. -->",
        "Dead Ends": "<!-- What was tried and did not work, so that nobody tries it again. -->",
        "Verified": "<!-- What was checked, and how. -->",
        "Assumed": "<!-- What is believed but not checked. -->",
        "Key References": "<!-- Files, commands and documents the next session needs. -->",
    }
    out = [
        f"# {cfg['title'] or 'Handoff'}",
        "",
        "<!-- The hand-over state of this project: read it first, write it last, commit it at close-out.",
        f"     Completed items do not stay here: they move to {archive}. -->",
    ]
    for name in cfg["sections"]:
        out += ["", f"## {name}"]
        if name.casefold() == cfg["meta_section"].casefold():
            out += [f"- ref: {head or UNBORN_REF}", f"- updated: {clock.utc_text(now)}"]
        elif name in guidance:
            out.append(guidance[name])
    return "\n".join(out) + "\n"


ARCHIVE_TEMPLATE = """# Archive

Completed items moved out of the hand-over file, oldest first. This file only grows at its end.
"""

CONFIG_TEMPLATE = """# handoff-gate configuration. Every key is optional; the values shown are the defaults.
# Reference: `gate schema config`, and docs/configuration.md.
#
# handoff:
#   path: HANDOFF.md            # the hand-over file, relative to the repository root
#   title: Handoff              # its one level-1 heading (null accepts any)
#   sections: [Meta, Current Target, Open Threads, Decisions, Dead Ends, Verified, Assumed, Key References]
#   meta_section: Meta          # holds '- ref: <sha>' and '- updated: <UTC time>'
#   target_section: Current Target
#   brief_sections: [Open Threads] # what the session brief quotes after the target section
#   schema: null                # a stricter JSON Schema for the parsed model (see `gate schema handoff`)
#   max_lines: 600
#   max_bytes: 65536
#   max_item_chars: 600         # one item with its continuation lines
# archive:
#   path: ARCHIVE.md
# append_only:
#   files: [ARCHIVE.md]         # files that may only grow at their end
# records:
#   path: decisions             # one Markdown file per record, with YAML front matter
#   prefix: D
# mailbox:
#   path: WORKPACKAGE.md
#   sentinel: No work package.
#   sections: [Goal, Plan, Done when]
# heartbeat:
#   journal: null               # a file whose growth also counts as a written trace
# claims:
#   require: false              # true: a commit of the hand-over file needs this worktree's claim
#   ttl: null                   # default TTL of `gate claim` (90s, 15m, 2h, 1d, 1h30m); null: none
#   remote: null                # a git remote name: claims are also refs there (docs/claims.md)
#   remote_timeout: 20s         # the time bound of every network git call
#   offline_push: refuse        # the pre-push gate when the remote cannot be read: refuse or allow
# closeout:
#   max_blocks: 3               # consecutive blocked stops of one session before `gate closeout` lets it stop
# fresh:
#   max_behind: 3               # first-parent commits HEAD may be past the Meta ref
#   fresh_days: 7               # an older 'updated' is stale: a warning, or a violation with strict
#   strict: false
# locks:
#   quarantine: true            # move stale git lock files into lost+found
#   threshold: 15m              # a lock younger than this is never stale
#   deep: false                 # true: also walk refs/ on every check
# gates:                        # which gates `gate check` runs
""" + (
    # BEGIN generated from gates/infra/catalog.py: init-gates (`python -I -m gates.infra.surfaces --write`)
    "#   handoff-structure: true\n"
    "#   handoff-no-checked-items: true\n"
    "#   handoff-fresh: true\n"
    "#   handoff-claim: true\n"
    "#   handoff-claim-remote: false # runs at push time: `gate check --remote` and its pre-push hook\n"
    "#   git-stale-locks: true\n"
    "#   append-only: true\n"
    "#   records-immutable: true\n"
    "#   handoff-tables: true\n"
    "#   mailbox: true\n"
    "#   heartbeat: false\n"
    # END generated: init-gates
)


def init(repo: Repo, config: Config, now: datetime) -> list[tuple[str, bool]]:
    """Write the files that are missing; returns (path, written) for each."""
    files: list[tuple[Path, str]] = [
        (Path(repo.path(config.section("handoff")["path"])), handoff_template(config, repo.head, now)),
        (Path(repo.path(config.section("archive")["path"])), ARCHIVE_TEMPLATE),
        (Path(repo.path(CONFIG_NAME)), CONFIG_TEMPLATE),
    ]
    results = []
    for path, content in files:
        if path.exists() or path.is_symlink():
            results.append((repo.relpath(path), False))
            continue
        written = fsio.write_atomic(path, content.encode("utf-8"), exclusive=True, parents=True)
        results.append((repo.relpath(path), written))
    return results
