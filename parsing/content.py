"""Content parsers: turn a region's raw body into its value (spec section 5).

Every parser has one signature, ``parser(body: str, args: dict, ctx: ParseContext) -> value``, and raises
``ValueError`` on malformed input, as transformers 5.23's do. ``args`` is the field's ``content_args`` (or a
nested ``value_parser``'s ``args``; not validated at load time, as in the reference). ``ctx`` carries the
regex time budget, the optional overall deadline and the field name: every regex built from the template
(``tag_pattern``, ``string_delims``), in nested value parsers too, runs through `run_regex` under it.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import regex

from .budget import NO_LIMITS, ParseContext, run_regex
from .regex_cost import CACHED_PATTERN_SIZE, compile_pattern, pattern_weight, sized_cache, too_large

# Placeholder markers for strings pulled out by `string_delims`: control characters that real model output never
# contains; input that does contain them is refused rather than mis-parsed.
_HOLE_OPEN, _HOLE_CLOSE = "\x01", "\x02"
_HOLE = regex.compile("\x01(\\d+)\x02")
_BARE_KEY = regex.compile(r"(?<=[{,])(\w+):")


def _compiled(source: Any):
    """``regex.compile(source, regex.DOTALL)`` (same errors), kept per pattern text in a cache bounded by size
    (`parsing.regex_cost.compile_pattern`)."""
    return compile_pattern(source, regex.DOTALL)


def _delimited_source(open_d: Any, close_d: Any) -> str:
    """The pattern of a ``string_delims`` pair: the text between ``open_d`` and the next ``close_d``."""
    if type(open_d) is str and type(close_d) is str:
        return _delimited_str(open_d, close_d)  # kept: `regex.escape` costs more than the match
    return _delimited_str.__wrapped__(open_d, close_d)  # uncached: `regex`'s own error for anything else


@sized_cache(CACHED_PATTERN_SIZE, lambda text, open_d, close_d: 2 * len(text))
def _delimited_str(open_d: str, close_d: str) -> str:
    return regex.escape(open_d) + r"(.*?)" + regex.escape(close_d)


def _quote_key(match) -> str:
    # A function, not the template r'"\1":': the `regex` module parses a template string on every call.
    return '"' + match.group(1) + '":'


def parse_text(body: str, args: dict, ctx: ParseContext) -> str:
    """The body, stripped of surrounding whitespace unless ``args["strip"]`` is false."""
    return body.strip() if args.get("strip", True) else body


def parse_int(body: str, args: dict, ctx: ParseContext) -> int:
    """``int`` of the stripped body; ValueError if it is not an integer."""
    return int(parse_text(body, args, ctx))


def parse_float(body: str, args: dict, ctx: ParseContext) -> float:
    """``float`` of the stripped body; ValueError if it is not a number."""
    return float(parse_text(body, args, ctx))


def parse_bool(body: str, args: dict, ctx: ParseContext) -> bool:
    """True iff the stripped, lower-cased body is ``true`` or ``1``."""
    return parse_text(body, args, ctx).lower() in ("true", "1")


def parse_json(body: str, args: dict, ctx: ParseContext) -> Any:
    """JSON with dialect knobs for what models emit.

    ``args``: ``string_delims`` (list of ``[open, close]``: text between them becomes a JSON string),
    ``unquoted_keys`` (bare identifier keys right after ``{`` or ``,`` get quoted), ``allow_non_json``
    (return the stripped body instead of raising).

    Raises:
        ValueError: not JSON (after the dialect rewrites), or the body contains the reserved characters
            U+0001/U+0002 while ``string_delims`` is set.
    """
    string_delims = args.get("string_delims", [])
    if string_delims and (_HOLE_OPEN in body or _HOLE_CLOSE in body):
        raise ValueError("json: input contains reserved sentinel characters (\\x01/\\x02); cannot parse safely.")
    rewritten = body
    pulled: list[str] = []

    def pull(match) -> str:
        pulled.append(match.group(1))
        return f"{_HOLE_OPEN}{len(pulled) - 1}{_HOLE_CLOSE}"

    for i, (open_d, close_d) in enumerate(string_delims):
        source = _delimited_source(open_d, close_d)
        rest = 0
        if type(open_d) is str and type(close_d) is str and open_d and close_d:
            rewritten, rest = _pull_delimited(rewritten, open_d, close_d, pulled)
            if rest == -1:
                continue
        done, rewritten = rewritten[:rest], rewritten[rest:]
        rewritten = done + run_regex(_compiled(source), "sub", pull, rewritten, limits=ctx, field=ctx.field,
                                     role=f"{ctx.path}string_delims[{i}]", source=source)
    if args.get("unquoted_keys", False):
        rewritten = _BARE_KEY.sub(_quote_key, rewritten)
    if pulled:  # one pass (a replace per string was quadratic: 32,000 strings in 256 KB took 10 s)
        rewritten = _HOLE.sub(lambda m: _JSON_STRING(pulled[int(m.group(1))]), rewritten)
    try:
        return json.loads(rewritten)
    except json.JSONDecodeError as exc:
        if args.get("allow_non_json"):
            return parse_text(body, args, ctx)
        if rewritten == body:
            raise ValueError(f"json parser could not parse region as JSON.\nContent: {body!r}\nError: {exc}") from exc
        raise ValueError(f"json: could not parse after dialect transforms.\n"
                         f"Original: {body!r}\nTransformed: {rewritten!r}\nError: {exc}") from exc


def _pull_delimited(text: str, open_d: str, close_d: str, pulled: list) -> tuple[str, int]:
    """The ``string_delims`` rewrite of ``text`` (what ``sub`` of ``open_d(.*?)close_d`` with `parse_json`'s ``pull``
    gives) by ``str.find``, as far as it is linear: ``(rewritten, -1)`` when done; ``(rewritten, i)`` when the
    opener at ``i`` of the rewritten text has no closer after it: the rest, from ``i``, is left to the regex (each
    later opener then scans to the end of the text, quadratic work the regex's time budget must see, as in the
    reference). Both strings non-empty; the strings between the pair are appended to ``pulled``.

    With DOTALL, ``.*?`` takes any text, so the regex's leftmost match starts at the first opener with a closer
    after it, and ends at the first closer after that opener; the search goes on from there."""
    out = []
    pos = 0
    width, close_width = len(open_d), len(close_d)
    while True:
        start = text.find(open_d, pos)
        if start == -1:
            break
        stop = text.find(close_d, start + width)
        if stop == -1:
            out.append(text[pos:start])
            done = "".join(out)
            return done + text[start:], len(done)
        out.append(text[pos:start])
        pulled.append(text[start + width:stop])
        out.append(f"{_HOLE_OPEN}{len(pulled) - 1}{_HOLE_CLOSE}")
        pos = stop + close_width
    if not pos:
        return text, -1
    out.append(text[pos:])
    return "".join(out), -1


def _parse_nested(raw: Any, value_parser: dict | None, ctx: ParseContext) -> Any:
    if value_parser is None:
        return raw
    return parse_content(raw, value_parser.get("name", "text"), value_parser.get("args", {}), ctx.nested("value_parser"))


@sized_cache(CACHED_PATTERN_SIZE, pattern_weight)
def _tag_pattern(source: str) -> tuple[Any, str | None, int | None, int | None]:
    """A string ``tag_pattern`` read once: ``(compiled, refused, key group, value group)``. ``refused``: why the
    pattern is too large to compile (`too_large`; then nothing is compiled). The groups are the numbers of the
    named groups ``key`` and ``value`` (None: the pattern has no such group). A pattern that does not compile
    raises ``regex.error`` on every call (nothing is kept)."""
    why = too_large(source)
    if why is not None:
        return None, why, None, None
    compiled = compile_pattern(source, regex.DOTALL)
    index = compiled.groupindex
    return compiled, None, index.get("key"), index.get("value")


def parse_xml_inline(body: str, args: dict, ctx: ParseContext) -> dict:
    """Flat XML-like tags to an object.

    ``args``: ``tag_pattern`` (required regex with named groups ``key`` and ``value``), ``value_parser``
    (``{"name": parser, "args": {...}}`` applied to each value), ``merge_duplicates`` (repeated keys collect
    into a list instead of the last one winning).

    Raises:
        ValueError: no ``tag_pattern``, or a match without a ``key`` group.
        regex.error: ``tag_pattern`` does not compile (transformers does not check it at load time either).
        PatternTimeoutError: ``tag_pattern`` (or a nested parser's) ran past the per-call budget.
        BudgetExceededError: the overall deadline passed.
    """
    tag_pattern = args.get("tag_pattern")
    if tag_pattern is None:
        raise ValueError("xml-inline: 'tag_pattern' content_arg is required")
    if type(tag_pattern) is str:
        compiled, why, key_group, value_group = _tag_pattern(tag_pattern)
        if why is not None:  # compiling it alone would take seconds and gigabytes
            raise ValueError(f"xml-inline: {ctx.path}tag_pattern refused: {why}")
    else:  # a str subclass, or a non-string pattern (`regex`'s own reading or error), read on every call
        why = too_large(tag_pattern) if isinstance(tag_pattern, str) else None
        if why is not None:
            raise ValueError(f"xml-inline: {ctx.path}tag_pattern refused: {why}")
        compiled = _compiled(tag_pattern)
        index = compiled.groupindex
        key_group, value_group = index.get("key"), index.get("value")
    value_parser = args.get("value_parser")
    merge = args.get("merge_duplicates", False)
    matches = run_regex(compiled, "finditer", body, limits=ctx, field=ctx.field, role=f"{ctx.path}tag_pattern",
                        source=tag_pattern)
    if matches and key_group is None:
        raise ValueError(f"xml-inline: tag_pattern must have a named group 'key'. Pattern: {tag_pattern}")
    return _tags_object(matches, key_group, value_group, value_parser, merge, ctx, tag_pattern)


def _tags_object(matches: list, key_group: int, value_group: int | None, value_parser: Any, merge: Any,
                 ctx: ParseContext, tag_pattern: str) -> dict:
    """`parse_xml_inline`'s object from its ``tag_pattern`` matches."""
    out: dict[str, Any] = {}
    for m in matches:
        key = m.group(key_group)
        if key is None:  # the group took no part in this match
            raise ValueError(f"xml-inline: tag_pattern must have a named group 'key'. Pattern: {tag_pattern}")
        value = m.group(value_group) if value_group is not None else ""
        if value_parser is not None:
            value = _parse_nested(value, value_parser, ctx)
        if merge and key in out:
            if not isinstance(out[key], list):
                out[key] = [out[key]]
            out[key].append(value)
        else:
            out[key] = value
    return out


def xml_inline_reader(args: Any) -> Callable[[str, ParseContext], dict] | None:
    """``lambda body, ctx: parse_xml_inline(body, args, ctx)`` for ``args`` read once (a field's ``content_args``,
    read when its template is first parsed) where they are a dict with a string ``tag_pattern``: the same value and
    errors, without reading the arguments again at every region close. The pattern is read at the first close
    (`_tag_pattern`: compiled then, as `parse_xml_inline` does, inside that close's time budget) and kept by the
    reader from then on, as the template keeps its delimiters' patterns; one refused, or without a ``key`` group,
    goes to `parse_xml_inline` for its error at every close. None for any other ``args``."""
    if type(args) is not dict:
        return None
    tag_pattern = args.get("tag_pattern")
    if type(tag_pattern) is not str:
        return None
    value_parser = args.get("value_parser")
    merge = args.get("merge_duplicates", False)
    read_once = None  # `_tag_pattern`'s answer, once it compiled a usable pattern (the first close that reads it)

    def read(body: str, ctx: ParseContext) -> dict:
        nonlocal read_once
        if read_once is None:
            read_once = _tag_pattern(tag_pattern)  # (regex.error as parse_xml_inline's: kept only once it compiles)
            if read_once[1] is not None or read_once[2] is None:
                read_once = None
                return parse_xml_inline(body, args, ctx)
        compiled, _, key_group, value_group = read_once
        matches = run_regex(compiled, "finditer", body, limits=ctx, field=ctx.field, role=f"{ctx.path}tag_pattern",
                            source=tag_pattern)
        return _tags_object(matches, key_group, value_group, value_parser, merge, ctx, tag_pattern)
    return read


def parse_kv_lines(body: str, args: dict, ctx: ParseContext) -> dict:
    """``key<kv_sep>value`` lines to an object.

    ``args``: ``line_sep`` (default newline), ``kv_sep`` (default ``:``; split at its first occurrence),
    ``strip`` (default true), ``value_parser``. Empty lines and lines without ``kv_sep`` are skipped.
    """
    line_sep = args.get("line_sep", "\n")
    kv_sep = args.get("kv_sep", ":")
    value_parser = args.get("value_parser")
    out: dict[str, Any] = {}
    for line in body.split(line_sep):
        line = parse_text(line, args, ctx)
        if not line or kv_sep not in line:
            continue
        key, value = line.split(kv_sep, 1)
        out[parse_text(key, args, ctx)] = _parse_nested(parse_text(value, args, ctx), value_parser, ctx)
    return out


CONTENT_PARSERS: dict[str, Callable[[str, dict, ParseContext], Any]] = {
    "text": parse_text,
    "int": parse_int,
    "float": parse_float,
    "bool": parse_bool,
    "json": parse_json,
    "xml-inline": parse_xml_inline,
    "kv-lines": parse_kv_lines,
}


#: The ``args`` keys each content parser reads (a field's ``content_args``, or a nested ``value_parser``'s ``args``).
#: A parser ignores any other key, so a misspelt one (``strin_delims``) silently does nothing: the lint names the
#: known keys from here (tests/parsing/test_content_args.py checks this table against the parsers' code). ``json``
#: reads ``strip`` for its ``allow_non_json`` fallback to text; ``int``/``float``/``bool`` strip as ``text`` does.
CONTENT_ARGS: dict[str, tuple[str, ...]] = {
    "text": ("strip",),
    "int": ("strip",),
    "float": ("strip",),
    "bool": ("strip",),
    "json": ("string_delims", "unquoted_keys", "allow_non_json", "strip"),
    "xml-inline": ("tag_pattern", "value_parser", "merge_duplicates"),
    "kv-lines": ("line_sep", "kv_sep", "strip", "value_parser"),
}
#: The keys of a nested ``value_parser`` object (``{"name": parser, "args": {...}}``).
VALUE_PARSER_KEYS: tuple[str, ...] = ("name", "args")


def quick_parser(name: str, args: Any) -> Callable[[str], Any] | None:
    """A one-argument function equal to ``parse_content(body, name, args, ctx)`` wherever it returns, for a parser
    that with these ``args`` runs no regex and needs no context: ``text`` (``str.strip``, or the body as is) and
    ``json`` without dialect rewrites (`json_value`, what ``json.loads`` gives). Where it raises ValueError, `parse_content` gives the
    parser's own fallback (``allow_non_json``) or error. None: no such function (every other case).

    A region close calls it instead of `parse_content`: the argument lookups cost more than a short body's parse.
    """
    if type(args) is not dict:
        return None
    if name == "text":
        return str.strip if args.get("strip", True) else str
    if name == "json" and not args.get("unquoted_keys", False):
        delims = args.get("string_delims", [])
        # only an empty list (or string, or object) skips the rewrites: `parse_json` iterates any other value, and
        # null, false or 0 raise TypeError there, as in the reference
        if type(delims) in (list, str, dict) and not delims:
            return json_value
    return None


# ``json.dumps`` of a string, with its default arguments (what it calls for a ``str``).
_JSON_STRING = json.encoder.encode_basestring_ascii
_JSON_DECODER = json.JSONDecoder()
_JSON_SCAN = _JSON_DECODER.scan_once
_JSON_SPACE = json.decoder.WHITESPACE.match


def json_value(text: str) -> Any:
    """``json.loads(text)`` for a ``str``: the same value, and a ValueError wherever it raises one (not always with
    its message), RecursionError alike. The steps of ``loads`` -> ``JSONDecoder.decode`` -> ``raw_decode`` in one
    call: three Python calls cost about a third of decoding a short tool call."""
    if text.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    try:
        value, end = _JSON_SCAN(text, _JSON_SPACE(text, 0).end())
    except StopIteration:
        raise ValueError("Expecting value") from None
    if _JSON_SPACE(text, end).end() != len(text):
        raise ValueError("Extra data")
    return value


def parse_content(body: str, name: str, args: dict, ctx: ParseContext = NO_LIMITS) -> Any:
    """Run content parser ``name`` on ``body`` with ``args`` under ``ctx`` (default: no time limits).

    Raises:
        KeyError: unknown parser name (only reachable through a nested ``value_parser``).
        ValueError: the parser rejects the body.
        PatternTimeoutError, BudgetExceededError: a regex of the parser ran past ``ctx``'s limits.
    """
    return CONTENT_PARSERS[name](body, args, ctx)
