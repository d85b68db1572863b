"""Pure rendering functions: parse views -> HTML strings and chat messages.

No Gradio here.  Every piece of user or model text goes through
``html.escape``; the timeline is one string whose DOM size is bounded by
merging runs of characters with identical styling and by windowing long
streams to ``max_chars`` characters (with a note saying so).
"""

from __future__ import annotations

import bisect
import hashlib
import html
import json
from typing import Any

from .session import ParseView, PartialMessage

# Well-known fields get fixed colours; others a stable hash-derived one.
_FIXED = {
    "reasoning_content": "#8b5cf6",
    "content": "#16a34a",
    "tool_calls": "#ea580c",
    "role": "#0891b2",
}
_PALETTE = ["#2563eb", "#db2777", "#ca8a04", "#0d9488", "#9333ea", "#dc2626", "#4f46e5", "#65a30d"]

TIMELINE_MAX_CHARS = 6000
EVENT_ROWS = 300

CSS = """
#timeline .tl{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;white-space:pre-wrap;
 word-break:break-all;line-height:1.9;max-height:460px;overflow:auto;padding:6px;border:1px solid #ddd;border-radius:6px;color:#111;background:#fff}
#timeline .tl span,.evlog td.t{unicode-bidi:isolate}
#timeline .tl span.b{background:color-mix(in srgb,var(--c) 20%,transparent);border-bottom:2px solid var(--c)}
#timeline .tl span.d{background:var(--c);color:#fff;border-radius:4px;padding:0 1px;font-weight:600}
#timeline .tl span.x{color:#888;text-decoration:line-through}
#timeline .tl span.p{font-style:italic;opacity:.7;outline:1px dashed #999}
#timeline .tl span.dirty{background-image:repeating-linear-gradient(135deg,transparent 0 5px,rgba(0,0,0,.13) 5px 7px)}
#timeline .tl span.cs{box-shadow:inset 1px 0 0 rgba(0,0,0,.55)}
#timeline .tl span.odd{border-bottom-style:dotted}
#timeline .tl span.h{outline:2px dotted #d97706;background:#fef3c7;color:#92400e}
#timeline .tl span.u{color:#6b7280}
#timeline .tl span.e{text-decoration:underline wavy #dc2626;background:#fee2e2}
.tl-note{font-size:12px;color:#555;margin:2px 0}
.tl-err{color:#991b1b;background:#fee2e2;border:1px solid #fca5a5;border-radius:6px;padding:4px 8px;margin:4px 0;font-size:13px}
.legend span.sw{display:inline-block;margin:2px 6px 2px 0;padding:0 6px;border-radius:4px;font-size:12px}
.evlog{max-height:380px;overflow:auto}
.evlog table{font-size:12px;border-collapse:collapse;width:100%}
.evlog td,.evlog th{border-bottom:1px solid #eee;padding:1px 4px;text-align:left;vertical-align:top;font-family:ui-monospace,monospace}
.evlog td.t{max-width:520px;white-space:pre-wrap;word-break:break-all}
.badge-ok{color:#065f46;background:#d1fae5;border-radius:6px;padding:4px 8px;display:inline-block}
.badge-skip{color:#92400e;background:#fef3c7;border-radius:6px;padding:4px 8px;display:inline-block}
.badge-bad{color:#991b1b;background:#fee2e2;border-radius:6px;padding:4px 8px}
.tpl-ok{color:#065f46}.tpl-bad{color:#991b1b;background:#fee2e2;border-radius:6px;padding:4px 8px}
.tpl-bad pre{margin:4px 0;background:#fff;padding:4px}
.tpl-bad mark{background:#fecaca}
"""


def field_color(name: str | None) -> str:
    """Stable CSS colour (``#rrggbb``) for a field name; grey for None."""
    if name is None:
        return "#9ca3af"
    if name in _FIXED:
        return _FIXED[name]
    h = int(hashlib.md5(name.encode("utf-8")).hexdigest(), 16)
    return _PALETTE[h % len(_PALETTE)]


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

    def flush():
        if buf and prev_key is not None:
            cls, fld, title = prev_key
            style = f' style="--c:{field_color(fld)}"' if fld is not None else ""
            data = f' data-f="{escape(fld)}"' if fld is not None else ""
            tip = f' title="{escape(title)}"' if titles else ""
            out.append(f'<span class="{cls}"{data}{style}{tip}>{escape("".join(buf))}</span>')

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
            prev_key = key
        buf.append(text[x:y])
    flush()
    parts = []
    for er in view.errors:
        parts.append(f'<div class="tl-err">⚠ {escape(_clip(er["message"], 600))} '
                     f'<span class="tl-note">(characters {er["start"]}–{er["end"]})</span></div>')
    if (a, b) != (0, n):
        parts.append(f'<div class="tl-note">Showing characters {a}–{b} of {n}; the rest is not drawn '
                     f'to keep the page responsive (use “Timeline from” to move the window).</div>')
    if view.dropped_prefix:
        parts.append(f'<div class="tl-note">{len(view.dropped_prefix)} prompt characters before the start '
                     f'anchor are not parsed and not shown.</div>')
    status = "final" if view.final else "streaming"
    parts.append(f'<div class="tl" data-status="{status}" data-len="{n}">{"".join(out)}</div>')
    return "".join(parts)


def legend_html(field_names: list[str]) -> str:
    """Legend: one swatch per field (stable colours) plus the timeline markers."""
    sw = [f'<span class="sw" style="background:{field_color(f)};color:#fff">{escape(f)}</span>' for f in field_names]
    marks = ('<span class="sw" style="outline:1px dashed #999;font-style:italic">prefix</span>'
             '<span class="sw" style="background-image:repeating-linear-gradient(135deg,transparent 0 5px,'
             'rgba(0,0,0,.13) 5px 7px)">dirty</span>'
             '<span class="sw" style="outline:2px dotted #d97706;background:#fef3c7">held back</span>'
             '<span class="sw" style="color:#888;text-decoration:line-through">discarded</span>'
             '<span class="sw" style="text-decoration:underline wavy #dc2626">error</span>'
             '<span class="sw" style="box-shadow:inset 1px 0 0 #000">| chunk start</span>')
    return f'<div class="legend">{"".join(sw)} {marks}</div>'


def events_html(events: list[dict], limit: int = EVENT_ROWS) -> str:
    """Event log table (index, phase, type, field, text or value, dirty); the last ``limit`` rows."""
    rows = []
    shown = events[-limit:] if len(events) > limit else events
    for ev in shown:
        t = ev.get("type", "")
        if t == "region_chunk":
            body = ev.get("text", "")
        elif t == "region_close":
            body = json.dumps(ev.get("value"), ensure_ascii=False, default=str)
        elif t == "region_error":
            body = f"{ev.get('message')} (raw: {ev.get('raw', '')!r})"
        else:
            body = ""
        dirty = "" if "dirty" not in ev else ("dirty" if ev["dirty"] else "clean")
        rows.append(f'<tr class="ev-{escape(t)}"><td>{ev.get("index", "")}</td><td>{escape(ev.get("phase", ""))}</td>'
                    f'<td>{escape(t)}</td><td style="color:{field_color(ev.get("field"))}">{escape(ev.get("field", ""))}'
                    f'</td><td class="t">{escape(_clip(body, 300))}</td><td>{dirty}</td></tr>')
    note = ""
    if len(events) > limit:
        note = f'<div class="tl-note">Showing the last {limit} of {len(events)} events.</div>'
    return (f'<div class="evlog">{note}<table><thead><tr><th>#</th><th>phase</th><th>type</th><th>field</th>'
            f'<th>text / value</th><th>dirty</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def partial_message(events: list[dict]) -> dict:
    """A live approximation of the message from events so far: closed values, else raw chunk text
    (see `playground.session.PartialMessage`, which a `LiveParse` keeps up to date as events arrive)."""
    preview = PartialMessage()
    for ev in events:
        preview.add(ev)
    return preview.value()


def clip_strings(value: Any, limit: int = 1500, tail: bool = True) -> Any:
    """Copy of ``value`` with every string longer than ``limit`` cut to ``limit`` characters
    (its end when ``tail``, else its start) plus a note of how much was cut; lists longer than
    ``limit // 30`` items are cut the same way.  Used for live previews of huge messages."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        cut = len(value) - limit
        return f"[… {cut} characters not shown …]" + value[-limit:] if tail else value[:limit] + f"[… {cut} more …]"
    if isinstance(value, dict):
        return {k: clip_strings(v, limit, tail) for k, v in value.items()}
    if isinstance(value, list):
        n = max(1, limit // 30)
        items = value[-n:] if tail else value[:n]
        out = [clip_strings(v, limit, tail) for v in items]
        if len(value) > n:
            note = f"[… {len(value) - n} more items not shown …]"
            out = [note] + out if tail else out + [note]
        return out
    return value


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
                    "metadata": {"title": "💭 Reasoning", "status": "pending" if streaming and not message.get("content") else "done"}})
    calls = message.get("tool_calls")
    if calls and isinstance(calls, (list, dict, str)):
        for call in calls if isinstance(calls, list) else [calls]:
            fn = call.get("function", call) if isinstance(call, dict) else {}
            name = fn.get("name", "?") if isinstance(fn, dict) else "?"
            args = fn.get("arguments") if isinstance(fn, dict) else call
            body = json.dumps(args if args is not None else call, ensure_ascii=False, indent=2, default=str)
            out.append({"role": "assistant", "content": md_code(body, "json"),
                        "metadata": {"title": f"🔧 Tool call: {md_text(name)}"}})
    for k, v in message.items():
        if k in ("role", "content", "reasoning_content", "tool_calls", "_streaming"):
            continue
        body = json.dumps(v, ensure_ascii=False, indent=2, default=str)
        out.append({"role": "assistant", "content": md_code(body, "json"),
                    "metadata": {"title": f"field: {md_text(k)}"}})
    content = message.get("content")
    if content:
        out.append({"role": "assistant", "content": md_text(content) if isinstance(content, str)
                    else md_code(json.dumps(content, ensure_ascii=False, default=str), "json")})
    if not out:
        out.append({"role": "assistant", "content": "…" if streaming else "(empty message)"})
    return out


def check_html(check: dict | None) -> str:
    """Badge when our parse agrees with the transformers reference, a note when the check was
    skipped (time budget), else the differences."""
    if not check:
        return ""
    if check.get("skipped"):
        return f'<span class="badge-skip" id="check-skipped">{escape(check["skipped"])}</span>'
    if check.get("agree"):
        extra = " (both report an error)" if check.get("ref_error") else ""
        return f'<span class="badge-ok" id="agree-badge">✓ agrees with transformers parser{extra}</span>'
    diffs = "\n".join(check.get("differences", []))
    return (f'<div class="badge-bad" id="disagree">✗ differs from the transformers parser'
            f'<pre style="white-space:pre-wrap">{escape(diffs)}</pre></div>')


def template_status_html(problem=None, text: str = "", ok_note: str = "") -> str:
    """Validation result for the editor: OK, or the fault with JSON path, line and the offending line shown."""
    if problem is None:
        return f'<div class="tpl-ok" id="tpl-ok">✓ template valid{escape(ok_note)}</div>'
    where = []
    if getattr(problem, "path", ""):
        where.append(f"at <code>{escape(problem.path)}</code>")
    line = getattr(problem, "line", None)
    if line:
        where.append(f"line {line}" + (f", column {problem.column}" if getattr(problem, "column", None) else ""))
    snippet = ""
    if line and text:
        lines = text.splitlines()
        rows = []
        for i in range(max(1, line - 1), min(len(lines), line + 1) + 1):
            row = f"{i:4d} | {escape(lines[i - 1])}"
            rows.append(f"<mark>{row}</mark>" if i == line else row)
        snippet = "<pre>" + "\n".join(rows) + "</pre>"
    # mark the line in the editor itself (CodeMirror draws one .cm-line per line; the rule goes away
    # with this message once the template is valid again)
    mark = (f"<style>#template .cm-content > .cm-line:nth-child({int(line)}){{background:#fecaca;"
            f"outline:1px solid #dc2626}}</style>") if line else ""
    return (f'<div class="tpl-bad" id="tpl-error" data-line="{line or ""}" data-path="{escape(getattr(problem, "path", ""))}">'
            f'✗ {escape(getattr(problem, "message", str(problem)))} {" ".join(where)}{snippet}{mark}</div>')
