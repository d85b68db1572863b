"""Write a library family's transcripts as a test suite for ``python -m parsing check``.

    .venv/bin/python scripts/family_cases.py qwen3 > qwen3.cases.jsonl
    .venv/bin/python -m parsing check my_template.json qwen3.cases.jsonl

A family's ``transcripts.jsonl`` names its prompt prefixes and records known limits, so it is not itself a suite
file; this writes one case per transcript (`examples.Family.suite_cases`): ``expected`` where its outcome is a
message, ``expected_error`` where it is an error (a tool call cut off inside its JSON must raise). Exit 0, or 2
for an unknown family.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import examples  # noqa: E402
from parsing.doctor.suites import dumps_suite  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: family_cases.py FAMILY  (writes JSONL cases to stdout)", file=sys.stderr)
        return 2
    name = args[0]
    if name not in examples.list_families():
        print(f"error: no family {name!r}; the library has: {', '.join(examples.list_families())}", file=sys.stderr)
        return 2
    sys.stdout.write(dumps_suite(examples.load_family(name).suite_cases()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
