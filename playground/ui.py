"""The Gradio page, built the way Gradio's own ``ChatInterface`` is: layout functions, one wiring function.

- Layout (``_render_*``): components only, laid out for a 1400x900 window (the editor, the chat and the top of the
  timeline on the first screen; the Doctor is a tab beside the chat, one click away).
- Wiring (`_wire`): every event, in one place. A state-changing event calls a named handler from
  `playground.handlers` (plain values in, the session out) and `playground.views.redraw` turns the session into
  a value for every view, so one event updates every view that depends on what it changed.
- The session state machine is `playground.state.Session` (one `gr.State` per visitor); the streaming pipeline is
  `playground.streaming`; the look and the client-side behaviour are `playground.theme`.

Panels: ``playground/doctor_panel.py: build_doctor_panel(ctx: PanelContext)`` draws the "Doctor" tab,
``playground/draft_panel.py`` the "Draft from the chat template" panel, ``playground/remote_panel.py`` the
backend row and the "Server parity" tab.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import gradio as gr

from examples import builtin_model

from . import api_calls, backends, draft_panel, guard, handlers, policy, reference, remote_panel, render, theme, views
from .doctor_panel import build_doctor_panel
from .handlers import ChatSettings, PageConfig
from .icons import icon
from .library import example_transcript_names, list_library_families, picker_choices
from .limits import Limits
from .session import SKELETON_TEMPLATE, template_to_text
from .state import Origin, Session

# The editor's text is kept in the visitor's browser by the page's own script (localStorage, as it is typed:
# `theme.SAVE_EDITOR_JS`), under this key; one source for it: `theme.EDITOR_STORE_KEY`.
EDITOR_STORE_KEY = theme.EDITOR_STORE_KEY

SPEC_URL = "https://huggingface.co/docs/transformers/main/en/chat_response_parsing"

# The built-in model's demo conversation: its tools, prompts and a tool result to send back.
EXAMPLE_TOOLS = builtin_model.DEMO_TOOLS


@dataclass
class PanelContext:
    """What an extra panel (e.g. the Doctor tab, ``build_doctor_panel(ctx)``) may use.

    Components (use them as inputs/outputs of your own events):

    - ``template``: ``gr.Code`` JSON editor; its value is the current template text. To put a template into it,
      do not write it directly: return ``{"text", "kind", "name", "label"}`` into ``template_offer`` and pass
      your event to ``after_offer(event)``; the page asks before replacing edits.
    - ``template_status``: ``gr.HTML`` under the editor (validation message).
    - ``session``: ``gr.State`` holding a :class:`playground.state.Session`; read ``.run`` (the current
      :class:`Run`: prefix, chunks, template_text, tools), ``.view`` (its latest :class:`ParseView`),
      ``.template_text``, ``.model_id`` (the model in use: the last one loaded).
    - ``model_box``: ``gr.Textbox`` with the model id/folder the user typed (not necessarily loaded).
    - ``tools``: ``gr.Code`` with the tools JSON list of the chat tab.
    - ``status``: ``gr.HTML`` status line (changes after every parse).
    - ``sizes``: put an input component of yours here with ``(what it is, Limits field[, hint])`` and every handler
      that takes it refuses a longer text before it runs (`playground.guard.protect`'s ``sizes``).
    - ``messages``: put an output component of yours here with a function ``message -> value``: a handler of
      yours that fails (a refused input included) shows its message there instead of in a pop-up
      (`playground.guard.protect`'s ``messages``).

    Helpers: ``load_model(name) -> backends.LoadedModel`` (shared cache; raises ``backends.ModelLoadError``),
    ``trust_remote_code`` (bool, from the CLI flag), ``safe(fn)`` wraps a handler so exceptions become a status
    message (the handler must have ``status`` as its first output), ``status_html(text, kind)``.
    """

    template: Any
    template_status: Any
    session: Any
    model_box: Any
    tools: Any
    status: Any
    load_model: Callable
    trust_remote_code: bool
    safe: Callable
    template_offer: Any = None
    after_offer: Callable | None = None
    status_html: Callable = render.status_html
    sizes: dict = field(default_factory=dict)
    messages: dict = field(default_factory=dict)


def _safe(fn, n_outputs: int = 1):
    """Wrap a plain (non-generator) handler whose first output is the status line.

    An exception becomes a readable status message; the other ``n_outputs - 1`` outputs are left unchanged
    (``gr.skip()``).
    """

    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            msg = str(e) if isinstance(e, (backends.ModelLoadError, backends.GenerationError, ValueError)) \
                else f"{type(e).__name__}: {e}"
            if n_outputs == 1:
                return render.status_html(msg, "error")
            return (render.status_html(msg, "error"),) + (gr.skip(),) * (n_outputs - 1)

    wrapper.__name__ = getattr(fn, "__name__", "handler")
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ---------------------------------------------------------------- layout


class _Page:
    """The page's components, filled in by the layout functions (names as in `playground.views.VIEWS`)."""

    def __getitem__(self, name):
        return getattr(self, name)


def _render_header(p: _Page) -> None:
    p.header = gr.HTML(
        f'<div class="hd"><h1>{icon("logo")} Response Template Playground</h1><span class="tag">Write and debug '
        f"the response template that turns a chat model's raw output into a message, and watch each character "
        f'land in its field. <a href="{SPEC_URL}" target="_blank" rel="noopener">The response-template spec '
        f'{icon("link")}</a></span></div>', elem_id="header")


def _render_model_row(p: _Page, sess: Session, default_model: str, remotes: list, allow_any: bool) -> None:
    with gr.Row(equal_height=True):
        p.model_box = gr.Textbox(value=default_model, label="Model (hub id or local folder)", elem_id="model-box",
                                 scale=3, max_lines=1)
        p.load_btn = gr.Button("Load model", elem_id="load-model", scale=0, min_width=110, size="sm")
        p.status = gr.HTML(views.initial(sess, "status"), elem_id="status", min_height=24, scale=4)
    p.backend_ctl = remote_panel.build_backend_controls(remotes, allow_any)


def _render_chat_tab(p: _Page, sess: Session) -> None:
    p.chatbot = gr.Chatbot(elem_id="chatbot", height=220, label="Conversation (parsed turns)")
    with gr.Row(equal_height=True):
        p.user_box = gr.Textbox(placeholder="Message… (Enter sends)", show_label=False, elem_id="user-input",
                                scale=5, max_lines=4, container=False)
        p.send = gr.Button("Send", variant="primary", elem_id="send", scale=1, min_width=90)
    with gr.Row(equal_height=True):
        p.tool_box = gr.Textbox(placeholder="Tool result (after the model calls a tool)", show_label=False,
                                elem_id="tool-result", scale=5, max_lines=4, container=False)
        p.tool_btn = gr.Button("Send tool result", elem_id="send-tool-result", scale=2, size="md")
        p.clear_btn = gr.Button("Clear", size="md", elem_id="clear", scale=1, min_width=70)
    with gr.Row(elem_id="demo-row"):
        with gr.Column(scale=5, min_width=200):
            gr.Examples([[m] for m in builtin_model.DEMO_PROMPTS], inputs=[p.user_box], label="Try a message",
                        elem_id="demo-prompts")
        with gr.Column(scale=2, min_width=160):
            gr.Examples([[builtin_model.DEMO_TOOL_RESULT]], inputs=[p.tool_box], label="Example tool result",
                        elem_id="demo-tool-result")
    with gr.Accordion("System prompt, tools and generation settings", open=False, elem_id="settings"):
        p.system_box = gr.Textbox(label="System prompt", lines=2, elem_id="system-prompt")
        p.tools_code = gr.Code(value=json.dumps(EXAMPLE_TOOLS, indent=2), language="json",
                               label="Tools (JSON list of schemas; empty for none)", lines=8, elem_id="tools")
        p.thinking = gr.Checkbox(value=True, label="Thinking (enable_thinking)", elem_id="thinking")
        with gr.Row():
            # Its maximum is the server's limit: Gradio refuses a larger value in any request.
            p.max_new = gr.Slider(1, guard.limits().max_new_tokens, value=256, step=1, label="Max new tokens",
                                  elem_id="max-new-tokens")
            p.temperature = gr.Slider(*handlers.TEMPERATURE_RANGE, value=0.7, step=0.05, label="Temperature",
                                      elem_id="temperature")
            p.top_p = gr.Slider(*handlers.TOP_P_RANGE, value=0.95, step=0.05, label="Top-p", elem_id="top-p")
            # no minimum/maximum here: Gradio would refuse with its own words before the handler says the rule
            p.seed = gr.Number(value=0, precision=0, label=f"Seed (-1: random; 0 to {handlers.SEED_MAX})",
                               elem_id="seed")


def _render_paste_tab(p: _Page) -> None:
    p.paste_raw = gr.Textbox(label="Raw model output", lines=8, elem_id="paste-raw")
    p.paste_prefix = gr.Textbox(label="Prompt prefix (may be empty)", lines=3, elem_id="paste-prefix")
    p.paste_tools = gr.Code(value="", language="json", label="Tools (optional JSON list)", lines=4,
                            elem_id="paste-tools")
    with gr.Row():
        p.paste_parse_btn = gr.Button("Parse", variant="primary", elem_id="paste-parse")
        p.paste_replay_btn = gr.Button("Replay as a stream", elem_id="paste-replay")


def _render_examples_tab(p: _Page, families: list[str]) -> None:
    if not families:
        gr.Markdown("The example library is empty.", elem_id="examples-missing")
    p.ex_family = gr.Dropdown(families, value=families[0] if families else None, label="Family",
                              elem_id="example-family")
    first = example_transcript_names(families[0]) if families else []
    # custom values allowed: a Replay sent before a family pick's new list arrives carries the old family's
    # transcript, which Gradio would refuse with a bare "Error" before any handler runs (handlers.example_replay
    # resolves it)
    p.ex_transcript = gr.Dropdown(first, value=first[0] if first else None, label="Transcript",
                                  elem_id="example-transcript", allow_custom_value=True)
    p.ex_replay_btn = gr.Button("Replay example (loads its template)", variant="primary", elem_id="example-replay")


def _render_export_tab(p: _Page) -> None:
    gr.Markdown("Save the editor's template into a copy of the model's tokenizer (`save_pretrained`), reload it "
                "to check `response_template` round-trips, and download the folder as a zip: what you would "
                "upload, nothing of this machine (no local paths, no offline-loading flags).")
    p.export_btn = gr.Button("Export tokenizer with this template", elem_id="export", variant="primary")
    p.export_status = gr.HTML("", elem_id="export-status")
    p.download = gr.DownloadButton("Download zip", visible=False, elem_id="download")


def _render_editor(p: _Page, sess: Session, families: list[str]) -> None:
    with gr.Row(equal_height=True):
        p.library = gr.Dropdown(picker_choices(families), value=views.initial(sess, "library"),
                                label="Load a library template", scale=3, elem_id="library-template")
        p.draft_open = draft_panel.draft_button()
    p.draft_parts = draft_panel.draft_layout(p.draft_open)
    with gr.Row(visible=False, elem_id="confirm-replace", equal_height=True) as p.confirm:
        p.confirm_text = gr.HTML("", elem_id="confirm-text")
        p.confirm_yes = gr.Button("Replace my edits", variant="stop", size="sm", elem_id="confirm-yes", scale=0,
                                  min_width=140)
        p.confirm_no = gr.Button("Keep my edits", variant="primary", size="sm", elem_id="confirm-keep", scale=0,
                                 min_width=120)
    p.editor = gr.Code(value=sess.template_text, language="json", label="Response template", lines=15,
                       max_lines=15, elem_id="template")
    p.template_status = gr.HTML(views.initial(sess, "template_status"), elem_id="template-status")
    # written by the page's script alone: why the editor's text is not kept in this browser (its storage is full)
    p.editor_kept = gr.HTML("", elem_id="editor-kept", padding=False, container=False)


def _render_timeline(p: _Page, remotes: list, allow_any: bool) -> None:
    with gr.Row(equal_height=True, elem_id="timeline-head"):
        gr.HTML('<span class="tl-title">Stream timeline</span>', min_width=130, scale=0, elem_id="timeline-title")
        p.legend = gr.HTML("", elem_id="legend", scale=4)
        p.replay_btn = gr.Button("Replay last run", elem_id="replay", size="sm", scale=0, min_width=130,
                                 interactive=False)  # on once there is a run (views.replay)
        # one Stop for every stream (a generation or a replay), beside what it stops: visible from every tab
        p.stop = gr.Button("Stop", variant="stop", elem_id="stop", size="sm", scale=0, min_width=80,
                           interactive=False)
        p.timeline_from = gr.Textbox(value="", placeholder="Timeline from character… (Enter)", show_label=False,
                                     elem_id="timeline-from", max_lines=1, scale=1, min_width=150, container=False)
    with gr.Row():
        with gr.Column(scale=7):
            p.timeline = gr.HTML(views.initial(Session(), "timeline"), elem_id="timeline")
        with gr.Column(scale=3, min_width=300):
            p.check = gr.HTML("", elem_id="check")
            p.inspector = gr.HTML(views.initial(Session(), "inspector"), elem_id="inspector",
                                  label="Inspector")
            p.inspect_request = gr.Textbox(value="", visible="hidden", elem_id="inspect-request", show_label=False)
    with gr.Tabs(elem_id="details"):
        with gr.Tab("Event log", elem_id="tab-events"):
            p.events = gr.HTML("", elem_id="events")
        with gr.Tab("Message", elem_id="tab-message"):
            p.message_note = gr.HTML("", elem_id="message-note")  # why the view is empty (a message over the cap)
            p.message = gr.JSON({}, elem_id="message", open=True)
        with gr.Tab("Parsed turn", elem_id="tab-turn"):
            p.turn = gr.Chatbot(elem_id="parsed-turn", height=300, label="The parsed message as a chat turn")
        with gr.Tab("Server parity", elem_id="tab-parity", visible=bool(remotes) or allow_any):
            p.parity_view = remote_panel.build_parity_view()


# ---------------------------------------------------------------- wiring


def _wire(p: _Page, demo: gr.Blocks, page: PageConfig, default_model: str) -> None:
    """Every event of the page. State-changing events run a named handler and redraw every view (see the module
    docstring); the Stop button and the panels' events are wired here too."""
    outs = [p[name] for name in views.NAMES]
    n = len(outs)

    def redraw(sess: Session) -> tuple:
        return (*views.redraw(sess), sess)

    def settings(args) -> ChatSettings:
        system, tools_text, think, n_new, temp, tp, sd, backend, url, box = args
        return ChatSettings(system or "", tools_text or "", bool(think), n_new, temp, tp, sd,
                            backend or remote_panel.LOCAL, url or "", box or "")

    def plain(handler):
        """A one-shot handler: (session, *inputs) -> every view + the session."""
        def run(sess: Session, *args):
            try:
                handler(sess, *args)
            except ValueError as e:  # an input the user can fix (size limits): the status line says so
                sess.say(str(e), "error", "")
            return redraw(sess)

        run.__name__ = handler.__name__
        return run

    def streaming(handler):
        """A generator handler: every yield of the session redraws the views that changed."""
        # The request comes second: Gradio passes a gr.Request only to a positional parameter annotated so.
        def run(sess: Session, request: gr.Request, *args):
            hash_ = getattr(request, "session_hash", None)
            try:
                for _ in handler(sess, *args, session_hash=hash_):
                    yield redraw(sess)
            except guard.RequestCancelled:
                raise
            except ValueError as e:
                sess.end_stream()
                sess.say(str(e), "error", "")
                yield redraw(sess)

        run.__name__ = handler.__name__
        return run

    state = [p.session]
    every = [*outs, p.session]

    def on(trigger, fn, inputs, **kw):
        """Wire ``fn`` to ``trigger`` with the session and ``inputs`` in, every view and the session out; the
        status line alone shows a small progress mark (the others would flicker on every update)."""
        kw.setdefault("show_progress", "minimal")
        kw.setdefault("show_progress_on", [p.status])
        return trigger(fn, [*state, *inputs], every, **kw)

    # the template: typing, library picks, confirmations, the browser's saved copy, panels' offers
    def edit_template(sess, text):
        return handlers.edit_template(sess, text, page)

    def pick_library(sess, choice):
        return handlers.pick_library(sess, choice, page)

    def confirm_replace(sess, session_hash=None):
        return handlers.confirm_replace(sess, page, session_hash)

    def restore_editor(sess, text):
        return handlers.restore_editor(sess, text, page)

    def offer_template(sess, offered):
        return handlers.offer_template(sess, offered, page)

    # typing only (`input`, not `change`): the page's own updates of the editor come from the session, and their
    # `change` echo could arrive after a later update (a confirmed replacement) and bring back the old text
    typed = plain(edit_template)
    typed.checks_own_sizes = ("max_template_chars",)  # a refused text is said in the box under the editor
    on(p.editor.input, typed, [p.editor], trigger_mode="always_last", show_progress="hidden")
    on(p.library.input, plain(pick_library), [p.library])
    on(p.confirm_yes.click, streaming(confirm_replace), [], concurrency_limit=8, concurrency_id="replay")
    on(p.confirm_no.click, plain(handlers.keep_edits), [])
    # the browser's copy of the editor: written as it is typed, in the browser (no server round trip: a reload
    # while the server still works on the edit keeps it, and a text over the server's size cap is kept too); at
    # page load the page's script puts it back into the editor, then the server reads it
    p.editor.input(None, [p.editor], [p.editor_kept], js=theme.SAVE_EDITOR_JS, queue=False,
                   show_progress="hidden")
    # the page's token for its session state (`guard.hold`): learned at the first event, and new when the state was
    # lost; then the editor's text, which the page kept, is taken in and every view drawn from the fresh state
    def after_lost_session(sess, text):
        return handlers.after_lost_session(sess, text, page)

    adopted = plain(after_lost_session)
    adopted.checks_own_sizes = ("max_template_chars",)
    on(p.token.change, adopted, [p.editor], show_progress="hidden")
    restored = plain(restore_editor)
    restored.checks_own_sizes = ("max_template_chars",)  # an over-cap copy is restored and said under the editor
    loaded = demo.load(None, [p.editor], [p.editor], js=theme.LOAD_EDITOR_JS, queue=False, show_progress="hidden")
    on(loaded.then, restored, [p.editor], show_progress="hidden")

    # the model
    def load_model(sess, name, backend, url):
        return handlers.load_model(sess, name, backend, url, page)

    on(p.load_btn.click, plain(load_model), [p.model_box, p.backend_ctl.backend, p.backend_ctl.url],
       concurrency_limit=2)

    # chat
    chat_in = [p.system_box, p.tools_code, p.thinking, p.max_new, p.temperature, p.top_p, p.seed,
               p.backend_ctl.backend, p.backend_ctl.url, p.model_box]

    def send_user(sess, text, editor, *rest, session_hash=None):
        yield from handlers.send_user(sess, text, editor, settings(rest), page, session_hash)

    def send_tool(sess, text, editor, *rest, session_hash=None):
        yield from handlers.send_tool(sess, text, editor, settings(rest), page, session_hash)

    generate = dict(concurrency_limit=8, concurrency_id="generate")
    send_ev = on(p.send.click, streaming(send_user), [p.user_box, p.editor, *chat_in], **generate)
    submit_ev = on(p.user_box.submit, streaming(send_user), [p.user_box, p.editor, *chat_in], **generate)
    tool_ev = on(p.tool_btn.click, streaming(send_tool), [p.tool_box, p.editor, *chat_in], **generate)
    on(p.clear_btn.click, plain(handlers.clear_chat), [])
    # Gradio's trash icons on the two chats empty them on the page only: state and page must agree
    on(p.chatbot.clear, plain(handlers.trash_chat), [])
    on(p.turn.clear, plain(handlers.trash_turn), [])

    def stop(request: gr.Request):
        # No output: the stream's own last update says "Stopped" and turns Stop off; writing the status here
        # could land after it and hide it.
        handlers.stop(getattr(request, "session_hash", None))

    p.stop.click(stop, None, None, concurrency_limit=None)
    remote_panel.wire(p.backend_ctl, model_box=p.model_box, status=p.status, session=p.session,
                      parity_view=p.parity_view, chat_events=[send_ev, submit_ev, tool_ev],
                      servers=page.remotes, allow_any=page.allow_any_remote, status_html=render.status_html)

    # paste, replay, examples
    def paste_parse(sess, raw, prefix, tools, editor):
        return handlers.paste_parse(sess, raw, prefix, tools, editor, page)

    def paste_replay(sess, raw, prefix, tools, editor, session_hash=None):
        return handlers.paste_replay(sess, raw, prefix, tools, editor, page, session_hash)

    def replay(sess, editor, session_hash=None):
        return handlers.replay_last(sess, editor, page, session_hash)

    def example_replay(sess, family, transcript, session_hash=None):
        return handlers.example_replay(sess, family, transcript, page, session_hash)

    replaying = dict(concurrency_limit=8, concurrency_id="replay")
    paste_in = [p.paste_raw, p.paste_prefix, p.paste_tools, p.editor]
    on(p.paste_parse_btn.click, plain(paste_parse), paste_in)
    on(p.paste_replay_btn.click, streaming(paste_replay), paste_in, **replaying)
    on(p.replay_btn.click, streaming(replay), [p.editor], **replaying)
    on(p.ex_replay_btn.click, streaming(example_replay), [p.ex_family, p.ex_transcript], **replaying)
    p.ex_family.change(_transcripts_of, p.ex_family, p.ex_transcript)

    # export (its own outputs besides the views)
    def export(sess, editor):
        sess, res = handlers.export(sess, editor, page)
        kind = "error" if not res.ok else "warning" if res.warning else "ok"
        warned = f'<br><span class="export-warning">{render.escape(res.warning)}</span>' if res.warning else ""
        shown = (f'<div class="status status-{kind}" id="export-result">'
                 f'{icon(kind)} {render.escape(res.message)}{warned}<br>File: '
                 f'<code>{render.escape(res.file_name)}</code></div>'
                 if res.zip_path else render.status_html(res.message, "error"))
        shown = render.stamped(shown, editor, download="#download")  # flagged, and its zip hidden, after an edit
        download = gr.update(value=res.zip_path, visible=True) if res.zip_path else gr.update(visible=False)
        return (*redraw(sess), shown, download)

    p.export_btn.click(export, [*state, p.editor], [*every, p.export_status, p.download], show_progress="minimal",
                       show_progress_on=[p.status])

    # the timeline window and the inspector
    on(p.timeline_from.submit, plain(handlers.move_window), [p.timeline_from])
    on(p.inspect_request.change, plain(handlers.inspect), [p.inspect_request], trigger_mode="always_last",
       show_progress="hidden")

    # panels
    offer = gr.State(None)
    p.ctx = PanelContext(template=p.editor, template_status=p.template_status, session=p.session,
                         model_box=p.model_box, tools=p.tools_code, status=p.status,
                         load_model=lambda name: backends.load_model(name, page.trust_remote_code),
                         trust_remote_code=page.trust_remote_code, safe=_safe, template_offer=offer,
                         after_offer=lambda ev: ev.then(plain(offer_template), [*state, offer], every,
                                                        show_progress="hidden"))
    demo.panel_context = p.ctx
    draft_panel.wire_draft_panel(p.draft_parts, p.ctx)
    with p.doctor_tab:
        build_doctor_panel(p.ctx)
    demo.unload(_client_left)
    assert n == len(views.VIEWS)


def _transcripts_of(family):
    names = example_transcript_names(family)
    return gr.update(choices=names, value=names[0] if names else None)


# ---------------------------------------------------------------- the app


def build_ui(default_model: str | None = None, trust_remote_code: bool = False,
             preload: bool = True, limits: Limits | None = None, remotes: list | None = None,
             allow_any_remote: bool = False) -> gr.Blocks:
    """Build the Blocks app.

    ``default_model``: hub id or folder put in the model box (None: ``backends.default_model()``).
    ``remotes``: operator-configured servers (``playground.remote.RemoteServer``, from ``--remote``);
    ``allow_any_remote``: also accept server URLs typed in the page (private use only).
    ``preload``: load it now so the template editor starts from its tokenizer (a failure is shown, not raised).
    ``limits``: budgets, input sizes and session memory (`playground.limits.Limits`; None: those in force,
    a private machine's unless ``app.py`` configured others). The model policy in force
    (`playground.policy.configure`) decides what the model box may load.
    Launch with ``demo.launch(**launch_kwargs())`` (the stylesheet and the page's script).
    """
    limits = limits or guard.limits()
    if allow_any_remote and limits.public:
        raise ValueError("--allow-any-remote is for private use: on a public deployment typed URLs would let "
                         "visitors make this machine send requests into its network. Configure --remote instead.")
    guard.configure(limits)
    reference.configure(limits.workers)
    threading.Thread(target=reference.warm_up, daemon=True, name="reference-warm-up").start()
    default_model = policy.current().label_for(default_model or backends.default_model())
    remotes = list(remotes or [])
    page = PageConfig(default_model=default_model, trust_remote_code=trust_remote_code, limits=limits,
                      remotes=remotes, allow_any_remote=allow_any_remote)
    sess = _first_session(default_model, trust_remote_code, preload)
    families = list_library_families()

    p = _Page()
    with api_calls.PlaygroundBlocks(title="Response Template Playground", delete_cache=(600, 600)) as demo:
        p.session = gr.State(sess, time_to_live=limits.session_ttl, delete_callback=_forget_session)
        p.token = api_calls.PageToken()  # echoed with every event that takes the session (`guard.protect`)
        _render_header(p)
        _render_model_row(p, sess, default_model, remotes, allow_any_remote)
        with gr.Row():
            with gr.Column(scale=5):
                with gr.Tabs(elem_id="modes"):
                    with gr.Tab("Chat", id="chat", elem_id="tab-chat"):
                        _render_chat_tab(p, sess)
                    with gr.Tab("Paste", id="paste", elem_id="tab-paste"):
                        _render_paste_tab(p)
                    with gr.Tab("Examples", id="examples", elem_id="tab-examples"):
                        _render_examples_tab(p, families)
                    p.doctor_tab = gr.Tab("Doctor", id="doctor", elem_id="tab-doctor")
                    with gr.Tab("Export", id="export", elem_id="tab-export"):
                        _render_export_tab(p)
            with gr.Column(scale=5):
                _render_editor(p, sess, families)
        _render_timeline(p, remotes, allow_any_remote)
        _wire(p, demo, page, default_model)
    # Every handler (the Doctor's too): repaired text in and out, a message for any failure, session upkeep.
    guard.protect(demo, {p.status: lambda m: render.status_html(m, "error"),
                         p.template_status: render.template_status_html,
                         p.export_status: lambda m: render.status_html(m, "error"), **p.ctx.messages},
                  sizes={p.editor: ("The template", "max_template_chars"),
                         p.paste_raw: ("The pasted output", "max_paste_chars"),
                         p.paste_prefix: ("The prompt prefix", "max_prefix_chars"),
                         p.paste_tools: ("The tools JSON", "max_tools_chars"),
                         p.tools_code: ("The tools JSON", "max_tools_chars"), **p.ctx.sizes},
                  held=(p.session, p.token))
    guard.start_janitor(demo)  # closed and expired sessions forgotten, with Gradio's copies of their values
    return demo


def _first_session(default_model: str, trust_remote_code: bool, preload: bool) -> Session:
    """The state every visitor starts from: the default model loaded (when ``preload``) and its template."""
    text, origin, model = template_to_text(SKELETON_TEMPLATE), Origin("skeleton"), None
    note, kind = f"Model box: {default_model}.", "info"
    if preload:
        try:
            lm = backends.load_model(default_model, trust_remote_code)
            tpl, tnote = backends.template_for_tokenizer(lm.tokenizer)
            if tpl is not None:
                text, origin = template_to_text(tpl), Origin("tokenizer", default_model)
            model = default_model
            note, kind = f"Loaded {backends.model_label(lm)}. Template: {tnote}.", "ok"
        except Exception as e:  # noqa: BLE001 - the page still opens: Paste and Examples work without a model
            note, kind = f"{e} (you can still use Paste and Examples).", "error"
    sess = Session(text, origin, model)
    sess.notice = type(sess.notice)(note, kind, "model")
    return sess


def _client_left(request: gr.Request):
    """The page was closed: stop its work and free its run now (Gradio keeps closed sessions an hour)."""
    guard.SESSIONS.leave(getattr(request, "session_hash", None))


def _forget_session(sess) -> None:
    """``gr.State`` delete callback (time-to-live passed): free the run."""
    if hasattr(sess, "drop_run"):
        sess.drop_run()


def launch_kwargs() -> dict:
    """Keyword arguments for ``demo.launch`` that the app needs: the stylesheet, the page's script, and Gradio's run
    history turned off."""
    # Gradio's run history (the footer's "Runs") would keep every call's inputs and outputs in this browser's
    # localStorage: ~0.5 MB per 200 KB paste, in the 5 MB an origin gets, next to the editor's kept text
    return {"css": theme.CSS + remote_panel.CSS, "js": theme.JS, "run_history": False}
