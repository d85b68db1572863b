"""`compile_transform` (made once per field) gives what `apply_transform` gives: the same values, fresh
containers on every call (a placeholder still gives the variable itself), and the same errors for unknown
names and bad paths."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsing.transform import GENERATED_DEPTH, GENERATED_NODES, apply_transform, compile_transform

NAMES = ["content", "name", "id", "a"]
LEAVES = st.one_of(
    st.sampled_from(["{content}", "{name}", "{id}", "{a.b}", "{content.x.y}", "{missing}", "{a}", "plain", "{",
                     "{content} x", "function"]),
    st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
TRANSFORMS = st.recursive(LEAVES, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(st.sampled_from(["type", "function", "k", "x"]), children,
                                                    max_size=3)), max_leaves=8)
VALUES = st.recursive(st.one_of(st.text(max_size=3), st.integers(), st.none()), lambda children: st.one_of(
    st.lists(children, max_size=2), st.dictionaries(st.sampled_from(["b", "x", "y"]), children, max_size=2)),
    max_leaves=4)


def outcome(make, scope):
    try:
        return "ok", make(scope)
    except (KeyError, ValueError) as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=400, deadline=None)
@given(transform=TRANSFORMS, scope=st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=4))
def test_compiled_transform_equals_apply_transform(transform, scope):
    compiled = compile_transform(transform)
    assert outcome(compiled, scope) == outcome(lambda s: apply_transform(transform, s), scope)
    first, second = outcome(compiled, scope), outcome(compiled, scope)
    if first[0] == "ok" and isinstance(transform, (dict, list)):
        assert first[1] is not second[1]  # a fresh container each time, as apply_transform builds


def _nested(depth: int):
    """A transform ``depth`` containers deep, with placeholders and constants at every level."""
    node = ["{content}", "{name}"]
    for i in range(depth):
        node = {"k": node, "name": "{name}", "n": i} if i % 2 else [node, "{content.x}", None]
    return node


@pytest.mark.parametrize("transform", [
    _nested(GENERATED_DEPTH - 2), _nested(GENERATED_DEPTH + 5),  # one generated function; closures (too deep)
    {f"key {i} 'q\"\\\n": "{content}" if i % 3 else i for i in range(40)},  # keys that need escaping as literals
    {str(i): "{name}" for i in range(GENERATED_NODES + 1)},  # too many values: closures
    {"a": "{missing}", "b": "{content.x.y}"}, ["{content.x}", "{a.b}"], {}, [],
])
@pytest.mark.parametrize("scope", [{"content": {"x": {"y": 1}}, "name": "f"}, {"content": {"x": 2}, "name": "g"},
                                   {"content": "s"}])
def test_compiled_transform_any_size_equals_apply_transform(transform, scope):
    compiled = compile_transform(transform)
    assert outcome(compiled, scope) == outcome(lambda s: apply_transform(transform, s), scope)
    if outcome(compiled, scope)[0] == "ok":
        assert compiled(scope) is not compiled(scope)  # fresh containers every call
