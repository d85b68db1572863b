"""What the transformers reference parser does wrong on one stream, where it can be told.

The probe (`parsing.doctor.probe`, ``reference=True``) also parses every probe with the reference. A failure only
the reference has is not the template's fault in our engine, so the probe class's own change (written for our
engine's faults) does not address it. This module names the reference's documented streaming flaw when it is the
cause (spec section 4, "Streaming hold-back"): a regex match that stops before the buffer edge is taken as final
although more text would extend it from the same start (an optional or repeated tail such as
``</x>\\s*(?:</wrap>)?`` seeing ``</x>\\n<``; a literal list whose literals overlap works the same way). The tail
the longer match would have taken then goes to the next region.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from ..template import CompiledTemplate, Delimiter

__all__ = ["EarlyCommit", "early_commit"]

#: seconds per regex call of the check (the probe already ran these patterns on these outputs)
_CALL_TIMEOUT = 0.2


@dataclass(frozen=True)
class EarlyCommit:
    """A delimiter match the reference commits before it is decided.

    Attributes:
        key: where the delimiter is written (``fields.tool_calls.close_pattern``).
        source: the pattern as written.
        seen: the stream up to the chunk boundary where the reference commits, from the match's start.
        committed: the shorter match it takes there; ``full``: the match once the whole output is there.
    """

    key: str
    source: str
    seen: str
    committed: str
    full: str

    @property
    def tail(self) -> str:
        """What the whole match takes beyond the committed one (it goes to the next region instead)."""
        return self.full[len(self.committed):]

    def describe(self) -> str:
        """The cause and a way around it, in two sentences for the probe report."""
        kind = "close" if ".close" in self.key else "open"
        return (f"it commits {self.key} {json.dumps(self.source, ensure_ascii=False)} early: with the stream cut "
                f"after {json.dumps(self.seen, ensure_ascii=False)} it takes "
                f"{json.dumps(self.committed, ensure_ascii=False)} as final, so "
                f"{json.dumps(self.tail.strip() or self.tail, ensure_ascii=False)} goes to the next region (its "
                f"streaming flaw: a match that stops before the end of the text received is not held although more "
                f"text extends it; our engine holds it). For the reference, give the {kind} no optional or repeated "
                f"tail: every match must end where the {kind} ends, e.g. move "
                f"{json.dumps(self.tail.strip() or self.tail, ensure_ascii=False)} out of it (into a field of its "
                f"own, whose empty value finalize drops, or into the next open)")


def _delimiters(compiled: CompiledTemplate):
    for name, fs in compiled.fields.items():
        for kind, d in (("open", fs.open), ("close", fs.close)):
            if d is None or (d.is_literal and not d.can_extend):
                continue  # a literal no other literal extends commits at once in both parsers: never early
            yield f"fields.{name}.{kind}" + ("" if d.is_literal else "_pattern"), d


def _match_end(d: Delimiter, text: str, start: int) -> int | None:
    m = d.run("match", text, start, timeout=_CALL_TIMEOUT)
    return m.end() if m is not None else None


def early_commit(compiled: CompiledTemplate, output: str, chunks: list, got: Any, expected: Any) -> EarlyCommit | None:
    """The delimiter match the reference commits early on ``output`` cut into ``chunks``, when that explains its
    wrong message ``got`` (the tail the whole match would take shows up in ``got`` more often than in
    ``expected``); None when no such match does.

    A match at ``s`` whose whole-output end is ``E`` is committed early at a chunk boundary ``k`` (``s < k < E``)
    when the text up to ``k`` has a match at ``s`` that ends before ``k`` (not at the edge, where the reference
    holds it) and before ``E``. Patterns are run under a short time limit; one that runs past it is skipped.
    """
    cuts = list(accumulate(len(c) for c in chunks))[:-1]
    shown_got = json.dumps(got, ensure_ascii=False)
    shown_expected = json.dumps(expected, ensure_ascii=False)
    for key, d in _delimiters(compiled):
        try:
            for s in range(len(output)):
                end = _match_end(d, output, s)
                if end is None or end <= s:
                    continue
                for k in cuts:
                    if not s < k < end:
                        continue
                    early = _match_end(d, output[:k], s)
                    if early is None or early >= k or early == end:
                        continue
                    found = EarlyCommit(key, d.source, output[s:k], output[s:early], output[s:end])
                    tail = json.dumps(found.tail.strip(), ensure_ascii=False)[1:-1]
                    if tail and shown_got.count(tail) > shown_expected.count(tail):
                        return found
        except TimeoutError:  # a pattern past its time limit: not told (the failure itself still shows)
            continue
    return None
