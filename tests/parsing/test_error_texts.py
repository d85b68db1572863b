"""Errors: for every error the transformers reference raises, ours has its exact type (or a subclass) and its text.

Code written against `transformers.utils.chat_parsing` matches on exception messages; `parsing` is a drop-in
only if those are the same to the letter. Runs over every fixture the reference rejects (template faults,
output faults, the missing prefix), one-shot and streamed, over the loader cases of `test_template_errors`
(including those where the reference raises TypeError), and over calls after `finalize`.
"""

from __future__ import annotations

import copy

import pytest

import differential as d
from parsing.streams import feed_all, fixed_chunks

CASES = d.load_cases()


def _raised(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return exc
    return None


def _one_shot(impl, case):
    return lambda: impl.parse_response(case["output"], copy.deepcopy(case["template"]), prefix=case["prefix"],
                                       tools=d.resolve_tools(case.get("tools")))


def _streamed(impl, case, size):
    def run():
        parser = impl.ResponseParser(copy.deepcopy(case["template"]), case["prefix"],
                                     tools=d.resolve_tools(case.get("tools")))
        feed_all(parser, fixed_chunks(case["output"], size))
    return run


def _assert_same(expected, got, label):
    assert expected is not None, f"{label}: the reference accepts this"
    assert got is not None, f"{label}: ours raised nothing; the reference raised {type(expected).__name__}: {expected}"
    assert isinstance(got, type(expected)), f"{label}: ours {type(got).__name__}, reference {type(expected).__name__}"
    assert str(got) == str(expected), f"{label}:\n  ours:      {got}\n  reference: {expected}"


ERROR_CASES = [c for c in CASES if _raised(_one_shot(d.ref, c)) is not None]


def test_the_corpus_has_errors_of_every_kind():
    kinds = {type(_raised(_one_shot(d.ref, c))).__name__ for c in ERROR_CASES}
    assert {"ValueError", "KeyError"} <= kinds and len(ERROR_CASES) >= 50


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c["id"] for c in ERROR_CASES])
def test_error_type_and_text_match_the_reference(case):
    _assert_same(_raised(_one_shot(d.ref, case)), _raised(_one_shot(d.ours, case)), "one-shot")
    for size in (1, 4, max(1, len(case["output"]))):
        _assert_same(_raised(_streamed(d.ref, case, size)), _raised(_streamed(d.ours, case, size)),
                     f"streamed in {size}-character chunks")


def _loader_cases():
    if d.SELF_CHECK:
        return []
    from test_template_errors import REJECTED

    return [(tid, template) for tid, template, _paths, _pattern in REJECTED]


@pytest.mark.parametrize("tid,template", _loader_cases(), ids=[c[0] for c in _loader_cases()])
def test_loader_errors_match_the_reference(tid, template):
    expected = _raised(lambda: d.ref.ResponseParser(copy.deepcopy(template), ""))
    _assert_same(expected, _raised(lambda: d.ours.ResponseParser(copy.deepcopy(template), "")), "ResponseParser")
    _assert_same(expected, _raised(lambda: d.ours.parse_response("x", copy.deepcopy(template), prefix="")),
                 "parse_response")


@pytest.mark.parametrize("call", ["feed", "finalize"])
def test_calls_after_finalize_match_the_reference(call):
    template = {"start_anchor": "A", "fields": {"content": {}}}
    errors = []
    for impl in (d.ref, d.ours):
        parser = impl.ResponseParser(template, "")
        parser.finalize()
        errors.append(_raised(lambda: parser.feed("x") if call == "feed" else parser.finalize()))
    _assert_same(*errors, f"{call} after finalize")


@pytest.mark.parametrize("prefix", [3, 0, b"<|im_start|>assistant\n", ["a"], 2.5], ids=repr)
def test_a_prefix_that_is_not_text_fails_as_in_the_reference(prefix):
    """A fresh-user trial passed ``prefix=3``: ours raised AttributeError ('int' object has no attribute 'rfind')
    where the reference raises the regex module's TypeError."""
    template = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>"}}}
    for label, make in (("ResponseParser", lambda impl: impl.ResponseParser(copy.deepcopy(template), prefix)),
                        ("parse_response", lambda impl: impl.parse_response("x", copy.deepcopy(template),
                                                                             prefix=prefix))):
        expected, got = _raised(lambda: make(d.ref)), _raised(lambda: make(d.ours))
        if expected is None:  # a falsy prefix (0) is no prefix to both
            assert got is None, f"{label}: ours raised {got!r}; the reference accepts it"
        else:
            _assert_same(expected, got, label)
