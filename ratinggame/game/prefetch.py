"""The image of the pair a rater will most likely see next, for the rating screen to download
while the rater looks at the current one (so the next screen shows its image at once).

A guess, never a claim: it serves nothing and locks nothing. In the tutorial and in a
probation round the next pair is known; in the game it is what the rater's next serve would
take now (the control or attention check the serve would draw, ``gameplay.pool_due``, or the
first pair of their order, read without a lock), which another rater may take first. Only an
image is fetched: nothing about the pair's ratings reaches the page.
"""

from django.contrib.auth.base_user import AbstractBaseUser

from annotators import progress
from annotators.models import Participation
from ratinggame.game.assignment import Lock, game_pair_claim, order_start
from ratinggame.game.controls import control_pick
from ratinggame.game.gameplay import images_to_avoid, pool_due
from ratinggame.game.rating import Served
from ratinggame.models import Image, Pool


def next_pair_image(*, rater: AbstractBaseUser, served: Served) -> Image | None:
    """The image of the pair after ``served`` for this rater; None when there is none."""
    pair_id = _next_pair_id(rater, served)
    return None if pair_id is None else Image.objects.filter(pairs=pair_id).first()


def _next_pair_id(rater: AbstractBaseUser, served: Served) -> int | None:
    if served.stage == Pool.TUTORIAL:
        order = progress.tutorial_pair_ids()
        later = order[order.index(served.pair_id) + 1 :] if served.pair_id in order else []
        return later[0] if later else None
    if served.stage == Pool.PROBATION:
        current = progress.probation_round_current(progress.profile_for(rater))
        following = current.rated + 1 if current is not None else None
        if following is None or following >= len(current.pair_order):
            return None
        return current.pair_order[following]
    profile = progress.profile_for(rater)
    avoid = images_to_avoid(profile)  # the open pair's image is the latest of them
    serve = profile.game_serves  # the open pair was serve game_serves - 1
    pool = pool_due(profile, serve, participant=Participation.objects.filter(profile=profile).exists())
    if pool != Pool.GAME:
        control = control_pick(rater_id=rater.pk, seed=profile.order_seed, avoid_images=avoid, pool=pool)
        if control is not None:
            return control[0].id
    start = order_start(profile.order_seed, serve)
    found = game_pair_claim(rater_id=rater.pk, start=start, avoid_images=avoid, lock=Lock.NONE)
    return None if found is None else found[0].id
