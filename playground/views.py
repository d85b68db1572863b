"""Every view of the page, derived from the session state (`playground.state.Session`).

`VIEWS` names each view, the state parts it depends on, and the function that draws it. `redraw(sess)` returns
a value for every view in `VIEWS` order: the drawn value for the views whose parts changed since they were
last drawn, ``gr.skip()`` for the others. The page (`playground.ui`) makes every view an output of every event
that changes the state, so one event updates all the views that depend on what it changed, and only those.
"""

from __future__ import annotations

from typing import Any, Callable

import gradio as gr

from . import render
from .icons import icon
from .inspector import details_html
from .state import Session, tool_call_name
from .streaming import STREAM_WINDOW, Drawn, draw

_NOTHING = ('<div class="tl-note">Nothing parsed yet: chat, paste or replay an example.</div>'
            '<div class="tl" data-status="empty" data-len="0"></div>')


class _Pass:
    """One redraw: the run's drawing is made once, for all the views that show a part of it."""

    def __init__(self, sess: Session):
        self.sess = sess
        self._drawn: Drawn | None = None

    @property
    def drawn(self) -> Drawn | None:
        s = self.sess
        if self._drawn is None and s.view is not None:
            live = not s.view.final
            self._drawn = draw(s.view, s.check, start=s.timeline_start,
                               window=STREAM_WINDOW if live else render.TIMELINE_MAX_CHARS,
                               preview=not live or s.preview_due)
        return self._drawn


def status(p: _Pass) -> str:
    n = p.sess.notice
    return render.status_html(n.text, n.kind)


def editor(p: _Pass) -> str:
    return p.sess.template_text


def template_status(p: _Pass) -> str:
    s = p.sess
    # #editor-set counts the page's replacements of the editor's text (not typing): the page's script then scrolls
    # the editor back to its first column, and forgets this browser's kept copy when the new text is not an edit;
    # its data-template tells reports made from another text (`render.stamped`)
    return (render.template_status_html(s.problem, s.template_text, origin=s.origin.describe(), edited=s.edited)
            + f'<span id="editor-set" data-n="{s.versions["editor"]}" data-edited="{int(s.edited)}" '
              f'data-template="{render.digest(s.template_text)}" hidden></span>')


def library(p: _Pass) -> Any:
    s = p.sess
    fam = s.origin.family if not s.edited else None
    return gr.update(value=fam)


def confirm(p: _Pass) -> Any:
    return gr.update(visible=p.sess.pending is not None)


def confirm_text(p: _Pass) -> str:
    pend = p.sess.pending
    if pend is None:
        return ""
    return render.confirm_html(pend.label, p.sess.origin.describe())


def chatbot(p: _Pass) -> Any:
    s = p.sess
    bubbles = render.history_to_chat(s.history)
    if s.chat_phase == "generating":
        return bubbles + (s.live_turn or [{"role": "assistant", "content": "…"}])
    return gr.update(value=bubbles)  # a whole replacement: never a patch on a live preview


def _inbox(box: str) -> Callable:
    def view(p: _Pass) -> Any:
        return p.sess.inbox.pop(box) if box in p.sess.inbox else gr.skip()

    view.__name__ = f"{box}_box"
    return view


def tool_box(p: _Pass) -> Any:
    s = p.sess
    value = s.inbox.pop("tool") if "tool" in s.inbox else None
    if s.pending_tool_calls:
        k, n = s.tool_call_position()
        name = tool_call_name(s.next_tool_call())
        hint = f"Tool result for {name or 'the tool call'}" + (
            f" ({k} of {n} calls: one result per call, in order)" if n > 1 else "")
    else:
        hint = "Tool result (after the model calls a tool)"
    return gr.update(placeholder=hint) if value is None else gr.update(value=value, placeholder=hint)


def send(p: _Pass) -> Any:
    """Send, Send tool result, Clear and Load model: off while a run goes (their handlers refuse then too)."""
    return gr.update(interactive=not p.sess.running)


def stop(p: _Pass) -> Any:
    return gr.update(interactive=p.sess.running)


def replay(p: _Pass) -> Any:
    """"Replay last run": on when there is a run to replay and nothing runs."""
    return gr.update(interactive=p.sess.run is not None and not p.sess.running)


#: Above the timeline and the reference badge while the editor's template does not load: what they show was
#: parsed with the last template that did.
STALE_NOTE = ('<div class="tl-note tl-stale" role="note">Shown with the last valid template: the editor\'s template '
              'has an error (see below the editor), so this run was not parsed again.</div>')

#: In place of the reference check's badge while the editor's template does not load: the last verdict was about
#: another template, so none is shown.
STALE_CHECK = (f'<span class="badge badge-neutral" id="check-stale">{icon("neutral")} Not checked against '
               'transformers: the editor\'s template has an error. The run shown was parsed with the last valid '
               'template.</span>')


def timeline(p: _Pass) -> str:
    # #run-mark tells the run checks made from another run (`render.stamped`); a streaming run is none of them yet
    if p.drawn is None:
        return _nothing(p.sess) + '<span id="run-mark" data-run="" hidden></span>'
    run = render.run_digest(p.sess.run) if p.sess.view.final else "live"
    return ((STALE_NOTE if p.sess.problem is not None else "") + p.drawn.timeline
            + f'<span id="run-mark" data-run="{run}" hidden></span>')


def _nothing(sess: Session) -> str:
    if sess.note:
        return f'<div class="tl-note">{render.escape(sess.note)}</div><div class="tl" data-status="empty" data-len="0"></div>'
    return _NOTHING


def legend(p: _Pass) -> str:
    return p.drawn.legend if p.drawn is not None else ""


def events(p: _Pass) -> Any:
    d, s = p.drawn, p.sess
    if d is None:
        return ""
    if d.final and s.inspect_at is not None:  # the rows around the inspected character (they may be cut)
        return render.events_html(s.view.events, around=s.inspect_at)
    return d.events if d.events is not None else gr.skip()


def message(p: _Pass) -> Any:
    d = p.drawn
    if d is None:
        return gr.update(value={})
    if d.message is None:
        return gr.skip()
    if isinstance(d.message, str):  # a message too large to show: the note beside the view says so
        return gr.update(value=None)
    # the final state goes out as a full replacement: Gradio streams diffs after the first yield, and a
    # dict/list diff applied in place could leave the last live preview on screen after "Done"
    return gr.update(value=d.message) if d.final else d.message


def message_note(p: _Pass) -> Any:
    d = p.drawn
    if d is None:
        return ""
    if d.message is None:
        return gr.skip()
    return render.message_note_html(d.message if isinstance(d.message, str) else None)


def turn(p: _Pass) -> Any:
    d = p.drawn
    if d is None:
        return gr.update(value=[])
    if d.turn is None:
        return gr.skip()
    return gr.update(value=d.turn) if d.final else d.turn


def check(p: _Pass) -> str:
    d = p.drawn
    if d is None:
        return ""
    if p.sess.problem is not None and d.check:  # no verdict on a template that is not the editor's
        return STALE_CHECK
    return d.check


def inspector(p: _Pass) -> str:
    s = p.sess
    return details_html(s.view, s.run.template_text if s.run is not None else s.template_text, s.inspect_at)


#: (name, state parts it depends on, draw function), in the order of the page's outputs
VIEWS: list[tuple[str, tuple[str, ...], Callable[[_Pass], Any]]] = [
    ("status", ("notice",), status),
    ("editor", ("editor",), editor),
    ("template_status", ("template",), template_status),
    ("library", ("template",), library),
    ("confirm", ("template",), confirm),
    ("confirm_text", ("template",), confirm_text),
    ("chatbot", ("chat",), chatbot),
    ("user_box", ("inbox",), _inbox("user")),
    ("tool_box", ("inbox", "phase"), tool_box),
    ("send", ("phase",), send),
    ("tool_btn", ("phase",), send),
    ("clear_btn", ("phase",), send),
    ("load_btn", ("phase",), send),
    ("stop", ("phase",), stop),
    ("replay_btn", ("run", "phase"), replay),
    ("timeline", ("run", "frame", "window", "template"), timeline),
    ("legend", ("run",), legend),
    ("events", ("run", "preview", "inspect"), events),
    ("message", ("run", "preview"), message),
    ("message_note", ("run", "preview"), message_note),
    ("turn", ("run", "preview"), turn),
    ("check", ("run", "template"), check),
    ("inspector", ("run", "inspect"), inspector),
]
NAMES = [name for name, _, _ in VIEWS]


def redraw(sess: Session) -> tuple:
    """A value per view (`VIEWS` order): drawn where its state parts changed, ``gr.skip()`` elsewhere."""
    p = _Pass(sess)
    return tuple(fn(p) if sess.changed(name, deps) else gr.skip() for name, deps, fn in VIEWS)


def initial(sess: Session, name: str) -> Any:
    """The value view ``name`` starts with (what the layout draws for a fresh session), unwrapped from
    ``gr.update``; marks nothing as drawn."""
    fn = next(f for n, _, f in VIEWS if n == name)
    value = fn(_Pass(sess))
    if isinstance(value, dict) and value.get("__type__") == "update":
        return value.get("value")
    return value
