"""A study participant's "finish my session" on finding nothing left to rate (SPEC 7: a session
ends at its quota, but a pool that runs dry, or is held for a while by other raters, has no end to
wait for). The participant is paid for the time they gave, with the completion code."""

from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from annotators.study.completion import session_end_nothing_left, session_of
from ratinggame.game.rating import Served, pair_serve


def session_finish(*, rater: AbstractBaseUser, now: datetime | None = None) -> Served | None:
    """The pair that has come free since the participant was told none was left (their session goes
    on), or None once their session has ended: the session ends only when there is truly nothing to
    serve. Raises ``RatingRejected`` as ``pair_serve`` does (suspended, not consented, ended)."""
    now = now or timezone.now()
    served = pair_serve(rater=rater, now=now)
    if served is not None:
        return served
    session = session_of(user=rater, now=now)
    if session is not None:
        session_end_nothing_left(session, now=now)
    return None
