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


def test_export_warns_when_the_start_anchor_never_occurs_in_the_models_generation_prompt(tiny_model_dir, tmp_path):
    import examples
    from parsing.doctor.chat_template import generation_prompt
    from playground import handlers
    from playground.handlers import PageConfig
    from playground.state import Session

    lm = backends.load_model(tiny_model_dir)  # a ChatML chat template
    kimi = examples.load_family("kimi_k2").template  # start anchor <|im_assistant|>assistant<|im_middle|>
    prompt, start = generation_prompt(lm.tokenizer)
    assert kimi["start_anchor"] not in prompt  # independently: the anchor really is missing
    res = export_template(lm.tokenizer, json.dumps(kimi), tmp_path)
    assert res.roundtrip_ok  # the export itself worked...
    assert "start anchor does not occur" in res.warning and json.dumps(prompt[start:]) in res.warning  # ...but warns
    # the status line says it too, not just "Saved and reloaded"
    sess, out = handlers.export(Session(json.dumps(kimi), model=tiny_model_dir), json.dumps(kimi),
                                PageConfig(default_model=tiny_model_dir))
    assert out.ok and out.warning == res.warning
    assert sess.notice.kind == "info" and res.warning in sess.notice.text

    # a template whose anchor is in the prompt exports without a warning
    fine = json.loads(template_to_text(SKELETON_TEMPLATE))
    assert fine["start_anchor"] in prompt
    assert export_template(lm.tokenizer, json.dumps(fine), tmp_path / "fine").warning == ""
