"""The side-by-side check (`playground.reference`): transformers' parser fed the same chunks as ours."""

import json

import pytest

from parsing.streams import tokenish_chunks
from playground import reference
from playground.reference import reference_check
from playground.session import SKELETON_TEMPLATE, Run, parse_run, template_to_text

TPL = template_to_text(SKELETON_TEMPLATE)
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
OUT = 'Hmm.\n</think>\nSure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call><|im_end|>'


def test_a_disagreement_is_reported():
    run = Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(OUT)), template_text=TPL)
    view = parse_run(run)
    view.message = dict(view.message, content="tampered")
    chk = reference_check(run, view)
    assert not chk["agree"] and "message differs" in chk["differences"][0]


def _catastrophic_run():
    spec = json.loads(TPL)
    spec["fields"]["reasoning_content"] = {"open": "<think>", "close_pattern": "(a|aa)+$"}
    out = "<think>\n" + "a" * 40 + "b</think>"
    return Run(prefix="<|im_start|>assistant\n", chunks=tuple(tokenish_chunks(out)), template_text=json.dumps(spec))


def test_reference_check_skips_quickly_when_our_parse_timed_out():
    import time

    run = _catastrophic_run()
    view = parse_run(run)
    assert any(e.get("timeout") for e in view.errors)
    t0 = time.monotonic()
    chk = reference_check(run, view)
    assert time.monotonic() - t0 < 1.0
    assert chk["skipped"] and not chk["agree"] and not chk["differences"]


@pytest.mark.slow
def test_reference_check_runs_transformers_in_a_worker_killed_at_its_deadline():
    import time

    from playground.render import check_html
    from playground.session import ParseView

    reference.warm_up()
    ok = Run(prefix=PREFIX, chunks=tuple(tokenish_chunks(OUT)), template_text=TPL)
    assert reference_check(ok, parse_run(ok), budget=60)["agree"]  # workers up and answering
    kills = reference.pool().kills
    run = _catastrophic_run()
    t0 = time.monotonic()
    chk = reference_check(run, ParseView(final=True), budget=1.0)  # a view without our timeout: the reference runs
    took = time.monotonic() - t0
    assert took < 1.0 + 10, took  # the deadline, then the kill (slack for a loaded machine)
    assert chk["skipped"] == ("reference check skipped: the transformers parser exceeded this server's time "
                              "limit for it (1 s, --reference-budget) on this template")
    assert not chk["differences"] and chk["ref_error"] is None
    html_ = check_html(chk)
    assert "time limit for it (1 s, --reference-budget)" in html_
    assert "Traceback" not in html_ and "differs" not in html_
    assert reference.pool().kills == kills + 1  # the stuck worker was killed, a fresh one took its place
    # a public visitor cannot set the server's flags: the note says how to run the check without the limit
    public_chk = reference_check(run, ParseView(final=True), budget=1.0, public=True)
    assert public_chk["skipped"] == (
        "reference check skipped: the transformers parser exceeded this server's time limit for it (1 s) on this "
        "template. To compare them, start the playground on your own machine (`python app.py`: no per-request limit "
        "there)")
    assert reference_check(ok, parse_run(ok), budget=60)["agree"]


def test_reference_tag_patterns_cannot_pin_a_core():
    """Issue #10 item 1: the transformers check ran a catastrophic xml-inline tag_pattern with no limit."""
    import time

    spec = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n", "fields": {
        "args": {"open": "<x>", "close": "</x>", "content": "xml-inline", "content_args": {
            "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
            "value_parser": {"name": "xml-inline", "args": {"tag_pattern": "(?P<key>k)(?P<value>(a|aa)+z)"}}}},
        "content": {"close": "<|im_end|>"}}}
    run = Run(prefix="", chunks=("<x><p>k" + "a" * 60 + "yz</p></x>done<|im_end|>",), template_text=json.dumps(spec))
    view = parse_run(run)
    assert view.errors and view.errors[0]["timeout"]  # ours: a region error naming the nested pattern
    assert "value_parser.args.tag_pattern" in view.errors[0]["message"]
    assert view.message == {"role": "assistant", "content": "done"}
    from playground.session import ParseView

    t0 = time.monotonic()
    chk = reference_check(run, ParseView(final=True, message=view.message), budget=1.5)
    assert time.monotonic() - t0 < 1.5 + 10  # the deadline, then the kill (slack for a loaded machine)
    assert "exceeded this server's time limit for it (1.5 s, --reference-budget)" in chk["skipped"]


@pytest.mark.parametrize("family, head, section, end", [
    ("nemotron", "", '<TOOLCALL>[{"name": "%s", "arguments": {%s}}]</TOOLCALL>', "<|eot_id|>"),
    ("hunyuan_a13b", "<think>\nTools.\n</think>\n<answer>\n",
     '<tool_calls>[{"name": "%s", "arguments": {%s}}]</tool_calls>', "\n</answer><|eos|>"),
])
def test_a_second_tool_call_section_leaves_the_first_close_event_alone(family, head, section, end):
    """Trial 13 F7: the live preview appended a second close's value to the list the first close event held, so the
    event log showed ``[first, [second]]`` for the first close and the check said the parsers differ (they do
    not: a non-repeating field's second value replaces the first, in both)."""
    import examples

    fam = examples.load_family(family)
    tpl = json.dumps(fam.template)
    out = head + section % ("get_time", "") + section % ("get_weather", '"city": "P"') + end
    prefix = fam.prefixes["tools"]
    run = Run(prefix=prefix, chunks=tuple(tokenish_chunks(out)), template_text=tpl)
    view = parse_run(run)
    closes = [e["value"] for e in view.events if e["type"] == "region_close" and e["field"] == "tool_calls"]
    first = [{"type": "function", "function": {"name": "get_time", "arguments": {}}}]
    second = [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "P"}}}]
    assert closes == [first, second]
    assert view.message["tool_calls"] == second
    preview = view.preview.value()
    assert preview["tool_calls"] == second  # the parser's rule: the second value replaces the first
    chk = reference_check(run, view)
    assert chk["agree"] and not chk["differences"], chk
