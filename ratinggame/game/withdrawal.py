"""A rater's withdrawal from the study ("Delete my data" on their page; the consent page promises it).

Their ratings stop counting at once: they are marked excluded, which takes them out of every
later export and out of the consensus others are scored against (``aggregates.ratings_exclude``
keeps the pairs' aggregates and serving order in step). They stay stored, like every excluded
rating, so that what was scored and published before can still be audited. The account is
anonymised and closed: the username becomes ``withdrawn-<id>``, the e-mail address, names and
pseudonym are erased, the password and API tokens stop working, the rater leaves the
leaderboard and every count of the study's raters (``RaterProfile.objects.raters()``). An open
game assignment is closed, its slot given back by the expiry sweep. The withdrawal is logged in
the staff action log.
"""

from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotators.models import RaterAction, RaterProfile
from ratinggame.game.aggregates import ratings_exclude
from ratinggame.models import Assignment, Rating

WITHDRAWN_REASON = "the rater withdrew from the study"


def rater_withdraw(*, user: AbstractBaseUser, now: datetime | None = None) -> int:
    """Withdraw ``user`` from the study (see the module docstring); returns how many ratings stopped counting."""
    now = now or timezone.now()
    with transaction.atomic():
        profile, _ = RaterProfile.objects.select_for_update(no_key=True).get_or_create(user=user)
        ids = list(Rating.objects.filter(rater=user, excluded=False).values_list("id", flat=True))
        excluded = ratings_exclude(rating_ids=ids, reason=WITHDRAWN_REASON)
        Assignment.objects.open(now).filter(rater=user).update(expires_at=now)
        Token.objects.filter(user=user).delete()
        user.username = f"withdrawn-{user.pk}"
        user.email = user.first_name = user.last_name = ""
        user.is_active = False
        user.set_unusable_password()
        user.save()
        profile.display_name = ""
        profile.on_leaderboard = False
        profile.withdrawn_at = now
        profile.save(update_fields=["display_name", "on_leaderboard", "withdrawn_at"])
        RaterAction.objects.create(
            rater=profile,
            actor=user,
            action="withdraw",
            reason=f"The rater deleted their data: {excluded} rating(s) excluded, account anonymised.",
            from_state=profile.state,
            to_state=profile.state,
        )
    return excluded
