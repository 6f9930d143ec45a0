"""The stricter per-address rate limit of the API's log-in (the sign-up limit, shared with the sign-up
page, is ``annotators.throttles.SignupRateThrottle``)."""

from annotators.throttles import PerAddressThrottle


class LoginRateThrottle(PerAddressThrottle):
    """POST api/auth/token: per address, whoever is logged in (rate "login")."""

    scope = "login"
