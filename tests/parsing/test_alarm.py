"""The differential harness's `run_with_alarm` stops an endless call even when its first ring is lost."""

import pytest

import differential as d

pytestmark = pytest.mark.unit


def test_a_swallowed_ring_still_stops_the_call():
    rings = []

    def endless():
        try:
            while True:
                pass
        except d.Hangs:
            rings.append(1)  # swallowed, as by code that catches everything
        while True:
            pass

    assert d.run_with_alarm(endless, 0.2) == "hangs"
    assert rings == [1]


def test_a_call_that_returns_in_time_is_its_answer():
    assert d.run_with_alarm(lambda: "done", 5.0) == "done"
