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


from typing import Any, Literal  # noqa: E402


def exotic(mode: Literal["fast", "slow"], level: int | None, anything: Any, pair: tuple[int, str],
           grid: list[list[int]], weights: dict[str, float], flag: bool | None = None, ratio: float | int = 1) -> None:
    """Exercise unusual type hints.

    Args:
        mode: The mode. (choices: ["fast", "slow"])
        level: A PEP 604 optional integer.
        anything: No type constraint.
        pair: A fixed-size pair.
        grid: A nested list.
        weights: A mapping of weights.
        flag: An optional boolean.
        ratio: A float or an int.
    """


class Calculator:
    def add(self, x: int, y: float) -> float:
        """Add two numbers.

        Args:
            x: The first number.
            y: The second number.
        """
        return x + y


EXOTIC = [exotic, Calculator().add]
