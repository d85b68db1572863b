"""Export: the template goes into a copy of the tokenizer, the zip has it, and it round-trips."""

import json
import zipfile

import pytest

import parsing
from playground import backends
from playground.export import export_template
from playground.session import SKELETON_TEMPLATE, template_to_text


def test_export_round_trips_and_leaves_shared_tokenizer_alone(tiny_model_no_template, tmp_path):
    lm = backends.load_model(tiny_model_no_template)
    spec = json.loads(template_to_text(SKELETON_TEMPLATE))
    spec["fields"]["answer_marker"] = {"open": "<answer>", "close": "</answer>"}
    res = export_template(lm.tokenizer, json.dumps(spec), tmp_path)
    assert res.roundtrip_ok and "round-trips" in res.message
    with zipfile.ZipFile(res.zip_path) as z:
        cfg = json.loads(z.read("tokenizer_config.json"))
    assert cfg["response_template"] == spec
    assert getattr(lm.tokenizer, "response_template", None) in (None, {})


def test_export_refuses_a_broken_template(tiny_model_dir, tmp_path):
    lm = backends.load_model(tiny_model_dir)
    with pytest.raises(parsing.TemplateError):
        export_template(lm.tokenizer, '{"fields": {"a": {"open_pattern": "("}}, "start_anchor": "x"}', tmp_path)
    with pytest.raises(ValueError, match="No tokenizer"):
        export_template(None, template_to_text(SKELETON_TEMPLATE), tmp_path)
