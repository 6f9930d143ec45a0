"""What the crowd tests share: the seed, how many requests the live server takes at once, and the
primes a model of known error would store."""

import numpy as np
from django.db import connection

from ratinggame.models import CaptionPair, Pool, PrimingStatus

SEED = 7

# Every new game pair is primed with two model ratings (SPEC section 4), and the first rater of
# a pair is scored against them. No model weights exist in tests, so the test primes the pairs
# the simulator uploaded as a model of known error would: true quality + N(0, PRIME_SD), clipped
# to 1..5. Without primes the first rater of every pair scores 0, and in the simulated crowd
# even raters that always rate the true quality failed qualification windows (which reset the
# score): rho was 0.68-0.87 at 20-150 game ratings per rater.
PRIME_SD = 0.5


def live_concurrency() -> int:
    # An in-memory SQLite test database is one connection shared by the live server's threads:
    # one request at a time. PostgreSQL takes them in parallel.
    return 1 if connection.vendor == "sqlite" else 6


def prime_like_a_model(truths: dict[int, int]) -> None:
    """Two primes per game pair, as the gpu worker would store them, from a model of known error."""
    rng = np.random.default_rng(SEED)
    for pair in CaptionPair.objects.filter(pk__in=truths, pool=Pool.GAME).order_by("pk"):
        quality = truths[pair.pk]
        pair.primes = [float(np.clip(quality + rng.normal(0.0, PRIME_SD), 1, 5)) for _ in range(2)]
        pair.priming_status = PrimingStatus.DONE
        pair.save(update_fields=["primes", "priming_status"])
