"""A readable answer to an API call that sends the wrong number of values.

Gradio 6.31 counts an event's input values before any handler (so before `playground.guard`) runs:
``Blocks.validate_inputs``, called from ``Blocks.preprocess_data``, raises a plain ``ValueError`` when too few came,
and passes too many on unchecked (the values then land in the wrong inputs, shifted by the hidden session input).
For a raw HTTP call Gradio puts a placeholder (None) in each hidden input's slot only when exactly the shown inputs'
count came; ``gradio_client`` and the page send the placeholders themselves (None: the page never holds a
``gr.State``'s value; Gradio sends None for it). So one value too many arrives as a call of the full count whose
hidden slot holds a value (trial 10: the first value of ``/paste_parse`` then filled the session slot and every
other value moved one input along), and that is how `PlaygroundBlocks` tells it from a right call.
A server launched with ``show_error=False`` (a public one must not show every internal message) sends a plain
exception to the caller as ``{"error": null}``; only a ``gr.Error`` message reaches it whatever ``show_error`` says
(``gradio.utils.error_payload``). `PlaygroundBlocks` therefore checks the count itself and raises a ``gr.Error`` that
says which values the endpoint takes.
"""

from __future__ import annotations

import html
from typing import Any

import gradio as gr


def wrong_count_text(endpoint: str, wanted: list[str], got: int, hidden: list[int] | None = None) -> str:
    """What a caller that sent ``got`` values to ``endpoint`` (which takes the values named ``wanted``) reads.

    ``hidden``: the 1-based positions of the event's hidden inputs (the session state) among all its inputs. A call
    of exactly ``len(wanted)`` values that still arrives short came by a route that adds no placeholders for them
    (``queue/join``, unlike ``call/<endpoint>`` and ``gradio_client``): it is told where the nulls go."""
    names = ", ".join(wanted) if wanted else "none"
    takes = f"/{endpoint} takes {len(wanted)} value{'' if len(wanted) == 1 else 's'} ({names}), in that order"
    if hidden and got == len(wanted):
        places = ", ".join(map(str, hidden))
        return (f"{takes}; this call sent them without the hidden session state. Sent to queue/join, a call holds "
                f"{got + len(hidden)} values, with null at position{'' if len(hidden) == 1 else 's'} {places} "
                f"(/gradio_api/call/{endpoint} and gradio_client put it in themselves).")
    return f"{takes}; this call sent {got}."

from gradio.events import Dependency

class PageToken(gr.Textbox):
    """The page's token for its session state (`playground.guard.hold`): a hidden text box the server writes and
    the page echoes with every event that takes the session (`playground.guard.protect` adds it to them, last).
    Hidden from the API, like the session state: an API client sends no value for it (`PlaygroundBlocks` puts
    None in its place), and its answers leave it out."""

    is_template = True  # drawn as the Textbox it is

    def __init__(self, **kwargs):
        super().__init__(value="", visible="hidden", show_label=False, container=False, elem_id="page-token",
                         **kwargs)

    @property
    def skip_api(self) -> bool:
        return True

    def get_config(self, cls: Any = None) -> dict[str, Any]:
        return super().get_config(cls or gr.Textbox)
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component


def _token_slot(block_fn: Any) -> int | None:
    """Where the page token is among the event's inputs (the last one), or None."""
    ins = block_fn.inputs
    return len(ins) - 1 if ins and isinstance(ins[-1], PageToken) else None


def _is_token(value: Any) -> bool:
    from .guard import TOKEN_FORM

    return value is None or value == "" or (isinstance(value, str) and TOKEN_FORM.fullmatch(value) is not None)


class PlaygroundBlocks(gr.Blocks):
    """``gr.Blocks`` whose events refuse a wrong number of input values with a `wrong_count_text` ``gr.Error``."""

    def validate_inputs(self, block_fn: Any, inputs: list[Any]) -> None:
        # An API call sends the values of the inputs an API caller sees; Gradio has already put a placeholder
        # (None) for each hidden one (the session state) when that count matched, so a right call has them all
        # here, with None in every hidden slot; a value there is a value too many (see the module doc). The page
        # token (last) is the page's: an API call that leaves it out gets None there, and a value in its place
        # that is no token is a value too many too.
        token, got = _token_slot(block_fn), len(inputs)
        if token is not None and got == token:
            inputs.append(None)
        hidden = [i for i, b in enumerate(block_fn.inputs) if getattr(b, "skip_api", False) and i != token]
        if len(inputs) != len(block_fn.inputs) or any(inputs[i] is not None for i in hidden) \
                or (token is not None and not _is_token(inputs[token])):
            shown = [b for b in block_fn.inputs if not getattr(b, "skip_api", False)]
            wanted = [html.escape(str(getattr(b, "label", None) or type(b).__name__)) for b in shown]
            endpoint = str(block_fn.api_name or block_fn.name or "this endpoint")
            raise gr.Error(wrong_count_text(endpoint, wanted, got, [i + 1 for i in hidden]),
                           print_exception=False)
        super().validate_inputs(block_fn, inputs)