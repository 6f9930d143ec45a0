"""The level prior the game decides with (SPEC 5.1; ``scoring.ordinal``): the latest refit's
(``models.LevelPrior``), read by each process at most once every ``READ_EVERY_SECONDS``, so that
the rating path reads no row for it (one query per process every few minutes); the process that
stores a new one knows it at once. None: a flat prior (no refit yet, or ``LEVEL_PRIOR`` off).

For up to ``READ_EVERY_SECONDS`` after a refit another process may still rank pairs with the
prior before it: a pair it ranks then is ranked again by the next refit (``labels.refit_due``), and
``check_aggregates`` in that window may name it as drifted (``--repair`` sets it right)."""

import time
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from ratinggame.models import LevelPrior

# A level prior: each level's share (``scoring.ordinal``), or None for a flat one.
Prior = tuple[float, ...] | None
# Where a prior may be passed (``assignment.needs_more``): the one in force in this process.
IN_FORCE = "in force"
READ_EVERY_SECONDS = 300.0
_memo: dict = {"shares": None, "read_at": float("-inf")}


def level_prior() -> Prior:
    if not settings.RATINGGAME["LEVEL_PRIOR"]:
        return None
    now = time.monotonic()
    if now - _memo["read_at"] >= READ_EVERY_SECONDS:
        _memo.update(shares=LevelPrior.in_force(), read_at=now)
    return _memo["shares"]


def level_prior_store(
    shares: tuple[float, ...], pairs: int, ratings_through: int, now: datetime | None = None
) -> LevelPrior:
    stored = LevelPrior.objects.create(
        fitted_at=now or timezone.now(), shares=list(shares), pairs=pairs, ratings_through=ratings_through
    )
    _memo.update(shares=tuple(shares), read_at=time.monotonic())
    return stored


def level_prior_known(shares: tuple[float, ...] | None) -> None:
    """Take ``shares`` as the prior now, without reading the table (a test's or a bench's start)."""
    _memo.update(shares=shares, read_at=time.monotonic())
