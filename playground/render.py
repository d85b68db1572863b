"""Pure rendering functions: parse views -> HTML strings and chat messages.

No Gradio here.  Every piece of user or model text goes through `escape`; the timeline is one string whose DOM
size is bounded by merging runs of characters with identical styling and by windowing long streams to
``max_chars`` characters (with a note saying so).  Colours are never written into the HTML: elements carry
classes (a field's colour class from `field_class`, ``b``/``d``/``dirty``/...), and `playground.theme.CSS` maps
them to colours from Gradio's theme variables, so every view follows the light or dark scheme.
"""

from __future__ import annotations

import bisect
import colorsys
import hashlib
import html
import json
import re
from typing import Any

from parsing import locate_json_path
from parsing.doctor.schema import duplicate_keys, wrong_types

from .icons import icon
from .jsonsize import json_head, json_size
from .limits import SERVER_HINT
from .session import ParseView, PartialMessage, field_name_hints

# Well-known fields get fixed colours; others a stable hash-derived one from the palette.
_FIXED = {
    "reasoning_content": "#8b5cf6",
    "content": "#16a34a",
    "tool_calls": "#ea580c",
    "role": "#0891b2",
}
_PALETTE = ["#2563eb", "#db2777", "#ca8a04", "#0d9488", "#9333ea", "#dc2626", "#4f46e5", "#65a30d"]
_NO_FIELD = "#9ca3af"

TIMELINE_MAX_CHARS = 6000
EVENT_ROWS = 300


def field_color(name: str | None) -> str:
    """Stable base colour (``#rrggbb``) for a field name; grey for None."""
    if name is None:
        return _NO_FIELD
    if name in _FIXED:
        return _FIXED[name]
    h = int(hashlib.md5(name.encode("utf-8")).hexdigest(), 16)
    return _PALETTE[h % len(_PALETTE)]


def field_class(name: str | None) -> str:
    """The CSS class that colours a field's elements (``fk-content``, ``fk-p3``, ``fk-none``): one per colour of
    `field_color`, so a field keeps its colour in every view."""
    if name is None:
        return "fk-none"
    if name in _FIXED:
        return f"fk-{name.replace('_', '-')}"
    return f"fk-p{_PALETTE.index(field_color(name))}"


def _luminance(hex_color: str) -> float:
    def f(v: float) -> float:
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    x, y = _luminance(a), _luminance(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)


def _shade(hex_color: str, against: str, target: float, darker: bool) -> str:
    """``hex_color`` with its lightness moved (same hue and saturation) until its contrast with ``against``
    reaches ``target``."""
    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, light, sat = colorsys.rgb_to_hls(r, g, b)
    out = hex_color
    for _ in range(100):
        out = "#" + "".join(f"{round(v * 255):02x}" for v in colorsys.hls_to_rgb(h, light, sat))
        if contrast(out, against) >= target:
            break
        light = max(0.0, light - 0.01) if darker else min(1.0, light + 0.01)
    return out


INK_LIGHT = "#ffffff"  # text on a field's strong shade (light scheme)
INK_DARK = "#111827"  # text on a field's light shade (dark scheme)


def field_palette() -> dict[str, tuple[str, str, str]]:
    """Every field colour class -> ``(base, strong, light)``: ``strong`` carries white text (light scheme) and
    ``light`` dark text (dark scheme) at WCAG AA contrast with room to spare (5:1; 7:1 in the dark)."""
    bases = {field_class(name): c for name, c in _FIXED.items()}
    bases.update({f"fk-p{i}": c for i, c in enumerate(_PALETTE)})
    bases["fk-none"] = _NO_FIELD
    return {cls: (c, _shade(c, INK_LIGHT, 5.2, True), _shade(c, INK_DARK, 7.5, False)) for cls, c in bases.items()}


# Bidi controls (embeddings/overrides U+202A-U+202E, isolates U+2066-U+2069, marks U+200E/U+200F and
# U+061C) would reorder the following text on screen, e.g. show "<tool_call>" as "<llac_loot>".
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_BIDI_TABLE = {ord(c): f"⟨U+{ord(c):04X}⟩" for c in BIDI_CONTROLS}


def show_bidi(s: str) -> str:
    """``s`` with every bidi control character replaced by a visible marker such as ``⟨U+202E⟩``.

    Display only: apply it after slicing by offsets, so spans stay consistent with the text."""
    return s.translate(_BIDI_TABLE)


def escape(s: Any) -> str:
    """The playground's one escaping rule for text put into HTML: ``str(s)`` with bidi controls made visible
    (`show_bidi`) and ``& < > " '`` escaped, so neither markup nor direction overrides reach the page."""
    return html.escape(show_bidi(str(s)), quote=True)


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def escape_text(s: Any) -> str:
    """`escape` for a message written with Markdown code spans (``use `python -m parsing lint` ``): escaped, then
    each backtick span shown as ``<code>``, so notes never show raw backticks."""
    return _CODE_SPAN.sub(r"<code>\1</code>", escape(s))


def digest(*parts: str | bytes) -> str:
    """A short fingerprint (16 hex digits) of ``parts`` taken together, for telling on the page whether a report
    was made from the text it shows next to (`stamped`)."""
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def run_digest(run: Any) -> str:
    """`digest` of what a run's checks read: its prompt prefix, its text, where its chunks end, its tools; "" for
    no run."""
    if run is None:
        return ""
    chunks = run.chunks
    return digest(run.prefix, chunks.text, chunks.ends.tobytes(), json.dumps(run.tools, sort_keys=True))


def stamped(html_text: str, template_text: str, *, run: str | None = None, download: str | None = None) -> str:
    """A report's HTML marked with what it was made from, so the page's script (`theme.JS`, ``markStale``) can
    flag it once the editor's template (``#editor-set``'s ``data-template``) or the parsed run (``#run-mark``'s
    ``data-run``) is no longer that. ``template_text``: the template it was made from (its `digest` is kept);
    ``run``: the `run_digest` of the run it was made from, for a report about a run. ``download``: the selector
    of the files this report is about (an export's download), hidden while they are of another template."""
    run_attr = f' data-for-run="{escape(run)}"' if run is not None else ""
    files = f' data-download="{escape(download)}"' if download else ""
    return (f'<div class="report" data-for-template="{digest(template_text or "")}"{run_attr}{files}>'
            f'{html_text}</div>')


_WHITESPACE_MARKS = {"\n": "↵", "\t": "⇥", "\r": "⇤", " ": "␣"}  # glyphs common fonts (DejaVu too) have


def visible_whitespace(s: str) -> str:
    """``s`` for a one-line cell: newlines, tabs and carriage returns as ``↵ ⇥ ⇤`` (never a line break), and
    spaces as ``␣`` when ``s`` is nothing but whitespace (a blank cell would hide it)."""
    if s.strip() == "" and s:
        return "".join(_WHITESPACE_MARKS.get(c, c) for c in s)
    return s.replace("\r", "⇤").replace("\n", "↵").replace("\t", "⇥")


def _clip(s: str, n: int = 200) -> str:
    return s if len(s) <= n else s[:n] + f"… (+{len(s) - n} chars)"


def _index_by_start(items: list[dict]) -> tuple[list[int], list[dict]]:
    items = sorted((i for i in items if "start" in i and "end" in i), key=lambda i: (i["start"], i["end"]))
    return [i["start"] for i in items], items


def _covering(starts: list[int], items: list[dict], x: int) -> dict | None:
    """The item (sorted, non-overlapping spans) covering offset ``x``, or None."""
    k = bisect.bisect_right(starts, x) - 1
    if k >= 0 and items[k]["start"] <= x < items[k]["end"]:
        return items[k]
    return None


def _in_window(rows, a: int, b: int, **equal) -> list[dict]:
    """Rows (dicts with ``start``/``end``) that touch ``[a, b]`` and match ``equal``; compact stores
    (`playground.compact.Records`) answer without rebuilding every row."""
    if hasattr(rows, "window"):
        return rows.window(a, b, **equal)
    return [r for r in rows if all(r.get(k) == v for k, v in equal.items())
            and r.get("end", a) >= a and r.get("start", b) <= b]


def timeline_window(n: int, max_chars: int, start: int | None) -> tuple[int, int]:
    """The [a, b) window of a text of length ``n`` to draw: the tail by default, else from ``start``."""
    if n <= max_chars:
        return 0, n
    if start is None:
        return n - max_chars, n
    a = max(0, min(int(start), n - max_chars))
    return a, a + max_chars


def timeline_html(view: ParseView, max_chars: int = TIMELINE_MAX_CHARS, start: int | None = None,
                  titles: bool = True) -> str:
    """The stream timeline as one HTML string.

    Every character of ``view.text[a:b]`` (the window, see :func:`timeline_window`)
    appears exactly once, escaped, inside a ``<span>`` whose classes say what it
    is: ``b`` body / ``d`` delimiter / ``x`` discarded / ``u`` not yet decided,
    ``p`` from the prompt prefix, ``dirty``, ``h`` held back, ``e`` failed region,
    ``cs`` first character of a chunk (``odd`` for odd chunks).  ``data-f`` names
    the field and ``title`` gives event details for hover (left out with
    ``titles=False``, which live updates use to keep each update small).
    """
    text = view.text
    n = len(text)
    a, b = timeline_window(n, max_chars, start)
    seg_starts, segs = _index_by_start(_in_window(view.segments, a, b))
    chunk_events = [e for e in _in_window(view.events, a, b, type="region_chunk") if "start" in e]
    delims_at: dict = {}
    for d in _in_window(view.delimiters, a, b):
        delims_at.setdefault(d.get("start"), d)
    ev_starts, evs = _index_by_start(chunk_events)
    chunk_starts = list(view.chunk_starts)
    held_a, held_b = view.held if view.held else (n, n)
    cuts = {a, b, view.prefix_length, held_a, held_b}
    for it in segs:
        cuts.update((it["start"], it["end"]))
    for it in evs:
        cuts.update((it["start"], it["end"]))
    for er in view.errors:
        cuts.update((er["start"], er["end"]))
    lo = bisect.bisect_left(chunk_starts, a)
    hi = bisect.bisect_right(chunk_starts, b)
    cuts.update(chunk_starts[lo:hi])
    points = sorted(c for c in cuts if a <= c <= b)
    out: list[str] = []
    prev_key = None
    buf: list[str] = []
    buf_start = a

    def flush():
        if buf and prev_key is not None:
            cls, fld, title = prev_key
            if fld is not None:
                cls = f"{cls} {field_class(fld)}"
            data = f' data-f="{escape(fld)}"' if fld is not None else ""
            tip = f' title="{escape(title)}"' if titles else ""
            piece = "".join(buf)
            out.append(f'<span class="{cls}"{data} data-s="{buf_start}" data-e="{buf_start + len(piece)}"{tip}>'
                       f'{escape(piece)}</span>')

    for x, y in zip(points, points[1:]):
        if y <= x:
            continue
        seg = _covering(seg_starts, segs, x)
        ev = _covering(ev_starts, evs, x)
        k = bisect.bisect_right(chunk_starts, x) - 1
        classes = []
        fld = None
        if seg is None:
            classes.append("u")
            title = "not yet assigned to a region"
        else:
            fld = seg.get("field")
            kind = seg.get("kind")
            classes.append({"body": "b", "delimiter": "d", "discarded": "x"}.get(kind, "u"))
            if kind == "delimiter":
                dl = delims_at.get(seg["start"])
                title = f"{(dl or {}).get('kind', '')} delimiter of {fld}"
                if dl and dl.get("captures"):
                    title += f" captures={json.dumps(dl['captures'], ensure_ascii=False)}"
            elif kind == "discarded":
                title = "discarded: no implicit field to receive this text"
            else:
                title = f"body of {fld}"
        if x < view.prefix_length:
            classes.append("p")
            title += " · from the prompt prefix"
        if ev is not None:
            title += f" · event #{ev.get('index')} region_chunk dirty={str(ev.get('dirty')).lower()}"
            if ev.get("dirty"):
                classes.append("dirty")
        if k >= 0:
            title += f" · chunk {k}"
            if k % 2:
                classes.append("odd")
            if chunk_starts[k] == x:
                classes.append("cs")
        if held_a <= x < held_b:
            classes.append("h")
            title += " · held back (may be a delimiter)"
        for er in view.errors:
            if er["start"] <= x < er["end"] or (er["start"] == er["end"] == x):
                classes.append("e")
                title += f" · ERROR {er['message']}"
                break
        key = (" ".join(classes), fld, title if titles else "")
        if key != prev_key or "cs" in classes:
            flush()
            buf = []
            buf_start = x
            prev_key = key
        buf.append(text[x:y])
    flush()
    parts = []
    for er in view.errors:
        parts.append(f'<div class="tl-err" data-s="{er["start"]}" data-e="{er["end"]}">{icon("warning")} '
                     f'{escape(_clip(er["message"], 600))} '
                     f'<span class="tl-note">(characters {er["start"]}–{er["end"]})</span></div>')
    if (a, b) != (0, n):
        parts.append(f'<div class="tl-note">Showing characters {a}–{b} of {n}; the rest is not drawn '
                     f'to keep the page responsive (use “Timeline from” to move the window).</div>')
    if view.dropped_prefix:
        count = len(view.dropped_prefix)  # the start anchor's match included
        what = "first character, the start anchor, is" if count == 1 else \
            f"first {count:,} characters, up to the end of the start anchor, are"
        parts.append(f'<div class="tl-note">The prompt’s {what} not parsed and not shown.</div>')
    elif view.anchor_missing:
        parts.append(f'<div class="tl-warn" id="anchor-missing" role="note">{icon("warning")} '
                     f'{escape(ANCHOR_MISSING_NOTE[0].upper() + ANCHOR_MISSING_NOTE[1:])}</div>')
    status = "final" if view.final else "streaming"
    parts.append(f'<div class="tl tlv" data-status="{status}" data-len="{n}" data-from="{a}">{"".join(out)}</div>')
    return "".join(parts)


#: Why a prompt was parsed whole, for the status line and above the timeline (one wording for both).
ANCHOR_MISSING = "the template's start anchor does not occur in the prompt"
ANCHOR_MISSING_NOTE = (f"{ANCHOR_MISSING}, so the whole prompt was parsed as output (as transformers does): its "
                       f"delimiters count as the model's. Pick a template for this model's format, or fix start_anchor.")


def legend_html(field_names: list[str]) -> str:
    """Legend: one swatch per field (its colour class; ``data-f`` for hover highlighting) plus the timeline's
    markers drawn with the timeline's own classes."""
    sw = [f'<span class="sw fsw {field_class(f)}" data-f="{escape(f)}" tabindex="0">{escape(f)}</span>'
          for f in field_names]
    marks = ('<span class="sw b p">prefix</span><span class="sw b dirty">dirty</span>'
             '<span class="sw h">held back</span><span class="sw x">discarded</span>'
             '<span class="sw b e">error</span><span class="sw cs">chunk start</span>')
    return f'<div class="legend tlv">{"".join(sw)} <span class="marks">{marks}</span></div>'


def _rows_around(events, around: int, limit: int) -> int:
    """Index of the first of ``limit`` rows centred on the first event whose span reaches character ``around``."""
    n = len(events)
    hit = n - 1
    for i in range(n):
        ev = events[i]
        if "start" in ev and ev.get("end", ev["start"]) > around or ev.get("start", -1) >= around:
            hit = i
            break
    return max(0, min(hit - limit // 3, n - limit))


def events_html(events: list[dict], limit: int = EVENT_ROWS, around: int | None = None) -> str:
    """Event log table (index, phase, type, field, text or value, dirty): the last ``limit`` rows, or, with
    ``around`` (a character offset: the inspected one), ``limit`` rows around the first event that reaches it.

    Rows carry ``data-f``, ``data-s`` and ``data-e`` (the event's span) so the page can point the timeline at
    them; chunk text shows whitespace as visible marks (`visible_whitespace`)."""
    rows = []
    first = 0 if len(events) <= limit else (len(events) - limit if around is None else
                                           _rows_around(events, around, limit))
    shown = [events[i] for i in range(first, min(len(events), first + limit))] if len(events) > limit else events
    for ev in shown:
        t = ev.get("type", "")
        if t == "region_chunk":
            body = _clip(visible_whitespace(ev.get("text", "")), 300)
        elif t == "region_close" and "value_size" in ev:  # the log kept only its head (`LiveParse._keep_value`)
            body = ev.get("value_head", "")[:300] + f"… (at least {ev['value_size']:,} characters, not kept)"
        elif t == "region_close":  # only what the row shows: a value may be gigabytes as JSON (`json_head`)
            body, whole = json_head(ev.get("value"), 300)
            body = body if whole else body + "…"
        elif t == "region_error":
            body = _clip(visible_whitespace(f"{ev.get('message')} (raw: {ev.get('raw', '')!r})"), 300)
        else:
            body = ""
        dirty = "" if "dirty" not in ev else ("dirty" if ev["dirty"] else "clean")
        f = ev.get("field")
        span = f' data-s="{ev["start"]}" data-e="{ev.get("end", ev["start"])}"' if "start" in ev else ""
        rows.append(f'<tr class="ev-{escape(t)}" data-f="{escape(f or "")}"{span}><td>{ev.get("index", "")}</td>'
                    f'<td>{escape(ev.get("phase", ""))}</td><td>{escape(t)}</td>'
                    f'<td class="fcol {field_class(f)}">{escape(f or "")}</td>'
                    f'<td class="t">{escape(body)}</td><td>{dirty}</td></tr>')
    note = ""
    if len(events) > limit and first + limit >= len(events):
        note = f'<div class="tl-note">Showing the last {limit} of {len(events)} events.</div>'
    elif len(events) > limit:
        note = (f'<div class="tl-note">Showing events {first}–{first + limit - 1} of {len(events)} (around the '
                f'inspected character).</div>')
    return (f'<div class="evlog">{note}<table><thead><tr><th>#</th><th>phase</th><th>type</th><th>field</th>'
            f'<th>text / value</th><th>dirty</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def partial_message(events: list[dict]) -> dict:
    """A live approximation of the message from events so far: closed values, else raw chunk text
    (see `playground.session.PartialMessage`, which a `LiveParse` keeps up to date as events arrive)."""
    preview = PartialMessage()
    for ev in events:
        preview.add(ev)
    return preview.value()


def clip_strings(value: Any, limit: int = 1500, tail: bool = True, items: int | None = None) -> Any:
    """Copy of ``value`` with every string longer than ``limit`` cut to ``limit`` characters
    (its end when ``tail``, else its start) plus a note of how much was cut; lists longer than ``items``
    (default ``limit // 30``) items are cut the same way.  Used for live previews of huge messages."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        cut = len(value) - limit
        return f"[… {cut} characters not shown …]" + value[-limit:] if tail else value[:limit] + f"[… {cut} more …]"
    if isinstance(value, dict):
        return {k: clip_strings(v, limit, tail, items) for k, v in value.items()}
    if isinstance(value, list):
        n = max(1, limit // 30 if items is None else items)
        kept = value[-n:] if tail else value[:n]
        out = [clip_strings(v, limit, tail, items) for v in kept]
        if len(value) > n:
            note = f"[… {len(value) - n} more items not shown …]"
            out = [note] + out if tail else out + [note]
        return out
    return value


def message_too_large(size: int, limit: int) -> str:
    """What the page says instead of a parsed message whose JSON is at least ``size`` characters, over the
    server's cap ``limit`` (`playground.limits.Limits.max_message_chars`)."""
    return (f"The parsed message is not shown: as JSON it is at least {size:,} characters, over this server's "
            f"limit of {limit:,}. The template repeats values: each \"{{placeholder}}\" of a "
            f"transform copies the whole value it names (and a join adds its text between matches), so a short text "
            f"can make a huge message. The timeline and the event log still show the parse; to see the message, "
            f"{SERVER_HINT}.")


def message_note_html(note: str | None) -> str:
    """The note beside the Message view: ``note`` (`message_too_large`) with a warning icon, or nothing."""
    if not note:
        return ""
    return f'<div class="tl-warn" id="message-note-text">{icon("warning")} {escape(note)}</div>'


def md_text(s: Any) -> str:
    """Model or user text for a Markdown chat bubble, shown literally: HTML is escaped (so ``<b>``,
    ``<img>``, ``<style>`` appear as written) and bidi controls are made visible."""
    return html.escape(show_bidi(str(s)), quote=False)


def md_code(body: str, lang: str = "") -> str:
    """``body`` in a fenced code block whose fence is longer than any backtick run inside it."""
    longest = cur = 0
    for ch in body:
        cur = cur + 1 if ch == "`" else 0
        longest = max(longest, cur)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{show_bidi(body)}\n{fence}"


#: characters of JSON one chat bubble shows (a transform can make a value megabytes; the Message view has it all)
BUBBLE_JSON_CHARS = 20000


def json_block(value: Any) -> str:
    """``value`` as a fenced JSON block for a chat bubble: indented when its JSON fits `BUBBLE_JSON_CHARS`, else
    its first `BUBBLE_JSON_CHARS` characters (measured and cut with that much work) and a note that it is cut."""
    if json_size(value, BUBBLE_JSON_CHARS) <= BUBBLE_JSON_CHARS:
        body = json.dumps(value, ensure_ascii=False, indent=2, default=str)
        if len(body) <= 2 * BUBBLE_JSON_CHARS:  # deep nesting can make the indented text several times longer
            return md_code(body, "json")
        return md_code(json.dumps(value, ensure_ascii=False, default=str), "json")
    head = json_head(value, BUBBLE_JSON_CHARS)[0]
    return md_code(head, "json") + f"\n\n*(cut: only the first {BUBBLE_JSON_CHARS:,} characters of this JSON are " \
                                   "shown)*"


def assistant_turn(message: dict | None, streaming: bool = False) -> list[dict]:
    """A parsed message as chat-bubble dicts for a messages-format chatbot.

    Reasoning becomes a collapsible bubble (``metadata.title``), each tool call
    a card-like bubble with its JSON arguments, other unknown fields a bubble
    with their JSON, and ``content`` a plain bubble.  Model text is shown
    literally: HTML-escaped in bubbles and titles, JSON in fenced code blocks.
    """
    if not message:
        return [{"role": "assistant", "content": "…" if streaming else "(empty message)"}]
    out = []
    reasoning = message.get("reasoning_content")
    if reasoning:
        out.append({"role": "assistant", "content": md_text(reasoning),
                    "metadata": {"title": "Reasoning", "status": "pending" if streaming and not message.get("content") else "done"}})
    calls = message.get("tool_calls")
    if calls and isinstance(calls, (list, dict, str)):
        for call in calls if isinstance(calls, list) else [calls]:
            fn = call.get("function", call) if isinstance(call, dict) else {}
            name = fn.get("name", "?") if isinstance(fn, dict) else "?"
            args = fn.get("arguments") if isinstance(fn, dict) else call
            out.append({"role": "assistant", "content": json_block(args if args is not None else call),
                        "metadata": {"title": f"Tool call: {md_text(name)}"}})
    for k, v in message.items():
        if k in ("role", "content", "reasoning_content", "tool_calls", "_streaming"):
            continue
        out.append({"role": "assistant", "content": json_block(v), "metadata": {"title": f"field: {md_text(k)}"}})
    content = message.get("content")
    if content:
        out.append({"role": "assistant",
                    "content": md_text(content) if isinstance(content, str) else json_block(content)})
    if not out:
        out.append({"role": "assistant", "content": "…" if streaming else "(empty message)"})
    return out


def check_html(check: dict | None, view: ParseView | None = None) -> str:
    """The side-by-side check as a badge: agreement (a success), both parsers failing (neutral, with both
    errors: agreeing on an error is no success), the check skipped (why), or the differences."""
    if not check:
        return ""
    if check.get("skipped"):
        return f'<span class="badge badge-skip" id="check-skipped">{icon("skip")} {escape(check["skipped"])}</span>'
    ours = check.get("ours_error") or "; ".join(e["message"] for e in (view.errors if view is not None else []))
    if check.get("agree") and check.get("ref_error"):
        return (f'<div class="badge badge-neutral" id="both-error">{icon("neutral")} Both parsers report an error '
                f'on this run (not a success):<div class="both"><b>ours</b>: {escape(_clip(ours or "an error", 600))}'
                f'</div><div class="both"><b>transformers</b>: {escape(_clip(check["ref_error"], 600))}</div></div>')
    if check.get("agree"):
        return f'<span class="badge badge-ok" id="agree-badge">{icon("ok")} agrees with the transformers parser</span>'
    diffs = "\n".join(check.get("differences", []))
    return (f'<div class="badge badge-bad" id="disagree">{icon("error")} differs from the transformers parser'
            f'<pre>{escape(diffs)}</pre></div>')


def status_html(text: str, kind: str = "info") -> str:
    """The status line: ``text`` with an icon for ``kind`` ("info", "ok" or "error")."""
    if not text:
        return '<div class="status status-info"></div>'
    name = {"ok": "ok", "error": "error"}.get(kind, "info")
    return f'<div class="status status-{escape(kind)}">{icon(name)} <span>{escape(text)}</span></div>'


def confirm_html(label: str, current: str) -> str:
    """The question of the confirmation bar: replace the editor's edits of ``current`` with ``label``?"""
    return (f'<div class="confirm-q">{icon("warning")} The editor holds edits of {escape(current)}. Replace them '
            f'with {escape(label)}? Your edits are lost unless you keep them.</div>')


def history_to_chat(history: list[dict], turn_chars: int = 20000) -> list[dict]:
    """Chat history (apply_chat_template format) -> chatbot bubbles (parsed assistant turns rendered, strings
    cut to ``turn_chars`` characters; the message JSON keeps everything)."""
    out: list[dict] = []
    for m in history:
        role = m.get("role")
        if role == "user":
            out.append({"role": "user", "content": md_text(m.get("content", ""))})
        elif role == "assistant":
            shown = {k: v for k, v in m.items() if k != "_raw"}
            out += assistant_turn(clip_strings(shown, turn_chars, tail=False))
        elif role == "tool":
            out.append({"role": "user", "content": md_code(str(m.get("content", ""))),
                        "metadata": {"title": "Tool result"}})
    return out


def template_status_html(problem=None, text: str = "", ok_note: str = "", *, origin: str | None = None,
                         edited: bool = False, hints: list[str] | None = None) -> str:
    """The editor's status: where the template came from (``origin``, and whether it is ``edited``), then valid
    (with every value of the wrong JSON type flagged, its line marked in the editor, and ``hints``), or the
    fault with JSON path, line and the offending line shown (and marked in the editor)."""
    src = ""
    if origin:
        src = (f'<div class="tpl-source">Template: {escape(origin)}'
               f'{" · <b>edited</b>" if edited else ""}</div>')
    if problem is None:
        warns = []
        for w in wrong_types(text) if text else []:
            # the page's script gives the line (data-line) a background in the editor
            line, _ = _locate(text, w.path)
            warns.append(f'<div class="tpl-warn" data-path="{escape(w.path)}" data-line="{line or ""}">'
                         f'{icon("warning")} {escape(w.message)}</div>')
        for path, key in duplicate_keys(text) if text else []:
            warns.append(f'<div class="tpl-warn tpl-dup" data-path="{escape(path)}">{icon("info")} '
                         f'{escape(path)}: the key "{escape(key)}" is written more than once in one object; only '
                         f'the last one counts (JSON keeps the last value, as transformers does).</div>')
        if hints is None:
            hints = field_name_hints(text) if text else []
        extra = "".join(f" · {h}" for h in hints)
        return (f'{src}<div class="tpl-ok" id="tpl-ok">{icon("ok")} template valid{escape(ok_note)}'
                f'{escape(extra)}</div>{"".join(warns)}')
    where = []
    if getattr(problem, "path", ""):
        where.append(f"at <code>{escape(problem.path)}</code>")
    line = getattr(problem, "line", None)
    if line:
        where.append(f"line {line}" + (f", column {problem.column}" if getattr(problem, "column", None) else ""))
    fault = getattr(problem, "pattern_pos", None)
    if fault is not None and f"at position {fault}" not in getattr(problem, "message", ""):
        # the message quotes `regex`, which names where it gave up (the pattern's end for an unclosed `[` or `(`)
        where.append(f"(the fault starts at position {fault} of the pattern)")
    # where that character is in the JSON text (escapes such as \\ or \u00e9 in the string take more columns)
    at_line, at_column = (_locate(text, getattr(problem, "path", ""), fault) if fault is not None and text
                          else (None, None))
    if at_line and where and where[-1].startswith("(the fault starts"):
        where[-1] = where[-1][:-1] + f": line {at_line}, column {at_column})"
    snippet = ""
    if line and text:
        # lines as the JSON error's line number counts them: at "\n" only (U+2028 and the like are text)
        lines = [row[:-1] if row.endswith("\r") else row for row in text.split("\n")]
        rows = []
        for i in range(max(1, line - 1), min(len(lines), line + 1) + 1):
            row = escape(lines[i - 1])
            if i == at_line and at_column <= len(lines[i - 1]):
                row_text, c = lines[i - 1], at_column - 1
                row = (f'{escape(row_text[:c])}<span class="tpl-fault">{escape(row_text[c])}</span>'
                       f'{escape(row_text[c + 1:])}')
            row = f"{i:4d} | {row}"
            rows.append(f"<mark>{row}</mark>" if i == line else row)
        snippet = "<pre>" + "\n".join(rows) + "</pre>"
    # the page's script marks the line (data-line) in the editor itself, and the fault's column in it
    at = f' data-fault-line="{at_line}" data-fault-column="{at_column}"' if at_line else ""
    return (f'{src}<div class="tpl-bad" id="tpl-error" data-line="{line or ""}"{at} '
            f'data-path="{escape(getattr(problem, "path", ""))}">{icon("error")} '
            f'{escape(getattr(problem, "message", str(problem)))} {" ".join(where)}{snippet}</div>')


def _locate(text: str, path: str, char: int | None = None) -> tuple[int | None, int | None]:
    try:
        return locate_json_path(text, path, char)
    except Exception:  # noqa: BLE001 - a best-effort pointer; the message names the path anyway
        return None, None
