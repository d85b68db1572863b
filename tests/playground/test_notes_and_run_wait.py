"""Doctor/draft notes show a message's `code spans` as code (never raw backticks) (trial 11)."""

from playground import doctor_panel, draft_panel
from playground.offload import cut_text
from playground.render import escape_text


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
