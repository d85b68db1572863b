"""The built-in model's synthetic data: the evaluation split stays held out from training, and
training asks for copying (made-up argument values) rather than recall."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples.builtin_model import data  # noqa: E402

N_TRAIN = 4000


@pytest.fixture(scope="module")
def train_examples():
    return data.make_examples(N_TRAIN, "train", 0)


def _user_texts(examples):
    return [m["content"] for ex in examples for m in ex["messages"] if m["role"] == "user"]


def _all_text(examples):
    return "\n".join(json.dumps(ex, ensure_ascii=False) for ex in examples)


def _held_out_phrasings():
    """Every (list, held-out phrasing) pair, read from the data module's own bookkeeping."""
    lists = [v for k, v in vars(data).items() if k.startswith("_P_") and isinstance(v, list)
             and id(v) in data._HELD_OUT]
    return [p for lst in lists for p in lst[-data._HELD_OUT[id(lst)]:]]


def _as_regex(phrasing: str) -> re.Pattern:
    parts = re.split(r"\{[a-z0-9]+\}", phrasing)
    return re.compile("^(?:.*?)" + ".+?".join(re.escape(p) for p in parts) + "(?:.*)$", re.S)


def test_entity_lists_are_disjoint():
    assert not set(data._CITIES_TRAIN) & set(data._CITIES_EVAL)
    assert not set(data._TOPICS_TRAIN) & set(data._TOPICS_EVAL)
    assert not set(data._CURRENCIES_TRAIN) & set(data._CURRENCIES_EVAL)


@pytest.mark.slow
def test_no_evaluation_entity_appears_in_training(train_examples):
    text = _all_text(train_examples)
    names = sorted({c.replace("_", " ") for c in data._CITIES_EVAL}, key=len, reverse=True)
    cities = re.compile(r"(?<![A-Za-z])(?:" + "|".join(map(re.escape, names)) + r")(?![A-Za-z])", re.I)
    assert cities.findall(text) == []
    assert [t for t in data._TOPICS_EVAL if t in text] == []
    assert re.findall(r"\b(?:" + "|".join(data._CURRENCIES_EVAL) + r")\b", text) == []


def test_held_out_phrasings_never_trained(train_examples):
    patterns = [(_as_regex(p), p) for p in _held_out_phrasings()]
    assert len(patterns) >= 12
    users = set(_user_texts(train_examples))
    assert [(p, u) for rx, p in patterns for u in users if rx.match(u)] == []


def test_evaluation_uses_held_out_phrasings_and_entities():
    examples = data.make_examples(400, "eval", 1234)
    patterns = [_as_regex(p) for p in _held_out_phrasings()]
    users = _user_texts(examples)
    assert sum(1 for u in users if any(rx.match(u) for rx in patterns)) > 50
    cities = [c["function"]["arguments"]["city"] for ex in examples for c in ex.get("expected_calls", [])
              if "city" in c["function"]["arguments"]]
    assert cities and all(c.replace(" ", "_") in data._CITIES_EVAL for c in cities)


def test_training_arguments_are_mostly_made_up_values(train_examples):
    """Copying has to be learned: most cities and many currency codes are in no list."""
    known = {c.replace("_", " ") for c in data._CITIES_TRAIN}
    cities, codes = [], []
    for ex in train_examples:
        for call in ex.get("expected_calls", []):
            args = call["function"]["arguments"]
            if "city" in args:
                cities.append(args["city"])
            if "base" in args:
                codes += [args["base"], args["target"]]
    made_up = [c for c in cities if c not in known]
    assert len(made_up) / len(cities) > 0.45
    assert len(set(made_up)) / len(made_up) > 0.9  # practically never the same one twice
    assert sum(1 for c in codes if c not in data._CURRENCIES_TRAIN) / len(codes) > 0.3
    # every argument value is copied from the request (units are mapped to their enum names)
    for ex in train_examples:
        for call in ex.get("expected_calls", []):
            for key, value in call["function"]["arguments"].items():
                if key in ("city", "query", "expression", "base", "target"):
                    assert str(value) in ex["messages"][-1]["content"], (key, value, ex["messages"][-1])



def test_splits_are_reproducible_from_the_seed():
    assert data.make_examples(50, "train", 3) == data.make_examples(50, "train", 3)
    assert data.make_examples(50, "eval", 3) == data.make_examples(50, "eval", 3)
    assert data.make_examples(50, "train", 3) != data.make_examples(50, "train", 4)
