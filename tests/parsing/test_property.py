"""Property-based differential test: random valid templates, outputs stitched from their delimiters
(whole, partial, near-miss) and filler text, random prefixes and random chunkings, compared with the
reference through the same harness and divergence rule as the corpus (see differential.py).

Templates are generated so the reference always terminates: explicit regions only get closes that
cannot match the empty string; zero-width patterns are used as opens (lookaheads) and implicit closes.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import differential as d
from parsing.streams import fixed_chunks

ANCHOR = "<|a|>"

# (pattern, strings that match it, is_zero_width_capable)
REGEX_POOL = [
    (r"<a\s*>", ["<a>", "<a \n>"], False),
    (r"</a>(?:\s*</w>)?", ["</a>", "</a>\n</w>", "</a> ", "</w>"], False),
    (r"\[T\](?:\[A\])?", ["[T]", "[T][A]", "[A]"], False),
    (r"<b(?: x=\d+)?>", ["<b>", "<b x=12>", "<b x="], False),
    (r"\|+", ["|", "||", "|||"], False),
    (r"a+b", ["ab", "aab", "a"], False),
    (r"<<|>>", ["<<", ">>"], False),
    (r"(?:</b>|\n\n)", ["</b>", "\n\n", "\n"], False),
    (r"(?<=a)b>", ["ab>", "b>", "a"], False),  # lookbehind into text before the match (and before the chunk)
    (r"\bcall\b", ["call", "call ", "xcall", "calls"], False),
    (r"</(.*?)>", ["</x>", "</>", "</a b>"], False),
    (r"(\w)\1!", ["aa!", "ab!", "bb!"], False),
    (r"^\s*<s>", ["<s>", " <s>", "\n<s>"], False),  # ^ = start of the whole stream
    (r"(?m)^##", ["##", "\n##", "#"], False),  # inline MULTILINE: after any newline
    (r"<t(?!ool)", ["<t", "<tool", "<to"], False),
    (r"(?:ab|abc)d?", ["ab", "abc", "abcd", "abd"], False),
    (r"x{2,3}", ["xx", "xxx", "xxxx"], False),
]
ZERO_WIDTH_OPENS = [(r"(?=\[T\])", ["[T]"]), (r"(?=<b)", ["<b>"]), (r"(?=\{)", ["{"])]
ZERO_WIDTH_IMPLICIT_CLOSES = [(r"$", ["\n"]), (r"\Z", [""]), (r"(?=<a>)", ["<a>"]), (r"(?=\|)", ["|"])]
NAMED_OPENS = [(r"<c (?P<n>\w+)>", ["<c f>", "<c xy>", "<c "]), (r"<c(?: (?P<n>\w))?>", ["<c>", "<c q>"])]
LITERAL_POOL = ["<a>", "</a>", "<b>", "</b>", "<", "<<", "[T]", "[T][A]", "|", "||", "\n", "\n\n", "ab", "a", "<|x|>", "</w>"]
FILLER = "ab <>/|[]TAw\nx=1{}c#sd!"
FIELD_NAMES = ["content", "reasoning_content", "tool_calls", "a", "b", "z"]


@st.composite
def delimiter(draw, zero_width_ok=False, named_ok=False):
    """-> (spec_key_kind 'lit'|'re', value, sample strings, has_named_groups)"""
    kind = draw(st.sampled_from(["lit", "lit", "list", "re", "re"] + (["zw"] if zero_width_ok else [])
                                + (["named"] if named_ok else [])))
    if kind == "lit":
        s = draw(st.sampled_from(LITERAL_POOL))
        return "lit", s, [s], False
    if kind == "list":
        lits = draw(st.lists(st.sampled_from(LITERAL_POOL), min_size=1, max_size=3))
        return "lit", lits, list(lits), False
    if kind == "re":
        pat, samples, _ = draw(st.sampled_from(REGEX_POOL))
        return "re", pat, samples, False
    if kind == "zw":
        pat, samples = draw(st.sampled_from(ZERO_WIDTH_OPENS))
        return "re", pat, samples, False
    pat, samples = draw(st.sampled_from(NAMED_OPENS))
    return "re", pat, samples, True


@st.composite
def templates(draw):
    names = draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=4, unique=True))
    has_implicit = draw(st.booleans())
    fields, samples = {}, []
    for i, name in enumerate(names):
        spec: dict = {}
        named = False
        if not (has_implicit and i == 0):
            k, v, ss, named = draw(delimiter(zero_width_ok=True, named_ok=True))
            spec["open" if k == "lit" else "open_pattern"] = v
            samples += ss
            if draw(st.integers(0, 4)) > 0:  # mostly closed; explicit closes never match empty
                k, v, ss, _ = draw(delimiter())
                spec["close" if k == "lit" else "close_pattern"] = v
                samples += ss
        elif draw(st.booleans()):
            if draw(st.booleans()):
                pat, ss = draw(st.sampled_from(ZERO_WIDTH_IMPLICIT_CLOSES))
                spec["close_pattern"] = pat
            else:
                k, v, ss, _ = draw(delimiter())
                spec["close" if k == "lit" else "close_pattern"] = v
            samples += ss
        content = draw(st.sampled_from(["text"] * 8 + ["json", "kv-lines", "int", "bool"]))
        if content != "text":
            spec["content"] = content
        if content == "json":
            spec["content_args"] = {"allow_non_json": True}
        elif content == "text" and draw(st.integers(0, 3)) == 0:
            spec["content_args"] = {"strip": False}
        if draw(st.integers(0, 3)) == 0:
            spec["repeats"] = True
            if content == "text" and draw(st.booleans()):
                spec["join"] = draw(st.sampled_from(["", "|", "\n"]))
        if named or draw(st.integers(0, 5)) == 0:
            spec["transform"] = {"v": "{content}", "n": "{n}"} if named and draw(st.booleans()) else {"v": "{content}", "k": 1}
        fields[name] = spec
    template = {"start_anchor": ANCHOR, "fields": fields}
    if draw(st.booleans()):
        template["defaults"] = {"role": "assistant"}
    return template, samples


@st.composite
def stitched(draw, samples, max_pieces=10, min_pieces=2):
    pieces = []
    for _ in range(draw(st.integers(min_pieces, max_pieces))):
        choice = draw(st.integers(0, 4))
        if choice == 0:
            pieces.append(draw(st.text(alphabet=FILLER, min_size=1, max_size=5)))
        else:
            s = draw(st.sampled_from(samples)) if samples else ""
            if s and choice == 4 and len(s) > 1:  # near miss: a proper prefix of a delimiter
                s = s[: draw(st.integers(1, len(s) - 1))]
            pieces.append(s)
    return "".join(pieces)


@st.composite
def scenarios(draw):
    template, samples = draw(templates())
    output = draw(stitched(samples))
    mode = draw(st.sampled_from(["empty", "empty", "anchored", "no_anchor"]))
    if mode == "empty":
        prefix = ""
    elif mode == "anchored":
        prefix = draw(stitched(samples, 3, 0)) + ANCHOR + draw(stitched(samples, 3, 0))
    else:
        prefix = draw(stitched(samples, 3, 0))
    chunk_lists = []
    for _ in range(3):
        cuts = sorted(set(draw(st.lists(st.integers(0, len(output)), max_size=max(1, len(output))))))
        bounds = [0] + cuts + [len(output)]
        chunk_lists.append([output[a:b] for a, b in zip(bounds, bounds[1:])])
    return template, prefix, output, chunk_lists


@settings(max_examples=2000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_random_templates_match_reference(scenario):
    template, prefix, output, chunk_lists = scenario
    runner = d.CaseRunner("property", template, prefix, output)
    labelled = [("whole", [output]), ("size1", fixed_chunks(output, 1))]
    labelled += [(f"drawn{i}", ch) for i, ch in enumerate(chunk_lists)]
    report = runner.run_all(labelled)
    assert not report.mismatches, (
        f"template={template!r}\nprefix={prefix!r}\noutput={output!r}\n" + d.format_report(report, 3))


# ---------------------------------------------------------------------------------------------
# Focused properties: content parsers and tool-argument typing on random bodies (one-shot + two
# chunkings each; the scanning is trivial here, the value computation is what varies).

NUMERICISH = list("0123456789.eE+-_ x") + ["nan", "inf", "Infinity", "true", "True", "FALSE", "None", "null", "NULL",
                                           "\u0663", "\u00b2", "0x1", "[", "]", "{", "}", '"a"', ":", ",", "1_0", " "]
WHOLE_VALUES = ["3", "3.0", "3.5", "-2", "1e3", "0", "1", " 7 ", "+4", '{"a": 1}', "[1, 2]", "[", "true", " False ", "None",
                "null", "nan", "-inf", "1_000", "\u0663", "x", "", "0.0", "-0", "2E2"]
raw_values = st.one_of(st.sampled_from(WHOLE_VALUES), st.lists(st.sampled_from(NUMERICISH), max_size=5).map("".join))
SCHEMA_TYPES = ["integer", "number", "boolean", "null", "object", "array"] * 2 + ["string", "weird"]


@st.composite
def schemas(draw):
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return {"type": draw(st.sampled_from(SCHEMA_TYPES))}
    if kind == 1:
        return {"type": draw(st.lists(st.sampled_from(SCHEMA_TYPES), min_size=1, max_size=3))}
    if kind == 2:
        union = draw(st.sampled_from(["anyOf", "oneOf"]))
        return {union: [{"type": t} for t in draw(st.lists(st.sampled_from(SCHEMA_TYPES), min_size=1, max_size=3))]}
    if kind == 3:
        return {"type": draw(st.sampled_from(SCHEMA_TYPES)), "nullable": draw(st.booleans())}
    return draw(st.sampled_from([{}, {"description": "x"}, {"type": None}, {"anyOf": None}]))


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.tuples(schemas(), raw_values, st.sampled_from([1, 1, 1, 2, 3])), min_size=1, max_size=6))
def test_tool_argument_typing_matches_reference(params):
    props, body = {}, ""
    for i, (schema, raw, repeat) in enumerate(params):
        props[f"p{i}"] = schema
        body += f"<parameter=p{i}>{raw}</parameter>" * repeat  # repeats -> merge_duplicates lists
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": props}}}]
    template = {"start_anchor": ANCHOR, "fields": {"content": {}, "tool_calls": {
        "open_pattern": r"<function=(?P<name>\w+)>", "close": "</function>", "content": "xml-inline", "repeats": True,
        "content_args": {"tag_pattern": r"<parameter=(?P<key>\w+)>(?P<value>.*?)</parameter>", "merge_duplicates": True},
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}}}
    output = f"<function=f>{body}</function>"
    runner = d.CaseRunner("typing", template, "", output, tools)
    report = runner.run_all([("whole", [output]), ("size7", fixed_chunks(output, 7))])
    assert not report.mismatches, f"tools={tools!r}\noutput={output!r}\n" + d.format_report(report, 3)


JSONISH = list('{}[],:"\' \n') + ["a", "b1", "ключ", "12", "-3.5e1", "true", "null", "NaN", "<|\"|>", "«", "»", "\\", "\\n", "\x01"]


@st.composite
def content_specs(draw):
    parser = draw(st.sampled_from(["text", "int", "float", "bool", "json", "xml-inline", "kv-lines"]))
    args: dict = {}
    if draw(st.booleans()):
        args["strip"] = draw(st.booleans())
    if parser == "json":
        if draw(st.booleans()):
            args["unquoted_keys"] = True
        if draw(st.booleans()):
            args["string_delims"] = draw(st.lists(st.sampled_from([["<|\"|>", "<|\"|>"], ["«", "»"], ["'", "'"]]), max_size=2))
        if draw(st.booleans()):
            args["allow_non_json"] = True
    elif parser == "xml-inline":
        args["tag_pattern"] = draw(st.sampled_from([r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", r"(?P<key>\w+)=(?P<value>[^,]*)"]))
        args["merge_duplicates"] = draw(st.booleans())
    elif parser == "kv-lines":
        args["line_sep"] = draw(st.sampled_from(["\n", ",", ";", "\r\n"]))
        args["kv_sep"] = draw(st.sampled_from([":", "=", ": "]))
    if parser in ("xml-inline", "kv-lines") and draw(st.booleans()):
        args["value_parser"] = {"name": draw(st.sampled_from(["text", "int", "json", "bool"])),
                                "args": {"allow_non_json": True} if draw(st.booleans()) else {}}
    return parser, args


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(content_specs(), st.lists(st.sampled_from(JSONISH + ["<a>", "</a>", "x=1", ",", "k: v", "\n", "1", " 2 "]), max_size=12).map("".join))
def test_content_parsers_match_reference(spec, body):
    parser, args = spec
    template = {"start_anchor": ANCHOR, "fields": {"content": {}, "v": {
        "open": "<<V>>", "close": "<</V>>", "content": parser, "content_args": args}}}
    output = f"pre<<V>>{body}<</V>>post"
    runner = d.CaseRunner("content", template, "", output)
    report = runner.run_all([("whole", [output]), ("size5", fixed_chunks(output, 5))])
    assert not report.mismatches, f"template={template!r}\noutput={output!r}\n" + d.format_report(report, 3)
