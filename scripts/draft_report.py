"""Print the drafter's agreement with the library templates, one row per family chat template (Markdown).

    .venv/bin/python scripts/draft_report.py            # the README table
    .venv/bin/python scripts/draft_report.py --update   # rewrite it in README.md between its markers
    .venv/bin/python scripts/draft_report.py --details  # also every transcript that differs, and how

For each chat template of each library family, `parsing.doctor.draft` drafts a response template from
the chat template alone; the family's transcripts rendered by that chat template are parsed with the draft
and compared with the library template's outcome (`examples.draft_agreement`); the draft is also run through
the probe suite (`parsing.doctor.probe`) with the prefixes that chat template renders.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import examples  # noqa: E402
from examples.draft_agreement import family_agreement  # noqa: E402


def _markers(draft, table: bool = True) -> str:
    """The markers a draft found, in one line (``table``: escaped for a Markdown table cell)."""
    f = draft.format

    def short(value):
        return _short(value, table)

    parts = [f"anchor `{short(f.get('start_anchor'))}`", f"end `{short(f.get('end_of_turn'))}`"]
    r = f.get("reasoning")
    if r:
        parts.append(f"reasoning `{short(r.get('open') or '^')}`…`{short(r.get('close'))}` ({r.get('mode')})")
    tc = f.get("tool_calls")
    parts.append(f"calls: {tc}" + (" (parallel)" if f.get("parallel_calls") else "") if tc else "no calls")
    return "; ".join(parts)


def _short(value, table: bool = True) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    if table:
        text = text.replace("|", "\\|")
    return text if len(text) <= 48 else text[:47] + "…"


BEGIN, END = "<!-- draft-table -->", "<!-- /draft-table -->"
README = Path(__file__).resolve().parent.parent / "README.md"


def table(details: list | None = None) -> str:
    """The Markdown table (and its summary line); differing transcripts are appended to ``details``."""
    from parsing.doctor.probe import probe

    total = agreed = better = probes_passed = probes_run = 0
    rows = ["| family | chat template | markers found | transcripts agreeing | better | probes passed |",
            "|---|---|---|---|---|---|"]
    for name in examples.list_families():
        fam = examples.load_family(name)
        for row in family_agreement(name):
            if row.error:
                rows.append(f"| `{name}` | `{row.chat_template}` | cannot be analysed: {row.error} | – | – | – |")
                continue
            n, k = len(row.results), row.agreed
            b = sum(r.better for r in row.results)
            prefixes = {p: t for p, t in fam.prefixes.items()
                        if fam.conversation(p)["chat_template"] == row.chat_template}
            passed, run = probe(row.draft.template, prefixes=prefixes).score
            total, agreed, better = total + n, agreed + k, better + b
            probes_passed, probes_run = probes_passed + passed, probes_run + run
            rows.append(f"| `{name}` | `{row.chat_template}` | {_markers(row.draft)} | {k}/{n} | {b} | "
                        f"{passed}/{run} |")
            for r in row.results:
                if not r.agrees and details is not None:
                    details.append(f"- `{name}/{r.transcript_id}`{' (better)' if r.better else ''}: library "
                                   f"{json.dumps(r.library, ensure_ascii=False)[:160]} / draft "
                                   f"{json.dumps(r.got, ensure_ascii=False)[:160]}")
    rows.append("")
    rows.append(f"Overall: {agreed}/{total} transcripts agree ({agreed / max(total, 1):.1%}); {better} of the "
                f"differences are better results; the drafts pass {probes_passed}/{probes_run} probes.")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--details", action="store_true", help="list every differing transcript")
    ap.add_argument("--update", action="store_true", help="rewrite the table in README.md")
    args = ap.parse_args(argv)
    details: list = []
    text = table(details)
    if args.update:
        readme = README.read_text(encoding="utf-8")
        start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
        README.write_text(readme[:start] + "\n" + text + "\n" + readme[end:], encoding="utf-8")
    print(text)
    if args.details:
        print("\n" + "\n".join(details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
