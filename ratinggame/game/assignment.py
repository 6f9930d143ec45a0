"""Which game pair a rater gets next (SPEC section 5).

Each game pair collects 3 to 7 human ratings. A rater never sees the same pair twice, never
sees tutorial or probation pairs in the game, and never sees another rater's ratings before
submitting. Started pairs come before fresh ones; past 3 ratings only pairs whose ratings
still disagree get more, up to 7.

How it stays fast at a million pairs: every pair carries its place in the serving order,
``assign_rank`` (NULL once it takes no more raters), kept in step with its ratings and open
assignments under the pair's row lock. The next-pair query reads the head of the partial
index ``(assign_rank, id) WHERE pool = 'game' AND assign_rank IS NOT NULL`` and skips the
pairs the rater already has through the unique index on (rater, pair) - no scan of the pool,
no ORDER BY random(), no Python loop over pairs.

Open assignments count toward the cap (``in_flight``), so two raters racing for the last slot
cannot push a pair past 7: the next-pair query itself locks the row it returns (FOR UPDATE
SKIP LOCKED, as Label Studio's next_task does), the lock makes PostgreSQL check the WHERE
again on the latest row, and the slot is taken in the same transaction. A rater never waits
for one pair's lock while holding another's (``game_pair_claim``). An open assignment that
expires gives its slot back (``assignments_release_expired``).
"""

from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from ratinggame.models import MAX_HUMAN_RATINGS, MIN_HUMAN_RATINGS, Assignment, AssignRank, CaptionPair, Pool


def assign_rank_for(
    *, human_count: int, human_sum: int, human_sumsq: int, in_flight: int, withdrawn: bool = False
) -> int | None:
    """The game pair's rank in the serving order, or None when it takes no more raters.

    A pair withdrawn after reports (``ratinggame.game.reports``) takes none until staff put it
    back in play.
    Committed ratings (stored plus open assignments) below 3: the pair needs more, and the
    closer it is to 3 the sooner it is served (started before fresh). From 3 to 6: only when
    the stored human ratings still disagree (not all equal: n * sum(x²) != (sum x)²).
    """
    committed = human_count + in_flight
    if withdrawn or committed >= MAX_HUMAN_RATINGS:
        return None
    if committed < MIN_HUMAN_RATINGS:
        return (AssignRank.FRESH, AssignRank.STARTED, AssignRank.NEAR_MINIMUM)[committed]
    disagree = human_count >= 2 and human_count * human_sumsq != human_sum * human_sum
    return AssignRank.DISAGREEING if disagree else None


def pair_rank_refresh(pair: CaptionPair) -> None:
    """Set ``pair.assign_rank`` from its counters (the caller holds the row lock and saves)."""
    if pair.pool != Pool.GAME:
        pair.assign_rank = None
        return
    pair.assign_rank = assign_rank_for(
        human_count=pair.human_count,
        human_sum=pair.human_sum,
        human_sumsq=pair.human_sumsq,
        in_flight=pair.in_flight,
        withdrawn=pair.withdrawn_at is not None,
    )


def game_pair_claim(*, rater: AbstractBaseUser, wait: bool = False) -> CaptionPair | None:
    """Take one slot of the best game pair this rater has not seen; None when none is free.

    Must run inside a transaction: the returned pair is locked, and its ``in_flight`` and
    ``assign_rank`` already count the new assignment; the caller writes both with the
    assignment, in the same transaction.

    Without ``wait`` (one query), a pair being claimed or rated right now is passed over (SKIP
    LOCKED), so raters asking at once spread over the head of the order; None may then mean
    only that every open pair is locked at this moment. With ``wait``, the head of the order is
    waited for, one pair at a time: call it in a transaction that holds no pair's lock.
    """
    if not wait:
        return _slot_counted(claim_query(rater=rater).first())
    passed: list[int] = []
    while (head := serving_order(rater).exclude(pk__in=passed).values_list("pk", flat=True).first()) is not None:
        with transaction.atomic():
            pair = claim_query(rater=rater, skip_locked=False).filter(pk=head).first()
            if pair is not None:
                pair_rank_refresh(pair)
            if pair is None or pair.assign_rank is None:
                # It filled up while we waited (PostgreSQL checks the WHERE again on the row it
                # gets), or its stored rank was stale. Its lock is kept to the end of the
                # transaction unless the savepoint is rolled back: give it back before waiting
                # for the next one, or two raters waiting for each other's pairs would deadlock.
                # A stale rank is corrected by the next claim that does not wait, or by
                # check_aggregates.
                transaction.set_rollback(True)
                passed.append(head)
                continue
        return _slot_take(pair)
    return None


def _slot_counted(pair: CaptionPair | None) -> CaptionPair | None:
    """``pair`` (locked) with the new assignment counted; None when its stored rank was stale."""
    if pair is None:
        return None
    pair_rank_refresh(pair)
    if pair.assign_rank is None:  # a stale stored rank: correct it (the caller looks again)
        pair.save(update_fields=["assign_rank"])
        return None
    return _slot_take(pair)


def _slot_take(pair: CaptionPair) -> CaptionPair:
    """``pair`` (locked, its rank current) with the new assignment counted."""
    pair.in_flight += 1
    pair_rank_refresh(pair)
    return pair


def claim_query(*, rater: AbstractBaseUser, skip_locked: bool = True) -> QuerySet:
    """The next-pair query: open game pairs this rater was never served, best first, row-locked.

    Reads the head of the partial index ``pair_assign_rank_idx`` (the serving order); the NOT
    EXISTS probes the unique (rater, pair) index of game assignments. No sort, no scan of the
    pool: the cost does not grow with the number of pairs.
    """
    return serving_order(rater).select_related("image").select_for_update(skip_locked=skip_locked, of=("self",))


def serving_order(rater: AbstractBaseUser) -> QuerySet:
    """Open game pairs this rater was never served, best first (no lock)."""
    seen = Assignment.objects.filter(rater=rater, pair=OuterRef("pk"), stage=Pool.GAME)
    return (
        CaptionPair.objects.filter(pool=Pool.GAME, assign_rank__isnull=False)
        .filter(~Exists(seen))
        .order_by("assign_rank", "id")
    )


def assignments_release_expired(*, now: datetime, limit: int = 20) -> int:
    """Give the slots of expired, unsubmitted game assignments back to their pairs.

    Runs in its own short transactions (one per pair) and skips pairs locked right now; what
    it leaves is picked up by the next call. Returns how many slots were released.
    """
    expired = list(Assignment.objects.filter(holds_slot=True, expires_at__lte=now).values_list("id", "pair_id")[:limit])
    released = 0
    for assignment_id, pair_id in expired:
        with transaction.atomic():
            pair = CaptionPair.objects.select_for_update(skip_locked=True).filter(pk=pair_id).first()
            if pair is None:
                continue
            # Conditional UPDATE under the pair lock: a submission racing with this sweep
            # clears the flag first, and then nothing is released twice.
            if Assignment.objects.filter(pk=assignment_id, holds_slot=True).update(holds_slot=False):
                pair.in_flight = max(pair.in_flight - 1, 0)
                pair_rank_refresh(pair)
                pair.save(update_fields=["in_flight", "assign_rank"])
                released += 1
    return released
