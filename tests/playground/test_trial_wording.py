"""Messages a fresh-user trial found wrong or unhelpful: each says what is wrong, where, in the user's terms."""

import json
import re

import pytest

from parsing.doctor import suites
from parsing.doctor.checks import run_checks
from parsing.errors import json_error_text
from playground import doctor_panel, guard, offload, probe_panel, ui, views
from playground.limits import Limits
from playground.session import SKELETON_TEMPLATE, template_to_text
from playground.state import Session

TPL = template_to_text(SKELETON_TEMPLATE)


def test_a_suite_line_that_is_not_json_names_its_line_and_column_once():
    good = json.dumps({"prefix": "", "output": "x", "expected": {"role": "assistant"}})
    with pytest.raises(suites.SuiteFormatError) as e:
        suites.loads_suite("\n".join([good, good, '{"prefix": "", "output": "unterminated']))
    text = str(e.value)
    assert text == "3: not valid JSON: Unterminated string starting at line 3, column 26", text
    # every json message reads as a sentence with its place, never "at at"
    for bad in ('{"a": "x', "", '{"a" 1}', "[1] 2", '"a\tb"'):
        with pytest.raises(json.JSONDecodeError) as e:
            json.loads(bad)
        said = json_error_text(e.value, 7)
        assert " at at " not in said and re.search(r" at line 7, column \d+$", said), said


@pytest.mark.parametrize("public", [False, True])
def test_an_uploaded_suite_that_is_not_text_is_named_by_its_file_name(tmp_path, public):
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\xff\xfe\x00binary")
    before = guard.limits()
    guard.configure(Limits.public_space() if public else Limits.private())
    try:
        _, note = doctor_panel.load_uploaded_suite(str(path))
    finally:
        guard.configure(before)
    assert "bin.jsonl: not UTF-8 text" in note and "<path>" not in note and str(tmp_path) not in note, note


def test_a_stopped_doctor_or_draft_job_points_at_its_own_command_not_at_parse_response():
    local = "python -m parsing draft CHAT_TEMPLATE.jinja --report"
    for text in (offload.cut_text("The draft", local, 4.0, "timeout"), offload.cut_text("The draft", local)):
        assert local in text and "parse_response" not in text and "python app.py" in text, text
    assert "stopped after 4 s" in offload.cut_text("The draft", local, 4.0, "timeout")
    assert "ran out of memory" in offload.cut_text("The draft", local)


def test_the_run_checks_show_a_literal_close_as_the_text_it_is():
    tpl = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
           "fields": {"content": {"close": "<|im_end|>X", "repeats": True, "join": ""}}}
    found = [f.message for f in run_checks(tpl, "<|im_start|>assistant\n", "Hi<|im_end|>").findings]
    assert any("its close '<|im_end|>X' never came" in m for m in found), found
    assert not any("\\|" in m for m in found), found
    tpl["fields"]["content"] = {"close_pattern": r"<\|im_end\|>X\b"}
    found = [f.message for f in run_checks(tpl, "<|im_start|>assistant\n", "Hi<|im_end|>").findings]
    assert any(r"its close pattern `<\|im_end\|>X\b` never came" in m for m in found), found


def test_an_api_call_with_a_template_that_is_not_text_says_which_input(tiny_model_dir):
    demo = ui.build_ui(tiny_model_dir)
    paste_parse = next(fn.fn for fn in demo.fns.values() if getattr(fn.fn, "__name__", "") == "paste_parse")
    for value, kind in ((5, "a number"), ([1, 2], "a list"), ({"a": 1}, "an object"), (True, "a boolean")):
        out = dict(zip([*views.NAMES, "session"], paste_parse(Session(TPL), "Hi<|im_end|>", "", "", value)))
        status = out["status"]
        assert f"The template must be text (a string), not {kind}." in status, status
        assert "TypeError" not in status and "len()" not in status
    # the trial's call: {"data": [{"a": 1}, ["x"], 5, None]} (Gradio's Textbox turns the first two into text; the
    # tools box, a code editor, passes the number on)
    out = dict(zip([*views.NAMES, "session"], paste_parse(Session(TPL), "{'a': 1}", "['x']", 5, None)))
    assert "The tools JSON must be text (a string), not a number." in out["status"], out["status"]


def test_help_gives_every_limit_flag_its_unit(capsys):
    import app

    with pytest.raises(SystemExit):
        app.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag, unit in (("--max-request-mb", "MB"), ("--sessions-memory-mb", "MB"), ("--request-budget", "SECONDS"),
                       ("--max-paste-chars", "CHARS"), ("--max-new-tokens", "TOKENS"), ("--max-queue", "JOBS")):
        assert f"{flag} {unit}" in text, (flag, unit)
    assert "--max-request-mb SECONDS" not in text


def test_the_probe_table_has_no_empty_column():
    from parsing.doctor.probe import probe

    plain = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
             "fields": {"content": {"close": "<|im_end|>"}}}
    calls = json.loads(TPL)
    for tpl, skipped in ((calls, False), (plain, True)):
        html = probe_panel.probe_html(probe(tpl))
        table = html[html.index("<table class='probe-classes'"):html.index("</table>")]
        heads = re.findall(r"<th[^>]*>(.*?)</th>", table)
        assert all(h.strip() for h in heads), heads
        assert ("why not run" in heads) == skipped, heads
        for row in re.findall(r"<tr class='probe-class'.*?</tr>", table):
            assert len(re.findall(r"<td", row)) == len(heads), row


def test_an_export_name_starting_with_a_dash_is_refused_with_the_rule_it_breaks():
    with pytest.raises(ValueError) as e:
        doctor_panel.export_files(TPL, "", "-rf")
    text = str(e.value)
    assert "starting with a letter, a digit or '_' (not '-' or '.')" in text, text


def test_a_windows_device_name_is_exported_under_the_name_the_download_gets_and_the_note_says_so():
    paths = doctor_panel.export_files(TPL, "", "con")
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["_con.json", "_con.cases.jsonl"]
    said = doctor_panel.export_message("con", paths)
    assert said == ("Exported _con.json and _con.cases.jsonl ('con' is not a valid file name on Windows, so the "
                    "files are named '_con'): download both files below."), said
    plain = doctor_panel.export_files(TPL, "", "mine")
    assert doctor_panel.export_message("mine", plain) == ("Exported mine.json and mine.cases.jsonl: download both "
                                                          "files below.")


def test_a_model_named_with_a_detour_is_the_same_model_said_once_and_already_loaded(tiny_model_dir):
    import os

    from playground import backends, handlers
    from playground.handlers import PageConfig

    page = PageConfig(default_model=tiny_model_dir)
    sess = Session(TPL)
    handlers.load_model(sess, tiny_model_dir, "local", "", page)
    detour = os.path.join(tiny_model_dir, "..", os.path.basename(tiny_model_dir))
    handlers.load_model(sess, detour, "local", "", page)
    assert sess.model_id == tiny_model_dir  # one spelling for one model: later messages name it so
    assert "already loaded" in sess.notice.text and "loaded in" not in sess.notice.text, sess.notice.text
    assert backends.is_loaded(detour) and backends.load_model(detour).name == tiny_model_dir


def test_the_dropped_prefix_note_counts_in_words_and_the_cap_note_names_no_server_flag():
    """Trial 9: "1 prompt characters"; and the over-cap note named --max-message-chars, which a visitor of a public
    server cannot set: it says the server's limit in words."""
    from playground import render
    from playground.session import Run, parse_run

    template = json.dumps({"start_anchor": "S", "fields": {"content": {}}})
    for prefix, said in (("S", "The prompt’s first character, the start anchor, is not parsed"),
                         ("xyzS", "The prompt’s first 4 characters, up to the end of the start anchor, are not")):
        view = parse_run(Run(prefix=prefix, chunks=("hi",), template_text=template))
        assert view.dropped_prefix == prefix and said in render.timeline_html(view)
    note = render.message_too_large(2_000_123, 2_000_000)
    assert "--" not in note and "over this server's limit of 2,000,000" in note and "at least 2,000,123" in note


def test_a_parse_cut_after_reading_everything_does_not_say_it_stopped_at_its_last_character():
    from playground.limits import cut_message
    whole = cut_message(2.0, 1450, 1450)
    assert "up to character" not in whole and "1,450 of 1,450" not in whole, whole
    assert "all 1,450 characters of the output were read, but the parse was not finished" in whole
    part = cut_message(2.0, 700, 1450)
    assert "parsed up to character 700 of 1,450; the rest is shown unparsed" in part
    for said in (whole, part):
        assert said.startswith("Stopped after 2 s, this server's time limit per request: ")
        assert " and the transformers check was skipped. " in said and ",," not in said and ", and" not in said


def test_an_over_size_template_is_said_under_the_editor_not_the_last_verdict():
    """Select all, Delete, paste 70,155 characters: the box under the editor said "not valid JSON: Expecting value"
    (the verdict on the empty editor) while the refused text was valid JSON (trial 12, F5)."""
    from playground import handlers
    from playground.handlers import PageConfig

    page, sess = PageConfig(limits=Limits.public_space()), Session(TPL)
    handlers.edit_template(sess, "", page)  # the editor emptied first: a fair verdict on ""
    assert sess.problem is not None and sess.problem.message.startswith("not valid JSON")
    big = json.loads(TPL)
    big["fields"][next(iter(big["fields"]))]["join"] = "x" * 70_000
    big_text = json.dumps(big)
    handlers.edit_template(sess, big_text, page)
    said = f"The template is {len(big_text):,} characters; this server takes at most 65,536."
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    for shown in (drawn["template_status"], sess.notice.text):
        assert said in shown and "not valid JSON" not in shown, shown
    assert 'data-line=""' in drawn["template_status"] and ".cm-line:nth-child" not in drawn["template_status"]
    assert sess.template_text == ""  # the refused text was not read (nor kept)
    handlers.edit_template(sess, "", page)  # back to the text read last: read afresh, not "unchanged"
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert "not valid JSON" in drawn["template_status"] and said not in drawn["template_status"]
    handlers.edit_template(sess, TPL, page)
    assert sess.problem is None and not sess.refused
