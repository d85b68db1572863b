"""Bad templates and hostile patterns: clear errors, no hang."""

import json
import time

import pytest

from parsing import PatternTimeoutError, ResponseParser, TemplateError, load_template, parse_response
from parsing.template import MAX_PATTERN_CHARS, locate_json_path

EVIL = {"start_anchor": "X", "fields": {"x": {"open_pattern": r"(a|aa)+$", "close": "</x>"}, "content": {}}}


def test_catastrophic_pattern_times_out_with_a_clear_error():
    start = time.monotonic()
    with pytest.raises(PatternTimeoutError) as info:
        parse_response("a" * 40 + "c", EVIL, prefix="", regex_timeout=0.2)
    assert time.monotonic() - start < 5
    err = info.value
    assert err.field == "x" and err.role == "open" and err.pattern == r"(a|aa)+$"
    assert "field 'x'" in str(err) and "(a|aa)+$" in str(err)


def test_catastrophic_tag_pattern_times_out():
    template = {"start_anchor": "X", "fields": {"args": {
        "open": "<a>", "close": "</a>", "content": "xml-inline",
        "content_args": {"tag_pattern": r"(?P<key>(x|xx)+)$(?P<value>)"}}}}
    with pytest.raises(PatternTimeoutError) as info:
        parse_response("<a>" + "x" * 40 + "c</a>", template, prefix="", regex_timeout=0.2)
    assert info.value.role == "tag_pattern" and info.value.field == "args"


def test_oversized_templates_refused():
    with pytest.raises(TemplateError) as info:
        load_template({"start_anchor": "X", "fields": {"x": {"open_pattern": "a" * (MAX_PATTERN_CHARS + 1)}}})
    assert info.value.path == "fields.x.open_pattern"
    many = {"start_anchor": "X", "fields": {f"f{i}": {"open": f"<{i}>"} for i in range(300)}}
    with pytest.raises(TemplateError):
        load_template(many)


def test_bad_regex_reports_path_and_position():
    with pytest.raises(TemplateError) as info:
        load_template({"start_anchor": "X", "fields": {"tool_calls": {"open_pattern": "<tool(_call>"}}})
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == "fields.tool_calls.open_pattern"
    assert err.pattern_pos == "<tool(_call>".index("(")  # the unclosed group, not where `regex` gave up


def test_json_text_errors_carry_line_and_column():
    text = '{\n  "start_anchor": "X",\n  "fields": {\n    "a": {"open": "<a>", "close": ["</a>", ""]}\n  }\n}'
    with pytest.raises(TemplateError) as info:
        load_template(text)
    err = info.value
    assert err.path == "fields.a.close[1]"
    assert (err.line, err.column) == (4, text.splitlines()[3].index('""') + 1)
    with pytest.raises(TemplateError) as info:
        load_template('{"start_anchor": "X",\n "fields": {,}}')
    assert info.value.line == 2


def test_locate_json_path_finds_keys_and_items():
    spec = {"start_anchor": "X", "fields": {"a": {"open": ["<a>", "<b>"]}, "b.c": {"close": "y"}}}
    text = json.dumps(spec, indent=2)
    line, col = locate_json_path(text, "fields.a.open[1]")
    assert text.splitlines()[line - 1][col - 1:].startswith('"<b>"')
    line, col = locate_json_path(text, "fields.a")
    assert text.splitlines()[line - 1][col - 1:].startswith('"a"')


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_locate_json_path_finds_a_character_of_a_string_past_its_escapes(ensure_ascii):
    # \\ and \" take two columns, \u00e9 six, a character outside the BMP one (raw) or twelve (a surrogate
    # pair of escapes), a lone surrogate six: the column of pattern character k is where the JSON text of the
    # string's first k characters ends
    pattern = 'a\\"b\u00e9\U0001F600\ud800\\[x'
    spec = {"start_anchor": "X", "fields": {"a": {"open_pattern": pattern, "close": ["y", pattern]}}}
    text = json.dumps(spec, indent=2, ensure_ascii=ensure_ascii)
    for path in ("fields.a.open_pattern", "fields.a.close[1]"):
        key_line, _ = locate_json_path(text, path)
        for k in range(len(pattern) + 1):
            line, col = locate_json_path(text, path, k)
            row = text.splitlines()[line - 1]
            opening = row.index(json.dumps(pattern, ensure_ascii=ensure_ascii))
            assert line == key_line and json.loads(row[opening:col - 1] + '"') == pattern[:k], (path, k)
        assert text.splitlines()[line - 1][col - 1] == '"'  # k == len(pattern): the closing quote
        assert locate_json_path(text, path, len(pattern) + 1) == (None, None)  # past the string's end
    assert locate_json_path(text, "fields.a", 0) == (None, None)  # not a string
    assert locate_json_path(text, "fields.b.open_pattern", 0) == (None, None)  # not there: no ancestor either
    written = '{"p": "a\\/b\\n\\tc("}'  # typed by hand: \/ (json.dumps never writes it), \n, \t
    assert locate_json_path(written, "p", json.loads(written)["p"].index("(")) == (1, written.index("(") + 1)


def test_template_file_and_text_inputs(tmp_path):
    spec = {"start_anchor": "X", "fields": {"content": {}}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(spec))
    assert load_template(path).spec == spec
    assert load_template(str(path)).spec == spec
    assert load_template(json.dumps(spec)).spec == spec
    compiled = load_template(spec)
    assert load_template(compiled) is compiled


def test_prefix_none_and_finalize_twice():
    with pytest.raises(ValueError):
        ResponseParser({"start_anchor": "X", "fields": {"content": {}}})
    parser = ResponseParser({"start_anchor": "X", "fields": {"content": {}}}, "")
    parser.finalize()
    with pytest.raises(RuntimeError):
        parser.feed("x")
    with pytest.raises(RuntimeError):
        parser.finalize()


def test_deeply_nested_templates_get_a_template_error():
    with pytest.raises(TemplateError) as info:
        load_template("[" * 5000 + "]" * 5000)
    assert "nested too deeply" in str(info.value)
    transform: object = "{content}"
    for _ in range(5000):
        transform = [transform]
    with pytest.raises(TemplateError):
        load_template({"start_anchor": "X", "fields": {"x": {"open": "<x>", "transform": transform}}})


def _in_fresh_thread(fn):
    """``fn()``'s result, or the exception it raised, run at the bottom of a new thread's stack: how deep a
    regex may nest before Python's recursion limit stops a compile depends on the caller's stack depth."""
    import threading

    box = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - the exception is the result under test
            box["value"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return box["value"]


def _nested_groups_template(depth: int) -> dict:
    return {"start_anchor": "<s>",
            "fields": {"content": {"open_pattern": "^", "close_pattern": "(" * depth + "a" + ")" * depth}}}


def test_deeply_nested_regex_groups_behave_as_in_the_reference():
    from transformers.utils.chat_parsing import parse_response as reference_parse

    # 290 groups: the regex module compiles it at this depth (the reference parses it); our readings of the
    # pattern (reach, prefilter, shapes) recurse more per group and used to refuse it.
    template = _nested_groups_template(290)
    expected = _in_fresh_thread(lambda: reference_parse("xxa", template, prefix="<s>"))
    assert expected == {"content": "xx"}
    assert _in_fresh_thread(lambda: parse_response("xxa", template, prefix="<s>")) == expected

    def streamed():
        parser = ResponseParser(template, "<s>")
        for char in "xxa":
            parser.feed(char)
        return parser.finalize()[0]

    assert _in_fresh_thread(streamed) == expected
    # 400 groups: too deep for the regex module; the reference raises RecursionError, ours too, naming the pattern.
    template = _nested_groups_template(400)
    assert isinstance(_in_fresh_thread(lambda: reference_parse("xxa", template, prefix="<s>")), RecursionError)
    error = _in_fresh_thread(lambda: parse_response("xxa", template, prefix="<s>"))
    assert isinstance(error, RecursionError) and isinstance(error, TemplateError)
    assert error.path == "fields.content.close_pattern"


# `regex.compile` writes out counted repeats: `a{9000000}` alone takes 8 s and 2.4 GB to compile. These stay small
# enough (about 1 s and 300 MB unguarded) that the tests fail quickly rather than hang where the check is missing.
BIG_REPEAT = "(?:a{1000}){1000}"


@pytest.mark.parametrize("where", ["start_anchor_pattern", "fields.x.open_pattern", "fields.x.close_pattern",
                                   "fields.x.content_args.tag_pattern",
                                   "fields.x.content_args.value_parser.args.value_parser.args.tag_pattern"])
def test_patterns_too_large_to_compile_are_refused_before_compiling(where):
    from parsing.regex_cost import MAX_PATTERN_SIZE, compile_size

    template = {"start_anchor": "X", "fields": {"x": {"open": "<x>", "close": "</x>", "content": "xml-inline",
                                                      "content_args": {"tag_pattern": "(?P<key>k)(?P<value>v)"}},
                                                "content": {}}}
    if where == "start_anchor_pattern":
        del template["start_anchor"]
        template["start_anchor_pattern"] = "X" + BIG_REPEAT
    elif where.endswith("_pattern") and where.count(".") == 2:
        key = where.rsplit(".", 1)[1]
        del template["fields"]["x"][key.replace("_pattern", "")]
        template["fields"]["x"][key] = "<" + BIG_REPEAT + ">"
    else:
        inner = {"tag_pattern": "(?P<key>k)(?P<value>" + BIG_REPEAT + ")"}
        args = template["fields"]["x"]["content_args"]
        if "value_parser" in where:
            args["value_parser"] = {"name": "xml-inline", "args": {"tag_pattern": "(?P<key>k)(?P<value>.)",
                                                                   "value_parser": {"name": "xml-inline",
                                                                                    "args": inner}}}
        else:
            args.update(inner)
    assert compile_size(BIG_REPEAT) == 1_000_000 > MAX_PATTERN_SIZE
    with pytest.raises(TemplateError) as info:
        load_template(template)
    assert info.value.path == where and "refused" in str(info.value) and "{1,}" in str(info.value)


def test_compile_size_counts_repeat_minimums_through_nesting_and_branches():
    from parsing.regex_cost import compile_size

    assert compile_size("a{9000000}") == 9_000_000
    assert compile_size("((((a{100}){100}){100}){100})") == 100_000_000
    assert compile_size("(?:ab|cd){1000}") == 4000
    assert compile_size("(?:a{1,3000}){1,3000}") == 1  # open-ended or from-1 repeats are not written out
    assert compile_size(r"\p{L}{50}x{30}") >= 50 * 30  # regex-only syntax: an upper bound


def test_the_template_s_patterns_together_are_bounded():
    from parsing.regex_cost import MAX_PATTERN_SIZE, MAX_TEMPLATE_SIZE

    each = f"b{{{MAX_PATTERN_SIZE - 10}}}"  # each under the one-pattern limit
    n = MAX_TEMPLATE_SIZE // MAX_PATTERN_SIZE + 1
    template = {"start_anchor": "X", "fields": {f"f{i}": {"open_pattern": f"<{i}>" + each, "close": "</x>"}
                                                for i in range(n)} | {"content": {}}}
    with pytest.raises(TemplateError) as info:
        load_template(template)
    assert info.value.path == f"fields.f{n - 1}.open_pattern" and "together" in str(info.value)


def test_every_library_template_is_far_below_the_compile_limits():
    import examples
    from parsing.regex_cost import MAX_PATTERN_SIZE, compile_size
    from parsing.template import _pattern_sources

    sizes = [compile_size(source) for family in examples.list_families()
             for _where, source in _pattern_sources(examples.load_family(family).template)]
    assert sizes and max(sizes) < MAX_PATTERN_SIZE // 100


def test_string_delims_rewrite_is_linear_in_the_number_of_strings():
    """64,000 pulled strings in 512 KB: one pass (0.2 s of CPU); a replace per string took minutes."""
    template = {"start_anchor": "X", "fields": {"x": {"open": "<x>", "close": "</x>", "content": "json",
                                                      "content_args": {"string_delims": [["<<", ">>"]],
                                                                       "unquoted_keys": True}}}}
    n = 64_000
    body = "{" + ",".join(f"k{i}:<<v{i}>>" for i in range(n)) + "}"
    start = time.process_time()
    out = parse_response("<x>" + body + "</x>", template, prefix="")
    assert time.process_time() - start < 10  # generous: linear is far below, quadratic far above
    assert out["x"] == {f"k{i}": f"v{i}" for i in range(n)}
