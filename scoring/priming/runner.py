"""Model priming of game pairs inside a worker (scoring.tasks.prime_pairs, manage.py prime_pairs).

Two primes per game pair, stored as ModelRating rows and as ``pair.primes`` (oldest first,
read by ratinggame.game.aggregates.in_force). Each human rating replaces one prime, oldest first
(SPEC section 4): slot 1 goes at the first human rating, slot 2 stays until the second. So
slot 2 holds the best model available for the pair and slot 1 the next best:

    available, best first:  the active learned predictor   (scoring.priming.model_vicr: only once it
                                                             beat calibrated CLIP-S on the
                                                             held-out test split)
                            RefCLIP-S                       (the pair has reference captions)
                            CLIP-S                          (always; "pac_s" for a PAC-S checkpoint)
    slot 2 = the first of them, slot 1 = the second (the same model twice when only CLIP-S
    is available: the paper primed with two ratings; with one model they coincide).

    no references, no predictor:   slot 1 CLIP-S,     slot 2 CLIP-S
    references, no predictor:      slot 1 CLIP-S,     slot 2 RefCLIP-S
    no references, predictor:      slot 1 CLIP-S,     slot 2 predictor
    references and predictor:      slot 1 RefCLIP-S,  slot 2 predictor

Every raw score goes through the current calibration of its metric and model
(scoring.priming.calibration_service); the predictor is already on the 1-5 scale (clipped only).

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
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from ratinggame.models import CaptionPair, Pool, PrimingStatus
from scoring.models import ModelRating
from scoring.priming import calibration
from scoring.priming.calibration_service import current_calibration

if TYPE_CHECKING:
    from scoring.priming.clip_models import ClipScorer

log = logging.getLogger(__name__)

NO_MODEL_NOTE = (
    "waiting: no priming model configured (set RATINGGAME_PRIMING_MODEL); "
    "primed by the periodic sweep or `manage.py prime_pairs` once one is set"
)
# One scorer per worker process, built on first use (loading a model takes seconds).
_SCORERS: dict[tuple, ClipScorer] = {}


def _counts() -> dict[str, int]:
    return {"primed": 0, "failed": 0, "skipped": 0, "waiting": 0}


def priming_config() -> dict[str, Any]:
    """The priming settings; empty strings become None (an explicit "no weights" / "default")."""
    conf = settings.RATINGGAME
    return {
        "model": conf.get("PRIMING_MODEL", ""),
        "pretrained": conf.get("PRIMING_PRETRAINED", "") or None,
        "pacs_checkpoint": conf.get("PRIMING_PACS_CHECKPOINT", "") or None,
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


def get_scorer(
    model: str, pretrained: str | None, device: str | None, pacs_checkpoint: str | None = None
) -> ClipScorer:
    """The process's scorer for this model (cached); raises ScorerLoadError.

    With ``pacs_checkpoint``, the PAC-S weights are loaded over the architecture ``model``
    and scored with w = 2.0; ``pretrained`` then names their base weights (a tag such as
    "openai" or "laion2b_s32b_b82k", or a file), which decides QuickGELU
    (scoring.priming.clip_models.pacs_quick_gelu) and is not downloaded.
    """
    from scoring.priming.clip_models import load_scorer

    key = (model, pretrained, device, pacs_checkpoint)
    if key not in _SCORERS:
        if pacs_checkpoint:
            _SCORERS[key] = load_scorer(model, pacs_checkpoint, device, pacs=True, base=pretrained)
        else:
            _SCORERS[key] = load_scorer(model, pretrained, device)
    return _SCORERS[key]


def configured_scorer() -> ClipScorer:
    """The scorer the settings name; raises ScorerLoadError (also when no model is set)."""
    from scoring.priming.clip_models import ScorerLoadError

    config = priming_config()
    if not config["model"]:
        raise ScorerLoadError("no priming model configured (set RATINGGAME_PRIMING_MODEL)")
    return get_scorer(config["model"], config["pretrained"], config["device"], config["pacs_checkpoint"])


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


def _loader(pair: CaptionPair) -> Callable:
    """Opens the pair's stored image; ClipScorer converts it (scoring.priming.clip_models.image_to_rgb)."""

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
    scorer: ClipScorer | None = None,
    batch_size: int | None = None,
    include_failed: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Prime the claimable pairs among ``pair_ids``; returns counts (primed, failed, skipped, waiting).

    Without ``scorer`` (the task path) the configured one is used: with no model configured
    the pairs are only noted as waiting (NO_MODEL_NOTE), and a load failure is recorded on
    the claimed pairs. The command loads its scorer first and passes it in.
    ``include_failed`` also claims pairs whose priming failed before.
    """
    from scoring.priming.clip_models import ScorerLoadError

    config = priming_config()
    batch_size = batch_size or config["batch_size"]
    counts = _counts()
    ids = list(pair_ids)
    if scorer is None and not config["model"]:
        counts["waiting"] = note_no_model(ids)
        return counts
    ids, claimed_at = claim(ids, include_failed)
    if not ids:
        return counts
    if scorer is None:
        try:
            scorer = configured_scorer()
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
    from scoring.priming import model_vicr as predictor

    pairs = list(CaptionPair.objects.select_related("image").filter(pk__in=ids).order_by("pk"))
    items = [(p.image.sha256, _loader(p), p.caption, list(p.references) or None) for p in pairs]
    scores = scorer.score_pairs(items, batch_size)
    identity = scorer_identity(scorer)
    metric = "pac_s" if scorer.identity.get("pac_s") else "clip_s"
    cal_clip = current_calibration(metric, identity)
    cal_ref = current_calibration("ref_clip_s", identity) if any(s.ref_clip_s is not None for s in scores) else None

    active = predictor.active_predictor(identity)
    scored = [p for p, s in zip(pairs, scores, strict=True) if s.error is None]
    predicted: dict[int, float] = {}
    if active is not None and scored:
        predicted = dict(zip((p.pk for p in scored), predictor.predict_pairs(active, scorer, scored), strict=True))
    predictor_identity = f"run{active.pk}:{identity}"[:300] if active is not None else ""
    cal_pred = current_calibration("predictor", predictor_identity) if predicted else None

    counts = _counts()
    sleep = _test_sleep()
    for pair, score in zip(pairs, scores, strict=True):
        if score.error is not None:
            counts["failed"] += fail([pair.pk], claimed_at, score.error)
            continue
        # Best first (module docstring): slot 2, kept longest, gets the best; slot 1 the next.
        ranked = []
        if pair.pk in predicted:
            ranked.append(("predictor", predictor_identity, predicted[pair.pk], cal_pred))
        if score.ref_clip_s is not None:
            ranked.append(("ref_clip_s", identity, score.ref_clip_s, cal_ref))
        ranked.append((metric, identity, score.clip_s, cal_clip))
        slots = [ranked[1] if len(ranked) > 1 else ranked[0], ranked[0]]
        if sleep:
            time.sleep(sleep)
        counts["primed" if _store(pair.pk, claimed_at, slots) else "skipped"] += 1
    return counts
