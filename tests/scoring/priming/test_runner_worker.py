"""Priming by a real process: a Celery worker on Redis and PostgreSQL, and the command, each
stopped or killed mid-run, every pair ending with exactly two primes."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from ratinggame.models import CaptionPair, PrimingStatus
from scoring.models import ModelRating
from scoring.priming import runner as prime_runner
from scoring.tasks import prime_pairs, sweep_pending_priming
from tests.celery_broker import celery_sending_to
from tests.live_process import QUIET_WORKER, celery_start, process_group_stop
from tests.scoring.priming.modules import needs_module
from tests.scoring.priming.priming_helpers import make_pairs, prime_counts

needs_module("open_clip", reason="open_clip is not installed (model priming runs on workers)")

pytestmark = pytest.mark.django_db


def _start_worker(env: dict, log_path: Path) -> subprocess.Popen:
    return celery_start(["worker", "-Q", "gpu", "-c", "1", "--pool", "prefork", *QUIET_WORKER], env, log_path)


def _wait_for(condition, timeout: float, what: str, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
    pytest.fail(f"timed out waiting for {what}; worker log tail:\n{tail}")


def _worker_env(priming, tiny_dir, stale_seconds: int) -> dict:
    """The environment of a worker or command process on this test's PostgreSQL database."""
    db = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "MEDIA_ROOT": str(priming.MEDIA_ROOT),
        "RATINGGAME_PRIMING_MODEL": str(tiny_dir),
        "RATINGGAME_PRIMING_PRETRAINED": "",
        "RATINGGAME_PRIMING_DEVICE": "cpu",
        "RATINGGAME_PRIMING_STALE_SECONDS": str(stale_seconds),
        "DJANGO_SETTINGS_MODULE": "ratinggame.settings",
    }


def _command_start(env: dict, log_path: Path) -> subprocess.Popen:
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "manage.py", "prime_pairs", "--batch-size", "1"],
            cwd=Path(__file__).resolve().parents[3],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_the_command_stopped_or_killed_goes_on_where_it_stopped(require_postgres, priming, tiny_dir, tmp_path, how):
    stale_seconds = 4
    pairs = make_pairs([1] * 12)
    ids = [p.pk for p in pairs]
    env = _worker_env(priming, tiny_dir, stale_seconds)
    log_path = tmp_path / "command.log"
    # A slowed-down run (test-only sleep before storing each one-pair batch), stopped after its first pair.
    command = _command_start({**env, "RATINGGAME_PRIMING_TEST_SLEEP_SECONDS": "1"}, log_path)
    try:
        _wait_for(lambda: 2 in prime_counts(ids).values(), 120, "a first primed pair", log_path)
        command.send_signal(getattr(signal, how))
        command.wait(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
    counts = prime_counts(ids)
    assert set(counts.values()) == {0, 2} and list(counts.values()).count(2) < len(ids)
    running = CaptionPair.objects.filter(pk__in=ids, priming_status=PrimingStatus.RUNNING).count()
    if how == "SIGTERM":
        assert command.returncode == 1 and "interrupted:" in log_path.read_text()
        assert running == 0  # every claim not stored was given back
    else:
        assert 0 < running <= prime_runner.CLAIM_BATCHES  # the batches claimed ahead, until stale
    # A new run primes what waits; after PRIMING_STALE_SECONDS, the stranded claims too.
    time.sleep(stale_seconds + 1 if running else 0)
    rerun = _command_start(env, log_path)
    assert rerun.wait(timeout=300) == 0, log_path.read_text()[-3000:]
    assert set(prime_counts(ids).values()) == {2}
    assert ModelRating.objects.filter(pair_id__in=ids).count() == 2 * len(ids)


@pytest.fixture
def redis_broker(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    with celery_sending_to(redis_url):
        yield redis_url
    client.flushdb()


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_worker_primes_each_pair_exactly_twice_even_when_killed_mid_batch(
    require_postgres, redis_broker, priming, tiny_dir, tmp_path
):
    stale_seconds = 3
    priming.RATINGGAME = {**priming.RATINGGAME, "PRIMING_STALE_SECONDS": stale_seconds}
    env = {**_worker_env(priming, tiny_dir, stale_seconds), "CELERY_BROKER_URL": redis_broker}
    log_path = tmp_path / "worker.log"

    # 1. Pairs created the normal way are dispatched on commit and primed by the worker.
    worker = _start_worker(env, log_path)
    try:
        pairs = make_pairs([2, 1, 1])
        ids = [p.pk for p in pairs]
        _wait_for(lambda: set(prime_counts(ids).values()) == {2}, 120, "the first pairs to be primed", log_path)
        # A duplicate message changes nothing.
        prime_pairs.delay(ids)
        before = list(ModelRating.objects.order_by("pk").values_list("pk", "value"))
        time.sleep(3)
        assert list(ModelRating.objects.order_by("pk").values_list("pk", "value")) == before
    finally:
        process_group_stop(worker)

    # 2. A slowed-down worker (test-only sleep before storing each batch, one pair per batch) is
    # SIGKILLed mid-run.
    slowed = {**env, "RATINGGAME_PRIMING_TEST_SLEEP_SECONDS": "1", "RATINGGAME_PRIMING_BATCH_SIZE": "1"}
    worker = _start_worker(slowed, log_path)
    try:
        batch = make_pairs([2, 2, 2, 2])
        batch_ids = [p.pk for p in batch]
        _wait_for(lambda: sum(c == 2 for c in prime_counts(batch_ids).values()) >= 1, 120, "a first prime", log_path)
    finally:
        process_group_stop(worker, signal.SIGKILL)
    counts = prime_counts(batch_ids)
    assert set(counts.values()) <= {0, 2} and 0 in counts.values(), f"not killed mid-batch: {counts}"

    # 3. A new worker; the sweep (Celery beat's job) re-queues the stale claims.
    worker = _start_worker(env, log_path)
    try:
        time.sleep(stale_seconds + 1)
        assert sweep_pending_priming.apply().get() >= 1  # run here, its messages go to Redis
        _wait_for(lambda: set(prime_counts(batch_ids).values()) == {2}, 120, "the killed batch to finish", log_path)
        time.sleep(2)
    finally:
        process_group_stop(worker)
    assert set(prime_counts(ids + batch_ids).values()) == {2}
    assert ModelRating.objects.count() == 2 * len(ids + batch_ids)
    for pair in CaptionPair.objects.filter(pk__in=ids + batch_ids):
        assert pair.priming_status == PrimingStatus.DONE
        assert pair.primes == list(
            ModelRating.objects.filter(pair=pair).order_by("slot").values_list("value", flat=True)
        )
