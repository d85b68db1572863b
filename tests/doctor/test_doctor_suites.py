"""The JSONL suite format (load, save, append, export) and running suites one-shot and streamed."""

import json

import pytest

import parsing
from parsing.doctor.suites import (Case, SuiteFormatError, append_case, dumps_suite, export_suite, load_suite,
                                   loads_suite, run_suite, save_suite, suite_path_for)

from doctor_templates import CHATML_PROMPT, CLEAN, GUIDE

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}</tool_call>'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def good_cases():
    return [
        Case(CHATML_PROMPT, "Hello there.<|im_end|>", {"role": "assistant", "content": "Hello there."}, name="plain"),
        Case(CHATML_PROMPT + "<think>\n", "Weather?\n</think>\n\nOn it." + CALL + "\n",
             {"role": "assistant", "reasoning_content": "Weather?", "content": "On it.", "tool_calls": [
                 {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]},
             tools=TOOLS, name="tools typed"),
    ]


def test_save_load_round_trip_keeps_unicode_newlines_and_tools(tmp_path):
    cases = good_cases() + [Case("", "Ünïcode ✓\n<|im_end|>", {"role": "assistant", "content": "Ünïcode ✓"})]
    path = save_suite(tmp_path / "s.cases.jsonl", cases)
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) == 3 and "✓" in text
    loaded = load_suite(path)
    assert [c.to_json() for c in loaded] == [c.to_json() for c in cases]
    assert [c.line for c in loaded] == [1, 2, 3]
    assert loaded[1].tools == TOOLS and loaded[2].tools is None and "tools" not in json.loads(text.splitlines()[2])


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
def test_a_case_holding_a_character_other_readers_break_lines_at_round_trips(tmp_path, char):
    """JSON allows U+2028, U+2029 and U+0085 raw in strings; ``str.splitlines`` (and JavaScript) break lines there."""
    case = Case(CHATML_PROMPT, f"a{char}b<|im_end|>", {"role": "assistant", "content": f"a{char}b"}, name=f"x{char}y")
    path = save_suite(tmp_path / "s.cases.jsonl", good_cases() + [case])
    text = path.read_text(encoding="utf-8")
    assert char not in text and len(text.splitlines()) == 3  # written escaped: one line for every reader
    loaded = load_suite(path)
    assert loaded[2].to_json() == case.to_json() and loaded[2].output == f"a{char}b<|im_end|>"
    # the same case written raw by another tool (valid JSON, valid JSON Lines) loads too
    raw = json.dumps(case.to_json(), ensure_ascii=False)
    assert char in raw
    assert [c.to_json() for c in loads_suite(raw + "\r\n" + raw + "\n")] == [case.to_json()] * 2


def test_append_case_creates_and_extends_a_file(tmp_path):
    path = tmp_path / "x.cases.jsonl"
    append_case(path, good_cases()[0])
    path.write_text(path.read_text() + "\n\n", encoding="utf-8")  # blank lines are allowed
    append_case(path, good_cases()[1].to_json())
    assert [c.name for c in load_suite(path)] == ["plain", "tools typed"]
    path.write_text(path.read_text().rstrip("\n"), encoding="utf-8")  # no final newline
    append_case(path, good_cases()[0])
    assert len(load_suite(path)) == 3


@pytest.mark.parametrize("line, message", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"prefix": "", "output": ""}', "exactly one of 'expected'"),
    ('{"prefix": "", "output": "", "expected": {}, "expected_error": "ValueError"}', "exactly one of 'expected'"),
    ('{"prefix": "", "output": "", "expected_error": "Value Error"}', "'expected_error' must be an exception class"),
    ('{"prefix": "", "output": "", "expected_error": 1}', "'expected_error' must be an exception class"),
    ('{"prefix": "", "output": "", "expected": {}, "error_contains": "x"}', "'error_contains' needs"),
    ('{"prefix": "", "output": "", "expected_error": "ValueError", "error_contains": 1}', "must be a string"),
    ('{"prefix": "", "output": "", "expected": {}, "expect": {}}', "unknown key(s) expect"),
    ('{"prefix": null, "output": "", "expected": {}}', "'prefix' must be a string"),
    ('{"prefix": "", "output": "", "expected": "hi"}', "'expected' must be a message object"),
    ('{"prefix": "", "output": "", "expected": {}, "tools": {"a": 1}}', "'tools' must be a list"),
])
def test_bad_lines_name_the_line(line, message):
    with pytest.raises(SuiteFormatError) as info:
        loads_suite('{"prefix": "", "output": "x", "expected": {"content": "x"}}\n\n' + line + "\n", "s.jsonl")
    assert info.value.line == 3 and message in str(info.value) and str(info.value).startswith("s.jsonl:3:")


def test_non_utf8_file_is_a_format_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"prefix": "\xff"}\n')
    with pytest.raises(SuiteFormatError, match="UTF-8"):
        load_suite(path)


def test_export_writes_template_and_suite_side_by_side(tmp_path):
    tpath, cpath = export_suite(CLEAN, good_cases(), tmp_path, name="smol")
    assert tpath.name == "smol.json" and cpath.name == "smol.cases.jsonl" and cpath.parent == tpath.parent
    assert json.loads(tpath.read_text()) == CLEAN
    assert suite_path_for(tpath) == cpath
    assert len(load_suite(cpath)) == 2
    assert dumps_suite([]) == ""


def test_run_suite_passes_one_shot_and_chunked():
    report = run_suite(CLEAN, good_cases(), chunkings_per_case=4, seed=1)
    assert report.passed, report.format(verbose=True)
    assert all(len(r.runs) == 5 for r in report.results)
    assert report.summary() == "2 cases: 2 passed, 0 failed"


def test_run_suite_reports_diffs_and_errors():
    cases = good_cases()
    cases.append(Case(CHATML_PROMPT, "Answer." + CALL + "\n", {"role": "assistant", "content": "Answer.",
                      "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {
                          "city": "Paris", "days": "3"}}}]}, name="classic overwrite"))
    cases.append(Case(CHATML_PROMPT, '<tool_call>{"name": ', {"role": "assistant"}, name="cut"))
    report = run_suite(GUIDE, cases, chunkings_per_case=2)
    assert not report.passed
    # The guide's template loses "On it." in case 2 too: the newline after its tool call reopens content.
    assert [r.passed for r in report.results] == [True, False, False, False]
    overwrite = report.results[2]
    assert all(not r.passed for r in overwrite.runs)  # one-shot and every chunking lose the content
    assert [d.format() for d in overwrite.runs[0].diff] == ['content: missing (expected "Answer.")']
    cut = report.results[3].runs[0]
    assert cut.error.startswith("ValueError") and cut.message is None
    text = report.format()
    assert "FAIL  #3 classic overwrite" in text and "content: missing" in text and "error: ValueError" in text
    assert text.endswith("4 cases: 1 passed, 3 failed")
    d = report.to_dict()
    assert d["passed"] is False and d["cases"][2]["runs"][0]["diff"][0]["path"] == "content"


def test_types_matter_in_the_comparison():
    case = Case("", '<tool_call>{"name": "f", "arguments": {"n": 1}}</tool_call>',
                {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f",
                                                                                        "arguments": {"n": 1.0}}}]})
    report = run_suite(CLEAN, [case], chunkings_per_case=0)
    [entry] = report.results[0].runs[0].diff
    assert entry.path == "tool_calls[0].function.arguments.n" and entry.expected == 1.0 and entry.actual == 1


def test_run_suite_rejects_invalid_template():
    with pytest.raises(parsing.TemplateError):
        run_suite({"fields": {}}, good_cases())


CUT = '<tool_call>{"name": "get_weather", "argu'


def test_a_case_can_expect_an_error_one_shot_and_streamed(tmp_path):
    """A cut tool call must raise: a case states the exception class (a base class matches, as in ``except``) and
    optionally a substring of its message; the wrong class, a missing substring or a parsed message fail."""
    path = save_suite(tmp_path / "errors.cases.jsonl", [
        Case(CHATML_PROMPT, CUT, None, expected_error="ValueError", name="cut"),
        Case(CHATML_PROMPT, CUT, None, expected_error="Exception", error_contains="JSON", name="base class"),
        Case(CHATML_PROMPT, CUT, None, expected_error="KeyError", name="wrong class"),
        Case(CHATML_PROMPT, CUT, None, expected_error="ValueError", error_contains="no such text", name="wrong text"),
        Case(CHATML_PROMPT, "Fine.<|im_end|>", None, expected_error="ValueError", name="parses"),
    ])
    assert '"expected_error": "ValueError", "error_contains": "no such text"}' in path.read_text()
    cases = load_suite(path)
    assert [(c.expected, c.expected_error, c.error_contains) for c in cases][1] == (None, "Exception", "JSON")
    report = run_suite(CLEAN, cases, chunkings_per_case=3, seed=2)
    assert [r.passed for r in report.results] == [True, True, False, False, False]
    assert all(len(r.runs) == 4 and all(run.error.startswith("ValueError") for run in r.runs)
               for r in report.results[:2])
    for res in report.results[2:]:
        assert all(not run.passed for run in res.runs)  # one-shot and every chunking
    parses = report.results[4].runs[0]
    assert parses.error is None and parses.message == {"role": "assistant", "content": "Fine."}
    assert parses.diff[0].expected == {"error": "ValueError"} and parses.diff[0].actual == parses.message
    text = report.format()
    assert "expected KeyError, got error ValueError: " in text
    assert "expected ValueError containing 'no such text', got error ValueError: " in text
    assert "expected ValueError, got the message {'role': 'assistant', 'content': 'Fine.'}" in text
    assert text.endswith("5 cases: 2 passed, 3 failed")


def test_every_library_family_passes_its_own_suite_error_outcomes_included():
    """`examples.Family.suite_cases` writes every transcript as a case (error outcomes as ``expected_error``),
    and each family's suite passes against its own template, one shot and streamed."""
    import examples

    expected_errors = 0
    for name in examples.list_families():
        family = examples.load_family(name)
        cases = family.suite_cases()
        assert [c["name"] for c in cases] == [t.id for t in family.transcripts]
        for case, t in zip(cases, family.transcripts):
            assert ("expected_error" in case) == ("error" in t.outcome) != ("expected" in case)
        expected_errors += sum("expected_error" in c for c in cases)
        report = run_suite(family.template, loads_suite(dumps_suite(cases)), chunkings_per_case=1, seed=3)
        assert report.passed, f"{name}: " + report.format()
    assert expected_errors >= 20  # the library's cut tool calls and known-limit errors are in the suites


def test_the_case_keys_are_documented_the_same_everywhere():
    """docs/test-suites.md, the module docstring and `check --help` name the keys the loader accepts."""
    import pathlib
    import re

    from parsing.__main__ import build_parser
    from parsing.doctor import suites

    root = pathlib.Path(__file__).resolve().parents[2]
    documented = set(re.findall(r"^\| `(\w+)` \|", (root / "docs/test-suites.md").read_text(), re.M))
    assert documented == suites._ALLOWED
    check = build_parser()._subparsers._group_actions[0].choices["check"]
    helptext = check.format_help()
    assert all(key in helptext for key in suites._ALLOWED), helptext
    assert all(f"``{key}``" in suites.__doc__ for key in ("expected", "expected_error", "error_contains"))
