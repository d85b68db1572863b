"""The Doctor tab's probe section and the library picker's probe scores (pure helpers)."""

import copy
import json

import examples
from parsing.doctor.probe import probe
from playground import probe_panel
from playground.library import library_choices

from tests.doctor.doctor_templates import GUIDE


def test_probe_html_shows_classes_failures_fixes_and_limits():
    html = probe_panel.probe_html(probe(GUIDE))
    assert "probe-report" in html and html.count("class='probe-class'") == 9
    assert "data-probe='a.reasoning_cut_by_end_of_turn'" in html
    assert "Suggested change" in html and "checked: the probe passes with it" in html
    assert "Known limit of the template language" in html  # h.missing_reasoning_open
    assert "&lt;|im_end|&gt;" in html and "<|im_end|>" not in html  # every model text is escaped


def test_probe_html_escapes_template_text():
    spec = copy.deepcopy(GUIDE)
    spec["fields"]["reasoning_content"]["open"] = "<script>alert(1)</script>"
    html = probe_panel.probe_html(probe(spec))
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_prefixes_for_picks_the_family_of_the_editor_template():
    fam = examples.load_family("qwen3")
    text = json.dumps(fam.template)
    prefixes, where = probe_panel.prefixes_for(probe_panel.AUTO, text, None)
    assert prefixes == fam.prefixes and "qwen3" in where
    prefixes, where = probe_panel.prefixes_for(probe_panel.AUTO, text, "<|im_start|>assistant\n")
    assert prefixes["current run"] == "<|im_start|>assistant\n" and "current run" in where
    assert probe_panel.prefixes_for(probe_panel.NONE, text, None)[0] is None
    assert probe_panel.prefixes_for("glm45", text, None)[0] == examples.load_family("glm45").prefixes
    assert probe_panel.prefixes_for(probe_panel.AUTO, "{not json", None)[0] is None
    assert probe_panel.family_choices()[:2] == [probe_panel.AUTO, probe_panel.NONE]


def test_library_picker_labels_carry_the_probe_score():
    scores = examples.probe_scores()
    assert set(scores) == set(examples.list_families())
    choices = dict((value, label) for label, value in library_choices(["qwen3", "functiongemma", "deepseek_r1"]))
    q, one, none = scores["qwen3"], scores["functiongemma"], scores["deepseek_r1"]
    assert len(q["limits"]) > 1 and len(one["limits"]) == 1 and not none["limits"]
    assert choices["qwen3"] == f"qwen3 — probes {q['passed']}/{q['run']}, {len(q['limits'])} known limits"
    assert choices["functiongemma"] == f"functiongemma — probes {one['passed']}/{one['run']}, 1 known limit"
    assert choices["deepseek_r1"] == f"deepseek_r1 — probes {none['passed']}/{none['run']}"
    assert probe_panel.score_label("x", None) == "x"
    assert probe_panel.score_label("x", {"passed": 1, "run": 3, "failed": 1, "limits": ["a", "b"]}) == \
        "x — probes 1/3, 1 failing, 2 known limits"


# A Hermes-style call whose close has an optional tail of several characters: transformers' streaming parser
# commits "</tool_call>\n" at a chunk boundary inside "</calls>" and leaks the tail into content (spec section 4).
TAILED = {
    "start_anchor": "<|im_start|>assistant\n",
    "defaults": {"role": "assistant"},
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*(?:</calls>)?", "content": "json",
                       "repeats": True, "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}


def test_reference_html_counts_the_probes_only_transformers_fails():
    report = probe(json.dumps(TAILED), reference=True)
    only = [r for r in report.results if probe_panel.reference_only(r)]
    assert only, report.summary()
    # independently: each really passes in our engine and fails in the reference (its chunking says which)
    assert all(r.status == "fail" and r.chunking.startswith("transformers reference") for r in only)
    plain = probe(json.dumps(TAILED))  # our engine alone passes every one of those probes
    ours = {r.case.id: r.status for r in plain.results}
    assert all(ours[r.case.id] == "pass" for r in only)
    html = probe_panel.reference_html(report)
    assert "probe-reference-fail" in html and f"{len(only)} probe" in html and only[0].case.id in html
    # without the tail the reference agrees
    fine = copy.deepcopy(TAILED)
    fine["fields"]["tool_calls"]["close_pattern"] = r"</tool_call>\s*"
    assert "probe-reference-ok" in probe_panel.reference_html(probe(json.dumps(fine), reference=True))
