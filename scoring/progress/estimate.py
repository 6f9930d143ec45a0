"""When the study reaches its target of validated pairs at the current rate (pure: no Django).

The estimate counts ratings, because ratings are what arrive at a rate:

1. **The fewest ratings that validate the missing pairs.** A pair is validated at the minimum
   of counted human ratings (``ratinggame.models.MIN_HUMAN_RATINGS``). The game serves
   started pairs before fresh ones, so the missing pairs are taken closest to the minimum
   first: those one rating short, then two short, then the fresh ones. Pairs kept out of play
   after reports are not counted on.
2. **Ratings that validate nothing.** Past the minimum, pairs the assignment policy in force
   sends on (SPEC 5.1: ratings not all equal, or a label not settled) get more, up to the cap,
   and the game serves them before fresh pairs. The estimate assumes the
   coming ratings split as the counted ratings so far did: with a share ``s`` of them past
   the minimum, ``n`` useful ratings take ``n / (1 - s)`` ratings.
3. **The rate.** Counted game ratings an hour over the last day; when the week before it had
   none (a study younger than a day), since the hour of the first one; never over less than
   an hour.

It cannot be estimated without pairs, when no counted rating arrived in the last day (no
rate), or when the pairs in the pool are too few to reach the target however many ratings
come (import more pairs, or lower the target).
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

NO_PAIRS = "no_pairs"
REACHED = "reached"
TOO_FEW_PAIRS = "too_few_pairs"
NO_RATE = "no_rate"
ESTIMATED = "estimated"
RESULTS = (NO_PAIRS, REACHED, TOO_FEW_PAIRS, NO_RATE, ESTIMATED)


@dataclass(frozen=True)
class Estimate:
    result: str  # one of RESULTS
    missing: int  # validated pairs still needed to reach the target
    ratings_needed: int | None  # counted game ratings still needed (about); None: cannot be reached
    hours: float | None  # at the current rate; None: not estimated
    reached_at: datetime | None


def ratings_to_validate(missing: int, short_by: Mapping[int, int]) -> int | None:
    """The fewest ratings that validate ``missing`` more pairs, the pairs closest to the minimum
    first. ``short_by`` maps "ratings short of the minimum" to the number of pairs open to
    raters that are that short. None when those pairs are fewer than ``missing``."""
    needed = 0
    for short in sorted(short_by):
        taken = min(missing, short_by[short])
        needed += taken * short
        missing -= taken
    return needed if missing == 0 else None


def share_past_minimum(ratings: int, past_minimum: int) -> float:
    """The share of counted ratings that went to pairs past the minimum (0 without ratings)."""
    return past_minimum / ratings if ratings else 0.0


def target_estimate(
    *,
    target: int,
    validated: int,
    short_by: Mapping[int, int],
    past_minimum_share: float,
    rate_per_hour: float,
    now: datetime,
) -> Estimate:
    """When ``target`` validated pairs are reached (see the module docstring)."""
    missing = max(target - validated, 0)
    if target <= 0:
        return Estimate(NO_PAIRS, 0, None, None, None)
    if missing == 0:
        return Estimate(REACHED, 0, 0, 0.0, now)
    useful = ratings_to_validate(missing, short_by)
    if useful is None:
        return Estimate(TOO_FEW_PAIRS, missing, None, None, None)
    needed = math.ceil(useful / (1.0 - past_minimum_share))
    if rate_per_hour <= 0:
        return Estimate(NO_RATE, missing, needed, None, None)
    hours = needed / rate_per_hour
    return Estimate(ESTIMATED, missing, needed, hours, now + timedelta(hours=hours))
