"""`parsing.content.CONTENT_ARGS` (the lint's list of known ``content_args`` keys) against the parsers' own code."""

import inspect
import re

from parsing import content


def _keys_read(function) -> set:
    """The ``args`` keys a parser's source reads (``args.get("k")`` / ``args["k"]``), and those of the parsers it
    hands its ``args`` to (``parse_text(..., args, ...)``)."""
    source = inspect.getsource(function)
    keys = set(re.findall(r'\bargs(?:\.get\(|\[)"(\w+)"', source))
    if re.search(r"\bparse_text\([^)]*\bargs\b", source) and function is not content.parse_text:
        keys |= _keys_read(content.parse_text)
    return keys


def test_every_parser_has_its_known_keys_listed_exactly():
    assert set(content.CONTENT_ARGS) == set(content.CONTENT_PARSERS)
    for name, function in content.CONTENT_PARSERS.items():
        assert set(content.CONTENT_ARGS[name]) == _keys_read(function), name


def test_value_parser_keys_are_the_ones_the_nested_call_reads():
    source = inspect.getsource(content._parse_nested)
    assert set(re.findall(r'value_parser\.get\("(\w+)"', source)) == set(content.VALUE_PARSER_KEYS)
