"""Who rates, read in one query inside the rating's transaction: the rater's token or browser
session, their user, roles and rater profile (locked), for the one-request rating (the API's
``POST /api/game/submit`` and the rating page's ``POST /play/submit/``).

The checks are Django's own, in the order ``django.contrib.auth.get_user`` makes them: the
session data is decoded (and its signature verified) by the session engine; the session must
name this user and a configured authentication backend, and carry the user's session hash
(``get_session_auth_hash``: a password change signs every session out); the user must be
active (``ModelBackend.user_can_authenticate``). Anything else is "not signed in", and the
caller falls back to Django's and DRF's full request handling, which says why.
"""

from dataclasses import dataclass
from datetime import datetime
from importlib import import_module

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.utils.crypto import constant_time_compare

from annotators.roles import ROLES
from ratinggame.game import sql
from ratinggame.game.sql import ProfileRow

USER_WIDTH = len(sql.USER_FIELDS) + 1  # the user's columns, then their group names


@dataclass(frozen=True)
class SignedIn:
    """The rater: their user (with roles, as ``annotators.roles.role_names`` keeps them) and
    their profile row, locked to the end of the transaction (with ``participant``, whether they
    came through a study's platform link)."""

    user: AbstractBaseUser
    profile: ProfileRow


def _user_of(values) -> AbstractBaseUser:
    """The user of a row: an instance with the columns read (no query), roles kept on it."""
    *columns, groups = values
    user = get_user_model()(**dict(zip(sql.USER_FIELDS, columns, strict=True)))
    user._state.adding = False
    user._role_names = frozenset(groups.split(",")) & frozenset(ROLES) if groups else frozenset()
    return user


def _signed_in(values) -> SignedIn | None:
    user = _user_of(values[:USER_WIDTH])
    if not user.is_active:
        return None
    return SignedIn(user, sql.profile_with_participant(values[USER_WIDTH:]))


def rater_by_token(key: str) -> SignedIn | None:
    """The rater of an API token; None when the token is unknown, the user inactive, or they
    have no rater profile yet."""
    if not key:
        return None
    row = sql.rater_by_token().fetchone(key)
    return None if row is None else _signed_in(row)


def rater_by_session(session_key: str, now: datetime) -> SignedIn | None:
    """The rater signed in with the browser session ``session_key``; None when the session is
    unknown or expired, or signs in nobody (or no longer: see the module's docstring)."""
    if not session_key:
        return None
    row = sql.rater_by_session().fetchone(session_key, now)
    if row is None:
        return None
    data = _session_store().decode(row[0])
    signed_in = _signed_in(row[1:])
    if signed_in is None:
        return None
    user = signed_in.user
    if (
        str(data.get(SESSION_KEY)) != str(user.pk)
        or data.get(BACKEND_SESSION_KEY) not in settings.AUTHENTICATION_BACKENDS
    ):
        return None
    if not constant_time_compare(data.get(HASH_SESSION_KEY, ""), user.get_session_auth_hash()):
        return None
    return signed_in


def _session_store():
    return import_module(settings.SESSION_ENGINE).SessionStore()
