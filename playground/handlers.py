"""What the page does for each user action: named handler functions on the session state.

Each handler takes the session (`playground.state.Session`) and plain values (text of boxes, numbers, a
`ChatSettings`, the page's `PageConfig`), changes the session only through its transitions, and returns it, or,
for streams, yields it after each update. No Gradio here: the page (`playground.ui`) turns the returned session
into component values with `playground.views.redraw`, and the tests call these functions directly.

Errors a user can fix (a broken template, an oversized input, a model that will not load) become the status
line (`Session.say` with kind "error"); nothing raises out of a handler except `RequestCancelled` (the client
left) and bugs, which `playground.guard` turns into a message.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

from parsing.streams import tokenish_chunks

from . import backends, guard, remote_panel, render
from .export import export_template, fresh_export_dir
from .jsonsize import json_size
from .library import SKELETON_CHOICE, TOKENIZER_CHOICE, example_run, example_transcript_names, library_template_text
from .limits import Limits, cut_message
from .reference import reference_check
from .session import SKELETON_TEMPLATE, LiveParse, Run, field_name_hints, parse_run, parse_tools, template_to_text
from .state import SESSION_LOST_NOTE, Origin, Session, tool_call_name
from .streaming import PREVIEW_INTERVAL, Pacer, Throttle, live_preview, stream_views

__all__ = ["PageConfig", "ChatSettings", "ExportOutcome", "edit_template", "pick_library", "confirm_replace",
           "keep_edits", "restore_editor", "after_lost_session", "load_model", "send_user", "send_tool", "stop", "clear_chat",
           "paste_parse", "paste_replay", "replay_last", "example_replay", "export", "move_window", "inspect",
           "parse_timeline_start", "check_against_reference"]


@dataclass
class PageConfig:
    """What one page (all its sessions) was built with: the default model, ``trust_remote_code``, the limits,
    the configured remote servers and whether typed server URLs are allowed."""

    default_model: str = ""
    trust_remote_code: bool = False
    limits: Limits = field(default_factory=lambda: guard.limits())
    remotes: list = field(default_factory=list)
    allow_any_remote: bool = False


@dataclass
class ChatSettings:
    """The chat tab's settings: system prompt, tools JSON text, thinking, sampling, and the backend (``"local"``
    or a server name / ``"custom-url"`` with ``remote_url``); ``model_box`` is the model id typed in the box
    (a server backend generates with it; the local backend uses the model loaded with Load model)."""

    system: str = ""
    tools_text: str = ""
    thinking: bool = True
    max_new_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = 0
    backend: str = remote_panel.LOCAL
    remote_url: str = ""
    model_box: str = ""

    def sampling(self, max_new_tokens_limit: int) -> dict:
        """Keyword arguments for generation: max_new_tokens, temperature, top_p, seed (None: random).

        Raises ValueError, in the page's words, for a value generation cannot take: NaN or infinity (the sliders'
        range check lets NaN through), a fraction where a whole number goes, or a value outside its range (the
        seed: -1 or empty for random, else 0 to `SEED_MAX`, what ``transformers.set_seed`` takes).
        """
        _check_number("Max new tokens", self.max_new_tokens, 1, max_new_tokens_limit, whole=True)
        _check_number("Temperature", self.temperature, *TEMPERATURE_RANGE)
        _check_number("Top-p", self.top_p, *TOP_P_RANGE)
        seed = self.seed
        if seed is not None and seed != -1:
            _check_number("Seed", seed, 0, SEED_MAX, whole=True, rule=f"-1 (random) or {_whole_rule(0, SEED_MAX)}")
        return dict(max_new_tokens=int(self.max_new_tokens), temperature=float(self.temperature),
                    top_p=float(self.top_p), seed=None if seed is None or seed == -1 else int(seed))


#: The generation settings' ranges (the page's sliders and seed box use them too).
TEMPERATURE_RANGE = (0.0, 2.0)
TOP_P_RANGE = (0.05, 1.0)
SEED_MAX = 2**32 - 1  # numpy's seed range, which transformers.set_seed hands it to


def _whole_rule(lo: int, hi: int) -> str:
    return f"a whole number from {lo:,} to {hi:,}"


def _check_number(what: str, value: Any, lo: float, hi: float, whole: bool = False, rule: str | None = None) -> None:
    """Raise ValueError (``"<what> must be <rule>; got <value>."``) unless ``value`` is a finite number (whole
    when ``whole``) from ``lo`` to ``hi``."""
    rule = rule or (_whole_rule(lo, hi) if whole else f"a number from {lo:g} to {hi:g}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be {rule}; got {guard.json_type(value)}.")
    if not math.isfinite(value) or (whole and value != int(value)) or not lo <= value <= hi:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
        raise ValueError(f"{what} must be {rule}; got {shown}.")


# ---------------------------------------------------------------- stopping runs

_STOPS: dict[str, threading.Event] = {}  # session hash -> the Stop event of its running stream


def _stop_event(session_hash: str | None) -> threading.Event:
    ev = threading.Event()
    if session_hash:
        _STOPS[session_hash] = ev
    return ev


def _release(session_hash: str | None, ev: threading.Event) -> None:
    if session_hash and _STOPS.get(session_hash) is ev:
        _STOPS.pop(session_hash, None)


def stop(session_hash: str | None) -> bool:
    """Stop the stream (generation or replay) that session is running; returns whether one was running. The
    stream's own last update says "Stopped" and disables Stop."""
    ev = _STOPS.get(session_hash) if session_hash else None
    if ev is None:
        return False
    ev.user_requested = True
    ev.set()
    return True


# ---------------------------------------------------------------- helpers


def check_against_reference(run: Run, view, template_text: str | None = None) -> dict:
    """The side-by-side transformers check of ``view`` under the limits in force (stopped if the client leaves)."""
    return reference_check(run, view, template_text, budget=guard.limits().reference_budget,
                           cancel=guard.cancel_event(), public=guard.limits().public)


def _cut_text(view) -> str:
    """What the request's time budget cut from ``view``, and how to run it without limits."""
    cut = view.cut
    total = len(view.text) - view.prefix_length
    return cut_message(guard.limits().request_budget, max(0, cut["start"] - view.prefix_length), total)


def _say_done(sess: Session, view, text: str, topic: str = "run", level: str = "ok") -> None:
    """Say that a run or re-parse ended: what the budget cut, else ``text`` at ``level``, unless the parse itself
    went wrong (a region error, nothing parsed), which the status line must say instead of a success mark."""
    if view.cut is not None:
        sess.say(_cut_text(view), "error", topic)
        return
    trouble = parse_trouble(view)
    if trouble is not None:
        sess.say(f"{text.rstrip('.')}, but {trouble}", "error", topic)
    else:
        sess.say(text, level, topic)


def parse_trouble(view) -> str | None:
    """What went wrong in a final parse that still returned, in one sentence for the status line; None when
    nothing did. A message too large to show comes first (`Limits.max_message_chars`); then region errors; then a parse that kept nothing of the output (every character
    discarded: no field opened, and the template has no implicit field to take the text), said with its likely
    cause: a start anchor missing from the prompt (a template for another format), else the fields' opens; last,
    a start anchor missing from the prompt while fields did parse (the prompt itself was parsed as output)."""
    if view is None or not view.final:
        return None
    size = getattr(view, "message_size", None)
    if size is not None:  # the Message view says the rest (`render.message_too_large`)
        return (f"the parsed message is too large to show: as JSON it is at least {size:,} characters, over this "
                f"server's limit of {view.message_limit:,}, because the template repeats values. See the Message view.")
    errors = list(view.errors or [])
    if errors:
        first = str(errors[0].get("message", "")).strip().splitlines()[0] if errors[0].get("message") else "?"
        if len(first) > 160:
            first = first[:159] + "…"
        more = len(errors) - 1 + int(getattr(view, "errors_dropped", 0) or 0)
        field_name = errors[0].get("field")
        where = f" in {field_name}" if field_name and not first.startswith(f"{field_name}:") else ""
        return (f"a region failed{where}: {first.rstrip('.')}" + (f" (and {more} more)" if more else "")
                + ". See the timeline.")
    generated = len(view.text) - view.prefix_length
    if generated > 0 and view.segments and all(seg["kind"] == "discarded" for seg in view.segments):
        if view.anchor_missing:
            return (f"nothing of the output was parsed: {render.ANCHOR_MISSING} and no field opened, so every "
                    f"character was discarded. Pick a template for this model's format, or fix start_anchor.")
        return ("nothing of the output was parsed: no field opened and the template has no implicit field, so "
                "every character was discarded. Check the fields' open delimiters against the output.")
    if view.anchor_missing:
        return render.ANCHOR_MISSING_NOTE
    return None


#: The status line when an action that would contradict a running stream (Send, Clear, Load model, a replay) is
#: refused: the buttons for them are off while a run goes, so only an API call or a late click gets this.
RUN_GOING = "A run is going: wait for it or press Stop."


def _refused_while_running(sess: Session, topic: str) -> bool:
    """Whether a stream is going (then the status line says so, under ``topic``): actions that change the
    conversation, the model or the current run wait for it, so the page never shows a run the chat or the status
    line contradicts."""
    if sess.running:
        sess.say(RUN_GOING, "error", topic)
    return sess.running


def _template_first(sess: Session, editor_text: str | None) -> bool:
    """Take the editor's latest text (an edit event may still be on its way); False (with the fault in the status
    line) when it does not load."""
    if editor_text is not None:
        sess.edit(editor_text)
    if sess.problem is not None:
        sess.say(f"Fix the template first: {sess.problem.describe()}", "error", "template")
        return False
    return True


# Parses of one run a one-shot handler makes at most while the template keeps changing under it.
PARSE_TRIES = 3


def _parse_with_editor_template(sess: Session, run: Run) -> tuple[Run, Any]:
    """Parse ``run`` with the editor's template. Gradio runs an edit (or a library pick) alongside a parse of the
    same session: one that lands while the parse runs re-parses the run shown then, and this parse, ending later,
    would show a result of the old template next to the new one (trial 13 F9). So while the template changed
    during the parse (and still loads), parse again with the new one, `PARSE_TRIES` times at most.

    Returns ``(run, view)``: the run with the ``template_text`` its view was parsed with."""
    for _ in range(PARSE_TRIES):
        text = sess.template_text
        if run.template_text != text:
            run = dataclasses.replace(run, template_text=text)
        view = parse_run(run, budget=guard.request_budget())
        if sess.template_text == text or sess.problem is not None:
            break
    return run, view


def _checked_with_editor_template(sess: Session, run: Run, view: Any) -> tuple[Run, Any, dict]:
    """The transformers check of ``run``'s parse ``view``, and the parse again while the editor's template changed
    during that check (a worker round trip of up to the reference budget: an edit landing then re-parsed the run
    shown before this one, or, while a stream still went, nothing, and this run was shown parsed with the old
    template, "valid" and "agrees": trial 14 S1), `PARSE_TRIES` times at most.

    Returns ``(run, view, check)``: the run with the ``template_text`` its view was parsed and checked with; to be
    committed at once (`Session.finish_run`), then `_follow_late_edit`."""
    for attempt in range(PARSE_TRIES):
        check = check_against_reference(run, view)
        text = sess.template_text
        if text == run.template_text or sess.problem is not None or attempt == PARSE_TRIES - 1:
            break
        run = dataclasses.replace(run, template_text=text)
        view = parse_run(run, budget=guard.request_budget())
    return run, view, check


def _follow_late_edit(sess: Session, run: Run, page: PageConfig) -> None:
    """After ``run`` was committed: an edit that landed after the last look of `_checked_with_editor_template`
    (or after its last try) re-parsed the run shown before, or nothing while the stream went; re-parse the
    committed run (and the chat's last turn) with the editor's template now."""
    if sess.template_text != run.template_text and sess.problem is None:
        _reparse_current(sess, page)


def _reparse_current(sess: Session, page: PageConfig, done: str | None = None, topic: str = "template") -> None:
    """Parse the current run (and the chat's last turn) again with the editor's template; the status line then
    says ``done`` (default: that the run was re-parsed), or what the time budget cut."""
    text = sess.template_text
    view = None
    if sess.run is not None:
        view = parse_run(sess.run, text, budget=guard.request_budget())
        sess.reparse(view, check_against_reference(sess.run, view, text))
    if sess.turn_run is not None:
        turn_view = view if sess.turn_run is sess.run else parse_run(sess.turn_run, text,
                                                                      budget=guard.request_budget())
        sess.reparse_turn(turn_view)
    if view is not None:
        _say_done(sess, view, done if done is not None else "Re-parsed the last run with the edited template.",
                  topic, "ok" if done is not None else "info")
    elif done is not None:
        sess.say(done, "ok", topic)


# ---------------------------------------------------------------- the template


def edit_template(sess: Session, text: str, page: PageConfig) -> Session:
    """The editor's text changed: validate it, and re-parse the last run and the chat's last turn with it (a
    template that does not load keeps the last good parse on screen; `Session.edit` sets the status line for
    the template's validity, a re-parse then says what it did)."""
    try:
        page.limits.check_size("The template", text, "max_template_chars")
    except ValueError as exc:  # said under the editor, where the last verdict would otherwise stay
        sess.refuse_edit(str(exc))
        return sess
    if not sess.edit(text) or sess.problem is not None:
        return sess
    if not sess.running:
        _reparse_current(sess, page)
    return sess


def _offer(sess: Session, text: str, origin: Origin, label: str, page: PageConfig, then: tuple | None = None,
           loaded: str | None = None) -> bool:
    """Offer a template to the editor (see `Session.offer`) and say what happened."""
    done = loaded or f"Loaded {label}."
    if not sess.offer(text, origin, label, then):
        sess.say(f"Replace your edits with {label}? Confirm above the editor.", "info", "template")
        return False
    if sess.problem is None and not sess.running:
        _reparse_current(sess, page, done)
    else:
        sess.say(done, "ok", "template")
    return True


def pick_library(sess: Session, choice: str | None, page: PageConfig) -> Session:
    """A pick in "Load a library template": the skeleton, the model's own (or best match), or a family. Replacing
    edited text waits for a confirmation."""
    if not choice:
        return sess
    if choice == SKELETON_CHOICE:
        _offer(sess, template_to_text(SKELETON_TEMPLATE), Origin("skeleton"), "the default template", page)
    elif choice == TOKENIZER_CHOICE:
        name = sess.model_id or page.default_model
        lm = remote_panel.tokenizer_or_model(name, page.trust_remote_code)
        tpl, note = backends.template_for_tokenizer(lm.tokenizer)
        _offer(sess, template_to_text(tpl or SKELETON_TEMPLATE), Origin("tokenizer", name),
               f"the template of {name}", page, loaded=f"Template: {note}.")
    else:
        _offer(sess, library_template_text(choice), Origin("library", choice), f"the library template for {choice}",
               page)
    return sess


def offer_template(sess: Session, offered: dict | None, page: PageConfig) -> Session:
    """A panel offers a template (``{"text", "kind", "name", "label"}``; the draft panel): like a library pick."""
    if not offered or not offered.get("text"):
        return sess
    origin = Origin(offered.get("kind", "typed"), offered.get("name", ""))
    _offer(sess, offered["text"], origin, offered.get("label") or origin.describe(), page)
    return sess


def confirm_replace(sess: Session, page: PageConfig, session_hash: str | None = None) -> Iterator[Session]:
    """Replace the edits with the offered template; an example replay that waited for this then runs (refused,
    the offer kept, while a run goes: the replay could not follow)."""
    if sess.pending is not None and sess.pending.then and _refused_while_running(sess, "run"):
        yield sess
        return
    pending = sess.confirm()
    if pending is None:
        yield sess
        return
    if pending.then and pending.then[0] == "example":
        yield from example_replay(sess, pending.then[1], pending.then[2], page, session_hash)
        return
    if sess.problem is None and not sess.running:
        _reparse_current(sess, page, f"Loaded {pending.label}.")
    else:
        sess.say(f"Loaded {pending.label}.", "ok", "template")
    yield sess


def keep_edits(sess: Session) -> Session:
    """Keep the edits: the offered template is dropped."""
    pending = sess.keep_edits()
    if pending is not None:
        skipped = " The example was not replayed." if pending.then and pending.then[0] == "example" else ""
        sess.say(f"Kept your edits ({pending.label} not loaded).{skipped}", "info", "template")
    return sess


def restore_editor(sess: Session, text: Any, page: PageConfig) -> Session:
    """Page load: the editor's text as the page's script put it back from this browser's kept copy (see
    `playground.theme.LOAD_EDITOR_JS`); nothing to do when it is the session's own text. A text longer than this
    server's template size limit stays in the editor, refused unread like a typed one (`Session.refuse_edit`: the
    size message under the editor), and the status line says it was restored."""
    if not isinstance(text, str) or not text.strip() or text == sess.template_text:
        return sess
    restored = "Restored the template you were editing in this browser."
    try:
        page.limits.check_size("The template", text, "max_template_chars")
    except ValueError as exc:
        sess.refuse_edit(str(exc))
        sess.say(f"{restored} {exc}", "error", "template")
        return sess
    sess.restore(text, Origin("browser", ""))
    sess.say(restored, "info", "template")
    return sess


def after_lost_session(sess: Session, text: Any, page: PageConfig) -> Session:
    """The page learned a new token for its session state (`playground.guard.hold`): at its first event, or after
    its state was lost (`Session.lost`), when the editor's text, which the page kept, becomes this state's template
    (`Session.adopt_editor`; over this server's size limit it is refused unread, as a typed one is). The page then
    redraws every view that changed: after a loss, all of them but the editor."""
    if not sess.editor_unknown:
        return sess
    if not isinstance(text, str):
        sess.editor_unknown = False
        return sess
    try:
        page.limits.check_size("The template", text, "max_template_chars")
    except ValueError as exc:
        sess.adopt_editor(sess.template_text)
        sess.refuse_edit(str(exc))
        sess.say(f"{sess.notice.text} {SESSION_LOST_NOTE}", "error", "session")
        return sess
    sess.adopt_editor(text)
    return sess


# ---------------------------------------------------------------- the model


def load_model(sess: Session, name: str, backend: str, remote_url: str, page: PageConfig) -> Session:
    """Load model ``name`` (or a server model's tokenizer); on success Send uses it and its template is offered
    to the editor; on failure the model in use stays. Refused while a run goes (the run keeps the model it
    started with, so "Loaded" would contradict it)."""
    if _refused_while_running(sess, "model"):
        return sess
    name = (name or "").strip()
    try:
        src = remote_panel.source_for(backend, remote_url, name, page.remotes, page.allow_any_remote,
                                      page.trust_remote_code)
        already = not src and backends.is_loaded(name, page.trust_remote_code)
        lm = src.load() if src else backends.load_model(name, page.trust_remote_code)
    except (backends.ModelLoadError, ValueError) as e:
        sess.load_failed(name, str(e))
        still = f" Still using {sess.model_id}." if sess.model_id else " No model is loaded."
        sess.say(f"{str(e).rstrip('.')}.{still}", "error", "model")
        return sess
    if not src:
        name = lm.name  # the model's label: one spelling per model ('a/../a' is 'a'; a public server's own name)
    sess.loaded(name)
    tpl, note = backends.template_for_tokenizer(lm.tokenizer)
    text = template_to_text(tpl if tpl is not None else SKELETON_TEMPLATE)
    what = f"the tokenizer of {src.label}; generation runs on the server" if src else backends.model_label(lm, already)
    applied = sess.offer(text, Origin("tokenizer", name), f"the template of {name}")
    ask = "" if applied else " Replace your edits with its template? Confirm above the editor."
    done = f"Loaded {what}. Template: {note}.{ask}"
    if applied and sess.problem is None and not sess.running:
        _reparse_current(sess, page, done, topic="model")
    else:
        sess.say(done, "ok", "model")
    return sess


# ---------------------------------------------------------------- chat


def send_user(sess: Session, text: str, editor_text: str | None, settings: ChatSettings, page: PageConfig,
              session_hash: str | None = None) -> Iterator[Session]:
    """Send a user message and stream the model's answer through the parser."""
    yield from _chat_turn(sess, "user", text, editor_text, settings, page, session_hash)


def send_tool(sess: Session, text: str, editor_text: str | None, settings: ChatSettings, page: PageConfig,
              session_hash: str | None = None) -> Iterator[Session]:
    """Send a tool result for the oldest unanswered tool call and stream the answer; refused (with a message,
    the text kept) when the last turn called no tool."""
    yield from _chat_turn(sess, "tool", text, editor_text, settings, page, session_hash)


def clear_chat(sess: Session) -> Session:
    """Forget the conversation (the current run stays on the timeline); refused while a run goes (its turn would
    land in the emptied chat with no user turn before it)."""
    if _refused_while_running(sess, "chat"):
        return sess
    from_chat = sess.run is not None and sess.run is sess.turn_run
    sess.clear()
    # the run stays on the timeline (a paste or an example is no part of the conversation): say whose it is
    sess.say("Conversation cleared." + (" The timeline still shows its last turn, until the next run."
                                        if from_chat else ""), "info", "chat")
    return sess


def trash_chat(sess: Session) -> Session:
    """The conversation's own trash icon (Gradio's, in the chat's header): the same as Clear. The icon has already
    emptied the chat on the page, so where Clear is refused (a run going) the chat is drawn again, whole."""
    if sess.running:
        sess.touch("chat")
    return clear_chat(sess)


def trash_turn(sess: Session) -> Session:
    """The parsed turn's trash icon (Gradio's): the turn is the current run's message drawn as a chat turn, which
    only a new parse replaces. The icon has already emptied it on the page: it is drawn again, and the status line
    says why."""
    sess.touch("preview")
    sess.say("The parsed turn shows the current run's message; it stays until the next run. "
             "Clear (beside Send) empties the conversation.", "info", "chat")
    return sess


def _chat_turn(sess: Session, kind: str, text: str, editor_text: str | None, settings: ChatSettings,
               page: PageConfig, session_hash: str | None) -> Iterator[Session]:
    limits = page.limits
    box = "user" if kind == "user" else "tool"
    if not (text or "").strip():
        sess.say("Type a message first." if kind == "user" else "Type a tool result first.", "error", "chat")
        yield sess
        return
    if _refused_while_running(sess, "chat"):
        yield sess
        return
    if kind == "tool" and sess.chat_phase != "awaiting_tool":
        sess.say("Refused: the last turn has no tool call to answer (under the current template), so there is "
                 "nothing to send a tool result for.", "error", "chat")
        yield sess
        return
    limits.check_size("The template", editor_text, "max_template_chars")
    limits.check_size("The tools JSON", settings.tools_text, "max_tools_chars")
    history = limits.max_history_chars  # measured up to the limit only: a parsed turn may repeat values (`json_size`)
    limits.check_size("The conversation (with the system prompt)", (json_size(sess.history, history) if history
                      else 0) + len(text) + len(settings.system or ""), "max_history_chars")
    if not _template_first(sess, editor_text):
        yield sess
        return
    try:
        tools = parse_tools(settings.tools_text)
        sampling = settings.sampling(limits.max_new_tokens)
    except ValueError as e:  # nothing was sent: the text stays in its box
        sess.say(str(e), "error", "chat")
        yield sess
        return
    tpl_text = sess.template_text
    if kind == "user":
        turn = {"role": "user", "content": text}
    else:
        turn = {"role": "tool", "content": text}
        call = sess.next_tool_call()  # the oldest unanswered call (add_tool_result/send_turn mark it answered)
        if tool_call_name(call):
            turn["name"] = tool_call_name(call)
        if isinstance(call, dict) and call.get("id"):
            turn["tool_call_id"] = call["id"]
        if len(sess.pending_tool_calls) > 1:  # parallel calls: the model answers after the last result
            k, n = sess.tool_call_position()
            sess.add_tool_result(turn)
            sess.hand_back(box, "")
            nxt = tool_call_name(sess.next_tool_call()) or "the next tool call"
            sess.say(f"Tool result {k} of {n} added. Now the result for {nxt} ({k + 1} of {n}); the model "
                     f"answers after the last one.", "info", "chat")
            yield sess
            return
    sess.send_turn(turn)
    sess.hand_back(box, "")
    stop_event = _stop_event(session_hash)
    sess.start_run()
    ended = False
    try:
        src = remote_panel.source_for(settings.backend, settings.remote_url, settings.model_box, page.remotes,
                                      page.allow_any_remote, page.trust_remote_code)
        model_name = settings.model_box if src else (sess.model_id or settings.model_box or page.default_model)
        note = ""
        if not src and sess.model_id and settings.model_box and settings.model_box.strip() != sess.model_id:
            note = f" (the model box names {settings.model_box.strip()}: press Load model to switch)"
        sess.say(f"Loading {model_name}…" if src or not sess.model_id else f"Generating with {model_name}…{note}",
                 "info", "chat")
        yield sess
        try:
            lm = src.load() if src else backends.load_model(model_name, page.trust_remote_code)
        except backends.ModelLoadError as e:
            if src is None:
                sess.load_failed(model_name, str(e))
            raise
        if src is None and sess.model_id is None:
            sess.loaded(model_name)
        msgs = ([{"role": "system", "content": settings.system}] if (settings.system or "").strip() else []) + \
            [{k: v for k, v in m.items() if k != "_raw"} for m in sess.history]
        template_kwargs = {"enable_thinking": bool(settings.thinking)}
        prompt = backends.render_prompt(lm, msgs, tools, template_kwargs)
        live = LiveParse(tpl_text, prompt, tools, budget=guard.request_budget(), regex_timeout=limits.regex_timeout)
        sess.say((f"Streaming from {src.label}… (Stop closes the stream)" if src else
                  "Generating… (Stop stops generate)") + note, "info", "chat")
        sess.show(live.view(), preview=False)
        yield sess
        record, times = [], []
        gen = src.stream(prompt, stop_event=stop_event, **sampling) if src else \
            backends.stream_generate(lm, prompt, stop_event=stop_event, **sampling)
        # The first chunk draws the timeline alone: the chat and message previews (the page's heaviest
        # drawing) follow at the preview interval, so the first update reaches the screen sooner.
        throttle = Throttle(PREVIEW_INTERVAL, first=False)
        try:
            for view in stream_views(live, gen, record, times):
                if view.final:
                    break
                preview = throttle()
                sess.show(view, preview)
                if preview:
                    sess.show_turn(live_preview(view)[1])
                yield sess
        finally:
            gen.close()
        stopped = getattr(stop_event, "user_requested", False)
        run = Run(prefix=prompt, chunks=tuple(record), template_text=tpl_text,
                  tools=tuple(tools) if tools else None, times=tuple(times),
                  source="remote" if src else "model", cut=src.outcome.cut if src else "",
                  request=src.request(msgs, tools, template_kwargs, sampling) if src else None)
        view = live.view()
        if sess.template_text != tpl_text and sess.problem is None:  # edited while it streamed
            run = dataclasses.replace(run, template_text=sess.template_text)
            view = parse_run(run, budget=guard.request_budget())
        run, view, chk = _checked_with_editor_template(sess, run, view)
        sess.finish_run(run, view, chk, "stopped" if stopped else ("cut" if run.cut else "done"))
        sess.finish_turn(run, view)
        _follow_late_edit(sess, run, page)
        ended = True
        calls = sess.pending_tool_calls
        ask = ("" if not calls else " A tool was called: answer with a tool result below." if len(calls) == 1 else
               f" A tool was called ({len(calls)} calls): answer each with a tool result below, in order; the "
               f"model answers after the last.")
        errs = f" Parse errors: {len(view.errors)}." if view.errors else ""
        word = "Stopped" if stopped else ("Cut" if run.cut else "Done")
        notes = "".join(f" {n}" for n in src.notes(run.text, sess.template_text, lm.tokenizer)) if src else ""
        done = f"{word}: {len(record)} chunks, {len(run.text)} characters.{errs}{ask}{notes}"
        if run.cut and view.cut is None:
            sess.say(done, "error", "chat")
        else:
            _say_done(sess, view, done, "chat")
        yield sess
    except Exception as e:  # noqa: BLE001 - a readable message, never a traceback
        if isinstance(e, guard.RequestCancelled):
            raise
        sess.end_stream()
        ended = True
        sess.hand_back(box, text)  # the box was cleared when the turn was sent: give the text back
        if isinstance(e, backends.ModelLoadError):
            msg = f"No model loaded: {str(e).rstrip('.')}. Load a model first; your message was kept."
        else:  # paths scrubbed on a public server, like every other failure the guard words
            msg = guard.message_for(e)
        sess.say(msg, "error", "chat")
        yield sess
    finally:
        _release(session_hash, stop_event)
        if not ended:  # the client left mid-stream
            sess.end_stream()


# ---------------------------------------------------------------- paste, replay, examples


def _paste_run(raw: str, prefix: str, tools_text: str, sess: Session, page: PageConfig) -> Run:
    limits = page.limits
    limits.check_size("The pasted output", raw, "max_paste_chars")
    limits.check_size("The prompt prefix", prefix, "max_prefix_chars")
    limits.check_size("The tools JSON", tools_text, "max_tools_chars")
    tools = parse_tools(tools_text)
    return Run(prefix=prefix or "", chunks=tuple(tokenish_chunks(raw or "")), template_text=sess.template_text,
               tools=tuple(tools) if tools else None, source="paste")


def paste_parse(sess: Session, raw: str, prefix: str, tools_text: str, editor_text: str | None,
                page: PageConfig) -> Session:
    """Parse pasted model output in one go (its chunks as a tokenizer would cut words)."""
    if _refused_while_running(sess, "run"):
        return sess
    if not _template_first(sess, editor_text):
        return sess
    try:
        run = _paste_run(raw, prefix, tools_text, sess, page)
    except ValueError as e:
        sess.say(str(e), "error", "run")
        return sess
    run, view = _parse_with_editor_template(sess, run)
    run, view, check = _checked_with_editor_template(sess, run, view)
    sess.finish_run(run, view, check)
    _follow_late_edit(sess, run, page)
    sess.timeline_start = None
    count = len(raw or "")
    _say_done(sess, view, f"Parsed {count:,} character{'' if count == 1 else 's'}.")
    return sess


def paste_replay(sess: Session, raw: str, prefix: str, tools_text: str, editor_text: str | None,
                 page: PageConfig, session_hash: str | None = None) -> Iterator[Session]:
    """Stream pasted model output through the parser, paced to about `streaming.REPLAY_SECONDS`."""
    if not _template_first(sess, editor_text):
        yield sess
        return
    try:
        run = _paste_run(raw, prefix, tools_text, sess, page)
    except ValueError as e:
        sess.say(str(e), "error", "run")
        yield sess
        return
    yield from _replay(sess, run, page, "Replaying pasted text", session_hash)


def replay_last(sess: Session, editor_text: str | None, page: PageConfig,
                session_hash: str | None = None) -> Iterator[Session]:
    """Replay the current run with its original chunk boundaries and the editor's template."""
    if sess.run is None:
        sess.say(sess.note or "Nothing to replay yet.", "info", "run")
        yield sess
        return
    if not _template_first(sess, editor_text):
        yield sess
        return
    yield from _replay(sess, sess.run, page, "Replaying", session_hash)


def example_replay(sess: Session, family: str, transcript: str, page: PageConfig,
                   session_hash: str | None = None) -> Iterator[Session]:
    """Load an example's template (asking first when it would replace edits) and replay its transcript.

    A transcript that is not one of ``family``'s is the previous family's, sent before the page had the new list
    (a Replay right after a family pick): the family's first transcript is replayed, the one the list then shows.
    """
    if _refused_while_running(sess, "run"):  # before its template is offered: a refused replay changes nothing
        yield sess
        return
    names = example_transcript_names(family)
    if names and transcript not in names:
        transcript = names[0]
    try:
        run = example_run(family, transcript)
    except ValueError as e:
        sess.say(str(e), "error", "run")
        yield sess
        return
    label = f"the template of the example {family} / {transcript}"
    if not sess.offer(run.template_text, Origin("example", f"{family} / {transcript}"), label,
                      then=("example", family, transcript)):
        sess.say(f"Replace your edits with {label}? Confirm above the editor; the replay follows.", "info",
                 "template")
        yield sess
        return
    yield from _replay(sess, run, page, f"Replaying {family} / {transcript}", session_hash)


def _replay(sess: Session, run: Run, page: PageConfig, label: str, session_hash: str | None) -> Iterator[Session]:
    if _refused_while_running(sess, "run"):
        yield sess
        return
    budget = guard.request_budget()  # parsing and drawing count on it; the pacing does not
    tpl_text = sess.template_text
    live = LiveParse(tpl_text, run.prefix, list(run.tools) if run.tools else None, budget=budget,
                     regex_timeout=page.limits.regex_timeout)
    stop_event = _stop_event(session_hash)
    pace = Pacer.for_replay(len(run.chunks))
    throttle = Throttle(PREVIEW_INTERVAL)
    record, times = [], []
    sess.start_run()
    sess.say(f"{label}…", "info", "run")
    ended = False
    try:
        for view in stream_views(live, run.chunks, record, times, pace=lambda: live.failed or pace(),
                                 stop=stop_event):
            if view.final:
                break
            if live.failed and budget.exhausted:
                continue  # cut by the budget: the rest goes straight to the final (unparsed) view
            sess.show(view, throttle())
            yield sess
        stopped = getattr(stop_event, "user_requested", False)
        # A replay plays back a run that exists whole (the last run, a paste, an example): Stop halts the
        # playback only. The run stays whole and is shown parsed to its end, so the timeline, the message, the
        # chat and later re-parses all describe the same text.
        new_run = dataclasses.replace(run, template_text=tpl_text)
        view = live.view()
        edited = sess.template_text != tpl_text and sess.problem is None  # edited while it streamed
        if edited:
            new_run = dataclasses.replace(new_run, template_text=sess.template_text)
        if edited or (stopped and len(record) < len(run.chunks)):
            view = parse_run(new_run, budget=guard.request_budget())
        new_run, view, check = _checked_with_editor_template(sess, new_run, view)
        sess.finish_run(new_run, view, check, "stopped" if stopped else "done")
        _follow_late_edit(sess, new_run, page)
        ended = True
        if stopped:
            sess.say(f"{label}: Stopped the playback after {len(record)} of {len(run.chunks)} chunks; the run is kept "
                     f"whole and shown parsed to its end.", "info", "run")
        else:
            _say_done(sess, view, f"{label}: done, {len(run.chunks)} chunks.")
        yield sess
    finally:
        _release(session_hash, stop_event)
        if not ended:
            sess.end_stream()


# ---------------------------------------------------------------- export, timeline window, inspector


@dataclass
class ExportOutcome:
    """What an export produced: ``ok`` (round trip passed), ``message``, ``file_name`` (the zip's name, shown
    instead of any server path), ``zip_path`` (served for download; None when the export failed), ``warning``."""

    ok: bool
    message: str
    file_name: str = ""
    zip_path: str | None = None
    warning: str = ""  # the export worked, but the template does not fit the model (`ExportResult.warning`)


def export(sess: Session, editor_text: str | None, page: PageConfig) -> tuple[Session, ExportOutcome]:
    """Save the editor's template into a copy of the model's tokenizer, reload it, and zip the folder."""
    if not _template_first(sess, editor_text):
        return sess, ExportOutcome(False, sess.notice.text)
    name = sess.model_id or page.default_model
    lm = remote_panel.tokenizer_or_model(name, page.trust_remote_code)
    res = export_template(lm.tokenizer, sess.template_text, fresh_export_dir())
    out = ExportOutcome(res.roundtrip_ok, res.message, res.zip_path.name, str(res.zip_path), res.warning)
    said = f"{res.message} {res.warning}" if res.warning else res.message
    sess.say(said, "error" if not res.roundtrip_ok else "info" if res.warning else "ok", "export")
    return sess, out


def parse_timeline_start(value, length: int) -> int | None:
    """The "Timeline from" box as a character offset: None when empty (show the end), else a
    whole number from 0 to ``length``.  Raises ValueError with a message for the user otherwise."""
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    hint = f"Enter a whole number from 0 to {length}, or leave it empty to show the end."
    if not text.isascii() or not text.isdigit():
        shown = text if len(text) <= 30 else text[:30] + "…"
        raise ValueError(f"Timeline from: {shown!r} is not a character position. {hint}")
    if len(text) > 18 or int(text) > length:
        raise ValueError(f"Timeline from: {text if len(text) <= 30 else text[:30] + '…'} is past the end of "
                         f"the text ({length} characters). {hint}")
    return int(text)


def move_window(sess: Session, start: str | None) -> Session:
    """Move the timeline's drawn window to start at the typed character (empty: the end)."""
    if sess.view is None:
        sess.say("Nothing parsed yet: there is no timeline to move.", "error", "view")
        return sess
    n = len(sess.view.text)
    try:
        a = parse_timeline_start(start, n)
    except ValueError as e:
        sess.say(str(e), "error", "view")
        return sess
    lo, hi = render.timeline_window(n, render.TIMELINE_MAX_CHARS, a)
    sess.go_to(a)
    sess.say(f"Timeline shows characters {lo}–{hi} of {n}.", "info", "view")
    return sess


def inspect(sess: Session, request: str | None) -> Session:
    """The page asked about a character: ``"pin:X"`` pins the inspector on character X; ``"show:A"`` also moves
    the timeline window so that character A is drawn (an event-log row outside the window)."""
    if sess.view is None or not request or ":" not in str(request):
        return sess
    what, _, value = str(request).partition(":")
    try:
        x = int(value.split(":")[0])
    except ValueError:
        return sess
    n = len(sess.view.text)
    if not 0 <= x < max(n, 1):
        return sess
    if what == "show":
        lo, hi = render.timeline_window(n, render.TIMELINE_MAX_CHARS, sess.timeline_start)
        if not lo <= x < hi:
            sess.go_to(max(0, x - render.TIMELINE_MAX_CHARS // 2))
    sess.pin(x)
    return sess


def template_hints(text: str) -> list[str]:
    """Hints for fields named differently from the keys chat templates read (see `session.field_name_hints`)."""
    return field_name_hints(text)
