"""Model priming of game pairs inside a worker (scoring.tasks.prime_pairs, manage.py prime_pairs).

Two primes per game pair, stored as ModelRating rows and as ``pair.primes`` (oldest first,
read by ratinggame.game.aggregates.in_force). Each human rating replaces one prime, oldest
first (SPEC section 4): slot 1 goes at the first human rating, slot 2 stays until the second.
So slot 2 holds the most trusted scorer that applies to the pair and slot 1 the next one, in
the order of ``scoring.priming.registry.SCORERS``:

    no references, no predictor:   slot 1 CLIP-S,     slot 2 CLIP-S (the same model twice:
                                                      the paper primed with two ratings)
    references, no predictor:      slot 1 CLIP-S,     slot 2 RefCLIP-S
    no references, predictor:      slot 1 CLIP-S,     slot 2 predictor
    references and predictor:      slot 1 RefCLIP-S,  slot 2 predictor

(PAC-S takes CLIP-S's place when a PAC-S checkpoint is configured.) With a FLEUR model, FLEUR
and RefFLEUR rank above the CLIP family: slot 1 CLIP-S and slot 2 FLEUR without references,
slot 1 FLEUR and slot 2 RefFLEUR with them, and under an active predictor slot 1 FLEUR (or
RefFLEUR). A scorer that cannot score a pair (FLEUR's answer was not a number) is left out for
that pair. Every raw score goes through the current calibration of its metric and scorer
(scoring.priming.calibration_service).

No model configured: nothing is claimed; the pending pairs stay pending with a note in
``priming_error`` (NO_MODEL_NOTE) that the admin list shows. The periodic sweep keeps
re-queueing pending pairs, so they are primed once a worker has a model, and
``manage.py prime_pairs`` primes them at once. A model that cannot be loaded is an error:
in a task the claimed pairs are marked failed with the reason (the command refuses to start
instead, before touching any pair); failed pairs are retried by ``manage.py prime_pairs``
and the admin's "Retry priming" action, never by the sweep.

Idempotence: a pair is claimed by a conditional UPDATE (pending -> running, or a running
claim older than PRIMING_STALE_SECONDS) and its primes are written in one transaction with
the pair row locked, only while the claim is still ours; the unique (pair, slot) constraint
backs this up. A re-run or duplicate message therefore never adds a third prime. On PostgreSQL
a chunk's claim (with its rows) and a batch's store are one statement each
(scoring.priming.store); elsewhere (SQLite) they go through portable queries, under the same
conditions.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus
from scoring.models import ModelRating
from scoring.pictures import stored_image
from scoring.priming import calibration
from scoring.priming.calibration_service import current_calibration
from scoring.priming.configuration import PrimingModels
from scoring.priming.registry import metric_checked
from scoring.priming.scorer import PrimingPair, RawScore, Scorer, ScorerLoadError
from scoring.priming.store import RATING_FIELDS, batch_store, claim_rows, primes_by_pair, primes_json

if TYPE_CHECKING:
    from scoring.models import Calibration

log = logging.getLogger(__name__)

# Batches a long run (manage.py prime_pairs) claims ahead of the one it scores: what a run killed
# outright leaves stranded until its claims go stale.
CLAIM_BATCHES = 4


# Shown to researchers (import report, API) and staff (the admin's pair list): in words, no
# variable names; docs/researchers/priming.md names the settings.
NO_MODEL_NOTE = (
    "waiting: no priming model is configured on this site (the documentation's Model priming page says how); "
    "primed by the periodic sweep, or at once by the command manage.py prime_pairs, once one is set"
)


def _counts() -> dict[str, int]:
    return {"primed": 0, "failed": 0, "skipped": 0, "waiting": 0}


def stale_after() -> timedelta:
    return timedelta(seconds=float(settings.RATINGGAME.get("PRIMING_STALE_SECONDS", 900)))


def claimable(include_failed: bool = False) -> Q:
    cutoff = timezone.now() - stale_after()
    q = Q(priming_status=PrimingStatus.PENDING) | Q(priming_status=PrimingStatus.RUNNING, priming_claimed_at__lt=cutoff)
    if include_failed:
        q |= Q(priming_status=PrimingStatus.FAILED)
    return Q(pool=Pool.GAME) & q


def claim(pair_ids: Iterable[int], include_failed: bool = False) -> tuple[list[int], datetime]:
    """Claim the claimable pairs among ``pair_ids``; returns the ids claimed and the claim time.

    On PostgreSQL, rows another worker is claiming are skipped (SKIP LOCKED). The UPDATE
    repeats the condition, and the claim time written is this worker's token: only pairs
    carrying it afterwards are ours.
    """
    now = timezone.now()
    ids = list(pair_ids)
    with transaction.atomic():
        query = CaptionPair.objects.filter(claimable(include_failed), pk__in=ids)
        if connection.features.has_select_for_update_skip_locked:
            query = query.select_for_update(skip_locked=True, no_key=True)
        candidates = list(query.values_list("pk", flat=True))
        CaptionPair.objects.filter(claimable(include_failed), pk__in=candidates).update(
            priming_status=PrimingStatus.RUNNING, priming_claimed_at=now, priming_error=""
        )
    mine = CaptionPair.objects.filter(pk__in=candidates, priming_status=PrimingStatus.RUNNING, priming_claimed_at=now)
    return sorted(mine.values_list("pk", flat=True)), now


def release(pair_ids: list[int], claimed_at: datetime) -> None:
    """Give unfinished claims back (pending) so a retry or the sweep picks them up at once."""
    CaptionPair.objects.filter(
        pk__in=pair_ids, priming_status=PrimingStatus.RUNNING, priming_claimed_at=claimed_at
    ).update(priming_status=PrimingStatus.PENDING)


def fail(pair_ids: list[int], claimed_at: datetime | None, message: str) -> int:
    query = CaptionPair.objects.filter(pk__in=pair_ids, priming_status=PrimingStatus.RUNNING)
    if claimed_at is not None:
        query = query.filter(priming_claimed_at=claimed_at)
    return query.update(priming_status=PrimingStatus.FAILED, priming_error=message[:2000])


def note_no_model(pair_ids: list[int]) -> int:
    """Mark the pending game pairs among ``pair_ids`` as waiting for a model; returns how many.

    A stale running claim among them (its worker died) goes back to pending too, stamped now
    so that the sweep queues it again only after PRIMING_STALE_SECONDS, like other pending pairs.
    """
    CaptionPair.objects.filter(claimable(), pk__in=pair_ids, priming_status=PrimingStatus.RUNNING).update(
        priming_status=PrimingStatus.PENDING, priming_claimed_at=timezone.now()
    )
    pending = CaptionPair.objects.filter(pk__in=pair_ids, pool=Pool.GAME, priming_status=PrimingStatus.PENDING)
    count = pending.count()
    pending.exclude(priming_error=NO_MODEL_NOTE).update(priming_error=NO_MODEL_NOTE)
    if count:
        log.warning("%d pair(s) not primed: no priming model configured (RATINGGAME_PRIMING_MODEL)", count)
    return count


def priming_pairs(pair_ids: list[int]) -> list[PrimingPair]:
    """The pairs to score, by id. Plain rows, not model instances: at a GPU's pace the ORM's
    instances of a pair and its image would cost more than the scoring."""
    rows = (
        CaptionPair.objects.filter(pk__in=pair_ids)
        .order_by("pk")
        .values_list("pk", "image__sha256", "image__file", "caption", "references")
    )
    return _pairs_of(rows)


def _pairs_of(rows: Iterable[tuple], references_stored: Callable | None = None) -> list[PrimingPair]:
    """PrimingPairs of (id, image sha256, image file name, caption, references) rows;
    ``references_stored`` reads references as the database returned them (JSON text)."""
    storage = Image._meta.get_field("file").storage
    pairs = []
    for pk, sha, name, caption, refs in rows:
        if references_stored is not None and refs is not None:
            refs = references_stored(refs)
        pairs.append(
            PrimingPair(
                pk=pk,
                image_key=sha,
                load_image=stored_image(storage, name),
                caption=caption,
                references=tuple(refs or ()),
            )
        )
    return pairs


def _references_stored(text: str) -> list:
    """CaptionPair.references as a raw cursor returns it (JSON text with psycopg2): the JSON
    field's own reading, without it for the empty list most pairs hold."""
    return [] if text == "[]" else _references_field().from_db_value(text, None, connection)


@functools.cache
def _references_field():
    return CaptionPair._meta.get_field("references")


def fast_path() -> bool:
    """Whether claims and stores take scoring.priming.store's one-statement path (PostgreSQL)."""
    return connection.vendor == "postgresql"


def _test_sleep() -> float:
    # Test-only: seconds to sleep before storing each batch, so a test can kill a worker mid-run.
    return float(os.environ.get("RATINGGAME_PRIMING_TEST_SLEEP_SECONDS", "0") or 0)


class _Claims:
    """Claims pairs a chunk at a time, hands them out a batch at a time, and remembers which
    claimed pairs are not finished yet, to give them back on an interruption."""

    def __init__(self, ids: list[int], batch_size: int, include_failed: bool, chunk: int | None, fast: bool) -> None:
        self.ids = ids
        self.batch_size = batch_size
        self.include_failed = include_failed
        self.chunk = chunk or max(len(ids), 1)
        self.fast = fast
        self.open: dict[datetime, set[int]] = {}

    def batches(self) -> Iterator[tuple[list[int], datetime, list[PrimingPair] | None]]:
        """(ids, claim time, pairs) of each batch; pairs None: read them with priming_pairs."""
        for start in range(0, len(self.ids), self.chunk):
            chunk = self.ids[start : start + self.chunk]
            if self.fast:
                claimed_at = timezone.now()
                pairs = _pairs_of(claim_rows(chunk, claimable(self.include_failed), claimed_at), _references_stored)
                claimed = [pair.pk for pair in pairs]
            else:
                claimed, claimed_at = claim(chunk, self.include_failed)
            if claimed:
                self.open[claimed_at] = set(claimed)
            for offset in range(0, len(claimed), self.batch_size):
                batch = pairs[offset : offset + self.batch_size] if self.fast else None
                yield claimed[offset : offset + self.batch_size], claimed_at, batch

    def finished(self, ids: list[int], claimed_at: datetime) -> None:
        self.open[claimed_at].difference_update(ids)

    def fail_open(self, message: str) -> int:
        return sum(fail(sorted(ids), claimed_at, message) for claimed_at, ids in self.open.items())

    def release_open(self) -> None:
        for claimed_at, ids in self.open.items():
            if ids:
                release(sorted(ids), claimed_at)


def run_priming(
    pair_ids: Iterable[int],
    *,
    models: PrimingModels | None = None,
    batch_size: int | None = None,
    include_failed: bool = False,
    progress: Callable[[int], None] | None = None,
    claim_chunk: int | None = None,
) -> dict[str, int]:
    """Prime the claimable pairs among ``pair_ids``; returns counts (primed, failed, skipped, waiting).

    ``models`` is the worker's configuration (default: the settings'). With no model
    configured the pairs are only noted as waiting (NO_MODEL_NOTE); a model that cannot be
    loaded is recorded on the claimed pairs. The command loads its models first and passes
    them in. ``include_failed`` also claims pairs whose priming failed before.

    Pairs are claimed ``claim_chunk`` at a time (default: all at once, as a task does, so the
    sweep sees every pair of a killed task as a stale claim); a long run (the command) claims a
    few batches ahead, so that a killed run strands only those until they go stale.

    The models score batch k + 1 in a thread while this thread stores batch k: scoring touches
    no database (it reads image files), storing no model, so on a GPU worker the database
    writes hide behind the forward passes. An interruption (time limit, SIGTERM, Ctrl-C)
    gives the claimed pairs that are not stored back at once (pending).

    On PostgreSQL (``fast_path``) claims, reads and stores go through scoring.priming.store's
    statements, one per chunk and one per batch; elsewhere through the portable queries.
    """
    models = models or PrimingModels.from_settings()
    batch_size = batch_size or models.batch_size
    counts = _counts()
    ids = list(pair_ids)
    if not models.configured:
        counts["waiting"] = note_no_model(ids)
        return counts
    fast = fast_path()
    claims = _Claims(ids, batch_size, include_failed, claim_chunk, fast)
    batches = claims.batches()
    first = next(batches, None)
    if first is None:
        return counts
    try:
        scorers = models.scorers()
    except ScorerLoadError as exc:
        counts["failed"] = claims.fail_open(f"priming model could not be loaded: {exc}")
        return counts

    scoring = ThreadPoolExecutor(max_workers=1, thread_name_prefix="priming")
    calibrations = _Calibrations()
    try:
        waiting: tuple | None = None  # the batch being scored: (ids, claimed_at, pairs, future)
        for batch_ids, claimed_at, read in itertools.chain([first], batches):
            pairs = priming_pairs(batch_ids) if read is None else read
            scored = scoring.submit(lambda pairs=pairs: [scorer.score_pairs(pairs) for scorer in scorers])
            if waiting is not None:
                _finish(waiting, scorers, calibrations, claims, counts, progress, fast)
            waiting = (batch_ids, claimed_at, pairs, scored)
        if waiting is not None:
            _finish(waiting, scorers, calibrations, claims, counts, progress, fast)
    except BaseException:
        # Retry / time limit / shutdown: hand the unfinished claims back at once.
        try:
            claims.release_open()
        except Exception:  # the DB may be down: the stale claim is then the fallback
            log.warning("could not release priming claims", exc_info=True)
        raise
    finally:
        # Waits for a batch still being scored: the scorers are not thread-safe, and the next
        # task of this worker process will use them.
        scoring.shutdown(wait=True, cancel_futures=True)
    return counts


def _finish(
    waiting: tuple,
    scorers: list[Scorer],
    calibrations: _Calibrations,
    claims: _Claims,
    counts: dict,
    progress,
    fast: bool,
) -> None:
    batch_ids, claimed_at, pairs, scored = waiting
    result = _store_batch(scorers, calibrations, pairs, scored.result(), claimed_at, fast=fast)
    for key in counts:
        counts[key] += result[key]
    claims.finished(batch_ids, claimed_at)
    if progress:
        progress(len(batch_ids))


def slots_for(ranked: list[tuple[Scorer, float]]) -> list[tuple[Scorer, float]]:
    """[slot 1, slot 2] from the scores that apply, least trusted first: slot 2, kept longest,
    gets the most trusted; slot 1 the next one (or the same when only one applies)."""
    return [ranked[-2] if len(ranked) > 1 else ranked[-1], ranked[-1]]


class _Calibrations:
    """The current calibration of each scorer, read once per run (a refit during the run applies
    from the next run, as it applies to no prime already stored)."""

    def __init__(self) -> None:
        self._by_scorer: dict[int, Calibration] = {}

    def of(self, scorer: Scorer) -> Calibration:
        if id(scorer) not in self._by_scorer:
            self._by_scorer[id(scorer)] = current_calibration(scorer.metric, scorer.identity)
        return self._by_scorer[id(scorer)]

    def apply(self, raw: list[tuple[Scorer, float]]) -> list[float]:
        """The 1-5 ratings of raw scores, each through its scorer's calibration (one call each)."""
        keys = np.array([id(scorer) for scorer, _ in raw], dtype=np.uint64)
        values = np.array([value for _, value in raw], dtype=float)
        out = np.empty(len(raw))
        for key, scorer in {id(scorer): scorer for scorer, _ in raw}.items():
            chosen = keys == key
            cal = self.of(scorer)
            out[chosen] = calibration.apply_knots(values[chosen], cal.x_knots, cal.y_knots)
        return out.tolist()


def _store_batch(
    scorers: list[Scorer],
    calibrations: _Calibrations,
    pairs: list[PrimingPair],
    scores: list[list[RawScore]],
    claimed_at: datetime,
    *,
    fast: bool,
) -> dict[str, int]:
    """Fill the two slots of each pair and store the batch's primes in one transaction.

    A scorer's error leaves that scorer out for the pair (logged); the pair fails only when no
    scorer scored it (its first error, e.g. an undecodable image, is recorded). Under the row
    locks of the batch's pairs, only pairs still claimed by us and without primes are written:
    ``fast``, in one statement (scoring.priming.store.batch_store); otherwise their ModelRating
    rows in one INSERT and ``pair.primes`` and status in one UPDATE, in a transaction.
    """
    counts = _counts()
    failures: dict[str, list[int]] = {}
    slots: dict[int, list[tuple[Scorer, RawScore]]] = {}
    for index, pair in enumerate(pairs):
        raw = [(scorer, by_scorer[index]) for scorer, by_scorer in zip(scorers, scores, strict=True)]
        ranked = [(scorer, score) for scorer, score in raw if score.value is not None]
        errors = [f"{scorer.label}: {score.error}" for scorer, score in raw if score.error]
        if not ranked:
            first_error = next((score.error for _, score in raw if score.error), None)
            failures.setdefault(first_error or "no configured scorer applies to this pair", []).append(pair.pk)
            continue
        if errors:
            log.warning("pair %d primed without %s", pair.pk, "; ".join(errors))
        slots[pair.pk] = slots_for(ranked)
    for message, ids in failures.items():
        counts["failed"] += fail(ids, claimed_at, message)
    if sleep := _test_sleep():
        time.sleep(sleep)
    if not slots:
        return counts
    primed = (
        batch_store(_rating_columns(calibrations, slots), claimed_at)
        if fast
        else _store_portable(calibrations, slots, claimed_at)
    )
    counts["primed"] += primed
    counts["skipped"] += len(slots) - primed
    return counts


def _rating_columns(calibrations: _Calibrations, slots: dict[int, list[tuple[Scorer, RawScore]]]) -> list[list]:
    """The ModelRating rows of every pair's two slots, as store.RATING_FIELDS columns (built as
    columns: at a GPU's pace, rows and their transposition cost more than the store)."""
    chosen = [pair_slot for pair_slots in slots.values() for pair_slot in pair_slots]
    scorers = [scorer for scorer, _ in chosen]
    raw = [score.value for _, score in chosen]
    calibration_pks = {id(scorer): calibrations.of(scorer).pk for scorer in scorers}
    return [
        [pk for pk, pair_slots in slots.items() for _ in pair_slots],
        [slot for pair_slots in slots.values() for slot in range(1, len(pair_slots) + 1)],
        [scorer.identity for scorer in scorers],
        [metric_checked(scorer.metric) for scorer in scorers],
        raw,
        calibrations.apply(list(zip(scorers, raw, strict=True))),
        [score.explanation for _, score in chosen],
        [calibration_pks[id(scorer)] for scorer in scorers],
    ]


def _store_portable(
    calibrations: _Calibrations, slots: dict[int, list[tuple[Scorer, RawScore]]], claimed_at: datetime
) -> int:
    """The batch's primes in a transaction: a locking SELECT of the pairs still ours, an INSERT
    and an UPDATE (cut to the backend's parameter limit); returns how many pairs were written."""
    with transaction.atomic():
        # Reclaimed by another worker (ours went stale) or already primed: left alone.
        mine = list(
            CaptionPair.objects.select_for_update(no_key=True)
            .filter(pk__in=list(slots), priming_status=PrimingStatus.RUNNING, priming_claimed_at=claimed_at)
            .exclude(Exists(ModelRating.objects.filter(pair=OuterRef("pk"))))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        columns = _rating_columns(calibrations, {pk: slots[pk] for pk in mine})
        _model_ratings_insert(list(zip(*columns, strict=True)))
        _primes_write(primes_by_pair(columns))
    return len(mine)


# The ModelRating rows and pair.primes of a batch are written in SQL, not through bulk_create and
# bulk_update: their per-row Python (model instances, a CASE expression per pair for bulk_update)
# costs more than a GPU takes to score the pair, and the database would become the bottleneck.
# Both statements are read by PostgreSQL and SQLite (3.33+, for UPDATE ... FROM); statements are
# cut to the backend's limit on query parameters.


def _statements(rows: list, width: int) -> Iterator[list]:
    size = max(1, connection.ops.bulk_batch_size(["x"] * width, rows))
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _model_ratings_insert(rows: list[tuple]) -> None:
    """INSERT ModelRating rows given as tuples of store.RATING_FIELDS (created_at is now)."""
    quote = connection.ops.quote_name
    fields = [ModelRating._meta.get_field(name) for name in (*RATING_FIELDS, "created_at")]
    columns = ", ".join(quote(field.column) for field in fields)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        for chunk in _statements(rows, len(fields)):
            placeholders = ", ".join(["(" + ", ".join(["%s"] * len(fields)) + ")"] * len(chunk))
            cursor.execute(
                f"INSERT INTO {quote(ModelRating._meta.db_table)} ({columns}) VALUES {placeholders}",  # noqa: S608 - names from the model
                [value for row in chunk for value in (*row, now)],
            )


def _primes_write(primes: dict[int, list[float]]) -> None:
    """Set pair.primes and status done of many pairs in one UPDATE ... FROM (VALUES ...); VALUES
    names its columns column1, column2 in PostgreSQL and SQLite alike."""
    table = connection.ops.quote_name(CaptionPair._meta.db_table)
    as_json = "::jsonb" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        for chunk in _statements(list(primes.items()), 2):
            rows = ", ".join(["(%s, %s)"] * len(chunk))
            cursor.execute(
                f"UPDATE {table} SET primes = v.column2{as_json}, priming_status = %s, priming_error = '' "  # noqa: S608 - names from the model
                f"FROM (VALUES {rows}) AS v WHERE {table}.id = v.column1",
                [PrimingStatus.DONE, *itertools.chain.from_iterable((pk, primes_json(v)) for pk, v in chunk)],
            )
