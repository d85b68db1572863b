"""The family table in examples/README.md says what the library holds: each family's transcript count and the
transcripts whose expected message the template language cannot give (their `actual`). A model-author trial
found 17 of 25 counts stale."""

from __future__ import annotations

import os
import re

import examples

README = os.path.join(os.path.dirname(examples.__file__), "README.md")
HEADER = "| family | format | transcripts | recorded differences (`actual`) |"


def table_rows() -> dict[str, tuple[str, str]]:
    """family -> (transcripts cell, recorded differences cell), read from the README table."""
    text = open(README, encoding="utf-8").read()
    lines = text[text.index(HEADER):].splitlines()[2:]
    rows = {}
    for line in lines:
        if not line.startswith("| `"):
            break
        # cells are separated by " | "; an escaped "\|" inside a cell is text (gemma4, granite)
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        rows[cells[0].strip("`")] = (cells[2], cells[3])
    return rows


def expected_cells(name: str) -> tuple[str, str]:
    family = examples.load_family(name)
    differing = [t.id for t in family.transcripts if t.actual is not None]
    return str(len(family.transcripts)), ", ".join(f"`{i}`" for i in differing) or "none"


def test_every_family_has_a_row_with_its_current_counts():
    rows = table_rows()
    assert sorted(rows) == examples.list_families()
    stale = {name: (rows[name], expected_cells(name)) for name in rows if rows[name] != expected_cells(name)}
    assert not stale, f"examples/README.md family table (README cells, library): {stale}"
