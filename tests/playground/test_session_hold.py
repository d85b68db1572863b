"""A page whose session state the server lost (evicted past --max-sessions, expired, or a restarted server) finds out
on its next action, says so and is redrawn from the fresh state (trial 14 H1, the page's part): `guard.hold`, the
token `guard.protect` adds to every event that takes the session, and `Session.lost`."""

import json

import gradio as gr
import pytest

from playground import api_calls, guard, render, views
from playground.state import SESSION_LOST_NOTE, SESSION_LOST_RUN_NOTE, Session

TEMPLATE = json.dumps({"start_anchor": "S", "fields": {"content": {}}}, indent=2)


def test_hold_issues_a_token_and_finds_a_lost_state():
    page_state = Session(TEMPLATE)
    run, token = guard.hold(page_state, "")  # the page's first event: it has no token yet
    assert run and guard.TOKEN_FORM.fullmatch(token) and page_state.token == token
    assert guard.hold(page_state, token) == (True, None)  # echoed: nothing to send, nothing said
    assert guard.hold(page_state, "") == (True, token)  # an event sent before the first answer arrived
    assert guard.hold(page_state, None) == (True, None)  # an API client: no page, no token
    assert page_state.notice.text == "" and not page_state.editor_unknown

    fresh = Session(TEMPLATE)  # what Gradio hands the same page once its state is gone
    run, new = guard.hold(fresh, token)
    assert not run and new != token and fresh.token == new and fresh.lost_token == token
    assert fresh.notice.text == SESSION_LOST_NOTE and fresh.notice.kind == "error"
    assert fresh.note == SESSION_LOST_RUN_NOTE and fresh.editor_unknown and fresh.edited
    said = fresh.versions["notice"]
    # an event the page sent before it learned the new token: not run, nothing said again
    assert guard.hold(fresh, token) == (False, new) and fresh.versions["notice"] == said
    assert guard.hold(fresh, new) == (True, None)
    # a state that loses its page again (the fresh one lost in turn, or a token it never issued)
    assert guard.hold(fresh, "f" * 32) == (False, new) and fresh.lost_token == "f" * 32


def test_a_lost_state_redraws_every_view_but_the_editor_and_takes_the_pages_editor_text():
    fresh = Session(TEMPLATE)
    guard.hold(fresh, "")  # (another page's first token)
    fresh.token = None
    guard.hold(fresh, "a" * 32)  # the lost page echoes its token
    drawn = dict(zip(views.NAMES, views.redraw(fresh)))
    skipped = {name for name, value in drawn.items() if value == gr.skip()}
    # the fresh state draws every view the lost one had drawn (the page shows them), except the editor (the page's
    # text is kept) and the input boxes (what the visitor typed stays)
    assert skipped == {"editor", "user_box"}, skipped
    assert render.escape(SESSION_LOST_NOTE) in drawn["status"] and "status-error" in drawn["status"]
    assert drawn["chatbot"]["value"] == [] and drawn["turn"]["value"] == [] and drawn["message"]["value"] == {}
    assert render.escape(SESSION_LOST_RUN_NOTE) in drawn["timeline"] and 'data-len="0"' in drawn["timeline"]
    assert drawn["replay_btn"]["interactive"] is False and drawn["events"] == "" and drawn["legend"] == ""

    edited = TEMPLATE.replace('"S"', '"T"')
    fresh.adopt_editor(edited)  # the page sends its editor's text
    assert fresh.template_text == edited and fresh.edited and not fresh.editor_unknown
    assert fresh.problem is None and fresh.origin.kind == "browser"
    again = dict(zip(views.NAMES, views.redraw(fresh)))
    assert again["editor"] == gr.skip() and again["template_status"] != gr.skip()
    # a library pick now asks before replacing the page's text
    assert not fresh.offer(TEMPLATE, fresh.origin, "x") and fresh.pending is not None


def _page(handler, *, generator=False):
    """A page with a session, a token, a status line and one event taking the session (and one that does not)."""
    with api_calls.PlaygroundBlocks() as demo:
        state = gr.State(Session(TEMPLATE))
        token = api_calls.PageToken()
        box = gr.Textbox()
        status = gr.HTML()
        box.submit(handler, [state, box], [status, state])
        box.change(lambda text: text.upper(), box, box)
    guard.protect(demo, {status: lambda m: f"<b>{m}</b>"}, held=(state, token))
    return demo, token


def test_protect_adds_the_token_to_every_event_that_takes_the_session_and_checks_it_before_the_handler():
    calls = []

    def act(sess, text):
        calls.append(text)
        sess.say(f"did {text}")
        return f"did {text}", sess

    demo, token = _page(act)
    taking, other = demo.fns.values()
    assert taking.inputs[-1] is token and taking.outputs[-1] is token and len(taking.inputs) == 3
    assert token not in other.inputs and token not in other.outputs  # no session, no token
    dep = next(d for d in demo.config["dependencies"] if d["id"] == taking._id)
    assert dep["inputs"][-1] == token._id and dep["outputs"][-1] == token._id  # the page's config says so too
    # hidden from the API, as the session is
    assert len(demo.get_api_info()["named_endpoints"][f"/{taking.api_name}"]["parameters"]) == 1

    sess = Session(TEMPLATE)
    shown, kept, issued = taking.fn(sess, "a", "")
    assert (shown, kept) == ("did a", sess) and guard.TOKEN_FORM.fullmatch(issued)
    assert taking.fn(sess, "b", issued) == ("did b", sess, gr.skip())
    assert taking.fn(sess, "c", None) == ("did c", sess, gr.skip())  # an API call: runs, no token
    api = Session(TEMPLATE)
    assert taking.fn(api, "c", None) == ("did c", api, gr.skip()) and api.token is None

    fresh = Session(TEMPLATE)  # the server lost the state: the page still echoes its token
    status, kept, new = taking.fn(fresh, "d", issued)
    assert calls == ["a", "b", "c", "c"]  # the action was not carried out on a state the page never saw
    assert status == gr.skip() and kept is fresh and new == fresh.token != issued
    assert fresh.notice.text == SESSION_LOST_NOTE


def test_a_streaming_handler_is_checked_too_and_sends_the_token_once():
    def stream(sess, text):
        for word in ("one", "two"):
            yield word, sess

    demo, token = _page(stream)
    taking = next(iter(demo.fns.values()))
    sess = Session(TEMPLATE)
    outs = list(taking.fn(sess, "x", ""))
    assert [o[0] for o in outs] == ["one", "two"] and outs[1][2] == gr.skip() and outs[0][2] == sess.token
    fresh = Session(TEMPLATE)
    (only,) = list(taking.fn(fresh, "x", sess.token))
    assert only[0] == gr.skip() and only[1] is fresh and only[2] == fresh.token and fresh.editor_unknown


def test_an_api_call_without_the_token_is_taken_and_a_value_in_its_place_is_a_value_too_many():
    demo, token = _page(lambda sess, text: ("ok", sess))
    taking = next(iter(demo.fns.values()))
    values = [None, "text"]  # what gradio_client sends: None for the session, the shown value
    demo.validate_inputs(taking, values)
    assert values == [None, "text", None]
    for right in ([None, "t", ""], [None, "t", "0" * 32]):
        demo.validate_inputs(taking, right)
    for wrong in ([None, "t", "extra"], [None, "t", {"a": 1}], ["t", "u", None]):
        with pytest.raises(gr.Error) as info:
            demo.validate_inputs(taking, list(wrong))
        assert "takes 1 value" in str(info.value) and "this call sent 3" in str(info.value)


def test_the_page_wires_the_token_to_every_event_that_takes_its_session():
    """The real page: the Doctor's, the draft panel's and the parity view's events too, never a copy per handler."""
    from playground.ui import build_ui

    demo = build_ui("no-model", preload=False)
    token = next(b for b in demo.blocks.values() if isinstance(b, api_calls.PageToken))
    session = demo.panel_context.session
    taking = [f for f in demo.fns.values() if session in f.inputs]
    assert len(taking) > 20
    missing = [f.name for f in taking if f.inputs[-1] is not token or f.outputs[-1] is not token]
    assert not missing, missing
    assert all(token not in f.inputs for f in demo.fns.values() if session not in f.inputs)
    # the token's change (a new token: the page's first, or after a loss) takes the editor's text in and redraws
    change = [f for f in demo.fns.values() if token in getattr(f, "triggers_blocks", [token]) and
              any(t[0] == token._id and t[1] == "change" for t in f.targets)]
    assert len(change) == 1 and demo.panel_context.template in change[0].inputs


def test_the_token_box_is_hidden_and_takes_no_part_in_the_api():
    with api_calls.PlaygroundBlocks() as demo:
        token = api_calls.PageToken()
    config = next(c for c in demo.config["components"] if c["id"] == token._id)
    assert config["type"] == "textbox" and config["props"]["visible"] == "hidden" and config["skip_api"]
    assert config["props"]["elem_id"] == "page-token" and config["props"]["value"] == ""
