"""One guard around every handler of the page, and the bookkeeping of sessions.

`protect(demo, ...)` wraps every event handler of a built page once, so that whatever a visitor sends:

* text with lone surrogates (which the browser can send and JSON can carry, but the page cannot show) is
  repaired on the way in and on the way out, and values nested deeper than `MAX_DEPTH` are cut, so no
  component fails to serialise and shows a bare "Error";
* an exception becomes a readable message in the handler's status output (file paths removed on a public
  server); a client that left stops its work quietly;
* the session's state is registered (`SESSIONS`): its cancel event is set when the client leaves, its run is
  dropped then, and the least recently used sessions' runs are dropped when all of them together hold more
  than the configured memory;
* the page's hold on its session state is checked (`hold`): the page echoes the token its state was issued, and a
  page whose state the server lost (Gradio evicted it past ``--max-sessions``, it expired, or the server
  restarted) is told so and redrawn from the fresh state instead of the handler running on a state it never saw.
"""

from __future__ import annotations

import functools
import inspect
import re
import secrets
import threading
import time
import weakref
from typing import Any, Callable

from .limits import Limits, RequestBudget, RequestCancelled

MAX_DEPTH = 64  # levels of nesting sent to the page; deeper values become a note (the page's JSON stops at 254)
_ABS_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s/'\"<>:,;()]+/)+[^\s/'\"<>:,;()]*")

_LIMITS = Limits.private()


def configure(limits: Limits) -> None:
    """Put ``limits`` in force for every guarded handler (budgets, memory of sessions)."""
    global _LIMITS
    _LIMITS = limits
    SESSIONS.memory_limit = None if limits.sessions_memory_mb is None else int(limits.sessions_memory_mb * 2**20)


def limits() -> Limits:
    """The limits in force."""
    return _LIMITS


# ---------------------------------------------------------------- cleaning values for the page


def clean_text(s: str) -> str:
    """``s`` with lone surrogates replaced by U+FFFD (pairs joined into their character)."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def clean(value: Any, depth: int = 0) -> Any:
    """``value`` made safe to send to the page: strings repaired (`clean_text`), containers deeper than
    `MAX_DEPTH` replaced by a note. Returns the same object when nothing had to change."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH:
            return f"… (nested deeper than {MAX_DEPTH} levels: not shown here)"
        if isinstance(value, dict):
            pairs = [(clean(k, depth + 1), clean(v, depth + 1)) for k, v in value.items()]
            if all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items())):
                return value
            out = dict(pairs)
            if type(value) is not dict:  # e.g. gr.update's dict subclass
                try:
                    return type(value)(out)
                except Exception:  # noqa: BLE001
                    return out
            return out
        items = [clean(v, depth + 1) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def scrub_paths(text: str) -> str:
    """``text`` with absolute file-system paths replaced by ``<path>`` (for messages on a public server)."""
    return _ABS_PATH.sub("<path>", text)


# ---------------------------------------------------------------- sessions


def _session_hash() -> str | None:
    """The session hash of the request being handled (Gradio sets it for the running handler), else None."""
    from gradio.context import LocalContext  # here, not at the top: worker processes import this module

    request = LocalContext.request.get(None)
    return getattr(request, "session_hash", None) if request is not None else None


class SessionRegistry:
    """Sessions seen by guarded handlers: their state, last use, and cancel event.

    ``memory_limit`` (bytes, None: none): when the sessions' runs hold more than this together, the least
    recently used sessions' runs are dropped (`Session.drop_run`), never the one being served.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._states: dict[str, weakref.ref] = {}
        self._used: dict[str, float] = {}
        self._sizes: dict[str, int] = {}
        self._cancel: dict[str, threading.Event] = {}
        self.memory_limit: int | None = None
        self.dropped = 0  # runs dropped under memory pressure (for tests)

    def cancel_event(self, session_hash: str | None) -> threading.Event | None:
        """The event set when that session's client leaves (None without a session)."""
        if session_hash is None:
            return None
        with self._lock:
            self._used[session_hash] = time.monotonic()
            return self._cancel.setdefault(session_hash, threading.Event())

    def touch(self, session_hash: str | None, state: Any) -> None:
        """Record that ``state`` (a `playground.session.Session`) belongs to that session and was just used;
        then drop the oldest sessions' runs when all of them hold more than ``memory_limit``."""
        if session_hash is None or not hasattr(state, "nbytes"):
            return
        size = state.nbytes
        with self._lock:
            self._states[session_hash] = weakref.ref(state)
            self._used[session_hash] = time.monotonic()
            self._sizes[session_hash] = size
            if self.memory_limit is None or sum(self._sizes.values()) <= self.memory_limit:
                return
            victims = sorted((t, h) for h, t in self._used.items() if h != session_hash)
        for _, h in victims:
            with self._lock:
                if sum(self._sizes.values()) <= self.memory_limit:
                    return
                ref = self._states.get(h)
                self._sizes[h] = 0
            state = ref() if ref is not None else None
            if state is not None and getattr(state, "run", None) is not None:
                state.drop_run()
                state.note = ("This session's last run was dropped to free memory for other visitors: parse or "
                              "replay it again.")
                self.dropped += 1

    def leave(self, session_hash: str | None) -> None:
        """The client left: stop its work, forget its run, and forget the session."""
        if session_hash is None:
            return
        with self._lock:
            event = self._cancel.pop(session_hash, None)
            ref = self._states.pop(session_hash, None)
            self._used.pop(session_hash, None)
            self._sizes.pop(session_hash, None)
        if event is not None:
            event.set()
        state = ref() if ref is not None else None
        if state is not None and hasattr(state, "drop_run"):
            state.drop_run()

    def expire(self, max_idle: float) -> int:
        """Forget sessions not seen for ``max_idle`` seconds (e.g. evicted by Gradio without a goodbye); their
        runs are dropped, nothing is cancelled (no request of theirs is running). Returns how many."""
        cutoff = time.monotonic() - max_idle
        with self._lock:
            old = [h for h, t in self._used.items() if t < cutoff]
            refs = [self._states.pop(h, None) for h in old]
            for h in old:
                self._used.pop(h, None)
                self._sizes.pop(h, None)
                self._cancel.pop(h, None)
        for ref in refs:
            state = ref() if ref is not None else None
            if state is not None and hasattr(state, "drop_run"):
                state.drop_run()
        return len(old)

    def total_bytes(self) -> int:
        """What the registered sessions hold, as last measured."""
        with self._lock:
            return sum(self._sizes.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._states)


SESSIONS = SessionRegistry()

CLOSED_GRACE_S = 60  # a closed page's session is forgotten this long after its last request
JANITOR_EVERY_S = 15


def sweep(demo: Any, now: float | None = None) -> int:
    """Forget Gradio sessions whose page closed more than `CLOSED_GRACE_S` ago, or that were idle longer than
    the session time-to-live; returns how many. Gradio itself keeps a closed session an hour and an idle one
    until 10,000 newer ones exist, with a copy of every component's last value (a 200 KB paste, its timeline
    and message: about 1 MB a session)."""
    holder = getattr(demo, "state_holder", None)
    if holder is None:
        return 0
    import datetime

    now_dt = datetime.datetime.now() if now is None else datetime.datetime.fromtimestamp(now)
    gone = []
    with holder.lock:
        for h, state in list(holder.session_data.items()):
            last = holder.time_last_used.get(h)
            idle = (now_dt - last).total_seconds() if last is not None else 0.0
            if (getattr(state, "is_closed", False) and idle > CLOSED_GRACE_S) or idle > _LIMITS.session_ttl:
                holder.session_data.pop(h, None)
                holder.time_last_used.pop(h, None)
                gone.append((h, state))
    for h, state in gone:
        for value in list(getattr(state, "state_data", {}).values()):
            if hasattr(value, "drop_run"):
                value.drop_run()
        SESSIONS.leave(h)
    SESSIONS.expire(_LIMITS.session_ttl)  # sessions Gradio evicted for capacity, which never say goodbye
    return len(gone)


def start_janitor(demo: Any) -> threading.Thread:
    """Run `sweep` on ``demo`` every `JANITOR_EVERY_S` seconds in a daemon thread (until the process ends)."""
    ref = weakref.ref(demo)

    def loop():
        while True:
            time.sleep(JANITOR_EVERY_S)
            blocks = ref()
            if blocks is None:
                return
            try:
                sweep(blocks)
            except Exception:  # noqa: BLE001 - housekeeping must never take the server down
                pass
            del blocks

    thread = threading.Thread(target=loop, name="session-janitor", daemon=True)
    thread.start()
    return thread


# ---------------------------------------------------------------- the page's hold on its session state

#: What a page token looks like (`new_token`): the page echoes it, and anything else in its place is refused as a
#: value sent there by mistake (`playground.api_calls.PlaygroundBlocks`).
TOKEN_FORM = re.compile(r"[0-9a-f]{32}")


def new_token() -> str:
    """A fresh page token: 32 hex digits (128 random bits)."""
    return secrets.token_hex(16)


def hold(state: Any, sent: Any) -> tuple[bool, str | None]:
    """Check the page's hold on its session ``state`` (a `playground.state.Session`) from the token the page
    echoed (``sent``: "" from a page that has not learned it yet; None from an API client, which has no page to
    keep: it is left out of this, and sent no token).

    Returns ``(run, token)``: whether the handler may run on ``state``, and the token to send the page (None:
    nothing to send, the page has it). A state without a token gets one. A page that echoes a token ``state``
    was not issued held a state the server lost (evicted past ``--max-sessions``, expired, or gone with a
    restarted server) and got this fresh one: ``state.lost()`` makes it say so and redraw every view, and the
    handler does not run (it would act on a conversation and a run the page never saw). An event the page sent
    before it learned that (it echoes ``state.lost_token``) does not run either and changes nothing. A few
    comparisons: nothing measurable per event."""
    held = state.token
    if sent is None or (held is not None and sent == held):
        return True, None
    with _HOLD_LOCK:  # two events of one page at once: one token issued, one loss said
        held = state.token
        if held is None:
            held = state.token = new_token()
            if not sent:
                return True, held
        elif sent == held:
            return True, None
        elif not sent:
            return True, held  # the page has not learned its token yet (its first answer is on its way)
        elif sent == state.lost_token:
            return False, held
        state.lost_token = sent
        state.lost()
        return False, held


_HOLD_LOCK = threading.Lock()


def request_budget() -> RequestBudget:
    """A clock for the running request under the limits in force, cancelled when its client leaves."""
    return _LIMITS.budget(SESSIONS.cancel_event(_session_hash()))


def cancel_event() -> threading.Event | None:
    """The running request's cancel event (set when its client leaves), or None outside a request."""
    return SESSIONS.cancel_event(_session_hash())


# ---------------------------------------------------------------- wrapping handlers


def message_for(exc: BaseException) -> str:
    """A readable one-line message for an exception (never a traceback; paths removed on a public server)."""
    from . import backends

    if isinstance(exc, (backends.ModelLoadError, backends.GenerationError, ValueError)) and str(exc):
        text = str(exc)
    elif isinstance(exc, RecursionError):
        text = "The input is nested too deeply to handle."
    elif isinstance(exc, MemoryError):
        text = "Out of memory while handling this request; try a smaller input."
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = clean_text(text)
    if len(text) > 2000:
        text = text[:2000] + "…"
    return scrub_paths(text) if _LIMITS.public else text


def json_type(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words (for a caller who sent the wrong one)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "an object", list: "a list"}.get(type(value), f"a {type(value).__name__}")


def _guarded(fn: Callable, n_outputs: int, message_index: int | None, show: Callable[[str], Any],
             sizes: tuple[tuple, ...] = (), held: tuple[int, int, int | None] | None = None) -> Callable:
    """``fn`` guarded (see `protect`). ``held``: (where the session state is among ``fn``'s positional arguments,
    where the page token is, which output the session goes to or None): the token is taken out of the arguments
    and checked (`hold`), and its answer is the last output (``n_outputs`` counts it)."""
    n_own = n_outputs - 1 if held is not None else n_outputs

    def take_token(args):
        """(args without the token, whether to run, the token output)."""
        if held is None:
            return args, True, None
        state_at, token_at, _ = held
        sent = args[token_at] if token_at < len(args) else None
        args = args[:token_at] + args[token_at + 1:]
        state = args[state_at] if state_at < len(args) else None
        if not hasattr(state, "lost"):
            return args, True, None
        run, token = hold(state, sent)
        return args, run, token

    def with_token(out, token):
        """The handler's output(s) and the token's: a tuple of ``n_outputs``, or the single value."""
        if held is None:
            return out
        import gradio as gr

        tok = token if token is not None else gr.skip()
        if n_own == 0:
            return tok
        if n_own == 1:
            return (out, tok)
        return (*out, tok)

    def not_run(args, token):
        """What a handler that did not run sends: the token, the session state (to keep it), nothing else."""
        import gradio as gr

        out = [gr.skip()] * n_own
        if held[2] is not None:
            out[held[2]] = args[held[0]]
        return with_token(out[0] if n_own == 1 else tuple(out), token)

    def check_sizes(args):
        for i, what, limit_name, *hint in sizes:
            if i >= len(args) or args[i] is None:
                continue
            if not isinstance(args[i], str):  # an API call can send any JSON value (gr.Code passes it on as is)
                raise ValueError(f"{what} must be text (a string), not {json_type(args[i])}.")
            if limit_name is not None:  # None: the handler checks this size itself
                _LIMITS.check_size(what, args[i], limit_name, *hint)

    def failure(exc: BaseException, token: str | None = None):
        import gradio as gr

        msg = message_for(exc)
        if message_index is None:
            raise gr.Error(msg)
        out = [gr.skip()] * n_own
        out[message_index] = show(msg)
        return with_token(out[0] if n_own == 1 else tuple(out), token)

    def register(args, kwargs):
        h = _session_hash()
        for value in (*args, *kwargs.values()):
            if hasattr(value, "drop_run") and hasattr(value, "nbytes"):
                SESSIONS.touch(h, value)

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args, **kwargs):
            args, run, token = take_token(args)
            if not run:
                yield not_run(args, token)
                return
            args, kwargs = clean(args), clean(kwargs)
            try:
                check_sizes(args)
                for out in fn(*args, **kwargs):
                    yield with_token(clean(out), token)
                    token = None
            except RequestCancelled:
                return
            except Exception as exc:  # noqa: BLE001 - a message, never a traceback or a bare "Error"
                yield failure(exc, token)
            finally:
                register(args, kwargs)

        return generator

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        args, run, token = take_token(args)
        if not run:
            return not_run(args, token)
        args, kwargs = clean(args), clean(kwargs)
        try:
            check_sizes(args)
            return with_token(clean(fn(*args, **kwargs)), token)
        except RequestCancelled:
            import gradio as gr

            return gr.skip() if n_outputs <= 1 else (gr.skip(),) * n_outputs
        except Exception as exc:  # noqa: BLE001
            return failure(exc, token)
        finally:
            register(args, kwargs)

    return plain


class _Input(int):
    """An input's index, as a placeholder argument."""


def _argument_positions(fn: Callable, n_inputs: int) -> list[int]:
    """Where each of ``n_inputs`` input values lands among ``fn``'s positional arguments: Gradio inserts the
    special ones (a ``gr.Request`` parameter, a ``gr.Progress`` default) at their parameter's place."""
    from gradio.helpers import special_args

    placed = special_args(fn, [_Input(i) for i in range(n_inputs)], None)[0]
    positions = [j for j, value in enumerate(placed) if isinstance(value, _Input)]
    return positions if len(positions) == n_inputs else list(range(n_inputs))


def protect(demo: Any, messages: dict[Any, Callable[[str], Any]],
            sizes: dict[Any, tuple[str, str]] | None = None, held: tuple[Any, Any] | None = None) -> None:
    """Wrap every event handler of ``demo`` (a built ``gr.Blocks``) with the guard.

    ``messages``: output components that can show a message, each with the function that formats one (for
    the status line: an error-styled HTML line). A handler's failure goes to the first of its outputs found
    there, the other outputs left unchanged; a handler with none of them raises ``gr.Error(message)`` (a
    notice on the page).
    ``sizes``: input components whose text has a size limit, each with (what it is, for the message; the
    `Limits` field[; how to do it without the limit, `Limits.check_size`'s ``hint``]): every handler that takes one refuses a longer text before it runs (a crafted request can
    send any text to any handler, not only to the one that usually checks it). A handler whose function has
    ``checks_own_sizes`` (a tuple of `Limits` fields) checks those itself, to say where the user looks why a
    text was refused (the editor's box); the guard still refuses a value that is not text.
    ``held``: (the session ``gr.State``, the page token component, `playground.api_calls.PageToken`): every event
    that takes the session in takes the token in and sends it out too (added here, last, so no event is left
    out), and `hold` checks it before the handler runs.
    """
    ids = {getattr(c, "_id", None): show for c, show in messages.items()}
    limited = {getattr(c, "_id", None): rule for c, rule in (sizes or {}).items()}
    state_id, token = (held[0]._id, held[1]) if held is not None else (None, None)
    rewired = False
    for block_fn in demo.fns.values():
        fn = getattr(block_fn, "fn", None)
        if fn is None or getattr(fn, "_guarded", False):
            continue
        ins = list(getattr(block_fn, "inputs", []) or [])
        checked = (token is not None and not getattr(block_fn, "inputs_as_dict", False)
                   and any(getattr(c, "_id", None) == state_id for c in ins))
        if checked and token not in ins:
            block_fn.inputs = [*ins, token]
            block_fn.outputs = [*(getattr(block_fn, "outputs", []) or []), token]
            rewired = True
        outputs = list(getattr(block_fn, "outputs", []) or [])
        index = next((i for i, c in enumerate(outputs) if getattr(c, "_id", None) in ids), None)
        show = ids[outputs[index]._id] if index is not None else str
        inputs = list(getattr(block_fn, "inputs", []) or [])
        where = _argument_positions(fn, len(inputs))
        own = getattr(fn, "checks_own_sizes", ())
        checks = tuple((where[i], what, None if limit_name in own else limit_name, *hint)
                       for i, c in enumerate(inputs) if getattr(c, "_id", None) in limited
                       for what, limit_name, *hint in (limited[c._id],))
        hold_at = None
        if checked:
            state_at = next(i for i, c in enumerate(inputs) if getattr(c, "_id", None) == state_id)
            token_at = where[len(inputs) - 1]
            # the state's place once the token is taken out (it comes last, after every input)
            state_out = next((i for i, c in enumerate(outputs) if getattr(c, "_id", None) == state_id), None)
            hold_at = (where[state_at] - (where[state_at] > token_at), token_at, state_out)
        wrapped = _guarded(fn, len(outputs), index, show, checks, hold_at)
        wrapped._guarded = True
        block_fn.fn = wrapped
    if rewired and getattr(demo, "config", None) is not None:
        demo.config = demo.get_config_file()  # the page's config lists each event's inputs and outputs
