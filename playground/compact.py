"""Compact storage of a recorded run and its parse, so a session holds bytes, not millions of Python objects.

A 200 KB paste streams as about 100,000 chunks and as many events; kept as tuples of strings and lists of
dicts that is about 40 MB per session. Here the text is kept once, chunk boundaries and event spans in
integer arrays whose item size grows only when a value needs it, and event dicts are rebuilt when read.
"""

from __future__ import annotations

from array import array
from typing import Iterable, Iterator, Sequence

_TYPECODES = ("B", "H", "I", "Q")  # 1, 2, 4, 8 bytes, unsigned


class IntArray:
    """Non-negative integers in an ``array.array`` of the smallest unsigned type that holds them all."""

    __slots__ = ("_a",)

    def __init__(self, values: Iterable[int] = ()):
        self._a = array("B")
        for v in values:
            self.append(v)

    def append(self, value: int) -> None:
        """Add ``value`` (>= 0), widening the array when it does not fit."""
        try:
            self._a.append(value)
        except OverflowError:
            if value < 0:
                raise ValueError(f"IntArray holds non-negative integers, not {value}") from None
            for code in _TYPECODES[_TYPECODES.index(self._a.typecode) + 1:]:
                if value < 1 << (8 * array(code).itemsize):
                    self._a = array(code, self._a)
                    self._a.append(value)
                    return
            raise

    def __len__(self) -> int:
        return len(self._a)

    def __getitem__(self, i):
        return self._a[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self._a)

    def tobytes(self) -> bytes:
        """The items as machine bytes (the same values always give the same bytes: the width follows from them)."""
        return self._a.tobytes()

    @property
    def nbytes(self) -> int:
        """Bytes of the array's items."""
        return len(self._a) * self._a.itemsize


class ChunkedText(Sequence):
    """A text and the chunks it arrived in: a sequence of the chunk strings, sliced from the text on access.

    ``ChunkedText(chunks)`` (empty chunks dropped); ``.text`` the whole text; ``.ends`` each chunk's end offset.
    """

    __slots__ = ("text", "ends")

    def __init__(self, chunks: Iterable[str] = ()):
        parts: list[str] = []
        ends = IntArray()
        n = 0
        for chunk in chunks:
            if chunk:
                parts.append(chunk)
                n += len(chunk)
                ends.append(n)
        self.text = "".join(parts)
        self.ends = ends

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("chunk index out of range")
        return self.text[self.ends[i - 1] if i else 0:self.ends[i]]

    def __iter__(self) -> Iterator[str]:
        start = 0
        text = self.text
        for end in self.ends:
            yield text[start:end]
            start = end

    def __eq__(self, other) -> bool:
        if isinstance(other, ChunkedText):
            return self.text == other.text and list(self.ends) == list(other.ends)
        return isinstance(other, (tuple, list)) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash((self.text, tuple(self.ends)))

    def __repr__(self) -> str:
        return f"ChunkedText({len(self)} chunks, {len(self.text)} characters)"

    @property
    def nbytes(self) -> int:
        """Approximate bytes held (the text at its widest character, plus the boundaries)."""
        width = 1 if self.text.isascii() else 4
        return len(self.text) * width + self.ends.nbytes


class Offsets(Sequence):
    """``base + ends[i - 1]`` (``base`` for i = 0): where each chunk of a `ChunkedText` starts in a longer text,
    without storing the numbers again (bisect works on it)."""

    __slots__ = ("_ends", "_base", "_n")

    def __init__(self, chunks: ChunkedText, base: int, n: int | None = None):
        self._ends, self._base = chunks.ends, base
        self._n = len(chunks.ends) if n is None else n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("offset index out of range")
        return self._base + (self._ends[i - 1] if i else 0)

    @property
    def nbytes(self) -> int:
        """Bytes of its own: none beyond a few fields (the boundaries belong to the `ChunkedText`)."""
        return 64


_MISSING = object()


class Records(Sequence):
    """Dict rows (events, segments, delimiter matches) stored column-wise; ``records[i]`` rebuilds row ``i``.

    Each row has integer ``start``/``end`` offsets into a stream text. Per row are stored: one small code for
    the combination of its ``coded`` keys (type, field, phase, ...: few distinct combinations), ``start`` and
    ``end - start`` in `IntArray`s, and only the rare other values (a close's value, an error's message, a
    match's captures) as objects. ``text_key``: a key whose value is ``text[start:end]`` of the stream, sliced
    again on access (the text is set with `bind`). ``index_key``: a key set to the row's position.

    Args:
        coded: keys with few distinct hashable values (a missing key stays missing).
        text_key, index_key: see above (None: none).
        empty: keys whose empty value (``{}``, ``[]``, ``""``) is not stored and comes back as a fresh ``{}``.
    """

    def __init__(self, coded: tuple[str, ...], text_key: str | None = None, index_key: str | None = None,
                 empty: tuple[str, ...] = ()):
        self._keys = coded
        self._empty = empty
        self._text_key, self._index_key = text_key, index_key
        self._combos: list[tuple] = []
        self._combo_id: dict[tuple, int] = {}
        self._combo = IntArray()
        self._start = IntArray()
        self._length = IntArray()
        self._objects: dict[int, dict] = {}
        self._sorted = True  # starts never decrease (rows come in stream order): windows bisect
        self._text: str = ""

    def bind(self, text: str) -> None:
        """The stream text that ``text_key`` values are sliced from."""
        self._text = text

    def append(self, row: dict) -> None:
        """Store ``row`` (it must have integer ``start`` and ``end``)."""
        start, end = row["start"], row["end"]
        sliced = False
        if self._text_key is not None and self._text_key in row:
            value = row[self._text_key]
            sliced = isinstance(value, str) and len(value) == end - start  # with spans on, the stream's span
        combo = tuple(row.get(k, _MISSING) for k in self._keys) + (sliced,)
        code = self._combo_id.get(combo)
        if code is None:
            code = self._combo_id[combo] = len(self._combos)
            self._combos.append(combo)
        i = len(self._combo)
        if i and start < self._start[i - 1]:
            self._sorted = False
        self._combo.append(code)
        self._start.append(start)
        self._length.append(end - start)
        skip = {*self._keys, "start", "end", self._index_key} | ({self._text_key} if sliced else set())
        rest = {k: v for k, v in row.items() if k not in skip and not (k in self._empty and not v)}
        if rest:
            self._objects[i] = rest

    def __len__(self) -> int:
        return len(self._combo)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("record index out of range")
        combo = self._combos[self._combo[i]]
        start = self._start[i]
        end = start + self._length[i]
        row = {k: v for k, v in zip(self._keys, combo) if v is not _MISSING}
        row["start"], row["end"] = start, end
        if combo[-1]:
            row[self._text_key] = self._text[start:end]
        for k in self._empty:
            row[k] = {}
        row.update(self._objects.get(i, ()))
        if self._index_key is not None:
            row[self._index_key] = i
        return row

    def __iter__(self) -> Iterator[dict]:
        for i in range(len(self)):
            yield self[i]

    def window(self, a: int, b: int, **equal) -> list[dict]:
        """Rows with ``end >= a`` and ``start <= b`` whose coded keys equal ``equal`` (e.g. ``type="region_chunk"``).

        Rows of one stream tile it (each starts where an earlier one ends, or later), so with starts in order
        this bisects to ``a`` and steps back over the rows that reach into the window.
        """
        n = len(self)
        first = 0
        if self._sorted:
            lo, hi = 0, n
            while lo < hi:  # the first row starting at or after `a`
                mid = (lo + hi) // 2
                if self._start[mid] < a:
                    lo = mid + 1
                else:
                    hi = mid
            first = lo
            while first > 0 and self._start[first - 1] + self._length[first - 1] >= a:
                first -= 1
        want = [(self._keys.index(k), v) for k, v in equal.items()]
        out = []
        for i in range(first, n):
            start = self._start[i]
            if start > b:
                if self._sorted:
                    break
                continue
            if start + self._length[i] < a:
                continue
            combo = self._combos[self._combo[i]]
            if all(combo[k] == v for k, v in want):
                out.append(self[i])
        return out

    @property
    def nbytes(self) -> int:
        """Approximate bytes held (the arrays, plus a rough 200 bytes per stored object row)."""
        return self._combo.nbytes + self._start.nbytes + self._length.nbytes + 200 * len(self._objects)


def event_log() -> Records:
    """`Records` for parser events as the playground keeps them (``index`` and ``phase`` added)."""
    return Records(("type", "field", "phase", "dirty"), text_key="text", index_key="index")


def segment_log() -> Records:
    """`Records` for `ResponseParser.segments` rows."""
    return Records(("kind", "field", "origin"))


def delimiter_log() -> Records:
    """`Records` for `ResponseParser.delimiters` rows (``captures`` kept only when not empty)."""
    return Records(("field", "kind"), text_key="text", empty=("captures",))
