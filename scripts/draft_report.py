"""Print the drafter's agreement with the library templates, one row per family chat template (Markdown).

    .venv/bin/python scripts/draft_report.py            # the README table
    .venv/bin/python scripts/draft_report.py --details  # also every transcript that differs, and how

For each chat template of each library family, `parsing.doctor.draft` drafts a response template from
the chat template alone; the family's transcripts rendered by that chat template are parsed with the draft
and compared with the library template's outcome (`examples.draft_agreement`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import examples  # noqa: E402
from examples.draft_agreement import family_agreement  # noqa: E402


def _markers(draft) -> str:
    f = draft.format
    parts = [f"anchor `{_short(f.get('start_anchor'))}`", f"end `{_short(f.get('end_of_turn'))}`"]
    r = f.get("reasoning")
    if r:
        parts.append(f"reasoning `{_short(r.get('open') or '^')}`…`{_short(r.get('close'))}` ({r.get('mode')})")
    tc = f.get("tool_calls")
    parts.append(f"calls: {tc}" + (" (parallel)" if f.get("parallel_calls") else "") if tc else "no calls")
    return "; ".join(parts)


def _short(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= 48 else text[:47] + "…"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--details", action="store_true", help="list every differing transcript")
    args = ap.parse_args(argv)
    total = agreed = better = 0
    print("| family | chat template | markers found | agreement | better |")
    print("|---|---|---|---|---|")
    details = []
    for name in examples.list_families():
        for row in family_agreement(name):
            if row.error:
                print(f"| `{name}` | `{row.chat_template}` | cannot be analysed: {row.error} | – | – |")
                continue
            n, k = len(row.results), row.agreed
            b = sum(r.better for r in row.results)
            total, agreed, better = total + n, agreed + k, better + b
            print(f"| `{name}` | `{row.chat_template}` | {_markers(row.draft)} | {k}/{n} | {b} |")
            for r in row.results:
                if not r.agrees:
                    details.append(f"- `{name}/{r.transcript_id}`{' (better)' if r.better else ''}: library "
                                   f"{json.dumps(r.library, ensure_ascii=False)[:160]} / draft "
                                   f"{json.dumps(r.got, ensure_ascii=False)[:160]}")
    print(f"\nOverall: {agreed}/{total} transcripts agree ({agreed / max(total, 1):.1%}); "
          f"{better} of the differences are better results.")
    if args.details:
        print("\n" + "\n".join(details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
