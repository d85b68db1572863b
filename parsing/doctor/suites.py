"""Test suites for response templates: a JSONL file of cases, and running it one-shot and streamed.

File format (``*.cases.jsonl``, UTF-8, one JSON object per line, blank lines
ignored), as issue #6 defines it:

    {"prefix": "<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n",
     "output": "Hello!<|im_end|>",
     "tools": [ ...tool schemas, optional... ],
     "expected": {"role": "assistant", "content": "Hello!"}}

(each object on one line). ``prefix`` is the prompt before generation (a
string, ``""`` to opt out), ``output`` the raw generation with special tokens,
``tools`` an optional list of tool schemas in the ``apply_chat_template``
format, ``expected`` the message `parse_response` must return. An optional
``name`` (string) labels the case in reports. Other keys are rejected so that
typos (``"expect"``) do not silently pass.

A case whose right outcome is an error (a tool call cut off inside its JSON
must raise, as transformers' `parse_response` does) states the exception
instead of ``expected``:

    {"prefix": "...", "output": "<tool_call>{\"name\": \"f\", \"argum",
     "expected_error": "ValueError", "error_contains": "JSON"}

``expected_error`` is an exception class name; the parse must raise that class
or a subclass of it (as ``pytest.raises`` matches), e.g. ``"ValueError"`` also
accepts a ``json.JSONDecodeError``. The optional ``error_contains`` is a
substring the exception's message must contain. Exactly one of ``expected`` /
``expected_error`` is given.

A suite passes when every case gives exactly ``expected`` (types included,
see `diff`), or raises its ``expected_error``, both in one shot and for every
random chunking.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import JSON_TOO_DEEP, json_error_text
from ..streams import boundaries, chunkings, parse_stream
from ..template import load_template
from .diff import DiffEntry, diff_values, format_diff

__all__ = [
    "Case",
    "SuiteFormatError",
    "RunResult",
    "CaseResult",
    "SuiteReport",
    "parse_case",
    "loads_suite",
    "load_suite",
    "dumps_case",
    "dumps_suite",
    "save_suite",
    "append_case",
    "suite_path_for",
    "export_suite",
    "raised",
    "run_case",
    "run_suite",
]

_REQUIRED = ("prefix", "output")
_ALLOWED = {"prefix", "output", "tools", "expected", "expected_error", "error_contains", "name"}


class SuiteFormatError(ValueError):
    """A cases file (or one case) that does not follow the JSONL format.

    Attributes:
        message: what is wrong.
        line: 1-based line number in the file, or None for a single case not read from a file.
        source: the file path, or None.
    """

    def __init__(self, message: str, line: int | None = None, source: str | None = None):
        self.message, self.line, self.source = message, line, source
        where = ""
        if source is not None:
            where += f"{source}:"
        if line is not None:
            where += f"{line}:"
        super().__init__(f"{where} {message}".strip() if where else message)


@dataclass
class Case:
    """One test case: the prompt prefix, the raw generation, optional tools and the expected outcome: the
    message (``expected``), or an exception class name (``expected_error``, with an optional substring of its
    message, ``error_contains``).

    Raises:
        ValueError: both or neither of ``expected`` / ``expected_error``; ``error_contains`` without an error.
    """

    prefix: str
    output: str
    expected: dict | None
    tools: list | None = None
    name: str | None = None
    line: int | None = None  # where it was read from, for reports; not written back
    expected_error: str | None = None
    error_contains: str | None = None

    def __post_init__(self):
        if (self.expected is None) == (self.expected_error is None):
            raise ValueError("a case has exactly one of expected / expected_error")
        if self.error_contains is not None and self.expected_error is None:
            raise ValueError("error_contains needs expected_error")

    @property
    def expected_outcome(self) -> str:
        """The expected error in words (``ValueError containing 'JSON'``); for reports of error cases."""
        text = str(self.expected_error)
        if self.error_contains is not None:
            text += f" containing {self.error_contains!r}"
        return text

    @property
    def label(self) -> str:
        """The name, or ``line N`` / ``case`` when unnamed."""
        return self.name or (f"line {self.line}" if self.line is not None else "case")

    def to_json(self) -> dict:
        """The case as the JSON object of one line (keys in the documented order; `tools`/`name` only if set)."""
        obj: dict[str, Any] = {}
        if self.name is not None:
            obj["name"] = self.name
        obj["prefix"] = self.prefix
        obj["output"] = self.output
        if self.tools is not None:
            obj["tools"] = self.tools
        if self.expected_error is not None:
            obj["expected_error"] = self.expected_error
            if self.error_contains is not None:
                obj["error_contains"] = self.error_contains
        else:
            obj["expected"] = self.expected
        return obj


def parse_case(obj: Any, line: int | None = None, source: str | None = None) -> Case:
    """Validate one decoded JSON object and make a `Case` of it.

    Raises:
        SuiteFormatError: not an object, a missing or unknown key, or a value of the wrong type.
    """
    def fail(msg: str) -> SuiteFormatError:
        return SuiteFormatError(msg, line, source)

    if not isinstance(obj, dict):
        raise fail(f"a case must be a JSON object, got {type(obj).__name__}")
    missing = [k for k in _REQUIRED if k not in obj]
    if missing:
        raise fail(f"missing key(s) {', '.join(missing)} (a case has prefix, output, expected or expected_error, "
                   "optional tools)")
    unknown = sorted(set(obj) - _ALLOWED)
    if unknown:
        hint = ""
        if {"id", "covers"} & set(unknown):  # a library family's transcripts.jsonl (named prefixes, known limits)
            hint = ("; this looks like a family's transcripts.jsonl: write it as a suite with "
                    "scripts/family_cases.py FAMILY")
        raise fail(f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_ALLOWED))}){hint}")
    for key in ("prefix", "output"):
        if not isinstance(obj[key], str):
            raise fail(f"'{key}' must be a string, got {type(obj[key]).__name__}")
    if ("expected" in obj) == ("expected_error" in obj):
        raise fail("a case has exactly one of 'expected' (the message) or 'expected_error' (an exception class "
                   "name such as \"ValueError\")")
    if "expected" in obj and not isinstance(obj["expected"], dict):
        raise fail(f"'expected' must be a message object, got {type(obj['expected']).__name__}")
    error = obj.get("expected_error")
    if "expected_error" in obj and not (isinstance(error, str) and error.isidentifier()):
        raise fail(f"'expected_error' must be an exception class name such as \"ValueError\", got {error!r}")
    if "error_contains" in obj:
        if "expected_error" not in obj:
            raise fail("'error_contains' needs 'expected_error'")
        if not isinstance(obj["error_contains"], str):
            raise fail("'error_contains' must be a string")
    tools = obj.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise fail("'tools' must be a list of tool schema objects")
    name = obj.get("name")
    if name is not None and not isinstance(name, str):
        raise fail("'name' must be a string")
    return Case(prefix=obj["prefix"], output=obj["output"], expected=obj.get("expected"), tools=tools, name=name,
                line=line, expected_error=error, error_contains=obj.get("error_contains"))


def loads_suite(text: str, source: str | None = None) -> list[Case]:
    """Parse JSONL text into cases (blank lines skipped). Lines end at ``\n`` only, as JSON Lines defines them (a
    ``\r`` before it is JSON whitespace): U+2028, U+2029 or U+0085 are text, which JSON allows raw inside strings.

    Raises:
        SuiteFormatError: a line that is not JSON or not a valid case, naming the line.
    """
    cases = []
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise SuiteFormatError(f"not valid JSON: {json_error_text(exc, number)}", number, source) from None
        except RecursionError:  # json's reader recurses once per nesting level
            raise SuiteFormatError(JSON_TOO_DEEP, number, source) from None
        cases.append(parse_case(obj, number, source))
    return cases


def load_suite(path: str | os.PathLike) -> list[Case]:
    """Read a ``.jsonl`` cases file.

    Raises:
        OSError: the file cannot be read.
        SuiteFormatError: bad content (also for a file that is not UTF-8).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteFormatError(f"not UTF-8 text ({exc.reason})", None, str(path)) from None
    return loads_suite(text, str(path))


# Characters ``json.dumps(ensure_ascii=False)`` leaves raw that other line readers break at, with their JSON escapes.
_LINE_ENDS_ESCAPED = (("\u2028", "\\u2028"), ("\u2029", "\\u2029"), ("\x85", "\\u0085"))


def dumps_case(case: Case | dict) -> str:
    """One case as one JSONL line (no trailing newline); non-ASCII kept as is, newlines escaped by JSON, and so are
    the characters other readers take for line ends (``str.splitlines`` and JavaScript: U+2028, U+2029, U+0085)."""
    obj = case.to_json() if isinstance(case, Case) else parse_case(case).to_json()
    line = json.dumps(obj, ensure_ascii=False)
    for char, escaped in _LINE_ENDS_ESCAPED:  # (json.dumps writes them only inside strings)
        if char in line:
            line = line.replace(char, escaped)
    return line


def dumps_suite(cases: Iterable[Case | dict]) -> str:
    """All cases as JSONL text, one line each, ending with a newline (empty text for no cases)."""
    lines = [dumps_case(c) for c in cases]
    return "".join(line + "\n" for line in lines)


def save_suite(path: str | os.PathLike, cases: Iterable[Case | dict]) -> Path:
    """Write `cases` to `path` (replacing it); returns the path."""
    path = Path(path)
    path.write_text(dumps_suite(cases), encoding="utf-8")
    return path


def append_case(path: str | os.PathLike, case: Case | dict) -> Path:
    """Append one case to a cases file (created if missing); returns the path."""
    path = Path(path)
    prefix = ""
    if path.exists() and path.stat().st_size:
        with open(path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                prefix = "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(prefix + dumps_case(case) + "\n")
    return path


def suite_path_for(template_path: str | os.PathLike) -> Path:
    """Where a template's suite lives: ``model.json`` -> ``model.cases.jsonl`` in the same folder."""
    template_path = Path(template_path)
    stem = template_path.name[:-5] if template_path.name.endswith(".json") else template_path.name
    return template_path.with_name(stem + ".cases.jsonl")


def export_suite(template: dict | str, cases: Iterable[Case | dict], directory: str | os.PathLike,
                 name: str = "response_template") -> tuple[Path, Path]:
    """Write the template and its suite next to each other: ``<name>.json`` and ``<name>.cases.jsonl``.

    Args:
        template: the template dict, or its JSON text (written as given).
        cases: the cases.
        directory: an existing folder.
        name: the file stem.

    Returns:
        ``(template_path, cases_path)``.
    """
    directory = Path(directory)
    template_path = directory / f"{name}.json"
    text = template if isinstance(template, str) else json.dumps(template, indent=2, ensure_ascii=False) + "\n"
    template_path.write_text(text, encoding="utf-8")
    return template_path, save_suite(suite_path_for(template_path), cases)


# --------------------------------------------------------------------------- running


@dataclass
class RunResult:
    """One parse of a case: ``mode`` is ``"one-shot"`` or ``"chunked"``; ``cuts`` the chunk boundaries
    (character offsets into the output) for a chunked run; ``message``/``error`` what the parser gave;
    ``diff`` the differences to the expected outcome: to the expected message, or one ``changed`` entry at the
    root for an error where a message was expected, or for the wrong outcome where an error was expected
    (``expected`` then ``{"error": "ValueError containing '...'"}``). A run that raised the case's
    ``expected_error`` has ``error`` set and an empty ``diff``: it passed."""

    mode: str
    cuts: list[int]
    message: dict | None
    error: str | None
    diff: list[DiffEntry]

    @property
    def passed(self) -> bool:
        """True if the parse gave exactly the expected outcome (message or error)."""
        return not self.diff

    def to_dict(self) -> dict:
        """JSON-able form: ``{"mode", "cuts", "passed", "message", "error", "diff": [...]}``."""
        return {"mode": self.mode, "cuts": self.cuts, "passed": self.passed, "message": self.message,
                "error": self.error, "diff": [d.to_dict() for d in self.diff]}


@dataclass
class CaseResult:
    """All runs of one case (the one-shot run first)."""

    case: Case
    index: int
    runs: list[RunResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True if every run passed."""
        return all(r.passed for r in self.runs)

    @property
    def first_failure(self) -> RunResult | None:
        """The first failing run, or None."""
        return next((r for r in self.runs if not r.passed), None)

    def to_dict(self) -> dict:
        """JSON-able form: ``{"index", "name", "line", "passed", "runs": [...]}``."""
        return {"index": self.index, "name": self.case.name, "line": self.case.line, "passed": self.passed,
                "runs": [r.to_dict() for r in self.runs]}


@dataclass
class SuiteReport:
    """The results of `run_suite`, in case order."""

    results: list[CaseResult]

    @property
    def passed(self) -> bool:
        """True if every case passed (an empty suite passes)."""
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> list[CaseResult]:
        """The failing cases."""
        return [r for r in self.results if not r.passed]

    def summary(self) -> str:
        """``"N cases: P passed, F failed"``."""
        n, f = len(self.results), len(self.failures)
        return f"{n} case{'s' if n != 1 else ''}: {n - f} passed, {f} failed"

    def format(self, verbose: bool = False) -> str:
        """A readable report: one PASS/FAIL line per case, the diff of the first failing run of each failed
        case (all failing runs with `verbose`), then the summary."""
        lines = []
        for res in self.results:
            lines.append(f"{'PASS' if res.passed else 'FAIL'}  #{res.index + 1} {res.case.label}")
            failing = [r for r in res.runs if not r.passed]
            for run in failing if verbose else failing[:1]:
                how = "one-shot" if run.mode == "one-shot" else f"chunked at {run.cuts}"
                lines.append(f"    {how}:")
                if res.case.expected_error is not None:
                    got = f"error {run.error}" if run.error is not None else f"the message {run.message}"
                    lines.append(f"      expected {res.case.expected_outcome}, got {got}")
                elif run.error is not None:
                    lines.append(f"      error: {run.error}")
                else:
                    lines.append(format_diff(run.diff, "      "))
            if len(failing) > 1 and not verbose:
                lines.append(f"    ({len(failing) - 1} more failing run(s) with other chunkings)")
        lines.append(self.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-able form: ``{"passed", "summary", "cases": [...]}``."""
        return {"passed": self.passed, "summary": self.summary(), "cases": [r.to_dict() for r in self.results]}


def raised(outcome: Any, expected_error: str, contains: str | None = None) -> bool:
    """True if a `parsing.streams.Outcome` raised `expected_error` (that class or a subclass, by name) and its
    message contains `contains` (when given)."""
    if outcome.error is None or expected_error not in outcome.error_types:
        return False
    return contains is None or contains in outcome.error


def _run(template: Any, case: Case, chunks: list[str], mode: str) -> RunResult:
    outcome = parse_stream(template, case.prefix, chunks, tools=case.tools)
    if case.expected_error is not None:
        diff = [] if raised(outcome, case.expected_error, case.error_contains) else [
            DiffEntry("", "changed", expected={"error": case.expected_outcome},
                      actual={"error": outcome.error} if outcome.error is not None else outcome.message)]
        return RunResult(mode, boundaries(chunks) if mode != "one-shot" else [], outcome.message, outcome.error,
                         diff)
    if outcome.error is not None:
        diff = [DiffEntry("", "changed", expected=case.expected, actual={"error": outcome.error})]
        return RunResult(mode, boundaries(chunks) if mode != "one-shot" else [], None, outcome.error, diff)
    return RunResult(mode, boundaries(chunks) if mode != "one-shot" else [], outcome.message, None,
                     diff_values(case.expected, outcome.message))


def run_case(template: Any, case: Case, *, chunkings_per_case: int = 3, seed: int = 0, index: int = 0
             ) -> CaseResult:
    """Parse one case in one shot and with `chunkings_per_case` random chunkings.

    The chunkings are seeded with ``(seed, index)`` so a report can be reproduced. Parse errors are results,
    not exceptions (a pass where the case states that ``expected_error``).
    """
    result = CaseResult(case, index)
    result.runs.append(_run(template, case, [case.output], "one-shot"))
    for chunks in chunkings(case.output, chunkings_per_case, seed=seed * 100003 + index):
        result.runs.append(_run(template, case, chunks, "chunked"))
    return result


def run_suite(template: Any, cases: Iterable[Case | dict], *, chunkings_per_case: int = 3, seed: int = 0
              ) -> SuiteReport:
    """Run every case against `template` (one-shot and streamed with random chunking).

    Args:
        template: anything `parsing.load_template` takes; it is loaded once.
        cases: `Case` objects or case dicts in the file format.
        chunkings_per_case: random chunkings per case, besides the one-shot parse (0 = one-shot only).
        seed: seeds the chunkings.

    Raises:
        parsing.TemplateError: the template does not load.
        SuiteFormatError: a case dict that is not valid.
    """
    compiled = load_template(template)
    results = []
    for index, case in enumerate(cases):
        if not isinstance(case, Case):
            case = parse_case(case)
        results.append(run_case(compiled, case, chunkings_per_case=chunkings_per_case, seed=seed, index=index))
    return SuiteReport(results)
