"""The inspector: everything known about one character of a parse, for the pinned details panel.

Click a character, delimiter or region in the timeline and the page asks for `details_html` at that character
offset: which field it went to and as what (body, open/close delimiter, discarded, from the prompt prefix), the
events that produced it, the chunk it arrived in with its offsets, the delimiter's pattern as the template writes
it and what it captured, dirty or clean, the final value of its region, and any error on it. Pure functions of
a `playground.session.ParseView` and the template text; no Gradio.
"""

from __future__ import annotations

import bisect
import json
from typing import Any

from .icons import icon
from .jsonsize import json_head, json_size
from .render import escape, field_class, visible_whitespace
from .session import value_note

MAX_VALUE_CHARS = 4000  # characters of a region's value shown
MAX_EVENTS = 12  # events listed for one character


def _rows(records, a: int, b: int, **equal) -> list[dict]:
    if hasattr(records, "window"):
        return records.window(a, b, **equal)
    return [r for r in records if all(r.get(k) == v for k, v in equal.items())
            and r.get("end", a) >= a and r.get("start", b) <= b]


def _covering(rows: list[dict], x: int) -> list[dict]:
    """Rows whose span contains ``x``: ``start <= x < end`` (empty spans at ``x`` included)."""
    return [r for r in rows if r.get("start", -1) <= x < r.get("end", -1) or r.get("start") == r.get("end") == x]


def _pattern(spec: dict, field: str | None, kind: str) -> tuple[str, Any] | None:
    """``(json path, value)`` of a field's open/close delimiter as the template writes it."""
    fspec = ((spec or {}).get("fields") or {}).get(field) if field is not None else None
    if not isinstance(fspec, dict):
        return None
    for key in (kind, f"{kind}_pattern"):
        if key in fspec:
            return f"fields.{field}.{key}", fspec[key]
    return None


def details(view: Any, template_text: str, x: int) -> dict | None:
    """What is known about character ``x`` of ``view.text``; None when ``x`` is outside the text.

    Returns a dict: ``x``, ``char``; ``kind`` ("body", "delimiter", "discarded", "undecided"), ``field``,
    ``segment`` (start, end); ``prefix`` (True for text of the prompt prefix); ``chunk`` (index or None for
    prefix text), ``chunk_span`` (start, end; absolute offsets), ``generation_span`` (the same relative to the
    generation); ``events`` (the events whose span covers ``x``; at most `MAX_EVENTS`); ``delimiter`` (the
    parser's record: kind, text, captures) and ``pattern`` (json path, value) for a delimiter; ``dirty`` (True,
    False or None when no chunk event covers it); ``region`` (open, close offsets, ``value``, ``closed``);
    ``errors`` (messages covering ``x``); ``held`` (True while the parser holds it back).
    """
    text = view.text
    n = len(text)
    if not 0 <= x < n:
        return None
    try:
        spec = json.loads(template_text) if isinstance(template_text, str) else dict(template_text or {})
    except ValueError:
        spec = {}
    seg = next(iter(_covering(_rows(view.segments, x, x + 1), x)), None)
    kind = {"body": "body", "delimiter": "delimiter", "discarded": "discarded"}.get((seg or {}).get("kind"),
                                                                                  "undecided")
    field = (seg or {}).get("field")
    starts = list(view.chunk_starts)
    k = bisect.bisect_right(starts, x) - 1
    in_prefix = x < view.prefix_length
    chunk = chunk_span = generation_span = None
    if k >= 0 and not in_prefix:
        chunk = k
        end = starts[k + 1] if k + 1 < len(starts) else n
        chunk_span = (starts[k], end)
        generation_span = (starts[k] - view.prefix_length, end - view.prefix_length)
    events = _covering(_rows(view.events, x, x + 1), x)
    events.sort(key=lambda e: e.get("index", 0))
    dirty = next((bool(e.get("dirty")) for e in events if e.get("type") == "region_chunk"), None)
    delimiter = pattern = None
    if kind == "delimiter":
        delimiter = next(iter(_covering(_rows(view.delimiters, x, x + 1), x)), None)
        if delimiter is not None:
            pattern = _pattern(spec, field, delimiter.get("kind", "open"))
    region = _region(view, field, x) if field is not None else None
    errors = [e["message"] for e in view.errors
              if e["start"] <= x < e["end"] or (e["start"] == e["end"] == x)]
    held_a, held_b = view.held if view.held else (n, n)
    return {"x": x, "char": text[x], "kind": kind, "field": field,
            "segment": (seg["start"], seg["end"]) if seg else (x, x + 1), "prefix": in_prefix,
            "chunk": chunk, "chunk_span": chunk_span, "generation_span": generation_span,
            "events": events[:MAX_EVENTS], "dirty": dirty, "delimiter": delimiter, "pattern": pattern,
            "region": region, "errors": errors, "held": held_a <= x < held_b, "final": view.final}


def _region(view: Any, field: str, x: int) -> dict | None:
    """The region of ``field`` around ``x``: its last open at or before ``x`` and the first close after it."""
    opens = [e for e in _rows(view.events, 0, x, type="region_open", field=field) if e.get("start", 0) <= x]
    if not opens:
        return None
    op = max(opens, key=lambda e: e.get("index", 0))
    closes = [e for e in _rows(view.events, op.get("start", 0), len(view.text), type="region_close", field=field)
              if e.get("index", 0) > op.get("index", 0)]
    close = min(closes, key=lambda e: e.get("index", 0)) if closes else None
    return {"open": (op.get("start"), op.get("end")), "close": (close.get("start"), close.get("end")) if close
            else None, "closed": close is not None, "value": close.get("value") if close else None,
            "dropped": close if close is not None and "value_size" in close else None}


def _code(value: Any) -> str:
    return f"<code>{escape(json.dumps(value, ensure_ascii=False, default=str))}</code>"


def _value_html(value: Any) -> str:
    # measured first, with a limit: a transform can repeat a value until its JSON is gigabytes (`json_size`)
    size = json_size(value, MAX_VALUE_CHARS)
    if size > MAX_VALUE_CHARS:
        body = json_head(value, MAX_VALUE_CHARS)[0] + f"\n… (at least {size - MAX_VALUE_CHARS:,} more characters)"
    else:
        body = json.dumps(value, ensure_ascii=False, indent=2, default=str)
        if len(body) > MAX_VALUE_CHARS:
            body = body[:MAX_VALUE_CHARS] + f"\n… (+{len(body) - MAX_VALUE_CHARS} characters)"
    return f'<pre class="insp-value">{escape(body)}</pre>'


def details_html(view: Any, template_text: str, x: int | None) -> str:
    """The pinned details panel for character ``x`` (HTML; a hint when nothing is pinned or ``x`` is out of
    range). The root ``.insp`` carries ``data-field``, ``data-kind``, ``data-start``/``data-end`` (the clicked
    piece), ``data-chunk`` and ``data-dirty`` for scripts and tests."""
    if view is None or x is None:
        return ('<div class="insp-hint">Click any character, delimiter or region of the timeline to pin its '
                'details here. Hover a field in the legend, or its key in the editor, to see its regions.</div>')
    d = details(view, template_text, x)
    if d is None:
        return f'<div class="insp-hint">Character {x} is not in this parse ({len(view.text)} characters).</div>'
    f = d["field"]
    a, b = d["segment"]
    what = {"body": f"body of {f}", "discarded": "discarded: no implicit field takes this text",
            "undecided": "not yet assigned to a region (held back or still streaming)"}.get(d["kind"], "")
    if d["kind"] == "delimiter":
        what = f"{(d['delimiter'] or {}).get('kind', '')} delimiter of {f}".strip()
    rows = [("what", escape(what) + (" · from the prompt prefix" if d["prefix"] else ""))]
    rows.append(("characters", f"{a}–{b} (this one: {d['x']}, "
                               f"<code>{escape(visible_whitespace(d['char']))}</code>)"))
    if d["chunk"] is not None:
        ca, cb = d["chunk_span"]
        ga, gb = d["generation_span"]
        rows.append(("chunk", f"chunk {d['chunk']}: characters {ca}–{cb} (generation {ga}–{gb})"))
    elif d["prefix"]:
        rows.append(("chunk", "none: text of the prompt prefix, read before the stream"))
    if d["kind"] == "delimiter":
        dl = d["delimiter"] or {}
        if d["pattern"]:
            path, pat = d["pattern"]
            rows.append(("pattern", f"<code>{escape(path)}</code> = {_code(pat)}"))
        rows.append(("matched", f"<code>{escape(visible_whitespace(dl.get('text', view.text[a:b])))}</code>"))
        caps = dl.get("captures") or {}
        rows.append(("captures", _code(caps) if caps else "none"))
    if d["dirty"] is not None:
        rows.append(("dirty", "dirty: JSON-like text the parser may re-read" if d["dirty"] else "clean"))
    if d["events"]:
        evs = "".join(
            f'<tr><td>#{e.get("index", "")}</td><td>{escape(e.get("type", ""))}</td>'
            f'<td>{escape(e.get("phase", ""))}</td><td>{e.get("start", "")}–{e.get("end", "")}</td>'
            f'<td>{"" if "dirty" not in e else ("dirty" if e["dirty"] else "clean")}</td></tr>' for e in d["events"])
        rows.append(("events", f'<table class="insp-events">{evs}</table>'))
    else:
        rows.append(("events", "none yet"))
    reg = d["region"]
    if reg is not None:
        if reg["closed"]:
            value = (f'<pre class="insp-value">{escape(reg["dropped"]["value_head"][:MAX_VALUE_CHARS])}\n'
                     f'{escape(value_note(reg["dropped"]))}</pre>' if reg["dropped"] else _value_html(reg["value"]))
            rows.append(("region value", f"characters {reg['open'][0]}–{reg['close'][1]}{value}"))
        else:
            rows.append(("region value", "open: no value yet" if not d["final"] else "never closed"))
    if d["held"]:
        rows.append(("held back", "the parser holds this text back: it may still become a delimiter"))
    for msg in d["errors"]:
        rows.append(("error", f'{icon("error")} {escape(msg)}'))
    body = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in rows)
    cls = field_class(f) if f is not None else ""
    chip = f'<span class="sw {cls}" data-f="{escape(f)}">{escape(f)}</span>' if f is not None else ""
    dirty = "" if d["dirty"] is None else str(d["dirty"]).lower()
    return (f'<div class="insp" data-field="{escape(f or "")}" data-kind="{d["kind"]}" data-start="{a}" '
            f'data-end="{b}" data-x="{d["x"]}" data-chunk="{"" if d["chunk"] is None else d["chunk"]}" '
            f'data-dirty="{dirty}"><div class="insp-head">{icon("pin")} {chip} <span>{escape(what)}</span></div>'
            f"<dl>{body}</dl></div>")
