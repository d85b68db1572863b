"""Inline SVG icons for the HTML the page draws.

Emoji and dingbat characters (the old 🧩 💭 🔧 ✓ ✗ ⚠) depend on the fonts of the visitor's machine: a Linux
box without an emoji font draws empty boxes. These icons are SVG paths (a 16x16 grid, Feather-style strokes) in
``currentColor``, so they take the colour of the text around them in either colour scheme, and carry no text
(``aria-hidden``): the words beside them say the same thing.
"""

from __future__ import annotations

_PATHS = {
    # a puzzle-like mark: the page's logo (a template slotting text into fields)
    "logo": '<rect x="1.5" y="1.5" width="13" height="13" rx="3"/><path d="M4.5 5.5h3M4.5 8h7M4.5 10.5h5"/>',
    "ok": '<path d="M3 8.5l3.2 3L13 4.5"/>',
    "error": '<circle cx="8" cy="8" r="6.5"/><path d="M5.5 5.5l5 5M10.5 5.5l-5 5"/>',
    "warning": '<path d="M8 1.8l6.6 12H1.4z"/><path d="M8 6.3v3.6M8 11.8v.2"/>',
    "info": '<circle cx="8" cy="8" r="6.5"/><path d="M8 7.2v4.3M8 4.8v.2"/>',
    "neutral": '<circle cx="8" cy="8" r="6.5"/><path d="M5 8h6"/>',
    "skip": '<circle cx="8" cy="8" r="6.5"/><path d="M6.5 5.5v5M9.5 5.5v5"/>',
    "link": '<path d="M9.5 2.5h4v4M13.5 2.5L7.5 8.5M12 9.5v4h-9.5v-9.5h4"/>',
    "pin": '<path d="M8 14.5v-4M4.5 10.5h7l-1.5-3v-5h-4v5z"/>',
}


def icon(name: str, cls: str = "") -> str:
    """The SVG markup of icon ``name`` (one of ``logo ok error warning info neutral skip link pin``), 1em high,
    stroked in ``currentColor``; ``cls`` adds classes. Raises KeyError for an unknown name."""
    extra = f" {cls}" if cls else ""
    return (f'<svg class="ico ico-{name}{extra}" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" '
            f'focusable="false" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round" '
            f'stroke-linejoin="round">{_PATHS[name]}</svg>')


NAMES = tuple(_PATHS)
