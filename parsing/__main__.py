"""Command line for model authors' CI: ``python -m parsing check|probe|lint TEMPLATE ...``.

- ``check TEMPLATE CASES.jsonl`` runs a test suite (the JSONL format of `parsing.doctor.suites`, described in
  docs/test-suites.md) against a response template, each case in one shot and with random chunkings. A case is
  one JSON object a line: ``prefix``, ``output``, then ``expected`` (the message) or ``expected_error`` (an
  exception class name such as ``"ValueError"``; a subclass passes too) with an optional ``error_contains``
  (a substring of its message); optional ``tools`` and ``name``.
- ``probe TEMPLATE [--prefixes PREFIXES.json]`` runs the probe suite (`parsing.doctor.probe`): outputs built
  from the template's own delimiters for each way real model output goes wrong (cut by the token limit, a
  close tag inside a JSON string, a marker named in the answer, ...), one shot and chunked.
- ``lint TEMPLATE`` prints the lint warnings (`parsing.doctor.lint`).
- ``draft CHAT_TEMPLATE.jinja`` drafts a response template from a chat template and prints it as JSON
  (`parsing.doctor.draft_cli`; exit 0, or 2 with the reason when the chat template cannot be analysed).

Each prints a readable report (``--json`` for JSON) and exits:

- 0: every case passed / no probe failed (known limits of the template language do not count) / no lint
  finding of severity "error" or "warning" (infos do not count unless ``--strict``);
- 1: a case failed / a probe failed / a lint warning;
- 2: an input cannot be used (unreadable, not JSON, an invalid template, a malformed case or prefixes
  file, no cases), or bad arguments.

TEMPLATE is a template ``.json`` file, a ``tokenizer_config.json`` (its
``response_template`` key), or a saved tokenizer folder containing one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from parsing.errors import JSON_TOO_DEEP, json_error_text

EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


class _Unusable(Exception):
    """An input the command cannot use; the message is printed as is."""


def _read_template(arg: str) -> dict:
    """The template dict a TEMPLATE argument names; raises _Unusable with the reason.

    A folder, or a file named ``tokenizer_config.json``, is a saved tokenizer: its template is the config's
    ``response_template`` key, read by `parsing.hf.load_template_from_pretrained` (never the config itself).
    """
    from parsing.hf import load_template_from_pretrained

    path = Path(arg)
    if path.is_dir() or path.name == "tokenizer_config.json":
        folder = path if path.is_dir() else path.parent
        config = folder / "tokenizer_config.json"
        try:
            data = load_template_from_pretrained(folder)
        except (OSError, UnicodeDecodeError) as exc:
            raise _Unusable(f"cannot read template {config}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise _Unusable(f"template {config} is not JSON: {json_error_text(exc)}") from None
        except ValueError as exc:
            raise _Unusable(f"{config}: {exc}") from None
        if data is None:
            raise _Unusable(f"tokenizer_config.json in {folder} has no response_template (save one with "
                            "parsing.hf.save_template_to_tokenizer, or pass the template's own .json file)")
        return data
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unusable(f"cannot read template {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Unusable(f"template {path} is not JSON: {json_error_text(exc)}") from None
    except RecursionError:
        raise _Unusable(f"template {path} is JSON {JSON_TOO_DEEP}") from None
    if isinstance(data, dict) and "fields" not in data and "response_template" in data:
        data = data["response_template"]  # a tokenizer config saved under another name
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


def _load(arg: str):
    """(spec, compiled template) from a TEMPLATE argument; raises _Unusable with the reason."""
    import parsing

    spec = _read_template(arg)
    try:
        return spec, parsing.load_template(spec)
    except parsing.TemplateError as exc:
        raise _Unusable(f"invalid template {arg}: {exc.describe()}") from None


def _read_prefixes(arg: str) -> dict:
    try:
        data = json.loads(Path(arg).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unusable(f"cannot read prefixes {arg}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _Unusable(f"prefixes {arg} is not JSON: {json_error_text(exc)}") from None
    except RecursionError:
        raise _Unusable(f"prefixes {arg} is JSON {JSON_TOO_DEEP}") from None
    if not isinstance(data, dict) or not data or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in data.items()):
        raise _Unusable(f"prefixes {arg} must be a non-empty JSON object of name -> prompt text")
    return data


def _read_tools(arg: str) -> list:
    try:
        data = json.loads(Path(arg).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Unusable(f"cannot read tools {arg}: {exc}") from None
    except RecursionError:
        raise _Unusable(f"tools {arg} is JSON {JSON_TOO_DEEP}") from None
    if not isinstance(data, list) or not all(isinstance(t, dict) for t in data):
        raise _Unusable(f"tools {arg} must be a JSON list of tool schemas")
    return data


def _probe(args: argparse.Namespace) -> int:
    from parsing.doctor.probe import probe

    try:
        spec, _ = _load(args.template)
        prefixes = _read_prefixes(args.prefixes) if args.prefixes else None
        tools = _read_tools(args.tools) if args.tools else None
    except _Unusable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    report = probe(spec, prefixes=prefixes, tools=tools, reference=args.reference)
    if not report.results:
        reasons = sorted({c.reason for c in report.classes if c.reason})
        print(f"error: the probe could not write any output for {args.template}: " + "; ".join(reasons),
              file=sys.stderr)
        return EXIT_UNUSABLE
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(f"{args.template}" + (f" with prefixes {args.prefixes}" if args.prefixes else ""))
        print(report.format(verbose=args.verbose))
    return EXIT_OK if report.passed else EXIT_FAILED


def _lint(args: argparse.Namespace) -> int:
    from parsing.doctor.lint import lint

    try:
        spec, _ = _load(args.template)
    except _Unusable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    report = lint(spec)
    counted = [w for w in report.warnings if args.strict or w.severity != "info"]
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(f"{args.template}")
        print(report.format())
    return EXIT_FAILED if counted else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands ``check``, ``probe``, ``lint``, ``draft``)."""
    parser = argparse.ArgumentParser(prog="python -m parsing", description="Response-template tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run a JSONL test suite against a template (exit 0 pass, 1 fail, "
                                         "2 unusable input)",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("template", help="template .json, tokenizer_config.json, or a saved tokenizer folder")
    check.add_argument("cases", help="cases .jsonl: one {prefix, output, expected | expected_error + "
                                        "error_contains?, tools?, name?} object per line")
    check.add_argument("--chunkings", type=int, default=3, metavar="N",
                       help="random chunkings per case besides the one-shot parse (default 3)")
    check.add_argument("--seed", type=int, default=0, help="seed for the chunkings (default 0)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--verbose", action="store_true", help="show every failing chunking, not only the first")
    check.add_argument("--lint", action="store_true", help="also print lint warnings (exit status unchanged)")
    check.set_defaults(run=_check)

    pr = sub.add_parser("probe", help="probe a template with outputs that break deployed parsers (exit 0 no "
                                      "failure, 1 failures, 2 unusable input)",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pr.add_argument("template", help="template .json, tokenizer_config.json, or a saved tokenizer folder")
    pr.add_argument("--prefixes", metavar="PREFIXES.json",
                    help="prompt prefixes as the chat template renders them: a JSON object name -> text "
                         "(examples/families/*/prefixes.json)")
    pr.add_argument("--tools", metavar="TOOLS.json", help="tool schemas the probe calls (a JSON list)")
    pr.add_argument("--reference", action="store_true",
                    help="also parse every probe with the transformers reference parser (slower)")
    pr.add_argument("--json", action="store_true", help="print the report as JSON")
    pr.add_argument("--verbose", action="store_true", help="list passing probes too")
    pr.set_defaults(run=_probe)

    li = sub.add_parser("lint", help="lint a template (exit 0 clean, 1 warnings, 2 unusable input)",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    li.add_argument("template", help="template .json, tokenizer_config.json, or a saved tokenizer folder")
    li.add_argument("--strict", action="store_true", help="count findings of severity info too")
    li.add_argument("--json", action="store_true", help="print the report as JSON")
    li.set_defaults(run=_lint)
    from .doctor.draft_cli import add_subcommand as add_draft

    add_draft(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    # A case, template or output may hold a lone surrogate (a stream cut inside an emoji's pair, written as
    # "\\ud83d" in JSON): the report writes it as that escape instead of dying on it half-way.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    if args.command == "check" and args.chunkings < 0:
        print("error: --chunkings must be 0 or more", file=sys.stderr)
        return EXIT_UNUSABLE
    return args.run(args)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The reader left early (`... | head`): not an error of ours. Point stdout at devnull so the
        # interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
