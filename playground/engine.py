"""The one adapter between the playground and the parsing engine.

The playground talks to :func:`load_template`, :func:`make_parser` and
:func:`reference_parser` only: our engine (`parsing`, docs/engine-api.md) with
``spans=True, recover=True`` for everything drawn, and the installed transformers
parser as the oracle of the side-by-side check.
"""

from __future__ import annotations

from typing import Any

import parsing

ENGINE = "parsing"


class TemplateProblem(ValueError):
    """A template that cannot be used, with where the fault is.

    Attributes: ``message`` (str), ``path`` (str JSON path, "" for the top level or
    unknown), ``line`` / ``column`` (1-based ints or None) in the JSON text.
    """

    def __init__(self, message: str, path: str = "", line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message, self.path, self.line, self.column = message, path, line, column


def load_template(text_or_spec: Any):
    """Parse and validate a template given as JSON text or a dict; return the compiled template.

    Raises :class:`TemplateProblem` for any fault (JSON syntax, shape, bad regex, ...), with the
    JSON path and the line in the text where the engine can locate them.
    """
    try:
        return parsing.load_template(text_or_spec)
    except parsing.TemplateError as e:
        line = e.line
        if line is None and isinstance(text_or_spec, str) and e.path:
            try:
                line, _ = parsing.locate_json_path(text_or_spec, e.path)
            except Exception:  # noqa: BLE001 - location is a nicety
                line = None
        return _raise(e.message, e.path, line, e.column)
    except Exception as e:  # noqa: BLE001 - anything else is still a template fault to show
        return _raise(f"{type(e).__name__}: {e}")


def _raise(message, path="", line=None, column=None):
    raise TemplateProblem(message, path or "", line, column) from None


def make_parser(compiled, prefix: str, tools: list | None = None):
    """A streaming ``parsing.ResponseParser`` with spans and recovery for ``compiled``.

    It has ``initial_events``, ``feed(text) -> events``, ``finalize() -> (message, events)``,
    ``stream_text``, ``prefix_length``, ``dropped_prefix``, ``delimiters``, ``held()`` and
    ``segments()``.  Raises ValueError/KeyError like the reference (e.g. for a prefix that fails).
    """
    return parsing.ResponseParser(compiled, prefix, tools=tools or None, spans=True, recover=True)


def reference_parser(template_spec: dict, prefix: str, tools: list | None):
    """The installed transformers 5.23 streaming parser (the oracle for the side-by-side check)."""
    from transformers.utils.chat_parsing import ResponseParser

    return ResponseParser(template_spec, prefix=prefix, tools=tools or None)
