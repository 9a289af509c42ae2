"""handoff-gate: keeps a project's hand-over file (HANDOFF.md) trustworthy."""

__version__ = "0.3.0"
