"""The claim never answers "none left" while a pair the rater may rate is open (SPEC 5).

A property over random histories: pairs of every rank at random places of the key space, a random
share of them already served to the rater (as a rater's excluded ratings leave pairs they rated
back among the open ones), a random start point and an image to keep away from. The truth is
computed from the rows directly; the claim, in each of its lock modes, must find a pair exactly
when one is open, take only an open pair, and keep away from the image while another is open.

An independent audit saw a rater told "none left" four times in a row while 96 pairs it had never
seen had no ratings at all: every probe read the first 32 entries of its rank from the start point
and from the bottom of the key space, and all of those were pairs the rater had seen.
"""

from datetime import timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotators.models import RaterState
from ratinggame.game.assignment import PROBE_WINDOW, Lock, game_pair_claim
from ratinggame.models import ORDER_KEY_LIMIT, Assignment, AssignRank, CaptionPair, Pool
from tests.factories import ImageFactory
from tests.ratinggame.journey_helpers import T0, rater

pytestmark = pytest.mark.django_db

# Counters (count, sum, sum of squares) that give each rank, so that the claim's own refresh of a
# pair's rank agrees with the stored one.
COUNTERS = {
    AssignRank.FRESH: (0, 0, 0),
    AssignRank.STARTED: (1, 3, 9),
    AssignRank.NEAR_MINIMUM: (2, 6, 18),
    AssignRank.DISAGREEING: (3, 10, 34),  # 3, 3, 4
    None: (3, 9, 27),  # three that agree: settled
}

# A pair: (rank, order key, seen by the rater, which of the three images). Keys are drawn near the
# ends of the key space as often as anywhere, where the probes' windows begin.
KEYS = st.one_of(
    st.integers(0, 3 * PROBE_WINDOW),
    st.integers(ORDER_KEY_LIMIT - 3 * PROBE_WINDOW, ORDER_KEY_LIMIT - 1),
    st.integers(0, ORDER_KEY_LIMIT - 1),
)
PAIR = st.tuples(st.sampled_from(list(COUNTERS)), KEYS, st.booleans(), st.integers(0, 2))
HISTORY = st.lists(PAIR, max_size=4 * PROBE_WINDOW)


@st.composite
def seen_below(draw):
    """A history where the rater has seen every pair of its ranks below a key, more than a window
    of them (the starving history: what its excluded ratings leave), and some pairs above."""
    threshold = draw(st.integers(PROBE_WINDOW, 3 * PROBE_WINDOW))
    rank = draw(st.sampled_from([AssignRank.FRESH, AssignRank.STARTED]))
    keys = st.lists(st.integers(0, 4 * PROBE_WINDOW), min_size=2 * PROBE_WINDOW, max_size=4 * PROBE_WINDOW, unique=True)
    return [(rank, key, key < threshold or draw(st.booleans()), draw(st.integers(0, 2))) for key in draw(keys)]


def _build(user, history, images) -> dict[int, tuple]:
    """The pairs and the rater's assignments of ``history``; {pair id: (open, image id)}."""
    pairs = CaptionPair.objects.bulk_create(
        CaptionPair(
            image=images[image],
            caption=f"caption {index}",
            source="other",
            pool=Pool.GAME,
            display_order=index,
            order_key=key,
            assign_rank=rank,
            human_count=COUNTERS[rank][0],
            human_sum=COUNTERS[rank][1],
            human_sumsq=COUNTERS[rank][2],
        )
        for index, (rank, key, _seen, image) in enumerate(history)
    )
    Assignment.objects.bulk_create(
        Assignment(
            rater=user,
            pair=pair,
            stage=Pool.GAME,
            served_at=T0,
            expires_at=T0 + timedelta(hours=1),
            submitted_at=T0,
        )
        for pair, (_rank, _key, seen, _image) in zip(pairs, history, strict=True)
        if seen
    )
    return {
        pair.pk: (rank is not None and not seen, pair.image_id)
        for pair, (rank, _key, seen, _image) in zip(pairs, history, strict=True)
    }


def _check(user, history, images, start, avoid, lock):
    with transaction.atomic():
        truth = _build(user, history, images)
        avoid_image = images[avoid].pk if avoid is not None else None
        avoid_images = () if avoid_image is None else (avoid_image,)
        claimed = game_pair_claim(rater_id=user.pk, start=start, avoid_images=avoid_images, lock=lock)
        transaction.set_rollback(True)
    open_pairs = {pair_id for pair_id, (is_open, _image) in truth.items() if is_open}
    if not open_pairs:
        assert claimed is None
        return
    assert claimed is not None, f"none left while {len(open_pairs)} pairs were open"
    pair, image = claimed
    assert pair.id in open_pairs
    elsewhere = {pair_id for pair_id in open_pairs if truth[pair_id][1] != avoid_image}
    if avoid_image is not None and elsewhere:
        assert image.id != avoid_image


@pytest.fixture
def world():
    return rater(RaterState.GAME), [ImageFactory() for _ in range(3)]


@pytest.mark.parametrize("lock", list(Lock))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    history=st.one_of(HISTORY, seen_below()),
    start=KEYS,
    avoid=st.one_of(st.none(), st.integers(0, 2)),
)
def test_the_claim_finds_an_open_pair_whenever_there_is_one(world, lock, history, start, avoid):
    user, images = world
    _check(user, history, images, start, avoid, lock)


@pytest.mark.parametrize("lock", list(Lock))
def test_the_audits_starving_rater_is_served(world, lock):
    """The audit's case: the rater has seen the lowest keys of the fresh rank (its excluded
    ratings sent them back), more than a window of them, its start point lies above every key,
    and the fresh pairs it has not seen lie between."""
    user, images = world
    seen = [(AssignRank.FRESH, key, True, 0) for key in range(2 * PROBE_WINDOW)]
    unseen = [(AssignRank.FRESH, 1_000 + key, False, 1) for key in range(5)]
    _check(user, seen + unseen, images, ORDER_KEY_LIMIT - 1, None, lock)


def test_reading_on_past_the_windows_reads_the_seen_pairs_once_and_stops_at_the_first_open_one(world, require_postgres):
    """The statement that runs when every window missed: each of its probes walks the serving index
    in order from its key and stops at the first pair the rater has not seen, so it reads the seen
    pairs of that range and one more (nothing of the rest of the pool), and only what it takes is
    locked."""
    from django.db import connection

    from ratinggame.game.assignment import claim_statements
    from tests.ratinggame.game.test_assignment import _plan_nodes

    user, images = world
    seen = [(AssignRank.FRESH, key, True, 0) for key in range(2 * PROBE_WINDOW)]
    unseen = [(AssignRank.FRESH, 1_000 + key, False, 1) for key in range(200)]
    with transaction.atomic(), connection.cursor() as cursor:
        _build(user, seen + unseen, images)
        cursor.execute("SET LOCAL enable_seqscan = off")  # as on a table of many pages
        read_on = list(claim_statements(user.pk, ORDER_KEY_LIMIT - 1, ()))[1]
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + read_on[0], read_on[1])
        plan = cursor.fetchone()[0][0]["Plan"]
        transaction.set_rollback(True)
    reads = sum(
        node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0)
        for node in _plan_nodes(plan)
        if node.get("Index Name") == "pair_serving_order_idx"
    )
    assert len(seen) < reads <= len(seen) + 1 + 1, reads  # + the outer read of the pair found


@pytest.mark.parametrize("lock", list(Lock))
def test_a_pair_of_the_image_just_seen_waits_while_one_of_another_image_is_open_past_the_windows(world, lock):
    """SPEC 5: never two captions of one image in a row while a pair of another image is open.
    The image just seen (0) has an open pair in the first window; the other image's only open pair
    lies past a window of pairs the rater has seen: reading on past the image comes before looking
    at every image (an audit found the first window of every image served first)."""
    user, images = world
    just_seen = [(AssignRank.FRESH, 5, False, 0)]
    other = [(AssignRank.FRESH, 10 + key, True, 1) for key in range(PROBE_WINDOW + 8)] + [
        (AssignRank.FRESH, 500, False, 1)
    ]
    _check(user, just_seen + other, images, ORDER_KEY_LIMIT - 1, 0, lock)
