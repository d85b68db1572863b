"""The state of one browser session: the page's single source of truth, and the only ways it changes.

Every view of the page (status line, editor, template status, library picker, confirmation bar, chat, input
boxes, buttons, timeline, legend, event log, message, parsed turn, check badge, inspector) is derived from one `Session` by `playground.views`. Handlers (`playground.handlers`) only
call the transitions below; each transition bumps the version of what it changed, and after every event the
page redraws exactly the views whose inputs changed (`Session.changed`), so no view can show a stale value.

The state machine
=================

template: what the editor holds
    ``text``; ``origin`` (where it came from: skeleton, tokenizer, library FAMILY, example FAMILY/TRANSCRIPT,
    draft, browser (restored edits), typed); ``baseline`` (the text as it came from its origin: the editor is
    *edited* when ``text != baseline``); ``problem`` (the `parsing.TemplateError`, or None); ``pending`` (a
    replacement waiting for the user's answer).

    offer(text, origin)   not edited, or same text  -> applied (editor redrawn)
                          edited                    -> pending (the confirmation bar asks)
    confirm()             pending -> applied;  keep_edits() pending -> dropped, edits kept
    edit(text)            typed in the editor: text and problem change, origin kept (the picker and the status
                          stop claiming an unedited template)
    restore(text, origin) the browser's kept copy of the editor, at page load

model: which model Send uses
    ``in_use`` (the model last loaded successfully; None until one is), ``failure`` (the last failed load, with
    its message).  loaded(name) -> in_use = name;  load_failed(name, message) -> in_use unchanged.

chat: the conversation, phase idle | generating | awaiting_tool
    idle/awaiting_tool --send_user--> generating;  awaiting_tool --send_tool--> generating (refused otherwise)
    awaiting_tool --add_tool_result--> awaiting_tool (parallel calls: one result per call, in order; the last
                  result is sent with send_turn, and only then does the model generate)
    generating --finish_turn(run, view)--> awaiting_tool when the parsed turn has tool calls, else idle
    generating --fail_turn()--> the sent turn is taken back, the phase before it
    any --clear()--> idle, no history
    The last assistant turn is derived from its run under the current template: a template edit re-parses it,
    so a tool call the edit stops parsing leaves the chat (and stops the page asking for a tool result).

run: the current Run and its parse, phase empty | streaming | done | stopped | cut | failed
    start_run(kind) -> streaming;  show(view) live updates;  finish_run(run, view, check, phase)
    end_stream() (it failed, or the client left) -> the run, parse and phase from before start_run
    reparse(view, check) (a template edit: same run, new parse);  drop_run() (memory, client left) -> empty
    A run that started with one template and ends after the editor changed is re-parsed with the editor's.

session: the page's hold on this state
    ``token`` (issued by `playground.guard` at the page's first event and echoed by the page with every event
    after it); a page that echoes a token this state never issued had a state the server lost (Gradio evicted it
    past ``--max-sessions``, it expired, or the server restarted) and was given this fresh one:
    lost()         every view is redrawn from this state (the page still shows the lost one's), saying so; the
                   editor is not, and its text is taken next (``editor_unknown``)
    adopt_editor(text)  the page's editor text becomes the template (as edits: a replacement asks first)

notice: the status line: text, kind (info, ok, error), topic. A change of a topic replaces the notice about it
    (an edit of the template replaces "Loaded the library template for qwen3"). The template's validity is said
    where it changes (`Session.edit`): an edit that breaks it says so; one that fixes it replaces the notice
    about the template, which may state the fault, whether or not a run is there to re-parse.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import parsing

from .jsonsize import json_size
from .session import (NBYTES_MESSAGE_CHARS, SKELETON_TEMPLATE, ParseView, Run, compiled_template, keep_parse,
                      template_to_text)

__all__ = ["Origin", "Notice", "Pending", "Session", "SESSION_LOST_NOTE", "TEMPLATE_ERROR_NOTE", "TEMPLATE_STALE_NOTE", "TOOL_CALL_KEY", "model_in_use", "tool_call_name"]

TOOL_CALL_KEY = "tool_calls"  # the message key the chat answers with tool results (what chat templates read)
RUN_PHASES = ("empty", "streaming", "done", "stopped", "cut", "failed")
CHAT_PHASES = ("idle", "generating", "awaiting_tool")


def tool_call_name(call: Any) -> str | None:
    """The function name of a parsed tool call (``{"function": {"name": ...}}``, the chat templates' shape), or
    None when the call has none."""
    fn = call.get("function") if isinstance(call, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    return name if isinstance(name, str) and name else None


@dataclass(frozen=True)
class Origin:
    """Where the editor's template came from: ``kind`` (skeleton, tokenizer, library, example, draft, browser,
    typed) and ``name`` (the family, ``family / transcript``, the model; "" when none)."""

    kind: str = "skeleton"
    name: str = ""

    @property
    def family(self) -> str | None:
        """The library family this template is, for the picker (library and example origins), else None."""
        if self.kind == "library":
            return self.name
        if self.kind == "example":
            return self.name.split(" / ", 1)[0]
        return None

    def describe(self) -> str:
        """``"the qwen3 library template"``, ``"the tokenizer's own template (…)"``, … for messages."""
        return {"library": f"the {self.name} library template",
                "example": f"the template of the example {self.name}",
                "tokenizer": f"the template of {self.name}" if self.name else "the tokenizer's template",
                "draft": "the drafted template",
                "browser": "your edits (kept by this browser)",
                "skeleton": "the default template",
                "typed": "a typed template"}.get(self.kind, self.kind)


@dataclass(frozen=True)
class Notice:
    """The status line: ``text``, ``kind`` ("info", "ok", "error") and ``topic`` (what it is about:
    "template", "model", "chat", "run", "export", "view" or "")."""

    text: str = ""
    kind: str = "info"
    topic: str = ""


@dataclass(frozen=True)
class Pending:
    """A template offered while the editor holds edits: ``text``, ``origin``, what to say, and ``then``: what to
    do once confirmed (None, or ``("example", family, transcript)`` to replay that example)."""

    text: str
    origin: Origin
    label: str
    then: tuple | None = None


#: The status line while the editor's template does not load (the fault itself is shown below the editor), and
#: what it adds while a run is shown (parsed with the last valid template).
TEMPLATE_ERROR_NOTE = "The template has an error (see below the editor)."
TEMPLATE_STALE_NOTE = " Nothing was re-parsed: the page shows the last valid template's parse."

#: The status line once the page learns that its session on the server was lost (`Session.lost`), and the note the
#: emptied timeline shows (and "Replay last run" says) until the next run.
SESSION_LOST_NOTE = ("This page's session on the server expired (it was idle too long, made room for newer "
                     "sessions, or the server restarted): its run and conversation are gone, so the page was "
                     "cleared; the template in the editor is kept. What you just did was not carried out: do it "
                     "again.")
SESSION_LOST_RUN_NOTE = ("The run this page showed is gone: its session on the server expired. Chat, paste or "
                         "replay an example.")

_NO_RUN = (None, None, None, "empty")  # Session._before_run when no stream is going

_VERSIONED = ("notice", "editor", "template", "chat", "inbox", "phase", "run", "frame", "preview", "window",
              "inspect", "model")


class Session:
    """Per-browser-session state (one `gr.State` value per visitor; see the module docstring).

    Read-only views for panels (`playground.ui.PanelContext`): ``run``, ``view``, ``check``, ``template_text``,
    ``model_id`` (the model in use), ``history``.
    """

    def __init__(self, template_text: str | None = None, origin: Origin | None = None, model: str | None = None):
        text = template_text if template_text is not None else template_to_text(SKELETON_TEMPLATE)
        # template
        self.template_text = text
        self.origin = origin or Origin()
        self.baseline = text
        self.problem: parsing.TemplateError | None = None
        self.refused = False  # the editor's last text was refused unread (`refuse_edit`)
        self.pending: Pending | None = None
        # model
        self.model_id: str | None = model
        self.model_failure: tuple[str, str] | None = None
        # chat
        self.history: list[dict] = []
        self.chat_phase = "idle"
        self.turn_run: Run | None = None  # the run of the last assistant turn
        self.pending_tool_calls: list = []
        self.tool_calls_asked = 0  # how many tool calls the last assistant turn made (answered one by one)
        self.live_turn: list | None = None  # chat bubbles of the turn being generated
        # run
        self.run: Run | None = None
        self.view: ParseView | None = None
        self.check: dict | None = None
        self.run_phase = "empty"
        # run, view, check, phase before the stream going (held only while it goes: `end_stream` puts them back)
        self._before_run: tuple = _NO_RUN
        self.note: str | None = None  # why the run is gone, when it was dropped for memory
        self.timeline_start: int | None = None
        self.inspect_at: int | None = None
        self.preview_due = True  # whether the current live frame carries the heavy previews
        # notice and one-shot values for input boxes
        self.notice = Notice()
        self.inbox: dict[str, str] = {}
        # the page's hold on this state (`playground.guard`): the token issued to it, the token of a lost state a
        # page echoed here, and whether the page's editor text is still to be taken in (`lost`)
        self.token: str | None = None
        self.lost_token: str | None = None
        self.editor_unknown = False
        self.versions = dict.fromkeys(_VERSIONED, 0)
        self.shown: dict[str, tuple] = {}
        self._check_template()

    # ------------------------------------------------------------------ bookkeeping

    def touch(self, *parts: str) -> None:
        """Mark ``parts`` (names in the module's version list) as changed."""
        for p in parts:
            self.versions[p] += 1

    def changed(self, view: str, deps: tuple[str, ...]) -> bool:
        """Whether view ``view`` (depending on ``deps``) must be redrawn; records that it now will be."""
        key = tuple(self.versions[d] for d in deps)
        # a view never drawn by an event shows what the layout drew from the fresh state (every version 0)
        if self.shown.get(view, (0,) * len(deps)) == key:
            return False
        self.shown[view] = key
        return True

    def say(self, text: str, kind: str = "info", topic: str = "") -> None:
        """Set the status line."""
        self.notice = Notice(text, kind, topic)
        self.touch("notice")

    # ------------------------------------------------------------------ template

    @property
    def edited(self) -> bool:
        """Whether the editor holds edits its origin did not give (unsaved work a replacement would lose); while
        the page's editor text after a lost session is not known yet (`lost`), it may hold any: counted as edits."""
        return self.template_text != self.baseline or self.editor_unknown

    def _check_template(self) -> None:
        self.refused = False
        try:
            compiled_template(self.template_text)
            self.problem = None
        except parsing.TemplateError as e:
            self.problem = e

    def offer(self, text: str, origin: Origin, label: str, then: tuple | None = None) -> bool:
        """Offer a template for the editor. Applied at once (returns True) unless the editor holds edits and the
        text differs; then it waits for `confirm` or `keep` (returns False)."""
        if self.edited and text != self.template_text:
            self.pending = Pending(text, origin, label, then)
            self.touch("template")
            return False
        self._apply(text, origin)
        return True

    def _apply(self, text: str, origin: Origin) -> None:
        self.template_text, self.origin, self.baseline, self.pending = text, origin, text, None
        self._check_template()
        self.touch("template", "editor")
        if self.notice.topic == "template":
            self.notice = Notice()
            self.touch("notice")

    def confirm(self) -> Pending | None:
        """Apply the pending replacement (returns it; None when nothing was pending)."""
        p = self.pending
        if p is not None:
            self._apply(p.text, p.origin)
        return p

    def keep_edits(self) -> Pending | None:
        """Drop the pending replacement, keeping the edits (returns it)."""
        p, self.pending = self.pending, None
        if p is not None:
            self.touch("template")
        return p

    def edit(self, text: str) -> bool:
        """The editor now holds ``text`` (typed). Returns whether it changed.

        The status line follows the template's validity here, where it changes, whatever the handler does next:
        a broken template replaces the status line with `TEMPLATE_ERROR_NOTE`; a fixed one replaces a notice
        about the template (said while it was broken, it may state the fault) with `template_valid_note`. A
        handler that then re-parses the run says so over it."""
        if text == self.template_text and not self.refused:
            return False
        was_edited, was_broken = self.edited, self.problem is not None
        self.template_text = text
        self._check_template()
        self.touch("template")
        if self.problem is not None:
            shown = self.run is not None or self.turn_run is not None
            self.say(TEMPLATE_ERROR_NOTE + (TEMPLATE_STALE_NOTE if shown else ""), "error", "template")
        elif was_broken and self.notice.topic == "template":
            self.say(self.template_valid_note(), "ok", "template")
        elif self.notice.topic == "template" and self.edited and not was_edited:
            self.say(f"Editing {self.origin.describe()}.", "info", "template")
        return True

    def refuse_edit(self, reason: str) -> None:
        """The editor's text was refused unread (``reason`` says why: longer than this server's template size
        limit). The box under the editor and the status line say so instead of keeping the last verdict; the
        session keeps the last text it read, and the next edit is read afresh, even one back to that text."""
        self.problem = parsing.TemplateError(reason)
        self.refused = True
        self.touch("template")
        self.say(reason, "error", "template")

    def template_valid_note(self) -> str:
        """The status line once an edit made the template valid again: when it applies (a run going is parsed
        with it when it ends; a run shown is re-parsed by the handler, which says so)."""
        if self.running:
            return "Template valid again; the run going is parsed with it when it ends."
        if self.run is not None or self.turn_run is not None:
            return "Template valid again."
        return "Template valid; it applies to the next run."

    def restore(self, text: str, origin: Origin) -> None:
        """The browser's kept copy of the editor (page load): its text, still counted as edits of ``origin``."""
        baseline = self.baseline if origin == self.origin else None
        self._apply(text, origin)
        if baseline is not None:
            self.baseline = baseline
        else:
            self.baseline = ""  # edits of a template this page did not give: kept as edits
        self.touch("template")

    # ------------------------------------------------------------------ the page's hold on this state

    def lost(self) -> None:
        """This fresh state replaces one the server lost while its page still showed it (`playground.guard`
        found the page's token unknown): every view but the editor is redrawn from it, the status line and the
        emptied timeline say what happened (`SESSION_LOST_NOTE`), and the page's editor text, which the page
        kept, is to be taken in (`adopt_editor`; until then the editor counts as edited)."""
        self.editor_unknown = True
        self.note = SESSION_LOST_RUN_NOTE
        self.say(SESSION_LOST_NOTE, "error", "session")
        self.touch(*(part for part in _VERSIONED if part != "editor"))

    def adopt_editor(self, text: str) -> None:
        """After `lost`: ``text``, what the page's editor holds, becomes the template (counted as edits, as a
        restored copy is: a library pick asks before replacing it); the editor itself is not redrawn."""
        self.editor_unknown = False
        if text == self.template_text:
            self.touch("template")
            return
        self.template_text, self.origin, self.baseline, self.pending = text, Origin("browser"), "", None
        self._check_template()
        self.touch("template")

    # ------------------------------------------------------------------ model

    def loaded(self, name: str) -> None:
        """A model finished loading: Send uses it from now on."""
        self.model_id, self.model_failure = name, None
        self.touch("model")

    def load_failed(self, name: str, message: str) -> None:
        """A load failed: the model in use stays."""
        self.model_failure = (name, message)
        self.touch("model")

    # ------------------------------------------------------------------ chat

    def send_turn(self, turn: dict) -> None:
        """A user or tool turn was sent; the model generates (phase generating). A tool turn answers the oldest
        unanswered tool call (see `next_tool_call`)."""
        self._before_send = (self.chat_phase, list(self.pending_tool_calls))
        if turn.get("role") == "tool" and self.pending_tool_calls:
            self.pending_tool_calls.pop(0)
        self.history.append(turn)
        self.chat_phase = "generating"
        self.live_turn = None
        self.touch("chat", "phase")

    def add_tool_result(self, turn: dict) -> None:
        """A tool result for the oldest unanswered call when others still wait (parallel tool calls): it joins
        the history and the chat keeps waiting (phase awaiting_tool); the model generates only after the last
        result (`send_turn`)."""
        if len(self.pending_tool_calls) < 2:
            raise ValueError("the last tool result is sent with send_turn: the model answers it")
        self.pending_tool_calls.pop(0)
        self.history.append(turn)
        self.touch("chat", "phase")

    def tool_call_position(self) -> tuple[int, int]:
        """(k, n): the next tool result answers call k of the n the last assistant turn made (1-based);
        (0, 0) when no call waits."""
        if not self.pending_tool_calls:
            return 0, 0
        n = max(self.tool_calls_asked, len(self.pending_tool_calls))
        return n - len(self.pending_tool_calls) + 1, n

    def next_tool_call(self) -> dict | None:
        """The oldest tool call still waiting for its result, or None."""
        return self.pending_tool_calls[0] if self.pending_tool_calls else None

    def finish_turn(self, run: Run, view: ParseView) -> None:
        """The assistant turn of ``run`` ended: it joins the history as parsed; tool calls make the chat wait."""
        self.history.append(self._assistant_message(run, view))
        self.turn_run = run
        self._set_tool_calls(view.message)
        self.live_turn = None
        self.touch("chat", "phase")

    def fail_turn(self) -> None:
        """The turn could not be generated: take the sent turn back."""
        if self.chat_phase == "generating" and self.history:
            self.history.pop()
        phase, calls = getattr(self, "_before_send", ("idle", []))
        self.chat_phase, self.pending_tool_calls = phase, calls
        self.live_turn = None
        self.touch("chat", "phase")

    def clear(self) -> None:
        """Forget the conversation."""
        self.history, self.pending_tool_calls, self.turn_run, self.live_turn = [], [], None, None
        self.tool_calls_asked = 0
        self.chat_phase = "idle"
        self.touch("chat", "phase")

    def show_turn(self, bubbles: list) -> None:
        """The live preview of the turn being generated."""
        self.live_turn = bubbles
        self.touch("chat")

    def _set_tool_calls(self, message: dict | None) -> None:
        calls = (message or {}).get(TOOL_CALL_KEY) or []
        self.pending_tool_calls = list(calls) if isinstance(calls, list) else [calls]
        self.tool_calls_asked = len(self.pending_tool_calls)
        self.chat_phase = "awaiting_tool" if self.pending_tool_calls else "idle"

    @staticmethod
    def _assistant_message(run: Run, view: ParseView) -> dict:
        # The turn is the assistant's whatever the parse says (the prompt ended in the generation prompt): a template
        # without `"defaults": {"role": "assistant"}` (or with another role) would otherwise leave a turn the
        # conversation does not show and the next prompt renders wrongly. The Message view keeps the parse as is.
        if view.message is not None:
            return dict(view.message, role="assistant", _raw=run.text)  # the JSON keeps it all
        return {"role": "assistant", "content": run.text, "_raw": run.text}

    def reparse_turn(self, view: ParseView) -> None:
        """The last assistant turn parsed again (the template changed): the history and the tool calls the chat
        waits for follow the new parse."""
        if self.turn_run is None or not self.history or self.history[-1].get("role") != "assistant" \
                or self.chat_phase == "generating":
            return
        self.history[-1] = self._assistant_message(self.turn_run, view)
        self._set_tool_calls(view.message)
        self.touch("chat", "phase")

    # ------------------------------------------------------------------ run

    def start_run(self) -> None:
        """A stream (generation or replay) begins (what was shown before it comes back if it fails: `end_stream`)."""
        self._before_run = (self.run, self.view, self.check, self.run_phase)
        self.run_phase = "streaming"
        self.timeline_start = None
        self.inspect_at = None
        self.touch("phase", "run", "inspect", "window")

    def show(self, view: ParseView, preview: bool) -> None:
        """A live frame of the stream; ``preview``: it carries the heavy previews (message, turn, log)."""
        self.view = view
        self.preview_due = preview
        self.touch("frame")
        if preview:
            self.touch("preview")

    def finish_run(self, run: Run | None, view: ParseView | None, check: dict | None, phase: str = "done") -> None:
        """The run ended (or a run was parsed in one go): it becomes the current run."""
        self._before_run = _NO_RUN  # the run before it is not needed any more: free it
        self.keep(run, view, check)
        self.run_phase = phase
        self.inspect_at = None if self.inspect_at is not None and (view is None or self.inspect_at >= len(view.text)) \
            else self.inspect_at
        self.touch("phase", "run", "frame", "preview", "inspect")

    def end_stream(self) -> None:
        """The stream ended without a final state (it failed, or the client left): no run is going any more. Its
        live frames were of a run that now does not exist, so the run shown before it comes back (the timeline
        stops saying it streams), and a chat turn it was generating is taken back (`fail_turn`)."""
        if self.run_phase == "streaming":
            self.run, self.view, self.check, self.run_phase = self._before_run
            self._before_run = _NO_RUN
            self.touch("phase", "run", "frame", "preview", "inspect")
        if self.chat_phase == "generating":
            self.fail_turn()

    def reparse(self, view: ParseView, check: dict | None) -> None:
        """The current run parsed again with the editor's template."""
        self.keep(self.run, view, check)
        self.touch("run", "frame", "preview", "inspect")

    def keep(self, run: Run | None, view: ParseView | None, check: dict | None) -> None:
        """Make ``run`` the current run with its parse and check (the check without the reference's message,
        which only the page needed)."""
        self.run, self.view = run, keep_parse(run, view)
        self.check = {k: v for k, v in check.items() if k != "ref_message"} if check else check

    def drop_run(self) -> None:
        """Forget the current run and its parse (memory pressure, or the client left)."""
        self.run = self.view = self.check = None
        self._before_run = _NO_RUN
        if self.turn_run is not None:
            self.turn_run = None
        self.run_phase = "empty"
        self.touch("run", "phase", "frame", "preview", "inspect")

    def go_to(self, start: int | None) -> None:
        """Move the timeline window to start at character ``start`` (None: show the end)."""
        self.timeline_start = start
        self.touch("window")

    def pin(self, x: int | None) -> None:
        """Pin the inspector on character ``x`` (None: unpin)."""
        self.inspect_at = x
        self.touch("inspect")

    def hand_back(self, box: str, text: str) -> None:
        """Put ``text`` into input box ``box`` ("user" or "tool") on the next redraw (clearing: "")."""
        self.inbox[box] = text
        self.touch("inbox")

    # ------------------------------------------------------------------ memory and copies

    @property
    def running(self) -> bool:
        """Whether a stream is going."""
        return self.run_phase == "streaming"

    @property
    def nbytes(self) -> int:
        """Approximate bytes this session holds (run, parse, conversation)."""
        size = len(self.template_text) + len(self.baseline) + json_size(self.history, NBYTES_MESSAGE_CHARS)
        if self.run is not None:
            size += self.run.nbytes
        if self.view is not None:
            size += self.view.nbytes
        if self.turn_run is not None and self.turn_run is not self.run:
            size += self.turn_run.nbytes
        return size + json_size(self.check or {}, NBYTES_MESSAGE_CHARS)

    def __deepcopy__(self, memo):
        new = Session.__new__(Session)
        for k, v in self.__dict__.items():
            # runs and parses are never changed in place: share them; copy what transitions mutate
            new.__dict__[k] = v if k in ("run", "view", "check", "turn_run", "problem", "_before_run") \
                else copy.deepcopy(v, memo)
        return new


def model_in_use(sess: Any, model_box: str | None) -> str:
    """The model the page uses (the last one loaded: ``Session.model_id``), else the one typed in the model box
    (``""`` when neither). A failed load leaves the box naming a model that is not loaded: panels that need the
    model's tokenizer (the Doctor, the draft panel) must not use that one."""
    return getattr(sess, "model_id", None) or (model_box or "")
