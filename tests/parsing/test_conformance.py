"""Corpus x chunkings: our engine against the transformers 5.23 reference (see differential.py).

Every case runs with the whole output as one chunk, fixed chunk sizes 1-8, 13, 31 and 30 seeded
random chunkings (with occasional empty feeds). Per chunking: final message (or exception category)
and merged event list must equal the reference's for the same chunks, or the reference's one-shot
result where its own streaming result diverges from it (those cases carry a `divergence` reason in
the corpus and a dedicated test in test_divergences.py).
"""

from __future__ import annotations

import pytest

import differential as d

CASES = d.load_cases()
CONTENT_PARSERS = {"text", "int", "float", "bool", "json", "xml-inline", "kv-lines"}
TEMPLATE_KEYS = {"version", "defaults", "fields", "start_anchor", "start_anchor_pattern"}
FIELD_KEYS = {"open", "open_pattern", "close", "close_pattern", "content", "content_args", "repeats", "join",
              "optional", "transform", "transform_each"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_all_chunkings(case):
    runner = d.CaseRunner(case["id"], case["template"], case["prefix"], case["output"], case.get("tools"),
                          case.get("post", ()))
    # The corpus says what it exercises: error cases must really raise that category in the reference.
    if "expect_error" in case:
        assert runner.ref_oneshot.error_cat == case["expect_error"], runner.ref_oneshot.describe()
    else:
        assert runner.ref_oneshot.error is None, runner.ref_oneshot.describe()
    report = runner.run_all(d.chunkings(case["output"], case["id"]))
    assert not report.mismatches, d.format_report(report)
    diverged = bool(report.divergences)
    assert diverged == bool(case.get("divergence")), (
        f"reference streaming diverges from its one-shot result in {report.divergences[:8]}; "
        "document it with a `divergence` reason and a test in test_divergences.py"
        if diverged else "case documents a divergence that the reference no longer shows"
    )
    if case.get("post"):
        assert runner.ref_oneshot_stream.post == {k: "RuntimeError" for k in case["post"]}


def test_corpus_size_and_coverage():
    assert len(CASES) >= 40
    for case in CASES:
        assert {"id", "template", "prefix", "output", "covers"} <= set(case), case.get("id")
    valid = [c for c in CASES if not c.get("expect_error") or not c["id"].startswith("tpl_")]
    templates = [c["template"] for c in valid if isinstance(c["template"], dict)]
    used_top = set().union(*(t.keys() for t in templates))
    assert TEMPLATE_KEYS <= used_top, TEMPLATE_KEYS - used_top
    fields = [f for t in templates for f in t.get("fields", {}).values() if isinstance(f, dict)]
    used_field_keys = set().union(*(f.keys() for f in fields))
    assert FIELD_KEYS <= used_field_keys, FIELD_KEYS - used_field_keys
    used_parsers = {f.get("content", "text") for f in fields}
    assert CONTENT_PARSERS <= used_parsers, CONTENT_PARSERS - used_parsers
    assert any(isinstance(c.get("tools"), str) for c in CASES), "needs Python-function tools"
    assert any(c["prefix"] is None for c in CASES)
    assert {"KeyError", "ValueError"} <= {c.get("expect_error") for c in CASES}
    assert any(c.get("post") for c in CASES)
    assert sum(1 for c in CASES if c["id"].startswith("tpl_")) >= 25


def test_chunkings_cover_required_sizes():
    labels = [label for label, _ in d.chunkings("abcdefghij" * 5, "x")]
    for size in (1, 2, 3, 4, 5, 6, 7, 8, 13, 31):
        assert f"size{size}" in labels
    assert sum(label.startswith("random") for label in labels) == 30
    for label, chunks in d.chunkings("abcdefghij" * 5, "x"):
        assert "".join(chunks) == "abcdefghij" * 5, label


REUSABLE = [c for c in CASES if not c["id"].startswith("tpl_") and c["prefix"] is not None]


@pytest.mark.skipif(d.SELF_CHECK, reason="needs our parsing.load_template")
@pytest.mark.parametrize("case", REUSABLE, ids=[c["id"] for c in REUSABLE])
def test_compiled_template_reuse_and_no_mutation(case):
    """One compiled template (and one template dict) shared by several parsers: no state leaks between
    runs (defaults are copied per parser) and neither the dict nor the tools are mutated."""
    import copy

    import parsing

    template = copy.deepcopy(case["template"])
    pristine = copy.deepcopy(template)
    compiled = parsing.load_template(template)
    tools = d.resolve_tools(case.get("tools"))
    tools_pristine = copy.deepcopy(tools) if not isinstance(case.get("tools"), str) else None
    for label, chunks in d.chunkings(case["output"], case["id"], n_random=2)[:5]:
        expected = d.run_stream(d.ref, case["template"], case["prefix"], chunks, case.get("tools"))
        for spec in (compiled, template):
            got = d.Outcome()
            try:
                parser = parsing.ResponseParser(spec, case["prefix"], tools=tools)
                events = list(parser.initial_events)
                for chunk in chunks:
                    events += parser.feed(chunk)
                got.message, final = parser.finalize()
                got.events = events + final
            except Exception as exc:  # noqa: BLE001
                got.error = exc
            if not case.get("divergence"):
                assert d.same_outcome(expected, got), f"{label}: {d.diff_text(expected, got)}"
    assert d.strict_equal(template, pristine), "template dict mutated"
    if tools_pristine is not None:
        assert d.strict_equal(tools, tools_pristine), "tools mutated"


OPTION_CASES = [c for c in CASES if not c["id"].startswith("tpl_") and c["prefix"] is not None]


@pytest.mark.skipif(d.SELF_CHECK, reason="spans/recover are options of our engine only")
@pytest.mark.parametrize("case", OPTION_CASES, ids=[c["id"] for c in OPTION_CASES])
def test_spans_and_recover_do_not_change_results(case):
    """`spans=True` only adds start/end to events (region_chunk text == stream_text[start:end]);
    `recover=True` changes nothing where the reference raises nothing."""
    import parsing

    for label, chunks in d.chunkings(case["output"], case["id"], n_random=1)[:4] + d.chunkings(case["output"], case["id"], n_random=1)[-1:]:
        plain = d.run_stream(d.ours, case["template"], case["prefix"], chunks, case.get("tools"))
        for opts in ({"spans": True}, {"recover": True}):
            if opts.get("recover") and plain.error is not None:
                continue
            got = d.Outcome()
            try:
                p = parsing.ResponseParser(case["template"], case["prefix"], tools=d.resolve_tools(case.get("tools")), **opts)
                events = list(p.initial_events)
                for chunk in chunks:
                    events += p.feed(chunk)
                got.message, final = p.finalize()
                got.events = events + final
            except Exception as exc:  # noqa: BLE001
                got.error = exc
            if opts.get("spans") and got.events is not None:
                for ev in got.events:
                    assert {"start", "end"} <= set(ev), f"{label}: {ev}"
                    if ev["type"] == "region_chunk":
                        assert p.stream_text[ev["start"]:ev["end"]] == ev["text"], f"{label}: {ev}"
                got.events = [{k: v for k, v in ev.items() if k not in ("start", "end")} for ev in got.events]
            assert d.same_outcome(plain, got), f"{opts} {label}: {d.diff_text(plain, got)}"
            if got.events is not None:
                assert len(got.events) == len(plain.events), f"{opts} {label}: event splitting changed"
