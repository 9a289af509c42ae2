"""`gate init` and `gate adopt`: a hand-over under the gate, from nothing or from the file a project has.

`gate init` writes the starting files, each only where it is missing (it never overwrites: an existing
file is skipped and said so). `gate adopt [FILE]` takes an existing hand-over file under the gate as it
is: it reads the file's title and level-2 sections, writes the `.gate.yaml` that describes them
(`handoff.path`, `title`, `sections`, `meta_section`, `target_section`, `brief_sections`), adds what the
gate needs and the file lacks (a title, a Meta section with `ref` and `updated`) and says each thing it
did. It never overwrites either: an existing `.gate.yaml` stops it, and the hand-over is rewritten as a
compare-and-swap (a concurrent edit is refused, never lost).
"""

import os
from pathlib import Path

from gates.commands import Invocation
from gates.domain.handoff import PLACEHOLDER
from gates.infra import clock, fsio
from gates.infra.clock import datetime
from gates.infra.config import CONFIG_NAME, Config
from gates.infra.errors import OK, USAGE, VIOLATION, GateError
from gates.infra.git import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from gates.domain.handoff import Document


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    if name == "adopt":
        parser.add_argument("file", nargs="?", default=None, metavar="FILE",
                            help="the hand-over file to adopt (default: handoff.path, HANDOFF.md)")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    return {"init": _init, "adopt": _adopt}[args.command](args, run)


def _init(args: "argparse.Namespace", run: Invocation) -> int:
    repo = run.repo()
    path = run.config().section("handoff")["path"]
    fresh = False  # whether the hand-over is the one written now, with its placeholder target
    for shown, written in write_missing(repo, run.config(), clock.now()):
        print(f"wrote {shown}" if written else f"skipped {shown}: it exists, left unchanged")
        fresh = fresh or (written and shown == path)
    if repo.head is None:
        print(f"note: no commit yet, so Meta ref is the placeholder {UNBORN_REF}: "
              "after the first commit, set it to that commit")
    if fresh:
        target = run.config().section("handoff")["target_section"]
        print(f"next: write the real {target} in {path} (a commit that carries the placeholder is refused), "
              "`gate stamp`, commit the files; `gate install-hooks` (or the pre-commit framework) judges every commit")
    return OK


# -- gate init --

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


def write_missing(repo: Repo, config: Config, now: datetime) -> list[tuple[str, bool]]:
    """Write the files that are missing; returns (path, written) for each."""
    files: list[tuple[Path, str]] = [
        (Path(repo.path(config.section("handoff")["path"])), handoff_template(config, repo.head, now)),
        (Path(repo.path(config.section("archive")["path"])), ARCHIVE_TEMPLATE),
        (Path(repo.path(CONFIG_NAME)), CONFIG_TEMPLATE),
    ]
    results = []
    for path, content in files:
        present = path.exists() or path.is_symlink()  # a dangling link too: never written through
        written = not present and fsio.write_atomic(path, content.encode("utf-8"), exclusive=True, parents=True)
        results.append((repo.relpath(path), written))
    return results


# -- gate adopt --

# Section names that say "what is being worked on now", most specific first: the first one the file has is the
# target (the section that must not be empty). Without one, the first section after Meta is.
TARGET_NAMES = ("current target", "current task", "current focus", "current work", "current goal", "current state",
                "current status", "in progress", "now", "status", "next steps", "next", "goal", "goals", "objective",
                "focus", "todo", "to do")
TARGET_PREFIXES = ("current ", "next ", "now ", "in progress")
META = "Meta"
MAX_BYTES = 1 << 20


def _adopt(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.domain import handoff
    from gates.infra import paths

    repo = run.repo()
    config_path = repo.path(CONFIG_NAME)
    if os.path.lexists(config_path):
        raise GateError(f"{CONFIG_NAME} exists: gate adopt writes one only where there is none (edit its handoff "
                        "section instead; docs/configuration.md)", code=USAGE, reason="usage")
    given = args.file if args.file is not None else run.config().section("handoff")["path"]
    real = paths.confined(repo, os.path.abspath(given) if args.file is not None else repo.path(given), given)
    relative = repo.relpath(real)
    data = fsio.read_bytes_capped(real, MAX_BYTES, relative)
    if isinstance(data, int):
        raise GateError(f"{data:,} bytes: a hand-over this large is not adopted (over 1 MiB)", code=VIOLATION,
                        reason="input-unreadable", path=relative)
    source = handoff.Source.decode(data, relative)
    lines = list(source.lines)
    done: list[str] = []
    first = handoff.parse(lines, relative)
    _plain_headings(first, relative)
    title = _title(first, lines, done)
    meta = _meta(handoff.parse(lines, relative), lines, repo.head, done)
    doc = handoff.parse(lines, relative)
    _unique(doc, relative)
    names = [section.name for section in doc.sections]
    target = _target(names, meta)
    config = _config(relative, title, names, meta, target).encode("utf-8")
    _read_back(config)
    if lines != source.lines:
        fsio.rewrite(real, data, source.encode(lines), shown=relative, who="gate adopt")
    fsio.write_atomic(config_path, config, exclusive=True)
    for line in done:
        print(f"{relative}: {line}")
    print(f"wrote {CONFIG_NAME}: handoff.path {relative}, title '{title}', {len(names)} sections "
          f"({', '.join(names)}), meta_section {meta}, target_section {target}")
    print("next: `gate check` judges it as configured (checked items move to the archive with `gate archive`); "
          "commit both files")
    return OK


def _title(doc: "Document", lines: list[str], done: list[str]) -> str:
    if len(doc.titles) > 1:
        raise GateError(f"{len(doc.titles)} level-1 headings (lines {', '.join(str(n) for _, n in doc.titles)}): "
                        "a hand-over has one title — keep one, then adopt it", code=USAGE, reason="usage",
                        path=doc.path)
    if doc.titles:
        return doc.titles[0][0]
    lines[:0] = ["# Handoff", ""]
    done.append("added the title '# Handoff' at the top (the file had no level-1 heading)")
    return "Handoff"


def _meta(doc: "Document", lines: list[str], head: str | None, done: list[str]) -> str:
    """The Meta section's name; a missing section, or a missing `ref` or `updated`, is added."""
    found = doc.section(META)
    stamp = {"ref": head or UNBORN_REF, "updated": clock.utc_text(clock.now())}
    if not found:
        at = next((section.line - 1 for section in doc.sections), len(lines))  # the first section's heading
        lines[at:at] = [f"## {META}", *(f"- {key}: {value}" for key, value in stamp.items()), ""]
        done.append(f"added a {META} section (ref {stamp['ref'][:12]}, updated {stamp['updated']}) before the first "
                    "section: `gate stamp` keeps it current at each close-out")
        return META
    section = found[0]
    missing = [key for key in stamp if doc.meta_value(section.name, key) is None]
    lines[section.line:section.line] = [f"- {key}: {stamp[key]}" for key in missing]  # right under its heading
    if missing:
        done.append(f"added {' and '.join(missing)} to its {section.name} section")
    return section.name


def _plain_headings(doc: "Document", shown: str) -> None:
    """The title and the section names go into .gate.yaml as they are: one holding a control, format, separator or
    noncharacter code point is refused, naming its line (the gate would refuse the .gate.yaml it made)."""
    from gates.infra.text import escape_of, excerpt, not_plain

    for text, line in [*doc.titles[:1], *((section.name, section.line) for section in doc.sections)]:
        bad = not_plain(text)
        if bad is not None:
            raise GateError(f"the heading '{excerpt(text)}' holds {escape_of(ord(bad))} (a control, format or "
                            "noncharacter code point): a title or section name is plain text — remove it, then adopt",
                            code=USAGE, reason="usage", path=shown, line=line)


def _read_back(config: bytes) -> None:
    """The .gate.yaml adopt is about to write, read as every command will read it: one the gate would refuse is not
    written."""
    from gates.infra import config as config_module

    try:
        config_module.parse_and_validate(config, CONFIG_NAME)
    except GateError as exc:
        raise GateError(f"gate adopt would write a {CONFIG_NAME} the gate refuses ({exc.render()}): nothing written",
                        code=USAGE, reason="usage") from None


def _unique(doc: "Document", shown: str) -> None:
    first: dict[str, int] = {}
    for section in doc.sections:
        line = first.setdefault(section.name.casefold(), section.line)
        if line != section.line:
            raise GateError(f"the section '{section.name}' appears twice (lines {line} and {section.line}): the gate "
                            "needs each section once — merge them, then adopt", code=USAGE, reason="usage", path=shown)


def _target(names: list[str], meta: str) -> str:
    folded = {name.casefold(): name for name in names if name.casefold() != meta.casefold()}
    found = [folded[wanted] for wanted in TARGET_NAMES if wanted in folded]
    found += [name for prefix in TARGET_PREFIXES  # "Next session — Stage D", "Current blockers"
              for key, name in folded.items() if key.startswith(prefix)]
    found += folded.values()
    if not found:
        raise GateError("the file has no section but Meta: write the one that says what is being worked on now "
                        "(## Current Target), then adopt it", code=USAGE, reason="usage")
    return found[0]


def _config(relative: str, title: str, names: list[str], meta: str, target: str) -> str:
    from gates.infra import jsonio

    def quoted(text: str) -> str:  # a JSON string is a YAML double-quoted scalar
        return jsonio.dumps(text, ensure_ascii=False)

    quoted_after = [f"    - {quoted(name)}" for name in names if name not in (meta, target)]
    return "\n".join([
        "# handoff-gate configuration, written by `gate adopt` from the hand-over as it was.",
        "# Every other key keeps its default: `gate schema config` and docs/configuration.md list them.",
        "handoff:",
        f"  path: {quoted(relative)}",
        f"  title: {quoted(title)}",
        "  sections:",
        *(f"    - {quoted(name)}" for name in names),
        f"  meta_section: {quoted(meta)}",
        f"  target_section: {quoted(target)}",
        f"  brief_sections:{'' if quoted_after else ' []'}  # what the session brief quotes after the target section",
        *quoted_after,
        "",
    ])
