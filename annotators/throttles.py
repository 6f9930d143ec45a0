"""Per-address rate limits on the doors that take passwords or create accounts.

The sign-up page and ``POST api/auth/signup`` share one limit and one count (the "signup" rate
of REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], per client address): a client that alternates
between them gets no more accounts than one that uses either. DRF's throttle does the counting
(in the cache) for both; the page asks it the same way the API does.
"""

from rest_framework.throttling import AnonRateThrottle


class PerAddressThrottle(AnonRateThrottle):
    """Per client address, whoever is logged in (AnonRateThrottle skips logged-in users)."""

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class SignupRateThrottle(PerAddressThrottle):
    scope = "signup"


def signup_seconds_to_wait(request) -> int:
    """0 when this address may create one more account now (which counts it), else the seconds to wait."""
    throttle = SignupRateThrottle()
    if throttle.allow_request(request, None):
        return 0
    return max(1, round(throttle.wait() or 1))
