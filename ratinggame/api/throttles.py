"""Stricter per-address rate limits for the endpoints that take passwords or create accounts."""

from annotators.throttles import PerAddressThrottle


class LoginRateThrottle(PerAddressThrottle):
    """POST api/auth/token: per address, whoever is logged in (rate "login")."""

    scope = "login"
