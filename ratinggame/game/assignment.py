"""Which game pair a rater gets next (SPEC section 5).

Each game pair collects 3 to 7 human ratings. A rater never sees the same pair twice, never
sees tutorial or probation pairs in the game, and never sees another rater's ratings before
submitting. Started pairs come before fresh ones; past 3 ratings only pairs whose ratings
still disagree get more, up to 7.

Order: among pairs of equal rank, each rater meets them in an order of their own. Every pair
has a random ``order_key``; each serve of a rater starts at a point of the key space drawn from
the rater's seed and serve count (``annotators.journey.seeded_draw``) and takes the first pair
at or after it, wrapping around: raters do not share an order, a pair's neighbours differ from
rater to rater, and a reload or a retry draws the same point. Two captions of one image never
come one after the other while a pair of another image is open to the rater: the claim first
looks past the image of the rater's previous serve, and only then at it.

How it stays fast at a million pairs: every pair carries its place in the serving order,
``assign_rank`` (NULL once it takes no more raters), kept in step with its ratings and open
assignments under the pair's row lock. A probe of the serving order reads one entry of the
partial index ``(assign_rank, order_key) WHERE pool = 'game' AND assign_rank IS NOT NULL``
(one rank, keys from the start point on, or before it) and skips the pairs the rater already
has through the unique index on (rater, pair); the claim sends every probe, best first, as one
statement that stops at the first that finds a pair - no scan of the pool, no ORDER BY random(),
no Python loop over pairs.

How it stays fast for a rater with a long history: each probe reads at most ``PROBE_WINDOW``
entries of its rank (its window), and takes the first the rater has not seen. The pairs a rater
has rated stay in the started ranks until other raters rate them, and a probe that looked at
every entry of a rank passed over all of them: for a rater rating alone (the first of a study,
the last one at night) every claim read all of their started pairs, 2.6 ms at 1,000 ratings and
6.4 ms at 2,000 (``bench/bench_claim_history.py``; 0.6 ms at both now). So started pairs come
before fresh ones (SPEC 5) among the first ``PROBE_WINDOW`` pairs of each rank in the rater's
order from each serve's start point (and as many from the beginning of the key space); a started
pair further on is met by a later serve, whose start point differs, or by a rater who has not
seen the ones before it.

Open assignments count toward the cap (``in_flight``), so two raters racing for the last slot
cannot push a pair past 7: the next-pair query itself locks the row it returns (FOR NO KEY
UPDATE SKIP LOCKED, as Label Studio's next_task locks with FOR UPDATE; see ``sql._lock`` for
why no key), the lock makes PostgreSQL check the WHERE
again on the latest row, and the slot is taken in the same transaction. A rater never waits
for one pair's lock while holding another's (``game_pair_claim``). An open assignment that
expires gives its slot back (``assignments_release_expired``).
"""

from collections.abc import Iterator
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Exists, OuterRef, QuerySet

from annotators.journey import seeded_draw
from ratinggame.game.cursor import fetch_one
from ratinggame.game.sql import IMAGE, PAIR, ImageRow, PairRow, Statement, column, statement, table
from ratinggame.models import (
    MAX_HUMAN_RATINGS,
    MIN_HUMAN_RATINGS,
    ORDER_KEY_LIMIT,
    Assignment,
    AssignRank,
    CaptionPair,
    Image,
    Pool,
)

# The ranks in serving order (lowest first): started pairs before fresh ones (SPEC 5).
RANKS = sorted(AssignRank.values)
# Entries of the serving index one probe reads at most (the module's docstring says why).
PROBE_WINDOW = 32


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


def order_start(seed: int, serve: int) -> int:
    """Where the rater's serve number ``serve`` starts in the key space of each rank."""
    return seeded_draw(seed, serve, 1, bound=ORDER_KEY_LIMIT)


def _probes(start: int | str) -> Iterator[tuple[int, int | str, int | str]]:
    """(rank, lowest key, key limit) of every probe, best first: each rank from ``start`` on,
    then from the beginning up to ``start`` (the wrap). ``start`` is a key, or the claim's
    placeholder for it."""
    for rank in RANKS:
        yield rank, start, ORDER_KEY_LIMIT
        yield rank, 0, start


def game_pair_claim(
    *, rater_id: int, start: int, avoid_image: int | None = None, wait: bool = False
) -> tuple[PairRow, ImageRow] | None:
    """Take one slot of the next game pair in this rater's order; None when none is free.

    ``start`` is the serve's point in the key space (``order_start``); ``avoid_image``, the
    image of the rater's previous serve, whose pairs come only when no other image is open.
    Must run inside a transaction: the returned pair is locked, and its ``in_flight`` and
    ``assign_rank`` already count the new assignment; the caller writes both with the
    assignment, in the same transaction.

    Without ``wait`` (one statement), a pair being claimed or rated right now is passed over
    (SKIP LOCKED), so raters asking at once spread over the open pairs; None may then mean only
    that every open pair is locked at this moment. With ``wait``, the first pair of the order is
    waited for, one pair at a time: call it in a transaction that holds no pair's lock.
    """
    if not wait:
        for _ in range(3):  # a stale stored rank is corrected and the claim looks again
            claimed = _claim_one(rater_id, start, avoid_image)
            if claimed is None:
                return None
            pair = claimed[0]
            pair_rank_refresh(pair)
            if pair.assign_rank is not None:
                return _slot_take(pair), claimed[1]
            CaptionPair.objects.filter(pk=pair.id).update(assign_rank=None)
        return None
    passed: list[int] = []
    while (head := first_in_order(rater_id, start, avoid_image, passed)) is not None:
        with transaction.atomic():
            pair = claim_query(rater=rater_id, skip_locked=False).filter(pk=head).first()
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
        return _slot_take(PAIR.of(pair)), IMAGE.of(pair.image)
    return None


def first_in_order(rater, start: int, avoid_image: int | None, passed: list[int] = ()) -> int | None:
    """The id of the first pair of the rater's order from ``start``, locks ignored (the waiting
    claim's head, and the rating page's guess of the next image)."""
    for avoiding in ((avoid_image,) if avoid_image else ()) + (None,):
        for rank, low, limit in _probes(start):
            window = CaptionPair.objects.filter(
                pool=Pool.GAME, assign_rank=rank, order_key__gte=low, order_key__lt=limit
            )
            if avoiding is not None:
                window = window.exclude(image_id=avoiding)
            window = window.order_by("order_key").values("pk")[:PROBE_WINDOW]
            probe = serving_order(rater).filter(assign_rank=rank, pk__in=window).exclude(pk__in=passed)
            head = probe.order_by("order_key").values_list("pk", flat=True).first()
            if head is not None:
                return head
    return None


def _slot_take(pair):
    """``pair`` (locked, its rank current) with the new assignment counted."""
    pair.in_flight += 1
    pair_rank_refresh(pair)
    return pair


def claim_statement_and_params(rater_id: int, start: int, avoid_image: int | None) -> tuple[str, dict]:
    """The claim's SQL and its parameters for this rater and serve (named: each is sent once,
    however many probes use it)."""
    if avoid_image is None:
        return claim().sql, {"start": start, "rater": rater_id}
    return claim_avoiding().sql, {"start": start, "rater": rater_id, "avoid_image": avoid_image}


def _claim_one(rater_id: int, start: int, avoid_image: int | None) -> tuple[PairRow, ImageRow] | None:
    """The first free pair of the rater's order, row-locked, with its image: one statement."""
    sql, params = claim_statement_and_params(rater_id, start, avoid_image)
    row = fetch_one(connections[DEFAULT_DB_ALIAS], sql, params)
    if row is None:
        return None
    return PAIR.read(row[: PAIR.width]), IMAGE.read(row[PAIR.width :])


def _claim_statement(vendor: str, avoiding: bool) -> Statement:
    """The claim's SQL: one probe per rank and key range, in serving order (``_probes``), each
    reading one entry of the partial index ``pair_serving_order_idx``, locking what it finds
    (SKIP LOCKED); the database stops at the first probe that returns a row. With ``avoiding``,
    the probes first look past one image, then again at every image."""
    lock = " FOR NO KEY UPDATE OF q SKIP LOCKED" if vendor == "postgresql" else ""
    pool, rank, key, image = (column(CaptionPair, name) for name in ("pool", "assign_rank", "order_key", "image"))
    seen_rater, seen_pair, seen_stage = (column(Assignment, name) for name in ("rater", "pair", "stage"))

    def probe(index: int, rank_value: int, low: str, limit: str, avoid: bool) -> str:
        not_image = f" AND w.{image} <> %(avoid_image)s" if avoid else ""
        return (
            # The window: the first PROBE_WINDOW entries of the rank from the probe's key on.
            f'SELECT * FROM (SELECT q."id" FROM (SELECT w."id", w.{key} '  # noqa: S608 - names from the models
            f"FROM {table(CaptionPair)} w WHERE w.{pool} = '{Pool.GAME.value}' AND w.{rank} = {rank_value} "
            f"AND w.{key} >= {low} AND w.{key} < {limit}{not_image} "
            f"ORDER BY w.{key} LIMIT {PROBE_WINDOW}) AS win "
            # Then each pair of the window in order, its row read again by its key: the lock's
            # recheck sees the latest version, and a pair that has taken its last rater meanwhile
            # is passed over. (Not "the same rank": the planner may then read the rank's entries
            # again for each pair of the window.)
            f'JOIN {table(CaptionPair)} q ON q."id" = win."id" '
            f"WHERE q.{rank} IS NOT NULL "
            f"AND NOT EXISTS (SELECT 1 FROM {table(Assignment)} s WHERE s.{seen_rater} = %(rater)s "
            f"AND s.{seen_pair} = q.\"id\" AND s.{seen_stage} = '{Pool.GAME.value}'{SEEN_FENCE}) "
            f"ORDER BY win.{key} LIMIT 1{lock}) AS b{index}"
        )

    # The probes of ``_probes`` with the serve's start point a parameter, sent once for all of
    # them; the ranks and the ends of the key space are the code's own numbers, written in. (The
    # limit may be ORDER_KEY_LIMIT, one past the column's integer range: written in, PostgreSQL
    # reads it as a bigint.)
    ranges = list(_probes("%(start)s"))
    branches = [probe(i, *found, avoid=avoiding) for i, found in enumerate(ranges)]
    if avoiding:
        branches += [probe(len(ranges) + i, *found, avoid=False) for i, found in enumerate(ranges)]
    # The outer read locks the row again (it holds the lock already): in READ COMMITTED that makes
    # it return the row's latest version, as the probe saw it, not the statement's snapshot, which
    # a rating committed meanwhile may have overtaken (its counters would then be stale).
    relock = " FOR NO KEY UPDATE OF p" if vendor == "postgresql" else ""
    sql = (
        f"SELECT {PAIR.select('p')}, {IMAGE.select('i')} "  # noqa: S608 - names from the models
        f'FROM {table(CaptionPair)} p JOIN {table(Image)} i ON i."id" = p.{image} '
        f'WHERE p."id" = (SELECT c."id" FROM ({" UNION ALL ".join(branches)}) AS c LIMIT 1){relock}'
    )
    names = {
        CaptionPair: (*PAIR.names, "pool", "assign_rank", "order_key", "image"),
        Image: IMAGE.names,
        Assignment: ("rater", "pair", "stage"),
    }
    return Statement(sql, names)


@statement
def claim(vendor: str) -> Statement:
    return _claim_statement(vendor, avoiding=False)


@statement
def claim_avoiding(vendor: str) -> Statement:
    return _claim_statement(vendor, avoiding=True)


def claim_query(*, rater: AbstractBaseUser, skip_locked: bool = True) -> QuerySet:
    """Open game pairs this rater was never served, row-locked (the waiting claim's lock)."""
    return (
        serving_order(rater)
        .select_related("image")
        .select_for_update(skip_locked=skip_locked, of=("self",), no_key=True)
    )


def serving_order(rater: AbstractBaseUser) -> QuerySet:
    """Open game pairs this rater was never served (no lock, no order)."""
    seen = Assignment.objects.filter(rater=rater, pair=OuterRef("pk"), stage=Pool.GAME)
    return CaptionPair.objects.filter(pool=Pool.GAME, assign_rank__isnull=False).filter(~_SeenPerPair(seen))


# "Has the rater seen this pair?" asked of the (rater, pair) index for each candidate pair, never as
# a join: planned as an anti-join, PostgreSQL chose by its statistics, and where they said the rater
# had next to no assignments (a new study, statistics taken before the rush, autovacuum behind) it
# read all the rater's assignments for every candidate, so a claim grew with the rater's ratings
# (200 ms at 1,000 of them). An OFFSET keeps an EXISTS a subplan run per row: PostgreSQL does not
# turn it into a join (simplify_EXISTS_query); SQLite runs it per row either way, and wants the
# OFFSET after a LIMIT.
SEEN_FENCE = " LIMIT 1 OFFSET 0"


class _SeenPerPair(Exists):
    template = "EXISTS(%(subquery)s OFFSET 0)"  # after the LIMIT 1 Django gives every EXISTS


def assignments_release_expired(*, now: datetime, limit: int = 20) -> int:
    """Give the slots of expired, unsubmitted game assignments back to their pairs.

    Runs in its own short transactions (one per pair) and skips pairs locked right now; what
    it leaves is picked up by the next call. Returns how many slots were released.
    """
    expired = list(Assignment.objects.filter(holds_slot=True, expires_at__lte=now).values_list("id", "pair_id")[:limit])
    released = 0
    for assignment_id, pair_id in expired:
        with transaction.atomic():
            pair = CaptionPair.objects.select_for_update(skip_locked=True, no_key=True).filter(pk=pair_id).first()
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
