"""Generation from OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp, ``transformers serve``).

The prompt is rendered locally with the model's tokenizer and chat template, sent to the server's
``/v1/completions`` with ``"stream": true``, and every text delta goes through the same parser and
views as local generation.  HTTP is ``httpx``; the server-sent events are framed by ``httpx-sse``.

Who may choose the server: the operator configures servers (``--remote NAME=URL``, see
:func:`parse_remote_spec`); API keys come from environment variables, are sent only to their own
server and never appear in the page, in messages or in logs.  Free-form URLs typed in the page are
allowed only when the app was started with ``--allow-any-remote`` (private use): on a public Space
they would let any visitor make the Space send requests into its own network.

Server parity (:func:`server_message`, :func:`compare_messages`): the same conversation sent to the
server's ``/v1/chat/completions`` gives the server's own reasoning/tool parse, compared field by
field with the template's parse of the raw text.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

import httpx
from httpx_sse import SSEError, connect_sse

from parsing.doctor.samples import SampleError, pattern_samples

from .backends import GenerationError, LoadedModel, ModelLoadError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0  # seconds to open a connection
READ_TIMEOUT = 120.0  # seconds without a byte from the server (prefill of a long prompt on a big model)
PARITY_TIMEOUT = 600.0  # seconds for the whole non-streamed chat completion
# Request fields that not every server knows; a server that refuses one (422 "Unexpected fields",
# pydantic's "Extra inputs are not permitted") gets the request again without it.
OPTIONAL_FIELDS = ("skip_special_tokens", "chat_template_kwargs", "seed")


class RemoteError(GenerationError):
    """A server could not be used (connection, timeout, HTTP error); ``str(err)`` is readable for the UI."""


# ---------------------------------------------------------------- configuration


@dataclass(frozen=True)
class RemoteServer:
    """One OpenAI-compatible server the operator allows.

    ``name``: label in the page.  ``base_url``: ``scheme://host[:port]/v1`` (see :func:`normalize_url`).
    ``model``: the model name to request (None: the user types it, or the server's first listed model).
    ``tokenizer``: hub id or local folder of the tokenizer that renders prompts (None: same as the model).
    ``key_env``: name of the environment variable holding the API key (None: no key).
    ``trust_env``: let httpx read proxy settings and .netrc (True for operator servers; False for
    URLs typed in the page, so they get nothing from this machine's environment).
    """

    name: str
    base_url: str
    model: str | None = None
    tokenizer: str | None = None
    key_env: str | None = None
    trust_env: bool = True

    def api_key(self) -> str | None:
        """The API key from ``key_env`` (None when unset or empty).  Never log or show it."""
        return (os.environ.get(self.key_env) or None) if self.key_env else None

    @property
    def host(self) -> str:
        """``host[:port]`` of the server (what the page shows besides the name)."""
        return urlsplit(self.base_url).netloc

    def __repr__(self) -> str:  # the key is not a field, but keep reprs short and key-free anyway
        return f"RemoteServer({self.name!r}, {self.base_url!r}, model={self.model!r})"


def normalize_url(url: str) -> str:
    """``url`` as an OpenAI base URL: http(s), a host, no credentials, no query; ``/v1`` added when the
    path is empty; no trailing slash.  Raises ValueError with a message for the user otherwise."""
    text = (url or "").strip()
    if not text:
        raise ValueError("Enter the server's URL, e.g. http://127.0.0.1:8000/v1.")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{text[:80]!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1.")
    if parts.username or parts.password:
        raise ValueError("Do not put credentials in the URL: give the API key in an environment variable "
                         "(key_env=VAR).")
    if parts.query or parts.fragment:
        raise ValueError(f"The server URL takes no query or fragment: {text[:80]!r}.")
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ValueError(f"{text[:80]!r} has an invalid port.") from None
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,39}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_remote_spec(spec: str) -> RemoteServer:
    """A server from a ``--remote`` value: ``NAME=URL[,model=M][,tokenizer=T][,key_env=VAR]``.

    Example: ``gpu=http://10.0.0.5:8000/v1,model=Qwen/Qwen3-8B,key_env=GPU_API_KEY``.  NAME is 1-40
    letters, digits, ``_ . -``.  Raises ValueError naming the fault.
    """
    name, sep, rest = (spec or "").partition("=")
    name = name.strip()
    if not sep or not _NAME_RE.match(name):
        raise ValueError(f"--remote {spec!r}: expected NAME=URL[,model=M][,tokenizer=T][,key_env=VAR] with a "
                         "NAME of letters, digits, '_', '.', '-'.")
    url, *options = rest.split(",")
    try:
        base = normalize_url(url)
    except ValueError as e:
        raise ValueError(f"--remote {name}: {e}") from None
    extra: dict[str, str] = {}
    for opt in options:
        key, eq, value = opt.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or key not in ("model", "tokenizer", "key_env") or not value:
            raise ValueError(f"--remote {name}: unknown option {opt!r} (use model=, tokenizer=, key_env=).")
        if key in extra:
            raise ValueError(f"--remote {name}: {key}= given twice.")
        extra[key] = value
    if "key_env" in extra and not _ENV_RE.match(extra["key_env"]):
        raise ValueError(f"--remote {name}: key_env must name an environment variable, got {extra['key_env']!r}.")
    return RemoteServer(name=name, base_url=base, **extra)


def parse_remote_specs(specs: list[str] | None) -> list[RemoteServer]:
    """Servers from repeated ``--remote`` values; names must be unique.  Raises ValueError."""
    servers = [parse_remote_spec(s) for s in specs or []]
    names = [s.name for s in servers]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"--remote: the name {sorted(dup)[0]!r} is used twice.")
    return servers


def custom_server(url: str) -> RemoteServer:
    """A server for a URL typed in the page (only offered with ``--allow-any-remote``): no key, and
    nothing from this machine's environment (proxies, .netrc).  Raises ValueError for a bad URL."""
    base = normalize_url(url)
    return RemoteServer(name=urlsplit(base).netloc, base_url=base, trust_env=False)


# ---------------------------------------------------------------- HTTP


def _client(server: RemoteServer, read_timeout: float = READ_TIMEOUT) -> httpx.Client:
    headers = {"Accept": "application/json"}
    key = server.api_key()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.Client(base_url=server.base_url + "/", headers=headers, trust_env=server.trust_env,
                        timeout=httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT), follow_redirects=False)


def _detail(response: httpx.Response) -> str:
    """The error text of a non-2xx answer (FastAPI ``detail``, OpenAI ``error.message``, or the body)."""
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 - not JSON: show the start of the text
        try:
            return response.text[:300].strip()
        except Exception:  # noqa: BLE001 - a streamed body not read yet
            return ""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        for key in ("detail", "message", "error"):
            if body.get(key):
                return (body[key] if isinstance(body[key], str) else json.dumps(body[key]))[:300]
    return json.dumps(body)[:300]


def refused_fields(status: int, detail: str, sent: dict) -> list[str]:
    """Optional request fields (:data:`OPTIONAL_FIELDS`) that an HTTP 400/422 answer says the server
    does not accept (``transformers serve``: 422 "Unexpected fields in the request: {...}")."""
    if status not in (400, 422):
        return []
    low = detail.lower()
    if not any(k in low for k in ("unexpected field", "extra inputs", "extra_forbidden", "unrecognized", "unknown",
                                  "not permitted", "not allowed", "unsupported")):
        return []
    return [f for f in OPTIONAL_FIELDS if f in sent and f in detail]


def _http_error(server: RemoteServer, what: str, status: int, detail: str) -> RemoteError:
    hint = ""
    if status in (401, 403):
        hint = (f" Set the API key in the environment variable {server.key_env}." if server.key_env
                else " The server wants an API key: configure key_env=VAR for it.")
    elif status == 404:
        hint = " Check the URL (it usually ends in /v1) and the model name."
    return RemoteError(f"{server.name} answered {what} with HTTP {status}: {detail or '(no detail)'}.{hint}")


def _connection_error(server: RemoteServer, e: BaseException) -> RemoteError:
    if isinstance(e, httpx.ConnectTimeout):
        return RemoteError(f"{server.name} ({server.host}) did not accept a connection within "
                           f"{CONNECT_TIMEOUT:.0f} s.")
    if isinstance(e, httpx.TimeoutException):
        return RemoteError(f"{server.name} ({server.host}) sent nothing for {READ_TIMEOUT:.0f} s.")
    if isinstance(e, httpx.ConnectError):
        return RemoteError(f"Could not connect to {server.name} ({server.host}): {_reason(e)}. Is the server "
                           "running, and is the URL right?")
    return RemoteError(f"{server.name} ({server.host}): {_reason(e)}.")


def _reason(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    if "refused" in text.lower():
        return "connection refused"
    return text[:200]


def list_models(server: RemoteServer) -> list[str]:
    """Model names the server lists at ``GET /v1/models`` (may be empty: ``transformers serve`` lists only
    its hub cache).  Raises :class:`RemoteError` with a readable message."""
    try:
        with _client(server, read_timeout=15) as c:
            r = c.get("models")
    except httpx.HTTPError as e:
        raise _connection_error(server, e) from None
    if r.status_code != 200:
        raise _http_error(server, "GET /v1/models", r.status_code, _detail(r))
    try:
        data = r.json().get("data") or []
        return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]
    except Exception:  # noqa: BLE001
        raise RemoteError(f"{server.name}: GET /v1/models did not answer an OpenAI model list.") from None


# ---------------------------------------------------------------- tokenizers for remote models

_TOKENIZERS: dict[str, LoadedModel] = {}
_TOK_LOCK = threading.Lock()


def load_tokenizer(name: str, trusted: bool = False, trust_remote_code: bool = False) -> LoadedModel:
    """The tokenizer that renders prompts for a remote model, as a :class:`LoadedModel` with ``model=None``.

    ``name``: hub id or local folder.  ``trusted``: the operator named it (``--remote ...,model=/tokenizer=``);
    otherwise a visitor typed it and it goes through the model policy like the model box
    (``playground.policy.current().resolve``: allow-list, no file-system facts in messages on a public
    server).  Tokenizers are cached by resolved model.  Raises :class:`ModelLoadError` with a readable message.
    """
    from . import policy

    name = (name or "").strip()
    if not name:
        raise ModelLoadError("Enter the model name the server serves (its tokenizer renders the prompt).")
    rules = policy.current()
    if trusted:
        real = os.path.realpath(name) if os.path.isdir(name) else None
        key, location, label = ((f"folder:{real}", real, policy.folder_label(real)) if real
                                else (f"hub:{name.casefold()}", name, name))
    else:
        try:
            resolved = rules.resolve(name)
        except policy.ModelRefused as e:
            raise ModelLoadError(str(e)) from None
        key, location, label = resolved.key, resolved.location, resolved.label
    with _TOK_LOCK:
        if key in _TOKENIZERS:
            _TOKENIZERS[name] = _TOKENIZERS[key]
            return _TOKENIZERS[key]
        t0 = time.perf_counter()
        try:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(location, trust_remote_code=trust_remote_code)
        except Exception as e:  # noqa: BLE001
            detail = "" if rules.hide_paths else f": {type(e).__name__}: {str(e)[:300]}"
            raise ModelLoadError(f"Could not load the tokenizer of '{policy.shown(label)}' (unknown id, private "
                                 f"or gated repository, no network, or files missing){detail}") from None
        lm = LoadedModel(name=label, tokenizer=tok, model=None, device="remote",
                         load_seconds=time.perf_counter() - t0, info={"parameters": 0, "key": key})
        _TOKENIZERS[key] = _TOKENIZERS[name] = lm
        return lm


def loaded_tokenizer(name: str) -> LoadedModel | None:
    """The tokenizer :func:`load_tokenizer` loaded under ``name``, or None."""
    with _TOK_LOCK:
        return _TOKENIZERS.get((name or "").strip())


# ---------------------------------------------------------------- streaming


@dataclass
class StreamOutcome:
    """What happened to one streamed completion (filled while it streams).

    ``chunks``: text deltas received.  ``finish_reason``: the server's (None when it never said).
    ``cut``: why the stream ended early ("" when complete); what arrived is kept.  ``stopped``: the
    user pressed Stop.  ``refused``: optional fields the server refused (the request was retried
    without them).  ``malformed``: events skipped because they were not completion chunks.
    ``first_delta_at``: ``time.time()`` when the first text delta arrived (None if none did).
    """

    chunks: int = 0
    finish_reason: str | None = None
    cut: str = ""
    stopped: bool = False
    refused: list = field(default_factory=list)
    malformed: int = 0
    first_delta_at: float | None = None

    @property
    def special_tokens_kept(self) -> bool:
        """False when the server refused ``skip_special_tokens: false`` (it then strips special tokens)."""
        return "skip_special_tokens" not in self.refused


def _open_stream(client: httpx.Client, server: RemoteServer, body: dict, outcome: StreamOutcome):
    """POST the completion; on a refused optional field retry without it.  Returns the entered
    ``connect_sse`` context (caller closes it).  Raises RemoteError."""
    for _ in range(len(OPTIONAL_FIELDS) + 1):
        ctx = connect_sse(client, "POST", "completions", json=body)
        try:
            source = ctx.__enter__()
        except httpx.HTTPError as e:
            raise _connection_error(server, e) from None
        r = source.response
        if r.status_code == 200:
            return ctx, source
        try:
            r.read()
            detail = _detail(r)
        except httpx.HTTPError:
            detail = ""
        finally:
            ctx.__exit__(None, None, None)
        drop = refused_fields(r.status_code, detail, body)
        if not drop:
            raise _http_error(server, "POST /v1/completions", r.status_code, detail)
        outcome.refused += drop
        log.info("%s refused %s; retrying without", server.name, ", ".join(drop))
        body = {k: v for k, v in body.items() if k not in drop}
    raise RemoteError(f"{server.name} kept refusing the request fields.")


def _event_text(data: dict) -> tuple[str | None, str | None]:
    """(text delta, finish_reason) of one ``text_completion`` chunk; raises ValueError when it is not one."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("no choices")
    ch = choices[0]
    text = ch.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError("text is not a string")
    return text, ch.get("finish_reason")


def stream_completion(server: RemoteServer, model: str, prompt: str, *, max_new_tokens: int = 256,
                      temperature: float = 0.7, top_p: float = 0.95, seed: int | None = None,
                      stop_event: threading.Event | None = None,
                      outcome: StreamOutcome | None = None) -> Iterator[str]:
    """Stream ``prompt`` through the server's ``/v1/completions``; yield the non-empty text deltas.

    Sends ``skip_special_tokens: false`` (vLLM, SGLang keep the template's special-token delimiters);
    a server that refuses it gets the request again without it (``outcome.refused``).  ``temperature``
    <= 0 means greedy; ``seed`` < 0 or None sends none.  Setting ``stop_event`` or closing the
    generator closes the HTTP stream (the server stops generating).  Failures before the first delta
    raise :class:`RemoteError`; a stream that breaks later ends normally with ``outcome.cut`` saying
    why, so what arrived is kept.  ``outcome`` (a :class:`StreamOutcome`) is filled as it goes.
    """
    outcome = outcome if outcome is not None else StreamOutcome()
    stop_event = stop_event or threading.Event()
    body: dict[str, Any] = {"model": model, "prompt": prompt, "stream": True, "max_tokens": int(max_new_tokens),
                            "temperature": max(0.0, float(temperature)), "skip_special_tokens": False}
    if temperature and temperature > 0:
        body["top_p"] = float(top_p)
    if seed is not None and int(seed) >= 0:
        body["seed"] = int(seed)
    client = _client(server)
    items: queue.Queue = queue.Queue()
    holder: dict[str, Any] = {}

    def reader():
        # Owns the HTTP stream: puts ("text", str) / ("end", None) / ("error", exc) on the queue.
        try:
            ctx, source = _open_stream(client, server, body, outcome)
        except BaseException as e:  # noqa: BLE001
            items.put(("error", e))
            return
        holder["response"] = source.response
        try:
            for sse in source.iter_sse():
                if stop_event.is_set():
                    break
                if sse.data.strip() == "[DONE]":
                    break
                try:
                    data = json.loads(sse.data)
                except ValueError:
                    outcome.malformed += 1
                    continue
                if isinstance(data, dict) and data.get("error"):
                    err = data["error"]
                    msg = err.get("message") if isinstance(err, dict) else err
                    items.put(("server_error", str(msg)[:300]))
                    return
                try:
                    text, finish = _event_text(data) if isinstance(data, dict) else _event_text({})
                except ValueError:
                    outcome.malformed += 1
                    continue
                if text:
                    items.put(("text", text))
                if finish:
                    outcome.finish_reason = str(finish)
            items.put(("end", None))
        except BaseException as e:  # noqa: BLE001 - closed by Stop, dropped connection, bad framing
            items.put(("error", e))
        finally:
            try:
                ctx.__exit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass

    thread = threading.Thread(target=reader, name="remote-stream", daemon=True)
    thread.start()
    try:
        while True:
            try:
                kind, value = items.get(timeout=0.05)
            except queue.Empty:
                if stop_event.is_set():
                    outcome.stopped = True
                    break
                continue
            if kind == "text":
                if outcome.first_delta_at is None:
                    outcome.first_delta_at = time.time()
                    log.debug("first delta from %s at %.6f", server.name, outcome.first_delta_at)
                outcome.chunks += 1
                yield value
                if stop_event.is_set():
                    outcome.stopped = True
                    break
                continue
            if kind == "end":
                if outcome.finish_reason is None and not stop_event.is_set():
                    outcome.cut = "the stream ended without a finish reason"
                break
            if kind == "server_error":
                if not outcome.chunks:
                    raise RemoteError(f"{server.name} reported an error: {value}")
                outcome.cut = f"the server reported an error: {value}"
                break
            e = value  # "error"
            if stop_event.is_set():
                outcome.stopped = True
                break
            if isinstance(e, RemoteError):
                raise e
            if isinstance(e, (httpx.HTTPError, SSEError)) or isinstance(e, OSError):
                if not outcome.chunks:
                    raise _connection_error(server, e) from None
                outcome.cut = f"the connection dropped ({_reason(e)})"
                break
            raise RemoteError(f"{server.name}: {type(e).__name__}: {e}"[:400])
    finally:
        stop_event.set()
        response = holder.get("response")
        if response is not None:  # closing the connection tells the server to stop generating
            try:
                response.close()
            except Exception:  # noqa: BLE001 - the reader may be closing it at the same time
                pass
        thread.join(timeout=1)
        client.close()
        if outcome.cut:
            log.info("stream from %s cut after %d chunks: %s", server.name, outcome.chunks, outcome.cut)


# ---------------------------------------------------------------- special tokens


def special_tokens_of(tokenizer) -> set[str]:
    """Every token the tokenizer marks as special (skipped by ``decode(skip_special_tokens=True)``)."""
    out = set(getattr(tokenizer, "all_special_tokens", None) or [])
    for tok in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values():
        if getattr(tok, "special", False):
            out.add(str(tok))
    return out


def stripped_special_delimiters(text: str, template_text: str, tokenizer) -> list[str]:
    """Special tokens of ``tokenizer`` that are delimiters of the template, when ``text`` holds none of
    the template's delimiters at all (the signature of a server that decoded with
    ``skip_special_tokens=True``); else [].  A template that does not load gives []."""
    import parsing

    try:
        compiled = parsing.loads_template(template_text)
    except parsing.TemplateError:
        return []
    delims = [d for f in compiled.fields.values() for d in (f.open, f.close) if d is not None]
    specials = sorted(special_tokens_of(tokenizer))
    matched: list[str] = []
    for d in delims:
        try:
            if d.run("search", text, timeout=1.0) is not None:
                return []  # some delimiter came through
        except TimeoutError:  # a pathological pattern (PatternTimeoutError): no verdict from it
            continue
        texts = _delimiter_texts(d)
        matched += [t for t in specials if t not in matched and any(t in x for x in texts)]
    return matched


def _delimiter_texts(delim) -> list[str]:
    """What a delimiter looks like in a stream: its literals, or for a pattern one example text per alternative
    (`parsing.doctor.samples`; a lookahead-only alternative by the text it waits for). Patterns such as
    ``<tool_call>(?=\\s*\\{)`` or a close with a lookbehind match no special token on its own, yet carry it."""
    if delim.literals is not None:
        return list(delim.literals)
    try:
        return [s.text or s.trigger for s in pattern_samples(delim.source)]
    except SampleError:
        return []


def stripped_token_warning(tokens: list[str], refused: bool) -> str:
    """The status-line warning for :func:`stripped_special_delimiters`' result ("" when empty)."""
    if not tokens:
        return ""
    shown = ", ".join(tokens[:6]) + (" …" if len(tokens) > 6 else "")
    why = ("it refused skip_special_tokens: false" if refused
           else "it ignored skip_special_tokens: false")
    return (f"The server removed special tokens; the text holds none of the template's delimiters, although "
            f"the tokenizer defines {shown} as special tokens ({why}). Serve with a server that keeps them "
            "(vLLM, SGLang), or register the markers as added tokens that are not special.")


# ---------------------------------------------------------------- server parity


def openai_messages(messages: list[dict]) -> list[dict]:
    """Chat messages in the OpenAI wire format for ``/v1/chat/completions``.

    Assistant ``tool_calls`` get ``id`` / ``type`` and JSON-string ``arguments``; a tool result without
    ``tool_call_id`` answers the oldest unanswered call.  Keys starting with ``_`` are dropped.
    """
    out: list[dict] = []
    open_ids: list[str] = []
    n = 0
    for m in messages:
        m = {k: v for k, v in m.items() if not str(k).startswith("_")}
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = m["tool_calls"] if isinstance(m["tool_calls"], list) else [m["tool_calls"]]
            wire = []
            for call in calls:
                call = dict(call) if isinstance(call, dict) else {"function": call}
                fn = dict(call.get("function") or {}) if isinstance(call.get("function"), dict) else {}
                args = fn.get("arguments", {})
                fn["arguments"] = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                call_id = str(call.get("id") or f"call_{n}")
                n += 1
                wire.append({"id": call_id, "type": "function", "function": fn})
                open_ids.append(call_id)
            m["tool_calls"] = wire
            if m.get("content") is None:
                m["content"] = ""
        elif m.get("role") == "tool":
            if not m.get("tool_call_id") and open_ids:
                m["tool_call_id"] = open_ids[0]
            if m.get("tool_call_id") in open_ids:
                open_ids.remove(m["tool_call_id"])
        out.append(m)
    return out


def server_message(server: RemoteServer, model: str, messages: list[dict], tools: list | None = None,
                   template_kwargs: dict | None = None, *, max_new_tokens: int = 256, temperature: float = 0.0,
                   top_p: float = 0.95, seed: int | None = None) -> dict:
    """The server's own parse: ``/v1/chat/completions`` (not streamed) of the same conversation.

    Returns ``{"content", "reasoning", "tool_calls", "finish_reason", "refused", "raw"}``: reasoning from
    ``reasoning_content`` (older vLLM, transformers serve) or ``reasoning`` (newer vLLM); tool_calls as
    the server sent them.  Raises :class:`RemoteError` with a readable message.
    """
    body: dict[str, Any] = {"model": model, "messages": openai_messages(messages), "stream": False,
                            "max_tokens": int(max_new_tokens), "temperature": max(0.0, float(temperature))}
    if tools:
        body["tools"] = tools
    if template_kwargs:
        body["chat_template_kwargs"] = dict(template_kwargs)
    if temperature and temperature > 0:
        body["top_p"] = float(top_p)
    if seed is not None and int(seed) >= 0:
        body["seed"] = int(seed)
    refused: list[str] = []
    with _client(server, read_timeout=PARITY_TIMEOUT) as c:
        for _ in range(len(OPTIONAL_FIELDS) + 1):
            try:
                r = c.post("chat/completions", json=body)
            except httpx.HTTPError as e:
                raise _connection_error(server, e) from None
            if r.status_code == 200:
                break
            detail = _detail(r)
            drop = refused_fields(r.status_code, detail, body)
            if not drop:
                raise _http_error(server, "POST /v1/chat/completions", r.status_code, detail)
            refused += drop
            body = {k: v for k, v in body.items() if k not in drop}
    try:
        data = r.json()
        choice = data["choices"][0]
        msg = choice.get("message") or {}
    except Exception:  # noqa: BLE001
        raise RemoteError(f"{server.name}: /v1/chat/completions did not answer a chat completion.") from None
    reasoning = msg.get("reasoning_content")
    if reasoning is None:
        reasoning = msg.get("reasoning")
    return {"content": msg.get("content"), "reasoning": reasoning, "tool_calls": msg.get("tool_calls") or [],
            "finish_reason": choice.get("finish_reason"), "refused": refused, "raw": msg}


REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")


def _norm_call(call: Any) -> tuple[Any, Any]:
    """(name, arguments as a value) of a tool call in either shape (template transform or OpenAI wire)."""
    if not isinstance(call, dict):
        return None, call
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    args = fn.get("arguments", fn.get("parameters"))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    return fn.get("name"), args


def _verdict(a: Any, b: Any) -> str:
    empty = (None, "", [], {})
    if a in empty and b in empty:
        return "same"
    if a == b:
        return "same"
    if isinstance(a, str) and isinstance(b, str) and a.strip() == b.strip():
        return "whitespace"
    return "differs"


def compare_messages(template_msg: dict | None, server_msg: dict) -> list[dict]:
    """Field-by-field comparison of the template's parse with the server's (see :func:`server_message`).

    Returns rows ``{"field", "template", "server", "verdict"}``; verdict is "same", "whitespace"
    (equal once surrounding whitespace is stripped), "differs" or "template only" (a template field the
    server has no equivalent for).  Tool calls compare name and arguments (JSON strings decoded), call by
    call; ids are the server's invention and are ignored.  Missing, None and "" count as empty.
    """
    t = dict(template_msg or {})
    rows = []
    rfield = next((f for f in REASONING_FIELDS if f in t), "reasoning_content")
    for label, tv, sv in (("content", t.get("content"), server_msg.get("content")),
                          (f"reasoning ({rfield})", t.get(rfield), server_msg.get("reasoning"))):
        rows.append({"field": label, "template": tv, "server": sv, "verdict": _verdict(tv, sv)})
    tcalls = t.get("tool_calls") or []
    tcalls = tcalls if isinstance(tcalls, list) else [tcalls]
    scalls = server_msg.get("tool_calls") or []
    rows.append({"field": "tool_calls (count)", "template": len(tcalls), "server": len(scalls),
                 "verdict": _verdict(len(tcalls), len(scalls))})
    for i in range(max(len(tcalls), len(scalls))):
        tn, ta = _norm_call(tcalls[i]) if i < len(tcalls) else (None, None)
        sn, sa = _norm_call(scalls[i]) if i < len(scalls) else (None, None)
        both = i < len(tcalls) and i < len(scalls)  # a call only one side has differs, even if empty
        rows.append({"field": f"tool_calls[{i}].name", "template": tn, "server": sn,
                     "verdict": _verdict(tn, sn) if both else "differs"})
        rows.append({"field": f"tool_calls[{i}].arguments", "template": ta, "server": sa,
                     "verdict": _verdict(ta, sa) if both else "differs"})
    for k, v in t.items():
        if k not in ("role", "content", "tool_calls", rfield):
            rows.append({"field": k, "template": v, "server": None, "verdict": "template only"})
    return rows


# ---------------------------------------------------------------- one remote generation


@dataclass
class RemoteSource:
    """Generation on ``server`` for one chat turn: the tokenizer, the stream, and what to say afterwards.

    ``model``: the model name sent to the server.  ``tokenizer_name``: where the tokenizer comes from
    (default: ``server.tokenizer`` or ``model``).  After :meth:`stream`, ``outcome`` tells how it ended.
    """

    server: RemoteServer
    model: str
    tokenizer_name: str = ""
    trust_remote_code: bool = False
    outcome: StreamOutcome = field(default_factory=StreamOutcome)

    def __post_init__(self):
        self.model = (self.model or self.server.model or "").strip()
        self.tokenizer_name = (self.tokenizer_name or self.server.tokenizer or self.model).strip()

    @property
    def label(self) -> str:
        """``model @ name (host)`` for status lines (a local folder as the model policy shows folders)."""
        from . import policy

        model = policy.folder_label(os.path.realpath(self.model)) if os.path.isdir(self.model) else self.model
        return f"{policy.shown(model)} @ {self.server.name} ({self.server.host})"

    def load(self) -> LoadedModel:
        """The tokenizer (a LoadedModel without weights).  Raises ModelLoadError.

        The operator's ``tokenizer=`` / ``model=`` is trusted; a model name a visitor typed goes through
        the model policy (see :func:`load_tokenizer`)."""
        if not self.model:
            raise ModelLoadError(f"Enter the name of the model that {self.server.name} serves.")
        trusted = bool(self.server.tokenizer) or (bool(self.server.model) and self.model == self.server.model)
        return load_tokenizer(self.tokenizer_name, trusted=trusted, trust_remote_code=self.trust_remote_code)

    def stream(self, prompt: str, **sampling) -> Iterator[str]:
        """:func:`stream_completion` of ``prompt`` (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``,
        ``stop_event``) with a fresh ``outcome``."""
        self.outcome = StreamOutcome()
        return stream_completion(self.server, self.model, prompt, outcome=self.outcome, **sampling)

    def request(self, messages: list[dict], tools: list | None, template_kwargs: dict, sampling: dict) -> dict:
        """What this run sent, kept in ``Run.request`` so server parity can send the same conversation."""
        return {"server": self.server, "model": self.model, "messages": messages, "tools": tools,
                "template_kwargs": dict(template_kwargs), "sampling": dict(sampling)}

    def notes(self, text: str, template_text: str, tokenizer) -> list[str]:
        """Readable notes on the finished stream: cut, stripped special tokens, skipped events."""
        o = self.outcome
        out = []
        if o.cut:
            out.append(f"Cut: {o.cut} after {o.chunks} chunks; what arrived is kept and parsed.")
        if o.malformed:
            out.append(f"{o.malformed} malformed server event{'s' if o.malformed != 1 else ''} skipped.")
        warn = stripped_token_warning(stripped_special_delimiters(text, template_text, tokenizer),
                                      refused=not o.special_tokens_kept)
        if warn:
            out.append(warn)
        return out
