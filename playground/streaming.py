"""The streaming pipeline: chunks -> parser -> coalesced, throttled drawing.

`stream_views` feeds chunks to a `playground.session.LiveParse` and yields a `ParseView` at most every
`UPDATE_INTERVAL` seconds (stretching the interval when drawing gets expensive), then the final view; `draw`
turns a view into what the page shows (timeline, legend, event log, message and parsed-turn previews, check
badge); `Throttle` spaces the heavy previews (`PREVIEW_INTERVAL`), `Pacer` paces replays to about
`REPLAY_SECONDS`. Gradio's generator handlers send one message per yield with no throttle of their own
(measured: yielding every token with a growing page took 26 s for 1,500 updates; at most every 50 ms, 2.8 s),
so everything the chat, paste and replay handlers stream goes through here. `scripts/gpu_smoke.py` runs the
same pipeline against bare ``generate``. No Gradio here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from . import render
from .jsonsize import json_size
from .session import LiveParse, ParseView

UPDATE_INTERVAL = 1 / 15  # seconds between streamed updates (coalescing)
PREVIEW_INTERVAL = 0.5  # seconds between live updates of the message JSON, chat and event-log previews
STREAM_WINDOW = 1200  # characters of timeline drawn while streaming (the final state draws more)
STREAM_EVENT_ROWS = 100  # event-log rows sent with live previews
PREVIEW_CHARS = 1500  # characters per string in live previews
PREVIEW_ITEMS = 8  # list items (tool calls) in live previews: each is a card the browser renders again per preview
FINAL_TURN_CHARS = 20000  # characters per string in the final rendered chat turn (the JSON has all)
REPLAY_SECONDS = 3.0  # a replay takes about this long (longer only when parsing and drawing need it)


class Throttle:
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


class Pacer:
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

    @classmethod
    def for_replay(cls, n_chunks: int, seconds: float = REPLAY_SECONDS) -> "Pacer":
        """A pacer that spreads ``n_chunks`` over about ``seconds`` (23 chunks: one every 0.13 s)."""
        return cls(seconds / max(1, n_chunks))


def stream_views(live: LiveParse, chunks: Iterable[str], record: list, times: list, pace=None,
                 stop=None) -> Iterator[ParseView]:
    """Feed ``chunks`` into ``live``; yield a view at most every `UPDATE_INTERVAL` seconds, then the final view.

    Each non-empty chunk is appended to ``record`` and its arrival time (seconds since the start) to ``times``.
    ``pace()`` is called before each chunk (replays: a `Pacer`); ``stop`` (a ``threading.Event``) ends the stream
    early when set. The interval stretches to twice the time the consumer took for the previous update, so that
    drawing a very long stream never takes more than about a third of the time.
    """
    last = 0.0
    interval = UPDATE_INTERVAL
    t0 = time.perf_counter()
    for chunk in chunks:
        if stop is not None and stop.is_set():
            break
        if not chunk:
            continue
        if pace:
            pace()
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


def preview_message(view: ParseView) -> dict:
    """The live message preview: kept up to date by the parse when it has one, else rebuilt from the events."""
    preview = getattr(view, "preview", None)
    return preview.value() if preview is not None else render.partial_message(view.events)


@dataclass
class Drawn:
    """What the page shows for one view; None: not drawn this time (a live update without previews).

    ``timeline``, ``legend``, ``events``, ``check``: HTML. ``message``: the message dict (a clipped preview while
    streaming), or a str: the note shown instead of a message over the view's ``message_limit``
    (`render.message_too_large`). ``turn``: chat-bubble dicts of the parsed message (or of that note). ``final``: whether the view was final (the page
    then replaces the message and turn whole instead of patching them).
    """

    timeline: str
    legend: str
    events: str | None
    message: Any
    turn: list | None
    check: str
    final: bool


def draw(view: ParseView, check: dict | None = None, *, start: int | None = None,
         window: int = render.TIMELINE_MAX_CHARS, preview: bool = True) -> Drawn:
    """Draw ``view``: the timeline window from ``start`` (None: the end) of ``window`` characters, the legend,
    and, for a final view or when ``preview`` is true, the event log and the message and parsed-turn previews.

    While streaming, the previews are clipped (huge strings re-rendered as Markdown 15 times a second would
    freeze the page) and the event log shows its last `STREAM_EVENT_ROWS` rows. A message (or preview) whose JSON
    passes the view's ``message_limit`` is never serialized: a note says how large it is instead.
    """
    if view.final:
        if view.message_size is not None:
            msg = render.message_too_large(view.message_size, view.message_limit)
        else:
            msg = view.message if view.message is not None else _within(preview_message(view), view.message_limit)
        shown = msg if msg is not None else {}
        turn = (_note_turn(msg) if isinstance(msg, str) else
                render.assistant_turn(render.clip_strings(msg, FINAL_TURN_CHARS, tail=False)))
        events = render.events_html(view.events)
    elif preview:
        shown, turn = live_preview(view)
        events = render.events_html(view.events, limit=STREAM_EVENT_ROWS)
    else:
        shown = turn = events = None
    return Drawn(timeline=render.timeline_html(view, max_chars=window, start=start, titles=False),
                 legend=render.legend_html(view.field_names), events=events, message=shown, turn=turn,
                 check=render.check_html(check, view), final=view.final)


def live_preview(view: ParseView) -> tuple[dict | str, list[dict]]:
    """The live message preview of ``view`` (clipped: `PREVIEW_CHARS`, `PREVIEW_ITEMS`) and its chat bubbles; over
    the view's ``message_limit``, the note that replaces it (str) and a bubble saying it."""
    shown = _within(preview_message(view), view.message_limit)
    if isinstance(shown, str):
        return shown, _note_turn(shown)
    shown = render.clip_strings(shown, PREVIEW_CHARS, items=PREVIEW_ITEMS)
    return shown, render.assistant_turn(shown, streaming=True)


def _within(message: dict | None, limit: int | None) -> dict | str | None:
    """``message``, or the note that replaces it when its JSON is longer than ``limit`` (measured up to it)."""
    if limit is None or message is None:
        return message
    size = json_size(message, limit)
    return message if size <= limit else render.message_too_large(size, limit)


def _note_turn(note: str) -> list[dict]:
    return [{"role": "assistant", "content": render.md_text(note)}]
