"""Response templates: our implementation of transformers 5.x's response-template language.

A response template (``tokenizer.response_template``) turns a chat model's raw
output into an assistant message dict, in one shot (`parse_response`) or while
streaming (`ResponseParser`). Same messages, events and exception types as
``transformers.utils.chat_parsing`` 5.23, in linear time, with opt-in byte
spans and error recovery. See ``docs/parsing-api.md``.

Importing this package needs only ``regex``; tokenizer helpers live in
`parsing.hf` and import transformers when used.
"""

from .budget import ParseContext
from .errors import BudgetExceededError, PatternTimeoutError, TemplateError, ValuesBudgetError
from .parser import ResponseParser, parse_response
from .template import (CompiledTemplate, TemplateRecursionError, TemplateTypeError, load_template, loads_template,
                       locate_json_path)

__all__ = [
    "BudgetExceededError",
    "CompiledTemplate",
    "ParseContext",
    "PatternTimeoutError",
    "ResponseParser",
    "TemplateError",
    "TemplateRecursionError",
    "TemplateTypeError",
    "ValuesBudgetError",
    "load_template",
    "loads_template",
    "locate_json_path",
    "parse_response",
]
