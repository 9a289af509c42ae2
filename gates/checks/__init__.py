"""Every gate, under its id: the catalog is data, and a gate's module is imported only when it runs.

The id is the hook id, the config key and the module name (`-` as `_`). A check that runs one
gate (`gate check --only ID`, as each pre-commit hook does) imports that gate alone. The catalog
itself lives in gates/infra/catalog.py, so that the layers below the checks (flags, doctor, the
report) can read the ids without importing a gate.
"""

from __future__ import annotations

from _collections_abc import Mapping  # what collections.abc re-exports, without `collections` itself

from gates.infra.catalog import CATALOG, Gate, flag_reason

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

__all__ = ["CATALOG", "GATES", "Gate", "flag_reason"]


class _Modules(Mapping[str, "ModuleType"]):
    """id -> the gate's module, imported on first use."""

    def __getitem__(self, gate_id: str) -> ModuleType:
        if gate_id not in CATALOG:
            raise KeyError(gate_id)
        module: ModuleType = __import__(f"gates.checks.{gate_id.replace('-', '_')}", fromlist=["check"])
        return module

    def __iter__(self) -> Iterator[str]:
        return iter(CATALOG)

    def __len__(self) -> int:
        return len(CATALOG)


GATES: Mapping[str, ModuleType] = _Modules()
