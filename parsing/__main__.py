"""Command line: ``python -m parsing check TEMPLATE CASES.jsonl``, for model authors' CI.

Runs a test suite (the JSONL format of `parsing.doctor.suites`) against a
response template, each case in one shot and with random chunkings, prints a
readable report and exits:

- 0: every case passed;
- 1: at least one case failed;
- 2: the template or the cases file cannot be used (unreadable, not JSON, an
  invalid template, a malformed case, no cases), or bad arguments.

TEMPLATE is a template ``.json`` file, a ``tokenizer_config.json`` (its
``response_template`` key), or a saved tokenizer folder containing one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


class _Unusable(Exception):
    """An input the command cannot use; the message is printed as is."""


def _read_template(arg: str) -> dict:
    path = Path(arg)
    if path.is_dir():
        path = path / "tokenizer_config.json"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unusable(f"cannot read template {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Unusable(f"template {path} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    if isinstance(data, dict) and "fields" not in data and "response_template" in data:
        data = data["response_template"]
        if data is None:
            raise _Unusable(f"{path} has no response_template")
    return data


def _check(args: argparse.Namespace) -> int:
    import parsing
    from parsing.doctor.lint import lint
    from parsing.doctor.suites import SuiteFormatError, load_suite, run_suite

    try:
        spec = _read_template(args.template)
        template = parsing.load_template(spec)
    except _Unusable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except parsing.TemplateError as exc:
        print(f"error: invalid template {args.template}: {exc.describe()}", file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        cases = load_suite(args.cases)
    except SuiteFormatError as exc:
        print(f"error: bad cases file: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except OSError as exc:
        print(f"error: cannot read cases file {args.cases}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    if not cases:
        print(f"error: {args.cases} has no cases", file=sys.stderr)
        return EXIT_UNUSABLE
    report = run_suite(template, cases, chunkings_per_case=args.chunkings, seed=args.seed)
    if args.json:
        out = report.to_dict()
        if args.lint:
            out["lint"] = lint(template).to_dict()
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        print(f"{args.template} against {args.cases} (one-shot + {args.chunkings} random chunkings, "
              f"seed {args.seed})")
        print(report.format(verbose=args.verbose))
        if args.lint:
            print("\nLint:\n" + lint(template).format())
    return EXIT_OK if report.passed else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommand ``check``)."""
    parser = argparse.ArgumentParser(prog="python -m parsing", description="Response-template tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run a JSONL test suite against a template (exit 0 pass, 1 fail, "
                                         "2 unusable input)",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("template", help="template .json, tokenizer_config.json, or a saved tokenizer folder")
    check.add_argument("cases", help="cases .jsonl: one {prefix, output, tools?, expected} object per line")
    check.add_argument("--chunkings", type=int, default=3, metavar="N",
                       help="random chunkings per case besides the one-shot parse (default 3)")
    check.add_argument("--seed", type=int, default=0, help="seed for the chunkings (default 0)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--verbose", action="store_true", help="show every failing chunking, not only the first")
    check.add_argument("--lint", action="store_true", help="also print lint warnings (exit status unchanged)")
    check.set_defaults(run=_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "check" and args.chunkings < 0:
        print("error: --chunkings must be 0 or more", file=sys.stderr)
        return EXIT_UNUSABLE
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
