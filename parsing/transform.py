"""Transform templates: reshape a parsed region value (spec section 6).

A transform is any JSON value copied as is, except strings that consist of
exactly one placeholder ``{name}`` or ``{name.key.key}``: those are replaced by
the variable itself, type preserved (not stringified, not copied). Variables
are ``content`` (the parsed body) and the named groups captured by the field's
open pattern; with ``transform_each``, the keys of each list element instead of
``content``.
"""

from __future__ import annotations

from typing import Any, Callable

import regex

from .budget import NO_LIMITS, ParseContext
from .errors import TemplateError

# A whole-string placeholder: a name, optionally followed by dotted keys. Unicode-aware like the reference.
PLACEHOLDER = regex.compile(r"\{(\w+(?:\.\w+)*)\}")


def check_transform_strings(transform: Any, path: str, scope: str) -> None:
    """Reject strings that mix a placeholder with other text (``"id: {name}"``).

    `path` is the JSON path of `transform`; `scope` starts the message (``"Field 'x'"``, as the reference words it).

    Raises:
        TemplateError: with the JSON path of the offending string.
    """
    if isinstance(transform, dict):
        for key, value in transform.items():
            check_transform_strings(value, f"{path}.{key}", scope)
    elif isinstance(transform, list):
        for i, value in enumerate(transform):
            check_transform_strings(value, f"{path}[{i}]", scope)
    elif isinstance(transform, str):
        if PLACEHOLDER.search(transform) and not PLACEHOLDER.fullmatch(transform):
            raise TemplateError(
                f"{scope}: transform string {transform!r} mixes a {{placeholder}} with literal text. Use either a "
                'whole-string placeholder (e.g. "{content}") or a plain literal; string interpolation is not supported.',
                path,
            )


def resolve_placeholder(path: str, scope: dict) -> Any:
    """Look up ``name.key.key`` in ``scope``.

    Raises:
        KeyError: the root name is not a variable.
        ValueError: a key is missing, or a step indexes into something that is not an object.
    """
    root, *keys = path.split(".")
    if root not in scope:
        raise KeyError(f"transform placeholder '{{{path}}}' is not defined. Available: {sorted(scope)}")
    value = scope[root]
    for key in keys:
        if not isinstance(value, dict):
            raise ValueError(f"transform placeholder '{{{path}}}' cannot index into {type(value).__name__} at '{key}'")
        if key not in value:
            raise ValueError(f"transform placeholder '{{{path}}}' is missing key '{key}'. Available: {sorted(value)}")
        value = value[key]
    return value


def apply_transform(transform: Any, scope: dict) -> Any:
    """Instantiate ``transform`` with the variables in ``scope`` (errors as in `resolve_placeholder`)."""
    if isinstance(transform, dict):
        return {key: apply_transform(value, scope) for key, value in transform.items()}
    if isinstance(transform, list):
        return [apply_transform(value, scope) for value in transform]
    if isinstance(transform, str):
        whole = PLACEHOLDER.fullmatch(transform)
        if whole:
            return resolve_placeholder(whole.group(1), scope)
    return transform


def compile_transform(transform: Any) -> Callable[[dict], Any]:
    """``transform`` as a function of the variables, equal to ``lambda scope: apply_transform(transform, scope)``
    (same values, same errors, fresh containers on every call) without matching a placeholder regex on every
    string of it at every region close. Made once per field when the template is loaded: a container of at most
    `GENERATED_NODES` values, `GENERATED_DEPTH` deep, becomes one generated function that builds it with one
    display (a tool-call transform took six calls), any other transform nested closures."""
    if isinstance(transform, (dict, list)) and _fits_generated(transform):
        return _generated(transform)
    return _closures(transform)


# Bounds of a generated transform (`compile_transform`): its source is compiled once per field, and Python's
# parser limits how deep displays nest.
GENERATED_NODES = 256
GENERATED_DEPTH = 16


def _fits_generated(transform: Any) -> bool:
    n, stack = 0, [(transform, 1)]
    while stack:
        item, depth = stack.pop()
        n += 1
        if n > GENERATED_NODES or depth > GENERATED_DEPTH:
            return False
        if isinstance(item, dict):
            if any(type(key) is not str for key in item):
                return False
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)
    return True


def _generated(transform: Any) -> Callable[[dict], Any]:
    """One function building ``transform`` as a display: keys are literals (``repr`` of a str is one), every other
    constant and every placeholder path is a global of the function's own namespace, so no template text is ever
    source code."""
    names: dict[str, Any] = {"_resolve": resolve_placeholder, "_type": type, "_dict": dict, "__builtins__": {}}

    def constant(value: Any) -> str:
        name = f"_c{len(names)}"
        names[name] = value
        return name

    def source(node: Any) -> str:
        if isinstance(node, dict):
            return "{" + ", ".join(f"{key!r}: {source(value)}" for key, value in node.items()) + "}"
        if isinstance(node, list):
            return "[" + ", ".join(source(value) for value in node) + "]"
        if isinstance(node, str):
            whole = PLACEHOLDER.fullmatch(node)
            if whole:
                path = constant(whole.group(1))
                root, *keys = whole.group(1).split(".")
                if not keys:  # as the closure below: the variable, else resolve's error
                    return f"(scope[{path}] if {path} in scope else _resolve({path}, scope))"
                # ``name.key.key``: each step a plain dict holding the key, read inline (a call to `_resolve` cost
                # about as much as the rest of a tool call's transform); anything else goes to `_resolve`, for
                # its value (a dict subclass) or its error. (``_v``: each placeholder's own, read as soon as set.)
                steps = [f"_type(_v := scope.get({constant(root)})) is _dict"]
                for n, key in enumerate(keys):
                    key_name = constant(key)
                    steps.append(f"{key_name} in _v")
                    if n < len(keys) - 1:
                        steps.append(f"_type(_v := _v[{key_name}]) is _dict")
                return f"(_v[{key_name}] if {' and '.join(steps)} else _resolve({path}, scope))"
        return constant(node)

    exec(f"def make_transform(scope):\n    return {source(transform)}\n", names)  # noqa: S102 - see above
    return names["make_transform"]


def _closures(transform: Any) -> Callable[[dict], Any]:
    """`compile_transform` as nested closures (any size, any depth)."""
    # Plain loops, not comprehensions: on Python 3.11 a comprehension is one more function call per container.
    if isinstance(transform, dict):
        items = [(key, _closures(value)) for key, value in transform.items()]

        def make_dict(scope: dict) -> dict:
            out = {}
            for key, make in items:
                out[key] = make(scope)
            return out
        return make_dict
    if isinstance(transform, list):
        makers = [_closures(value) for value in transform]

        def make_list(scope: dict) -> list:
            out = []
            for make in makers:
                out.append(make(scope))
            return out
        return make_list
    if isinstance(transform, str):
        whole = PLACEHOLDER.fullmatch(transform)
        if whole:
            path = whole.group(1)
            if "." not in path:
                return lambda scope: scope[path] if path in scope else resolve_placeholder(path, scope)
            return lambda scope: resolve_placeholder(path, scope)
    return lambda scope: transform


def transform_size(transform: Any) -> int:
    """How many values one build of ``transform`` makes: each container, each item (a placeholder's value is one:
    it is not copied)."""
    n, stack = 0, [transform]
    while stack:
        item = stack.pop()
        n += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return n


def transform_value(value: Any, field, captures: dict, ctx: ParseContext = NO_LIMITS) -> Any:
    """Apply a field's transform to its parsed value.

    Args:
        value: the content parser's output.
        field: a `FieldSpec` (uses ``name``, ``transform``, ``transform_each``).
        captures: named groups of the open delimiter match (groups that did not take part are absent).
        ctx: the parse's limits: with a deadline, it is checked before each ``transform_each`` item (one region
            close can build a transform thousands of times: a 48 KB list times a 5,000-placeholder transform is
            30 million values, seconds of work that the checks between delimiters never see); with a values
            count (``ctx.values``), the values about to be built are counted on it first.

    Raises:
        ValueError: ``transform_each`` on a value that is not a list of objects; errors of `resolve_placeholder`.
        KeyError: an unknown placeholder.
        BudgetExceededError: ``ctx``'s deadline passed.
        ValuesBudgetError: building would pass ``ctx.values``' limit (nothing is built).
    """
    if field.transform is None:
        return value
    make = getattr(field, "transform_fn", None)
    if make is None:
        transform = field.transform
        make = lambda scope: apply_transform(transform, scope)  # noqa: E731 - a field built without one
    values = ctx.values
    if values is not None:
        size = getattr(make, "size", None)
        if size is None:
            size = make.size = transform_size(field.transform)
    if not field.transform_each:
        if values is not None:
            values.spend(size, field.name)
        return make({**captures, "content": value})
    if not isinstance(value, list):
        raise ValueError(f"Field '{field.name}': transform_each requires the parsed content to be a list, "
                         f"got {type(value).__name__}.")
    if values is not None:
        values.spend(size * len(value), field.name)
    out = []
    timed = ctx.deadline is not None
    for item in value:
        if timed:
            ctx.check()
        if not isinstance(item, dict):
            raise ValueError(f"Field '{field.name}': transform_each requires each list element to be a dict, "
                             f"got {type(item).__name__}.")
        out.append(make({**captures, **item}))
    return out
