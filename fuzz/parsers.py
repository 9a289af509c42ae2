"""Coverage-guided fuzzing of every parser with atheris (run on demand, not in CI).

    python -m pip install atheris
    python fuzz/parsers.py -atheris_runs=200000            # all parsers, one input feeds each
    python fuzz/parsers.py -max_total_time=600 corpus/      # ten minutes, keeping a corpus

Only the product's own errors may escape a parser: anything else is a crash that atheris reports
with the input that caused it.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from gates.domain import handoff, journal, records
    from gates.infra import dataio, fsio
    from gates.infra.errors import GateError

OWN = (dataio.DataError, GateError, records.RecordError)


def one_input(data: bytes) -> None:
    for parse in (_handoff, _yaml, _json, _record, _journal_line):
        try:
            parse(data)
        except OWN:
            pass


def _handoff(data: bytes) -> None:
    source = handoff.Source.decode(data, "HANDOFF.md")
    handoff.parse(source.lines, "HANDOFF.md").to_json("Meta")


def _yaml(data: bytes) -> None:
    dataio.load_yaml(fsio.decode_text(data, ".gate.yaml"))


def _json(data: bytes) -> None:
    dataio.load_json(fsio.decode_text(data, "flag.json"))


def _record(data: bytes) -> None:
    records.parse(data, "decisions/x.md")


def _journal_line(data: bytes) -> None:
    entry = dataio.load_json(fsio.decode_text(data, "journal.jsonl"))
    if isinstance(entry, dict):
        journal.entry_hash(entry)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
