"""`gate adopt [FILE]`: take an existing hand-over file under the gate as it is.

It reads the file's title and level-2 sections, writes the `.gate.yaml` that describes them
(`handoff.path`, `title`, `sections`, `meta_section`, `target_section`), adds what the gate needs and
the file lacks (a title, a Meta section with `ref` and `updated`) and says each thing it did. It
never overwrites: an existing `.gate.yaml` stops it, and the hand-over is rewritten as a
compare-and-swap (a concurrent edit is refused, never lost).
"""

from __future__ import annotations

import os

from gates.commands import invocation
from gates.commands.invocation import Run
from gates.infra.errors import OK, USAGE, VIOLATION, GateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from gates.domain.handoff import Document

# Section names that say "what is being worked on now", most specific first: the first one the file has is the
# target (the section that must not be empty). Without one, the first section after Meta is.
TARGET_NAMES = ("current target", "current task", "current focus", "current work", "current goal", "current state",
                "current status", "in progress", "now", "status", "next steps", "next", "goal", "goals", "objective",
                "focus", "todo", "to do")
TARGET_PREFIXES = ("current ", "next ", "now ", "in progress")
META = "Meta"
MAX_BYTES = 1 << 20


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("file", nargs="?", default=None, metavar="FILE",
                        help="the hand-over file to adopt (default: handoff.path, HANDOFF.md)")


def run(args: argparse.Namespace, run: Run) -> int:
    return _adopt(args, run)


def _adopt(args: argparse.Namespace, run: Run) -> int:
    from gates.domain import handoff
    from gates.infra import fsio, paths
    from gates.infra.config import CONFIG_NAME

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
    title = _title(handoff.parse(lines, relative), lines, done)
    meta = _meta(handoff.parse(lines, relative), lines, repo.head, done)
    doc = handoff.parse(lines, relative)
    _unique(doc, relative)
    names = [section.name for section in doc.sections]
    target = _target(names, meta)
    if lines != source.lines:
        fsio.rewrite(real, data, source.encode(lines), shown=relative, who="gate adopt")
    fsio.write_atomic(config_path, _config(relative, title, names, meta, target).encode("utf-8"), exclusive=True)
    for line in done:
        print(f"{relative}: {line}")
    print(f"wrote {CONFIG_NAME}: handoff.path {relative}, title '{title}', {len(names)} sections "
          f"({', '.join(names)}), meta_section {meta}, target_section {target}")
    print("next: `gate check` judges it as configured (checked items move to the archive with `gate archive`); "
          "commit both files")
    return OK


def _title(doc: Document, lines: list[str], done: list[str]) -> str:
    if len(doc.titles) > 1:
        raise GateError(f"{len(doc.titles)} level-1 headings (lines {', '.join(str(n) for _, n in doc.titles)}): "
                        "a hand-over has one title — keep one, then adopt it", code=USAGE, reason="usage",
                        path=doc.path)
    if doc.titles:
        return doc.titles[0][0]
    lines[:0] = ["# Handoff", ""]
    done.append("added the title '# Handoff' at the top (the file had no level-1 heading)")
    return "Handoff"


def _meta(doc: Document, lines: list[str], head: str | None, done: list[str]) -> str:
    """The Meta section's name; a missing section, or a missing `ref` or `updated`, is added."""
    from gates.domain.scaffold import UNBORN_REF
    from gates.infra import clock

    found = doc.section(META)
    stamp = {"ref": head or UNBORN_REF, "updated": clock.utc_text(invocation.now())}
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


def _unique(doc: Document, shown: str) -> None:
    seen: dict[str, int] = {}
    for section in doc.sections:
        if section.name.casefold() in seen:
            raise GateError(f"the section '{section.name}' appears twice (lines {seen[section.name.casefold()]} and "
                            f"{section.line}): the gate needs each section once — merge them, then adopt",
                            code=USAGE, reason="usage", path=shown)
        seen[section.name.casefold()] = section.line


def _target(names: list[str], meta: str) -> str:
    folded = {name.casefold(): name for name in names if name.casefold() != meta.casefold()}
    for wanted in TARGET_NAMES:
        if wanted in folded:
            return folded[wanted]
    for prefix in TARGET_PREFIXES:  # "Next session — Stage D", "Current blockers"
        found = next((name for key, name in folded.items() if key.startswith(prefix)), None)
        if found is not None:
            return found
    if not folded:
        raise GateError("the file has no section but Meta: write the one that says what is being worked on now "
                        "(## Current Target), then adopt it", code=USAGE, reason="usage")
    return next(iter(folded.values()))


def _config(relative: str, title: str, names: list[str], meta: str, target: str) -> str:
    from gates.infra import jsonio

    def quoted(text: str) -> str:  # a JSON string is a YAML double-quoted scalar
        return jsonio.dumps(text, ensure_ascii=False)

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
        "  brief_sections:  # what the session brief quotes after the target section",
        *(f"    - {quoted(name)}" for name in names if name not in (meta, target)),
        "",
    ])
