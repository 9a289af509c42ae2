"""The one finding type every gate returns, a check's result, and its text report."""

from gates.infra.plain import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

ERROR = "error"
WARNING = "warning"
ENVIRONMENT = "gate"  # the id of findings about the gate's own environment: it is no gate's id

# A tuple underneath: immutable, hashable, compared and ordered field by field (dataclasses would
# cost every hook run the import of `inspect`).
class _Base(NamedTuple):
    path: str
    line: int
    gate: str
    message: str
    severity: str = ERROR


class Finding(_Base):
    """One problem. Its text is shown sanitised: a message quoting input never prints a control or bidi character raw."""

    __slots__ = ()

    def __new__(cls, path: str, line: int, gate: str, message: str, severity: str = ERROR) -> "Finding":
        from gates.infra.text import clean

        return super().__new__(cls, clean(path), line, gate, clean(message), severity)

    def render(self) -> str:
        tag = self.gate if self.severity == ERROR else f"{self.gate} {self.severity}"
        return f"{self.path}:{self.line}: [{tag}] {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "gate": self.gate,
            "severity": self.severity,
            "message": self.message,
        }


class CheckResult:
    """What `gate check` found: the gates it ran, the files it read, the findings, and events to flag."""

    def __init__(self, gates: list[str], files: list[str], findings: list[Finding] | None = None,
                 events: list[tuple[str, str]] | None = None) -> None:
        self.gates = gates
        self.files = files
        self.findings = findings if findings is not None else []
        self.events = events if events is not None else []
        self.fixed: list[str] = []  # what `--fix` changed before the gates ran (the run then exits 1)
        self.range: tuple[str, int] | None = None  # under --range: the range and how many commits it judged
        self.situation: str | None = None  # what was judged (gates/domain/changes.py::situation)
        self.unjudged: dict[str, str] = {}  # gate: why it had nothing to judge (it neither passed nor failed)
        self.unstaged: list[str] = []  # hand-over files whose work-tree copy the commit does not record (not judged)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]


# The text renderer lives with the result: it is every commit's format, and the other renderers' module
# (gates/infra/report.py) is then never loaded.
_AS = {"commit": " as this commit will record it", "work tree": " in the work tree", "push": " at push"}


def summary(result: CheckResult) -> str:
    """The one last line: the verdict, and what was judged: the files, in which situation, and the gates that had
    nothing to judge."""
    from gates.infra.text import shell_path

    where = ", ".join(result.files) + _AS.get(str(result.situation), "")
    if result.range is not None:
        spec, count = result.range
        where += f" and {count} commit{'s' if count != 1 else ''} of {spec}"
    where += "".join(f"; {gate} judged nothing: {why}" for gate, why in result.unjudged.items())
    where += "".join(f"; the unstaged changes to {shown} are not in this commit and were not judged (to commit them: "
                     f"`gate stamp`, then `git add {shell_path(shown)}`)" for shown in result.unstaged)
    gates = f"{len(result.gates)} gate{'s' if len(result.gates) != 1 else ''}"
    if result.fixed and not any(f.severity == ERROR for f in result.findings):
        count = len(result.fixed)
        return (f"gate check: fixed {count} problem{'s' if count != 1 else ''} and exits 1 so that the changed files "
                f"are staged again; nothing else to fix ({gates} on {where})")
    if not result.findings:
        return f"gate check: passed ({gates} on {where})"
    counts = tally(f.severity for f in result.findings)
    per_gate = tally(f.gate for f in result.findings)
    errors, warnings = counts.get(ERROR, 0), counts.get(WARNING, 0)
    verdict = "failed" if errors else "passed with warnings"
    parts = [f"{errors} error{'s' if errors != 1 else ''}"]
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    detail = ", ".join(f"{gate_id}: {n}" for gate_id, n in sorted(per_gate.items()))
    return f"gate check: {verdict}: {', '.join(parts)} ({detail}; {gates} on {where})"


def tally(values: "Iterable[str]") -> dict[str, int]:
    """How often each value occurs (collections.Counter's answer, without its import)."""
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def text(result: CheckResult | None) -> str:
    """The text report: each finding, then the summary line (nothing without a result: the error says it)."""
    if result is None:
        return ""
    lines = [finding.render() for finding in result.findings]
    lines.append(summary(result))
    from gates.infra.text import clean

    return clean("\n".join(lines) + "\n")
