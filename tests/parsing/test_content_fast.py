"""Content-parser steps done with string operations instead of the template's regex (`parsing.content`): the same
rewrite, strings and errors as the regex, on adversarial text (delimiters that overlap themselves or each other,
openers without closers, empty strings), and the regex still run (and timed) where its work is not linear."""

from __future__ import annotations

import random

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsing import content
from parsing.budget import NO_LIMITS, ParseContext
from parsing.errors import PatternTimeoutError

PAIRS = [("<escape>", "<escape>"), ('<|"|>', '<|"|>'), ("«", "»"), ("aa", "a"), ("a", "aa"), ("ab", "ba"),
         ("<<", ">>"), ("'", "'"), ("x", "y")]
PIECES = ["<escape>", "<escape", "escape>", '<|"|>', '<|"', '"|>', "«", "»", "a", "aa", "b", "ab", "ba", "<<", ">>",
          "<", ">", "'", "x", "y", "{", "}", ":", ",", " ", "\n", "é", "\x01", "0"]


def _by_regex(text: str, open_d: str, close_d: str) -> tuple[str, list]:
    pulled: list = []

    def pull(match) -> str:
        pulled.append(match.group(1))
        return f"\x01{len(pulled) - 1}\x02"

    rx = regex.compile(regex.escape(open_d) + r"(.*?)" + regex.escape(close_d), regex.DOTALL)
    return rx.sub(pull, text), pulled


def _by_find(text: str, open_d: str, close_d: str) -> tuple[str, list]:
    """`parse_json`'s steps: the string operations, then the regex on what they leave."""
    pulled: list = []
    rewritten, rest = content._pull_delimited(text, open_d, close_d, pulled)
    if rest != -1:
        tail, more = _by_regex(rewritten[rest:], open_d, close_d)
        offset = len(pulled)
        pulled.extend(more)
        tail = regex.sub("\x01(\\d+)\x02", lambda m: f"\x01{int(m.group(1)) + offset}\x02", tail)
        rewritten = rewritten[:rest] + tail
    return rewritten, pulled


def test_pull_delimited_as_the_regex_seeded():
    rng = random.Random(1202)
    for _ in range(4000):
        open_d, close_d = rng.choice(PAIRS)
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        if "\x01" in text:
            continue
        assert _by_find(text, open_d, close_d) == _by_regex(text, open_d, close_d), (text, open_d, close_d)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=st.sampled_from(PAIRS), parts=st.lists(st.sampled_from(PIECES[:-3] + ["z", "\t"]), max_size=24))
def test_pull_delimited_as_the_regex(pair, parts):
    text = "".join(parts)
    assert _by_find(text, *pair) == _by_regex(text, *pair)


@pytest.mark.parametrize("body", [
    '{city:<escape>Paris<escape>,days:3}',
    '{a:<escape>x<escape>,b:<escape>',  # an opener without a closer: the regex reads the rest
    '{a:<escape><escape>}',
    '{"a": 1}',
    '{a:<escape>{b:<escape>c<escape>}<escape>}',
])
def test_parse_json_with_string_delims_as_the_regex_rewrite(body, monkeypatch):
    """`parse_json`'s value or error is the one the regex-only rewrite gives."""
    args = {"unquoted_keys": True, "string_delims": [["<escape>", "<escape>"]]}

    def outcome():
        try:
            return content.parse_json(body, args, NO_LIMITS)
        except ValueError as exc:
            return type(exc), str(exc)

    fast = outcome()
    monkeypatch.setattr(content, "_pull_delimited", lambda text, o, c, pulled: (text, 0))
    assert fast == outcome()


def test_openers_without_closers_still_run_out_of_the_regex_budget():
    """Many openers and no closer: quadratic for the regex, which the reference's budget stops; so does ours."""
    args = {"string_delims": [["«", "»"]]}
    with pytest.raises(PatternTimeoutError):
        content.parse_json('{"a": ' + "«" * 60000 + "}", args, ParseContext(regex_timeout=0.05, field="f"))
