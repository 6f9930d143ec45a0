"""A small log-in limiter: too many failed log-ins for one username from one address -> 429.

Every failed authentication fires Django's ``user_login_failed`` signal (the site's log-in
page, the Django admin's, and the API token endpoint all authenticate through
``django.contrib.auth.authenticate``); the receiver counts it in the cache under the pair
(username, client address). After LOGIN_MAX_FAILURES failures within
LOGIN_FAILURE_WINDOW_SECONDS of the first one, the log-in doors answer 429 until that window
ends, without checking the password at all. A successful log-in clears the count.

The count is per username *and* address, so a stranger cannot lock a rater out from
elsewhere, and per username, so one address cannot try many passwords on one account. The
username counts as the identity it logs in to, not as it was typed: the log-in form folds it
to NFKC (``ＲＥＳ１`` logs in as ``RES1``) and names differ in more than case
(``annotators.services.rater_signup``), so every spelling of one account shares one count.
The API endpoints have DRF's per-address rate limits on top ("login" scope). Counts live in
the cache: with several web processes configure a shared one (DJANGO_CACHE_URL).
"""

import hashlib
import math
import time

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

_PREFIX = "login-failures"


def client_address(request) -> str:
    """The client's address: the socket's, or the one DJANGO_NUM_PROXIES trusted proxies saw."""
    remote = request.META.get("REMOTE_ADDR", "")
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    proxies = settings.NUM_PROXIES
    if not proxies or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",")]
    return hops[-min(proxies, len(hops))]


def login_identity(username: str) -> str:
    """The account a username names, however it is spelled: NFKC (as the log-in form and
    sign-up fold it), without surrounding space, case folded."""
    return AbstractBaseUser.normalize_username(username).strip().casefold()


def _keys(username: str, address: str) -> tuple[str, str]:
    # Hashed: any text a client sends as a username makes a valid, bounded cache key.
    digest = hashlib.sha256(f"{login_identity(username)}\n{address}".encode()).hexdigest()
    return f"{_PREFIX}:count:{digest}", f"{_PREFIX}:since:{digest}"


def failure_record(username: str, address: str) -> int:
    """Count one failure; returns the failures in the current window."""
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    count_key, since_key = _keys(username, address)
    # add() only creates: the first failure starts the window and fixes its end.
    cache.add(since_key, time.time(), window)
    cache.add(count_key, 0, window)
    try:
        return cache.incr(count_key)
    except ValueError:  # expired between add and incr
        cache.set(count_key, 1, window)
        return 1


def failures_clear(username: str, address: str) -> None:
    cache.delete_many(list(_keys(username, address)))


def seconds_blocked(username: str, address: str) -> int:
    """Seconds until this username may try again from this address; 0 when not blocked."""
    count_key, since_key = _keys(username, address)
    if (cache.get(count_key) or 0) < settings.LOGIN_MAX_FAILURES:
        return 0
    since = cache.get(since_key) or time.time()
    return max(1, math.ceil(since + settings.LOGIN_FAILURE_WINDOW_SECONDS - time.time()))


def blocked_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (
        "Too many failed log-in attempts for this username from your address. "
        f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
    )


@receiver(user_login_failed, dispatch_uid="ratinggame.login_throttle.failed")
def _on_login_failed(sender, credentials: dict, request=None, **kwargs) -> None:
    if request is None:
        return
    username = credentials.get("username")
    if isinstance(username, str) and username:
        failure_record(username, client_address(request))


@receiver(user_logged_in, dispatch_uid="ratinggame.login_throttle.succeeded")
def _on_logged_in(sender, request, user, **kwargs) -> None:
    if request is not None:
        failures_clear(user.get_username(), client_address(request))


def _blocked_response(request: HttpRequest, seconds: int) -> HttpResponse:
    response = TemplateResponse(
        request, "registration/login_throttled.html", {"message": blocked_message(seconds)}, status=429
    )
    response["Retry-After"] = str(seconds)
    return response


def _posted_username(request: HttpRequest) -> str:
    return request.POST.get("username", "") if request.method == "POST" else ""


class ThrottledLoginView(LoginView):
    """The site's log-in page, refusing with 429 while the username is blocked from this address."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        seconds = seconds_blocked(_posted_username(request), client_address(request))
        if seconds:
            return _blocked_response(request, seconds)
        return super().post(request, *args, **kwargs)


def admin_login(request: HttpRequest) -> HttpResponse:
    """The Django admin's log-in page, behind the same limiter."""
    seconds = seconds_blocked(_posted_username(request), client_address(request))
    if seconds:
        return _blocked_response(request, seconds)
    return admin.site.login(request)
