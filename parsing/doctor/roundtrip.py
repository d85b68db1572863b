"""Round trip: render sample assistant messages with a chat template, parse them back, diff.

For each sample message the conversation ``[user, message]`` is rendered with
the tokenizer's chat template; the text after the generation prompt (the
prompt rendered for ``[user]`` with ``add_generation_prompt=True``) is what the
model would have generated. It is cut after the first stop token (the
tokenizer's ``eos_token`` by default: generation stops there, and the newline a
chat template puts after it is never generated), parsed with the response
template with the generation prompt as ``prefix``, and compared with the
original message (empty values dropped, as the parser drops them).

The truncated sample renders the reasoning sample and cuts the generation in
the middle of the reasoning text, as ``max_new_tokens`` would: it passes when
parsing does not raise and gives the reasoning written so far.

transformers is imported only when `roundtrip` is given a tokenizer *path*.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..streams import parse_stream
from ..template import load_template
from .diff import DiffEntry, diff_values, format_diff
from .textdiff import common_prefix

__all__ = ["SAMPLE_TOOLS", "Sample", "sample_cases", "RoundTripCase", "RoundTripReport", "roundtrip",
           "split_generation"]


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


#: Tools offered in the round-trip conversation (rendered into the prompt, and used to type arguments).
SAMPLE_TOOLS = [
    _tool("get_weather", "Get the weather forecast for a city.",
          {"city": {"type": "string", "description": "City name"},
           "days": {"type": "integer", "description": "Number of days"}}, ["city"]),
    _tool("get_time", "Get the current time in a time zone.",
          {"tz": {"type": "string", "description": "IANA time zone"}}, ["tz"]),
]

USER_MESSAGE = "What is the weather in Paris, and what time is it there?"
_REASONING = "The user wants the weather and the time in Paris. I know the answer without tools."


def _call(name: str, arguments: dict) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


@dataclass(frozen=True)
class Sample:
    """A sample assistant message. ``truncate``: cut the rendered generation in the middle of the reasoning."""

    name: str
    message: dict
    truncate: bool = False


def sample_cases() -> list[Sample]:
    """The five samples of issue #6: content only; reasoning and content; one tool call; parallel calls;
    a truncated output (reasoning cut short). Fresh copies on every call."""
    return [
        Sample("content", {"role": "assistant", "content": "It is sunny in Paris, and it is 3 pm there."}),
        Sample("reasoning+content", {"role": "assistant", "reasoning_content": _REASONING,
                                     "content": "It is sunny in Paris, and it is 3 pm there."}),
        Sample("tool call", {"role": "assistant", "content": "",
                             "tool_calls": [_call("get_weather", {"city": "Paris", "days": 3})]}),
        Sample("parallel tool calls", {"role": "assistant", "content": "", "tool_calls": [
            _call("get_weather", {"city": "Paris", "days": 1}), _call("get_time", {"tz": "Europe/Paris"})]}),
        Sample("truncated", {"role": "assistant", "reasoning_content": _REASONING,
                             "content": "It is sunny in Paris."}, truncate=True),
    ]


@dataclass
class RoundTripCase:
    """The result for one sample.

    Attributes:
        name: the sample's name.
        passed: parsing did not raise and gave the expected message.
        expected: the message the parse should give (the original without empty values; for the truncated
            sample, the reasoning written before the cut, when it can be located).
        parsed: what the response template gave, or None on error.
        error: ``"Type: message"`` when rendering or parsing raised, else None.
        diff: differences between `expected` and `parsed`.
        prefix, generation: the prompt and the generated text that were parsed.
        notes: observations, e.g. that the chat template did not render a field.
    """

    name: str
    passed: bool
    expected: dict
    parsed: dict | None
    error: str | None
    diff: list[DiffEntry]
    prefix: str = ""
    generation: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-able form with the same keys (diff entries as dicts)."""
        return {"name": self.name, "passed": self.passed, "expected": self.expected, "parsed": self.parsed,
                "error": self.error, "diff": [d.to_dict() for d in self.diff], "prefix": self.prefix,
                "generation": self.generation, "notes": list(self.notes)}


@dataclass
class RoundTripReport:
    """All samples' results, in sample order."""

    cases: list[RoundTripCase]

    @property
    def passed(self) -> bool:
        """True if every sample passed."""
        return all(c.passed for c in self.cases)

    def to_dict(self) -> dict:
        """``{"passed", "cases": [...]}``."""
        return {"passed": self.passed, "cases": [c.to_dict() for c in self.cases]}

    def format(self) -> str:
        """One PASS/FAIL line per sample, with its diff, error and notes indented below."""
        lines = []
        for c in self.cases:
            lines.append(f"{'PASS' if c.passed else 'FAIL'}  {c.name}")
            if c.error:
                lines.append(f"    error: {c.error}")
            if c.diff:
                lines.append(format_diff(c.diff, "    "))
            lines.extend(f"    note: {n}" for n in c.notes)
        return "\n".join(lines)


def _prune(message: dict) -> dict:
    return {k: v for k, v in message.items() if k == "role" or v not in (None, "", [], {})}


def _token_boundary(tokenizer: Any, text: str, limit: int) -> int:
    """The largest token boundary of `text` at or before `limit` (a model generates whole tokens, so the split
    must not cut `<think>` into `<t` + `hink>`); `limit` itself when the tokenizer gives no offsets."""
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ends = [end for _, end in enc["offset_mapping"] if end <= limit]
    except Exception:  # noqa: BLE001 - slow tokenizers and stand-ins have no offsets
        return limit
    return max(ends, default=0) if ends else limit


def split_generation(tokenizer: Any, conversation: list[dict], message: dict, *, tools: list | None = None,
                     stop: list[str] | None = None) -> tuple[str, str, list[str]]:
    """Render ``conversation + [message]`` and split it into the prompt and the assistant's generation.

    Args:
        tokenizer: has ``apply_chat_template`` (transformers' signature) and optionally ``eos_token``.
        conversation: the messages before the assistant turn.
        message: the assistant message.
        tools: tool schemas passed to the chat template.
        stop: strings that end generation; default ``[tokenizer.eos_token]``. The generation is cut right after
            the first one (kept: ``generate`` keeps the stop token in its output).

    Returns:
        ``(prefix, generation, notes)``: the generation prompt, the assistant text after it, and notes when the
        rendered turn does not start with the generation prompt (then the longest common prefix is used).

    Raises:
        whatever the chat template raises.
    """
    kw = {"tools": tools} if tools else {}
    prompt = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True, **kw)
    full = tokenizer.apply_chat_template(conversation + [message], tokenize=False, **kw)
    notes = []
    if full.startswith(prompt):
        prefix, generation = prompt, full[len(prompt):]
    else:
        common = _token_boundary(tokenizer, prompt, common_prefix(prompt, full))
        prefix, generation = full[:common], full[common:]
        notes.append(f"the rendered assistant turn does not start with the generation prompt (they differ after "
                     f"{prompt[max(0, common - 30):common]!r}: generation prompt continues {prompt[common:][:40]!r},"
                     f" the turn continues {full[common:][:40]!r}); parsed from the common part on")
    if stop is None:
        eos = getattr(tokenizer, "eos_token", None)
        stop = [eos] if isinstance(eos, str) and eos else []
    cut = None
    for s in stop:
        i = generation.find(s)
        if i >= 0 and (cut is None or i + len(s) < cut):
            cut = i + len(s)
    if cut is not None:
        generation = generation[:cut]
    return prefix, generation, notes


def _truncate(generation: str, reasoning: str) -> tuple[str, str | None]:
    """Cut `generation` in the middle of `reasoning` (at a space); return (cut text, reasoning written so far)."""
    at = generation.find(reasoning)
    if at < 0:
        return generation[: len(generation) // 2], None
    middle = reasoning.rfind(" ", 0, len(reasoning) // 2)
    middle = middle if middle > 0 else len(reasoning) // 2
    return generation[: at + middle], reasoning[:middle].strip()


def _load_tokenizer(tokenizer: Any) -> Any:
    if isinstance(tokenizer, str) or hasattr(tokenizer, "__fspath__"):
        from transformers import AutoTokenizer  # heavy; only when asked to load by path

        return AutoTokenizer.from_pretrained(str(tokenizer))
    return tokenizer


def roundtrip(template: Any, tokenizer: Any, *, samples: list[Sample] | None = None,
              tools: list | None = None, conversation: list[dict] | None = None,
              stop: list[str] | None = None) -> RoundTripReport:
    """Render each sample with the chat template, parse the assistant turn with `template`, diff.

    Args:
        template: anything `parsing.load_template` takes.
        tokenizer: a transformers tokenizer with a chat template, or a path to load one from (imports
            transformers); any object with ``apply_chat_template`` works.
        samples: default `sample_cases()`.
        tools: tool schemas rendered into the prompt and used to type arguments; default `SAMPLE_TOOLS`.
        conversation: the messages before the assistant turn; default one user message.
        stop: see `split_generation`.

    Returns:
        a `RoundTripReport`; a chat template that fails to render a sample makes that sample fail with the
        error (it does not raise).

    Raises:
        parsing.TemplateError: the response template does not load.
    """
    compiled = load_template(template)
    tokenizer = _load_tokenizer(tokenizer)
    tools = SAMPLE_TOOLS if tools is None else tools
    conversation = conversation or [{"role": "user", "content": USER_MESSAGE}]
    cases = []
    for sample in samples or sample_cases():
        message = copy.deepcopy(sample.message)
        expected = _prune(sample.message)
        try:
            prefix, generation, notes = split_generation(tokenizer, copy.deepcopy(conversation), message,
                                                         tools=tools, stop=stop)
        except Exception as exc:  # a chat template can raise anything (jinja2 errors, TypeError, ...)
            cases.append(RoundTripCase(sample.name, False, expected, None,
                                       f"chat template: {type(exc).__name__}: {exc}", [], notes=[]))
            continue
        for key in ("reasoning_content", "content"):
            text = sample.message.get(key)
            if isinstance(text, str) and text and text not in prefix + generation:
                notes.append(f"the chat template did not render {key} of this message, so it cannot come back")
        if sample.truncate:
            generation, written = _truncate(generation, sample.message.get("reasoning_content", ""))
            expected = {"role": "assistant", "reasoning_content": written} if written else {}
            if not written:
                notes.append("the reasoning is not in the rendered turn; checked only that parsing does not raise")
        outcome = parse_stream(compiled, prefix, [generation], tools=tools)
        if outcome.error is not None:
            cases.append(RoundTripCase(sample.name, False, expected, None, outcome.error, [], prefix, generation,
                                       notes))
            continue
        parsed = outcome.message
        if sample.truncate and not expected:
            diff: list[DiffEntry] = []
        else:
            if "role" not in compiled.defaults and "role" not in parsed:
                notes.append('the template has no "defaults": {"role": "assistant"}')
            diff = diff_values(expected, parsed)
        cases.append(RoundTripCase(sample.name, not diff, expected, parsed, None, diff, prefix, generation, notes))
    return RoundTripReport(cases)
