"""Doctor/draft notes show a message's `code spans` as code (never raw backticks), and the Doctor's run actions
say to wait while a run still streams instead of "No run yet" (trial 11)."""

from playground import doctor_panel, draft_panel, handlers
from playground.handlers import ChatSettings, PageConfig
from playground.offload import cut_text
from playground.render import escape_text
from playground.session import SKELETON_TEMPLATE, template_to_text
from playground.state import Session

TPL = template_to_text(SKELETON_TEMPLATE)


def test_escape_text_escapes_then_shows_code_spans_as_code():
    assert escape_text("use `a<b>` & `c`") == "use <code>a&lt;b&gt;</code> &amp; <code>c</code>"
    assert escape_text("no code ` here") == "no code ` here"  # a lone backtick stays text
    assert escape_text("`x\ny`") == "`x\ny`"  # a span does not cross a line


def test_cut_messages_render_their_command_as_code_in_both_panels():
    message = cut_text("The draft", "python -m parsing draft CHAT_TEMPLATE.jinja --report", 5.0)
    assert "`python -m parsing draft" in message  # the plain-text form keeps Markdown
    for note in (draft_panel._note(message, "error"), doctor_panel._note(message, "error")):
        assert "<code>python -m parsing draft CHAT_TEMPLATE.jinja --report</code>" in note
        assert "`" not in note


def test_run_actions_wait_for_a_streaming_run_then_use_it(tiny_model_dir):
    sess = Session(TPL, model=tiny_model_dir)
    assert doctor_panel._no_run_yet(sess, "check it", need_output=True).startswith("No run yet")
    settings = ChatSettings(max_new_tokens=12, temperature=0, model_box=tiny_model_dir)
    gen = handlers.send_user(sess, "Tell me a story", TPL, settings, PageConfig(default_model=tiny_model_dir))
    for _ in gen:  # the generator is paused at a yield: nothing depends on timing
        if sess.running and sess.view is not None:
            break
    else:
        raise AssertionError("the generation never streamed")
    for then in ("check it", "save it"):
        said = doctor_panel._no_run_yet(sess, then, need_output=True)
        assert said == f"A run is still streaming: wait for it to finish (or press Stop), then {then}."
    for _ in gen:
        pass
    assert not sess.running
    assert doctor_panel._no_run_yet(sess, "check it", need_output=True) is None
