"""Actions that would contradict a running stream (Clear, Load model, Send) are refused while it goes, with the
same words as Send, and their buttons are off: the chat, the status line and the run never disagree."""

from playground import handlers, views
from playground.handlers import ChatSettings, PageConfig
from playground.session import SKELETON_TEMPLATE, template_to_text
from playground import state
from playground.state import Origin, Session

TPL = template_to_text(SKELETON_TEMPLATE)
CLEARED_WITH_TURN = "Conversation cleared. The timeline still shows its last turn, until the next run."


def _by_view(values):
    return dict(zip(views.NAMES, values))


def _mid_generation(tiny_model_dir):
    """A session whose generation is suspended mid-stream (the generator is paused at a yield, so nothing depends
    on timing), and the generator to finish it with."""
    sess = Session(TPL, model=tiny_model_dir)
    settings = ChatSettings(max_new_tokens=12, temperature=0, model_box=tiny_model_dir)
    gen = handlers.send_user(sess, "Tell me a story", TPL, settings, PageConfig(default_model=tiny_model_dir))
    for _ in gen:
        if sess.running and sess.view is not None:
            return sess, gen
    raise AssertionError("the generation never streamed")


def test_clear_during_a_generation_is_refused_and_the_turn_lands_after_its_user_turn(tiny_model_dir):
    sess, gen = _mid_generation(tiny_model_dir)
    handlers.clear_chat(sess)
    assert sess.notice.text == handlers.RUN_GOING and sess.notice.kind == "error"
    assert [m["role"] for m in sess.history] == ["user"]
    for _ in gen:
        pass
    assert not sess.running and "Done" in sess.notice.text
    assert [m["role"] for m in sess.history] == ["user", "assistant"]  # no orphan assistant turn
    handlers.clear_chat(sess)  # once the run ended, Clear works; the timeline keeps the turn, and says so
    assert sess.history == [] and sess.notice.text == CLEARED_WITH_TURN
    assert sess.run is not None


def test_load_model_during_a_generation_is_refused(tiny_model_dir):
    sess, gen = _mid_generation(tiny_model_dir)
    handlers.load_model(sess, tiny_model_dir, "local", "", PageConfig(default_model=tiny_model_dir))
    assert sess.notice.text == handlers.RUN_GOING and sess.notice.topic == "model"
    gen.close()  # the client left: the stream ends
    assert not sess.running


def test_send_clear_and_load_buttons_are_off_while_a_run_goes(tiny_model_dir):
    sess, gen = _mid_generation(tiny_model_dir)
    during = _by_view(views.redraw(sess))
    for name in ("send", "tool_btn", "clear_btn", "load_btn"):
        assert during[name]["interactive"] is False, name
    assert during["stop"]["interactive"] is True
    for _ in gen:
        pass
    after = _by_view(views.redraw(sess))
    for name in ("send", "tool_btn", "clear_btn", "load_btn"):
        assert after[name]["interactive"] is True, name


def test_an_example_replay_during_a_generation_is_refused_and_changes_nothing(tiny_model_dir):
    """It used to load the example's template into the editor, then refuse the replay: the running chat turn was
    then parsed with that template."""
    sess, gen = _mid_generation(tiny_model_dir)
    page = PageConfig(default_model=tiny_model_dir)
    for _ in handlers.example_replay(sess, "qwen3", "", page):
        pass
    assert sess.notice.text == handlers.RUN_GOING
    assert sess.template_text == TPL and sess.origin.kind != "example" and sess.pending is None
    # with edits in the editor the offer waits for a confirmation; confirming mid-run is refused too, offer kept
    sess.edit(TPL.replace('"fields"', ' "fields"', 1))
    sess.offer("{}", Origin("example", "qwen3 / x"), "an example", then=("example", "qwen3", "x"))
    for _ in handlers.confirm_replace(sess, page):
        pass
    assert sess.notice.text == handlers.RUN_GOING and sess.pending is not None and sess.template_text != "{}"
    for _ in gen:
        pass
    assert [m["role"] for m in sess.history] == ["user", "assistant"]


def _sent(drawn):
    """The value a view sends to the page (failing when it is skipped)."""
    if isinstance(drawn, dict) and drawn.get("__type__") == "update":
        assert "value" in drawn, "skipped"
        return drawn["value"]
    return drawn


def test_the_chats_trash_icon_clears_the_conversation_or_draws_it_back_while_a_run_goes(tiny_model_dir):
    """Gradio's trash icon empties the chat on the page before the server hears of it: mid-run the refusal must send
    the whole chat again (the page would otherwise show an empty chat the next turn contradicts); after the run it
    forgets the conversation, as Clear does."""
    sess, gen = _mid_generation(tiny_model_dir)
    views.redraw(sess)  # the page is up to date
    handlers.trash_chat(sess)
    assert sess.notice.text == handlers.RUN_GOING and [m["role"] for m in sess.history] == ["user"]
    assert _sent(_by_view(views.redraw(sess))["chatbot"])  # the chat is sent again, not skipped
    for _ in gen:
        pass
    handlers.trash_chat(sess)
    assert sess.history == [] and sess.notice.text == CLEARED_WITH_TURN
    assert _sent(_by_view(views.redraw(sess))["chatbot"]) == []


def test_the_parsed_turns_trash_icon_draws_the_turn_back(tiny_model_dir):
    sess, gen = _mid_generation(tiny_model_dir)
    for _ in gen:
        pass
    views.redraw(sess)
    assert sess.view is not None and sess.view.message is not None
    handlers.trash_turn(sess)
    assert _sent(_by_view(views.redraw(sess))["turn"])
    assert "parsed turn" in sess.notice.text and len(sess.history) == 2  # the conversation is untouched


def _status_and_template_status(sess):
    """The session's notice and the template status under the editor as drawn from it now."""
    return sess.notice, views.initial(sess, "template_status")


def test_a_template_fixed_during_a_generation_replaces_the_error_in_the_status_line(tiny_model_dir):
    """Trial 11: replacing the template text while the model streams (select all, delete, type) broke it for a
    moment, and the status line kept "The template has an error" beside "template valid" until the run ended."""
    sess, gen = _mid_generation(tiny_model_dir)
    page = PageConfig(default_model=tiny_model_dir)
    fixed = TPL.replace('"fields"', ' "fields"', 1)
    for typed in ("", "{", fixed):  # what the editor holds while the new text is typed
        handlers.edit_template(sess, typed, page)
        notice, template_status = _status_and_template_status(sess)
        if sess.problem is not None:
            assert notice.kind == "error" and notice.text.startswith(state.TEMPLATE_ERROR_NOTE), notice
            assert "template valid" not in template_status
    assert sess.running and sess.problem is None
    notice, template_status = _status_and_template_status(sess)
    assert "template valid" in template_status
    assert notice.kind == "ok" and "error" not in notice.text, notice
    assert notice.text == "Template valid again; the run going is parsed with it when it ends."
    for _ in gen:
        pass
    assert not sess.running and sess.notice.text.startswith("Done") and sess.run.template_text == fixed


def _edit_during_the_parse(monkeypatch, new_text, page):
    """Make the paste's parse run an edit of the template (as Gradio runs the edit event alongside it) the first
    time, then parse as usual: the interleaving of trial 13 F9, without depending on timing."""
    real = handlers.parse_run
    edits = []

    def parse_then_edit(run, template_text=None, budget=None):
        view = real(run, template_text, budget)
        if not edits:
            edits.append(handlers.edit_template(edits_sess[0], new_text, page))
        return view

    edits_sess = []
    monkeypatch.setattr(handlers, "parse_run", parse_then_edit)
    return edits_sess


def test_a_template_edited_while_a_paste_parses_is_the_one_the_page_shows(monkeypatch):
    """Trial 13 F9: an edit that landed while Paste -> Parse ran re-parsed the old run; the paste's parse, done
    later, showed the run parsed with the OLD template next to the new one, "template valid", "agrees"."""
    import json

    page = PageConfig(default_model=None)
    sess = Session(TPL)
    plain = json.dumps({"start_anchor": "<|im_start|>assistant\n",
                        "fields": {"content": {"close": "<|im_end|>", "repeats": True, "join": ""}}})
    raw = "Hmm.\n</think>\nSure.<|im_end|>"
    prefix = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    hook = _edit_during_the_parse(monkeypatch, plain, page)
    hook.append(sess)
    handlers.paste_parse(sess, raw, prefix, "", TPL, page)
    assert sess.template_text == plain and sess.problem is None
    assert sess.run.template_text == plain
    # the new template's message (one content string), not the old one's (reasoning + content)
    # (the prefix after its anchor is parsed too: "<think>\n" is content under a template without reasoning)
    assert sess.view.message == {"content": "<think>\nHmm.\n</think>\nSure."}, sess.view.message
    assert sess.check["agree"], sess.check


def test_a_template_broken_while_a_paste_parses_leaves_the_run_marked_as_parsed_with_the_last_valid_one(
        monkeypatch):
    page = PageConfig(default_model=None)
    sess = Session(TPL)
    hook = _edit_during_the_parse(monkeypatch, '{"fields": ', page)
    hook.append(sess)
    handlers.paste_parse(sess, "Hmm.\n</think>\nSure.<|im_end|>", "<|im_start|>assistant\n<think>\n", "", TPL, page)
    assert sess.problem is not None and sess.run.template_text == TPL
    assert "Shown with the last valid template" in _by_view(views.redraw(sess))["timeline"]


def test_clear_after_a_paste_says_nothing_of_the_timeline(tiny_model_dir):
    """Trial 13 F10: the timeline keeps the run after Clear; a pasted run is no part of the conversation."""
    sess, gen = _mid_generation(tiny_model_dir)
    for _ in gen:
        pass
    handlers.paste_parse(sess, "Hi.<|im_end|>", "<|im_start|>assistant\n", "", TPL, PageConfig(default_model=None))
    handlers.clear_chat(sess)
    assert sess.history == [] and sess.notice.text == "Conversation cleared." and sess.run is not None


def _edit_during_the_check(monkeypatch, new_text, page, sess):
    """Make the first transformers check of a run (a worker round trip, after its parse and before it is shown) run
    an edit of the template, as Gradio runs the edit event alongside it: the window trial 14 S1 found left open by
    the F9 fix, which re-parsed only while the template changed during the parse itself."""
    real = handlers.check_against_reference
    edits = []

    def check_then_edit(run, view, template_text=None):
        result = real(run, view, template_text)
        if not edits:
            edits.append(handlers.edit_template(sess, new_text, page))
        return result

    monkeypatch.setattr(handlers, "check_against_reference", check_then_edit)
    return edits


PLAIN = ('{"start_anchor": "<|im_start|>assistant\\n", '
         '"fields": {"content": {"close": "<|im_end|>", "repeats": true, "join": ""}}}')
RAW = "Hmm.\n</think>\nSure.<|im_end|>"
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
# PLAIN's message for RAW after PREFIX (the prefix after its anchor is content too under a template without reasoning)
PLAIN_MESSAGE = {"content": "<think>\nHmm.\n</think>\nSure."}


def test_a_template_edited_during_a_pastes_reference_check_is_the_one_the_page_shows(monkeypatch):
    """Trial 14 S1: the edit landed after the paste's parse, during its transformers check; it re-parsed the run
    shown before the paste, then the paste showed its parse with the OLD template beside the new one."""
    page = PageConfig(default_model=None)
    sess = Session(TPL)
    edits = _edit_during_the_check(monkeypatch, PLAIN, page, sess)
    handlers.paste_parse(sess, RAW, PREFIX, "", TPL, page)
    assert edits, "the edit did not run"
    assert sess.template_text == PLAIN and sess.problem is None
    assert sess.view.message == PLAIN_MESSAGE, sess.view.message
    assert sess.check["agree"], sess.check


def test_a_template_edited_during_a_replays_reference_check_is_the_one_the_page_shows(monkeypatch):
    """The same window at the end of a replay: the stream is still going during its check, so the edit does not
    re-parse, and the replay's run was committed with the old template's parse."""
    page = PageConfig(default_model=None)
    sess = Session(TPL)
    handlers.paste_parse(sess, RAW, PREFIX, "", TPL, page)
    assert "reasoning_content" in sess.view.message
    edits = _edit_during_the_check(monkeypatch, PLAIN, page, sess)
    for _ in handlers.replay_last(sess, TPL, page):
        pass
    assert edits, "the edit did not run"
    assert not sess.running and sess.template_text == PLAIN
    assert sess.view.message == PLAIN_MESSAGE, sess.view.message
    assert sess.check["agree"], sess.check


def test_a_template_edited_during_a_chat_turns_reference_check_is_the_one_the_page_shows(monkeypatch, tiny_model_dir):
    """The same window at the end of a generated turn: the run and the chat's parsed turn follow the edit."""
    page = PageConfig(default_model=tiny_model_dir)
    sess, gen = _mid_generation(tiny_model_dir)
    edits = _edit_during_the_check(monkeypatch, PLAIN, page, sess)
    for _ in gen:
        pass
    assert edits, "the edit did not run"
    assert not sess.running and sess.template_text == PLAIN
    expected = handlers.parse_run(sess.run, PLAIN).message  # the generated text parsed with the new template
    assert "content" in expected and "reasoning_content" not in expected
    assert sess.view.message == expected, (sess.view.message, expected)
