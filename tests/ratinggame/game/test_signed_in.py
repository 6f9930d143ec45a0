"""The one-query read of who rates (``ratinggame.game.signed_in``) signs in exactly whom Django's
session authentication and DRF's token authentication sign in, case by case.

The rating's hot path reads the rater with their token or session in the transaction's first
query instead of through the framework; where it says "nobody", the framework's own handling
answers the request. So for every session or token, the read must name the user the framework
names, or nobody where the framework names nobody (a reader that signed in someone the
framework refuses would let a signed-out session rate).
"""

from datetime import timedelta
from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from annotators.models import RaterState
from ratinggame.game.signed_in import rater_by_session, rater_by_token
from tests.ratinggame.journey_helpers import rater

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("three_second_rules")]

BACKEND = "django.contrib.auth.backends.ModelBackend"


def SessionStore(session_key=None):
    return import_module(settings.SESSION_ENGINE).SessionStore(session_key)


def _session(user, *, backend=BACKEND, auth_hash=None, user_id=None, expires_in=timedelta(days=1)) -> str:
    """A stored session as ``django.contrib.auth.login`` writes it, with one part changed."""
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk if user_id is None else user_id)
    if backend is not None:
        store[BACKEND_SESSION_KEY] = backend
    store[HASH_SESSION_KEY] = user.get_session_auth_hash() if auth_hash is None else auth_hash
    store.set_expiry(expires_in)
    store.create()
    return store.session_key


def _django_user_id(session_key: str) -> int | None:
    """Whom Django's own session authentication signs in with this session (None: nobody)."""
    request = HttpRequest()
    request.session = SessionStore(session_key)
    user = get_user(request)
    return user.pk if user.is_authenticated else None


def _ours(session_key: str) -> int | None:
    with transaction.atomic():  # the read locks the profile, as in the rating's transaction
        found = rater_by_session(session_key, timezone.now())
    return None if found is None else found.user.pk


def _cases(user, other):
    yield "signed in", _session(user)
    yield "another backend", _session(user, backend="tests.no.such.Backend")
    yield "no backend", _session(user, backend=None)
    yield "a hash from before a password change", _session(user, auth_hash="0" * 64)
    yield "no hash", _session(user, auth_hash="")
    yield "another user's id with this user's hash", _session(user, user_id=other.pk)
    yield "another user's hash", _session(user, auth_hash=other.get_session_auth_hash())
    yield "expired", _session(user, expires_in=timedelta(seconds=-1))
    yield "unknown", "x" * 32
    yield "empty", ""


def test_a_session_signs_in_whom_django_signs_in_and_nobody_else():
    user, other = rater(RaterState.GAME), rater(RaterState.GAME)
    for case, key in _cases(user, other):
        assert _ours(key) == _django_user_id(key), case
    signed = _session(user)
    assert _ours(signed) == user.pk  # the equality is not that of two readers that sign in nobody
    user.is_active = False
    user.save()
    assert _ours(signed) is None and _django_user_id(signed) is None, "inactive"


def test_a_session_whose_user_changed_their_password_signs_in_nobody():
    user = rater(RaterState.GAME)
    key = _session(user)
    user.set_password("another password 123")
    user.save()
    assert _ours(key) is None and _django_user_id(key) is None


def _drf_user_id(key: str) -> int | None:
    try:
        found = TokenAuthentication().authenticate_credentials(key)
    except AuthenticationFailed:
        return None
    return found[0].pk


def _ours_by_token(key: str) -> int | None:
    with transaction.atomic():
        found = rater_by_token(key)
    return None if found is None else found.user.pk


def test_a_token_signs_in_whom_drf_signs_in_and_nobody_else():
    user = rater(RaterState.GAME)
    key = Token.objects.create(user=user).key
    for case, token in (("valid", key), ("unknown", "0" * 40), ("changed", key[:-1] + "x"), ("empty", "")):
        assert _ours_by_token(token) == (_drf_user_id(token) if token else None), case
    assert _ours_by_token(key) == user.pk
    user.is_active = False
    user.save()
    assert _ours_by_token(key) is None and _drf_user_id(key) is None, "inactive"
