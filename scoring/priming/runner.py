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

(PAC-S takes CLIP-S's place when a PAC-S checkpoint is configured.) Every raw score goes
through the current calibration of its metric and scorer (scoring.priming.calibration_service).

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
backs this up. A re-run or duplicate message therefore never adds a third prime.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from ratinggame.models import CaptionPair, Pool, PrimingStatus
from scoring.models import ModelRating
from scoring.priming import calibration
from scoring.priming.calibration_service import current_calibration
from scoring.priming.registry import PrimingModels
from scoring.priming.scorer import PrimingPair, RawScore, Scorer, ScorerLoadError

if TYPE_CHECKING:
    from PIL import Image

    from scoring.models import Calibration

log = logging.getLogger(__name__)

NO_MODEL_NOTE = (
    "waiting: no priming model configured (set RATINGGAME_PRIMING_MODEL); "
    "primed by the periodic sweep or `manage.py prime_pairs` once one is set"
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
            query = query.select_for_update(skip_locked=True)
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


def image_loader(pair: CaptionPair) -> Callable[[], Image.Image]:
    """Opens the pair's stored image; the scorers convert it (scoring.priming.images.image_to_rgb)."""

    def load() -> Image.Image:
        from PIL import Image as PILImage

        with pair.image.file.open("rb") as handle:
            image = PILImage.open(handle)
            image.load()
        return image

    return load


def priming_pair(pair: CaptionPair) -> PrimingPair:
    return PrimingPair(
        pk=pair.pk,
        image_key=pair.image.sha256,
        load_image=image_loader(pair),
        caption=pair.caption,
        references=tuple(pair.references or ()),
    )


def _store(pair_id: int, claimed_at: datetime, slots: list[tuple[str, str, float, Calibration]]) -> bool:
    """Write the two primes and pair.primes in one transaction, under the pair's row lock."""
    with transaction.atomic():
        pair = CaptionPair.objects.select_for_update().get(pk=pair_id)
        if pair.priming_status != PrimingStatus.RUNNING or pair.priming_claimed_at != claimed_at:
            return False  # reclaimed by another worker (ours went stale) or already done
        if ModelRating.objects.filter(pair_id=pair_id).exists():
            return False
        values = []
        for slot, (metric, identity, raw, cal) in enumerate(slots, start=1):
            value = float(calibration.apply_knots([raw], cal.x_knots, cal.y_knots)[0])
            ModelRating.objects.create(
                pair_id=pair_id,
                slot=slot,
                model_identity=identity,
                metric=metric,
                raw_score=raw,
                value=value,
                calibration=cal,
            )
            values.append(value)
        pair.primes = values
        pair.priming_status = PrimingStatus.DONE
        pair.priming_error = ""
        pair.save(update_fields=["primes", "priming_status", "priming_error"])
    return True


def _test_sleep() -> float:
    # Test-only: seconds to sleep before storing each pair, so a test can kill a worker mid-batch.
    return float(os.environ.get("RATINGGAME_PRIMING_TEST_SLEEP_SECONDS", "0") or 0)


def _test_sleep() -> float:
    # Test-only: seconds to sleep before storing each pair, so a test can kill a worker mid-batch.
    return float(os.environ.get("RATINGGAME_PRIMING_TEST_SLEEP_SECONDS", "0") or 0)


def run_priming(
    pair_ids: Iterable[int],
    *,
    models: PrimingModels | None = None,
    batch_size: int | None = None,
    include_failed: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Prime the claimable pairs among ``pair_ids``; returns counts (primed, failed, skipped, waiting).

    ``models`` is the worker's configuration (default: the settings'). With no model
    configured the pairs are only noted as waiting (NO_MODEL_NOTE); a model that cannot be
    loaded is recorded on the claimed pairs. The command loads its models first and passes
    them in. ``include_failed`` also claims pairs whose priming failed before.
    """
    models = models or PrimingModels.from_settings()
    batch_size = batch_size or models.batch_size
    counts = _counts()
    ids = list(pair_ids)
    if not models.configured:
        counts["waiting"] = note_no_model(ids)
        return counts
    ids, claimed_at = claim(ids, include_failed)
    if not ids:
        return counts
    try:
        scorers = models.scorers()
    except ScorerLoadError as exc:
        counts["failed"] = fail(ids, claimed_at, f"priming model could not be loaded: {exc}")
        return counts

    done: set[int] = set()
    try:
        for start in range(0, len(ids), batch_size):
            chunk = ids[start : start + batch_size]
            result = _prime_batch(scorers, chunk, claimed_at)
            for key in counts:
                counts[key] += result[key]
            done.update(chunk)
            if progress:
                progress(len(chunk))
    except BaseException:
        # Retry / time limit / shutdown: hand the unfinished claims back at once.
        try:
            release([i for i in ids if i not in done], claimed_at)
        except Exception:  # the DB may be down: the stale claim is then the fallback
            log.warning("could not release priming claims", exc_info=True)
        raise
    return counts


def slots_for(ranked: list[tuple[Scorer, float]]) -> list[tuple[Scorer, float]]:
    """[slot 1, slot 2] from the scores that apply, least trusted first: slot 2, kept longest,
    gets the most trusted; slot 1 the next one (or the same when only one applies)."""
    return [ranked[-2] if len(ranked) > 1 else ranked[-1], ranked[-1]]


def _prime_batch(scorers: list[Scorer], ids: list[int], claimed_at: datetime) -> dict[str, int]:
    pairs = list(CaptionPair.objects.select_related("image").filter(pk__in=ids).order_by("pk"))
    items = [priming_pair(pair) for pair in pairs]
    scores: list[list[RawScore]] = [scorer.score_pairs(items) for scorer in scorers]
    calibrations: dict[int, Calibration] = {}

    def calibration_of(scorer: Scorer) -> Calibration:
        if id(scorer) not in calibrations:
            calibrations[id(scorer)] = current_calibration(scorer.metric, scorer.identity, scorer.default_knots())
        return calibrations[id(scorer)]

    counts = _counts()
    sleep = _test_sleep()
    for index, pair in enumerate(pairs):
        raw = [by_scorer[index] for by_scorer in scores]
        error = next((score.error for score in raw if score.error), None)
        ranked = [(scorer, score.value) for scorer, score in zip(scorers, raw, strict=True) if score.value is not None]
        if error is not None or not ranked:
            counts["failed"] += fail([pair.pk], claimed_at, error or "no configured scorer applies to this pair")
            continue
        slots = [(scorer.metric, scorer.identity, value, calibration_of(scorer)) for scorer, value in slots_for(ranked)]
        if sleep:
            time.sleep(sleep)
        counts["primed" if _store(pair.pk, claimed_at, slots) else "skipped"] += 1
    return counts
