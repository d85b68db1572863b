"""`probe(..., reference=True)` on failures only the transformers reference has: no change written for our
engine's faults is offered for them (trial 11: it was, marked "checked", and applying it looped), and the
reference's streaming flaw is named when it is the cause (`parsing.doctor.reference_flaws`)."""

import json

import pytest

import parsing
from parsing.doctor.probe import REFERENCE_ONLY, apply_fix, probe
from parsing.doctor.reference_flaws import early_commit

# DeepSeek-V3.2's DSML tool calls (the format of SGLang's and vLLM's deepseekv32 parsers), written the way a model
# author did in trial 11: the tool-call close has an optional tail, `(?:</｜DSML｜function_calls>)?`.
CALLS_END = "</｜DSML｜function_calls>"
DSML = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<｜Assistant｜>",
    "fields": {
        "reasoning_content": {"open_pattern": "^\\s*(?:<think>|(?=</think>))",
                              "close_pattern": "(?:</think>\\s*|(?=<｜end▁of▁sentence｜>))\\s*"},
        "tool_calls": {
            "open_pattern": "\\s*(?:<｜DSML｜function_calls>\\s*)?<｜DSML｜invoke name=\"(?P<name>[^\"]+)\">",
            "close_pattern": "</｜DSML｜invoke>\\s*(?:</｜DSML｜function_calls>)?",
            "content": "xml-inline",
            "content_args": {"tag_pattern": "<｜DSML｜parameter name=\"(?P<key>[^\"]+)\" string=\"(?:true|false)\">"
                                            "(?P<value>.*?)</｜DSML｜parameter>"},
            "repeats": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<｜end▁of▁sentence｜>", "repeats": True, "join": ""},
    },
}


@pytest.fixture(scope="module")
def report():
    return probe(DSML, reference=True)


def _reference_stream(template, prefix, chunks):
    from transformers.utils import chat_parsing

    parser = chat_parsing.ResponseParser(template, prefix, tools=None)
    for chunk in chunks:
        parser.feed(chunk)
    return parser.finalize()[0]


def test_reference_only_failures_get_no_change_written_for_our_engine(report):
    only_ref = [r for r in report.results if r.status == "fail" and r.reference_only]
    assert len(only_ref) >= 5, report.format()
    for r in only_ref:
        assert r.detail.startswith(REFERENCE_ONLY) and r.chunking.startswith("transformers reference")
        # the class's change did not make the reference pass (checked with it), so it is not offered
        assert r.fix_verified is not True and r.suggestion == "", (r.case.id, r.suggestion)
        shown = r.to_dict()
        assert shown["reference_only"] is True and shown["suggestion"] == "" and "fix" not in shown
    # the report prints no "suggested change" in the block of a reference-only failure
    blocks = report.format().split("       [")
    ref_blocks = [b for b in blocks if REFERENCE_ONLY in b]
    assert len(ref_blocks) == len(only_ref)
    assert not any("suggested change" in b for b in ref_blocks)
    # a failure of our engine keeps its class's change, checked
    ours = [r for r in report.results if r.status == "fail" and not r.reference_only]
    assert ours and all(r.suggestion == r.case.suggestion for r in ours)
    assert any(r.fix_verified is True and "[checked: the probe passes with it]" in report.format() for r in ours)


def test_the_old_class_change_really_does_not_fix_the_reference(report):
    """What the report used to offer for d.calls_after_reasoning ("closes swallow the whitespace") leaves the
    reference failure as it was: not offering it is right."""
    r = {x.case.id: x for x in report.results}["d.calls_after_reasoning"]
    assert r.reference_only and r.case.fix
    again = {x.case.id: x for x in probe(apply_fix(DSML, r.case.fix), reference=True).results}
    assert again["d.calls_after_reasoning"].status == "fail" and again["d.calls_after_reasoning"].reference_only


def test_the_reference_flaw_is_named_and_is_real(report):
    r = {x.case.id: x for x in report.results}["d.calls_after_reasoning"]
    assert "commits fields.tool_calls.close_pattern" in r.detail
    assert f"{json.dumps(CALLS_END, ensure_ascii=False)} goes to the next region" in r.detail
    assert "no optional or repeated tail" in r.detail
    # the claim, checked on the reference itself: cut the output after the call close and one more character
    output = r.case.output
    k = output.index("</｜DSML｜invoke>") + len("</｜DSML｜invoke>\n<")
    assert output[k - 1:k + len(CALLS_END) - 1] == CALLS_END
    cut = _reference_stream(DSML, r.case.prefix, [output[:k], output[k:]])
    whole = _reference_stream(DSML, r.case.prefix, [output])
    assert CALLS_END in cut.get("content", "") and CALLS_END not in whole.get("content", "")


def test_early_commit_on_the_documented_optional_tail():
    """The spec's example of the flaw (tests/parsing/test_divergences.py, regex_close_optional_tail)."""
    template = {"start_anchor": "<|a|>", "fields": {"content": {}, "x": {"open": "<x>",
                                                                           "close_pattern": r"</x>(?:\s*</wrap>)?"}}}
    compiled = parsing.load_template(template)
    output, chunks = "hi<x>1</x>\n</wrap>tail", ["hi<x>1</x>\n", "</wrap>tail"]
    found = early_commit(compiled, output, chunks, {"content": "</wrap>tail", "x": "1"}, {"content": "tail", "x": "1"})
    assert found is not None and found.key == "fields.x.close_pattern"
    assert (found.seen, found.committed, found.full) == ("</x>\n", "</x>", "</x>\n</wrap>")
    # not the cause when the wrong message does not hold the tail; never with one chunk (nothing is cut)
    assert early_commit(compiled, output, chunks, {"content": "tail", "x": "2"}, {"content": "tail", "x": "1"}) is None
    assert early_commit(compiled, output, [output], {"content": "</wrap>tail", "x": "1"},
                        {"content": "tail", "x": "1"}) is None
    # a close without a tail is never committed early
    plain = parsing.load_template({"start_anchor": "<|a|>", "fields": {"content": {}, "x": {
        "open": "<x>", "close_pattern": r"</x>\s*"}}})
    assert early_commit(plain, output, chunks, {"content": "</wrap>tail", "x": "1"},
                        {"content": "tail", "x": "1"}) is None
