"""The one finding type every gate returns, and a check's result."""

from __future__ import annotations

from gates.infra.plain import NamedTuple

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

    def __new__(cls, path: str, line: int, gate: str, message: str, severity: str = ERROR) -> Finding:
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

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]
