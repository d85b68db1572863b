"""Template loader: ours rejects exactly what the reference rejects, with a located error.

- every template the reference rejects -> `parsing.TemplateError` (a ValueError) with `.path` = JSON path
  of the fault and, for a bad regex, `.pattern_pos` = the offset the `regex` module reports;
- every template the reference accepts (including odd but valid ones) is accepted, with the same field
  names and implicit field;
- JSON text input: syntax errors carry line/column, located faults carry the line.
"""

from __future__ import annotations

import json

import pytest
import regex

import differential as d

if d.SELF_CHECK:
    pytest.skip("template loader tests need our `parsing` package", allow_module_level=True)

import parsing  # noqa: E402

A = "<|a|>"
OK = {"content": {}}


def T(fields, **top):
    return {"start_anchor": A, "fields": fields, **top}


def F(name, **spec):
    return T({name: spec})


# (id, template, acceptable paths (a deeper path below one of them is accepted too), bad pattern or None)
REJECTED = [
    ("not_a_dict", ["fields"], [""], None),
    ("version_2", {"version": 2, "start_anchor": A, "fields": OK}, ["version"], None),
    ("version_string", {"version": "1", "start_anchor": A, "fields": OK}, ["version"], None),
    ("unknown_top_key", T(OK, extra=1), ["", "extra"], None),
    ("defaults_not_dict", T(OK, defaults=[]), ["defaults"], None),
    ("defaults_null", T(OK, defaults=None), ["defaults"], None),
    ("fields_empty", T({}), ["fields"], None),
    ("fields_missing", {"start_anchor": A}, ["", "fields"], None),
    ("fields_list", {"start_anchor": A, "fields": [OK]}, ["fields"], None),
    ("field_not_dict", T({"x": "<t>"}), ["fields.x"], None),
    ("field_unknown_key", F("x", open="<t>", close_tag="</t>"), ["fields.x"], None),
    ("unknown_content", F("x", open="<t>", content="yaml"), ["fields.x.content"], None),
    ("open_and_open_pattern", F("x", open="<t>", open_pattern="<t>"), ["fields.x"], None),
    ("close_and_close_pattern", F("x", open="<t>", close="</t>", close_pattern="</t>"), ["fields.x"], None),
    ("open_empty_list", F("x", open=[]), ["fields.x.open"], None),
    ("open_list_non_string", F("x", open=["<t>", 3]), ["fields.x.open"], None),
    ("open_wrong_type", F("x", open=5), ["fields.x.open"], None),
    ("open_empty_string", F("x", open=""), ["fields.x.open"], None),
    ("close_empty_literal_in_list", F("x", open="<t>", close=["</t>", ""]), ["fields.x.close"], None),
    ("bad_open_regex", T({"content": {}, "tool_calls": {"open_pattern": "<tool(_call>"}}),
     ["fields.tool_calls.open_pattern"], "<tool(_call>"),
    ("bad_close_regex", F("x", open="<t>", close_pattern="</t>[a-"), ["fields.x.close_pattern"], "</t>[a-"),
    ("bad_close_regex_repeat", F("x", open="<t>", close_pattern="a{2,1}"), ["fields.x.close_pattern"], "a{2,1}"),
    ("bad_open_regex_nothing_to_repeat", F("x", open_pattern="*x"), ["fields.x.open_pattern"], "*x"),
    ("bad_open_regex_unbalanced", F("x", open_pattern="ab)c"), ["fields.x.open_pattern"], "ab)c"),
    ("bad_anchor_regex", {"start_anchor_pattern": "(?P<", "fields": OK}, ["start_anchor_pattern"], "(?P<"),
    ("join_not_string", F("x", open="<t>", close="</t>", repeats=True, join=1), ["fields.x.join"], None),
    ("join_without_repeats", F("x", open="<t>", close="</t>", join=","), ["fields.x.join", "fields.x.repeats", "fields.x"], None),
    ("transform_each_not_bool", F("x", open="<t>", transform="{content}", transform_each=1), ["fields.x.transform_each"], None),
    ("transform_each_without_transform", F("x", open="<t>", transform_each=True),
     ["fields.x.transform_each", "fields.x.transform", "fields.x"], None),
    ("transform_mixed_placeholder", F("x", open="<t>", transform="id: {content}"), ["fields.x.transform"], None),
    ("transform_mixed_placeholder_nested", F("x", open="<t>", transform={"f": ["ok", {"g": "{a}{b}"}]}), ["fields.x.transform"], None),
    ("transform_double_braces", F("x", open="<t>", transform={"v": "{{content}}"}), ["fields.x.transform"], None),
    ("named_group_open_no_transform", F("x", open_pattern=r"<t (?P<n>\w+)>"), ["fields.x.open_pattern", "fields.x", "fields.x.transform"], None),
    ("named_group_close_no_transform", F("x", open="<t>", close_pattern="</(?P<n>t)>"), ["fields.x.close_pattern", "fields.x", "fields.x.transform"], None),
    ("two_implicit_fields", T({"content": {}, "other": {"close": "x"}}), ["fields", "fields.other"], None),
    ("no_anchor", {"fields": OK}, ["", "start_anchor", "start_anchor_pattern"], None),
    ("both_anchors", {"start_anchor": "a", "start_anchor_pattern": "a", "fields": OK}, ["", "start_anchor", "start_anchor_pattern"], None),
    ("anchor_empty_list", {"start_anchor": [], "fields": OK}, ["start_anchor"], None),
    ("anchor_empty_string", {"start_anchor": "", "fields": OK}, ["start_anchor"], None),
    ("anchor_list_non_string", {"start_anchor": ["a", None], "fields": OK}, ["start_anchor"], None),
    # The reference raises TypeError for these (unhashable content name, non-string pattern); ours must
    # still reject them, as a TemplateError.
    ("content_unhashable", F("x", open="<t>", content=["text"]), ["fields.x.content"], None),
    ("open_pattern_not_string", F("x", open_pattern=5), ["fields.x.open_pattern"], None),
    ("anchor_pattern_null", {"start_anchor_pattern": None, "fields": OK}, ["start_anchor_pattern"], None),
]

ACCEPTED = [
    ("minimal", T(OK)),
    ("version_true", {"version": True, "start_anchor": A, "fields": OK}),
    ("version_float", {"version": 1.0, "start_anchor": A, "fields": OK}),
    ("no_implicit_field", T({"x": {"open": "<x>", "close": "</x>"}})),
    ("implicit_with_close_only", T({"content": {"close": "<|eot|>"}})),
    ("join_null_is_absent", F("x", open="<t>", join=None)),
    ("transform_each_false_no_transform", F("x", open="<t>", transform_each=False)),
    ("truthy_non_bool_repeats_optional", F("x", open="<t>", repeats="yes", optional="no")),
    ("content_args_unvalidated", F("x", open="<t>", content="xml-inline", content_args={"whatever": 1})),
    ("empty_anchor_pattern", {"start_anchor_pattern": "", "fields": OK}),
    ("duplicate_literals", F("x", open=["<a>", "<a>"], close=["</a>", "</b>", "</a>"])),
    ("non_placeholder_braces", F("x", open="<t>", transform={"a": "{content", "b": "{ content }", "c": "{}", "d": "{a-b}"})),
    ("named_groups_with_transform", F("x", open_pattern=r"<t (?P<n>\w+)>", close_pattern=r"</(?P<m>t)>", transform={"n": "{n}"})),
    ("named_group_in_anchor_pattern", {"start_anchor_pattern": r"(?P<who>assistant):", "fields": OK}),
    ("duplicate_group_names", F("x", open_pattern=r"(?P<a>x)|(?P<a>y)", transform="{a}")),
    ("empty_field_name", T({"": {"open": "<e>"}, "content": {}})),
    ("unicode_everything", T({"思考": {"open": "《", "close": "》"}, "content": {}}, defaults={"role": "助手"})),
    ("transform_non_string_leaves", F("x", open="<t>", transform=[1, None, True, {"k": 2.5}])),
]


def _ref_rejects(template) -> BaseException | None:
    try:
        d.ref_load(template)
    except Exception as exc:  # noqa: BLE001
        return exc
    return None


def _path_ok(path: str, allowed: list[str]) -> bool:
    for a in allowed:
        if path == a:
            return True
        if a and (path.startswith(a + ".") or path.startswith(a + "[")):
            return True
    return False


@pytest.mark.parametrize("tid,template,paths,bad_pattern", REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_like_reference(tid, template, paths, bad_pattern):
    assert _ref_rejects(template) is not None, "the reference must reject this template"
    with pytest.raises(parsing.TemplateError) as info:
        parsing.load_template(template)
    err = info.value
    assert isinstance(err, ValueError)
    assert _path_ok(err.path, paths), f"path {err.path!r} not in {paths}"
    assert isinstance(err.message, str) and err.message
    if bad_pattern is not None:
        with pytest.raises(regex.error) as rinfo:
            regex.compile(bad_pattern, regex.DOTALL)
        # `regex` gives up at the pattern's end for an unclosed construct; ours is never later than that
        assert err.pattern_pos is None or 0 <= err.pattern_pos <= rinfo.value.pos
    else:
        assert err.pattern_pos is None


@pytest.mark.parametrize("tid,template,paths,bad_pattern", REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_by_parser_and_parse_response(tid, template, paths, bad_pattern):
    with pytest.raises(ValueError):
        parsing.ResponseParser(template, "")
    with pytest.raises(ValueError):
        parsing.parse_response("x", template, prefix="")


@pytest.mark.parametrize("tid,template", ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_accepted_like_reference(tid, template):
    compiled_ref = d.ref_load(json.loads(json.dumps(template)))
    compiled = parsing.load_template(template)
    assert compiled.spec == template
    assert list(compiled.field_names) == list(template["fields"])
    assert compiled.implicit == compiled_ref.implicit
    assert parsing.load_template(compiled) is compiled
    parsing.ResponseParser(template, "").finalize()  # usable


def test_load_from_json_text_and_path(tmp_path):
    spec = T({"content": {}, "r": {"open": "<r>", "close": "</r>"}}, defaults={"role": "assistant"})
    text = json.dumps(spec, indent=2)
    assert parsing.load_template(text).spec == spec
    p = tmp_path / "t.json"
    p.write_text(text, encoding="utf-8")
    assert parsing.load_template(str(p)).spec == spec
    assert parsing.parse_response("<r>x</r>y", parsing.load_template(text), prefix="") == {
        "role": "assistant", "r": "x", "content": "y"}


@pytest.mark.parametrize("text", ['{"start_anchor": "a", "fields": ', '{\n  "start_anchor": "a",\n  "fields": {,}\n}',
                                  '{"start_anchor": "a"\n "fields": {}}'])
def test_json_syntax_error_line_column(text):
    with pytest.raises(json.JSONDecodeError) as jinfo:
        json.loads(text)
    with pytest.raises(parsing.TemplateError) as info:
        parsing.load_template(text)
    assert (info.value.line, info.value.column) == (jinfo.value.lineno, jinfo.value.colno)


@pytest.mark.parametrize("pattern,pos,why", [
    # trial 10: `regex` said 19 (the pattern's end); the fault is the unclosed `[`
    (r"(?<=a+)[^\s*<think>", r"(?<=a+)[^\s*<think>".index("["), "unterminated character set"),
    ("<tool(_call>", "<tool(_call>".index("("), "missing )"),
    ("[abc", 0, "unterminated character set"),
    ("a[b-a]c", "a[b-a]c".index("b"), "bad character range"),  # `regex` said 5, the range's end
    ("abc\\", 3, "bad escape (end of pattern)"),
    ("ab)c", 2, "unbalanced parenthesis"),  # both modules agree: unchanged
    (r"\p{Nope}", None, "unknown property"),  # `regex` says 8 (the end), stdlib `re` another fault: no position
])
def test_a_bad_regex_is_located_where_its_fault_is(pattern, pos, why):
    with pytest.raises(parsing.TemplateError) as info:
        parsing.load_template(F("x", open_pattern=pattern))
    err = info.value
    assert err.pattern_pos == pos
    with pytest.raises(regex.error) as rinfo:  # the message stays the reference's: `regex`'s own text
        regex.compile(pattern, regex.DOTALL)
    assert str(rinfo.value).startswith(why)
    assert err.message == f"Field 'x': invalid open_pattern regex: {rinfo.value}"


def test_located_fault_in_json_text_has_line():
    spec = T({"content": {}, "tool_calls": {"open": "<tool_call>", "close_pattern": "</tool_call>(", "transform": "{content}"}})
    text = json.dumps(spec, indent=2)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if '"close_pattern"' in l)
    with pytest.raises(parsing.TemplateError) as info:
        parsing.load_template(text)
    err = info.value
    assert err.path == "fields.tool_calls.close_pattern"
    assert err.line == line
    assert err.pattern_pos == 12  # the unclosed `(` (`regex` gives up at 13, the end)


def test_load_template_paths_of_any_name_and_clear_messages(tmp_path, monkeypatch):
    spec = T({"content": {}})
    for name in ("t.json", "template.txt", "no_extension"):
        p = tmp_path / name
        p.write_text(json.dumps(spec), encoding="utf-8")
        assert parsing.load_template(str(p)).spec == spec  # a str path, whatever the file is called
        assert parsing.load_template(p).spec == spec  # os.PathLike
    monkeypatch.chdir(tmp_path)
    assert parsing.load_template("no_extension").spec == spec  # a bare file name in the working folder
    for missing in (str(tmp_path / "missing.txt"), "missing.json", "sub/dir/t"):
        with pytest.raises(FileNotFoundError) as info:
            parsing.load_template(missing)
        assert info.value.filename == missing and "no response template file" in str(info.value)
    with pytest.raises(FileNotFoundError):
        parsing.load_template(tmp_path / "missing")
    (tmp_path / "bad.txt").write_text("{not json", encoding="utf-8")
    with pytest.raises(parsing.TemplateError, match="not valid JSON") as info:
        parsing.load_template(str(tmp_path / "bad.txt"))
    assert (info.value.line, info.value.column) == (1, 2)
    assert info.value.source == str(tmp_path / "bad.txt")  # the message says which file, wherever it came from
    assert info.value.describe() == f"{tmp_path / 'bad.txt'}: {info.value.message} [line 1, column 2]"
    (tmp_path / "wrong.json").write_text('{"fields": {"content": {"opne": "<x>"}}}', encoding="utf-8")
    with pytest.raises(parsing.TemplateError) as info:
        parsing.load_template(tmp_path / "wrong.json")
    assert info.value.source == str(tmp_path / "wrong.json") and info.value.path.startswith("fields.content")
    assert info.value.describe().startswith(f"{tmp_path / 'wrong.json'}: fields.content")
    with pytest.raises(parsing.TemplateError) as info:
        parsing.load_template("nonsense")
    assert info.value.source is None
    assert info.value.message.startswith("not valid JSON") and "no file named 'nonsense' exists" in info.value.message
    with pytest.raises(parsing.TemplateError, match="must be a dict, got list"):
        parsing.load_template("[1]")


def test_loads_template_never_reads_a_file(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(T({"content": {}})), encoding="utf-8")
    with pytest.raises(parsing.TemplateError, match="not valid JSON"):
        parsing.loads_template(str(p))
    with pytest.raises(parsing.TemplateError, match="must be a string"):
        parsing.loads_template({"start_anchor": A, "fields": OK})


@pytest.mark.parametrize("key", ["open_pattern", "close_pattern", "start_anchor_pattern"])
@pytest.mark.parametrize("value", [[], ["x"], {}, {"a": 1}, 5, None, True])
def test_a_pattern_that_is_not_a_string_gets_the_references_text(key, value):
    # docs/parsing-api.md: str(error) is the reference's text for every fault it also rejects; a list/dict fails
    # in the reference where regex's cache hashes it ("unhashable type: 'list'"), anything else at the type check
    import copy

    from transformers.utils import chat_parsing as reference

    if key == "start_anchor_pattern":
        spec = {"start_anchor_pattern": value, "fields": {"content": {}}}
    else:
        spec = {"start_anchor": "A:", "fields": {"content": {}, "x": {"open": "<x>", key: value} if key == "close_pattern"
                                                 else {key: value}}}
    with pytest.raises(TypeError) as theirs:
        reference.parse_response("A: hi", copy.deepcopy(spec), prefix="")
    with pytest.raises(parsing.TemplateError) as ours:
        parsing.parse_response("A: hi", copy.deepcopy(spec), prefix="")
    assert isinstance(ours.value, TypeError) and str(ours.value) == str(theirs.value)
    assert ours.value.path == (key if key == "start_anchor_pattern" else f"fields.x.{key}")
