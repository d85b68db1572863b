"""The page's remote-server controls and the server-parity view (wired by a few lines in ui.py).

- :func:`build_backend_controls`: a "Backend" dropdown (this process, or an operator-configured
  server; a free-form URL box only with ``--allow-any-remote``) and the server-parity switch.
- :func:`build_parity_view`: the "Server parity" tab's HTML.
- :func:`source_for`: the :class:`playground.remote.RemoteSource` a chat turn uses (None: local).
- :func:`wire`: events of these controls, and the parity request that follows each chat turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from . import remote
from .icons import icon
from .jsonsize import json_head
from .render import escape

LOCAL = "local"
CUSTOM = "custom-url"

CSS = """
.parity table{border-collapse:collapse;width:100%;font-size:13px}
.parity th,.parity td{border:1px solid #d1d5db;padding:3px 6px;text-align:left;vertical-align:top}
.parity td.v{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word;
 max-width:460px;unicode-bidi:isolate}
.parity tr.same td{background:#ecfdf5;color:#064e3b}
.parity tr.whitespace td{background:#fef9c3;color:#713f12}
.parity tr.differs td{background:#fee2e2;color:#7f1d1d;font-weight:600}
.parity tr.template-only td{background:#f3f4f6;color:#374151}
.parity .caveat{font-size:12px;margin:4px 0;color:var(--tl-muted)}
.parity .sum-same{color:#065f46;background:#d1fae5;border-radius:6px;padding:2px 8px;display:inline-block}
.parity .sum-differs{color:#991b1b;background:#fee2e2;border-radius:6px;padding:2px 8px;display:inline-block}
"""

PARITY_IDLE = ('<div class="parity" id="parity-idle">Pick a server under "Backend", tick "Compare with the '
               "server's own parser\", and chat: the server's parsed message shows here beside the "
               "template's.</div>")


@dataclass
class BackendControls:
    """Components of the backend row: ``backend`` (dropdown value: "local", a server name, or
    "custom-url"), ``url`` (free-form URL box, hidden unless allowed and chosen), ``parity``
    (checkbox), ``check`` (button listing the server's models)."""

    backend: Any
    url: Any
    parity: Any
    check: Any


def backend_choices(servers: list[remote.RemoteServer], allow_any: bool) -> list[tuple[str, str]]:
    """(label, value) pairs of the Backend dropdown; labels show name and host, never a key."""
    out = [("This process (local model)", LOCAL)]
    out += [(f"{s.name} · {s.host} (OpenAI-compatible server)", s.name) for s in servers]
    if allow_any:
        out.append(("Another server (type its URL)", CUSTOM))
    return out


def build_backend_controls(servers: list[remote.RemoteServer], allow_any: bool) -> BackendControls:
    """The backend row (inside an accordion, shown only when servers are configured or allowed)."""
    shown = bool(servers) or allow_any
    with gr.Accordion("Backend: this process or an OpenAI-compatible server", open=shown, visible=shown,
                      elem_id="backend-row"):
        with gr.Row():
            backend = gr.Dropdown(backend_choices(servers, allow_any), value=LOCAL, label="Backend",
                                  elem_id="backend", scale=3)
            url = gr.Textbox(label="Server URL (private use: --allow-any-remote)", placeholder="http://127.0.0.1:8000/v1",
                             visible=False, elem_id="remote-url", scale=3)
            check = gr.Button("Check server", elem_id="check-server", scale=1)
        parity = gr.Checkbox(value=False, elem_id="parity-switch",
                             label="Compare with the server's own parser (server parity: also sends the "
                                   "conversation to /v1/chat/completions)")
    return BackendControls(backend=backend, url=url, parity=parity, check=check)


def build_parity_view():
    """The Server parity tab's content (an HTML component)."""
    return gr.HTML(PARITY_IDLE, elem_id="parity")


def source_for(choice: str | None, url: str | None, model: str | None, servers: list[remote.RemoteServer],
               allow_any: bool, trust_remote_code: bool = False) -> remote.RemoteSource | None:
    """The remote source for a Backend choice, or None for this process.

    Raises ValueError for an unknown server, or a typed URL without ``--allow-any-remote`` (the page's
    controls never offer it then; this guards crafted requests too).
    """
    if not choice or choice == LOCAL:
        return None
    if choice == CUSTOM:
        if not allow_any:
            raise ValueError("Typed server URLs are off on this deployment (start with --allow-any-remote "
                             "for private use).")
        server = remote.custom_server(url or "")
    else:
        server = next((s for s in servers if s.name == choice), None)
        if server is None:
            raise ValueError(f"No server named {choice!r} is configured.")
    return remote.RemoteSource(server=server, model=(model or "").strip(), trust_remote_code=trust_remote_code)


def tokenizer_or_model(name: str, trust_remote_code: bool = False):
    """The tokenizer loaded for a remote model of that name (a LoadedModel without weights), else the
    in-process model (``backends.load_model``): template and export then work for remote runs too."""
    from . import backends

    return remote.loaded_tokenizer(name) or backends.load_model(name, trust_remote_code)


def _cell(value: Any) -> str:
    if value is None:
        text = "—"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)[1:-1].replace("\\n", "\n") if value else '""'
    else:  # only what is shown: a template's transform can make a value gigabytes as JSON (`json_head`)
        text, whole = json_head(value, 4000)
        if not whole:
            return escape(text + "… (longer)")
    if len(text) > 4000:
        text = text[:4000] + f"… (+{len(text) - 4000} chars)"
    return escape(text)


_VERDICT_TEXT = {"same": "same", "whitespace": "same up to surrounding whitespace", "differs": "DIFFERS",
                 "template only": "template only"}


def parity_html(rows: list[dict], server_label: str, sampling: dict, refused: list[str] | None = None) -> str:
    """The parity table: one row per field, differences highlighted, with the sampling caveat.

    ``rows``: :func:`playground.remote.compare_messages`.  ``sampling``: the run's temperature/seed.
    """
    n_diff = sum(r["verdict"] == "differs" for r in rows)
    summary = (f'<span class="sum-differs" id="parity-differs">{icon("error")} {n_diff} '
               f'field{"s" if n_diff != 1 else ""} differ{"s" if n_diff == 1 else ""}</span>' if n_diff else
               f'<span class="sum-same" id="parity-same">{icon("ok")} the server parses the same message</span>')
    body = "".join(
        f'<tr class="{r["verdict"].replace(" ", "-")}" data-field="{escape(r["field"])}">'
        f'<td>{escape(r["field"])}</td><td class="v">{_cell(r["template"])}</td>'
        f'<td class="v">{_cell(r["server"])}</td><td>{_VERDICT_TEXT.get(r["verdict"], r["verdict"])}</td></tr>'
        for r in rows)
    temp = float(sampling.get("temperature") or 0)
    if temp > 0:
        caveat = (f"Sampling was on (temperature {temp:g}): the server generated its own text for this "
                  "comparison, so the two messages can differ without either parser being wrong. Set the "
                  "temperature to 0 (greedy) to compare the parsers on the same generation.")
    else:
        caveat = ("Greedy decoding (temperature 0): both requests should generate the same text, so a "
                  "difference points at the parsers, unless the server renders the prompt differently "
                  "(its own chat template) or batches with other requests.")
    refused_note = (f" The server refused {', '.join(refused)}; it was sent without."
                    if refused else "")
    return (f'<div class="parity" id="parity-result">{summary} <span>template (this page) vs. '
            f"{escape(server_label)}'s own parser (/v1/chat/completions)</span>"
            f'<p class="caveat" id="parity-caveat">{escape(caveat + refused_note)}</p>'
            f"<table><tr><th>field</th><th>template parse of the streamed text</th>"
            f"<th>server's message</th><th></th></tr>{body}</table></div>")


def _note(text: str, kind: str = "info") -> str:
    return f'<div class="parity" id="parity-{kind}">{escape(text)}</div>'


def parity_for(sess) -> str:
    """The parity view for the session's last run: asks the server and compares (HTML)."""
    run = getattr(sess, "run", None)
    req = getattr(run, "request", None) if run is not None else None
    if not req:
        return _note("Server parity needs a run on a server: pick one under Backend and chat.", "idle")
    view = getattr(sess, "view", None)
    msg = getattr(view, "message", None) if view is not None else None
    try:
        got = remote.server_message(req["server"], req["model"], req["messages"], req["tools"],
                                    req["template_kwargs"], **req["sampling"])
    except remote.RemoteError as e:
        return _note(f"Server parity: {e}", "error")
    rows = remote.compare_messages(msg or {}, got)
    label = f"{req['model']} @ {req['server'].name}"
    return parity_html(rows, label, req["sampling"], got.get("refused"))


def wire(controls: BackendControls, *, model_box, status, session, parity_view, chat_events: list,
         servers: list[remote.RemoteServer], allow_any: bool, status_html) -> None:
    """Events: Backend change (URL box, model name), Check server, and server parity after each chat
    turn (``chat_events``: the Send/Submit/tool-result events).  ``status_html(msg, kind)`` formats
    the status line."""
    by_name = {s.name: s for s in servers}

    def on_backend(choice):
        if choice == CUSTOM:
            return gr.update(visible=True), gr.update(label="Model on the server (its tokenizer renders the prompt)")
        if choice in by_name:
            s = by_name[choice]
            upd = {"label": "Model on the server (its tokenizer renders the prompt)"}
            if s.model:
                upd["value"] = s.model
            return gr.update(visible=False), gr.update(**upd)
        return gr.update(visible=False), gr.update(label="Model (hub id or local folder)")

    controls.backend.change(on_backend, controls.backend, [controls.url, model_box])

    def on_check(choice, url, model):
        try:
            src = source_for(choice, url, model, servers, allow_any)
        except ValueError as e:
            return status_html(str(e), "error"), gr.skip()
        if src is None:
            return status_html("The local backend generates in this process: nothing to check."), gr.skip()
        try:
            models = remote.list_models(src.server)
        except remote.RemoteError as e:
            return status_html(str(e), "error"), gr.skip()
        listed = ", ".join(models[:8]) + (" …" if len(models) > 8 else "") if models else "none listed"
        fill = gr.update(value=models[0]) if models and not (model or "").strip() else gr.skip()
        return status_html(f"{src.server.name} ({src.server.host}) answers. Models: {listed}.", "ok"), fill

    controls.check.click(on_check, [controls.backend, controls.url, model_box], [status, model_box],
                         concurrency_limit=4)

    def after_turn(sess, want):
        if not want:
            yield gr.skip()
            return
        run = getattr(sess, "run", None)
        if run is None or not getattr(run, "request", None):
            yield _note("Server parity compares runs on a server; this run was generated in this process.", "idle")
            return
        yield _note(f"Asking {run.request['server'].name} for its own parse…", "pending")
        yield parity_for(sess)

    for ev in chat_events:
        ev.then(after_turn, [session, controls.parity], [parity_view], concurrency_limit=4,
                concurrency_id="parity", show_progress="hidden")
