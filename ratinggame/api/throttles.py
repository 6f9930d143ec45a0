"""Stricter per-address rate limits for the endpoints that take passwords or create accounts."""

from rest_framework.throttling import AnonRateThrottle


class LoginRateThrottle(AnonRateThrottle):
    """POST api/auth/token: per address, whoever is logged in (rate "login")."""

    scope = "login"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class SignupRateThrottle(LoginRateThrottle):
    scope = "signup"
