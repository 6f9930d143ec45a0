"""The PostgreSQL claims and batch stores of the priming runner (scoring.priming.store).

The fast path must write what the portable path (the one SQLite takes) writes, and keep its
guarantees: only pairs still claimed by this run and without primes are written, and a claim
takes exactly the pairs ``claimable`` selects. Scorers here are stand-ins with chosen scores
(no model): the statements are under test, not the scoring.
"""

import contextlib
import json
import time
from datetime import timedelta

import numpy as np
import pytest
from django.db import DataError, connection, transaction
from django.utils import timezone

from ratinggame.models import CaptionPair, Pool, PrimingStatus
from scoring.models import ModelRating
from scoring.priming import runner
from scoring.priming.scorer import PrimingPair, RawScore
from scoring.priming.store import array_literal, batch_store, claim_rows, primes_json
from tests.factories import ImageFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


class ChosenScores:
    """A scorer whose raw score of each pair is given (None: does not apply; an error text: fails)."""

    explains = True
    refit = True

    def __init__(self, metric: str, identity: str, scores: dict[int, float | str | None], explanation: str) -> None:
        self.metric, self.label, self.identity = metric, metric, identity
        self.scores, self.explanation = scores, explanation

    def score_pairs(self, pairs: list[PrimingPair]) -> list[RawScore]:
        out = []
        for pair in pairs:
            score = self.scores[pair.pk]
            if isinstance(score, str):
                out.append(RawScore(error=score))
            else:
                out.append(RawScore(value=score, explanation=self.explanation if score is not None else ""))
        return out


def game_pairs(count: int, pool: str = Pool.GAME) -> list[CaptionPair]:
    image = ImageFactory()
    return [
        CaptionPair.objects.create(image=image, caption=f"caption {n}", pool=pool, priming_status=PrimingStatus.PENDING)
        for n in range(count)
    ]


def stored(ids: list[int]) -> tuple[list, list]:
    """What a store leaves: every field of the pairs' ModelRating rows but their id and time, and
    the pairs' primes (as the database holds the JSON), status and error."""
    ratings = list(
        ModelRating.objects.filter(pair_id__in=ids)
        .order_by("pair_id", "slot")
        .values_list("pair_id", "slot", "model_identity", "metric", "raw_score", "value", "explanation", "calibration")
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, primes::text, priming_status, priming_error FROM {CaptionPair._meta.db_table} "  # noqa: S608 - names from the model
            "WHERE id = ANY(%s) ORDER BY id",
            [ids],
        )
        pairs = cursor.fetchall()
    return ratings, pairs


def test_the_postgresql_batch_store_writes_what_the_portable_path_writes(require_postgres):
    pairs = game_pairs(6)
    ids = [p.pk for p in pairs]
    # Pair 0: both scorers; 1: only the first applies; 2: the second fails, so it is left out; 3: no
    # scorer scores it (it fails); 4, 5: scores that a calibration clips, and odd explanation text.
    first = ChosenScores(
        "clip_s",
        "stand-in A",
        dict(zip(ids, [0.61, 0.8, 0.7, None, 0.2, 1.7], strict=True)),
        'a "quoted", {braced} \\ back\nslashed explanation',
    )
    second = ChosenScores(
        "ref_clip_s", "stand-in B", dict(zip(ids, [0.9, None, "boom", "broken", 0.55, 0.75], strict=True)), ""
    )
    scorers = [first, second]
    claimed, claimed_at = runner.claim(ids)
    assert claimed == ids
    batch = runner.priming_pairs(ids)
    scores = [scorer.score_pairs(batch) for scorer in scorers]

    results, states = {}, {}
    for fast in (False, True):
        results[fast] = runner._store_batch(scorers, runner._Calibrations(), batch, scores, claimed_at, fast=fast)
        states[fast] = stored(ids)
        ModelRating.objects.filter(pair_id__in=ids).delete()
        CaptionPair.objects.filter(pk__in=ids).update(
            priming_status=PrimingStatus.RUNNING, priming_claimed_at=claimed_at, primes=[], priming_error=""
        )

    assert results[True] == results[False] == {"primed": 5, "failed": 1, "skipped": 0, "waiting": 0}
    assert states[True] == states[False]
    ratings, pair_rows = states[True]
    assert len(ratings) == 10 and {row[6] for row in ratings} == {"", first.explanation}
    assert [row[2] for row in pair_rows] == ["done", "done", "done", "failed", "done", "done"]


def test_a_model_identity_too_long_for_its_column_is_refused_by_both_paths_and_nothing_is_stored(require_postgres):
    """The fast path sends text as text[]: a cast to the column's varchar(300)[] would have cut the
    identity short without a word, storing primes under a name that is not the model's."""
    ids = [pair.pk for pair in game_pairs(2)]
    scorer = ChosenScores("clip_s", "x" * 301, dict.fromkeys(ids, 0.5), "")
    claimed, claimed_at = runner.claim(ids)
    batch = runner.priming_pairs(claimed)
    for fast in (False, True):
        with pytest.raises(DataError, match="too long"), transaction.atomic():
            runner._store_batch(
                [scorer], runner._Calibrations(), batch, [scorer.score_pairs(batch)], claimed_at, fast=fast
            )
    assert not ModelRating.objects.filter(pair_id__in=ids).exists()
    assert set(CaptionPair.objects.filter(pk__in=ids).values_list("priming_status", flat=True)) == {"running"}


def test_a_batch_whose_pairs_another_run_took_is_not_written(require_postgres):
    pairs = game_pairs(4)
    ids = [p.pk for p in pairs]
    claimed_at = timezone.now()
    assert [row[0] for row in claim_rows(ids, runner.claimable(), claimed_at)] == ids
    # Our claim went stale and another run claimed pairs 0 and 1 again; pair 2 got its primes meanwhile.
    later = claimed_at + timedelta(minutes=20)
    CaptionPair.objects.filter(pk__in=ids[:2]).update(priming_claimed_at=later)
    ModelRating.objects.create(
        pair_id=ids[2], slot=1, model_identity="other run", metric="clip_s", raw_score=1, value=5
    )
    columns = [
        [pk for pk in ids for _ in (1, 2)],
        [1, 2] * 4,
        ["stand-in"] * 8,
        ["clip_s"] * 8,
        [0.75] * 8,
        [3.0] * 8,
        [""] * 8,
        [None] * 8,
    ]
    assert batch_store(columns, claimed_at) == 1
    after = {
        pk: (status, at, primes)
        for pk, status, at, primes in CaptionPair.objects.filter(pk__in=ids).values_list(
            "pk", "priming_status", "priming_claimed_at", "primes"
        )
    }
    assert after[ids[0]] == after[ids[1]] == (PrimingStatus.RUNNING, later, [])
    assert after[ids[2]] == (PrimingStatus.RUNNING, claimed_at, [])
    assert after[ids[3]] == (PrimingStatus.DONE, claimed_at, [3.0, 3.0])
    assert list(
        ModelRating.objects.filter(pair_id__in=ids).values_list("pair_id", "model_identity").order_by("pk")
    ) == [
        (ids[2], "other run"),
        (ids[3], "stand-in"),
        (ids[3], "stand-in"),
    ]


@pytest.mark.parametrize("include_failed", [False, True])
def test_a_postgresql_claim_takes_the_pairs_claimable_selects(require_postgres, settings, include_failed):
    pending, fresh, stale, failed, done = game_pairs(5)
    (tutorial,) = game_pairs(1, pool=Pool.TUTORIAL)
    long_ago = timezone.now() - runner.stale_after() - timedelta(seconds=60)
    CaptionPair.objects.filter(pk=fresh.pk).update(
        priming_status=PrimingStatus.RUNNING, priming_claimed_at=timezone.now()
    )
    CaptionPair.objects.filter(pk=stale.pk).update(priming_status=PrimingStatus.RUNNING, priming_claimed_at=long_ago)
    CaptionPair.objects.filter(pk=failed.pk).update(priming_status=PrimingStatus.FAILED, priming_error="earlier")
    CaptionPair.objects.filter(pk=done.pk).update(priming_status=PrimingStatus.DONE)
    ids = [p.pk for p in (pending, fresh, stale, failed, done, tutorial)]
    expected = sorted(
        CaptionPair.objects.filter(runner.claimable(include_failed), pk__in=ids).values_list("pk", flat=True)
    )
    assert len(expected) == 2 + include_failed  # pending and stale (and failed)
    now = timezone.now()
    rows = claim_rows(ids, runner.claimable(include_failed), now)
    assert [row[0] for row in rows] == expected
    image = pending.image
    assert rows[0][1:] == (image.sha256, image.file.name, pending.caption, "[]")
    claimed = CaptionPair.objects.filter(pk__in=expected)
    assert set(claimed.values_list("priming_status", "priming_claimed_at", "priming_error")) == {
        (PrimingStatus.RUNNING, now, "")
    }


def test_array_literals_read_back_as_the_values(require_postgres):
    texts = ['a "quoted" word', "back\\slash", "two\nlines", "{braces}, commas", "", "NULL"]
    texts = texts + texts[::-1]  # each distinct text is escaped once, wherever it comes
    numbers = [0.1 + 0.2, 1e-300, -3.5, 5.0]
    with connection.cursor() as cursor:
        # numpy's scalars (a scorer's arithmetic may leave them) read back as the numbers they are.
        cursor.execute(
            "SELECT %s::text[], %s::float8[], %s::bigint[], %s::float8[], %s::text[]",
            [
                array_literal(texts),
                array_literal(numbers),
                array_literal([1, None, 2**40]),
                array_literal([np.float64(0.1) * 3, np.float32(0.5), np.int64(7)]),
                array_literal([None, "after a null", None]),
            ],
        )
        assert cursor.fetchone() == (
            texts,
            numbers,
            [1, None, 2**40],
            [float(np.float64(0.1) * 3), 0.5, 7.0],
            [None, "after a null", None],
        )


def test_primes_json_is_what_json_writes_for_the_calibrated_primes():
    """The batch store writes each pair's primes as ``primes_json`` text; it must be the JSON that
    ``json.dumps`` writes for the floats ``_Calibrations.apply`` returns (Python floats), the
    shortest text that reads back as the same float."""
    primes = [[1.0, 5.0], [0.1 + 0.2, 4.999999999999999], [1e16, 2.5e-07], [1 / 3]]
    for values in primes:
        assert primes_json(values) == json.dumps(values)
        assert json.loads(primes_json(values)) == values


@pytest.mark.django_db(transaction=True)
def test_a_claim_and_a_store_of_consecutive_pairs_write_no_index_entry(require_postgres):
    """Three fifths of each page of the pairs' table are free (migration ratinggame 0009), so the new
    version of every pair row that a claim and then a store write stays on its own page (a
    heap-only tuple, the claim's old version pruned by then): the pairs' indexes get no entry. A
    full page would give each one an entry in all of them.

    The prune needs the claim's old versions dead to every snapshot in the database: an ANALYZE
    that autovacuum runs beside the test (it follows the 300 inserted pairs), or any other open
    transaction, keeps them, and the store's new versions then get index entries (a CI run saw 137
    of 300 heap-only). So autovacuum is off for the table during the test, and the store waits
    until no other session of the database holds a snapshot."""
    ids = [pair.pk for pair in game_pairs(300)]
    scorer = ChosenScores("clip_s", "stand-in", dict.fromkeys(ids, 0.5), "")
    claimed_at = timezone.now()
    with _no_autovacuum(CaptionPair), _updates_of(CaptionPair) as claim:
        batch = runner._pairs_of(claim_rows(ids, runner.claimable(), claimed_at), runner._references_stored)
    _wait_for_no_other_snapshot()
    with _no_autovacuum(CaptionPair), _updates_of(CaptionPair) as store:
        runner._store_batch([scorer], runner._Calibrations(), batch, [scorer.score_pairs(batch)], claimed_at, fast=True)
    assert CaptionPair.objects.filter(pk__in=ids, priming_status=PrimingStatus.DONE).count() == 300
    assert claim == store == {"updated": 300, "heap only": 300}


@contextlib.contextmanager
def _no_autovacuum(model):
    """Autovacuum off for ``model``'s table in the block (the ALTER waits for, or cancels, one
    running on it), and back to the server's setting after."""
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")


def _wait_for_no_other_snapshot(seconds=30.0):
    """Waits until no other session of this database holds a snapshot (an autovacuum ANALYZE of
    another table, say); fails naming them if some still do after ``seconds``."""
    query = (
        "SELECT pid, backend_type, state, left(query, 80) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL"
    )
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        while True:
            cursor.execute(query)
            holders = cursor.fetchall()
            if not holders:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"other sessions kept a snapshot for {seconds:.0f} s: {holders}")
            time.sleep(0.1)


@contextlib.contextmanager
def _updates_of(model):
    """Yields a dict that, after the block (one transaction), says how many rows of ``model``'s
    table the block updated and how many of those updates were heap-only."""
    query = "SELECT pg_stat_get_xact_tuples_updated(%s::regclass), pg_stat_get_xact_tuples_hot_updated(%s::regclass)"
    counts: dict[str, int] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(query, [model._meta.db_table] * 2)
        before = cursor.fetchone()
        yield counts
        cursor.execute(query, [model._meta.db_table] * 2)
        counts["updated"], counts["heap only"] = (
            after - first for after, first in zip(cursor.fetchone(), before, strict=True)
        )
