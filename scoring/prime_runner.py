"""Model priming of game pairs inside a worker (scoring.tasks.prime_pairs, manage.py prime_pairs).

Two primes per game pair, stored as ModelRating rows and as ``pair.primes`` (oldest first,
read by ratinggame.aggregates.in_force: each human rating replaces one prime):

- slot 1: calibrated CLIP-S (metric "clip_s", or "pac_s" for a PAC-S checkpoint);
- slot 2: calibrated RefCLIP-S when the pair has reference captions; otherwise the active
  learned predictor (scoring.predictor) when one exists for this scorer; otherwise the
  slot-1 value again (the paper primed with two ratings; with one model they coincide).

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
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from ratinggame.models import CaptionPair, Pool, PrimingStatus
from scoring import calibration
from scoring.calibration_service import current_calibration
from scoring.models import ModelRating

if TYPE_CHECKING:
    from scoring.clip_models import ClipScorer

log = logging.getLogger(__name__)

NO_MODEL_ERROR = "no priming model configured (set RATINGGAME_PRIMING_MODEL)"
# One scorer per worker process, built on first use (loading a model takes seconds).
_SCORERS: dict[tuple, ClipScorer] = {}


def priming_config() -> dict[str, Any]:
    conf = settings.RATINGGAME
    return {
        "model": conf.get("PRIMING_MODEL", ""),
        "pretrained": conf.get("PRIMING_PRETRAINED", "") or None,
        "device": conf.get("PRIMING_DEVICE", "") or None,
        "batch_size": int(conf.get("PRIMING_BATCH_SIZE", 64)),
    }


def stale_after() -> timedelta:
    return timedelta(seconds=float(settings.RATINGGAME.get("PRIMING_STALE_SECONDS", 900)))


def scorer_identity(scorer: ClipScorer) -> str:
    """A short stable name of the scorer's weights for ModelRating/Calibration rows."""
    ident = scorer.identity
    weights = ident.get("sha256") or ident.get("pretrained") or "-"
    text = f"{ident.get('model')} weights={weights} w={ident.get('w')}"
    return text[:250]


def get_scorer(model: str, pretrained: str | None, device: str | None) -> ClipScorer:
    """The process's scorer for this model (cached); raises ScorerLoadError."""
    from scoring.clip_models import load_scorer

    key = (model, pretrained, device)
    if key not in _SCORERS:
        _SCORERS[key] = load_scorer(model, pretrained, device)
    return _SCORERS[key]


def claimable(retry_failed: bool = False) -> Q:
    cutoff = timezone.now() - stale_after()
    q = Q(priming_status=PrimingStatus.PENDING) | Q(priming_status=PrimingStatus.RUNNING, priming_claimed_at__lt=cutoff)
    if retry_failed:
        q |= Q(priming_status=PrimingStatus.FAILED)
    return Q(pool=Pool.GAME) & q


def claim(pair_ids: Iterable[int], retry_failed: bool = False) -> tuple[list[int], datetime]:
    """Claim the claimable pairs among ``pair_ids``; returns the ids claimed and the claim time.

    On PostgreSQL, rows another worker is claiming are skipped (SKIP LOCKED). The UPDATE
    repeats the condition, and the claim time written is this worker's token: only pairs
    carrying it afterwards are ours.
    """
    now = timezone.now()
    ids = list(pair_ids)
    with transaction.atomic():
        query = CaptionPair.objects.filter(claimable(retry_failed), pk__in=ids)
        if connection.features.has_select_for_update_skip_locked:
            query = query.select_for_update(skip_locked=True)
        candidates = list(query.values_list("pk", flat=True))
        CaptionPair.objects.filter(claimable(retry_failed), pk__in=candidates).update(
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


def _loader(pair: CaptionPair) -> Callable:
    def load():
        from PIL import Image as PILImage

        with pair.image.file.open("rb") as handle:
            image = PILImage.open(handle)
            image.load()
        return image

    return load


def _store(pair_id: int, claimed_at: datetime, slots: list[tuple[str, str, float, Any]]) -> bool:
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


def run_priming(
    pair_ids: Iterable[int],
    *,
    model: str | None = None,
    pretrained: str | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    retry_failed: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Prime the claimable pairs among ``pair_ids``; returns counts (primed, failed, skipped)."""
    from scoring.clip_models import ScorerLoadError

    config = priming_config()
    model = model or config["model"]
    pretrained = pretrained if pretrained is not None else config["pretrained"]
    device = device or config["device"]
    batch_size = batch_size or config["batch_size"]
    ids, claimed_at = claim(pair_ids, retry_failed)
    counts = {"primed": 0, "failed": 0, "skipped": 0}
    if not ids:
        return counts
    if not model:
        counts["failed"] = fail(ids, claimed_at, NO_MODEL_ERROR)
        return counts
    try:
        scorer = get_scorer(model, pretrained, device)
    except ScorerLoadError as exc:
        counts["failed"] = fail(ids, claimed_at, f"priming model could not be loaded: {exc}")
        return counts

    done: set[int] = set()
    try:
        for start in range(0, len(ids), batch_size):
            chunk = ids[start : start + batch_size]
            result = _prime_batch(scorer, chunk, claimed_at, batch_size)
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


def _prime_batch(scorer: ClipScorer, ids: list[int], claimed_at: datetime, batch_size: int) -> dict[str, int]:
    from scoring import predictor

    pairs = list(CaptionPair.objects.select_related("image").filter(pk__in=ids).order_by("pk"))
    items = [(p.image.sha256, _loader(p), p.caption, list(p.references) or None) for p in pairs]
    scores = scorer.score_pairs(items, batch_size)
    identity = scorer_identity(scorer)
    metric = "pac_s" if scorer.identity.get("pac_s") else "clip_s"
    cal_clip = current_calibration(metric, identity)
    active = predictor.active_predictor(identity)
    predicted: dict[int, float] = {}
    no_refs = [p for p, s in zip(pairs, scores, strict=True) if s.error is None and s.ref_clip_s is None]
    if active is not None and no_refs:
        predicted = dict(zip((p.pk for p in no_refs), predictor.predict_pairs(active, scorer, no_refs), strict=True))
    cal_ref = current_calibration("ref_clip_s", identity) if any(s.ref_clip_s is not None for s in scores) else None
    cal_pred = current_calibration("predictor", f"run{active.pk}:{identity}") if predicted else None

    counts = {"primed": 0, "failed": 0, "skipped": 0}
    sleep = _test_sleep()
    for pair, score in zip(pairs, scores, strict=True):
        if score.error is not None:
            counts["failed"] += fail([pair.pk], claimed_at, score.error)
            continue
        first = (metric, identity, score.clip_s, cal_clip)
        if score.ref_clip_s is not None:
            second = ("ref_clip_s", identity, score.ref_clip_s, cal_ref)
        elif pair.pk in predicted:
            second = ("predictor", f"run{active.pk}:{identity}"[:300], predicted[pair.pk], cal_pred)
        else:
            second = first
        if sleep:
            time.sleep(sleep)
        counts["primed" if _store(pair.pk, claimed_at, [first, second]) else "skipped"] += 1
    return counts
