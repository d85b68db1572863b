"""Generation settings a generation cannot take are refused before anything is sent, in the page's words; and a
generation that fails ends its stream: the timeline stops saying it streams, the chat takes the turn back."""

import math

import pytest

from playground import handlers, views
from playground.limits import Limits
from playground.handlers import SEED_MAX, ChatSettings, PageConfig
from playground.session import SKELETON_TEMPLATE, template_to_text
from playground.state import Session

TPL = template_to_text(SKELETON_TEMPLATE)


def _send(sess, settings, page, text="hello"):
    for _ in handlers.send_user(sess, text, TPL, settings, page):
        pass
    return sess


@pytest.mark.parametrize("changes, words", [
    ({"seed": SEED_MAX + 1}, f"Seed must be -1 (random) or a whole number from 0 to {SEED_MAX:,}; got 4294967296."),
    ({"seed": -(2**70)}, "Seed must be -1 (random) or a whole number from 0 to 4,294,967,295; got "),
    ({"seed": -2}, "Seed must be -1 (random) or a whole number from 0 to 4,294,967,295; got -2."),
    ({"seed": 1.5}, "Seed must be -1 (random) or a whole number from 0 to 4,294,967,295; got 1.5."),
    ({"max_new_tokens": math.nan}, "Max new tokens must be a whole number from 1 to 32,768; got nan."),
    ({"max_new_tokens": None}, "Max new tokens must be a whole number from 1 to 32,768; got null."),
    ({"temperature": math.inf}, "Temperature must be a number from 0 to 2; got inf."),
    ({"top_p": math.nan}, "Top-p must be a number from 0.05 to 1; got nan."),
])
def test_settings_a_generation_cannot_take_are_refused_in_the_pages_words(tiny_model_dir, changes, words):
    page = PageConfig(default_model=tiny_model_dir, limits=Limits(max_new_tokens=32768))
    sess = _send(Session(TPL, model=tiny_model_dir), ChatSettings(model_box=tiny_model_dir, **changes), page)
    assert sess.notice.kind == "error" and sess.notice.text.startswith(words), sess.notice.text
    assert "Error:" not in sess.notice.text  # no Python class name
    # nothing was sent: no turn, no run, and the text was never taken from its box
    assert sess.history == [] and sess.run is None and not sess.running and "user" not in sess.inbox


@pytest.mark.parametrize("seed, expected", [(-1, None), (None, None), (0, 0), (SEED_MAX, SEED_MAX), (7.0, 7)])
def test_seeds_in_range_are_taken(seed, expected):
    assert ChatSettings(seed=seed).sampling(256)["seed"] == expected


def test_a_failed_generation_ends_the_stream_and_takes_the_turn_back(tiny_model_dir):
    """The prompt is longer than the model's context window: generation fails after the live timeline showed."""
    page = PageConfig(default_model=tiny_model_dir)
    sess = Session(TPL, model=tiny_model_dir)
    _send(sess, ChatSettings(model_box=tiny_model_dir, max_new_tokens=4, temperature=0), page)
    before = sess.run
    assert before is not None and [m["role"] for m in sess.history] == ["user", "assistant"]
    shown_live = []
    for s in handlers.send_user(sess, "again", TPL, ChatSettings(system="x" * 50_000, model_box=tiny_model_dir),
                                page):
        shown_live.append(s.running and s.view is not None and not s.view.final)
    assert any(shown_live)  # the failure came after the live timeline was on screen
    assert sess.notice.kind == "error" and "this model reads at most" in sess.notice.text
    drawn = dict(zip(views.NAMES, views.redraw(sess)))
    assert not sess.running and sess.run is before and sess.view.final
    assert 'data-status="streaming"' not in drawn["timeline"] and 'data-status="final"' in drawn["timeline"]
    assert drawn["stop"]["interactive"] is False and drawn["replay_btn"]["interactive"] is True
    assert [m["role"] for m in sess.history] == ["user", "assistant"]  # the failed turn was taken back
    assert drawn["user_box"] == "again"  # the text is back in its box


def test_the_run_kept_for_a_failing_stream_is_let_go_when_the_stream_ends():
    """`start_run` keeps the run on screen so that `end_stream` can bring it back; once the new run finishes (or
    runs are dropped for memory) nothing holds the old one: a session holds one run, as memory accounting counts."""
    import gc
    import weakref

    from playground.session import Run

    for end in ("finish", "drop"):
        sess = Session(TPL)
        old = Run(prefix="p", chunks=["old"])
        sess.finish_run(old, None, None)
        gone = weakref.ref(old)
        sess.start_run()
        del old
        if end == "finish":
            sess.finish_run(Run(prefix="p", chunks=["new"]), None, None)
        else:
            sess.drop_run()
        gc.collect()
        assert gone() is None, end
