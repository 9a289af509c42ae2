"""The one finding type every gate returns."""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    gate: str
    message: str
    severity: str = ERROR

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
