"""Queueing game pairs for model priming (SPEC section 4).

Pairs are created with priming_status=pending, so nothing is lost when the broker is
unreachable: the pending pairs are picked up again by `manage.py prime_pairs` or the
periodic sweep.
"""

import logging

log = logging.getLogger(__name__)


def schedule_priming(pair_ids: list[int]) -> None:
    """Send the new game pairs to the `gpu` queue (called after the creating transaction commits)."""
    from ratinggame.models import CaptionPair, Pool, PrimingStatus

    ids = list(
        CaptionPair.objects.filter(pk__in=pair_ids, pool=Pool.GAME, priming_status=PrimingStatus.PENDING).values_list(
            "pk", flat=True
        )
    )
    if not ids:
        return
    from scoring.tasks import prime_pairs

    try:
        prime_pairs.delay(ids)
    except Exception:
        log.warning("could not queue %d pair(s) for priming; they stay pending", len(ids), exc_info=True)
