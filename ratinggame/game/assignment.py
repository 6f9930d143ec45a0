"""Which game pair a rater gets next (SPEC section 5).

Each game pair collects 3 to 7 human ratings. A rater never sees the same pair twice, never
sees tutorial or probation pairs in the game, and never sees another rater's ratings before
submitting. Started pairs come before fresh ones; past 3 ratings only pairs that the assignment
policy says need more (SPEC 5.1, ``needs_more``) get more, up to 7.

Order: among pairs of equal rank, each rater meets them in an order of their own. Every pair
has a random ``order_key``; each serve of a rater starts at a point of the key space drawn from
the rater's seed and serve count (``annotators.journey.seeded_draw``) and takes the first pair
at or after it, wrapping around: raters do not share an order, a pair's neighbours differ from
rater to rater, and a reload or a retry draws the same point. Two captions of one image never
come one after the other while a pair of another image is open to the rater: the claim first
looks past the images of the rater's latest serves (``gameplay.IMAGES_AVOIDED`` of them, carried
by the profile), and only then at them.

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
the last one at night) every claim read all of their started pairs, and a claim grew with the
rater's history (``bench/bench_claim_history.py``). So started pairs come before fresh ones
(SPEC 5) among the first ``PROBE_WINDOW`` pairs of each rank in the rater's order from each
serve's start point (and as many from the beginning of the key space); a started pair further on
is met by a later serve, whose start point differs, or by a rater who has not seen the ones
before it. Only when every window misses does the claim read on past them (a second statement,
whose probes stop at the first pair the rater has not seen): a rater is told "none left" only
when no pair is open to them, never because the pairs they have seen fill the windows.

One claim serves every caller, with a lock mode (``Lock``): the game's serve passes over locked
pairs, the serve that found them all locked waits for the first, and the next image's guess
(``ratinggame.game.prefetch``) locks nothing.

Open assignments count toward the cap (``in_flight``), so two raters racing for the last slot
cannot push a pair past 7: the next-pair query itself locks the row it returns (FOR NO KEY
UPDATE SKIP LOCKED, as Label Studio's next_task locks with FOR UPDATE; see ``sql.row_lock`` for
why no key), the lock makes PostgreSQL check the WHERE again on the latest row, and the slot is
taken in the same transaction. A rater never waits for one pair's lock while holding another's
(``game_pair_claim``). An open assignment that expires gives its slot back
(``assignments_release_expired``).
"""

import enum
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import partial

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from annotators.journey import seeded_draw
from ratinggame.game.cursor import fetch_one
from ratinggame.game.prior import IN_FORCE, Prior, level_prior
from ratinggame.game.sql import IMAGE, PAIR, ImageRow, PairRow, Statement, column, row_lock, statement, table
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
from scoring import ordinal

# The ranks in serving order (lowest first): started pairs before fresh ones (SPEC 5).
RANKS = sorted(AssignRank.values)
# Entries of the serving index one probe reads at most (the module's docstring says why).
PROBE_WINDOW = 32


def assign_rank_for(
    *,
    human_count: int,
    human_sum: int,
    human_sumsq: int,
    in_flight: int,
    withdrawn: bool = False,
    evidence: list | None = None,
    prior: "Prior | str" = IN_FORCE,
) -> int | None:
    """The game pair's rank in the serving order, or None when it takes no more raters.

    A pair withdrawn after reports (``ratinggame.game.reports``) takes none until staff put it
    back in play.
    Committed ratings (stored plus open assignments) below 3: the pair needs more, and the
    closer it is to 3 the sooner it is served (started before fresh). From 3 to 6, by the
    assignment policy in force (SPEC 5.1, ``needs_more``).
    """
    committed = human_count + in_flight
    if withdrawn or committed >= MAX_HUMAN_RATINGS:
        return None
    if committed < MIN_HUMAN_RATINGS:
        return (AssignRank.FRESH, AssignRank.STARTED, AssignRank.NEAR_MINIMUM)[committed]
    more = needs_more(human_count, human_sum, human_sumsq, evidence, prior=prior)
    return AssignRank.DISAGREEING if more else None


def needs_more(
    human_count: int, human_sum: int, human_sumsq: int, evidence: list | None, *, prior: "Prior | str" = IN_FORCE
) -> bool:
    """Whether a pair with 3 to 6 committed ratings takes another (SPEC 5.1).

    ``unanimous``: while its stored human ratings are not all equal (n * sum(x²) != (sum x)²).
    ``settled``: once 3 are stored, while the ordinal rater model (``scoring.ordinal``) gives more
    than the threshold to the chance that more ratings would change its label; until 3 are stored
    the open assignments' ratings are awaited (they may settle it). ``prior``: the level prior to
    judge with (None: flat), by default the one in force in this process (``prior.level_prior``).
    """
    rules = settings.RATINGGAME
    if rules["ASSIGNMENT_POLICY"] == "unanimous":
        return human_count >= 2 and human_count * human_sumsq != human_sum * human_sum
    if human_count < MIN_HUMAN_RATINGS:
        return False
    shares = level_prior() if prior == IN_FORCE else prior
    return not ordinal.is_settled(evidence, rules["SETTLED_THRESHOLD"], shares)


def slot_give_back(pair: CaptionPair, assignment_id: int, **fields) -> bool:
    """Give the slot the assignment holds on ``pair`` (its row locked by the caller) back, once;
    ``fields`` are written on the assignment with it. True when this call gave it back:
    ``pair.in_flight`` is one less, and the caller refreshes the rank and saves.

    A conditional UPDATE under the pair lock: of a submission, a skip, a report and the expiry
    sweep racing for one assignment, the first clears the flag and no slot is released twice."""
    if not Assignment.objects.filter(pk=assignment_id, holds_slot=True).update(holds_slot=False, **fields):
        return False
    pair.in_flight = max(pair.in_flight - 1, 0)
    return True


def pair_rank_refresh(pair: CaptionPair | PairRow, *, prior: "Prior | str" = IN_FORCE) -> None:
    """Set ``pair.assign_rank`` from its counters (the caller holds the row lock and saves), with
    the level prior ``prior`` (``needs_more``)."""
    if pair.pool != Pool.GAME:
        pair.assign_rank = None
        return
    pair.assign_rank = assign_rank_for(
        human_count=pair.human_count,
        human_sum=pair.human_sum,
        human_sumsq=pair.human_sumsq,
        in_flight=pair.in_flight,
        withdrawn=pair.withdrawn_at is not None,
        evidence=pair.label_evidence,
        prior=prior,
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


class Lock(enum.Enum):
    """What the claim does with a pair another rater holds locked right now."""

    SKIP = "skip"  # pass over it: the game's serve, so that raters asking at once spread out
    WAIT = "wait"  # wait for it, one pair at a time: when every open pair was locked
    NONE = "none"  # lock nothing and take no slot: a guess (the next image to download)


# How many pairs with a stale stored rank one claim passes over before it gives up: a stale rank
# is a broken invariant, which the claim corrects where it can and ``check_aggregates`` repairs;
# the limit only keeps a claim from looping.
STALE_PASSES = 3


def game_pair_claim(
    *, rater_id: int, start: int, avoid_images: Sequence[int] = (), lock: Lock = Lock.SKIP
) -> tuple[PairRow, ImageRow] | None:
    """The next game pair of this rater's order, with its image; None only when no pair the
    rater may rate is open (with ``Lock.SKIP``: or every open one is locked at this moment).

    ``start`` is the serve's point in the key space (``order_start``); ``avoid_images``, the images
    the rater has just seen (``gameplay.images_to_avoid``), whose pairs come only when no pair of
    another image is open. With a
    lock, the claim must run inside a transaction: the returned pair is locked, and its
    ``in_flight`` and ``assign_rank`` already count the new assignment, which the caller writes
    with the assignment in the same transaction. With ``Lock.WAIT``, call it in a transaction
    that holds no pair's lock. With ``Lock.NONE`` the pair comes back as it is, nothing counted.
    """
    if lock is Lock.WAIT:
        return _claim_waiting(rater_id, start, avoid_images)
    if lock is Lock.NONE:
        return _first_open(rater_id, start, avoid_images, locking=False)
    for _ in range(STALE_PASSES):  # a stale stored rank is corrected and the claim looks again
        claimed = _first_open(rater_id, start, avoid_images, locking=True)
        if claimed is None:
            return None
        pair = claimed[0]
        pair_rank_refresh(pair)
        if pair.assign_rank is not None:
            return slot_take(pair), claimed[1]
        CaptionPair.objects.filter(pk=pair.id).update(assign_rank=None)
    return None


def _claim_waiting(rater_id: int, start: int, avoid_images: Sequence[int]) -> tuple[PairRow, ImageRow] | None:
    """The first open pair of the order, waited for: found without a lock, then locked by its key
    in a savepoint. A pair that filled up meanwhile (PostgreSQL reads the row's latest version
    once it has the lock) is no longer open, and the next look does not find it; one whose stored
    rank was stale is passed over by the looks after."""
    stale: list[int] = []
    while (head := _first_open(rater_id, start, avoid_images, locking=False, passed=stale)) is not None:
        with transaction.atomic():
            row = pair_lock_waiting().fetchone(head[0].id)
            pair = None if row is None else PAIR.read(row[: PAIR.width])
            if pair is not None:
                pair_rank_refresh(pair)
                if pair.assign_rank is not None:
                    return slot_take(pair), IMAGE.read(row[PAIR.width :])
                stale.append(pair.id)
            # The lock is kept to the end of the transaction unless the savepoint is rolled back:
            # give it back before waiting for the next pair, or two raters waiting for each
            # other's pairs would deadlock. The next claim that skips locks corrects a stale rank.
            transaction.set_rollback(True)
        if len(stale) >= STALE_PASSES:
            return None
    return None


def slot_take(pair):
    """``pair`` (locked, its rank current) with the new assignment counted."""
    pair.in_flight += 1
    pair_rank_refresh(pair)
    return pair


def claim_statements(
    rater_id: int, start: int, avoid_images: Sequence[int], *, locking: bool = True, passed: list[int] = ()
) -> Iterator[tuple[str, dict]]:
    """The claim's statements for this rater and serve with their parameters (named: each is sent
    once, however many probes use it), in the order to run them until one returns a row: the
    windows of each rank, then (only when every window missed) each rank read on from there; with
    ``avoid_images``, all of that past those images first, then at every image. Without
    ``locking`` the statements lock nothing and pass over the pairs ``passed``."""
    params = {"start": start, "rater": rater_id}
    if avoid_images:
        params["avoid_images"] = _image_list(list(avoid_images))
    if not locking:
        ids = list(passed)[:STALE_PASSES]
        params |= {f"passed{index}": value for index, value in enumerate(ids + [0] * (STALE_PASSES - len(ids)))}
    # Past the images first, read on as far as it takes, and only then at every image: a pair of
    # an avoided image is served only when no pair of another image is open (SPEC 5).
    for avoiding in (True, False) if avoid_images else (False,):
        for windowed in (True, False):
            yield CLAIMS[avoiding, locking, windowed]().sql, params


def _image_list(images: list[int]):
    """The images to keep away from as one parameter, however many: an array on PostgreSQL, a JSON
    list elsewhere (``_not_images``)."""
    return images if connections[DEFAULT_DB_ALIAS].vendor == "postgresql" else json.dumps(images)


def _not_images(vendor: str, alias: str, image: str) -> str:
    """The condition "not one of the images ``%(avoid_images)s``" (``_image_list``)."""
    if vendor == "postgresql":
        return f" AND {alias}.{image} <> ALL(%(avoid_images)s)"
    return f" AND {alias}.{image} NOT IN (SELECT value FROM json_each(%(avoid_images)s))"  # noqa: S608 - names from the models


def _first_open(
    rater_id: int, start: int, avoid_images: Sequence[int], *, locking: bool, passed: list[int] = ()
) -> tuple[PairRow, ImageRow] | None:
    """The first open pair of the rater's order with its image, row-locked with ``locking``."""
    fetch = partial(fetch_one, connections[DEFAULT_DB_ALIAS])
    return first_open_pair(fetch, rater_id, start, avoid_images, locking=locking, passed=passed)


def first_open_pair(
    fetch: Callable[[str, dict], tuple | None],
    rater_id: int,
    start: int,
    avoid_images: Sequence[int],
    *,
    locking: bool,
    passed: list[int] = (),
) -> tuple[PairRow, ImageRow] | None:
    """``claim_statements`` run by ``fetch`` (a statement and its parameters in, its first row out:
    Django's connection for the game, a bare driver connection for ``bench/floor_app.py``) until
    one finds a pair; that pair and its image."""
    for sql, params in claim_statements(rater_id, start, avoid_images, locking=locking, passed=passed):
        row = fetch(sql, params)
        if row is not None:
            return PAIR.read(row[: PAIR.width]), IMAGE.read(row[PAIR.width :])
    return None


def _claim_statement(vendor: str, *, avoiding: bool, locking: bool, windowed: bool) -> Statement:
    """The claim's SQL: one probe per rank and key range, in serving order (``_probes``); the
    database stops at the first probe that returns a row. With ``avoiding``, the probes look past
    the images ``%(avoid_images)s`` (``claim_statements`` runs the ones that do not after them).

    ``windowed``: each probe reads at most ``PROBE_WINDOW`` entries of the partial index
    ``pair_serving_order_idx`` from its key on, and takes the first the rater has not seen. Else
    each probe reads on until it finds one: as many entries as the rater has seen of that range
    (and others hold locked), plus one. That runs only when every window missed, so that a rater is
    told "none left" only when nothing is open to them. ``locking``: what a probe finds is locked,
    and locked pairs are passed over (SKIP LOCKED); else nothing is locked, and the pairs whose ids
    are the parameters ``passed0`` .. are passed over.
    """
    postgres = vendor == "postgresql"
    lock = " FOR NO KEY UPDATE OF q SKIP LOCKED" if locking and postgres else ""
    pool, rank, key, image = (column(CaptionPair, name) for name in ("pool", "assign_rank", "order_key", "image"))
    seen_rater, seen_pair, seen_stage = (column(Assignment, name) for name in ("rater", "pair", "stage"))
    open_to_rater = (
        f"NOT EXISTS (SELECT 1 FROM {table(Assignment)} s WHERE s.{seen_rater} = %(rater)s "  # noqa: S608 - names from the models
        f"AND s.{seen_pair} = q.\"id\" AND s.{seen_stage} = '{Pool.GAME.value}'{SEEN_FENCE})"
    )
    if not locking:
        passed = ", ".join(f"%(passed{index})s" for index in range(STALE_PASSES))
        open_to_rater += f' AND q."id" NOT IN ({passed})'

    def probe(index: int, rank_value: int, low: str, limit: str, avoid: bool) -> str:
        if not windowed:
            # The rank's entries in order from the probe's key, each asked whether the rater has
            # seen it, until one is not. PostgreSQL checks the WHERE again on the latest version
            # of a row it locks: a pair that took its last rater meanwhile is passed over.
            return (
                f'SELECT * FROM (SELECT q."id" FROM {table(CaptionPair)} q '  # noqa: S608 - names from the models
                f"WHERE q.{pool} = '{Pool.GAME.value}' AND q.{rank} = {rank_value} "
                f"AND q.{key} >= {low} AND q.{key} < {limit}"
                f"{_not_images(vendor, 'q', image) if avoid else ''} AND {open_to_rater} "
                f"ORDER BY q.{key} LIMIT 1{lock}) AS b{index}"
            )
        return (
            # The window: the first PROBE_WINDOW entries of the rank from the probe's key on.
            f'SELECT * FROM (SELECT q."id" FROM (SELECT w."id", w.{key} '  # noqa: S608 - names from the models
            f"FROM {table(CaptionPair)} w WHERE w.{pool} = '{Pool.GAME.value}' AND w.{rank} = {rank_value} "
            f"AND w.{key} >= {low} AND w.{key} < {limit}"
            f"{_not_images(vendor, 'w', image) if avoid else ''} "
            f"ORDER BY w.{key} LIMIT {PROBE_WINDOW}) AS win "
            # Then each pair of the window in order, its row read again by its key: the lock's
            # recheck sees the latest version, and a pair that has taken its last rater meanwhile
            # is passed over. (Not "the same rank": the planner may then read the rank's entries
            # again for each pair of the window.)
            f'JOIN {table(CaptionPair)} q ON q."id" = win."id" '
            f"WHERE q.{rank} IS NOT NULL AND {open_to_rater} "
            f"ORDER BY win.{key} LIMIT 1{lock}) AS b{index}"
        )

    # The probes of ``_probes`` with the serve's start point a parameter, sent once for all of
    # them; the ranks and the ends of the key space are the code's own numbers, written in. (The
    # limit may be ORDER_KEY_LIMIT, one past the column's integer range: written in, PostgreSQL
    # reads it as a bigint.)
    branches = [probe(i, *found, avoid=avoiding) for i, found in enumerate(_probes("%(start)s"))]
    # The outer read locks the row again (it holds the lock already): in READ COMMITTED that makes
    # it return the row's latest version, as the probe saw it, not the statement's snapshot, which
    # a rating committed meanwhile may have overtaken (its counters would then be stale).
    relock = " FOR NO KEY UPDATE OF p" if locking and postgres else ""
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


def _claim_builder(avoiding: bool, locking: bool, windowed: bool) -> Callable[[], Statement]:
    def build(vendor: str) -> Statement:
        return _claim_statement(vendor, avoiding=avoiding, locking=locking, windowed=windowed)

    build.__name__ = "claim" + "_avoiding" * avoiding + "_unlocked" * (not locking) + "_read_on" * (not windowed)
    return statement(build)


# Every claim statement, by (avoiding an image, locking, windowed).
CLAIMS = {flags: _claim_builder(*flags) for flags in itertools.product((False, True), repeat=3)}


@statement
def pair_lock_waiting(vendor: str) -> Statement:
    """An open game pair and its image by the pair's id, locked: waits for a rater who holds it."""
    image, rank = column(CaptionPair, "image"), column(CaptionPair, "assign_rank")
    sql = (
        f"SELECT {PAIR.select('p')}, {IMAGE.select('i')} "  # noqa: S608 - names from the models
        f'FROM {table(CaptionPair)} p JOIN {table(Image)} i ON i."id" = p.{image} '
        f'WHERE p."id" = %s AND p.{rank} IS NOT NULL{row_lock(vendor, "p")}'
    )
    return Statement(sql, {CaptionPair: (*PAIR.names, "image", "assign_rank"), Image: IMAGE.names})


# "Has the rater seen this pair?" asked of the (rater, pair) index for each candidate pair, never as
# a join: planned as an anti-join, PostgreSQL chose by its statistics, and where they said the rater
# had next to no assignments (a new study, statistics taken before the rush, autovacuum behind) it
# read all the rater's assignments for every candidate, so a claim grew with the rater's ratings
# (200 ms at 1,000 of them). An OFFSET keeps an EXISTS a subplan run per row: PostgreSQL does not
# turn it into a join (simplify_EXISTS_query); SQLite runs it per row either way, and wants the
# OFFSET after a LIMIT.
SEEN_FENCE = " LIMIT 1 OFFSET 0"


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
            if slot_give_back(pair, assignment_id):
                pair_rank_refresh(pair)
                pair.save(update_fields=["in_flight", "assign_rank"])
                released += 1
    return released
