"""Parallel tool calls in the chat: one tool result per call, in order, each tool message carrying its call's
name; the model generates only after the last result (a fixed conversation, so nothing depends on sampling)."""

import examples
from playground import handlers, views
from playground.handlers import ChatSettings, PageConfig
from playground.session import Run, parse_run, template_to_text
from playground.state import Session

TPL = template_to_text(examples.default_template())
ASKED = "What time is it in Tokyo and in Lima?"
RAW = ('<tool_call>\n{"name": "get_time", "arguments": {"city": "Tokyo"}}\n</tool_call>\n'
       '<tool_call>\n{"name": "get_clock", "arguments": {"city": "Lima"}}\n</tool_call><|im_end|>')


def _asked_twice(model_dir):
    """A session whose last assistant turn called two tools (parsed from a fixed output)."""
    sess = Session(TPL, model=model_dir)
    sess.send_turn({"role": "user", "content": ASKED})
    run = Run(prefix=f"<|im_start|>user\n{ASKED}<|im_end|>\n<|im_start|>assistant\n", chunks=(RAW,),
              template_text=TPL)
    view = parse_run(run)
    sess.finish_run(run, view, None)
    sess.finish_turn(run, view)
    return sess, run


def _tool_hint(sess):
    return dict(zip(views.NAMES, views.redraw(sess)))["tool_box"]["placeholder"]


def test_each_parallel_call_gets_its_own_result_and_the_model_answers_after_the_last(tiny_model_dir):
    sess, run = _asked_twice(tiny_model_dir)
    assert [c["function"]["name"] for c in sess.pending_tool_calls] == ["get_time", "get_clock"]
    assert sess.chat_phase == "awaiting_tool"
    assert "Tool result for get_time (1 of 2 calls" in _tool_hint(sess)
    settings, page = ChatSettings(model_box=tiny_model_dir, max_new_tokens=4), PageConfig()

    for _ in handlers.send_tool(sess, "09:00 JST", TPL, settings, page):
        pass
    # the first result is recorded for the first call, nothing was generated, the chat waits for the second
    assert sess.run is run and sess.history[-1] == {"role": "tool", "content": "09:00 JST", "name": "get_time"}
    assert sess.chat_phase == "awaiting_tool" and sess.inbox.get("tool") == ""
    assert [c["function"]["name"] for c in sess.pending_tool_calls] == ["get_clock"]
    assert "Tool result for get_clock (2 of 2 calls" in _tool_hint(sess)
    assert "1 of 2" in sess.notice.text and "get_clock (2 of 2)" in sess.notice.text

    for _ in handlers.send_tool(sess, "19:00 PET", TPL, settings, page):
        pass
    # the last result: the model generated once, from a prompt holding both results in the calls' order
    assert sess.run is not run and sess.run.source == "model", sess.notice.text
    roles = [m["role"] for m in sess.history]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"], roles
    assert sess.history[3] == {"role": "tool", "content": "19:00 PET", "name": "get_clock"}
    prompt = sess.run.prefix
    first, second = prompt.find("<tool_response>\n09:00 JST\n"), prompt.find("<tool_response>\n19:00 PET\n")
    assert 0 < first < second, prompt[-300:]


def test_tool_call_ids_travel_with_their_results():
    sess = Session(TPL)
    sess.pending_tool_calls = [{"id": "call_a", "function": {"name": "f"}},
                               {"id": "call_b", "function": {"name": "g"}}]
    sess.tool_calls_asked, sess.chat_phase = 2, "awaiting_tool"
    for _ in handlers.send_tool(sess, "A", TPL, ChatSettings(), PageConfig()):
        pass
    assert sess.history == [{"role": "tool", "content": "A", "name": "f", "tool_call_id": "call_a"}]
    assert sess.next_tool_call()["id"] == "call_b" and sess.tool_call_position() == (2, 2)
