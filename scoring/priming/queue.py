"""Asking for model priming of game pairs (SPEC section 4).

Pairs are created with priming_status=pending, so nothing is lost when no worker gets them:
the pending pairs are picked up again by the periodic sweep or by `manage.py prime_pairs`.
``priming_request`` sends the pending game pairs among new or edited pairs to the `gpu` queue
once the transaction commits (``scoring.tasks.prime_pairs``). Without a broker (the laptop
default) model work never runs inside the web process: the pairs wait, with a note saying how
to prime them, and the caller can show the same note.
"""

from ratinggame.background import NotQueued, dispatch, task_named
from ratinggame.models import CaptionPair, Pool, PrimingStatus

PRIME_TASK = "scoring.tasks.prime_pairs"


def waiting_note(reason: NotQueued) -> str:
    """The note of pairs that no worker got: why, and how they get primed."""
    from scoring.priming.configuration import PrimingModels
    from scoring.priming.runner import NO_MODEL_NOTE

    if not PrimingModels.from_settings().configured:
        return NO_MODEL_NOTE
    return f"waiting: not queued ({reason}); run `manage.py prime_pairs`, or the periodic sweep queues them again"


def priming_request(pair_ids: list[int]) -> str:
    """Queue the pending game pairs among ``pair_ids`` for priming after commit.

    Returns "" when they go to a worker, else the note the pairs carry (why they wait and how
    to prime them), for the page or command that created them to show.
    """
    ids = list(
        CaptionPair.objects.filter(pk__in=pair_ids, pool=Pool.GAME, priming_status=PrimingStatus.PENDING).values_list(
            "pk", flat=True
        )
    )
    if not ids:
        return ""
    dispatch(PRIME_TASK, ids, on_not_queued=lambda reason: _note_waiting(ids, reason))
    reason = task_named(PRIME_TASK).not_run_here()
    if reason is None:
        return ""
    return f"{len(ids)} game pair(s) {waiting_note(reason)}"


def _note_waiting(pair_ids: list[int], reason: NotQueued) -> None:
    CaptionPair.objects.filter(pk__in=pair_ids, priming_status=PrimingStatus.PENDING).update(
        priming_error=waiting_note(reason)[:2000]
    )
