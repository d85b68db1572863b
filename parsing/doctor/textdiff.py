"""Text helpers for comparing chat-template renderings: common prefixes, marker tokens, tag pairs.

The drafter (`parsing.doctor.draft`) compares two renderings of a chat template that differ in one
respect and reads markers off the difference. Character-level comparisons cut through markers
(``<|assistant|><think>`` against ``<|assistant|></think>`` agree up to ``<|assistant|><``), so every cut
is moved back to a marker boundary: the start of a special token, or of a bracketed token such as
``<...>``, ``[...]`` or ``<｜...｜>``. Pure functions over strings; no template knowledge.
"""

from __future__ import annotations

import regex

__all__ = ["common_prefix", "common_suffix", "safe_cut", "safe_cut_forward", "tokens", "first_marker", "last_marker", "strip_ws",
           "pair_of", "is_marker"]

# A bracketed token: <...>, [...], or the full-width bars DeepSeek uses (<｜...｜>), short and without
# whitespace runs or nested brackets, so that ordinary prose is never taken for a marker.
_BRACKETED = regex.compile(r"<[^<>\s]{1,60}>|<[^<>\n]{1,60}\|>|\[[^\[\]\s]{1,60}\]|<｜[^｜<>]{1,60}｜>"
                           r"|</?[A-Za-z_][\w:.-]*(?:\s+[\w:.-]+=(?:\"[^\"<>\n]*\"|'[^'<>\n]*'))*\s*/?>")
_WS = regex.compile(r"\s+")


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (characters)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def common_suffix(a: str, b: str, limit: int | None = None) -> int:
    """Length of the longest common suffix of ``a`` and ``b``, at most ``limit`` characters."""
    n = min(len(a), len(b)) if limit is None else min(len(a), len(b), limit)
    i = 0
    while i < n and a[len(a) - 1 - i] == b[len(b) - 1 - i]:
        i += 1
    return i


def _spans(text: str, special: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans of marker tokens in ``text``: given special tokens first (longest wins), then bracketed tokens."""
    taken: list[tuple[int, int]] = []
    if special:
        pattern = regex.compile("|".join(regex.escape(t) for t in sorted(special, key=len, reverse=True)))
        taken = [m.span() for m in pattern.finditer(text)]
    for m in _BRACKETED.finditer(text):
        s, e = m.span()
        if not any(s < te and ts < e for ts, te in taken):
            taken.append((s, e))
    return sorted(taken)


def safe_cut(text: str, pos: int, special: tuple[str, ...] = ()) -> int:
    """Move ``pos`` back so that it does not fall inside a marker token of ``text``.

    Returns a position ``<= pos`` that is the start of the marker token containing ``pos`` (when one
    does), else ``pos``. A position right after an opening ``<`` or ``[`` whose token is cut off (the
    text differs from there) also moves back before it.
    """
    for s, e in _spans(text, special):
        if s < pos < e:
            return s
    if pos > 0 and text[pos - 1] in "<[":
        return pos - 1
    return pos


def safe_cut_forward(text: str, pos: int, special: tuple[str, ...] = ()) -> int:
    """Move ``pos`` forward so that it does not fall inside a marker token of ``text`` (to that token's end)."""
    for s, e in _spans(text, special):
        if s < pos < e:
            return e
    return pos


def tokens(text: str, special: tuple[str, ...] = ()) -> list[str]:
    """Split ``text`` into marker tokens, whitespace runs and other text runs, in order (joins to ``text``)."""
    out: list[str] = []
    pos = 0
    for s, e in _spans(text, special):
        if s < pos:
            continue
        _plain(text[pos:s], out)
        out.append(text[s:e])
        pos = e
    _plain(text[pos:], out)
    return out


def _plain(text: str, out: list[str]) -> None:
    pos = 0
    for m in _WS.finditer(text):
        if m.start() > pos:
            out.append(text[pos:m.start()])
        out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])


def is_marker(piece: str, special: tuple[str, ...] = ()) -> bool:
    """Whether ``piece`` (one item of `tokens`) is a marker token rather than whitespace or prose."""
    return bool(piece) and (piece in special or bool(_BRACKETED.fullmatch(piece)))


def first_marker(text: str, special: tuple[str, ...] = ()) -> str:
    """The first non-whitespace token of ``text`` ('' if there is none)."""
    for piece in tokens(text, special):
        if piece.strip():
            return piece
    return ""


def last_marker(text: str, special: tuple[str, ...] = ()) -> str:
    """The last non-whitespace token of ``text`` ('' if there is none)."""
    for piece in reversed(tokens(text, special)):
        if piece.strip():
            return piece
    return ""


def strip_ws(text: str) -> str:
    """``text`` without leading and trailing whitespace."""
    return text.strip()


_PAIR_RULES = (
    # (open form, close form) as regexes with one group: the tag's name
    (r"<([^</>|｜]+)>", r"</{}>"),
    (r"<\|START_(\w+)\|>", r"<|END_{}|>"),
    (r"<\|(\w+)_start\|>", r"<|{}_end|>"),
    (r"<\|(\w+)_begin\|>", r"<|{}_end|>"),
    (r"<\|([^|/]+)\|>", r"<|/{}|>"),
    (r"\[([A-Z_]+)\]", r"[/{}]"),
    (r"<\|(\w+)>", r"<{}|>"),
    (r"<｜(.+?)▁begin｜>", r"<｜{}▁end｜>"),
)


def pair_of(marker: str) -> tuple[str, ...]:
    """Candidate partners of an open or close tag, by the usual spelling rules.

    ``<think>`` -> ``</think>`` and back; ``<|START_X|>`` <-> ``<|END_X|>``; ``<|x_begin|>`` <-> ``<|x_end|>``;
    ``<|x|>`` <-> ``<|/x|>``; ``[X]`` <-> ``[/X]``; ``<|x>`` <-> ``<x|>``. These are spelling conventions of tag
    syntaxes (the same ones llama.cpp's auto-parser uses to derive an opening tag from a closing one), not
    knowledge of any model family. Returns ``()`` when no rule applies.
    """
    out: list[str] = []
    for open_re, close_fmt in _PAIR_RULES:
        m = regex.fullmatch(open_re, marker)
        if m:
            out.append(close_fmt.format(m.group(1)))
        # the reverse direction: the close form back to the open form
        close_re = regex.escape(close_fmt).replace(regex.escape("{}"), r"([^|<>/\[\]]+?)")
        m = regex.fullmatch(close_re, marker)
        if m:
            name = m.group(1)
            open_text = open_re.replace(r"\|", "|").replace(r"\[", "[").replace(r"\]", "]")
            open_text = regex.sub(r"\((?:[^()]|\([^()]*\))*\)", lambda _: name, open_text, count=1)
            out.append(open_text)
    seen: list[str] = []
    for candidate in out:
        if candidate != marker and candidate not in seen:
            seen.append(candidate)
    return tuple(seen)
