"""Print the README's table of probe results per library family (`python -m parsing probe` on each).

    .venv/bin/python scripts/probe_table.py            # the markdown table
    .venv/bin/python scripts/probe_table.py --update   # rewrite it in README.md between its markers, and
                                                       # examples/probe_scores.json (the playground's picker)

Each row: probes passed / run, then per class (see `parsing.doctor.probe.CLASSES`) "pass", "limit" (a known
limit of the template language, named in the family's NOTES.md), "fail" or "n/a", then the limited probes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- probe-table -->", "<!-- /probe-table -->"


def table(report_for=None) -> str:
    """The markdown table; ``report_for(name) -> ProbeReport`` (default: probe the family with its prefixes)."""
    import examples
    from parsing.doctor.probe import CLASSES, probe

    if report_for is None:
        def report_for(name):
            fam = examples.load_family(name)
            return probe(fam.template, prefixes=fam.prefixes)

    head = "| family | probes passed | " + " | ".join(CLASSES) + " | known limits |"
    rule = "|---|---|" + "---|" * len(CLASSES) + "---|"
    rows = [head, rule]
    for name in examples.list_families():
        report = report_for(name)
        passed, run = report.score
        cells = [c.status for c in report.classes]
        limits = sorted({r.case.id.split("[")[0] for r in report.results if r.status == "limit"})
        rows.append(f"| `{name}` | {passed}/{run} | " + " | ".join(cells) + " | "
                    + (", ".join(f"`{x}`" for x in limits) or "none") + " |")
    return "\n".join(rows)


def scores(report_for=None) -> dict:
    """Family -> ``{"passed", "run", "failed", "limits": [probe ids], "classes": {letter: status}}``: what
    ``examples/probe_scores.json`` holds for the playground's library picker."""
    import examples
    from parsing.doctor.probe import probe

    if report_for is None:
        def report_for(name):
            fam = examples.load_family(name)
            return probe(fam.template, prefixes=fam.prefixes)

    out = {}
    for name in examples.list_families():
        report = report_for(name)
        counts = report.counts()
        out[name] = {"passed": counts["pass"], "run": sum(counts.values()), "failed": counts["fail"],
                     "limits": sorted({r.case.id.split("[")[0] for r in report.results if r.status == "limit"}),
                     "classes": {c.cls: c.status for c in report.classes}}
    return out


def scores_text(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def readme_block(text: str) -> str:
    return f"{BEGIN}\n{text}\n{END}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="rewrite the table in README.md")
    args = parser.parse_args()
    text = table()
    if not args.update:
        print(text)
        return 0
    readme = ROOT / "README.md"
    content = readme.read_text(encoding="utf-8")
    start, end = content.index(BEGIN), content.index(END) + len(END)
    readme.write_text(content[:start] + readme_block(text) + content[end:], encoding="utf-8")
    (ROOT / "examples" / "probe_scores.json").write_text(scores_text(scores()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
