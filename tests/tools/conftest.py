"""Fixtures of the tools' tests: a live server fast enough for a simulated crowd."""

import pytest
from django.core.cache import cache


@pytest.fixture
def fast_server(settings, monkeypatch):
    """The live server with a 0.05 s delay, cheap password hashing and no API throttling."""
    from rest_framework.throttling import SimpleRateThrottle

    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0.05}
    rates = {scope: "1000000/min" for scope in SimpleRateThrottle.THROTTLE_RATES}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)
    cache.clear()
    yield
    cache.clear()
