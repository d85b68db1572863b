"""The draft panel's pure helpers: the evidence HTML (escaped, differences marked) and reading a tokenizer."""

from parsing.doctor.draft import draft_template
from playground.draft_panel import chat_template_of, draft_html, excerpt_html
from playground.offload import draft_job

CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_excerpt_marks_the_span_and_escapes():
    html = excerpt_html("<b>a</b>\nX<|im_end|>tail", (10, 20))
    assert '<mark class="draft-diff">&lt;|im_end|&gt;</mark>' in html
    assert "&lt;b&gt;a&lt;/b&gt;⏎\n" in html and "<b>" not in html
    long = "y" * 500 + "Z" + "w" * 500
    cut = excerpt_html(long, (500, 501))
    assert cut.startswith("…") and cut.endswith("…") and '<mark class="draft-diff">Z</mark>' in cut
    assert excerpt_html("abc", None) == "abc"


def test_draft_html_shows_every_marker_with_its_renderings():
    d = draft_template(CHATML)
    html = draft_html(d)
    assert html == draft_html(d.to_dict())  # the worker sends the dict
    assert html.count('class="draft-ev"') == len(d.evidence)
    assert "start anchor" in html and "end of turn" in html
    assert '<mark class="draft-diff">&lt;|im_start|&gt;assistant⏎\n</mark>' in html
    assert "compared with" in html and 'class="draft-pass"><svg' in html and "</svg> pass" in html
    assert "<script" not in html


def test_hostile_chat_template_text_is_escaped():
    evil = CHATML.replace("<|im_start|>assistant", "<script>alert(1)</script>")
    html = draft_html(draft_template(evil))
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_a_draft_job_runs_in_a_worker_without_importing_gradio():
    """Trial 11: the job lived in draft_panel, so the worker that unpickled it imported gradio (3 s of CPU) inside
    the visitor's 5 s budget and every public draft was cut. A fresh interpreter that imported what the pool's
    workers import unpickles and runs the job, and gradio is still not imported."""
    import pickle
    import subprocess
    import sys

    from playground.reference import POOL_PRELOAD
    from tests.serving import ROOT

    code = ("import pickle, sys\n"
            f"for name in {POOL_PRELOAD!r}: __import__(name)\n"
            f"job, args = pickle.loads({pickle.dumps((draft_job, (CHATML, None, 10.0)))!r})\n"
            "out = job(*args)\n"
            "print(out['template']['start_anchor'] == '<|im_start|>assistant\\n', 'gradio' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["True", "False"], done.stdout + done.stderr[-2000:]


def test_draft_job_returns_plain_data_and_chat_template_of():
    out = draft_job(CHATML, None, 10.0)
    assert out["template"]["start_anchor"] == "<|im_start|>assistant\n"

    class Tok:
        chat_template = {"default": CHATML, "tool_use": "x"}

    assert chat_template_of(Tok()) == CHATML
    assert chat_template_of(object()) == ""
