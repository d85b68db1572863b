"""Timeline HTML: escaping of hostile text, exact coverage of the text, markers, bounded DOM."""

import json
import re
from html.parser import HTMLParser

import pytest

import parsing
from parsing.streams import tokenish_chunks
from playground import render
from playground.session import SKELETON_TEMPLATE, LiveParse, Run, parse_run, template_to_text

TPL = template_to_text(SKELETON_TEMPLATE)
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"


class _Collect(HTMLParser):
    """Collects the text inside the .tl div and every span's attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.in_tl = False
        self.text = []
        self.spans = []
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "div" and "tl" in (a.get("class") or "").split():
            self.in_tl = True
        if self.in_tl and tag == "span":
            self.spans.append(a)

    def handle_endtag(self, tag):
        if tag == "div" and self.in_tl:
            self.in_tl = False

    def handle_data(self, data):
        if self.in_tl:
            self.text.append(data)


def _parse(html_text):
    c = _Collect()
    c.feed(html_text)
    return c


def _run(output, prefix=PREFIX, template=TPL):
    return Run(prefix=prefix, chunks=tuple(tokenish_chunks(output)), template_text=template)


def test_hostile_text_is_escaped_and_covered_exactly():
    hostile = 'x <script>alert("pwn")</script> & <img src=x onerror=alert(1)> "q" \'s\' </div></span>'
    view = parse_run(_run(f"{hostile}\n</think>\n{hostile}<tool_call>\n{{\"name\": \"<b>\", \"arguments\": {{}}}}\n</tool_call><|im_end|>"))
    out = render.timeline_html(view)
    assert "<script" not in out and "<img" not in out
    c = _parse(out)
    assert set(c.tags) <= {"div", "span"}
    assert "".join(c.text) == view.text  # every character exactly once, in order


def test_hostile_field_names_and_errors_are_escaped():
    spec = {"start_anchor": "A", "fields": {'<i onmouseover="x">': {"open": "<t>", "close": "</t>", "content": "json"},
                                              "content": {}}}
    view = parse_run(_run('<t>{"a": <script>}</t> rest', prefix="", template=json.dumps(spec)))
    out = render.timeline_html(view) + render.legend_html(view.field_names) + render.events_html(view.events)
    assert "<i " not in out and "<script>" not in out
    c = _parse(render.timeline_html(view))
    assert "".join(c.text) == view.text


def test_regions_delimiters_prefix_and_chunks_are_marked():
    view = parse_run(_run("Because.\n</think>\nHello<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call><|im_end|>"))
    c = _parse(render.timeline_html(view))
    classes = [set(s["class"].split()) for s in c.spans]
    fields = {s.get("data-f") for s in c.spans}
    assert {"reasoning_content", "content", "tool_calls"} <= fields
    assert any("d" in k for k in classes)  # delimiters drawn as tags
    assert any("p" in k for k in classes)  # text from the prompt prefix
    assert any("dirty" in k for k in classes)  # json tool call chunks
    assert any("cs" in k for k in classes)  # chunk boundaries
    assert not any("p" in k for k, s in zip(classes, c.spans) if " · chunk " in s.get("title", ""))
    assert any(" · chunk " in s.get("title", "") for s in c.spans)  # (the titles say which chunk)
    # one stable colour per field, in every span of that field
    for s in c.spans:
        if s.get("data-f"):
            assert render.field_class(s["data-f"]) in s["class"].split()
    assert render.field_color("content") == render.field_color("content")
    assert render.field_class("content") != render.field_class("reasoning_content")
    # every span says where it is: its offsets cover the text exactly, in order
    assert [int(s["data-s"]) for s in c.spans[1:]] == [int(s["data-e"]) for s in c.spans[:-1]]
    assert int(c.spans[0]["data-s"]) == 0 and int(c.spans[-1]["data-e"]) == len(view.text)


def test_held_bytes_while_streaming_and_discarded_text():
    live = LiveParse(TPL, PREFIX)
    live.feed("Thinking hard </thi")
    view = live.view()
    assert view.held[1] > view.held[0]
    c = _parse(render.timeline_html(view))
    held = "".join(t for t in c.text)  # sanity: all text present
    assert held == view.text
    assert any("h" in s["class"].split() for s in c.spans)
    spec = {"start_anchor": "A", "fields": {"x": {"open": "<x>", "close": "</x>"}}}
    view2 = parse_run(_run("junk <x>kept</x> more junk", prefix="", template=json.dumps(spec)))
    c2 = _parse(render.timeline_html(view2))
    assert any("x" in s["class"].split() for s in c2.spans)  # discarded: no implicit field


def test_failed_region_is_flagged_and_rest_still_shows():
    view = parse_run(_run("ok\n</think>\nHi<tool_call>\n{not json}\n</tool_call>after<|im_end|>"))
    assert view.errors, "a broken tool call must be reported"
    out = render.timeline_html(view)
    c = _parse(out)
    assert "".join(c.text) == view.text
    assert any("e" in s["class"].split() for s in c.spans)
    assert "tl-err" in out


def test_long_stream_is_windowed_and_dom_is_bounded():
    text = "word " * 30000
    view = parse_run(_run("x\n</think>\n" + text + "<|im_end|>"))
    out = render.timeline_html(view)
    c = _parse(out)
    shown = "".join(c.text)
    assert len(shown) == render.TIMELINE_MAX_CHARS
    assert view.text.endswith(shown)
    assert len(c.spans) <= render.TIMELINE_MAX_CHARS  # never one span per character
    assert "Showing characters" in out
    head = render.timeline_html(view, start=0)
    assert "".join(_parse(head).text) == view.text[: render.TIMELINE_MAX_CHARS]


def test_runs_of_identical_characters_merge_into_one_span():
    view = parse_run(Run(prefix="", chunks=("a" * 500,), template_text=TPL))
    c = _parse(render.timeline_html(view))
    assert len(c.spans) == 1


def test_event_log_rows_and_cap():
    view = parse_run(_run("r\n</think>\n" + "w " * 400 + "<|im_end|>"))
    out = render.events_html(view.events, limit=50)
    assert out.count("<tr class=") == 50
    assert f"last 50 of {len(view.events)}" in out


def test_event_log_shows_the_rows_around_the_inspected_character():
    raw = "r\n</think>\n" + "".join(f"w{i} " for i in range(400)) + "<|im_end|>"
    view = parse_run(_run(raw))
    events = list(view.events)
    x = view.prefix_length + raw.index("w7 ")  # early: its rows are not among the last 50
    first_hit = next(i for i, ev in enumerate(events) if "start" in ev and ev.get("end", ev["start"]) > x)
    assert first_hit < len(events) - 50
    out = render.events_html(view.events, limit=50, around=x)
    assert out.count("<tr class=") == 50
    starts = [int(v) for v in re.findall(r'data-s="(\d+)"', out)]
    ends = [int(v) for v in re.findall(r'data-e="(\d+)"', out)]
    assert any(s <= x < e for s, e in zip(starts, ends))  # the inspected character's own row is shown
    assert f"of {len(events)}" in out and "last 50" not in out
    # late characters (and no character) give the last rows, as before
    assert "last 50" in render.events_html(view.events, limit=50, around=len(view.text) - 1)


def test_assistant_turn_renders_reasoning_and_tool_cards():
    msg = {"role": "assistant", "reasoning_content": "why", "content": "<b>hi</b>",
           "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "P"}}}]}
    turn = render.assistant_turn(msg)
    assert turn[0]["metadata"]["title"].endswith("Reasoning")
    assert any("get_weather" in t.get("metadata", {}).get("title", "") for t in turn)
    assert turn[-1]["content"] == "&lt;b&gt;hi&lt;/b&gt;"  # shown as written, not as bold


HOSTILE = ['<b>bold</b>', '<img src=x onerror="alert(1)">', '<a href="javascript:alert(2)">link</a>',
           '<style>body{display:none}</style>', '<script>alert(3)</script>']


def test_assistant_turn_shows_hostile_model_text_literally():
    import html as html_mod

    name = "<script>alert(4)</script>"
    for text in HOSTILE:
        msg = {"reasoning_content": text, "content": text, "extra": text,
               "tool_calls": [{"type": "function", "function": {"name": name, "arguments": {"x": text + "```"}}}]}
        turn = render.assistant_turn(msg)
        reasoning, call, extra, content = turn
        for bubble in (reasoning, content):
            assert "<" not in bubble["content"] and html_mod.unescape(bubble["content"]) == text
        assert call["metadata"]["title"] == "Tool call: &lt;script&gt;alert(4)&lt;/script&gt;"
        # JSON goes in a code block whose fence the text cannot close
        fence = call["content"].split("json", 1)[0]
        assert len(fence) >= 4 and call["content"].endswith("\n" + fence)
        assert extra["content"].startswith("```json\n")
    chat = render.history_to_chat(
        [{"role": "user", "content": "<b>me</b>"}, {"role": "tool", "content": "```\n<img src=x>"}])
    assert chat[0]["content"] == "&lt;b&gt;me&lt;/b&gt;"
    assert chat[1]["content"].startswith("````\n")


def test_check_badge_and_diff():
    assert "agree-badge" in render.check_html({"agree": True})
    bad = render.check_html({"agree": False, "differences": ["<x> differs"]})
    assert "&lt;x&gt;" in bad and "<x>" not in bad


def test_template_status_shows_path_and_line():
    text = '{\n  "start_anchor": "x",\n  "fields": {\n    "a": {"open_pattern": "("}\n  }\n}'
    try:
        parsing.loads_template(text)
    except parsing.TemplateError as p:
        out = render.template_status_html(p, text)
    else:  # pragma: no cover
        raise AssertionError("bad regex accepted")
    assert 'data-path="fields.a.open_pattern"' in out
    assert 'data-line="4"' in out and "<mark>" in out


def test_template_status_snippet_counts_lines_as_the_json_error_does():
    """A raw U+2028 inside a string is text to JSON (its line numbers count "\\n" only): the snippet must show the
    lines the error names, not lines cut at the U+2028."""
    text = '{\n  "defaults": {"role": "assistant", "note": "a\u2028b\u2028c"},\n  "start_anchor": "x",\n  "fields": {"content": {"close": }}}'
    with pytest.raises(parsing.TemplateError) as bad:
        parsing.loads_template(text)
    out = render.template_status_html(bad.value, text)
    assert 'data-line="4"' in out
    marked = out.split("<mark>", 1)[1].split("</mark>", 1)[0]
    assert marked.startswith("   4 | ") and "&quot;fields&quot;" in marked


def test_template_status_points_at_a_bad_regex_fault_the_message_does_not_name():
    # `regex` (and so the reference's message) names 19, the pattern's end; the unclosed `[` is at 7
    pattern = r"(?<=a+)[^\s*<think>"
    text = json.dumps({"start_anchor": "x", "fields": {"a": {"open_pattern": pattern}}}, indent=2)
    try:
        parsing.loads_template(text)
    except parsing.TemplateError as p:
        out = render.template_status_html(p, text)
        message = p.message
    else:  # pragma: no cover
        raise AssertionError("bad regex accepted")
    assert f"at position {len(pattern)}" in message
    assert f"the fault starts at position {pattern.index('[')} of the pattern" in out
    # a fault the message already names is not repeated
    agreed = text.replace(json.dumps(pattern), json.dumps("ab)c"))
    try:
        parsing.loads_template(agreed)
    except parsing.TemplateError as p:
        assert "at position 2" in p.message and "the fault starts" not in render.template_status_html(p, agreed)
    else:  # pragma: no cover
        raise AssertionError("bad regex accepted")


def test_template_status_gives_the_column_of_a_bad_regex_fault_past_the_escapes():
    # the unclosed `(` is pattern character 11; in the JSON text \\ and \u00e9 (ensure_ascii) take more columns
    pattern = "\\s*\u00e9<think>(x"
    text = json.dumps({"start_anchor": "x", "fields": {"a": {"open_pattern": pattern}}}, indent=2)
    try:
        parsing.loads_template(text)
    except parsing.TemplateError as p:
        assert p.pattern_pos == pattern.index("(")
        out = render.template_status_html(p, text)
    else:  # pragma: no cover
        raise AssertionError("bad regex accepted")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "open_pattern" in row)
    column = text.splitlines()[line - 1].index("(") + 1
    assert column > text.splitlines()[line - 1].index('"\\\\s') + 1 + 1 + pattern.index("(")  # the escapes count
    assert f'data-fault-line="{line}" data-fault-column="{column}"' in out
    assert f"the fault starts at position {pattern.index('(')} of the pattern: line {line}, column {column})" in out
    assert '<span class="tpl-fault">(</span>x' in out  # and in the excerpt
    # a fault the message names itself still gets its column
    agreed = text.replace(json.dumps(pattern), json.dumps("\\sb)c"))
    try:
        parsing.loads_template(agreed)
    except parsing.TemplateError as p:
        out = render.template_status_html(p, agreed)
        assert "at position 3" in p.message and "the fault starts" not in out
        row = agreed.splitlines()[line - 1]
        assert f'data-fault-column="{row.index(")") + 1}"' in out and '<span class="tpl-fault">)</span>' in out
    else:  # pragma: no cover
        raise AssertionError("bad regex accepted")


def test_bidi_controls_are_shown_as_markers_everywhere():
    rlo = "\u202e"
    raw = f"x{rlo}y\n</think>\nok<tool_call>\n{{\"name\": \"f\", \"arguments\": {{}}}}\n</tool_call><|im_end|>"
    view = parse_run(_run(raw))
    tl = render.timeline_html(view)
    controls = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    assert not any(c in tl for c in controls)
    import re

    shown = re.sub(r"<[^>]*>", "", tl)
    assert "x⟨U+202E⟩y" in shown and "&lt;tool_call&gt;" in shown
    assert view.text.count(rlo) == 1 and f"data-len=\"{len(view.text)}\"" in tl  # offsets unchanged
    ev = render.events_html(view.events)
    assert "⟨U+202E⟩" in ev and rlo not in ev
    turn = render.assistant_turn({"reasoning_content": "a" + controls, "content": f"b{rlo}c",
                                  "tool_calls": [{"function": {"name": f"n{rlo}", "arguments": {"k": rlo}}}]})
    flat = json.dumps(turn, ensure_ascii=False)
    assert not any(c in flat for c in controls)
    assert "⟨U+2066⟩" in flat and "⟨U+061C⟩" in flat and "⟨U+200F⟩" in flat
    assert render.show_bidi("plain עברית") == "plain עברית"


def test_a_json_bubble_is_indented_when_it_fits_and_cut_with_a_note_when_it_does_not():
    small = {"a": [1, {"b": "x`y"}], "c": None}
    block = render.json_block(small)
    assert block == render.md_code(json.dumps(small, ensure_ascii=False, indent=2), "json")
    deep = {"k": "v"}
    for _ in range(400):  # indenting this 400 deep would be ~30 times its compact size
        deep = [deep, 1]
    compact = json.dumps(deep)
    assert render.json_block(deep) == render.md_code(compact, "json")
    big = {"x": ["a" * 1000] * 100}  # 100 KB of JSON
    block = render.json_block(big)
    body = block[len("```json\n"):block.index("\n```")]
    assert body == json.dumps(big, ensure_ascii=False)[:render.BUBBLE_JSON_CHARS]
    assert block.endswith("*(cut: only the first 20,000 characters of this JSON are shown)*")
