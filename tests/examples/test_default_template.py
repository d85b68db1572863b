"""One default template, and no template the page can show draws a lint warning.

The library's `examples.DEFAULT_FAMILY` template is the source; the playground's skeleton, the tiny test model
and the built-in model (module and shipped tokenizer) must be that template, not copies that can drift.
"""

import json
from pathlib import Path

import pytest

import examples
from examples.builtin_model.template import RESPONSE_TEMPLATE as BUILTIN
from parsing.doctor.lint import lint
from playground.session import SKELETON_TEMPLATE
from playground.tinymodel import RESPONSE_TEMPLATE as TINY

SHIPPED = Path(examples.__file__).parent / "builtin_model" / "model" / "tokenizer_config.json"


def test_the_default_is_the_library_family_template():
    source = json.loads((examples.FAMILIES_DIR / examples.DEFAULT_FAMILY / "template.json").read_text("utf-8"))
    assert examples.default_template() == source
    copy = examples.default_template()
    copy["fields"].clear()
    assert examples.default_template() == source  # a fresh dict each call


@pytest.mark.parametrize("name,template", [("playground skeleton", SKELETON_TEMPLATE), ("tiny model", TINY),
                                           ("built-in model", BUILTIN),
                                           ("built-in model, shipped", json.loads(SHIPPED.read_text("utf-8"))
                                            ["response_template"])])
def test_every_default_takes_the_library_template(name, template):
    assert template == examples.default_template(), name


PAGE_TEMPLATES = [(f"library/{n}", examples.load_family(n).template) for n in examples.list_families()]
PAGE_TEMPLATES.append(("skeleton", SKELETON_TEMPLATE))


@pytest.mark.parametrize("name,template", PAGE_TEMPLATES, ids=[n for n, _ in PAGE_TEMPLATES])
def test_no_template_the_page_shows_draws_a_lint_warning(name, template):
    report = lint(template)
    assert [w for w in report.warnings if w.severity != "info"] == [], report.format()  # no error, no warning
