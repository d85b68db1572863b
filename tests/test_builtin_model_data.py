"""The built-in model's synthetic data: the evaluation split stays held out from training,
training asks for copying (made-up argument values) rather than recall, plain questions get
direct answers, and answers after tool results state the results' values."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples.builtin_model import data  # noqa: E402

N_TRAIN = 6000


@pytest.fixture(scope="module")
def train_examples():
    return (data.make_examples(N_TRAIN, "train", 0) + data.make_examples(500, "train", 0, drill=True)
            + data.make_echo_examples(500, 0) + data.make_examples(2000, "train", 0, focus=True)
            + data.make_examples(300, "train", 0, drill=True, focus=True) + data.make_echo_examples(300, 0, focus=True)
            + data.make_examples(2000, "train", 0, boundary=True)
            + data.make_examples(300, "train", 0, drill=True, boundary=True)
            + data.make_echo_examples(300, 0, focus=True, boundary=True)
            + data.make_examples(2000, "train", 0, exact=True)
            + data.make_examples(300, "train", 0, drill=True, exact=True))


@pytest.fixture(scope="module")
def eval_examples():
    return data.make_examples(480, "eval", 1234)


def _all_text(examples):
    return "\n".join(json.dumps(ex, ensure_ascii=False) for ex in examples)


def test_entity_lists_are_disjoint():
    assert not set(data._CITIES_TRAIN) & set(data._CITIES_EVAL)
    assert not set(data._TOPICS_TRAIN) & set(data._TOPICS_EVAL)
    assert not set(data._CURRENCIES_TRAIN) & set(data._CURRENCIES_EVAL)
    assert not {c for c, _ in data._CAPITALS} & {c.replace("_", " ") for c in data._CITIES_EVAL}
    for kind, lists in data.PHRASINGS.items():
        assert lists["held_out"] and not set(lists["train"]) & set(lists["held_out"]), kind


@pytest.mark.slow
def test_no_evaluation_entity_appears_in_training(train_examples):
    # spelled independently of data.eval_names_in: every city's words, in order, anywhere
    text = _all_text(train_examples).lower()
    words = re.findall(r"[a-z]+", text)
    n = max(len(c.split("_")) for c in data._CITIES_EVAL)
    grams = {" ".join(words[i:i + k]) for k in range(1, n + 1) for i in range(len(words) - k + 1)}
    cities = {" ".join(re.findall(r"[a-z]+", c.lower())) for c in data._CITIES_EVAL}
    assert cities & grams == set()
    assert [t for t in data._TOPICS_EVAL if t.lower() in text] == []
    assert {c.lower() for c in data._CURRENCIES_EVAL} & grams == set()


def test_held_out_phrasings_never_trained(train_examples):
    patterns = [(data.phrasing_pattern(p), p) for p in data.held_out_phrasings()]
    assert len(patterns) >= 25
    users = set(data.user_messages(train_examples))
    assert [(p, u) for rx, p in patterns for u in users if rx.match(u)] == []


def test_plain_held_out_questions_never_trained(train_examples):
    users = set(data.user_messages(train_examples))
    held_out = data.plain_held_out_questions()
    assert len(held_out) > 40
    assert set(held_out) & users == set()
    assert set(held_out) & set(data.plain_training_questions()) == set()


def test_overlap_check_finds_leaks(train_examples, eval_examples):
    assert data.overlap_with_training(eval_examples, train_examples) == {
        "user_messages": 0, "held_out_phrasings": 0, "eval_names": 0, "plain_questions": 0,
        "training_examples": len(train_examples)}
    leaky = train_examples + eval_examples[:40]
    counts = data.overlap_with_training(eval_examples, leaky)
    assert counts["user_messages"] >= 40 and counts["eval_names"] > 0 and counts["held_out_phrasings"] > 0


def test_evaluation_uses_only_held_out_phrasings_and_entities(eval_examples):
    patterns = [data.phrasing_pattern(p) for p in data.held_out_phrasings()]
    held_out_plain = set(data.plain_held_out_questions())
    for ex in eval_examples:
        user = data.user_messages([ex])[-1]
        if ex["kind"] == "plain":
            assert user in held_out_plain, user
        else:
            assert any(rx.match(user) for rx in patterns), user
    cities = [c["function"]["arguments"]["city"] for ex in eval_examples for c in ex.get("expected_calls", [])
              if "city" in c["function"]["arguments"]]
    assert cities and all(c.replace(" ", "_") in data._CITIES_EVAL for c in cities)
    kinds = [ex["kind"] for ex in eval_examples]
    assert min(kinds.count(k) for k in ("call", "answer", "plain")) >= 100


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
    assert len(made_up) / len(cities) > 0.55
    assert len(set(made_up)) / len(made_up) > 0.9  # practically never the same one twice
    assert sum(1 for c in codes if c not in data._CURRENCIES_TRAIN) / len(codes) > 0.4
    # every argument value is copied from the request (units are mapped to their enum names)
    for ex in train_examples:
        for call in ex.get("expected_calls", []):
            for key, value in call["function"]["arguments"].items():
                if key in ("city", "query", "expression", "base", "target"):
                    assert str(value) in ex["messages"][-1]["content"], (key, value, ex["messages"][-1])


def test_plain_questions_get_direct_answers_with_and_without_tools(train_examples):
    plain = [ex for ex in train_examples if ex["kind"] == "plain"]
    assert len(plain) / len(train_examples) > 0.2
    assert all(ex["target"]["content"] and "tool_calls" not in ex["target"] for ex in plain)
    offered = [ex for ex in plain if ex["tools"]]
    assert 0.5 < len(offered) / len(plain) < 0.9
    # web search is offered too, and still not called for a general question
    assert any("web_search" in {t["function"]["name"] for t in ex["tools"]} for ex in offered)


def test_answers_state_every_value_of_the_tool_results(train_examples, eval_examples):
    answers = [ex for ex in train_examples if ex["kind"] == "answer"]
    assert len(answers) > 1000
    for ex in answers:
        last_call = max(i for i, m in enumerate(ex["messages"]) if m.get("tool_calls"))
        calls = ex["messages"][last_call]["tool_calls"]
        results = [json.loads(m["content"]) for m in ex["messages"][last_call + 1:]]
        assert len(results) == len(calls) and all(m["role"] == "tool" for m in ex["messages"][last_call + 1:])
        values = [v for c, r in zip(calls, results) for v in data.stated_values(c, r)]
        assert values and all(v in ex["target"]["content"] for v in values), ex["target"]["content"]
    for ex in eval_examples:
        if ex["kind"] == "answer":
            tool_text = "".join(m["content"] for m in ex["messages"] if m["role"] == "tool")
            assert ex["expected_values"] and all(v in tool_text for v in ex["expected_values"])


def test_copy_drills_are_short_and_ask_for_a_value_back():
    drills = data.make_echo_examples(300, 0)
    for ex in drills:
        assert ex["tools"] is None and ex["kind"] == "plain"
        user, answer = ex["messages"][0]["content"], ex["target"]["content"]
        # the answer repeats the request's values: every word outside the answer's frame
        frame = {"The", "user", "is", "code", "Your", "name", "You", "live", "in"}
        values = [w for w in re.findall(r"[A-Za-z0-9]+", answer) if w not in frame]
        assert values and all(re.search(r"\b" + w + r"\b", user) for w in values), (user, answer)
    assert sum(len(ex["messages"][0]["content"]) for ex in drills) / len(drills) < 90


def test_three_value_copy_drills_answer_with_the_requested_values():
    # values are words, numbers and codes: no commas, no "then"/"and"
    three = re.compile(r"(?:First (.+?), then (.+?), then|Cities: (.+?), (.+?) and) (.+?)\. (.+)$")
    drills = [(ex, three.match(ex["messages"][0]["content"])) for ex in data.make_echo_examples(600, 0, focus=True)]
    drills = [(ex, m) for ex, m in drills if m]
    assert len(drills) > 20
    for ex, m in drills:
        user, answer = ex["messages"][0]["content"], ex["target"]["content"]
        x, y, z, question = m.group(1) or m.group(3), m.group(2) or m.group(4), m.group(5), m.group(6)
        expected = {"What came second?": y, "What came last?": z, "Repeat them.": f"{x}, {y} and {z}"}[question]
        assert answer == expected, (user, answer)


def test_focus_mix_weights_what_v2_got_wrong():
    def share(examples, pred):
        return sum(map(pred, examples)) / len(examples)

    main = data.make_examples(3000, "train", 5)
    focus = data.make_examples(3000, "train", 5, focus=True)
    def two_calls(ex):  # among tool requests: two calls made, or two results to state
        return len(ex.get("expected_calls") or [m for m in ex["messages"][-2:] if m["role"] == "tool"]) == 2

    answers = lambda ex: ex["kind"] == "answer"  # noqa: E731
    plain = lambda ex: ex["kind"] == "plain"  # noqa: E731
    main_req, focus_req = [x for x in main if x["kind"] != "plain"], [x for x in focus if x["kind"] != "plain"]
    assert share(focus_req, two_calls) > 1.5 * share(main_req, two_calls)
    # weights 4/13 against 3/12 for both kinds
    assert share(focus, answers) > 1.1 * share(main, answers)
    assert share(focus, plain) > 1.1 * share(main, plain)
    # half the focus cities are spliced from pieces of training words: each piece occurs in one
    pieces = data._piece_words()
    spliced = [data._spliced_word(__import__("random").Random(i)) for i in range(200)]
    for w in spliced:
        assert any(w.startswith(p[i:j]) for p in pieces for i in range(len(p)) for j in range(i + 2, len(p) + 1)), w
    # the focus stream is its own: none of its blocks repeats the main stream's examples
    assert data.training_block("focus", 0, 0, 64, 0.15, 0.1) != data.training_block("main", 0, 0, 64, 0.15, 0.1)
    with pytest.raises(ValueError):
        data.training_block("mian", 0, 0, 8)


def test_splits_are_reproducible_from_the_seed():
    assert data.make_examples(50, "train", 3) == data.make_examples(50, "train", 3)
    assert data.make_examples(50, "eval", 3) == data.make_examples(50, "eval", 3)
    assert data.make_examples(50, "train", 3) != data.make_examples(50, "train", 4)
    assert data.make_echo_examples(20, 3) == data.make_echo_examples(20, 3)
    assert data.make_examples(50, "train", 3, focus=True) == data.make_examples(50, "train", 3, focus=True)


def _calls_of(ex):
    """The calls of a call example, or the calls an answer example's results came from (the last
    assistant turn with calls: earlier exchanges may have their own)."""
    return ex.get("expected_calls") or [m for m in ex["messages"] if m.get("tool_calls")][-1]["tool_calls"]


def test_boundary_mix_puts_words_after_values_and_copies_only_the_value():
    """Part 4's mix: a city is often followed by more words ("... in Harborage tonight?"), and the
    call's value is the name alone, never the words after it."""
    examples = data.make_examples(3000, "train", 9, boundary=True)
    followed = total = 0
    trailers = [t.strip(" ,.!;:-()") for t in data._TRAILERS if t.strip(" ,.!;:-()")]
    for ex in examples:
        if ex["kind"] == "plain":
            continue
        user = [m for m in ex["messages"] if m["role"] == "user"][-1]["content"]
        for call in _calls_of(ex):
            city = call["function"]["arguments"].get("city")
            if city is None:
                continue
            total += 1
            after = user[user.index(city) + len(city):]
            # the value is whole: the next character ends the name
            assert after[:1] in ("", " ", "?", ".", "!", ",", ";", ":", ")"), (user, city)
            assert not any(city.lower().endswith(" " + t.split()[0]) for t in trailers), (user, city)
            followed += bool(re.match(r"[ ,;:(]+[a-z]", after))
    assert total > 1000 and followed / total > 0.3


def test_boundary_mix_has_long_names_mixed_pairs_and_both_currencies():
    examples = data.make_examples(3000, "train", 9, boundary=True)
    focus = data.make_examples(3000, "train", 9, focus=True)

    def cities(exs):
        return [c["function"]["arguments"]["city"] for ex in exs if ex["kind"] != "plain" for c in _calls_of(ex)
                if "city" in c["function"]["arguments"]]

    mean = lambda xs: sum(map(len, xs)) / len(xs)  # noqa: E731
    assert mean(cities(examples)) > 1.1 * mean(cities(focus))
    assert sum(len(c) >= 11 for c in cities(examples)) / len(cities(examples)) > 0.3
    # two calls of different tools in one request, in the order the message asks
    mixed = [ex for ex in examples if ex["kind"] == "call" and len({c["function"]["name"] for c in _calls_of(ex)}) == 2]
    assert len(mixed) > 100
    for ex in mixed:
        user = ex["messages"][-1]["content"]
        first, second = ([str(v) for v in c["function"]["arguments"].values() if str(v) in user] for c in _calls_of(ex))
        assert first and second, user
        if set(first) & set(second):  # the weather and the time of one city
            continue
        assert min(user.index(v) for v in first) < max(user.rindex(v) for v in second), user
    # exchange rates always name both currencies, each copied from the message
    fx = [c for ex in examples if ex["kind"] != "plain" for c in _calls_of(ex)
          if c["function"]["name"] == "get_exchange_rate"]
    assert len(fx) > 150
    assert all(set(c["function"]["arguments"]) == {"base", "target"} for c in fx)
    # the boundary stream is its own
    assert data.training_block("boundary", 0, 0, 64, 0.15, 0.1) != data.training_block("focus", 0, 0, 64, 0.15, 0.1)


def test_boundary_mix_answers_questions_it_cannot_know_briefly_without_a_call():
    examples = data.make_examples(3000, "train", 9, boundary=True)
    plain = [ex for ex in examples if ex["kind"] == "plain"]
    unknown = [ex for ex in plain if ex["target"]["content"] in data._UNKNOWN_ANSWERS]
    assert len(unknown) > 0.4 * len(plain)
    assert sum(bool(ex["tools"]) for ex in unknown) > 0.5 * len(unknown)
    assert all("tool_calls" not in ex["target"] and len(ex["target"]["content"]) < 100 for ex in unknown)
    # some of them say "in <word>" (where v3 called get_weather with the word as the city)
    assert sum(" in " in ex["messages"][-1]["content"] for ex in unknown) > 50
    assert not set(data.user_messages(plain)) & set(data.plain_held_out_questions())


def test_exact_mix_asks_for_units_forecasts_and_single_calculations():
    """Part 5's mix: a requested unit (lower case or capitalised, anywhere in the message) is always
    in the call, lower case; forecasts worded as look-ups call get_weather; a single calculation is
    one call; the rest is the boundary mix, and the stream is its own."""
    examples = data.make_examples(3000, "train", 9, exact=True)
    calls = [(ex["messages"][-1]["content"] if ex["kind"] == "call" else
              [m for m in ex["messages"] if m["role"] == "user"][-1]["content"], _calls_of(ex))
             for ex in examples if ex["kind"] != "plain"]
    units = [(u, c) for u, c in calls if len(c) == 1 and "unit" in c[0]["function"]["arguments"]]
    assert len(units) > 0.1 * len(calls)
    starts = 0
    for user, (call,) in units:
        unit = call["function"]["arguments"]["unit"]
        assert unit in ("celsius", "fahrenheit") and unit in user.lower(), user
        assert user.lower().count("celsius") + user.lower().count("fahrenheit") == 1, user
        starts += user.lower().index(unit) < user.index(call["function"]["arguments"]["city"])
    assert starts > 0.15 * len(units)  # the unit before the city, as well as after it
    # a single weather request without a unit word never gets one
    for user, cs in calls:
        if len(cs) == 1 and cs[0]["function"]["name"] == "get_weather" and "unit" not in cs[0]["function"]["arguments"]:
            assert "celsius" not in user.lower() and "fahrenheit" not in user.lower(), user
    looked_up = [(u, c) for u, c in calls if re.search(r"\b(?:look|forecast|find|fetch)", u, re.I)
                 and all(x["function"]["name"] == "get_weather" for x in c)]
    assert len(looked_up) > 100
    single_calcs = [c for u, c in calls if len(c) == 1 and c[0]["function"]["name"] == "calculate"]
    assert len(single_calcs) > 150
    assert data.training_block("exact", 0, 0, 64, 0.15, 0.1) != data.training_block("boundary", 0, 0, 64, 0.15, 0.1)
