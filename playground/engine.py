"""The one adapter between the playground and a streaming parser with spans.

Everything in the playground talks to :func:`make_parser` and :func:`load_template`
only.  When the project's own engine (`parsing`, see docs/engine-api.md) is
importable, they return ``parsing.ResponseParser(..., spans=True, recover=True)``
and ``parsing.load_template``.  Until then they fall back to a thin subclass of
the transformers 5.23 reference parser that records the same span information
(stream text, delimiters, held bytes, segments) from the reference's own
bookkeeping, so the timeline works either way.  ``ENGINE`` names the one in use.
"""

from __future__ import annotations

import json
from typing import Any

try:  # the project's engine, once it lands
    import parsing as _parsing  # type: ignore

    _HAS_ENGINE = hasattr(_parsing, "ResponseParser") and hasattr(_parsing, "load_template")
except Exception:  # pragma: no cover - depends on what is installed
    _parsing = None
    _HAS_ENGINE = False

ENGINE = "parsing" if _HAS_ENGINE else "transformers (stand-in)"


class TemplateProblem(ValueError):
    """A template that cannot be used, with where the fault is.

    Attributes: ``message`` (str), ``path`` (str JSON path, "" for top level or
    unknown), ``line`` / ``column`` (1-based ints or None) in the JSON text.
    """

    def __init__(self, message: str, path: str = "", line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message, self.path, self.line, self.column = message, path, line, column


def locate_path(text: str, path: str) -> int | None:
    """Best-effort 1-based line of the JSON key at ``path`` (dot-separated) in ``text``.

    Walks the keys in order, each searched after the previous one; returns the
    line of the deepest key found, or None when not even the first is found.
    """
    if not path:
        return None
    pos, line = 0, None
    for part in path.split("."):
        if part.isdigit():
            continue
        idx = text.find(json.dumps(part), pos)
        if idx < 0:
            break
        pos = idx + 1
        line = text.count("\n", 0, idx) + 1
    return line


def load_template(text_or_spec: Any):
    """Parse and validate a template given as JSON text or a dict.

    Returns the compiled template (engine-specific object accepted by
    :func:`make_parser`).  Raises :class:`TemplateProblem` for any fault, with
    a JSON path and editor line where they can be found.
    """
    text = text_or_spec if isinstance(text_or_spec, str) else None
    if text is not None:
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as e:
            raise TemplateProblem(f"JSON syntax error: {e.msg}", "", e.lineno, e.colno) from None
    else:
        spec = text_or_spec
    if _HAS_ENGINE:
        try:
            return _parsing.load_template(text if text is not None else spec)
        except ValueError as e:
            path = getattr(e, "path", "") or ""
            line = getattr(e, "line", None)
            if line is None and text is not None:
                line = locate_path(text, path)
            msg = getattr(e, "message", None) or str(e)
            raise TemplateProblem(msg, path, line, getattr(e, "column", None)) from None
        except Exception as e:  # noqa: BLE001 - anything else is still a template fault to show
            raise TemplateProblem(f"{type(e).__name__}: {e}") from None
    from transformers.utils.chat_parsing.response_templates import load_response_template

    try:
        return load_response_template(spec)
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        path = _guess_path(spec, msg)
        line = locate_path(text, path) if text is not None else None
        raise TemplateProblem(msg, path, line) from None


def _guess_path(spec: Any, msg: str) -> str:
    """Stand-in only: the reference gives no JSON path; guess it from field names in the message."""
    if not isinstance(spec, dict) or not isinstance(spec.get("fields"), dict):
        return ""
    for name, field in spec["fields"].items():
        if f"'{name}'" in msg or f"Field {name}" in msg or f"fields.{name}" in msg:
            if isinstance(field, dict):
                for key in field:
                    if f"'{key}'" in msg or f" {key}" in msg:
                        return f"fields.{name}.{key}"
            return f"fields.{name}"
    return ""


def reference_parser(template_spec: dict, prefix: str, tools: list | None):
    """The installed transformers parser (the oracle for the side-by-side check)."""
    from transformers.utils.chat_parsing import ResponseParser

    return ResponseParser(template_spec, prefix=prefix, tools=tools or None)


def make_parser(compiled, prefix: str, tools: list | None = None):
    """A streaming parser with spans for ``compiled`` (from :func:`load_template`).

    The returned object has ``initial_events``, ``feed(text) -> events``,
    ``finalize() -> (message, events)``, ``stream_text``, ``prefix_length``,
    ``dropped_prefix``, ``delimiters``, ``held() -> (start, end)`` and
    ``segments()`` as in docs/engine-api.md.  Events carry ``start``/``end``.
    Raises ValueError/KeyError/RuntimeError like the reference.
    """
    if _HAS_ENGINE:
        return _parsing.ResponseParser(compiled, prefix, tools=tools or None, spans=True, recover=True)
    return _SpanningReference(compiled, prefix, tools)


def _stand_in_class():
    from transformers.utils.chat_parsing.response_parser import ResponseParser

    class SpanningReference(ResponseParser):
        """Reference parser that records offsets (stand-in until `parsing` lands)."""

        def __init__(self, compiled, prefix, tools):
            self.delimiters: list[dict] = []
            self._segs: list[dict] = []
            self.prefix_length = 0
            self.dropped_prefix = ""
            truncated = compiled.truncate_past_last_anchor(prefix) if prefix else ""
            self.prefix_length = len(truncated)
            self.dropped_prefix = prefix[: len(prefix) - len(truncated)] if prefix else ""
            super().__init__(compiled, prefix=prefix, tools=tools or None)

        @property
        def stream_text(self) -> str:
            return self._buffer

        def held(self) -> tuple[int, int]:
            return (self._pos, len(self._buffer)) if not self._finalized else (len(self._buffer),) * 2

        def _origin(self, pos: int) -> str:
            return "prefix" if pos < self.prefix_length else "generation"

        def _add_seg(self, kind, field, start, end):
            # split at the prefix boundary so every segment has one origin
            cuts = [start, end]
            if start < self.prefix_length < end:
                cuts = [start, self.prefix_length, end]
            for a, b in zip(cuts, cuts[1:]):
                if b > a:
                    self._segs.append({"kind": kind, "field": field, "start": a, "end": b, "origin": self._origin(a)})

        def _accumulate(self, events, text):
            start = self._pos
            n = len(events)
            super()._accumulate(events, text)
            if not text:
                return
            if self._current is None:
                self._add_seg("discarded", None, start, start + len(text))
                return
            self._note_gap(start)
            self._add_seg("body", self._current, start, start + len(text))
            for ev in events[n:]:
                ev["start"], ev["end"] = (start, start + len(text)) if ev["type"] == "region_chunk" else (start, start)

        def _note_gap(self, upto: int) -> None:
            # text between the last segment and `upto` was a close delimiter (the only untracked kind)
            last = max((sg["end"] for sg in self._segs), default=0)
            if upto > last:
                text = self._buffer[last:upto]
                self.delimiters.append({"field": self._last_field, "kind": "close", "start": last, "end": upto,
                                        "text": text, "captures": {}})
                self._add_seg("delimiter", self._last_field, last, upto)

        _last_field = None

        def _scan(self, watch, eos):
            best, hold_start = super()._scan(watch, eos)
            if best is not None and best[0] == "close" and best[2].start() < hold_start:
                _, field, m = best
                # committed right after this returns: record the close delimiter now
                self.delimiters.append({"field": field.name, "kind": "close", "start": m.start(), "end": m.end(),
                                        "text": m.group(0), "captures": {}})
                self._add_seg("delimiter", field.name, m.start(), m.end())
            return best, hold_start

        def _open_explicit(self, events, field, m):
            self._note_gap(m.start())
            n = len(events)
            super()._open_explicit(events, field, m)
            self.delimiters.append({"field": field.name, "kind": "open", "start": m.start(), "end": m.end(),
                                    "text": m.group(0), "captures": dict(self._captures)})
            self._add_seg("delimiter", field.name, m.start(), m.end())
            for ev in events[n:]:
                ev["start"], ev["end"] = m.start(), m.end()

        def _close_current(self, events):
            if self._current is not None and self._opened:
                self._last_field = self._current
            n = len(events)
            super()._close_current(events)
            for ev in events[n:]:
                ev.setdefault("start", self._pos)
                ev.setdefault("end", self._pos)

        def finalize(self):
            result = super().finalize()
            self._note_gap(len(self._buffer))
            return result

        def segments(self) -> list[dict]:
            return sorted(self._segs, key=lambda sg: (sg["start"], sg["end"]))

    return SpanningReference


_SPANNING = None


def _SpanningReference(compiled, prefix, tools):
    global _SPANNING
    if _SPANNING is None:
        _SPANNING = _stand_in_class()
    return _SPANNING(compiled, prefix, tools)
