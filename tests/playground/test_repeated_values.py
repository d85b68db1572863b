"""A template that repeats a value thousands of times (trial 7, finding a) never has its message serialized whole.

``{"transform": {"a": ["{content}"] * 5000}}`` on a 50 KB paste: the parser's message holds 5,000 references to one
string (small in memory) whose JSON is 250 MB; the page's Message view, parsed turn, event log and memory
accounting each wrote it out (+1.7 GB server peak for one request). Sizes are now measured with a limit
(`playground.jsonsize`), and a public server shows a note instead of a message over `Limits.max_message_chars`.
"""

from __future__ import annotations

import json
import random

import pytest

from playground import guard, render, ui, views
from playground.jsonsize import json_head, json_size
from playground.limits import Limits, RequestBudget
from playground.session import NBYTES_MESSAGE_CHARS, LiveParse, Run, parse_run
from playground.state import Session

REPEATS = 5000
AMPLIFIER = {"start_anchor": "S", "fields": {"content": {"transform": {"a": ["{content}"] * REPEATS}}}}
PASTE = "x" * 50_000  # the message's JSON: 5,000 x 50,002 characters = 250 MB


# ---------------------------------------------------------------- the measure


_ALPHABET = 'ab"\\\n\t\x01\x1f é€😀\ud800/'


def _random_value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 4 or r < 0.4:
        kind = rng.randrange(6)
        if kind == 0:
            return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12)))
        if kind == 1:
            return rng.randint(-10 ** 20, 10 ** 20)
        if kind == 2:
            return rng.choice([0.5, -1e300, float("nan"), float("inf"), -float("inf"), 1e-7, 3.0])
        if kind == 3:
            return rng.choice([True, False, None])
        if kind == 4:
            return range(rng.randint(0, 3))  # not JSON: goes through default=str
        return rng.choice([(), (1, "a"), {}, []])
    if r < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    keys = ["k", "", 'q"\n', rng.randint(-5, 5), True, False, None, 2.5, float("nan")]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_the_measure_agrees_with_json_dumps_on_random_values(ensure_ascii):
    rng = random.Random(20261201 + ensure_ascii)
    for _ in range(3000):
        value = _random_value(rng)
        if rng.random() < 0.2:
            value = [value, {"again": value}, value]  # shared values count each time, as json writes them
        text = json.dumps(value, ensure_ascii=ensure_ascii, default=str)
        assert json_size(value, ensure_ascii=ensure_ascii) == len(text)
        limit = rng.randint(0, len(text) + 3)
        size = json_size(value, limit, ensure_ascii=ensure_ascii)
        if len(text) <= limit:
            assert size == len(text)
        else:
            assert limit < size <= len(text)
        assert json_head(value, limit, ensure_ascii=ensure_ascii) == (text[:limit], len(text) <= limit)


class _CountingList(list):
    """A list that counts the items read from it."""

    read = 0

    def __iter__(self):
        for item in list.__iter__(self):
            _CountingList.read += 1
            yield item


def test_the_measure_stops_at_its_limit_however_large_the_expansion():
    # 10 million references to one 1,000-character string: 10 GB of JSON
    big = _CountingList(["x" * 1000] * 10_000_000)
    _CountingList.read = 0
    size = json_size({"a": big}, 1_000_000)
    assert 1_000_000 < size <= 1_000_000 + 1010
    assert _CountingList.read <= 1000  # about limit / 1,004 characters per item were read, not 10 million
    head, whole = json_head({"a": big}, 5000)
    assert not whole and head == '{"a": [' + ", ".join(['"' + "x" * 1000 + '"'] * 5)[:5000 - 7]
    # many small values: the walk still ends near the limit
    numbers = _CountingList([1] * 10_000_000)
    _CountingList.read = 0
    assert 300_000 < json_size([numbers], 300_000) <= 300_003
    assert _CountingList.read <= 100_001
    with pytest.raises(TypeError):
        json_size({(1, 2): 1}, 100)  # a key json refuses is refused the same way
    with pytest.raises(TypeError):
        json_size([object()], 100, default=None)


# ---------------------------------------------------------------- the parse and its views


def _amplified_view(limit: int | None):
    run = Run(prefix="S", chunks=(PASTE,), template_text=json.dumps(AMPLIFIER))
    return run, parse_run(run, budget=RequestBudget(None, None, limit))


def test_a_message_over_the_cap_is_dropped_and_measured_only_up_to_it():
    run, view = _amplified_view(2_000_000)
    assert view.final and view.message is None and not view.errors
    assert 2_000_000 < view.message_size <= 2_000_000 + len(PASTE) + 10 and view.message_limit == 2_000_000
    assert view.nbytes < 2 * len(run.text) + 2_000_000  # the events keep the value, counted as events
    drawn = render_all(view)
    assert drawn["message"].startswith("The parsed message is not shown: as JSON it is at least 2,0")
    assert "over this server's limit of 2,000,000" in drawn["message"] and "transform" in drawn["message"]
    assert drawn["turn"][0]["content"] == render.md_text(drawn["message"])
    assert "region_close" in drawn["events"] and len(drawn["events"]) < 20_000
    assert 'data-status="final" data-len="50000"' in drawn["timeline"]  # the timeline still shows the parse


def render_all(view) -> dict:
    from playground.streaming import draw

    d = draw(view)
    return {"message": d.message, "turn": d.turn, "events": d.events, "timeline": d.timeline}


def test_without_a_cap_the_message_is_kept_and_its_memory_is_counted_up_to_a_bound():
    small = Run(prefix="S", chunks=("hello",), template_text=json.dumps(AMPLIFIER))
    view = parse_run(small)
    assert view.message == {"content": {"a": ["hello"] * REPEATS}} and view.message_size is None
    assert view.nbytes >= len(json.dumps(view.message))
    _, big = _amplified_view(None)
    assert big.message == {"content": {"a": [PASTE] * REPEATS}}
    assert big.nbytes <= 2 * len(big.text) + NBYTES_MESSAGE_CHARS + 2 * len(PASTE) + 100_000


def test_a_live_preview_over_the_cap_is_a_note():
    from playground.streaming import draw

    live = LiveParse(json.dumps({"start_anchor": "S", "fields": {
        "r": {"open": "<r>", "close": "</r>", "transform": {"a": ["{content}"] * REPEATS}}, "content": {}}}), "S",
        budget=RequestBudget(None, None, 100_000))
    live.feed("<r>" + "y" * 1000 + "</r>and more")
    shown = draw(live.view(), preview=True)
    # the close's value was over the cap: the event keeps its head only, and the preview says so in its place
    assert shown.message["content"] == "and more" and "value not kept" in shown.message["r"], shown.message
    assert "at least 100," in shown.message["r"] and json_size(shown.message) < 1000
    live.feed(" text")
    live.finalize()
    assert live.message is None and live.message_size > 100_000


def test_the_page_says_the_message_is_too_large_and_sends_no_huge_answer(tiny_model_dir):
    before = guard.limits()
    guard.configure(Limits.public_space())
    try:
        demo = ui.build_ui(tiny_model_dir)
        paste_parse = next(fn.fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "paste_parse")
        template = json.dumps(AMPLIFIER)
        sess = Session(template)
        out = dict(zip([*views.NAMES, "session"], paste_parse(sess, PASTE, "S", "", template)))
    finally:
        guard.configure(before)
    sess = out.pop("session")
    status = out["status"]
    assert "too large to show" in status and "at least 2,0" in status and "2,000,000" in status, status
    assert "Traceback" not in status
    # the Message view is emptied and the note beside it says why, as words (it was a quoted JSON string in the view)
    assert out["message"] == {"__type__": "update", "value": None}
    note = out["message_note"]
    assert note.startswith('<div class="tl-warn" id="message-note-text">') and "2,000,000" in note
    assert render.escape("The parsed message is not shown: as JSON it is at least 2,0") in note
    # everything sent to the page together is a few hundred KB (the timeline shows the paste), not 250 MB
    assert json_size(out, 5_000_000) < 1_000_000
    assert "region_close" in out["events"]
    assert sess.view.message is None and sess.view.message_size > 2_000_000
    assert sess.check and sess.check.get("skipped") and "size limit" in sess.check["skipped"]
    assert "--" not in sess.check["skipped"] and "own machine" in sess.check["skipped"]  # a public visitor's words
    assert sess.nbytes < 10 * len(PASTE) + 2_000_000


def test_other_views_of_a_value_show_only_a_bounded_part_of_it():
    from playground import doctor_panel, inspector, probe_panel, remote_panel

    value = {"a": ["z" * 1000] * 1_000_000}  # 1 GB as JSON
    parity = remote_panel.parity_html([{"field": "content", "template": value, "server": "z", "verdict": "differs"}],
                                      "server", {})
    assert "… (longer)" in parity and len(parity) < 20_000
    assert len(inspector._value_html(value)) < 10_000 and "at least" in inspector._value_html(value)
    assert len(doctor_panel._json(value)) < 2_000 and len(probe_panel._show(value)) < 2_000
    events = render.events_html([{"type": "region_close", "field": "content", "value": value, "index": 0}])
    assert len(events) < 2_000 and render.escape('{"a": ["zzz') in events and "zzz…</td>" in events


def test_a_public_parse_counts_the_values_its_transforms_build():
    each = {"start_anchor": "S", "fields": {"content": {"content": "json", "transform_each": True,
                                                        "transform": {"a": ["{x}"] * REPEATS}}}}
    items = "[" + ",".join(['{"x":1}'] * 6000) + "]"  # 30 million values without a limit
    run = Run(prefix="S", chunks=(items,), template_text=json.dumps(each))
    public = Limits.public_space()
    view = parse_run(run, budget=public.budget())
    assert view.final and not view.cut and len(view.errors) == 1, view.errors
    error = view.errors[0]
    assert error["field"] == "content" and "1,000,000 values" in error["message"] and "max_values" in error["message"]
    assert view.message == {} and error["values"]
    from playground.reference import reference_check

    # never run on the worker; a public visitor, who cannot set the server's flags, reads how to run it without the
    # limit; a private user (whose server it is) reads the flag
    public_note = reference_check(run, view, public=True)["skipped"]
    assert public_note == ("reference check skipped: our parse stopped at this server's limit on the values a "
                           "template's transforms may build or on the characters its joins may build; the "
                           "transformers parser would build them all. To compare them, start the playground on your "
                           "own machine (`python app.py`: no per-request limit there)")
    private_note = reference_check(run, view)["skipped"]
    assert "(--max-transform-values)" in private_note and "(--max-message-chars)" in private_note
    # the same run on a private machine: no count, the reference's values
    small = Run(prefix="S", chunks=("[" + ",".join(['{"x":2}'] * 3) + "]",), template_text=json.dumps(each))
    assert parse_run(small, budget=Limits.private().budget()).message == {"content": [{"a": [2] * REPEATS}] * 3}


def test_a_chat_turn_over_the_cap_joins_the_history_as_its_text():
    run, view = _amplified_view(2_000_000)
    sess = Session(json.dumps(AMPLIFIER))
    sess.finish_turn(run, view)
    assert sess.history[-1] == {"role": "assistant", "content": run.text, "_raw": run.text}
    assert sess.pending_tool_calls == [] and sess.chat_phase == "idle"
    bubbles = render.history_to_chat(sess.history)
    assert json_size(bubbles, 1_000_000) < 100_000
    assert sess.nbytes < 1_000_000  # the history holds the text (its JSON was 250 MB as a message)


def test_a_chat_turn_without_a_role_default_is_still_the_assistants_turn_and_shows_a_bounded_bubble():
    """Trial 9: a template without `"defaults": {"role": "assistant"}` whose transform made the content a big dict
    left no assistant bubble in the conversation (the turn had no role) and the next prompt without the turn."""
    template = {"start_anchor": "S", "fields": {"content": {"transform": {"a": ["{content}"] * 5000}}}}
    run = Run(prefix="S", chunks=("hel", "lo"), template_text=json.dumps(template))
    view = parse_run(run, budget=Limits.public_space().budget())
    assert view.message == {"content": {"a": ["hello"] * 5000}}  # the parse itself has no role
    sess = Session(json.dumps(template))
    sess.history.append({"role": "user", "content": "hi"})
    sess.finish_turn(run, view)
    assert sess.history[-1] == {"content": {"a": ["hello"] * 5000}, "role": "assistant", "_raw": "hello"}
    bubbles = render.history_to_chat(sess.history)
    assert [b["role"] for b in bubbles] == ["user", "assistant"]
    shown = bubbles[1]["content"]  # the list cut to its first items (history_to_chat), then indented JSON
    assert shown.startswith("```json\n") and shown.endswith("\n```")
    kept = 20000 // 30
    assert json.loads(shown[8:-4]) == {"a": ["hello"] * kept + [f"[… {5000 - kept} more items not shown …]"]}
    assert len(shown) < 2 * render.BUBBLE_JSON_CHARS


EACH_DICTS = {"start_anchor": "S", "fields": {"content": {}, "t": {
    "open": "<t>", "close": "</t>", "content": "json", "transform_each": True,
    "transform": {"a": [{"k": "{c}"}] * 200}}}}


def _each_run(items: int, repeats: int = 1) -> Run:
    raw = ("<t>[" + ",".join(['{"c":0}'] * items) + "]</t>") * repeats
    return Run(prefix="S", chunks=[raw[i:i + 4] for i in range(0, len(raw), 4)], template_text=json.dumps(
        EACH_DICTS if repeats == 1 else {**EACH_DICTS, "fields": {**EACH_DICTS["fields"], "t": {
            **EACH_DICTS["fields"]["t"], "repeats": True}}}))


def test_a_kept_view_over_the_cap_holds_only_a_head_of_the_value_and_counts_what_it_holds():
    """Trial 9: a transform_each building 480k distinct dicts from a 19 KB paste kept 92.8 MB in the region_close
    event of the stored view (a public server: the message itself over the cap, dropped) while ``nbytes`` said
    0.02 MB, so the sessions-memory cap never saw it. The event now keeps the head of the value's JSON and its
    size, and ``nbytes`` counts the Python memory of every value the view keeps."""
    from playground.jsonsize import memory_size
    from playground.session import VALUE_HEAD_CHARS

    run = _each_run(300)  # 60,000 distinct dicts: about 14 MB in memory, 600 KB as JSON
    whole = parse_run(run).message["t"]  # no cap: the whole value
    assert len(whole) == 300 and whole[0] == {"a": [{"k": 0}] * 200}
    cap = 100_000
    view = parse_run(run, budget=RequestBudget(None, None, cap))
    assert view.final and view.message is None and view.message_size > cap and not view.errors
    closes = [ev for ev in view.events if ev["type"] == "region_close" and ev["field"] == "t"]
    assert len(closes) == 1 and "value" not in closes[0]
    assert cap < closes[0]["value_size"] <= json_size(whole)
    assert closes[0]["value_head"] == json.dumps(whole, ensure_ascii=False)[:VALUE_HEAD_CHARS]
    held = memory_size([ev.get("value") for ev in view.events])
    assert held < 20_000, held  # was 14 MB
    assert view.nbytes >= held + VALUE_HEAD_CHARS
    # the page still draws the parse: the event log row says what was not kept, the timeline shows the region
    drawn = render_all(view)
    assert "not kept" in drawn["events"] and "region_close" in drawn["events"]
    assert 'data-status="final"' in drawn["timeline"]
    from playground import inspector

    details = inspector.details_html(view, run.template_text, run.text.index("[") + 1 + view.prefix_length)
    assert "value not kept" in details and "at least" in details and render.escape('[{"a": [{"k": 0}') in details


def test_values_kept_by_the_events_stay_within_the_cap_and_are_counted():
    """Each close's value is kept while all the kept values fit the cap as JSON; later ones keep their head."""
    from playground.jsonsize import memory_size

    template = {"start_anchor": "S", "fields": {"content": {}, "t": {
        "open": "<t>", "close": "</t>", "repeats": True, "transform": {"a": [{"k": "{content}"}] * 200}}}}
    raw = "".join(f"<t>v{i}</t>" for i in range(5))
    run = Run(prefix="S", chunks=[raw[i:i + 3] for i in range(0, len(raw), 3)], template_text=json.dumps(template))
    whole = parse_run(run).message["t"]
    assert whole == [{"a": [{"k": f"v{i}"}] * 200} for i in range(5)]  # 5 closes, 2,602 characters of JSON each
    one = json_size(whole[0])
    view = parse_run(run, budget=RequestBudget(None, None, 2 * one + 10))  # room for two values
    closes = [ev for ev in view.events if ev["type"] == "region_close" and ev["field"] == "t"]
    assert [("value" in ev) for ev in closes] == [True, True, False, False, False]
    assert [ev["value"] for ev in closes[:2]] == whole[:2] and view.message is None
    assert [ev["value_head"] for ev in closes[2:]] == [json.dumps(v)[:1000] for v in whole[2:]]
    held = memory_size([ev.get("value") for ev in view.events])
    assert held > 2 * 200 * 50 and view.nbytes >= held
    unlimited = parse_run(run)  # no cap: everything kept, and counted
    assert all("value" in ev for ev in unlimited.events if ev["type"] == "region_close")
    assert unlimited.nbytes >= memory_size([ev.get("value") for ev in unlimited.events])
