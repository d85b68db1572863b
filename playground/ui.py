"""The Gradio Blocks app: layout and event wiring only.

Logic lives in :mod:`playground.session` (the Run, parsing), :mod:`playground.backends`
(models, generation), :mod:`playground.render` (HTML) and :mod:`playground.export`.
Every handler catches its own errors and shows them as readable messages in the
status line (``#status``); no Python traceback reaches the page.

Panels: ``playground/doctor_panel.py: build_doctor_panel(ctx: PanelContext)`` draws the "Doctor" tab.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr

import examples
import parsing
from examples import builtin_model
from parsing.streams import replay_chunks, tokenish_chunks

from . import backends, draft_panel, guard, policy, reference, remote_panel, render
from .doctor_panel import build_doctor_panel
from .export import export_template, fresh_export_dir
from .limits import Limits, cut_message
from .probe_panel import score_label
from .reference import reference_check
from .session import (
    SKELETON_TEMPLATE,
    LiveParse,
    Run,
    Session,
    field_name_hints,
    parse_run,
    parse_tools,
    template_to_text,
)

UPDATE_INTERVAL = 1 / 15  # seconds between streamed UI updates (coalescing)
STREAM_WINDOW = 1200  # characters of timeline drawn while streaming (the final state draws more)
REPLAY_SECONDS = 3.0  # a replay takes at most about this long

# The built-in model's demo conversation: its tools, prompts and a tool result to send back.
EXAMPLE_TOOLS = builtin_model.DEMO_TOOLS


@dataclass
class PanelContext:
    """What an extra panel (e.g. the Doctor tab, ``build_doctor_panel(ctx)``) may use.

    Components (use them as inputs/outputs of your own events):

    - ``template``: ``gr.Code`` JSON editor; its value is the current template text.
    - ``template_status``: ``gr.HTML`` under the editor (validation message).
    - ``session``: ``gr.State`` holding a :class:`playground.session.Session`; read
      ``.run`` (the current :class:`Run`: prefix, chunks, template_text, tools),
      ``.view`` (its latest :class:`ParseView`), ``.template_text``, ``.model_id``.
    - ``model_box``: ``gr.Textbox`` with the model id/folder the user chose.
    - ``tools``: ``gr.Code`` with the tools JSON list of the chat tab.
    - ``status``: ``gr.HTML`` status line for readable messages.

    Helpers: ``load_model(name) -> backends.LoadedModel`` (shared cache; raises
    ``backends.ModelLoadError``), ``trust_remote_code`` (bool, from the CLI flag),
    ``safe(fn)`` wraps a handler so exceptions become a status message (the
    handler must have ``status`` as its first output).
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


# ---------------------------------------------------------------- helpers

_STOP_EVENTS: dict[str, threading.Event] = {}


def _status(msg: str, kind: str = "info") -> str:
    colors = {"info": "#1e3a8a", "ok": "#065f46", "error": "#991b1b"}
    return (f'<div class="status-{kind}" style="color:{colors.get(kind, "#111")}">'
            f'{render.escape(msg)}</div>')


def _safe(fn, n_outputs: int = 1):
    """Wrap a plain (non-generator) handler whose first output is the status line.

    An exception becomes a readable status message; the other ``n_outputs - 1`` outputs are
    left unchanged (``gr.skip()``).
    """

    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            msg = str(e) if isinstance(e, (backends.ModelLoadError, backends.GenerationError, ValueError)) \
                else f"{type(e).__name__}: {e}"
            if n_outputs == 1:
                return _status(msg, "error")
            return (_status(msg, "error"),) + (gr.skip(),) * (n_outputs - 1)

    wrapper.__name__ = getattr(fn, "__name__", "handler")
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _with_outputs(fn, n):
    return _safe(fn, n)


def history_to_chat(history: list[dict]) -> list[dict]:
    """Chat history (apply_chat_template format) -> chatbot bubbles (parsed assistant turns rendered)."""
    out: list[dict] = []
    for m in history:
        role = m.get("role")
        if role == "user":
            out.append({"role": "user", "content": render.md_text(m.get("content", ""))})
        elif role == "assistant":
            shown = {k: v for k, v in m.items() if k != "_raw"}
            out += render.assistant_turn(render.clip_strings(shown, FINAL_TURN_CHARS, tail=False))
        elif role == "tool":
            out.append({"role": "user", "content": render.md_code(str(m.get("content", ""))),
                        "metadata": {"title": "🛠 Tool result"}})
    return out


PREVIEW_INTERVAL = 0.5  # seconds between live updates of the message JSON and chat previews
STREAM_EVENT_ROWS = 100  # event-log rows sent with live previews
PREVIEW_CHARS = 1500  # characters per string in live previews
FINAL_TURN_CHARS = 20000  # characters per string in the final rendered chat turn (the JSON has all)


def _visuals(view, check=None, start=None, window=render.TIMELINE_MAX_CHARS, preview=True):
    """(timeline, legend, events, message, parsed turn, check) for a view.

    While streaming, the message and chat previews are clipped (huge strings re-rendered as
    Markdown 15 times a second would freeze the page) and sent only when ``preview`` is true.
    For a final view the message and parsed turn are ``gr.update(value=...)`` (full replacements).
    """
    if view.final:
        msg = view.message if view.message is not None else _preview(view)
        shown_msg = msg
        turn = render.assistant_turn(render.clip_strings(msg, FINAL_TURN_CHARS, tail=False))
    elif preview:
        shown_msg = render.clip_strings(_preview(view), PREVIEW_CHARS)
        turn = render.assistant_turn(shown_msg, streaming=True)
    else:
        shown_msg = turn = gr.skip()
    if view.final:
        events_out = render.events_html(view.events)
    elif preview:
        events_out = render.events_html(view.events, limit=STREAM_EVENT_ROWS)
    else:
        events_out = gr.skip()
    shown_msg = shown_msg if shown_msg is not None else {}
    if view.final:
        # The final state goes out as full replacements: Gradio streams diffs after the first yield,
        # and the browser applies a dict/list diff in place to the object the component already
        # shows, which can leave the last live preview on screen after "Done".
        shown_msg, turn = gr.update(value=shown_msg), gr.update(value=turn)
    return (
        render.timeline_html(view, max_chars=window, start=start, titles=view.final),
        render.legend_html(view.field_names),
        events_out,
        shown_msg,
        turn,
        render.check_html(check),
    )


def _preview(view) -> dict:
    """The live message preview: kept up to date by the parse when it has one, else rebuilt from the events."""
    return view.preview.value() if view.preview is not None else render.partial_message(view.events)


class _Pacer:
    """Spaces calls ``interval`` seconds apart on average: sleeps only when ahead of that schedule, and then
    for at least a few milliseconds (a sleep of 26 microseconds lasts about 400 on a busy machine, which made
    replays of 100,000 chunks take minutes instead of `REPLAY_SECONDS`)."""

    def __init__(self, interval: float):
        self.interval, self.n, self.t0 = interval, 0, time.perf_counter()

    def __call__(self) -> None:
        self.n += 1
        ahead = self.t0 + self.n * self.interval - time.perf_counter()
        if ahead > 0.004:
            time.sleep(ahead)


class _Throttle:
    """True at most once per ``interval`` seconds (and on the first call, unless ``first`` is False: then
    not before ``interval`` has passed)."""

    def __init__(self, interval: float, first: bool = True):
        self.interval, self.last = interval, 0.0 if first else time.perf_counter()

    def __call__(self) -> bool:
        now = time.perf_counter()
        if now - self.last >= self.interval:
            self.last = now
            return True
        return False


def _stream(live: LiveParse, chunks, record: list, times: list, delay_fn=None):
    """Feed chunks into ``live``; yield a view at most every UPDATE_INTERVAL seconds, then the final view.

    The interval stretches to twice the time the consumer took for the previous update, so that
    rendering a very long stream never takes more than about a third of the time.
    """
    last = 0.0
    interval = UPDATE_INTERVAL
    t0 = time.perf_counter()
    for chunk in chunks:
        if not chunk:
            continue
        if delay_fn:
            delay_fn()
        record.append(chunk)
        times.append(time.perf_counter() - t0)
        live.feed(chunk)
        now = time.perf_counter()
        if now - last >= interval:
            yield live.view()
            last = time.perf_counter()
            interval = max(UPDATE_INTERVAL, 2 * (last - now))
    live.finalize()
    yield live.view()


def list_library_families() -> list[str]:
    """Family names in the example library (`examples.list_families`)."""
    return examples.list_families()


def library_choices(families: list[str]) -> list:
    """Dropdown choices for the library picker: ``(label, family)`` with each family's probe score in the
    label (``"qwen3 — probes 34/35, 1 known limit"``), from ``examples.probe_scores()``."""
    scores = examples.probe_scores()
    return [(score_label(name, scores.get(name)), name) for name in families]


def example_run(family: str, transcript: str) -> Run:
    """The Run for one library transcript: its prefix, its recorded chunks (else ``replay_chunks``
    of its output, special tokens whole), the family template and the transcript's tools.

    Raises ValueError when no family or transcript is picked or it is not in the library.
    """
    if not family or not transcript:
        raise ValueError("Pick a family and a transcript first.")
    try:
        fam = examples.load_family(family)
        t = fam.transcript(transcript)
    except KeyError as e:
        raise ValueError(f"Not in the library: {e}") from None
    chunks = t.chunks or replay_chunks(t.output, fam.special_tokens)
    return Run(prefix=t.prefix or "", chunks=tuple(c for c in chunks if c), template_text=template_to_text(fam.template),
               tools=tuple(t.tools) if t.tools else None, source="example")


def example_transcript_names(family: str) -> list[str]:
    """Transcript ids of a library family ([] for no family or one not in the library)."""
    if not family or family not in examples.list_families():
        return []
    return [t.id for t in examples.load_family(family).transcripts]


def library_template_text(family: str) -> str:
    """The JSON text of a library family's template. Raises KeyError for a family not in the library."""
    return template_to_text(examples.load_family(family).template)


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
    Launch with ``demo.launch(css=render.CSS)`` (see :func:`launch_kwargs`).
    """
    limits = limits or guard.limits()
    if allow_any_remote and limits.public:
        raise ValueError("--allow-any-remote is for private use: on a public deployment typed URLs would let "
                         "visitors make this machine send requests into its network. Configure --remote instead.")
    guard.configure(limits)
    reference.configure(limits.workers)
    threading.Thread(target=reference.warm_up, daemon=True, name="reference-warm-up").start()
    default_model = policy.current().label_for(default_model or backends.default_model())
    initial_template = template_to_text(SKELETON_TEMPLATE)
    startup_note = f"Model box: {default_model}."
    if preload:
        try:
            lm = backends.load_model(default_model, trust_remote_code)
            tpl, note = backends.template_for_tokenizer(lm.tokenizer)
            if tpl is not None:
                initial_template = template_to_text(tpl)
            startup_note = f"Loaded {backends.model_label(lm)}. Template: {note}."
        except Exception as e:  # noqa: BLE001
            startup_note = f"{e} (you can still use Paste and Examples)."
    families = list_library_families()

    with gr.Blocks(title="Response Template Playground", delete_cache=(600, 600)) as demo:
        session = gr.State(Session(template_text=initial_template), time_to_live=limits.session_ttl,
                           delete_callback=_forget_session)
        gr.Markdown("## 🧩 Response Template Playground\nStream a model through a response template and see "
                    "every character land in its field.")
        with gr.Row():
            model_box = gr.Textbox(value=default_model, label="Model (hub id or local folder)", elem_id="model-box",
                                   scale=4)
            load_btn = gr.Button("Load model", elem_id="load-model", scale=1)
        status = gr.HTML(_status(startup_note), elem_id="status")
        remotes = list(remotes or [])
        backend_ctl = remote_panel.build_backend_controls(remotes, allow_any_remote)

        with gr.Row():
            with gr.Column(scale=3):
                with gr.Tabs(elem_id="modes"):
                    with gr.Tab("Chat", id="chat", elem_id="tab-chat"):
                        chatbot = gr.Chatbot(elem_id="chatbot", height=380, label="Conversation (parsed turns)")
                        with gr.Row():
                            user_box = gr.Textbox(placeholder="Message…", show_label=False, elem_id="user-input",
                                                  scale=5)
                            send_btn = gr.Button("Send", variant="primary", elem_id="send", scale=1)
                            stop_btn = gr.Button("Stop", variant="stop", elem_id="stop", scale=1)
                        with gr.Row():
                            tool_result_box = gr.Textbox(placeholder="Tool result to send back (after a tool call)",
                                                         show_label=False, elem_id="tool-result", scale=5)
                            tool_btn = gr.Button("Send tool result", elem_id="send-tool-result", scale=2)
                        clear_btn = gr.Button("Clear conversation", size="sm", elem_id="clear")
                        with gr.Row():
                            gr.Examples([[p] for p in builtin_model.DEMO_PROMPTS], inputs=[user_box],
                                        label="Try a message", elem_id="demo-prompts")
                            gr.Examples([[builtin_model.DEMO_TOOL_RESULT]], inputs=[tool_result_box],
                                        label="Example tool result", elem_id="demo-tool-result")
                        with gr.Accordion("System prompt, tools and generation settings", open=False, elem_id="settings"):
                            system_box = gr.Textbox(label="System prompt", lines=2, elem_id="system-prompt")
                            tools_code = gr.Code(value=json.dumps(EXAMPLE_TOOLS, indent=2), language="json",
                                                 label="Tools (JSON list of schemas; empty for none)", lines=8,
                                                 elem_id="tools")
                            thinking = gr.Checkbox(value=True, label="Thinking (enable_thinking)", elem_id="thinking")
                            with gr.Row():
                                max_new = gr.Slider(1, 32768, value=256, step=1, label="Max new tokens",
                                                    elem_id="max-new-tokens")
                                temperature = gr.Slider(0, 2, value=0.7, step=0.05, label="Temperature",
                                                        elem_id="temperature")
                                top_p = gr.Slider(0.05, 1, value=0.95, step=0.05, label="Top-p", elem_id="top-p")
                                seed = gr.Number(value=0, precision=0, label="Seed (-1: random)", elem_id="seed")
                    with gr.Tab("Paste", id="paste", elem_id="tab-paste"):
                        paste_raw = gr.Textbox(label="Raw model output", lines=8, elem_id="paste-raw")
                        paste_prefix = gr.Textbox(label="Prompt prefix (may be empty)", lines=3,
                                                  elem_id="paste-prefix")
                        paste_tools = gr.Code(value="", language="json", label="Tools (optional JSON list)", lines=4,
                                              elem_id="paste-tools")
                        with gr.Row():
                            paste_parse_btn = gr.Button("Parse", variant="primary", elem_id="paste-parse")
                            paste_replay_btn = gr.Button("Replay as a stream", elem_id="paste-replay")
                    with gr.Tab("Examples", id="examples", elem_id="tab-examples"):
                        if not families:
                            gr.Markdown("The example library is not available yet.", elem_id="examples-missing")
                        ex_family = gr.Dropdown(families, value=families[0] if families else None, label="Family",
                                                elem_id="example-family")
                        first_ts = example_transcript_names(families[0]) if families else []
                        ex_transcript = gr.Dropdown(first_ts, value=first_ts[0] if first_ts else None,
                                                    label="Transcript", elem_id="example-transcript")
                        ex_replay_btn = gr.Button("Replay example (loads its template)", variant="primary",
                                                  elem_id="example-replay")
                    with gr.Tab("Export", id="export", elem_id="tab-export"):
                        gr.Markdown("Save the editor's template into a copy of the loaded tokenizer "
                                    "(`save_pretrained`), reload it to check `response_template` round-trips, "
                                    "and download the folder as a zip.")
                        export_btn = gr.Button("Export tokenizer with this template", elem_id="export")
                        export_status = gr.HTML("", elem_id="export-status")
                        download = gr.DownloadButton("Download zip", visible=False, elem_id="download")
            with gr.Column(scale=2):
                lib_choices = ["(skeleton)", "(tokenizer's own / best match)"] + library_choices(families)
                with gr.Row(equal_height=True):
                    lib_dd = gr.Dropdown(lib_choices, value=None, label="Load a library template", scale=3,
                                         elem_id="library-template")
                    draft_open = draft_panel.draft_button()
                draft_parts = draft_panel.draft_layout(draft_open)
                template = gr.Code(value=initial_template, language="json", label="Response template", lines=22,
                                   max_lines=40, elem_id="template")
                template_status = gr.HTML(render.template_status_html(None), elem_id="template-status")
                replay_btn = gr.Button("Replay last run (original chunk boundaries)", elem_id="replay")

        gr.Markdown("### Stream timeline")
        with gr.Row():
            legend = gr.HTML("", elem_id="legend")
            check = gr.HTML("", elem_id="check")
        timeline = gr.HTML('<div class="tl-note">Nothing parsed yet: chat, paste or replay an example.</div>',
                           elem_id="timeline")
        timeline_from = gr.Textbox(value="", label="Timeline from character (empty: show the end); press Enter",
                                   elem_id="timeline-from", max_lines=1)
        with gr.Tabs():
            with gr.Tab("Event log"):
                events = gr.HTML("", elem_id="events")
            with gr.Tab("Message"):
                message = gr.JSON({}, elem_id="message", open=True)
            with gr.Tab("Parsed turn"):
                parsed_turn = gr.Chatbot(elem_id="parsed-turn", height=300, label="The parsed message as a chat turn")
            with gr.Tab("Server parity", elem_id="tab-parity", visible=bool(remotes) or allow_any_remote):
                parity_view = remote_panel.build_parity_view()
            doctor_tab = gr.Tab("Doctor", id="doctor", elem_id="tab-doctor")

        vis = [timeline, legend, events, message, parsed_turn, check]

        # ------------------------------------------------------------ handlers

        def finish(sess: Session, live: LiveParse, run: Run):
            view = live.view()
            chk = check_against_reference(run, view)
            sess.keep(run, view, chk)
            return view, chk

        def chat_turn(kind, text, sess, model_name, system, tools_text, think, n_new, temp, tp, sd, tpl_text,
                      backend, remote_url, request: gr.Request):
            """Generator for Send / Send tool result: yields (status, chatbot, user_box, tool_box, *vis, session)."""
            keep = (gr.skip(),) * len(vis)
            pending_turn = False  # a user/tool turn waiting for its answer (taken back on failure)
            try:
                if not (text or "").strip():
                    yield (_status("Type a message first." if kind == "user" else "Type a tool result first.",
                                   "error"), gr.skip(), gr.skip(), gr.skip(), *keep, sess)
                    return
                limits.check_size("The template", tpl_text, "max_template_chars")
                limits.check_size("The tools", tools_text, "max_tools_chars")
                limits.check_size("The conversation", json.dumps(sess.history, default=str) + text,
                                  "max_history_chars")
                try:
                    parsing.loads_template(tpl_text)
                except parsing.TemplateError as p:
                    yield (_status(f"Fix the template first: {p.message}", "error"), gr.skip(), gr.skip(),
                           gr.skip(), *keep, sess)
                    return
                tools = parse_tools(tools_text)
                if kind == "user":
                    sess.history.append({"role": "user", "content": text})
                else:
                    turn = {"role": "tool", "content": text}
                    if sess.pending_tool_calls:  # answer the oldest unanswered call
                        call = sess.pending_tool_calls.pop(0)
                        fn = call.get("function", {}) if isinstance(call, dict) else {}
                        if isinstance(fn, dict) and fn.get("name"):
                            turn["name"] = fn["name"]
                        if isinstance(call, dict) and call.get("id"):
                            turn["tool_call_id"] = call["id"]
                    sess.history.append(turn)
                pending_turn = True
                chat = history_to_chat(sess.history) + [{"role": "assistant", "content": "…"}]
                src = remote_panel.source_for(backend, remote_url, model_name, remotes, allow_any_remote,
                                              trust_remote_code)
                yield (_status(f"Loading {model_name}…"), chat, "", "", *keep, sess)
                lm = src.load() if src else backends.load_model(model_name, trust_remote_code)
                sess.model_id = model_name
                msgs = ([{"role": "system", "content": system}] if (system or "").strip() else []) + \
                    [{k: v for k, v in m.items() if k != "_raw"} for m in sess.history]
                prompt = backends.render_prompt(lm, msgs, tools, {"enable_thinking": bool(think)})
                live = LiveParse(tpl_text, prompt, tools, budget=guard.request_budget(),
                                 regex_timeout=limits.regex_timeout)
                where = f"Streaming from {src.label}… (Stop closes the stream)" if src else \
                    "Generating… (Stop stops generate)"
                yield (_status(where), chat, gr.skip(), gr.skip(),
                       *_visuals(live.view(), window=STREAM_WINDOW), sess)
                stop_event = threading.Event()
                if request is not None and request.session_hash:
                    _STOP_EVENTS[request.session_hash] = stop_event
                record, times = [], []
                sampling = dict(max_new_tokens=int(n_new), temperature=float(temp), top_p=float(tp),
                                seed=None if sd is None else int(sd))
                gen = src.stream(prompt, stop_event=stop_event, **sampling) if src else \
                    backends.stream_generate(lm, prompt, stop_event=stop_event, **sampling)
                view = None
                # The first chunk draws the timeline alone: the chat and message previews (the page's heaviest
                # rendering) follow at the preview interval, so the first update reaches the screen sooner.
                throttle = _Throttle(PREVIEW_INTERVAL, first=False)
                try:
                    for view in _stream(live, gen, record, times):
                        if view.final:
                            break
                        if throttle():
                            vis_out = _visuals(view, window=STREAM_WINDOW)
                            chat_out = history_to_chat(sess.history) + vis_out[4]
                        else:
                            vis_out = _visuals(view, window=STREAM_WINDOW, preview=False)
                            chat_out = gr.skip()
                        yield (gr.skip(), chat_out, gr.skip(), gr.skip(), *vis_out, sess)
                finally:
                    gen.close()
                stopped = getattr(stop_event, "user_requested", False)
                run = Run(prefix=prompt, chunks=tuple(record), template_text=tpl_text,
                          tools=tuple(tools) if tools else None, times=tuple(times),
                          source="remote" if src else "model", cut=src.outcome.cut if src else "",
                          request=src.request(msgs, tools, {"enable_thinking": bool(think)}, sampling)
                          if src else None)
                view, chk = finish(sess, live, run)
                if view.message is not None:
                    sess.history.append(dict(view.message, _raw=run.text))  # the JSON keeps it all
                else:
                    sess.history.append({"role": "assistant", "content": run.text, "_raw": run.text})
                pending_turn = False
                calls = (view.message or {}).get("tool_calls") or []
                sess.pending_tool_calls = list(calls) if isinstance(calls, list) else [calls]
                note = " A tool was called: answer with a tool result below." if calls else ""
                errs = f" Parse errors: {len(view.errors)}." if view.errors else ""
                word = "Stopped" if stopped else ("Cut" if run.cut else "Done")
                notes = "".join(f" {n}" for n in src.notes(run.text, tpl_text, lm.tokenizer)) if src else ""
                done = f"{word}: {len(record)} chunks, {len(run.text)} characters.{errs}{note}{notes}"
                yield (_status(done, "error") if run.cut and view.cut is None else _done_status(view, done),
                       gr.update(value=history_to_chat(sess.history)), gr.skip(), gr.skip(),
                       *_visuals(view, chk), sess)
            except Exception as e:  # noqa: BLE001 - readable message, never a traceback
                restore = gr.skip()
                if pending_turn:
                    if sess.history:
                        sess.history.pop()
                    restore = text  # the box was cleared when the turn was sent: give the text back
                if isinstance(e, backends.ModelLoadError):
                    msg = f"No model loaded: {str(e).rstrip('.')}. Load a model first; your message was kept."
                elif isinstance(e, (backends.GenerationError, ValueError)):
                    msg = str(e)
                else:
                    msg = f"{type(e).__name__}: {e}"
                yield (_status(msg, "error"), history_to_chat(sess.history),
                       restore if kind == "user" else gr.skip(), restore if kind != "user" else gr.skip(),
                       *keep, sess)
            finally:
                if request is not None and request.session_hash:
                    _STOP_EVENTS.pop(request.session_hash, None)

        def send_user(text, sess, model_name, system, tools_text, think, n_new, temp, tp, sd, tpl_text,
                      backend=remote_panel.LOCAL, remote_url="", request: gr.Request = None):
            yield from chat_turn("user", text, sess, model_name, system, tools_text, think, n_new, temp, tp, sd,
                                 tpl_text, backend, remote_url, request)

        def send_tool(text, sess, model_name, system, tools_text, think, n_new, temp, tp, sd, tpl_text,
                      backend=remote_panel.LOCAL, remote_url="", request: gr.Request = None):
            yield from chat_turn("tool", text, sess, model_name, system, tools_text, think, n_new, temp, tp, sd,
                                 tpl_text, backend, remote_url, request)

        chat_inputs = [session, model_box, system_box, tools_code, thinking, max_new, temperature, top_p, seed,
                       template, backend_ctl.backend, backend_ctl.url]
        chat_outputs = [status, chatbot, user_box, tool_result_box, *vis, session]
        send_ev = send_btn.click(send_user, [user_box] + chat_inputs, chat_outputs, concurrency_limit=8,
                                 concurrency_id="generate")
        submit_ev = user_box.submit(send_user, [user_box] + chat_inputs, chat_outputs, concurrency_limit=8,
                                    concurrency_id="generate")
        tool_ev = tool_btn.click(send_tool, [tool_result_box] + chat_inputs, chat_outputs, concurrency_limit=8,
                                 concurrency_id="generate")

        def stop(request: gr.Request):
            # No output: the generation's own final update says "Stopped"; writing the status here
            # could land after it and hide it.
            ev = _STOP_EVENTS.get(request.session_hash) if request is not None else None
            if ev is not None:
                ev.user_requested = True
                ev.set()

        stop_btn.click(stop, None, None, concurrency_limit=None)
        remote_panel.wire(backend_ctl, model_box=model_box, status=status, session=session, parity_view=parity_view,
                          chat_events=[send_ev, submit_ev, tool_ev], servers=remotes, allow_any=allow_any_remote,
                          status_html=_status)

        def clear(sess: Session):
            sess.history = []
            return _status("Conversation cleared."), [], sess

        clear_btn.click(_with_outputs(clear, 3), session, [status, chatbot, session])

        def load(name, sess: Session, backend, remote_url):
            src = remote_panel.source_for(backend, remote_url, name, remotes, allow_any_remote, trust_remote_code)
            lm = src.load() if src else backends.load_model(name, trust_remote_code)
            tpl, note = backends.template_for_tokenizer(lm.tokenizer)
            sess.model_id = name
            text = template_to_text(tpl) if tpl is not None else template_to_text(SKELETON_TEMPLATE)
            what = f"the tokenizer of {src.label}; generation runs on the server" if src else backends.model_label(lm)
            return _status(f"Loaded {what}. Template: {note}.", "ok"), text, sess

        load_btn.click(_with_outputs(load, 3), [model_box, session, backend_ctl.backend, backend_ctl.url],
                       [status, template, session], concurrency_limit=2)

        def on_template(text, sess: Session, start):
            try:
                limits.check_size("The template", text, "max_template_chars")
                parsing.loads_template(text)
            except parsing.TemplateError as p:
                sess.template_text = text
                return (render.template_status_html(p, text), *(gr.skip(),) * len(vis), sess)
            sess.template_text = text
            hints = "".join(f" · {h}" for h in field_name_hints(text))
            if sess.run is None:
                return (render.template_status_html(None, ok_note=hints), *(gr.skip(),) * len(vis), sess)
            view = parse_run(sess.run, text, budget=guard.request_budget())
            chk = check_against_reference(sess.run, view, text)
            sess.keep(sess.run, view, chk)
            note = " · re-parsed the last run" if view.cut is None else f" · {_cut_text(view)}"
            return (render.template_status_html(None, ok_note=note + hints),
                    *_visuals(view, chk, start=_start(start)), sess)

        template.change(_with_outputs(on_template, 2 + len(vis)), [template, session, timeline_from],
                        [template_status, *vis, session], trigger_mode="always_last", show_progress="hidden")

        def on_library(choice, sess: Session):
            if not choice:
                return gr.skip(), gr.skip()
            if choice == "(skeleton)":
                return _status("Loaded the skeleton template."), template_to_text(SKELETON_TEMPLATE)
            if choice.startswith("(tokenizer"):
                lm = remote_panel.tokenizer_or_model(sess.model_id or default_model, trust_remote_code)
                tpl, note = backends.template_for_tokenizer(lm.tokenizer)
                return _status(f"Template: {note}."), template_to_text(tpl or SKELETON_TEMPLATE)
            return _status(f"Loaded the library template for {choice}."), library_template_text(choice)

        lib_dd.change(_with_outputs(on_library, 2), [lib_dd, session], [status, template])

        def replay_chunks_of(run: Run, tpl_text: str, sess: Session, label: str):
            budget = guard.request_budget()  # parsing and drawing count on it; the pacing does not
            live = LiveParse(tpl_text, run.prefix, list(run.tools) if run.tools else None,
                             budget=budget, regex_timeout=limits.regex_timeout)
            delay = min(0.02, REPLAY_SECONDS / max(1, len(run.chunks)))
            record, times = [], []
            throttle = _Throttle(PREVIEW_INTERVAL)
            pace = _Pacer(delay)
            for view in _stream(live, run.chunks, record, times, delay_fn=lambda: live.failed or pace()):
                if view.final:
                    break
                if live.failed and budget.exhausted:
                    continue  # cut by the budget: the rest goes straight to the final (unparsed) view
                with budget.working():
                    out = _visuals(view, window=STREAM_WINDOW, preview=throttle())
                yield (_status(f"{label}…"), *out, sess)
            new_run = dataclasses.replace(run, template_text=tpl_text)
            view, chk = finish(sess, live, new_run)
            yield (_done_status(view, f"{label}: done, {len(run.chunks)} chunks."), *_visuals(view, chk), sess)

        def replay(tpl_text, sess: Session):
            try:
                if sess.run is None:
                    yield (_status(sess.note or "Nothing to replay yet."), *(gr.skip(),) * len(vis), sess)
                    return
                parsing.loads_template(tpl_text)
                yield from replay_chunks_of(sess.run, tpl_text, sess, "Replaying")
            except parsing.TemplateError as p:
                yield (_status(f"Fix the template first: {p.message}", "error"), *(gr.skip(),) * len(vis), sess)
            except Exception as e:  # noqa: BLE001
                yield (_status(f"{type(e).__name__}: {e}", "error"), *(gr.skip(),) * len(vis), sess)

        replay_btn.click(replay, [template, session], [status, *vis, session], concurrency_limit=8,
                         concurrency_id="replay")

        def paste(raw, prefix, tools_text, tpl_text, sess: Session, stream: bool):
            try:
                limits.check_size("The pasted output", raw, "max_paste_chars")
                limits.check_size("The prompt prefix", prefix, "max_prefix_chars")
                limits.check_size("The tools", tools_text, "max_tools_chars")
                limits.check_size("The template", tpl_text, "max_template_chars")
                tools = parse_tools(tools_text)
                parsing.loads_template(tpl_text)
                run = Run(prefix=prefix or "", chunks=tuple(tokenish_chunks(raw or "")), template_text=tpl_text,
                          tools=tuple(tools) if tools else None, source="paste")
                if stream:
                    yield from replay_chunks_of(run, tpl_text, sess, "Replaying pasted text")
                    return
                view = parse_run(run, budget=guard.request_budget())
                chk = check_against_reference(run, view)
                sess.keep(run, view, chk)
                yield (_done_status(view, f"Parsed {len(raw or '')} characters."), *_visuals(view, chk), sess)
            except parsing.TemplateError as p:
                yield (_status(f"Fix the template first: {p.message}", "error"), *(gr.skip(),) * len(vis), sess)
            except Exception as e:  # noqa: BLE001
                yield (_status(str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}", "error"),
                       *(gr.skip(),) * len(vis), sess)

        def paste_parse(raw, prefix, tools_text, tpl_text, sess):
            yield from paste(raw, prefix, tools_text, tpl_text, sess, False)

        def paste_replay(raw, prefix, tools_text, tpl_text, sess):
            yield from paste(raw, prefix, tools_text, tpl_text, sess, True)

        paste_in = [paste_raw, paste_prefix, paste_tools, template, session]
        paste_parse_btn.click(paste_parse, paste_in, [status, *vis, session])
        paste_replay_btn.click(paste_replay, paste_in, [status, *vis, session], concurrency_limit=8,
                               concurrency_id="replay")

        def on_family(fam):
            names = example_transcript_names(fam)
            return gr.update(choices=names, value=names[0] if names else None)

        ex_family.change(on_family, ex_family, ex_transcript)

        def example_replay(fam, name, sess: Session):
            try:
                run = example_run(fam, name)
            except Exception as e:  # noqa: BLE001
                yield (_status(str(e), "error"), gr.skip(), *(gr.skip(),) * len(vis), sess)
                return
            sess.template_text = run.template_text
            # set the editor first; the replay then streams with that template.  The editor's change
            # event re-parses sess.run: make that the new run, so it can only draw the same result.
            sess.run = run
            yield (_status(f"Replaying {fam} / {name}…"), run.template_text, *(gr.skip(),) * len(vis), sess)
            try:
                for out in replay_chunks_of(run, run.template_text, sess, f"Replaying {fam} / {name}"):
                    yield (out[0], gr.skip(), *out[1:])
            except Exception as e:  # noqa: BLE001
                yield (_status(f"{type(e).__name__}: {e}", "error"), gr.skip(), *(gr.skip(),) * len(vis), sess)

        ex_replay_btn.click(example_replay, [ex_family, ex_transcript, session],
                            [status, template, *vis, session], concurrency_limit=8, concurrency_id="replay")

        def do_export(tpl_text, name, sess: Session):
            lm = remote_panel.tokenizer_or_model(sess.model_id or name, trust_remote_code)
            try:
                res = export_template(lm.tokenizer, tpl_text, fresh_export_dir())
            except parsing.TemplateError as p:
                return (_status(f"Fix the template first: {p.message}", "error"),
                        render.template_status_html(p, tpl_text), gr.update(visible=False))
            kind = "ok" if res.roundtrip_ok else "error"
            return (_status(res.message, kind), f'<div class="status-{kind}" id="export-result">'
                    f'{render.escape(res.message)}<br>Folder: <code>'
                    f'{render.escape(res.folder.name if limits.public else res.folder)}</code></div>',
                    gr.update(value=str(res.zip_path), visible=True))

        export_btn.click(_with_outputs(do_export, 3), [template, model_box, session],
                         [status, export_status, download])

        def move_window(start, sess: Session):
            if sess.view is None:
                return _status("Nothing parsed yet: there is no timeline to move.", "error"), gr.skip()
            n = len(sess.view.text)
            try:
                a = parse_timeline_start(start, n)
            except ValueError as e:
                return _status(str(e), "error"), gr.skip()
            lo, hi = render.timeline_window(n, render.TIMELINE_MAX_CHARS, a)
            return (_status(f"Timeline shows characters {lo}–{hi} of {n}."),
                    render.timeline_html(sess.view, start=a))

        timeline_from.submit(_with_outputs(move_window, 2), [timeline_from, session], [status, timeline])

        # ------------------------------------------------------------ extension point
        ctx = PanelContext(template=template, template_status=template_status, session=session,
                           model_box=model_box, tools=tools_code, status=status,
                           load_model=lambda name: backends.load_model(name, trust_remote_code),
                           trust_remote_code=trust_remote_code, safe=_safe)
        demo.panel_context = ctx
        draft_panel.wire_draft_panel(draft_parts, ctx)
        with doctor_tab:
            build_doctor_panel(ctx)
        demo.unload(_client_left)
    # Every handler (the Doctor's too): repaired text in and out, a message for any failure, session upkeep.
    guard.protect(demo, {status: lambda m: _status(m, "error"), template_status: render.template_status_html,
                         export_status: lambda m: _status(m, "error")})
    guard.start_janitor(demo)  # closed and expired sessions forgotten, with Gradio's copies of their values
    return demo


def check_against_reference(run: Run, view, template_text: str | None = None) -> dict:
    """The side-by-side transformers check of ``view`` under the limits in force (stopped if the client leaves)."""
    return reference_check(run, view, template_text, budget=guard.limits().reference_budget,
                           cancel=guard.cancel_event())


def _cut_text(view) -> str:
    """What the request's time budget cut from ``view``, and how to run it without limits."""
    cut = view.cut
    total = len(view.text) - view.prefix_length
    return cut_message(guard.limits().request_budget, max(0, cut["start"] - view.prefix_length), total)


def _done_status(view, text: str) -> str:
    """The status line after a parse: ``text``, or what the time limit cut."""
    return _status(_cut_text(view), "error") if view.cut is not None else _status(text, "ok")


def _client_left(request: gr.Request):
    """The page was closed: stop its work and free its run now (Gradio keeps closed sessions an hour)."""
    guard.SESSIONS.leave(getattr(request, "session_hash", None))


def _forget_session(sess) -> None:
    """``gr.State`` delete callback (time-to-live passed): free the run."""
    if hasattr(sess, "drop_run"):
        sess.drop_run()


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


def _start(value) -> int | None:
    try:
        return None if value is None or value == "" else max(0, int(value))
    except (TypeError, ValueError):
        return None


def launch_kwargs() -> dict:
    """Keyword arguments for ``demo.launch`` that the app needs (stylesheet)."""
    return {"css": render.CSS + remote_panel.CSS}
