"""The page's pieces that need no browser: history rendering, error wrapping, example runs, previews, the panel hook,
and the wiring (what the last yield of a stream sends to the page)."""

import json

import gradio as gr

from playground import backends, handlers, library, render, streaming, ui, views
from playground.handlers import ChatSettings, PageConfig
from playground.session import SKELETON_TEMPLATE, LiveParse, Run, parse_run, template_to_text
from playground import state
from playground.state import Session

TPL = template_to_text(SKELETON_TEMPLATE)


def test_history_to_chat_renders_parsed_turns_and_tool_results():
    hist = [{"role": "user", "content": "hi"},
            {"role": "assistant", "reasoning_content": "r", "content": "x" * 50000, "_raw": "raw",
             "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
            {"role": "tool", "content": "42", "name": "f"}]
    chat = render.history_to_chat(hist)
    assert chat[0] == {"role": "user", "content": "hi"}
    assert chat[1]["metadata"]["title"].endswith("Reasoning")
    assert "Tool call: f" in chat[2]["metadata"]["title"]
    assert len(chat[3]["content"]) < 50000 and "more" in chat[3]["content"]  # huge content clipped for display
    assert chat[-1]["metadata"]["title"].endswith("Tool result")


def test_safe_turns_exceptions_into_status_messages():
    def boom(x):
        raise backends.ModelLoadError("Could not load 'x': nope")

    out = ui._safe(boom, 3)(1)
    assert "Could not load" in out[0] and "Traceback" not in out[0]
    assert len(out) == 3
    assert "KeyError" in ui._safe(lambda: {}["k"])()


def test_example_run_replays_library_transcripts():
    fams = library.list_library_families()
    assert fams
    names = library.example_transcript_names(fams[0])
    run = library.example_run(fams[0], names[0])
    assert run.chunks and run.source == "example"
    view = parse_run(run)
    assert view.final and view.text.endswith(run.text)
    try:
        library.example_run(fams[0], "no-such-transcript")
    except ValueError as e:
        assert "Not in the library" in str(e)
    else:  # pragma: no cover
        raise AssertionError("missing transcript accepted")


def test_live_previews_are_clipped_and_throttled():
    live = LiveParse(TPL, "")
    live.feed("<think>" + "y" * 10000)
    drawn = streaming.draw(live.view(), window=streaming.STREAM_WINDOW)
    assert len(json.dumps(drawn.message)) < 3000  # message preview clipped
    skipped = streaming.draw(live.view(), window=streaming.STREAM_WINDOW, preview=False)
    assert skipped.message is None and skipped.events is None and skipped.turn is None  # not sent this time
    assert 'data-status="streaming"' in skipped.timeline
    t = streaming.Throttle(10)
    assert t() and not t()


def test_build_ui_exposes_the_panel_context(tiny_model_dir):
    demo = ui.build_ui(tiny_model_dir)
    ctx = demo.panel_context
    assert isinstance(ctx, ui.PanelContext)
    assert ctx.template.elem_id == "template" and ctx.model_box.elem_id == "model-box"
    lm = ctx.load_model(tiny_model_dir)
    assert lm is backends.load_model(tiny_model_dir)
    assert ctx.trust_remote_code is False


def _wired(demo, name):
    """The function the page runs for an event (the wiring around a handler of `playground.handlers`)."""
    import inspect

    for fn in demo.fns.values():
        if getattr(fn.fn, "__name__", "") == name:
            params = list(inspect.signature(fn.fn).parameters)
            if params[1:2] == ["request"]:  # a stream: Gradio passes the request second (no request here)
                return lambda sess, *args, _f=fn.fn: _f(sess, None, *args)
            return fn.fn
    raise AssertionError(f"no handler {name}")


def _is_full_update(value):
    return isinstance(value, dict) and value.get("__type__") == "update" and "value" in value


def _by_view(outputs):
    return dict(zip([*views.NAMES, "session"], outputs))


def test_a_replay_sent_before_a_family_picks_new_list_arrives_replays_that_family(tiny_model_dir):
    """Replay clicked right after picking a family: the transcript box still holds the previous family's pick."""
    import examples
    from playground.library import example_transcript_names

    families = examples.list_families()
    family, old = next((f, t) for f in families for g in families if f != g
                       for t in example_transcript_names(g) if t not in example_transcript_names(f))
    demo = ui.build_ui(tiny_model_dir)
    box = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "example-transcript")
    box.choices = [(n, n) for n in example_transcript_names(family)]  # what the page has once the pick lands
    assert box.preprocess(old) == old  # no bare "Error" before the handler runs
    outs = list(_wired(demo, "example_replay")(Session(TPL), family, old))
    last = _by_view(outs[-1])
    first = example_transcript_names(family)[0]
    assert f"{family} / {first}: done" in last["status"], last["status"]


def test_last_yield_of_a_replay_carries_the_whole_final_state(tiny_model_dir):
    """Done status, final timeline, and the final message and parsed turn as full replacements."""
    demo = ui.build_ui(tiny_model_dir)
    raw = "Hmm " * 200 + "\n</think>\nSure.<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>"
    prefix = "<|im_start|>assistant\n<think>\n"
    outs = list(_wired(demo, "paste_replay")(Session(TPL), raw, prefix, "", TPL))
    last = _by_view(outs[-1])
    status, timeline, events, message, turn = (last[k] for k in ("status", "timeline", "events", "message", "turn"))
    assert "done" in status and 'data-status="final"' in timeline and "<table>" in events
    assert _is_full_update(message) and message["value"]["role"] == "assistant"
    assert message["value"]["tool_calls"][0]["function"]["name"] == "f"
    assert _is_full_update(turn) and any("Sure." in str(m.get("content")) for m in turn["value"])
    # while it streamed, Stop was on; at the end it is off again
    assert any(_by_view(o)["stop"].get("interactive") is True for o in outs[:-1] if isinstance(_by_view(o)["stop"], dict))
    assert last["stop"]["interactive"] is False


def test_last_yield_of_a_live_generation_carries_the_whole_final_state(tiny_model_dir):
    demo = ui.build_ui(tiny_model_dir)
    settings = ["", "", False, 30, 1.0, 1.0, 0, "local", "", tiny_model_dir]
    outs = list(_wired(demo, "send_user")(Session(TPL, model=tiny_model_dir), "hello", TPL, *settings))
    last = _by_view(outs[-1])
    assert "Done" in last["status"] and 'data-status="final"' in last["timeline"]
    chat = last["chatbot"]
    assert _is_full_update(chat) and chat["value"][0] == {"role": "user", "content": "hello"}
    assert _is_full_update(last["message"]) and last["message"]["value"].get("role") == "assistant"
    assert _is_full_update(last["turn"])


def test_send_with_a_model_that_fails_to_load_says_why_and_keeps_the_text(tiny_model_dir):
    page = PageConfig(default_model="no-such-org/x")
    sess = Session(TPL)  # no model loaded in this session
    for _ in handlers.send_user(sess, "keep me", TPL, ChatSettings(model_box="no-such-org/x"), page):
        pass
    status, chat = sess.notice.text, render.history_to_chat(sess.history)
    assert "No model loaded:" in status and "no-such-org/x" in status and "Load a model first" in status
    assert "Traceback" not in status
    assert sess.inbox.get("user") == "keep me" and sess.history == [] and chat == []
    sess.pending_tool_calls, sess.chat_phase = [{"function": {"name": "f"}}], "awaiting_tool"
    for _ in handlers.send_tool(sess, "42", TPL, ChatSettings(model_box="no-such-org/x"), page):
        pass
    assert sess.inbox.get("tool") == "42" and "No model loaded" in sess.notice.text
    assert sess.chat_phase == "awaiting_tool" and sess.pending_tool_calls  # the call still waits for its answer


def test_timeline_from_is_validated():
    import pytest

    assert handlers.parse_timeline_start("", 100) is None and handlers.parse_timeline_start(None, 100) is None
    assert handlers.parse_timeline_start(" 42 ", 100) == 42 and handlers.parse_timeline_start("100", 100) == 100
    for bad, words in (("abc", "not a character position"), ("-5", "not a character position"),
                       ("1e99", "not a character position"), ("4.5", "not a character position"),
                       ("101", "past the end"), ("9" * 40, "past the end"), ("٣", "not a character position")):
        with pytest.raises(ValueError, match=words) as e:
            handlers.parse_timeline_start(bad, 100)
        assert "from 0 to 100" in str(e.value)


def test_move_window_handler_reports_bad_input():
    sess = Session(TPL)
    assert "Nothing parsed yet" in handlers.move_window(sess, "0").notice.text
    sess.finish_run(Run(chunks=("x" * 9000,), template_text=TPL),
                    parse_run(Run(chunks=("x" * 9000,), template_text=TPL)), None)
    views.redraw(sess)  # the page shows it
    handlers.move_window(sess, "abc")
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert "not a character position" in sess.notice.text and "moved" not in sess.notice.text
    assert isinstance(drawn["timeline"], type(gr.skip()))  # the timeline is left as it was
    handlers.move_window(sess, "10")
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert "characters 10–6010 of" in sess.notice.text and 'data-status="final"' in drawn["timeline"]
    assert 'data-from="10"' in drawn["timeline"]


def test_stopping_a_replay_halts_the_playback_and_keeps_the_run_whole():
    """Stop during a replay: the stored run stays whole (a later replay plays all of it), and what the page
    shows is its parse to the end, so the timeline, message and chat describe one text."""
    from playground.handlers import PageConfig

    raw = "Hmm " * 400 + "\n</think>\nSure.<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>"
    prefix = "<|im_start|>assistant\n<think>\n"
    sess, page = Session(TPL), PageConfig()
    stream = handlers.paste_replay(sess, raw, prefix, "", TPL, page, session_hash="stop-replay")
    for n, _ in enumerate(stream):
        if n == 2:
            assert handlers.stop("stop-replay")
    whole = len(sess.run.chunks)
    assert "".join(sess.run.chunks) == raw and whole > 50
    assert "Stopped the playback after" in sess.notice.text and f"of {whole} chunks" in sess.notice.text
    assert sess.view.text.endswith(raw)  # parsed to its end, not where the playback stopped
    assert sess.view.message["tool_calls"][0]["function"]["name"] == "f"
    list(handlers.replay_last(sess, TPL, page, session_hash="stop-replay"))
    assert f"done, {whole} chunks" in sess.notice.text and "".join(sess.run.chunks) == raw


def test_the_status_line_never_marks_a_failed_parse_as_a_success():
    """A region error, or an output of which every character is discarded (a start anchor missing from the prompt,
    or no field opening), is said in the status line as an error, not as '✓ Parsed N characters.' beside a timeline that shows the failure."""
    import examples
    from playground.handlers import PageConfig

    prefix = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
    page = PageConfig()
    sess = Session(TPL)
    handlers.paste_parse(sess, "Sure.<|im_end|>", prefix, "", TPL, page)
    assert sess.notice.kind == "ok" and sess.notice.text == "Parsed 15 characters."
    for raw, said in (("!", "Parsed 1 character."), ("a" * 1500, "Parsed 1,500 characters.")):  # trial 10
        handlers.paste_parse(sess, raw, prefix, "", TPL, page)
        assert sess.notice.kind == "ok" and sess.notice.text == said, sess.notice.text
    bad_call = '<tool_call>\n{"name": "f", "arguments": {oops}}\n</tool_call><|im_end|>'
    handlers.paste_parse(sess, bad_call, prefix, "", TPL, page)
    assert sess.notice.kind == "error" and "a region failed" in sess.notice.text, sess.notice.text
    assert sess.view.errors and sess.view.errors[0]["field"] == "tool_calls"  # what the timeline shows
    other = template_to_text(examples.load_family("gpt_oss").template)  # its anchor is not ChatML's
    sess = Session(other)
    handlers.paste_parse(sess, "Sure.<|im_end|>", prefix, "", other, page)
    assert sess.notice.kind == "error" and "start anchor does not occur in the prompt" in sess.notice.text, \
        sess.notice.text
    assert all(seg["kind"] == "discarded" for seg in sess.view.segments)
    # the anchor is in the prompt, but no field opens and none is implicit: the fields are named, not the anchor
    no_implicit = json.dumps({"start_anchor": "<|im_start|>assistant\n",
                              "fields": {"content": {"open": "<answer>", "close": "</answer>"}}})
    sess = Session(no_implicit)
    handlers.paste_parse(sess, "Sure.<|im_end|>", prefix, "", no_implicit, page)
    assert sess.notice.kind == "error" and "no field opened" in sess.notice.text, sess.notice.text
    assert "start anchor" not in sess.notice.text


def test_fix_the_template_first_says_where_the_fault_is():
    from playground.handlers import PageConfig

    broken = TPL[: TPL.index('"role"') + 4]  # an unterminated string
    sess = Session(TPL)
    out = handlers.paste_parse(sess, "Hi<|im_end|>", "", "", broken, PageConfig())
    assert out.notice.kind == "error" and out.notice.text.startswith("Fix the template first: not valid JSON")
    line = broken.count("\n") + 1
    assert f"[line {line}, column " in out.notice.text, out.notice.text  # the JSON message needs its position


def test_views_say_they_are_from_the_last_valid_template_while_the_editor_is_broken():
    from playground.handlers import PageConfig

    page, sess = PageConfig(), Session(TPL)
    handlers.paste_parse(sess, "Sure.<|im_end|>", "<|im_start|>assistant\n", "", TPL, page)
    views.redraw(sess)
    handlers.edit_template(sess, TPL.replace('"role"', '"role'), page)  # the editor no longer loads
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert drawn["timeline"].startswith(views.STALE_NOTE) and 'data-f="content"' in drawn["timeline"]
    assert drawn["check"] == views.STALE_CHECK and "agree" not in drawn["check"]
    handlers.edit_template(sess, TPL, page)  # fixed again: parsed anew, the note goes
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert views.STALE_NOTE not in drawn["timeline"] and 'id="agree-badge"' in drawn["check"]


def test_the_status_line_says_an_edit_broke_the_template_instead_of_claiming_a_re_parse():
    """After a good parse and a re-parse, each kind of broken template (found by a fresh-user trial) turns the
    status line into an error that says nothing was re-parsed, and the badge stops claiming agreement."""
    from playground.handlers import PageConfig

    tpl = json.loads(TPL)
    field = next(iter(tpl["fields"]))
    unclosed = json.loads(TPL)
    unclosed["fields"][field]["close_pattern"] = "(unclosed"
    huge = json.loads(TPL)
    huge["fields"][field]["close_pattern"] = "a{9000000}"
    page, sess = PageConfig(), Session(TPL)
    handlers.paste_parse(sess, "Sure.<|im_end|>", "<|im_start|>assistant\n", "", TPL, page)
    for broken in ("", "[1,2,3]", json.dumps(unclosed, indent=2), json.dumps(huge, indent=2)):
        handlers.edit_template(sess, TPL.replace("{", "{ ", 1), page)  # a good edit: re-parsed
        assert sess.notice.text.startswith("Re-parsed") and sess.notice.kind != "error", sess.notice.text
        handlers.edit_template(sess, broken, page)
        assert sess.problem is not None, broken
        assert sess.notice.kind == "error" and "Re-parsed" not in sess.notice.text, (broken, sess.notice.text)
        assert sess.notice.text == state.TEMPLATE_ERROR_NOTE + " Nothing was re-parsed: the page shows the " \
            "last valid template's parse.", sess.notice.text
        drawn = dict(zip(views.NAMES, views.redraw(sess)))
        assert "agree" not in drawn["check"] and drawn["check"] == views.STALE_CHECK, broken


def test_the_system_prompt_counts_toward_the_conversation_limit(tiny_model_dir):
    """A 3 MB system prompt had no limit at all: on a public server it reached the model (3,000,018 tokens) and the
    OOM killer stopped the server at 22 GB."""
    import pytest

    from playground.limits import Limits

    page = PageConfig(default_model=tiny_model_dir, limits=Limits.public_space())
    sess = Session(TPL, model=tiny_model_dir)
    with pytest.raises(ValueError, match=r"The conversation \(with the system prompt\) is 300,00\d characters"):
        for _ in handlers.send_user(sess, "hi", TPL, ChatSettings(system="s" * 300_000, model_box=tiny_model_dir),
                                    page):
            pass
    assert sess.history == []


def test_keeping_edits_says_the_waiting_example_was_not_replayed():
    """An example replay over edited text waits for a confirmation; "Keep my edits" drops it, and says so."""
    import examples
    from playground.handlers import PageConfig
    from playground.library import example_transcript_names

    page = PageConfig()
    family = examples.list_families()[0]
    sess = Session(TPL)
    sess.edit(TPL.replace('"assistant"', '"assistant", "mine": "yes"', 1))
    assert sess.edited
    list(handlers.example_replay(sess, family, example_transcript_names(family)[0], page))
    assert sess.pending is not None and sess.run is None  # asked, nothing replayed
    handlers.keep_edits(sess)
    assert sess.pending is None and sess.run is None and sess.edited
    assert "Kept your edits" in sess.notice.text and "not replayed" in sess.notice.text, sess.notice.text
    # a library pick kept the same way says nothing about a replay
    handlers.pick_library(sess, family, page)
    handlers.keep_edits(sess)
    assert "Kept your edits" in sess.notice.text and "replayed" not in sess.notice.text


def test_a_start_anchor_missing_from_the_prompt_is_said_in_the_status_and_above_the_timeline():
    """Template start_anchor "<<NEVER>>": the whole prompt is parsed as output (the user's <|im_end|> becomes a
    delimiter, as transformers does); the status line and the timeline say why, in one wording."""
    from playground.handlers import PageConfig

    never = json.loads(TPL)
    never["start_anchor"] = "<<NEVER>>"
    prefix = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    page = PageConfig()
    sess = handlers.paste_parse(Session(TPL), "Sure.<|im_end|>", prefix, "", json.dumps(never), page)
    assert sess.view.prefix_length == len(prefix) and sess.view.anchor_missing
    assert sess.notice.kind == "error" and render.ANCHOR_MISSING_NOTE in sess.notice.text, sess.notice.text
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert 'id="anchor-missing"' in drawn["timeline"] and render.ANCHOR_MISSING in drawn["timeline"].replace(
        "&#x27;", "'").lower()
    # the same run with the anchor in the prompt: parsed after it, nothing to warn about
    sess = handlers.paste_parse(Session(TPL), "Sure.<|im_end|>", prefix, "", TPL, page)
    assert not sess.view.anchor_missing and sess.notice.kind == "ok", sess.notice.text
    assert 'id="anchor-missing"' not in dict(zip(views.NAMES, views.redraw(sess)))["timeline"]
    # no prompt at all: nothing was looked for, nothing to warn about
    sess = handlers.paste_parse(Session(TPL), "Sure.<|im_end|>", "", "", json.dumps(never), page)
    assert not sess.view.anchor_missing and sess.notice.kind == "ok", sess.notice.text


def test_a_template_valid_again_never_leaves_the_error_in_the_status_line():
    """Trial 11: with no run yet, a stray character typed at the end of the template and then deleted left "The
    template has an error" in the status line beside "template valid" under the editor. After every edit, in every
    run state (none, one shown), the status line and the template status must agree."""
    from playground.handlers import PageConfig

    page = PageConfig()
    for with_run in (False, True):
        sess = Session(TPL)
        drawn = {name: views.initial(sess, name) for name in ("status", "template_status")}  # what the page shows
        if with_run:
            handlers.paste_parse(sess, "Sure.<|im_end|>", "<|im_start|>assistant\n", "", TPL, page)
        for typed in (TPL + "x", TPL, TPL + "}", TPL.replace("{", "{ ", 1), "[]", TPL):
            handlers.edit_template(sess, typed, page)
            drawn.update((name, value) for name, value in zip(views.NAMES, views.redraw(sess))
                         if name in drawn and value != gr.skip())
            says_error = state.TEMPLATE_ERROR_NOTE in drawn["status"]
            assert says_error == (sess.problem is not None), (with_run, typed[-3:], drawn["status"])
            assert ("template valid" in drawn["template_status"]) == (sess.problem is None)
        if with_run:  # a run shown: the valid edit re-parsed it, and the status line says so
            assert sess.notice.text == "Re-parsed the last run with the edited template.", sess.notice
        else:
            assert sess.notice.text == "Template valid; it applies to the next run." and sess.notice.kind == "ok"
