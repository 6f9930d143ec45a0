"""Model priming of game pairs (SPEC section 4; VICR paper section 3.2: "two initial ratings were primed").

A tiny random open_clip model is saved as a checkpoint folder and loaded through
RATINGGAME_PRIMING_MODEL, the path users take. Expected primes follow the documented default
calibration, written out by hand here: rating = clip(1 + 8 * (raw - 0.5), 1, 5).
"""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.db import connection, transaction
from django.utils import timezone

pytest.importorskip("open_clip", reason="open_clip is not installed (model priming runs on workers)")

from annotators.models import RaterState
from ratinggame.models import CaptionPair, Pool, PrimingStatus
from ratinggame.services import pair_create, pairs_created
from scoring import prime_runner
from scoring.models import Calibration, ModelRating
from scoring.tasks import prime_pairs, sweep_pending_priming
from tests.factories import ImageFactory
from tests.ratinggame.journey_helpers import Clock, rate_next, rater
from tests.scoring.tiny_clip import save_tiny_clip_dir

pytestmark = pytest.mark.django_db


def hand_default(raw: float) -> float:
    return min(max(1 + 8 * (raw - 0.5), 1.0), 5.0)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    return save_tiny_clip_dir(tmp_path_factory.mktemp("priming") / "tiny-clip")


@pytest.fixture
def priming(settings, tiny_dir):
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": str(tiny_dir), "PRIMING_PRETRAINED": ""}
    prime_runner._SCORERS.clear()
    yield settings
    prime_runner._SCORERS.clear()


def make_pairs(captions_per_image: list[int], pool: str = Pool.GAME, references=None) -> list[CaptionPair]:
    """Pairs created the way imports create them: committed, then queued (eager here)."""
    pairs = []
    with transaction.atomic():
        for n, count in enumerate(captions_per_image):
            image = ImageFactory()
            for k in range(count):
                caption = f"caption {k} of image {n} in {pool}"
                pairs.append(
                    pair_create(image=image, caption=caption, source="other", pool=pool, references=references)
                )
        pairs_created([p.pk for p in pairs])
    return pairs


def primes_of(pair: CaptionPair) -> list[tuple]:
    return list(
        ModelRating.objects.filter(pair=pair).order_by("slot").values_list("slot", "metric", "raw_score", "value")
    )


def test_new_game_pairs_get_two_primes_and_tutorial_probation_none(priming, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        game = make_pairs([2, 1])
        with_refs = make_pairs([1], references=["a dog on grass", "a brown dog"])
        others = make_pairs([1], pool=Pool.TUTORIAL) + make_pairs([1], pool=Pool.PROBATION)
    for pair in game + with_refs:
        pair.refresh_from_db()
        rows = ModelRating.objects.filter(pair=pair).order_by("slot")
        assert [r.slot for r in rows] == [1, 2]
        assert pair.priming_status == PrimingStatus.DONE and pair.priming_error == ""
        assert pair.primes == [r.value for r in rows]
        assert rows[0].metric == "clip_s"
        for row in rows:
            assert row.value == pytest.approx(hand_default(row.raw_score))
            assert row.calibration.method == Calibration.Method.DEFAULT
            assert str(priming.RATINGGAME["PRIMING_MODEL"]) in row.model_identity
    # Without references nor an active predictor, slot 2 repeats CLIP-S; with references it is RefCLIP-S.
    assert [r[1] for r in primes_of(game[0])] == ["clip_s", "clip_s"]
    assert primes_of(game[0])[0][2:] == primes_of(game[0])[1][2:]
    assert [r[1] for r in primes_of(with_refs[0])] == ["clip_s", "ref_clip_s"]
    for pair in others:
        pair.refresh_from_db()
        assert pair.primes == [] and pair.priming_status == PrimingStatus.NOT_NEEDED
        assert not ModelRating.objects.filter(pair=pair).exists()


def test_duplicate_task_and_rerun_change_nothing(priming):
    pairs = make_pairs([3])
    ids = [p.pk for p in pairs]
    prime_pairs.delay(ids)  # eager
    before = list(ModelRating.objects.order_by("pk").values_list("pk", "pair_id", "slot", "value"))
    assert len(before) == 6
    assert prime_pairs.delay(ids).get() == {"primed": 0, "failed": 0, "skipped": 0}
    prime_runner.run_priming(ids, retry_failed=True)
    assert list(ModelRating.objects.order_by("pk").values_list("pk", "pair_id", "slot", "value")) == before


def test_stale_claims_are_taken_over_fresh_ones_are_not(priming):
    stale, fresh = make_pairs([2])
    long_ago = timezone.now() - timedelta(seconds=priming.RATINGGAME["PRIMING_STALE_SECONDS"] + 60)
    CaptionPair.objects.filter(pk=stale.pk).update(priming_status=PrimingStatus.RUNNING, priming_claimed_at=long_ago)
    CaptionPair.objects.filter(pk=fresh.pk).update(
        priming_status=PrimingStatus.RUNNING, priming_claimed_at=timezone.now()
    )
    assert prime_runner.run_priming([stale.pk, fresh.pk])["primed"] == 1
    stale.refresh_from_db(), fresh.refresh_from_db()
    assert stale.priming_status == PrimingStatus.DONE and len(stale.primes) == 2
    assert fresh.priming_status == PrimingStatus.RUNNING and fresh.primes == []


def test_each_image_is_decoded_and_encoded_once_per_batch(priming):
    pairs = make_pairs([3, 2, 2])  # 3 images, 7 captions
    CaptionPair.objects.update(priming_status=PrimingStatus.PENDING)
    scorer = prime_runner.get_scorer(str(priming.RATINGGAME["PRIMING_MODEL"]), None, None)
    decoded, encoded, calls, texts = (
        scorer.images_decoded,
        scorer.images_encoded,
        scorer.image_encoder_calls,
        scorer.texts_encoded,
    )
    assert prime_runner.run_priming([p.pk for p in pairs], batch_size=64)["primed"] == 7
    assert scorer.images_decoded - decoded == 3
    assert scorer.images_encoded - encoded == 3
    assert scorer.image_encoder_calls - calls == 1
    assert scorer.texts_encoded - texts == 7


def test_bad_checkpoint_fails_the_pairs_with_a_clear_error_and_the_game_goes_on(settings, tmp_path):
    bad = tmp_path / "broken.pt"
    bad.write_bytes(b"this is not a checkpoint")
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": "ViT-B-32", "PRIMING_PRETRAINED": str(bad)}
    prime_runner._SCORERS.clear()
    (pair,) = make_pairs([1])
    prime_pairs.delay([pair.pk])
    pair.refresh_from_db()
    assert pair.priming_status == PrimingStatus.FAILED
    assert pair.priming_error.startswith("priming model could not be loaded:")
    assert str(bad) in pair.priming_error and "not a readable checkpoint" in pair.priming_error
    assert pair.primes == [] and not ModelRating.objects.exists()
    # The game keeps working: the first rater of the unprimed pair is scored 0 (SPEC section 3).
    _, feedback = rate_next(rater(RaterState.GAME), 4, Clock())
    assert feedback.pair_id == pair.pk and feedback.first_rater and feedback.points == 0


def test_no_model_configured_fails_with_the_setting_to_set(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": ""}
    (pair,) = make_pairs([1])
    prime_pairs.delay([pair.pk])
    pair.refresh_from_db()
    assert pair.priming_status == PrimingStatus.FAILED
    assert "RATINGGAME_PRIMING_MODEL" in pair.priming_error


def test_primes_are_what_the_first_rater_is_scored_against(priming):
    (pair,) = make_pairs([1])
    prime_pairs.delay([pair.pk])
    pair.refresh_from_db()
    _, feedback = rate_next(rater(RaterState.GAME), 3, Clock())
    assert feedback.pair_id == pair.pk and not feedback.first_rater
    assert feedback.reference == round(float(np.mean(pair.primes)))


def test_an_undecodable_image_fails_only_its_pair(priming):
    pairs = make_pairs([1, 1])
    broken = pairs[0].image
    Path(broken.file.path).write_bytes(b"not a png at all")
    prime_runner.run_priming([p.pk for p in pairs])
    for pair in pairs:
        pair.refresh_from_db()
    assert pairs[0].priming_status == PrimingStatus.FAILED
    assert "image could not be decoded" in pairs[0].priming_error
    assert pairs[1].priming_status == PrimingStatus.DONE and len(pairs[1].primes) == 2


def test_sweep_requeues_old_pending_and_stale_running_pairs(priming):
    old, stale, new = make_pairs([3])
    CaptionPair.objects.update(priming_status=PrimingStatus.PENDING)
    long_ago = timezone.now() - timedelta(hours=2)
    CaptionPair.objects.filter(pk=old.pk).update(created_at=long_ago)
    CaptionPair.objects.filter(pk=stale.pk).update(priming_status=PrimingStatus.RUNNING, priming_claimed_at=long_ago)
    assert sweep_pending_priming.delay().get() == 2  # `new` is left to its own on_commit dispatch
    statuses = dict(CaptionPair.objects.values_list("pk", "priming_status"))
    assert statuses == {old.pk: PrimingStatus.DONE, stale.pk: PrimingStatus.DONE, new.pk: PrimingStatus.PENDING}


def test_manage_py_prime_pairs_primes_everything_unprimed(priming, capsys):
    from django.core.management import call_command

    pairs = make_pairs([2, 1])
    CaptionPair.objects.update(priming_status=PrimingStatus.PENDING)
    ModelRating.objects.all().delete()
    CaptionPair.objects.update(primes=[])
    call_command("prime_pairs", "--batch-size", "2")
    assert "3 pair(s): 3 primed, 0 failed, 0 skipped" in capsys.readouterr().out
    assert all(len(p.primes) == 2 for p in CaptionPair.objects.filter(pk__in=[p.pk for p in pairs]))


# --- A real Celery worker on Redis and PostgreSQL --------------------------------------------


def _start_worker(env: dict, log_path: Path) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "ratinggame",
        "worker",
        "-Q",
        "gpu",
        "-c",
        "1",
        "--pool",
        "prefork",
    ]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"]
    # Own process group: the kill takes the worker and its pool child down together.
    return subprocess.Popen(
        command, env=env, stdout=log_path.open("ab"), stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop(worker: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, sig)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)


def _wait_for(condition, timeout: float, what: str, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
    pytest.fail(f"timed out waiting for {what}; worker log tail:\n{tail}")


def _prime_counts(ids: list[int]) -> dict[int, int]:
    counts = dict.fromkeys(ids, 0)
    for pair_id in ModelRating.objects.filter(pair_id__in=ids).values_list("pair_id", flat=True):
        counts[pair_id] += 1
    return counts


@pytest.fixture
def redis_broker(redis_url):
    import redis

    from ratinggame.celery import app

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    saved = (app.conf.broker_url, app.conf.task_always_eager)
    app.conf.broker_url, app.conf.task_always_eager = redis_url, False
    app._pool = None  # the producer pool was built for the old broker, if at all
    app.amqp._producer_pool = None
    yield redis_url
    app.pool.force_close_all()
    app.conf.broker_url, app.conf.task_always_eager = saved
    app._pool = None
    app.amqp._producer_pool = None
    client.flushdb()


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_worker_primes_each_pair_exactly_twice_even_when_killed_mid_batch(
    require_postgres, redis_broker, priming, tiny_dir, tmp_path
):
    stale_seconds = 3
    priming.RATINGGAME = {**priming.RATINGGAME, "PRIMING_STALE_SECONDS": stale_seconds}
    db = connection.settings_dict
    env = {
        **os.environ,
        "CELERY_BROKER_URL": redis_broker,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "MEDIA_ROOT": str(priming.MEDIA_ROOT),
        "RATINGGAME_PRIMING_MODEL": str(tiny_dir),
        "RATINGGAME_PRIMING_PRETRAINED": "",
        "RATINGGAME_PRIMING_DEVICE": "cpu",
        "RATINGGAME_PRIMING_STALE_SECONDS": str(stale_seconds),
        "DJANGO_SETTINGS_MODULE": "ratinggame.settings",
    }
    log_path = tmp_path / "worker.log"

    # 1. Pairs created the normal way are dispatched on commit and primed by the worker.
    worker = _start_worker(env, log_path)
    try:
        pairs = make_pairs([2, 1, 1])
        ids = [p.pk for p in pairs]
        _wait_for(lambda: set(_prime_counts(ids).values()) == {2}, 120, "the first pairs to be primed", log_path)
        # A duplicate message changes nothing.
        prime_pairs.delay(ids)
        before = list(ModelRating.objects.order_by("pk").values_list("pk", "value"))
        time.sleep(3)
        assert list(ModelRating.objects.order_by("pk").values_list("pk", "value")) == before
    finally:
        _stop(worker)

    # 2. A slowed-down worker (test-only sleep per pair) is SIGKILLed mid-batch.
    worker = _start_worker({**env, "RATINGGAME_PRIMING_TEST_SLEEP_SECONDS": "1"}, log_path)
    try:
        batch = make_pairs([2, 2, 2, 2])
        batch_ids = [p.pk for p in batch]
        _wait_for(lambda: sum(c == 2 for c in _prime_counts(batch_ids).values()) >= 1, 120, "a first prime", log_path)
    finally:
        _stop(worker, signal.SIGKILL)
    counts = _prime_counts(batch_ids)
    assert set(counts.values()) <= {0, 2} and 0 in counts.values(), f"not killed mid-batch: {counts}"

    # 3. A new worker; the sweep (Celery beat's job) re-queues the stale claims.
    worker = _start_worker(env, log_path)
    try:
        time.sleep(stale_seconds + 1)
        assert sweep_pending_priming.apply().get() >= 1  # run here, its messages go to Redis
        _wait_for(lambda: set(_prime_counts(batch_ids).values()) == {2}, 120, "the killed batch to finish", log_path)
        time.sleep(2)
    finally:
        _stop(worker)
    assert set(_prime_counts(ids + batch_ids).values()) == {2}
    assert ModelRating.objects.count() == 2 * len(ids + batch_ids)
    for pair in CaptionPair.objects.filter(pk__in=ids + batch_ids):
        assert pair.priming_status == PrimingStatus.DONE
        assert pair.primes == list(
            ModelRating.objects.filter(pair=pair).order_by("slot").values_list("value", flat=True)
        )
