"""Python-function tools for the corpus (`"tools": "py:NAME"` in a fixture).

Real functions with type hints and Google-style docstrings: the reference converts them with
`transformers.utils.get_json_schema`; our engine must derive the same parameter types itself.
"""

from __future__ import annotations

from typing import Optional, Union


def get_weather(city: str, days: int, celsius: bool = True, threshold: Optional[float] = None) -> str:
    """Get the weather forecast.

    Args:
        city: The city name.
        days: How many days to forecast.
        celsius: Whether to use degrees Celsius.
        threshold: Optional alert threshold.
    """
    return f"{city}:{days}:{celsius}:{threshold}"


def set_options(options: dict, tags: list[str], limit: Union[int, str] = 0, note: None = None) -> dict:
    """Set some options.

    Args:
        options: A JSON object of options.
        tags: A list of tags.
        limit: A limit, as a number or a keyword.
        note: Always null.
    """
    return {"options": options, "tags": tags, "limit": limit, "note": note}


def scale(factor: float, count: Optional[int] = None, items: Optional[list[int]] = None) -> float:
    """Scale a value.

    Args:
        factor: The scale factor.
        count: How many times.
        items: Optional item ids.
    """
    return factor


WEATHER = [get_weather]
ALL = [get_weather, set_options, scale]
